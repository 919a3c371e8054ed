"""``torch.backends.cudnn``: cuDNN's switches. gradc has no cuDNN (its CUDA kernels are its own PTX):
``is_available()`` is False and ``version()`` None, as on PyTorch's CPU-only build, and ``enabled``,
``benchmark``, ``deterministic`` and ``allow_tf32`` are settable bools (PyTorch's defaults, type
checks and ``flags()`` context manager) that change nothing here. ``benchmark_limit`` is None, as
PyTorch's where cuDNN is not available.
"""
from __future__ import annotations

import sys

from . import BoolFlag, FlagModule, install_flags

__all__ = ["flags", "is_available", "version"]

benchmark_limit = None


def is_available() -> bool:
    """Whether cuDNN can be used: never in gradc."""
    return False


def version():
    """cuDNN's version: None, as PyTorch's where cuDNN is not available."""
    return None


class CudnnModule(FlagModule):
    enabled = BoolFlag(True, "set_enabled_cudnn")
    benchmark = BoolFlag(False, "set_benchmark_cudnn")
    deterministic = BoolFlag(False, "set_deterministic_cudnn")
    allow_tf32 = BoolFlag(True, "set_allow_tf32_cublas")      # PyTorch's message names cuBLAS here too


def flags(enabled=False, benchmark=False, benchmark_limit=10, deterministic=False, allow_tf32=True,
          fp32_precision="none", depthwise_kernel="auto"):
    """Set the flags for a ``with`` block and restore them after (PyTorch's defaults)."""
    return sys.modules[__name__].set_for_block(enabled=enabled, benchmark=benchmark, deterministic=deterministic,
                                               allow_tf32=allow_tf32)


install_flags(__name__, CudnnModule)
