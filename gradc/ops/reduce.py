"""Reductions: sum, mean, prod, amax/amin, max/min along a dim, argmax/argmin, norm,
var, std, logsumexp, softmax and log_softmax, and sum_to (the adjoint of broadcasting)."""
from __future__ import annotations

import math
import warnings

import numpy as np

from .. import dtypes
from .._warnings import warn_at_user_code
from . import selection
from .dispatch import apply
from .quiet import quiet
from .registry import EmptyReductionError, NONDIFF, PURE, REDUCTION, ShapeError, TypeInfo, defop
from .rules import (backward_op, check_dims, expand_reduced, fmt_shape, keep_reduced, not_implemented_for,
                    reduced_shape, reduction_count, scalar_div, scalar_mul, zero_grad)

RED = frozenset({PURE, REDUCTION})
_ATTRS = ("dims", "keepdim")


_USER_NAMES = {"max_dim": "max", "min_dim": "min"}


def check_nonempty_dims(name, shape, dims):
    """PyTorch's error for an extremum over a dim of size 0 (eagerly and when compiled)."""
    for d in dims:
        if shape and shape[d] == 0:
            raise EmptyReductionError(f"{_USER_NAMES.get(name, name)}(): Expected reduction dim {d} to have "
                                      "non-zero size.")


def _reduce_infer(name, out_dtype=None, float_only=False):
    def infer(types, attrs):
        t = types[0]
        dims = tuple(attrs["dims"])
        check_dims(name, t.shape, dims)
        if float_only and not t.dtype.is_floating_point:
            raise ShapeError(f"gradc.{name}: expected a floating point tensor, got {t.dtype}")
        return [TypeInfo(reduced_shape(t.shape, dims, attrs["keepdim"]), out_dtype or t.dtype)]
    return infer


def _np_reduce(fn):
    @quiet
    def forward(x, dims, keepdim, **kw):
        return np.asarray(fn(x, axis=tuple(dims), keepdims=keepdim, **kw))
    return forward


def _dims(ctx):
    return tuple(ctx.attrs["dims"]), ctx.attrs["keepdim"], ctx.input_types[0].shape


def _sum_vjp(ctx, g):
    dims, keep, shape = _dims(ctx)
    return [expand_reduced(g[0], shape, dims, keep, from_scalar=ctx.node_name == "SumBackward0")]


def _mean_vjp(ctx, g):
    """PyTorch's mean_backward: sum's, then a division by the count (a Scalar: DivBackward1)."""
    dims, keep, shape = _dims(ctx)
    g = expand_reduced(g[0], shape, dims, keep, from_scalar=ctx.node_name == "MeanBackward0")
    return [scalar_div(g, reduction_count(shape, dims))]


def _prod_vjp(ctx, g):
    from ..tensor_api import where
    dims, keep, shape = _dims(ctx)
    if not shape:           # PyTorch's prod_backward passes a 0-d input's gradient through
        return [g[0]]
    x = ctx.input(0)
    out = keep_reduced(ctx.output(0), shape, dims, keep)
    gg = expand_reduced(g[0], shape, dims, keep)
    # d out / d x_i = prod_{j != i} x_j: out / x where x != 0. At a zero x_i it is the product of
    # the other entries: the product of the nonzeros when x_i is the only zero, else 0. With two
    # zeros its derivative w.r.t. the other zero x_k is that product, so the value is written as
    # nonzeros * (sum of the zero entries - x_i), which is 0 but has the right first derivative
    # (so double backward is exact there too); with three or more zeros both are 0.
    is_zero = x == 0
    nonzero_x = where(is_zero, 1.0, x)
    nonzeros = apply("prod", nonzero_x, dims=list(dims), keepdim=True) if dims else nonzero_x
    zeros = is_zero.sum(dims, keepdim=True) if dims else is_zero.long()
    zero_x = where(is_zero, x, 0.0)
    zero_sum = zero_x.sum(dims, keepdim=True) if dims else zero_x
    at_zero = where(zeros == 1, nonzeros, where(zeros == 2, nonzeros * (zero_sum - x), 0.0))
    safe = where(is_zero, at_zero, out / nonzero_x)
    return [gg * safe]


def _extremum_vjp(ctx, g):
    """The gradient shared by the elements equal to the extremum.  At a NaN extremum PyTorch's
    max()/min() (``nan_shares``) share it among the NaNs, and its amax/amin give the slice NaN
    (no element equals NaN: g / 0 * 0)."""
    from ..tensor_api import where
    dims, keep, shape = _dims(ctx)
    x = ctx.input(0)
    out = keep_reduced(ctx.output(0), shape, dims, keep)
    gg = expand_reduced(g[0], shape, dims, keep)
    if ctx.attrs.get("nan_shares"):
        mask = (x == out) | (x != x)
        count = mask.sum(dims, keepdim=True) if dims else mask.long()
        return [where(mask, gg / count, 0.0)]
    mask = x == out
    count = mask.sum(dims, keepdim=True) if dims else mask.long()
    return [gg / count * mask]


@quiet
def _mean_forward(x, dims, keepdim):
    """np.mean's arithmetic (a float sum, then a division in float64 rounded to the dtype) without its
    Python wrapper, a third of a small eager mean; an empty slice gives nan with no warning."""
    s = np.asarray(np.add.reduce(x, axis=tuple(dims), keepdims=keepdim))   # a new array
    return np.true_divide(s, np.intp(reduction_count(x.shape, dims)), out=s, casting="unsafe")


defop("sum", infer=_reduce_infer("sum"), forward=_np_reduce(np.add.reduce), vjp=_sum_vjp, traits=RED,
      attr_names=_ATTRS, node_name=lambda a: "SumBackward1")
defop("mean", infer=_reduce_infer("mean", float_only=True), forward=_mean_forward, vjp=_mean_vjp,
      traits=RED, attr_names=_ATTRS, node_name=lambda a: "MeanBackward1")
defop("prod", infer=_reduce_infer("prod"), forward=_np_reduce(np.prod), vjp=_prod_vjp,
      saves=("in0", "out0"), traits=RED, attr_names=_ATTRS, node_name=lambda a: "ProdBackward1")


def _nonempty(fn, name):
    def forward(x, dims, keepdim, nan_shares=False):
        if x.size == 0 and any(x.shape[d] == 0 for d in dims) or (x.size == 0 and not dims):
            raise RuntimeError(f"{name}(): Expected reduction dim to be specified for input.numel() == 0.")
        return np.asarray(fn(x, axis=tuple(dims), keepdims=keepdim))
    return forward


defop("amax", infer=_reduce_infer("amax"), forward=_nonempty(np.max, "amax"), vjp=_extremum_vjp,
      saves=("in0", "out0"), traits=RED, attr_names=_ATTRS + ("nan_shares",), node_name="AmaxBackward0")
defop("amin", infer=_reduce_infer("amin"), forward=_nonempty(np.min, "amin"), vjp=_extremum_vjp,
      saves=("in0", "out0"), traits=RED, attr_names=_ATTRS + ("nan_shares",), node_name="AminBackward0")


# ---- max/min along one dim: (values, indices) ------------------------------------------------
def _dim_infer(name, n_out):
    def infer(types, attrs):
        t = types[0]
        d = attrs["dim"]
        check_dims(name, t.shape, (d,))
        check_nonempty_dims(name, t.shape, (d,))
        shape = reduced_shape(t.shape, (d,) if t.shape else (), attrs["keepdim"])
        outs = [TypeInfo(shape, t.dtype), TypeInfo(shape, dtypes.int64)]
        return outs[-n_out:] if n_out == 1 else outs
    return infer


def _arg(fn):
    def forward(x, dim, keepdim):
        if x.ndim == 0:
            return np.asarray(0, dtype=np.int64)
        idx = fn(x, axis=dim)
        if keepdim:
            idx = np.expand_dims(idx, dim)
        return np.asarray(idx, dtype=np.int64)
    return forward


def _dim_extremum(argfn):
    def forward(x, dim, keepdim):
        idx = _arg(argfn)(x, dim, True)
        if x.ndim == 0:
            return x.copy(), idx
        values = np.take_along_axis(x, idx, axis=dim)
        if not keepdim:
            values, idx = np.squeeze(values, dim), np.squeeze(idx, dim)
        return values, idx
    return forward


def _dim_extremum_vjp(ctx, g):
    shape = ctx.input_types[0].shape
    if not shape:
        return [g[0]]
    d, keep = ctx.attrs["dim"], ctx.attrs["keepdim"]
    idx = ctx.output(1)
    gv = g[0]
    if not keep:
        idx, gv = idx.unsqueeze(d), gv.unsqueeze(d)
    return [apply("scatter_add", idx, gv, dim=d, shape=list(shape))]


for _k, _fn in (("max", np.argmax), ("min", np.argmin)):
    defop(f"{_k}_dim", infer=_dim_infer(f"{_k}_dim", 2), forward=_dim_extremum(_fn), vjp=_dim_extremum_vjp,
          saves=("out1",), traits=RED, num_outputs=2, attr_names=("dim", "keepdim"),
          node_name=f"{_k.capitalize()}Backward0")
    defop(f"arg{_k}", infer=_dim_infer(f"arg{_k}", 1), forward=_arg(_fn),
          traits=frozenset({PURE, REDUCTION, NONDIFF}), attr_names=("dim", "keepdim"))


# ---- norm, var, std, logsumexp ---------------------------------------------------------------
def _norm_forward(x, p, dims, keepdim):
    ax = tuple(dims)
    with np.errstate(all="ignore"):
        if p == float("inf"):
            return np.asarray(np.max(np.abs(x), axis=ax, keepdims=keepdim))
        if p == float("-inf"):
            return np.asarray(np.min(np.abs(x), axis=ax, keepdims=keepdim))
        if p == 2:
            return np.asarray(np.sqrt(np.sum(x * x, axis=ax, keepdims=keepdim)))
        if p == 0:
            return np.asarray(np.sum(x != 0, axis=ax, keepdims=keepdim), dtype=x.dtype)
        return np.asarray(np.sum(np.abs(x) ** p, axis=ax, keepdims=keepdim) ** (1.0 / p))


def _norm_vjp(ctx, g):
    """PyTorch's norm_backward by the order p, op for op (the gradient and the norm unsqueezed
    where dims were dropped, ``grad * (self / norm).masked_fill_(norm == 0, 0)`` for p = 2, ...),
    except that every division is by a norm made safe where it is zero, so double backward there
    has no 0 * inf (zeros, where PyTorch's are NaN)."""
    from ..tensor_api import where
    dims, keep, shape = _dims(ctx)
    p = ctx.attrs["p"]
    x = ctx.input(0)
    gg, out = g[0], ctx.output(0)
    if not keep and shape and len(dims) < len(shape):     # (a full reduction broadcasts its 0-d values)
        for d in sorted(dims):
            gg, out = gg.unsqueeze(d), out.unsqueeze(d)
    if p == 0:
        return [zero_grad(x)]
    if p == 1:
        return [x.sgn() * gg]
    if p in (float("inf"), float("-inf")):      # shared evenly among the ties (and NaNs), as PyTorch's
        x_abs = x.abs()
        mask = (x_abs == out) | x_abs.isnan()
        return [x.sgn() * ((gg / mask.sum(list(dims), keepdim=True)) * mask)]
    is_zero = out == 0
    safe_out = where(is_zero, 1.0, out)
    if p == 2:
        return [gg * (x / safe_out).masked_fill(is_zero, 0.0)]
    if p < 1:
        nonzero = x != 0
        scaled = x.sgn() * (where(nonzero, x.abs(), 1.0) ** (p - 1)).masked_fill(~nonzero, 0.0)
        # (0 where the norm is: for p < 0 an entry of 0 makes it 0, with other entries nonzero)
        return [scaled * gg * where(is_zero, 0.0, safe_out ** (1 - p))]
    scale = (gg / safe_out ** (p - 1)).masked_fill(is_zero, 0.0)
    if p < 2:
        return [x.sgn() * x.abs() ** (p - 1) * scale]
    return [x * x.abs() ** (p - 2) * scale]


def _norm_infer(types, attrs):
    """The reduction's rule; an inf or -inf norm over an empty dim has no identity (PyTorch's error)."""
    out = _reduce_infer("norm", float_only=True)(types, attrs)
    shape, p = types[0].shape, attrs["p"]
    if p in (float("inf"), float("-inf")):
        dims = [d % len(shape) for d in attrs["dims"]] if shape else []
        empty = [d for d in dims if shape[d] == 0]
        name = "inf" if p > 0 else "-inf"
        if empty and len(set(dims)) == len(shape):
            raise ShapeError(f"linalg.vector_norm cannot compute the {name} norm on an empty tensor because the "
                             "operation does not have an identity")
        if empty:
            raise ShapeError(f"linalg.vector_norm cannot compute the {name} norm on the dimension {empty[0]}because "
                             "this dimension is empty and the operation does not have an identity")
    return out


defop("norm", infer=_norm_infer, forward=_norm_forward, vjp=_norm_vjp,
      saves=("in0", "out0"), traits=RED, attr_names=("p", "dims", "keepdim"),
      node_name="LinalgVectorNormBackward0")


def _var_forward(x, dims, correction, keepdim, name="var"):
    """np.var; at no degrees of freedom left it warns as PyTorch does (NumPy's own warning and
    its nan or inf results aside, the values agree)."""
    if reduction_count(x.shape, dims) - correction <= 0:
        warn_at_user_code(f"{name}(): degrees of freedom is <= 0. Correction should be strictly less than the "
                          "reduction factor (input numel divided by output numel).")
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.asarray(np.var(x, axis=tuple(dims), ddof=correction, keepdims=keepdim))


def _var_scale(n):
    """2 / (N - correction) as PyTorch's backward takes it: not clamped at zero (where the forward
    is), and infinite at zero degrees of freedom."""
    return 2.0 / n if n != 0 else float("inf")


def _var_backward(g, x, dims, keep, n):
    """PyTorch's var_backward: ``(2 / (N - correction)) * grad * (self - self.mean(...))``, the
    gradient unsqueezed (not expanded) where dims were dropped; a reduction of every dim without
    keepdim is PyTorch's var() with no dims (``self.mean()``)."""
    shape = tuple(x.shape)
    if not keep and len(dims) == len(shape):
        mean = x.mean()
    else:
        mean = x.mean(list(dims), keepdim=True)
        if not keep and len(shape) > 1:
            for d in sorted(dims):
                g = g.unsqueeze(d)
    return scalar_mul(g, _var_scale(n)) * (x - mean)


def _var_vjp(ctx, g):
    dims, keep, shape = _dims(ctx)
    n = reduction_count(shape, dims) - ctx.attrs["correction"]
    return [_var_backward(g[0], ctx.input(0), dims, keep, n)]


def _std_vjp(ctx, g):
    """PyTorch's std_backward: var's of ``(grad / (result * 2)).masked_fill_(result == 0, 0)``."""
    dims, keep, shape = _dims(ctx)
    n = reduction_count(shape, dims) - ctx.attrs["correction"]
    out = ctx.output(0)
    g_var = (g[0] / scalar_mul(out, 2)).masked_fill(out == 0, 0.0)
    return [_var_backward(g_var, ctx.input(0), dims, keep, n)]


defop("var", infer=_reduce_infer("var", float_only=True), forward=_var_forward, vjp=_var_vjp,
      saves=("in0",), traits=RED, attr_names=("dims", "correction", "keepdim"), node_name="VarBackward0")
defop("std", infer=_reduce_infer("std", float_only=True),
      forward=lambda x, dims, correction, keepdim: np.sqrt(_var_forward(x, dims, correction, keepdim, "std")),
      vjp=_std_vjp, saves=("in0", "out0"), traits=RED, attr_names=("dims", "correction", "keepdim"),
      node_name="StdBackward0")


def _logsumexp_forward(x, dims, keepdim):
    ax = tuple(dims)
    with np.errstate(all="ignore"):
        m = np.max(x, axis=ax, keepdims=True) if x.size else np.zeros([1] * x.ndim, x.dtype)
        m = np.where(np.isfinite(m), m, 0)
        out = np.log(np.sum(np.exp(x - m), axis=ax, keepdims=True)) + m
        return np.asarray(out if keepdim else np.squeeze(out, axis=ax), dtype=x.dtype)


def _logsumexp_vjp(ctx, g):
    dims, keep, shape = _dims(ctx)
    x = ctx.input(0)
    if len(dims) == 1:
        # softmax(x) rather than exp(x - out): after decomposition the compiler's forward and
        # backward share exp(x - max), so a fused kernel computes it once per element
        return [expand_reduced(g[0], shape, dims, keep) * x.softmax(dims[0])]
    out = keep_reduced(ctx.output(0), shape, dims, keep)
    return [expand_reduced(g[0], shape, dims, keep) * (x - out).exp()]


defop("logsumexp", infer=_reduce_infer("logsumexp", float_only=True), forward=_logsumexp_forward,
      vjp=_logsumexp_vjp, saves=("in0", "out0"), traits=RED, attr_names=_ATTRS,
      node_name="LogsumexpBackward0")


# ---- softmax family (reduce + broadcast, shape preserving) ---------------------------------
def _softmax_infer(name):
    def infer(types, attrs):
        t = types[0]
        check_dims(name, t.shape, (attrs["dim"],))
        if not t.dtype.is_floating_point:
            raise ShapeError(f"gradc.{name}: expected a floating point tensor, got {t.dtype}")
        return [t]
    return infer


def _softmax_forward(x, dim):
    if x.ndim == 0:         # as a one-element row: 1, NaN for a non-finite x
        return _softmax_forward(x.reshape(1), 0).reshape(())
    if x.size == 0:
        return x.copy()
    with np.errstate(all="ignore"):
        e = np.exp(x - np.max(x, axis=dim, keepdims=True))
        return e / np.sum(e, axis=dim, keepdims=True)


def _log_softmax_forward(x, dim):
    if x.ndim == 0:         # as a one-element row: 0, NaN for a non-finite x
        return _log_softmax_forward(x.reshape(1), 0).reshape(())
    if x.size == 0:
        return x.copy()
    with np.errstate(all="ignore"):
        s = x - np.max(x, axis=dim, keepdims=True)
        return s - np.log(np.sum(np.exp(s), axis=dim, keepdims=True))


def _softmax_vjp(ctx, g):
    """PyTorch's _softmax_backward_data(grad, output): one node under create_graph=True."""
    dim = ctx.attrs["dim"]

    def softmax_backward(g, y):
        gy = g * y
        # (a 0-d input: its sum over dim is itself, as PyTorch's kernel reads it)
        return gy - y * (gy.sum(dim, keepdim=True) if ctx.input_types[0].shape else gy)
    return [backward_op(ctx, "SoftmaxBackwardDataBackward0", softmax_backward, g[0], ctx.output(0))]


def _log_softmax_vjp(ctx, g):
    """PyTorch's _log_softmax_backward_data(grad, output)."""
    dim = ctx.attrs["dim"]

    def log_softmax_backward(g, y):
        return g - y.exp() * (g.sum(dim, keepdim=True) if ctx.input_types[0].shape else g)
    return [backward_op(ctx, "LogSoftmaxBackwardDataBackward0", log_softmax_backward, g[0], ctx.output(0))]


defop("softmax", infer=_softmax_infer("softmax"), forward=_softmax_forward, vjp=_softmax_vjp,
      saves=("out0",), traits=RED, attr_names=("dim",), node_name="SoftmaxBackward0")
defop("log_softmax", infer=_softmax_infer("log_softmax"), forward=_log_softmax_forward,
      vjp=_log_softmax_vjp, saves=("out0",), traits=RED, attr_names=("dim",),
      node_name="LogSoftmaxBackward0")


# ---- sort and topk: (values, indices) along one dim ----------------------------------------------
def _sorted_order(x, dim, descending):
    """Stable order along ``dim``; NaN counts as the largest value (PyTorch's order)."""
    if x.ndim == 0:
        return np.zeros((), np.int64)
    if not descending:
        return np.argsort(x, axis=dim, kind="stable")
    idx = np.argsort(-x.astype(np.int64 if x.dtype.kind in "bu" else x.dtype), axis=dim, kind="stable")
    if x.dtype.kind == "f":         # -NaN is NaN, sorted last: a second stable sort moves NaN first
        nan_sorted = np.take_along_axis(np.isnan(x), idx, axis=dim)
        idx = np.take_along_axis(idx, np.argsort(~nan_sorted, axis=dim, kind="stable"), axis=dim)
    return idx


def _sort_infer(types, attrs):
    t = types[0]
    if t.shape:
        check_dims("sort", t.shape, (attrs["dim"],))
    return [t, TypeInfo(t.shape, dtypes.int64)]


# PyTorch's sort(stable=False) is std::sort: rows longer than this many elements with equal values
# in them are sorted stably here instead of by its emulation, which runs in Python (seconds per
# million elements), so their order of equal elements can differ from PyTorch's
UNSTABLE_SORT_EMULATION_LIMIT = 1 << 14


def _sort_forward(x, dim, descending=False, stable=True):
    """A stable sort (NaNs last, or first when descending); ``stable=False`` is PyTorch's CPU
    ``std::sort``, which orders equal elements of rows longer than 16 its own way
    (``selection.sort_row``, for the rows that have equal elements)."""
    idx = np.asarray(_sorted_order(x, dim, descending), dtype=np.int64)
    if x.ndim == 0:
        return x.copy(), idx
    if not stable and selection.INSERTION_SORT_THRESHOLD < x.shape[dim] <= UNSTABLE_SORT_EMULATION_LIMIT:
        idx = _unstable_order(x, idx, dim, descending)
    return np.take_along_axis(x, idx, axis=dim), idx


def _unstable_order(x, idx, dim, descending):
    moved = np.moveaxis(x, dim, -1)
    n = moved.shape[-1]
    rows = moved.reshape(math.prod(moved.shape[:-1]), n)
    order = np.moveaxis(idx, dim, -1).reshape(rows.shape).copy()
    for r in np.flatnonzero(selection.ties_at(np.take_along_axis(rows, order, axis=1))):
        order[r] = selection.sort_row(rows[r], descending)
    return np.moveaxis(order.reshape(moved.shape), -1, dim)


def _topk_infer(types, attrs):
    t = types[0]
    d, k = attrs["dim"], attrs["k"]
    if t.shape:
        check_dims("topk", t.shape, (d,))
    if not 0 <= k <= (t.shape[d] if t.shape else 1):
        raise RuntimeError("selected index k out of range")
    if t.dtype is dtypes.bool_:
        raise RuntimeError("topk does not support bool dtypes on CPU")
    shape = tuple(k if i == d else n for i, n in enumerate(t.shape))
    return [TypeInfo(shape, t.dtype), TypeInfo(shape, dtypes.int64)]


def _topk_forward(x, k, dim, largest=True, sorted=True):  # noqa: A002  (PyTorch's argument name)
    """PyTorch's CPU topk: a stable sort gives its answer for the rows without a tie at the
    top k (their order is the sort's when ``sorted``, or when k * 64 <= n, where PyTorch
    partial-sorts); the other rows run its algorithm (``selection.topk_row``)."""
    if x.ndim == 0:
        return x.copy(), np.zeros((), np.int64)
    moved = np.moveaxis(x, dim, -1)
    n = moved.shape[-1]
    rows = moved.reshape(math.prod(moved.shape[:-1]), n)
    full = _sorted_order(rows, 1, descending=largest)
    order = full[:, :k].copy()
    if k:
        ordered = k * 64 <= n or sorted
        exact = ~selection.ties_at(np.take_along_axis(rows, full, axis=1), range(k) if ordered else ())
        if not ordered:         # nth_element's order of the first k: PyTorch's for every row
            exact[:] = False
        for r in np.flatnonzero(~exact):
            order[r] = selection.topk_row(rows[r], k, largest, sorted)
    idx = np.moveaxis(order.reshape(moved.shape[:-1] + (k,)), -1, dim)
    return np.take_along_axis(x, idx, axis=dim), np.ascontiguousarray(idx)


def _kthvalue_infer(types, attrs):
    t = types[0]
    d, k = attrs["dim"], attrs["k"]
    if t.shape:
        check_dims("kthvalue", t.shape, (d,))
        check_nonempty_dims("kthvalue", t.shape, (d,))
    if not 1 <= k <= (t.shape[d] if t.shape else 1):
        raise RuntimeError(f"kthvalue(): selected number k out of range for dimension {d}")
    if t.dtype is dtypes.bool_ and t.shape:
        raise not_implemented_for("kthvalue_cpu", t.dtype)
    shape = tuple(1 if i == d else n for i, n in enumerate(t.shape))
    return [TypeInfo(shape, t.dtype), TypeInfo(shape, dtypes.int64)]


def _kthvalue_forward(x, k, dim):
    """(values, indices) of the k-th smallest along ``dim``, kept as a size-1 dim: the stable
    sort's k-th where it is the only element of its value, PyTorch's quickselect
    (``selection.kthvalue_row``) where it is one of several equal ones."""
    if x.ndim == 0:
        return x.copy(), np.zeros((), np.int64)
    moved = np.moveaxis(x, dim, -1)
    n = moved.shape[-1]
    rows = moved.reshape(math.prod(moved.shape[:-1]), n)
    order = _sorted_order(rows, 1, descending=False)
    picked = order[:, k - 1].copy()
    for r in np.flatnonzero(selection.ties_at(np.take_along_axis(rows, order, axis=1), (k - 1,))):
        picked[r] = selection.kthvalue_row(rows[r], k)
    idx = np.expand_dims(picked.reshape(moved.shape[:-1]), dim)
    return np.take_along_axis(x, idx, axis=dim), idx


def _mode_infer(types, attrs):
    t = types[0]
    d = attrs["dim"]
    if t.shape:
        check_dims("mode", t.shape, (d,))
        check_nonempty_dims("mode", t.shape, (d,))
    shape = tuple(1 if i == d else n for i, n in enumerate(t.shape))
    return [TypeInfo(shape, t.dtype), TypeInfo(shape, dtypes.int64)]


def _mode_indices(rows):
    """Per row of a 2-D array: the index of the last occurrence of the smallest most frequent
    value, which is PyTorch's answer where its std::sort is an insertion sort (rows of up to 16)
    or the value occurs once; its sort (``selection.mode_row``) for the other rows and those with NaN."""
    m, n = rows.shape
    s = np.sort(rows, axis=1)
    positions = np.arange(n)
    starts = np.ones_like(s, dtype=bool)
    starts[:, 1:] = s[:, 1:] != s[:, :-1]
    run_start = np.maximum.accumulate(np.where(starts, positions, 0), axis=1)
    ends = np.ones_like(s, dtype=bool)
    ends[:, :-1] = s[:, 1:] != s[:, :-1]
    run_length = np.where(ends, positions - run_start + 1, 0)
    value = s[np.arange(m), np.argmax(run_length, axis=1)]     # first maximum: the smallest value
    hits = rows == value[:, None]
    found = n - 1 - np.argmax(hits[:, ::-1], axis=1)
    emulate = np.isnan(rows).any(axis=1) if rows.dtype.kind == "f" else np.zeros(m, dtype=bool)
    if n > selection.INSERTION_SORT_THRESHOLD:
        emulate |= hits.sum(axis=1) > 1
    for r in np.flatnonzero(emulate):
        found[r] = selection.mode_row(rows[r])
    return found


def _mode_forward(x, dim):
    """(values, indices) of the most frequent value along ``dim``, kept as a size-1 dim."""
    if x.ndim == 0:
        return x.copy(), np.zeros((), np.int64)
    moved = np.moveaxis(x, dim, -1)
    n = moved.shape[-1]
    rows = moved.reshape(math.prod(moved.shape[:-1]), n)
    idx = np.expand_dims(_mode_indices(rows).reshape(moved.shape[:-1]), dim).astype(np.int64)
    return np.take_along_axis(x, idx, axis=dim), idx


def _scatter_values_vjp(ctx, g):
    """Each output value's gradient goes back to the element it came from."""
    shape = ctx.input_types[0].shape
    if not shape:
        return [g[0]]
    return [apply("scatter_add", ctx.output(1), g[0], dim=ctx.attrs["dim"], shape=list(shape))]


defop("sort", infer=_sort_infer, forward=_sort_forward, vjp=_scatter_values_vjp, saves=("out1",),
      traits=frozenset({PURE}), num_outputs=2, attr_names=("dim", "descending", "stable"), node_name="SortBackward0")
defop("mode", infer=_mode_infer, forward=_mode_forward, vjp=_scatter_values_vjp, saves=("out1",),
      traits=frozenset({PURE}), num_outputs=2, attr_names=("dim",), node_name="ModeBackward0")
defop("kthvalue", infer=_kthvalue_infer, forward=_kthvalue_forward, vjp=_scatter_values_vjp, saves=("out1",),
      traits=frozenset({PURE}), num_outputs=2, attr_names=("k", "dim"), node_name="KthvalueBackward0")
defop("topk", infer=_topk_infer, forward=_topk_forward, vjp=_scatter_values_vjp, saves=("out1",),
      traits=frozenset({PURE}), num_outputs=2, attr_names=("k", "dim", "largest", "sorted"),
      node_name="TopkBackward0")


# ---- cumsum: a scan along one dim ---------------------------------------------------------------
def _scan_infer(name):
    def infer(types, attrs):
        t = types[0]
        if t.shape:
            check_dims(name, t.shape, (attrs["dim"],))
        return [TypeInfo(t.shape, t.dtype if t.dtype.is_floating_point else dtypes.int64)]
    return infer


def _cumsum_forward(x, dim, reverse=False):
    """Running sums along ``dim`` (integers and bools sum as int64, as PyTorch's); ``reverse``
    sums from the end (the VJP of cumsum: each input element reaches every later output)."""
    if x.ndim == 0:
        return x.astype(np.int64) if x.dtype.kind in "biu" else x.copy()
    if x.dtype.kind in "biu":
        x = x.astype(np.int64)
    else:       # PyTorch's sums start from 0.0, so a leading -0.0 sums to 0.0
        x = x + np.zeros((), x.dtype)
    if reverse:
        return np.flip(np.cumsum(np.flip(x, dim), axis=dim), dim).copy()
    return np.cumsum(x, axis=dim)


def _cumsum_vjp(ctx, g):
    if not ctx.input_types[0].shape:
        return [g[0]]
    return [apply("cumsum", g[0], dim=ctx.attrs["dim"], reverse=not ctx.attrs.get("reverse", False))]


defop("cumsum", infer=_scan_infer("cumsum"), forward=_cumsum_forward, vjp=_cumsum_vjp, traits=frozenset({PURE}),
      attr_names=("dim", "reverse"), node_name="CumsumBackward0")


# ---- cumprod: a running product along one dim ---------------------------------------------------
def _cumprod_forward(x, dim):
    """Running products along ``dim`` (integers and bools multiply as int64, as PyTorch's)."""
    if x.ndim == 0:
        return x.astype(np.int64) if x.dtype.kind in "biu" else x.copy()
    return np.cumprod(x, axis=dim, dtype=np.int64 if x.dtype.kind in "biu" else x.dtype)


def _cumprod_vjp(ctx, g):
    if not ctx.input_types[0].shape:
        return [g[0]]
    x, out = ctx.input(0), ctx.output(0)
    return [_cumprod_gradient(x, out, g[0], ctx.attrs["dim"], exact_after_zero=True)]


def _cumprod_gradient(x, out, gg, dim, exact_after_zero):
    """PyTorch's O(n) gradient: before the first zero of a slice, ``reversed_cumsum(g * out) / x``;
    at the first zero, the product of the elements before it times ``sum_j g[j] * prod(x between
    the zero and j)`` up to the second zero; after it, 0 (every later product holds the zero).

    ``exact_after_zero`` writes the part from the first zero on so that differentiating it again
    (double backward) is exact: with that zero replaced by 1 (x'), the gradient at the zero is
    the gradient at x', and after it the zero times the gradient at x' (0, but its derivative with
    respect to the zero is right).  In table ops, so it is differentiated like any expression."""
    from ..tensor_api import where
    is_zero = x == 0
    zeros_so_far = apply("cumsum", is_zero, dim=dim, reverse=False)
    before = zeros_so_far == 0
    safe_x = where(is_zero, 1.0, x)
    plain = apply("cumsum", gg * out, dim=dim, reverse=True) / safe_x
    first_zero = is_zero & (zeros_so_far == 1)
    if exact_after_zero:
        unzeroed = where(first_zero, 1.0, x)
        at_unzeroed = _cumprod_gradient(unzeroed, apply("cumprod", unzeroed, dim=dim), gg, dim, False)
        the_zero = where(first_zero, x, 0.0).sum(dim, keepdim=True)
        return where(before, plain, where(first_zero, at_unzeroed, the_zero * at_unzeroed))
    between = (zeros_so_far == 1) & ~first_zero
    running = apply("cumprod", where(between, x, 1.0), dim=dim)
    after_zero = where(zeros_so_far == 1, gg * running, 0.0).sum(dim, keepdim=True)
    prefix = where(before, x, 1.0).prod(dim, keepdim=True)
    return where(before, plain, where(first_zero, prefix * after_zero, 0.0))


defop("cumprod", infer=_scan_infer("cumprod"), forward=_cumprod_forward, vjp=_cumprod_vjp, saves=("in0", "out0"),
      traits=frozenset({PURE}), attr_names=("dim",), node_name="CumprodBackward0")


# ---- sum_to: the adjoint of broadcasting -----------------------------------------------------
def _sum_to_dims(in_shape, shape):
    lead = len(in_shape) - len(shape)
    dims = list(range(lead))
    for i, s in enumerate(shape):
        if s == 1 and in_shape[lead + i] != 1:
            dims.append(lead + i)
    return tuple(dims), lead


def _sum_to_infer(types, attrs):
    t = types[0]
    shape = tuple(attrs["shape"])
    lead = len(t.shape) - len(shape)
    if lead < 0 or any(s not in (1, t.shape[lead + i]) for i, s in enumerate(shape)):
        raise ShapeError(f"gradc.sum_to: size {fmt_shape(shape)} is not expandable to size "
                         f"{fmt_shape(t.shape)}")
    return [TypeInfo(shape, t.dtype)]


def _sum_to_forward(x, shape):
    dims, lead = _sum_to_dims(x.shape, shape)
    return np.asarray(np.add.reduce(x, axis=dims, keepdims=True).reshape(tuple(shape)) if dims else x.reshape(shape))


defop("sum_to", infer=_sum_to_infer, forward=_sum_to_forward,
      vjp=lambda ctx, g: [g[0].expand(ctx.input_types[0].shape)], traits=RED, attr_names=("shape",),
      node_name="SumToSizeBackward0")
