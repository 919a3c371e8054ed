"""``gradc.autocast`` / ``gradc.amp.autocast``: mixed precision regions, as ``torch.amp.autocast_mode``.

A context manager and decorator that switches the per-thread autocast state of
``gradc/autocast_state.py`` (which ops cast their inputs, and to what, is said there), plus
``custom_fwd``/``custom_bwd`` for ``autograd.Function``s. CPU autocast needs ``dtype=gradc.float16``:
PyTorch's default there is bfloat16, which gradc lacks, so leaving it out is an error when enabled.
``device_type="cuda"`` without a CUDA device warns and disables, as PyTorch does without one; with
one it is an error (gradc's CUDA kernels have no float16).
"""
from __future__ import annotations

import functools
import warnings

from .. import autocast_state as state
from .. import dtypes

__all__ = ["autocast", "custom_fwd", "custom_bwd", "is_autocast_available"]

_AVAILABLE = ("cpu", "cuda")


def is_autocast_available(device_type: str) -> bool:
    """Whether gradc's autocast runs on ``device_type``: the CPU and CUDA ones."""
    return state.check_device_type(device_type) in _AVAILABLE


def _cuda_unavailable() -> bool:
    from .. import cuda
    return not cuda.is_available()


def _check_dtype(dtype):
    if dtype is not None and not isinstance(dtype, dtypes.dtype):
        raise TypeError(f"autocast(): dtype must be a gradc dtype (gradc.float16), not {dtype!r}"
                        + (": " + state.NO_BFLOAT16 if "bfloat16" in str(dtype) else ""))


def autocast_decorator(autocast_instance, func):
    @functools.wraps(func)
    def decorate_autocast(*args, **kwargs):
        with autocast_instance:
            return func(*args, **kwargs)
    return decorate_autocast


class autocast:
    """Run a region's ops in mixed precision (``with gradc.autocast("cpu", dtype=gradc.float16):``).

    Ops on PyTorch's lower-precision list (matmul, linear, conv, ...) cast their float32 inputs to
    ``dtype`` and give ``dtype`` results; ops on its float32 list (the losses, ...) cast float16
    inputs to float32; others run in their inputs' dtype. Nests, and decorates functions.
    """

    def __init__(self, device_type: str, dtype=None, enabled: bool = True, cache_enabled: bool | None = None):
        if not isinstance(device_type, str):
            raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
        _check_dtype(dtype)
        self.device = device_type
        if not is_autocast_available(device_type):
            raise RuntimeError(f"User specified an unsupported autocast device_type '{device_type}'")
        self.fast_dtype = state.raw_autocast_dtype(device_type) if dtype is None else dtype
        self._cache_enabled = state.is_autocast_cache_enabled() if cache_enabled is None else cache_enabled
        if enabled:
            enabled = self._check_enabled(device_type)
        self._enabled = enabled

    def _check_enabled(self, device_type) -> bool:
        """Whether autocast can run on ``device_type`` in ``fast_dtype``: PyTorch's warnings when not."""
        if device_type == "cuda" and _cuda_unavailable():
            warnings.warn("CUDA is not available or torch_xla is imported. Disabling autocast.", stacklevel=3)
            return False
        if device_type == "cuda":
            raise RuntimeError("gradc cannot autocast on CUDA: its CUDA tensors run as compiled kernels, which have "
                               "no float16 (float32, float64, int64 and bool only); autocast on the CPU "
                               "(device_type='cpu', dtype=gradc.float16) or pass enabled=False")
        if self.fast_dtype is None:
            raise RuntimeError(state.NO_BFLOAT16)
        if device_type != "cuda" and self.fast_dtype is not dtypes.float16:
            name = device_type.upper()
            warnings.warn(f"In {name} autocast, but the target dtype is not supported. Disabling autocast.\n"
                          f"{name} Autocast only supports dtypes of torch.bfloat16, torch.float16 currently.",
                          stacklevel=3)
            return False
        return True

    def __enter__(self):
        self.prev_cache_enabled = state.is_autocast_cache_enabled()
        self.prev = state.is_autocast_enabled(self.device)
        self.prev_fastdtype = state.raw_autocast_dtype(self.device)
        state.set_autocast_enabled(self.device, bool(self._enabled))
        state.set_autocast_dtype(self.device, self.fast_dtype)
        state.autocast_increment_nesting()
        state.set_autocast_cache_enabled(bool(self._cache_enabled))
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        if state.autocast_decrement_nesting() == 0:
            state.clear_autocast_cache()
        state.set_autocast_enabled(self.device, self.prev)
        state.set_autocast_dtype(self.device, self.prev_fastdtype)
        state.set_autocast_cache_enabled(self.prev_cache_enabled)
        return False

    def __call__(self, func):
        if not callable(func):
            raise TypeError(f"autocast()(func) requires a callable, but got {type(func).__name__}. "
                            f"Did you mean to use autocast as a context manager? For example:\n"
                            f"    with torch.autocast(device_type=...):\n"
                            f"        output = model(input)")
        return autocast_decorator(self, func)


def _cast(value, device_type: str, dtype):
    """Tensors in ``value`` cast to ``dtype`` as autocast would (floating, on the device, not float64)."""
    return state.cast_value(value, device_type, dtype)


def _check_device_type_arg(device_type):
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")


def custom_fwd(fwd=None, *, device_type: str, cast_inputs=None):
    """Decorate an ``autograd.Function``'s ``forward``: with ``cast_inputs``, inside an autocast region,
    its floating inputs are cast to ``cast_inputs`` and it runs with autocast off."""
    _check_device_type_arg(device_type)
    if fwd is None:
        return functools.partial(custom_fwd, device_type=device_type, cast_inputs=cast_inputs)

    @functools.wraps(fwd)
    def decorate_fwd(*args, **kwargs):
        args[0]._dtype = state.raw_autocast_dtype(device_type)
        if cast_inputs is None:
            args[0]._fwd_used_autocast = state.is_autocast_enabled(device_type)
            return fwd(*args, **kwargs)
        args[0]._fwd_used_autocast = False
        if not state.is_autocast_enabled(device_type):
            return fwd(*args, **kwargs)
        with autocast(device_type=device_type, enabled=False):
            return fwd(*_cast(args, device_type, cast_inputs), **_cast(kwargs, device_type, cast_inputs))
    return decorate_fwd


def custom_bwd(bwd=None, *, device_type: str):
    """Decorate an ``autograd.Function``'s ``backward``: it runs in the autocast state its forward ran in."""
    _check_device_type_arg(device_type)
    if bwd is None:
        return functools.partial(custom_bwd, device_type=device_type)

    @functools.wraps(bwd)
    def decorate_bwd(*args, **kwargs):
        with autocast(device_type=device_type, enabled=args[0]._fwd_used_autocast, dtype=args[0]._dtype):
            return bwd(*args, **kwargs)
    return decorate_bwd
