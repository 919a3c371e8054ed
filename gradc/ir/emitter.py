"""IRTensor: a tensor-like that emits IR ops instead of computing.

It implements the shared tensor API (``gradc.tensor_api``) over an IR ``Value``
and a ``Builder``; applying any table op appends that op at the builder's
insertion point. The autodiff pass runs the op table's VJP rules on IRTensors,
so the adjoint is ordinary IR; the tracer's proxies build on it too.
"""
from __future__ import annotations

import numpy as np

from .. import dtypes
from ..tensor_api import Size, TensorAPI
from .core import Builder, Value


class IRTensor(TensorAPI):
    _dispatch_priority = 2
    __array_priority__ = 1000     # as the eager Tensor's: np.float64(2) * x defers to x.__rmul__

    def __init__(self, value: Value, builder: Builder):
        self.value = value
        self.builder = builder

    @property
    def shape(self) -> Size:
        return Size(self.value.type.shape)

    @property
    def dtype(self):
        return self.value.type.dtype

    @property
    def requires_grad(self) -> bool:
        return False

    def _wrap(self, value: Value) -> "IRTensor":
        return type(self)(value, self.builder)

    def _const_from_array(self, array: np.ndarray) -> Value:
        dt = dtypes.from_numpy(array.dtype)
        value = array.item() if array.ndim == 0 else array.tolist()
        return self.builder.constant(value, array.shape, dt)

    def _as_value(self, x) -> Value:
        if isinstance(x, IRTensor):
            return x.value
        from ..tensor import Tensor
        if isinstance(x, Tensor):
            return self._const_from_array(x._data)
        raise TypeError(f"cannot use {type(x).__name__} as an IR operand")

    @classmethod
    def _apply(cls, op, inputs, attrs, node_name=None):
        owner = next(x for x in inputs if isinstance(x, IRTensor))
        operands = [owner._as_value(x) for x in inputs]
        created = owner.builder.create(op.name, operands, attrs)
        outs = tuple(owner._wrap(r) for r in created.results)
        return outs[0] if len(outs) == 1 else outs

    def _constant(self, array: np.ndarray) -> Value:
        """A ``gradc.constant`` holding ``array`` (subclasses may record more, e.g. a location)."""
        return self._const_from_array(array)

    def _scalar(self, value, dtype):
        dt = dtypes.as_dtype(dtype)
        py = bool(value) if dt is dtypes.bool_ else (int(value) if dt is dtypes.int64 else float(value))
        return self._wrap(self._constant(np.asarray(py, dtype=dt.np)))

    def _index_tensor(self, value):
        arr = np.asarray(value)
        if arr.dtype.kind not in "biu":
            if arr.size:
                raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
            arr = arr.astype(np.int64)
        if arr.dtype.kind in "iu":
            arr = arr.astype(np.int64)
        return self._wrap(self._constant(arr))

    def _assign_inplace(self, result):
        self.value = result.value

    def __repr__(self) -> str:
        return f"IRTensor({self.value.type})"
