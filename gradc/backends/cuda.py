"""``torch.backends.cuda``: ``is_built()`` and ``matmul`` (cuBLAS's switches).

``is_built()`` says whether gradc's CUDA runtime is installed: PyCUDA importable, or the CPU
simulator asked for with ``GRADC_CUDA_SIMULATOR=1`` (False on a CPU-only install, as PyTorch's
CPU build says). ``matmul.allow_tf32`` is PyTorch's other spelling of the float32 matmul
precision: setting it sets ``gradc.set_float32_matmul_precision`` ("high" or "highest") and it
reads True unless that precision is "highest". It changes no result here: gradc never computes
float32 matmuls in TF32 (no cuBLAS, no tensor cores). The reduced-precision reduction switches
(``allow_fp16_reduced_precision_reduction``, ``allow_bf16_reduced_precision_reduction``) are
settable with PyTorch's checks and change nothing either.
"""
from __future__ import annotations

import importlib.util

from . import check_bool

__all__ = ["is_built", "matmul"]


def is_built() -> bool:
    """Whether gradc's CUDA runtime is installed (not whether a GPU is there: see ``gradc.cuda.is_available``)."""
    from ..codegen import cuda_driver
    return cuda_driver.simulator_requested() or importlib.util.find_spec("pycuda") is not None


def _reduction_setting(value, attr_name: str) -> bool:
    """The ``allow_reduced_precision`` part of a reduction switch's value (a bool, or 1-2 bools)."""
    def ensure_bool(obj, which):
        if isinstance(obj, bool):
            return obj
        raise TypeError(f"{attr_name} expects a bool for {which}, but got {type(obj)!r}")
    if isinstance(value, bool):
        return value
    if isinstance(value, (list, tuple)):
        if not value:
            raise TypeError(f"{attr_name} expects at least one boolean argument")
        if len(value) > 2:
            raise TypeError(f"{attr_name} expects at most two boolean arguments")
        if len(value) == 2:
            ensure_bool(value[1], "allow_splitk")
        return ensure_bool(value[0], "allow_reduced_precision")
    raise TypeError(f"{attr_name} expects a bool or a tuple/list of bools, but got {type(value)!r}")


_REDUCTIONS = ("allow_fp16_reduced_precision_reduction", "allow_bf16_reduced_precision_reduction")


class cuBLASModule:
    """``torch.backends.cuda.matmul``: unknown attribute names raise ``AttributeError``."""

    def __init__(self):
        object.__setattr__(self, "_reductions", dict.fromkeys(_REDUCTIONS, True))

    def __getattr__(self, name):
        from .. import torch_functions
        if name == "allow_tf32":
            return torch_functions.get_float32_matmul_precision() != "highest"
        if name in _REDUCTIONS:
            return self._reductions[name]
        raise AttributeError("Unknown attribute " + name)

    def __setattr__(self, name, value):
        from .. import torch_functions
        if name == "allow_tf32":
            check_bool(value, "set_allow_tf32_cublas")
            return torch_functions.set_float32_matmul_precision("high" if value else "highest")
        if name in _REDUCTIONS:
            self._reductions[name] = _reduction_setting(value, name)
            return None
        raise AttributeError("Unknown attribute " + name)


matmul = cuBLASModule()
