"""``gradc.cpu.amp``: PyTorch's deprecated CPU spellings of ``gradc.amp.autocast`` and
``GradScaler``, each with PyTorch's FutureWarning. PyTorch's default dtype here is bfloat16,
which gradc lacks: pass ``dtype=gradc.float16`` (an enabled autocast without it raises)."""
from __future__ import annotations

import warnings

from ..amp import autocast_mode, grad_scaler

__all__ = ["autocast", "GradScaler"]


class autocast(autocast_mode.autocast):
    """``gradc.amp.autocast("cpu", ...)`` under its deprecated name."""

    def __init__(self, enabled: bool = True, dtype=None, cache_enabled: bool = True):
        warnings.warn("`torch.cpu.amp.autocast(args...)` is deprecated. "
                      "Please use `torch.amp.autocast('cpu', args...)` instead.", FutureWarning, stacklevel=2)
        super().__init__("cpu", enabled=enabled, dtype=dtype, cache_enabled=cache_enabled)


class GradScaler(grad_scaler.GradScaler):
    """``gradc.amp.GradScaler("cpu", ...)`` under its deprecated name."""

    def __init__(self, init_scale: float = 2.0 ** 16, growth_factor: float = 2.0, backoff_factor: float = 0.5,
                 growth_interval: int = 2000, enabled: bool = True) -> None:
        warnings.warn("`torch.cpu.amp.GradScaler(args...)` is deprecated. "
                      "Please use `torch.amp.GradScaler('cpu', args...)` instead.", FutureWarning, stacklevel=2)
        super().__init__("cpu", init_scale=init_scale, growth_factor=growth_factor, backoff_factor=backoff_factor,
                         growth_interval=growth_interval, enabled=enabled)
