"""``torch.backends``: the switches of the libraries PyTorch can run on, with PyTorch's names,
defaults and type checks, so that training scripts that set them run unchanged.

gradc runs on none of those libraries (no cuDNN, cuBLAS, oneDNN, MPS or OpenMP: its CPU kernels
are its own LLVM code and BLAS matmul, its CUDA kernels its own PTX), so most switches are
settable but change nothing; each submodule's docstring says which mean something here.
``cuda.is_built()`` says whether gradc's CUDA runtime is installed (PyCUDA, or the simulator).
"""
from __future__ import annotations

import sys
import types
from contextlib import contextmanager

__all__ = ["BoolFlag", "FlagModule", "check_bool", "cuda", "cudnn", "mkldnn", "mps", "openmp"]


def _type_name(value) -> str:
    t = type(value)
    return t.__name__ if t.__module__ == "builtins" else f"{t.__module__}.{t.__name__}"


def check_bool(value, setter_name: str) -> bool:
    """``value`` if it is a bool, else PyTorch's RuntimeError naming its C++ setter."""
    if not isinstance(value, bool):
        raise RuntimeError(f"{setter_name} expects a bool, but got {_type_name(value)}")
    return value


class BoolFlag:
    """A module attribute holding a bool: assigning a non-bool raises PyTorch's RuntimeError
    (``<setter> expects a bool, but got <type>``)."""

    def __init__(self, default: bool, setter_name: str):
        self.value = default
        self.setter_name = setter_name

    def check(self, value) -> bool:
        return check_bool(value, self.setter_name)

    def __get__(self, obj, objtype=None):
        return self.value

    def __set__(self, obj, value):
        self.value = self.check(value)


class FlagModule(types.ModuleType):
    """A module whose ``BoolFlag`` class attributes are settable as ``module.flag = value``."""

    @contextmanager
    def set_for_block(self, **values):
        """Set the flags given (None: leave it) for the block, then restore them."""
        flags = {name: type(self).__dict__[name] for name, value in values.items() if value is not None}
        for name, flag in flags.items():
            flag.check(values[name])
        saved = {name: flag.value for name, flag in flags.items()}
        try:
            for name in flags:
                setattr(self, name, values[name])
            yield
        finally:
            for name, value in saved.items():
                setattr(self, name, value)


def install_flags(module_name: str, module_class: type) -> None:
    """Make the module ``module_name`` an instance of ``module_class`` (a ``FlagModule``)."""
    sys.modules[module_name].__class__ = module_class


from . import cuda, cudnn, mkldnn, mps, openmp  # noqa: E402  (they use the helpers above)
