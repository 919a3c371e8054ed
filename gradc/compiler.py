"""``gradc.compiler``: the parts of ``torch.compiler`` that code written for PyTorch calls.

``compile`` is ``gradc.compile``; ``is_compiling()`` (and ``is_dynamo_compiling()``) say whether
the calling code is being traced by it, so a function can skip work that cannot be compiled;
``disable`` marks a function that ``gradc.compile`` leaves eager.  gradc compiles whole
functions without graph breaks, so a disabled function called while tracing is a
``TraceError`` rather than an eager island.
"""
from __future__ import annotations

import functools

from .compile import compile  # noqa: F401  (torch.compiler.compile)
from .ir.tracer import is_tracing

__all__ = ["compile", "is_compiling", "is_dynamo_compiling", "is_exporting", "disable", "list_backends"]


def is_compiling() -> bool:
    """True while ``gradc.compile`` traces the calling code (in this thread)."""
    return is_tracing()


def is_dynamo_compiling() -> bool:
    return is_tracing()


def is_exporting() -> bool:
    """gradc has no export: always False."""
    return False


def list_backends(exclude_tags=("debug", "experimental")) -> list:
    """The ``backend=`` values ``gradc.compile`` takes besides its default ('inductor')."""
    return ["gradc", "inductor"]


def disable(fn=None, recursive=True, *, reason=None):
    """``fn`` (or a decorator) that ``gradc.compile`` does not compile: compiling it returns it
    as it is; called while another function is traced it raises ``TraceError``."""
    if fn is None:
        return lambda f: disable(f, recursive, reason=reason)

    @functools.wraps(fn)
    def eager_only(*args, **kwargs):
        if is_tracing():
            from .ir.errors import TraceError
            why = f" ({reason})" if reason else ""
            raise TraceError(f"{getattr(fn, '__qualname__', fn)} is marked gradc.compiler.disable{why} and called "
                             "inside a @gradc.compile function: gradc compiles whole functions (no graph breaks); "
                             "call it outside, or compile with fallback=True")
        return fn(*args, **kwargs)
    eager_only._gradc_disabled = True
    return eager_only
