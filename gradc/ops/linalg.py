"""Matrix products: matmul with NumPy's 1-D/2-D/batched broadcasting semantics."""
from __future__ import annotations

import math

import numpy as np

from ..codegen import eager_cpu
from .registry import PURE, ShapeError, TypeInfo, defop
from .rules import broadcast_shapes, fmt_shape, same_dtype, unbroadcast


def _matmul_infer(types, attrs):
    a, b = types
    dt = same_dtype("matmul", types)
    if a.ndim == 0 or b.ndim == 0:
        raise ShapeError(f"both arguments to matmul need to be at least 1D, but they are {a.ndim}D and {b.ndim}D")
    ka = a.shape[-1]
    kb = b.shape[0] if b.ndim == 1 else b.shape[-2]
    where = f" (in gradc.matmul of shapes {fmt_shape(a.shape)} and {fmt_shape(b.shape)})"
    # PyTorch's messages name the matrices it reduces matmul to: leading dims of a folded into
    # rows when b has at most 2 dims, else a batched product over the broadcast batch.
    rows = math.prod(a.shape[:-1])
    if a.ndim == 1 and b.ndim == 1:
        if ka != kb:
            raise ShapeError(f"inconsistent tensor size, expected tensor [{ka}] and src [{kb}] to have the same "
                             f"number of elements, but got {ka} and {kb} elements respectively")
    elif b.ndim == 1:
        if ka != kb:
            raise ShapeError(f"size mismatch, got input ({rows}), mat ({rows}x{ka}), vec ({kb})" + where)
    elif b.ndim == 2:
        if ka != kb:
            raise ShapeError(f"mat1 and mat2 shapes cannot be multiplied ({rows if a.ndim > 1 else 1}x{ka} and "
                             f"{kb}x{b.shape[-1]})" + where)
    elif ka != kb:
        nb = math.prod(broadcast_shapes("matmul", a.shape[:-2], b.shape[:-2]))
        raise ShapeError(f"Expected size for first two dimensions of batch2 tensor to be: [{nb}, {ka}] but got: "
                         f"[{nb}, {kb}]." + where)
    batch = broadcast_shapes("matmul", a.shape[:-2], b.shape[:-2])
    shape = batch + (a.shape[-2:-1] if a.ndim > 1 else ()) + (b.shape[-1:] if b.ndim > 1 else ())
    return [TypeInfo(tuple(shape), dt)]


def _matmul_vjp(ctx, g):
    a, b = ctx.input(0), ctx.input(1)
    sa, sb = (t.shape for t in ctx.input_types)
    gg = g[0]
    if len(sa) == 1 and len(sb) == 1:
        return [gg * b if ctx.needs_input_grad[0] else None, gg * a if ctx.needs_input_grad[1] else None]
    A = a if len(sa) > 1 else a.unsqueeze(0)
    B = b if len(sb) > 1 else b.unsqueeze(-1)
    if len(sa) == 1:
        gg = gg.unsqueeze(-2)
    if len(sb) == 1:
        gg = gg.unsqueeze(-1)
    ga = gb = None
    if ctx.needs_input_grad[0]:
        ga = unbroadcast(gg @ B.transpose(-1, -2), A.shape).reshape(sa)
    if ctx.needs_input_grad[1]:
        gb = unbroadcast(A.transpose(-1, -2) @ gg, B.shape).reshape(sb)
    return [ga, gb]


def _matmul_forward(a, b):
    """np.matmul; a 2-D product writes a pooled buffer when large (``eager_cpu.empty``)."""
    if a.ndim == 2 and b.ndim == 2 and a.dtype == b.dtype:
        return np.matmul(a, b, out=eager_cpu.empty((a.shape[0], b.shape[1]), a.dtype))
    return np.matmul(a, b)


defop("matmul", infer=_matmul_infer, forward=_matmul_forward, vjp=_matmul_vjp, saves=("in0", "in1"),
      traits=frozenset({PURE, "matmul"}), num_inputs=2, node_name="MmBackward0")
