"""nn.Parameter: a leaf tensor that requires grad and that Modules register."""
from __future__ import annotations

from ..tensor import Tensor


class Parameter(Tensor):
    def __init__(self, data=None, requires_grad=True):
        import numpy as np
        if data is None:
            data = np.empty(0, np.float32)
        array = data._data if isinstance(data, Tensor) else np.asarray(data)
        super().__init__(array, requires_grad=requires_grad)

    def __repr__(self):
        return "Parameter containing:\n" + super().__repr__()

    __str__ = __repr__          # print(p) as PyTorch prints it (Tensor's __str__ is its own __repr__)


class _BufferMeta(type):
    """``isinstance(t, Buffer)`` for the tensors ``Buffer(...)`` makes (plain tensors, flagged)."""

    def __instancecheck__(cls, instance) -> bool:
        if cls is Buffer and isinstance(instance, Tensor) and getattr(instance, "_is_buffer", False):
            return True
        return super().__instancecheck__(instance)


class Buffer(Tensor, metaclass=_BufferMeta):
    """Module state that is not a parameter: assigned as a Module attribute, it is registered as a
    buffer (in ``state_dict`` unless ``persistent=False``). ``Buffer(t)`` is ``t.detach()``
    flagged, as PyTorch's."""

    def __new__(cls, data=None, *, persistent=True):
        if data is None:
            from .. import factories
            data = factories.empty(0)
        t = data.detach().requires_grad_(data.requires_grad)
        t.persistent = persistent
        t._is_buffer = True
        return t
