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


_UNINITIALIZED_SHAPE = ("Can't access the shape of an uninitialized parameter or buffer. This error usually happens in "
                        "`load_state_dict` when trying to load an uninitialized parameter into an initialized one. "
                        "Call `forward` to initialize the parameters before accessing their attributes.")


class UninitializedTensorMixin:
    """A tensor whose shape is not known yet (a lazy module's before its first call): it has no
    shape until ``materialize`` gives it one and makes it a ``cls_to_become``."""
    cls_to_become = None

    def materialize(self, shape, device=None, dtype=None):
        """Become an uninitialised ``cls_to_become`` of ``shape`` (in place: the same object)."""
        import numpy as np

        from .. import dtypes
        dt = dtypes.as_dtype(dtype) if dtype is not None else self._dtype
        self._data, self._dtype = np.empty(tuple(shape), dt.np), dt
        self.__class__ = self.cls_to_become

    @property
    def shape(self):
        raise RuntimeError(_UNINITIALIZED_SHAPE)

    def size(self, dim=None):
        raise RuntimeError(_UNINITIALIZED_SHAPE)

    def detach(self):
        out = Tensor.detach(self)
        out.__class__ = type(self)
        return out

    def __repr__(self):
        return f"<{type(self).__name__}>"

    __str__ = __repr__


class UninitializedParameter(UninitializedTensorMixin, Parameter):
    """A parameter of a lazy module before its first call (``materialize`` makes it a Parameter)."""
    cls_to_become = Parameter

    def __init__(self, requires_grad=True, device=None, dtype=None):
        from .. import factories
        super().__init__(factories.empty(0, dtype=dtype), requires_grad)


class UninitializedBuffer(UninitializedTensorMixin, Tensor):
    """A buffer of a lazy module before its first call (``materialize`` makes it a Tensor)."""
    cls_to_become = Tensor

    def __init__(self, requires_grad=False, device=None, dtype=None, persistent=True):
        import numpy as np

        from .. import dtypes
        dt = dtypes.as_dtype(dtype) if dtype is not None else dtypes.default_float
        super().__init__(np.empty(0, dt.np), requires_grad)
        self.persistent = persistent


def is_lazy(param) -> bool:
    """Whether ``param`` is an uninitialized parameter or buffer."""
    return isinstance(param, UninitializedTensorMixin)
