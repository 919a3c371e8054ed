"""IR types: ``TensorType(shape, dtype)`` printed MLIR-style (``tensor<2x2xf32>``, ``tensor<f32>``)."""
from __future__ import annotations

import re

from .. import dtypes
from ..ops.registry import TypeInfo
from .errors import TraceTypeError


def unsupported_dtype_message(dt) -> str:
    """Why a tensor of ``dt`` (int32, float16, ...: eager only) cannot enter the IR, and where."""
    from .tracer import user_location
    return (f"gradc's compiler (the IR, @gradc.compile) handles float32, float64, int64 and bool tensors, not {dt} "
            f"(at {user_location()}); convert with .float() or .long() first, or run this code eagerly")


class TensorType(TypeInfo):
    """A ranked tensor type; 0-d tensors print as ``tensor<f32>``."""

    def __init__(self, shape, dtype):
        dt = dtypes.as_dtype(dtype)
        if dt not in dtypes.COMPILED:
            raise TraceTypeError(unsupported_dtype_message(dt))
        object.__setattr__(self, "shape", tuple(int(s) for s in shape))
        object.__setattr__(self, "dtype", dt)

    @classmethod
    def of(cls, t) -> "TensorType":
        return t if isinstance(t, TensorType) else cls(t.shape, t.dtype)

    @property
    def nbytes(self) -> int:
        return self.numel * self.dtype.itemsize

    def __str__(self) -> str:
        dims = "".join(f"{s}x" for s in self.shape)
        return f"tensor<{dims}{self.dtype.ir_name}>"

    def __repr__(self) -> str:
        return f"TensorType({self})"

    def __eq__(self, other) -> bool:
        return isinstance(other, TypeInfo) and self.shape == tuple(other.shape) and self.dtype is other.dtype

    def __hash__(self) -> int:
        return hash((self.shape, self.dtype.name))


_TYPE_RE = re.compile(r"tensor<((?:\d+x)*)(f32|f64|i64|i1)>")


def parse_type(text: str) -> TensorType:
    m = _TYPE_RE.fullmatch(text.strip())
    if not m:
        raise ValueError(f"expected a tensor type like tensor<2x3xf32>, got '{text}'")
    dims = [int(d) for d in m.group(1).split("x") if d]
    return TensorType(dims, dtypes.from_ir(m.group(2)))
