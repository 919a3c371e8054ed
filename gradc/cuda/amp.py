"""``gradc.cuda.amp``: PyTorch's deprecated CUDA spellings of ``gradc.amp`` (``autocast``,
``GradScaler``, ``custom_fwd``, ``custom_bwd``), each with PyTorch's FutureWarning. Without a
CUDA device, autocast and GradScaler warn and disable themselves, as PyTorch's do."""
from __future__ import annotations

import functools
import warnings

from .. import dtypes
from ..amp import autocast_mode, grad_scaler

__all__ = ["amp_definitely_not_available", "autocast", "custom_bwd", "custom_fwd", "GradScaler"]


def amp_definitely_not_available() -> bool:
    from .. import cuda
    return not cuda.is_available()


class autocast(autocast_mode.autocast):
    """``gradc.amp.autocast("cuda", ...)`` under its deprecated name."""

    def __init__(self, enabled: bool = True, dtype=dtypes.float16, cache_enabled: bool = True):
        warnings.warn("`torch.cuda.amp.autocast(args...)` is deprecated. "
                      "Please use `torch.amp.autocast('cuda', args...)` instead.", FutureWarning, stacklevel=2)
        super().__init__("cuda", enabled=enabled, dtype=dtype, cache_enabled=cache_enabled)


def custom_fwd(fwd=None, *, cast_inputs=None):
    """``gradc.amp.custom_fwd(..., device_type='cuda')`` under its deprecated name."""
    warnings.warn("`torch.cuda.amp.custom_fwd(args...)` is deprecated. "
                  "Please use `torch.amp.custom_fwd(args..., device_type='cuda')` instead.",
                  FutureWarning, stacklevel=2)
    return functools.partial(autocast_mode.custom_fwd, device_type="cuda")(fwd=fwd, cast_inputs=cast_inputs)


def custom_bwd(bwd):
    """``gradc.amp.custom_bwd(..., device_type='cuda')`` under its deprecated name."""
    warnings.warn("`torch.cuda.amp.custom_bwd(args...)` is deprecated. "
                  "Please use `torch.amp.custom_bwd(args..., device_type='cuda')` instead.",
                  FutureWarning, stacklevel=2)
    return functools.partial(autocast_mode.custom_bwd, device_type="cuda")(bwd)


class GradScaler(grad_scaler.GradScaler):
    """``gradc.amp.GradScaler("cuda", ...)`` under its deprecated name."""

    def __init__(self, init_scale: float = 2.0 ** 16, growth_factor: float = 2.0, backoff_factor: float = 0.5,
                 growth_interval: int = 2000, enabled: bool = True) -> None:
        warnings.warn("`torch.cuda.amp.GradScaler(args...)` is deprecated. "
                      "Please use `torch.amp.GradScaler('cuda', args...)` instead.", FutureWarning, stacklevel=2)
        super().__init__("cuda", init_scale=init_scale, growth_factor=growth_factor, backoff_factor=backoff_factor,
                         growth_interval=growth_interval, enabled=enabled)
