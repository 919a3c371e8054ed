"""``gradc.amp``: automatic mixed precision, as ``torch.amp``: ``autocast`` regions
(``autocast_mode.py``, the op policies in ``gradc/autocast_state.py``) and ``GradScaler``
(``grad_scaler.py``)."""
from .autocast_mode import autocast, custom_bwd, custom_fwd, is_autocast_available
from .grad_scaler import GradScaler

__all__ = ["autocast", "custom_bwd", "custom_fwd", "is_autocast_available", "GradScaler"]
