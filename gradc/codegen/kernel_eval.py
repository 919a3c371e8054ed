"""Reference evaluation of a kernel with NumPy (the op table's references), for tests and debugging.

``evaluate(kernel, arrays)`` takes one array per parameter (outputs are written in place)
and materialises every value over the whole iteration space with broadcasting views, so
it is slow and memory-hungry but independent of the code generators.  f32 sums and
products are computed in f64, like the generated code.
"""
from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import as_strided

from .. import dtypes
from ..ops import registry
from .kernel_ir import AxisIndex, Compute, Kernel, Load, Reduce, Store, np_dtype


def _view(flat: np.ndarray, index, space, writeable=False):
    item = flat.itemsize
    base = flat[index.offset:] if index.offset else flat
    return as_strided(base, shape=space, strides=[s * item for s in index.strides], writeable=writeable)


def evaluate(kernel: Kernel, arrays) -> list:
    space = tuple(kernel.space)
    flats = {p.name: np.asarray(a).reshape(-1) for p, a in zip(kernel.params, arrays)}
    env: dict = {}
    with np.errstate(all="ignore"):
        for s in kernel.body:
            if isinstance(s, Load):
                env[s.result.id] = np.array(_view(flats[s.buffer.name], s.index, space))
            elif isinstance(s, AxisIndex):
                shape = [1] * len(space)
                shape[s.axis] = space[s.axis]
                env[s.result.id] = np.arange(space[s.axis], dtype=np.int64).reshape(shape)
            elif isinstance(s, Compute):
                attrs = s.attr
                if s.op == "constant":
                    env[s.result.id] = np.asarray(attrs["value"], dtype=np_dtype(attrs["dtype"]))
                    continue
                if s.op == "cast":
                    attrs = {"dtype": dtypes.from_ir(attrs["dtype"]).name}
                args = [env[o.id] for o in s.operands]
                if s.op == "div" and s.result.dtype not in ("f32", "f64"):
                    safe = np.where(args[1] == 0, 1, args[1])
                    r = np.where(args[1] == 0, 0, np.trunc(args[0] / safe).astype(np.int64))
                elif s.op == "cast" and s.result.dtype == "i64" and s.operands[0].dtype in ("f32", "f64"):
                    x = args[0]
                    r = np.where(np.isnan(x), 0, np.clip(x, -2.0 ** 63, 2.0 ** 63 - 1024)).astype(np.int64)
                else:
                    r = registry.get(s.op).forward(*args, **attrs)
                env[s.result.id] = np.asarray(r, dtype=np_dtype(s.result.dtype))
            elif isinstance(s, Reduce):
                x = np.broadcast_to(env[s.operand.id], space)
                if s.result.dtype == "f32" and s.kind in ("sum", "prod"):
                    x = x.astype(np.float64)
                fn = {"sum": np.sum, "prod": np.prod, "max": np.max, "min": np.min}[s.kind]
                if x.size == 0 or any(space[a] == 0 for a in s.axes):
                    ident = {"sum": 0, "prod": 1, "max": -np.inf, "min": np.inf}[s.kind]
                    shape = [1 if k in s.axes else n for k, n in enumerate(space)]
                    r = np.full(shape, ident)
                else:
                    r = fn(x, axis=tuple(s.axes), keepdims=True)
                env[s.result.id] = np.asarray(r).astype(np_dtype(s.result.dtype))
            elif isinstance(s, Store):
                view = _view(flats[s.buffer.name], s.index, space, writeable=True)
                view[...] = np.broadcast_to(env[s.value.id], space)
    return list(arrays)
