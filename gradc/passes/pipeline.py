"""Named pipelines used by @gradc.compile and the CLI, run through the PassManager."""
from __future__ import annotations

from ..ir.core import Module
from .manager import PassManager

OPTIMIZE = "canonicalize,cse,dce"


def run_pipeline(target, pipeline: str, *, verify_each: bool = False):
    """Run ``pipeline`` (text) on a Function or Module in place; returns the Module."""
    module = target if isinstance(target, Module) else Module([target])
    PassManager.parse(pipeline, verify_each=verify_each).run(module)
    return module
