"""Indexing ops: index (__getitem__), index_put (__setitem__), their adjoint
index_backward (scatter-add into zeros), gather and scatter_add."""
from __future__ import annotations

import numpy as np

from .. import dtypes
from ..codegen import eager_cpu
from .dispatch import apply
from .registry import NONDIFF, PURE, ShapeError, TypeInfo, defop
from .rules import fmt_shape, unbroadcast

INDEX = frozenset({PURE, "index"})


def split_index(ndim, key, arrays):
    """PyTorch's reading of an index key, as (basic, advanced) NumPy indices: the basic entries
    (ints, slices, None, ...) select a view first, then the index tensors index that view at the
    dims where they stood (``advanced`` is None when there are none). This differs from NumPy's
    reading of the whole key when an int and an index tensor are separated, e.g. x[0, :, [0, 1]]:
    NumPy treats the int as an advanced index and moves the broadcast dims to the front."""
    def width(e):
        if e[0] in ("int", "slice"):
            return 1
        if e[0] == "tensor":
            a = arrays[e[1]]
            return a.ndim if a.dtype == np.bool_ else 1
        return 0
    consumed = sum(width(e) for e in key) if ["ellipsis"] in key else 0     # (read only for an ellipsis)
    basic, placed, out_dim, seen_ellipsis = [], [], 0, False
    for e in key:
        kind = e[0]
        if kind == "int":
            basic.append(e[1])
        elif kind == "slice":
            basic.append(slice(e[1], e[2], e[3]))
            out_dim += 1
        elif kind == "none":
            basic.append(None)
            out_dim += 1
        elif kind == "ellipsis":
            n = 0 if seen_ellipsis else max(ndim - consumed, 0)
            seen_ellipsis = True
            basic.extend([slice(None)] * n)
            out_dim += n
        elif kind == "tensor":
            w = width(e)
            basic.extend([slice(None)] * w)
            placed.append((out_dim, arrays[e[1]], w))
            out_dim += w
        else:
            raise ValueError(f"bad index entry {e!r}")
    advanced = None
    if placed:
        advanced, pos = [], 0
        for d, a, w in placed:
            advanced += [slice(None)] * (d - pos) + [a]
            pos = d + w
        advanced = tuple(advanced)
    # the trailing Ellipsis keeps x[1] of a vector a 0-d view rather than a NumPy scalar copy
    return tuple(basic) + (Ellipsis,), advanced


def _view(x, key, arrays):
    """(x's view by the basic entries, the advanced index into that view or None)."""
    basic, advanced = split_index(x.ndim, key, arrays)
    return x[basic], advanced


def _probe(op, types, key, base_shape, dtype):
    """Shape of ``x[key]`` found by indexing a zero-stride array (no data touched)."""
    arrays = []
    for t in types:
        if t.dtype is dtypes.bool_:
            from ..ir.errors import TraceError
            raise TraceError(f"indexing with a boolean mask (gradc.{op}) under @gradc.compile: its result's shape "
                             "depends on the mask's values, which are unknown while tracing; use "
                             "gradc.where(mask, x, 0), or index outside the compiled function")
        if t.dtype is not dtypes.int64:
            raise ShapeError(f"gradc.{op}: tensors used as indices must be long or bool tensors, got {t.dtype}")
        arrays.append(np.zeros(t.shape, dtype=np.int64))
    base = np.broadcast_to(np.zeros((), dtype.np), tuple(base_shape))
    try:
        view, advanced = _view(base, key, arrays)
        return view.shape if advanced is None else view[advanced].shape
    except IndexError as e:
        if "too many indices" in str(e):       # (PyTorch's words)
            raise IndexOutOfBounds(f"too many indices for tensor of dimension {len(base_shape)} (got "
                                   f"{len(types)})") from None
        raise ShapeError(f"{e} (in gradc.{op} of a tensor of shape {fmt_shape(base_shape)})") from None


def index_forward(x, *idx, key):
    try:
        view, advanced = _view(x, key, idx)
        return np.asarray(view if advanced is None else view[advanced])
    except IndexError as e:
        msg = str(e).replace(" for axis ", " for dimension ")
        raise IndexError(f"{msg} (indexing a tensor of shape {fmt_shape(x.shape)})") from None


def _index_infer(types, attrs):
    x = types[0]
    return [TypeInfo(_probe("index", types[1:], attrs["key"], x.shape, x.dtype), x.dtype)]


def _index_vjp(ctx, g):
    idx = [ctx.input(i) for i in range(1, len(ctx.input_types))]
    return [apply("index_backward", g[0], *idx, key=ctx.attrs["key"], shape=list(ctx.input_types[0].shape))]


defop("index", infer=_index_infer, forward=index_forward, vjp=_index_vjp, saves=("in1+",),
      traits=INDEX, num_inputs=None, differentiable_inputs=(0,), attr_names=("key",),
      node_name="IndexBackward0")


def _index_backward_infer(types, attrs):
    g = types[0]
    expected = _probe("index_backward", types[1:], attrs["key"], attrs["shape"], g.dtype)
    if tuple(expected) != tuple(g.shape):
        raise ShapeError(f"gradc.index_backward: gradient of shape {fmt_shape(g.shape)} does not match the "
                         f"indexed shape {fmt_shape(expected)}")
    return [TypeInfo(tuple(attrs["shape"]), g.dtype)]


def scatter_add_at(out, index, values):
    """``np.add.at(out, index, values)``: repeated indices add up, in the dtype of ``out`` as
    PyTorch's index_put/scatter_add accumulate. (NumPy 1.25+ runs it fast; a former detour
    through ``np.bincount`` made a flat index of all of ``out`` and cost 20x more for W3's
    one value per row.)"""
    np.add.at(out, index, values)
    return out


def _index_backward_forward(g, *idx, key, shape):
    out = eager_cpu.zeros(shape, g.dtype)
    view, advanced = _view(out, key, idx)
    if advanced is None:             # basic indexing never repeats an element
        view[...] = g
    else:                            # scatter into a contiguous buffer, then into the view
        view += scatter_add_at(np.zeros(view.shape, dtype=g.dtype), advanced, g)
    return out


def _index_backward_vjp(ctx, g):
    idx = [ctx.input(i) for i in range(1, len(ctx.input_types))]
    return [apply("index", g[0], *idx, key=ctx.attrs["key"])]


defop("index_backward", infer=_index_backward_infer, forward=_index_backward_forward, vjp=_index_backward_vjp,
      saves=("in1+",), traits=INDEX, num_inputs=None, differentiable_inputs=(0,),
      attr_names=("key", "shape"), node_name="IndexBackwardBackward0")


def _index_put_infer(types, attrs):
    """The tensor's type. A value of another dtype is cast to the tensor's (``copy_`` from
    another dtype is one index_put, as PyTorch's copy_ is one node)."""
    x, v = types[0], types[1]
    check_put_shape(v.shape, _probe("index_put", types[2:], attrs["key"], x.shape, x.dtype))
    return [x]


def check_put_shape(value_shape, target):
    """PyTorch's error for a value that does not broadcast to the indexed part ``target`` (leading
    1s may be dropped; no dim of the target may grow)."""
    try:
        extra = len(value_shape) - len(target)
        inner = tuple(value_shape[extra:]) if extra > 0 else tuple(value_shape)
        if np.broadcast_shapes(inner, tuple(target)) != tuple(target):
            raise ValueError
        if extra > 0 and any(s != 1 for s in value_shape[:extra]):
            raise ValueError
    except ValueError:
        raise ShapeError(f"shape mismatch: value tensor of shape {fmt_shape(value_shape)} cannot be broadcast to "
                         f"indexing result of shape {fmt_shape(target)}") from None


def _index_put_forward(x, v, *idx, key):
    out = np.array(x, copy=True)
    view, advanced = _view(out, key, idx)
    target = view if advanced is None else view[advanced]
    vv = v.reshape(v.shape[v.ndim - np.ndim(target):]) if v.ndim > np.ndim(target) else v
    if advanced is None:
        view[...] = vv
    else:
        view[advanced] = vv
    return out


def _index_put_vjp(ctx, g):
    idx = [ctx.input(i) for i in range(2, len(ctx.input_types))]
    key = ctx.attrs["key"]
    gx = gv = None
    if ctx.needs_input_grad[0]:
        gx = apply("index_put", g[0], g[0]._scalar(0, g[0].dtype), *idx, key=key)
    if ctx.needs_input_grad[1]:
        gv = unbroadcast(apply("index", g[0], *idx, key=key), ctx.input_types[1].shape)
        if ctx.input_types[1].dtype is not ctx.input_types[0].dtype:     # back to the value's dtype
            gv = gv.to(ctx.input_types[1].dtype)
    return [gx, gv]


defop("index_put", infer=_index_put_infer, forward=_index_put_forward, vjp=_index_put_vjp,
      saves=("in2+",), traits=INDEX, num_inputs=None, differentiable_inputs=(0, 1),
      attr_names=("key",), node_name="IndexPutBackward0")


# ---- gather / scatter_add ----------------------------------------------------------------
def _check_gather(op, x_shape, idx, d):
    if idx.dtype is not dtypes.int64:
        raise ShapeError(f"gradc.{op}: index must be int64, got {idx.dtype}")
    if len(idx.shape) != len(x_shape):
        raise ShapeError(f"Index tensor must have the same number of dimensions as input tensor "
                         f"(in gradc.{op}: index {fmt_shape(idx.shape)}, input {fmt_shape(x_shape)})")
    for k, (a, b) in enumerate(zip(idx.shape, x_shape)):
        if k != d and a > b:
            raise ShapeError(f"Size does not match at dimension {k} expected index {fmt_shape(idx.shape)} to be "
                             f"no larger than self {fmt_shape(x_shape)} apart from dimension {d} (in gradc.{op})")


def _gather_infer(types, attrs):
    x, idx = types
    _check_gather("gather", x.shape, idx, attrs["dim"])
    return [TypeInfo(idx.shape, x.dtype)]


def _grid(idx, dim):
    grid = list(np.indices(idx.shape, sparse=True))
    grid[dim] = idx
    return tuple(grid)


class IndexOutOfBounds(IndexError, RuntimeError):
    """PyTorch raises RuntimeError for gather's bad index (IndexError for cross_entropy's bad
    target, the same check in compiled code): this is both."""


def _check_bounds(idx, size, dim):
    if idx.size and (idx.min() < 0 or idx.max() >= size):
        bad = int(idx.min()) if idx.min() < 0 else int(idx.max())
        raise IndexOutOfBounds(f"index {bad} is out of bounds for dimension {dim} with size {size}")


def _gather_forward(x, idx, dim):
    _check_bounds(idx, x.shape[dim], dim)
    return x[_grid(idx, dim)]


def _gather_vjp(ctx, g):
    return [apply("scatter_add", ctx.input(1), g[0], dim=ctx.attrs["dim"],
                  shape=list(ctx.input_types[0].shape)), None]


defop("gather", infer=_gather_infer, forward=_gather_forward, vjp=_gather_vjp, saves=("in1",),
      traits=INDEX, num_inputs=2, differentiable_inputs=(0,), attr_names=("dim",), node_name="GatherBackward0")


# ---- check_index: the bounds check of an index the decompose pass turns into a one-hot mask ----
# (IR only.)  A one-hot compare never fails, so an out-of-range label would silently pick
# nothing; this op raises the eager op's error instead, as a NumPy step before the kernel.
def _check_index_infer(types, attrs):
    if types[0].dtype is not dtypes.int64:
        raise ShapeError(f"gradc.check_index: index must be int64, got {types[0].dtype}")
    return [types[0]]


def _check_index_forward(idx, size, dim, what="index"):
    """``idx``, after the error of the eager op whose index it is (``what``): gather's
    (``index``), index_select's (``select``), a loss's class targets (``target``) or one_hot's
    classes (``class``)."""
    if what == "index":
        _check_bounds(idx, size, dim)
        return idx
    if not idx.size or (idx.min() >= 0 and idx.max() < size):
        return idx
    bad = idx[(idx < 0) | (idx >= size)]
    if what == "target":
        raise IndexError(f"Target {int(bad.flat[0])} is out of bounds.")
    if what == "class":
        raise RuntimeError("Class values must be non-negative." if idx.min() < 0 else
                           "Class values must be smaller than num_classes.")
    if dim == 1:        # (PyTorch's index_select kernel for dim 1 has its own message)
        raise RuntimeError(f"INDICES element is out of DATA bounds, id={int(bad.flat[0])} axis_dim={size}")
    raise IndexError("index out of range in self")


defop("check_index", infer=_check_index_infer, forward=_check_index_forward, traits=frozenset({PURE, NONDIFF}),
      attr_names=("size", "dim", "what"))


def _scatter_add_infer(types, attrs):
    idx, src = types
    if tuple(idx.shape) != tuple(src.shape):
        raise ShapeError(f"gradc.scatter_add: index shape {fmt_shape(idx.shape)} must equal source shape "
                         f"{fmt_shape(src.shape)}")
    _check_gather("scatter_add", attrs["shape"], idx, attrs["dim"])
    return [TypeInfo(tuple(attrs["shape"]), src.dtype)]


def _scatter_add_forward(idx, src, dim, shape):
    _check_bounds(idx, shape[dim], dim)
    out = eager_cpu.zeros(shape, src.dtype)
    return scatter_add_at(out, _grid(idx, dim), src)


def _scatter_add_vjp(ctx, g):
    return [None, apply("gather", g[0], ctx.input(0), dim=ctx.attrs["dim"])]


defop("scatter_add", infer=_scatter_add_infer, forward=_scatter_add_forward, vjp=_scatter_add_vjp,
      saves=("in0",), traits=INDEX, num_inputs=2, differentiable_inputs=(1,), attr_names=("dim", "shape"),
      node_name="ScatterAddBackward0")


# ---- scatter_reduce: x with the sources at ``index`` along ``dim`` reduced into it ----------------
# (PyTorch's Tensor.scatter_reduce: sum, prod, mean, amax, amin; include_self says whether x's own
# value at a position that receives sources takes part.) The VJP is written with gather,
# scatter_add, where and this op itself: amax/amin share the gradient evenly among the elements
# equal to the result, prod gives each element the product of the others (exact with zeros).
SCATTER_REDUCTIONS = ("sum", "prod", "mean", "amax", "amin")


def _scatter_reduce_infer(types, attrs):
    x, idx, src = types
    if attrs["reduce"] not in SCATTER_REDUCTIONS:
        raise ShapeError(f"reduce argument must be either sum, prod, mean, amax or amin, got {attrs['reduce']}")
    if src.dtype is not x.dtype:
        raise ShapeError(f"scatter_reduce(): Expected self.dtype to be equal to src.dtype (got {x.dtype} and "
                         f"{src.dtype})")
    _check_gather("scatter_reduce", x.shape, idx, attrs["dim"])
    for k, (a, b) in enumerate(zip(idx.shape, src.shape)):
        if a > b:
            raise ShapeError(f"Size does not match at dimension {k} expected index {fmt_shape(idx.shape)} to be "
                             f"smaller than src {fmt_shape(src.shape)} (in gradc.scatter_reduce)")
    return [TypeInfo(x.shape, x.dtype)]


def _lowest(dtype):
    return -np.inf if dtype.kind == "f" else np.iinfo(dtype).min


def _highest(dtype):
    return np.inf if dtype.kind == "f" else np.iinfo(dtype).max


def _scatter_reduce_forward(x, idx, src, dim, reduce, include_self):
    _check_bounds(idx, x.shape[dim], dim)
    src = src[tuple(slice(0, n) for n in idx.shape)]
    grid = _grid(idx, dim)
    out = x.copy()
    hit = np.zeros(x.shape, dtype=bool)
    hit[grid] = True
    if not include_self:
        identity = {"sum": 0, "mean": 0, "prod": 1, "amax": _lowest(x.dtype), "amin": _highest(x.dtype)}[reduce]
        out[hit] = identity
    if reduce in ("sum", "mean"):
        np.add.at(out, grid, src)
    elif reduce == "prod":
        np.multiply.at(out, grid, src)
    elif reduce == "amax":
        np.maximum.at(out, grid, src)
    else:
        np.minimum.at(out, grid, src)
    if reduce == "mean":
        counts = np.zeros(x.shape, dtype=np.int64)
        np.add.at(counts, grid, 1)
        counts = counts + (1 if include_self else 0)
        safe = np.maximum(counts, 1).astype(x.dtype)
        out = np.where(hit, out // safe if x.dtype.kind in "iu" else out / safe, out).astype(x.dtype)
    return out


def _scatter_reduce_vjp(ctx, g):
    from ..tensor_api import where
    x, idx, src, out = ctx.input(0), ctx.input(1), ctx.input(2), ctx.output(0)
    dim, reduce, include_self = ctx.attrs["dim"], ctx.attrs["reduce"], ctx.attrs["include_self"]
    shape = list(ctx.input_types[0].shape)
    g = g[0]
    if tuple(idx.shape) != tuple(src.shape):        # PyTorch reads only the part of src that index covers
        src = src[tuple(slice(0, n) for n in idx.shape)]

    def scatter(values):
        return apply("scatter_add", idx, values, dim=dim, shape=shape)

    def gather(values):
        return apply("gather", values, idx, dim=dim)

    counts = scatter(where(idx == idx, 1.0, 0.0).to(x.dtype))
    hit = counts > 0
    if reduce == "sum":
        gx, gsrc = (g if include_self else where(hit, 0.0, g)), gather(g)
    elif reduce == "mean":
        n = counts + 1 if include_self else counts
        per = g / where(n == 0, 1.0, n)
        gx, gsrc = (where(hit, per, g) if include_self else where(hit, 0.0, g)), gather(per)
    elif reduce in ("amax", "amin"):
        src_is = src == gather(out)
        self_is = (x == out) if include_self else (x == out) & ~hit
        n = scatter(src_is.to(x.dtype)) + self_is.to(x.dtype)
        per = g / where(n == 0, 1.0, n)
        gx, gsrc = where(self_is, per, 0.0), where(src_is, gather(per), 0.0)
    else:   # prod: the product of the other elements at each position, zeros included exactly
        src_zero = src == 0
        self_zero = (x == 0) & include_self
        zeros = scatter(src_zero.to(x.dtype)) + self_zero.to(x.dtype)
        nonzero_product = apply("scatter_reduce", where(self_zero, 1.0, x) if include_self else x,
                                idx, where(src_zero, 1.0, src), dim=dim, reduce="prod", include_self=include_self)
        others_x = where(self_zero, nonzero_product, nonzero_product / where(x == 0, 1.0, x)) * (zeros - self_zero.to(x.dtype) == 0)
        gx = where(hit, g * others_x, g) if include_self else where(hit, 0.0, g)
        p_at, z_at = gather(nonzero_product), gather(zeros)
        others_src = where(src_zero, p_at, p_at / where(src_zero, 1.0, src)) * (z_at - src_zero.to(x.dtype) == 0)
        gsrc = gather(g) * others_src
    if ctx.needs_input_grad[2] and tuple(ctx.input_types[2].shape) != tuple(idx.shape):
        gsrc = _pad_source(gsrc, ctx.input_types[2].shape)
    return [gx if ctx.needs_input_grad[0] else None, None, gsrc if ctx.needs_input_grad[2] else None]


def _pad_source(gsrc, shape):
    """The gradient of the part of src that index covers, zero-padded to src's shape."""
    from ..compositions import pad
    widths = []
    for have, want in reversed(list(zip(gsrc.shape, shape))):
        widths += [0, want - have]
    return pad(gsrc, widths)


defop("scatter_reduce", infer=_scatter_reduce_infer, forward=_scatter_reduce_forward, vjp=_scatter_reduce_vjp,
      saves=("in0", "in1", "in2", "out0"), traits=frozenset({PURE}), num_inputs=3, differentiable_inputs=(0, 2),
      attr_names=("dim", "reduce", "include_self"), node_name="ScatterReduceBackward0")
