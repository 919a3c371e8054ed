"""``torch.backends.mkldnn``: oneDNN's switches. gradc does not use oneDNN, so ``is_available()`` is
False (PyTorch's CPU build, which has it, says True); ``enabled`` and ``deterministic`` are settable
bools with PyTorch's defaults, type checks and ``flags()`` context manager that change nothing here.
"""
from __future__ import annotations

import sys

from . import BoolFlag, FlagModule, install_flags

__all__ = ["flags", "is_available"]


def is_available() -> bool:
    """Whether gradc runs on oneDNN (MKL-DNN): never."""
    return False


class MkldnnModule(FlagModule):
    enabled = BoolFlag(True, "set_enabled_mkldnn")
    deterministic = BoolFlag(False, "set_deterministic_mkldnn")


def flags(enabled=False, deterministic=False, allow_tf32=True, fp32_precision="none"):
    """Set the flags for a ``with`` block and restore them after (PyTorch's defaults)."""
    return sys.modules[__name__].set_for_block(enabled=enabled, deterministic=deterministic)


install_flags(__name__, MkldnnModule)
