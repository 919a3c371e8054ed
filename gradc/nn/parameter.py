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
