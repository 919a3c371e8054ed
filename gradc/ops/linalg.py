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


def _column_major(t) -> bool:
    """PyTorch's test in mm's backward: a matrix laid out by columns (known for eager tensors only)."""
    data = getattr(t, "_data", None)
    if not isinstance(data, np.ndarray) or data.ndim != 2:
        return False
    s0, s1 = t.stride()
    return s0 == 1 and s1 == t.shape[0]


def _mm_vjp(ctx, a, b, g):
    """PyTorch's mm_mat1_backward and mm_mat2_backward: ``grad.mm(mat2.t())`` and
    ``mat1.t().mm(grad)``, or transposed products for an input laid out by columns (the weight
    ``w.t()`` of a linear layer)."""
    ga = gb = None
    if ctx.needs_input_grad[0]:
        ga = b.mm(g.t()).t() if _column_major(a) else g.mm(b.t())
    if ctx.needs_input_grad[1]:
        gb = g.t().mm(a).t() if _column_major(b) else a.t().mm(g)
    return [ga, gb]


def _matmul_vjp(ctx, g):
    a, b = ctx.input(0), ctx.input(1)
    sa, sb = (t.shape for t in ctx.input_types)
    gg = g[0]
    if len(sa) == 2 and len(sb) == 2:
        return _mm_vjp(ctx, a, b, gg)
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


# ---- inverse, determinant, solve (NumPy's LAPACK in eager and compiled code) -----------------------
def _square(name, t):
    if t.ndim < 2:
        raise ShapeError(f"linalg.{name}: The input tensor A must have at least 2 dimensions.")
    if t.shape[-1] != t.shape[-2]:
        raise ShapeError(f"linalg.{name}: A must be batches of square matrices, but they are "
                         f"{t.shape[-2] if t.ndim >= 2 else 1} by {t.shape[-1] if t.ndim else 1} matrices")
    if not t.dtype.is_floating_point:
        raise ShapeError(f"linalg.{name}: Expected a floating point or complex tensor as input. Got "
                         f"{t.dtype.tensor_type[:-6]}")


def _mT(x):
    return x.transpose(-2, -1)


def _inv_infer(types, attrs):
    _square("inv", types[0])
    return [types[0]]


class LinAlgError(RuntimeError):
    """A factorization failed on its input (PyTorch's ``torch.linalg.LinAlgError``)."""


def _zero_pivot(m) -> int:
    """The 1-based index of LU's first zero diagonal element (partial pivoting, as LAPACK's getrf)."""
    u = np.array(m, dtype=np.float64)
    n = u.shape[0]
    for k in range(n):
        p = k + int(np.argmax(np.abs(u[k:, k])))
        if u[p, k] == 0:
            return k + 1
        u[[k, p]] = u[[p, k]]
        u[k + 1:, k:] -= np.outer(u[k + 1:, k] / u[k, k], u[k, k:])
    return n


def first_failure(a, factorize):
    """(batch prefix, matrix) of the first matrix of ``a`` that ``factorize`` (a NumPy routine)
    rejects; the prefix names the batch element when ``a`` is batched, as PyTorch's errors do."""
    for i, m in enumerate(a.reshape((-1,) + a.shape[-2:])):
        try:
            factorize(m)
        except np.linalg.LinAlgError:
            return (f"(Batch element {i}): " if a.ndim > 2 else ""), m
    return "", a.reshape((-1,) + a.shape[-2:])[-1]


def _singular(a, name, message):
    """PyTorch's error for the first singular matrix of ``a``."""
    batch, m = first_failure(a, np.linalg.inv)
    return LinAlgError(f"{name}: {batch}" + message.format(pivot=_zero_pivot(m)))


def _inv_forward(a):
    try:
        return np.linalg.inv(a)
    except np.linalg.LinAlgError:
        raise _singular(a, "linalg.inv", "The diagonal element {pivot} is zero, the inversion could not be completed "
                        "because the input matrix is singular.") from None


def _inv_vjp(ctx, g):
    inv = ctx.output(0)
    return [-(_mT(inv) @ g[0] @ _mT(inv))]


defop("linalg_inv", infer=_inv_infer, forward=_inv_forward, vjp=_inv_vjp, saves=("out0",), traits=frozenset({PURE}),
      node_name="LinalgInvExBackward0")


def _det_infer(types, attrs):
    _square("det", types[0])
    return [TypeInfo(types[0].shape[:-2], types[0].dtype)]


def _det_vjp(ctx, g):
    """d det(A) = det(A) * inv(A)^T (invertible A)."""
    from .dispatch import apply
    a, det = ctx.input(0), ctx.output(0)
    scale = (g[0] * det).unsqueeze(-1).unsqueeze(-1)
    return [scale * _mT(apply("linalg_inv", a))]


defop("linalg_det", infer=_det_infer, forward=lambda a: np.asarray(np.linalg.det(a)), vjp=_det_vjp,
      saves=("in0", "out0"), traits=frozenset({PURE}), node_name="LinalgDetBackward0")


def _slogdet_infer(types, attrs):
    _square("slogdet", types[0])
    t = TypeInfo(types[0].shape[:-2], types[0].dtype)
    return [t, t]


def _slogdet_forward(a):
    sign, logabs = np.linalg.slogdet(a)
    return np.asarray(sign, a.dtype), np.asarray(logabs, a.dtype)


def _slogdet_vjp(ctx, g):
    """Only log|det| carries a gradient: inv(A)^T."""
    from .dispatch import apply
    if g[1] is None:
        return [None]
    return [g[1].unsqueeze(-1).unsqueeze(-1) * _mT(apply("linalg_inv", ctx.input(0)))]


defop("linalg_slogdet", infer=_slogdet_infer, forward=_slogdet_forward, vjp=_slogdet_vjp, saves=("in0",),
      traits=frozenset({PURE}), num_outputs=2, differentiable_outputs=(1,), node_name="LinalgSlogdetBackward0")


def _solve_infer(types, attrs):
    a, b = types
    _square("solve", a)
    vector = b.ndim == 1 or (b.ndim == a.ndim - 1 and tuple(b.shape) == tuple(a.shape[:-1]))
    rows = b.shape[-1] if vector else b.shape[-2]
    if rows != a.shape[-1]:
        cols = 1 if vector else b.shape[-1]
        raise ShapeError(f"linalg.solve: Incompatible shapes of A and B for the equation AX = B "
                         f"({a.shape[-2]}x{a.shape[-1]} and {rows}x{cols})")
    if vector:
        return [TypeInfo(tuple(broadcast_shapes("solve", a.shape[:-2], b.shape[:-1])) + (a.shape[-1],), a.dtype)]
    return [TypeInfo(tuple(broadcast_shapes("solve", a.shape[:-2], b.shape[:-2])) + tuple(b.shape[-2:]), a.dtype)]


def _solve_forward(a, b):
    vector = b.ndim == 1 or (b.ndim == a.ndim - 1 and b.shape == a.shape[:-1])
    try:
        if vector:
            return np.linalg.solve(a, b[..., None])[..., 0]
        return np.linalg.solve(a, b)
    except np.linalg.LinAlgError:
        raise _singular(a, "torch.linalg.solve", "The solver failed because the input matrix is singular.") from None


def _solve_vjp(ctx, g):
    """X = A^-1 B: gB = A^-T g, gA = -gB X^T (written with solve itself, so it differentiates again)."""
    from .dispatch import apply
    a, x = ctx.input(0), ctx.output(0)
    gb = apply("linalg_solve", _mT(a), g[0])
    sa, sb = ctx.input_types[0].shape, ctx.input_types[1].shape
    vector = len(sb) == 1 or (len(sb) == len(sa) - 1 and tuple(sb) == tuple(sa[:-1]))
    ga = -(gb.unsqueeze(-1) @ x.unsqueeze(-2)) if vector else -(gb @ _mT(x))
    return [unbroadcast(ga, sa) if ctx.needs_input_grad[0] else None,
            unbroadcast(gb, sb) if ctx.needs_input_grad[1] else None]


defop("linalg_solve", infer=_solve_infer, forward=_solve_forward, vjp=_solve_vjp, saves=("in0", "out0"),
      traits=frozenset({PURE}), num_inputs=2, node_name="LinalgSolveExBackward0")
