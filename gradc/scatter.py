"""Scatter-style updates spelled with table ops (scatter, scatter_add, index_add, index_fill and
their in-place forms, masked_fill_), and the data-dependent selections (masked_select, nonzero,
argwhere, unique, bincount), whose result shapes depend on values: those run eagerly and raise
a clear error under ``@gradc.compile``."""
from __future__ import annotations

import numpy as np

from . import dtypes, factories
from .autograd.node import grad_fn_named
from .compositions import bind_methods
from .ops.dispatch import apply
from .arg_parser import bool_arg, parses
from .tensor_api import is_tensor_like, norm_dim, where


def _index_region(src, index):
    """The part of ``src`` that ``index`` addresses (PyTorch lets src be larger)."""
    for d, n in enumerate(index.shape):
        if src.shape[d] != n:
            src = src.narrow(d, 0, n)
    return src


def _check_scatter(x, dim, index, src):
    """PyTorch's checks of scatter/scatter_add's arguments, in its order (the index's dtype,
    the source's dtype, the dimensions, the sizes), with its messages."""
    if not is_tensor_like(index) or index.dtype not in (dtypes.int64, dtypes.int32):
        raise RuntimeError("scatter(): Expected dtype int32/int64 for index")
    if is_tensor_like(src) and src.dtype is not x.dtype:
        raise RuntimeError("scatter(): Expected self.dtype to be equal to src.dtype")
    if max(index.ndim, 1) != max(x.ndim, 1):
        raise RuntimeError("Index tensor must have the same number of dimensions as self tensor")
    if is_tensor_like(src) and max(index.ndim, 1) != max(src.ndim, 1):
        raise RuntimeError("Index tensor must have the same number of dimensions as src tensor")
    if index.ndim == 0:
        return
    too_large = any(k != dim and n > x.shape[k] for k, n in enumerate(index.shape))
    if is_tensor_like(src) and src.ndim:
        too_large = too_large or any(n > src.shape[k] for k, n in enumerate(index.shape))
        if too_large:
            raise RuntimeError(f"Expected index {list(index.shape)} to be no larger than self {list(x.shape)} apart "
                               f"from dimension {dim} and to be no larger size than src {list(src.shape)}")
    elif too_large:
        raise RuntimeError(f"Expected index {list(index.shape)} to be no larger than self {list(x.shape)} apart "
                           f"from dimension {dim}")


def _scatter_sum(x, dim, index, src):
    if index.dtype is dtypes.int32:         # PyTorch takes int32 indices too
        index = index.to(dtypes.int64)
    return apply("scatter_add", index, src, dim=dim, shape=list(x.shape))


def _source(x, index, src):
    if is_tensor_like(src):
        return _index_region(src, index).to(x.dtype)
    return factories.full(tuple(index.shape), src, dtype=x.dtype, device=x.device)


def scalar_type_name(t) -> str:
    """PyTorch's name of a tensor's scalar type in its messages (Float, Double, Long, ...), a
    non-tensor's type name."""
    return t.dtype.scalar_type if is_tensor_like(t) else type(t).__name__


def index_value_outside(index, low, high):
    """The first value of ``index`` outside [low, high), or None (always None for a traced
    index: it has no values)."""
    data = getattr(index, "_data", None)
    if data is None or not data.size:
        return None
    values = index._host()
    bad = values[(values < low) | (values >= high)]
    return int(bad.flat[0]) if bad.size else None


def _check_scatter(x, dim, index, src):
    """PyTorch's checks of scatter's and scatter_add's operands (scatter_gather_dtype_check,
    scatter_shape_check, then the index values), with its messages."""
    if not is_tensor_like(index) or index.dtype not in (dtypes.int64, dtypes.int32):
        raise RuntimeError("scatter(): Expected dtype int32/int64 for index")
    source = src if is_tensor_like(src) else None
    if source is not None and source.dtype is not x.dtype:
        raise RuntimeError("scatter(): Expected self.dtype to be equal to src.dtype")
    if index.numel() == 0:
        return
    ndim = max(x.ndim, 1)
    if max(index.ndim, 1) != ndim:
        raise RuntimeError("Index tensor must have the same number of dimensions as self tensor")
    if source is not None and max(source.ndim, 1) != max(index.ndim, 1):
        raise RuntimeError("Index tensor must have the same number of dimensions as src tensor")
    sizes = lambda t: list(t.shape) or [1]      # noqa: E731  (PyTorch's ensure_nonempty_size)
    own, idx = sizes(x), sizes(index)
    wrong = any(idx[d] > own[d] for d in range(ndim) if d != dim)
    if source is not None:
        wrong = wrong or any(n > m for n, m in zip(idx, sizes(source)))
        if wrong:
            raise RuntimeError(f"Expected index {list(index.shape)} to be no larger than self {list(x.shape)} apart "
                               f"from dimension {dim} and to be no larger size than src {list(source.shape)}")
    elif wrong:
        raise RuntimeError(f"Expected index {list(index.shape)} to be no larger than self {list(x.shape)} apart "
                           f"from dimension {dim}")
    bad = index_value_outside(index, 0, own[dim])
    if bad is not None:
        raise RuntimeError(f"index {bad} is out of bounds for dimension {dim} with size {own[dim]}")


@grad_fn_named("ScatterAddBackward0")
def scatter_add(x, dim, index, src):
    dim = norm_dim(dim, max(x.ndim, 1))
    _check_scatter(x, dim, index, src)
    return x + _scatter_sum(x, dim, index, _source(x, index, src))


def _scatter_node_name(x, dim, index, src=None, value=None, *, reduce=None):
    if reduce is not None:
        return None
    return "ScatterBackward0" if is_tensor_like(src) else "ScatterBackward1"


@grad_fn_named(_scatter_node_name)
def scatter(x, dim, index, src=None, value=None, *, reduce=None):
    """``x`` with ``x[... index ...] = src`` along ``dim``.  A repeated index gets the mean of its
    sources (the value when they agree; PyTorch keeps one of them, unspecified which, and gives
    each source the whole gradient where here each gets its share).  ``reduce='add'`` and
    ``'multiply'`` as PyTorch's."""
    dim = norm_dim(dim, max(x.ndim, 1))
    src = value if src is None else src
    if reduce is not None and reduce not in ("add", "multiply"):
        raise RuntimeError("reduce argument must be either add or multiply.")
    _check_scatter(x, dim, index, src)
    if not x.dtype.is_floating_point:      # integer and bool tensors keep their dtype, as PyTorch's
        wide = x.to(dtypes.float64)
        return scatter(wide, dim, index, src.to(dtypes.float64) if is_tensor_like(src) else float(src),
                       reduce=reduce).to(x.dtype)
    s = _source(x, index, src)
    if reduce == "add":
        return x + _scatter_sum(x, dim, index, s)
    if reduce == "multiply":         # the product as exp(sum log|s|), its sign from the count of negatives
        magnitude = _scatter_sum(x, dim, index, s.abs().log()).exp()
        negatives = _scatter_sum(x, dim, index, (s < 0).to(x.dtype))
        return where(_hits(x, dim, index), x * (1 - 2 * (negatives % 2)) * magnitude, x)
    counts = _counts(x, dim, index)
    hit = counts > 0
    return where(hit, _scatter_sum(x, dim, index, s) / where(hit, counts, 1.0), x)


def _counts(x, dim, index):
    ones = factories.ones(tuple(index.shape), dtype=x.dtype, device=x.device)
    return _scatter_sum(x, dim, index, ones)


def _hits(x, dim, index):
    return _counts(x, dim, index) > 0


def _along(x, dim, index, source_shape):
    """``index`` (1-D, positions along ``dim``) broadcast to ``source_shape``."""
    shape = [1] * len(source_shape)
    shape[dim] = -1
    return index.reshape(*shape).expand(*source_shape)


def _check_index_add(x, dim, index, source):
    """PyTorch's checks of index_add's operands (index_func_meta_impl, then the index values)."""
    if index.ndim > 1:
        raise IndexError("index_add_(): Index is supposed to be a vector")
    if index.dtype not in (dtypes.int64, dtypes.int32):
        raise RuntimeError(f"index_add_(): Expected dtype int32/int64 for index but got: {scalar_type_name(index)}")
    if source.dtype is not x.dtype:
        raise RuntimeError(f"index_add_(): self ({scalar_type_name(x)}) and source ({scalar_type_name(source)}) must "
                           "have the same scalar type")
    n = index.numel()
    along = source.shape[dim] if source.ndim else 1
    if n != along:
        raise RuntimeError(f"index_add_(): Number of indices ({n}) should be equal to source.size(dim): ({along}), "
                           f"for dim: {dim}")
    rest = lambda t: [k for d, k in enumerate(t.shape) if d != dim]      # noqa: E731
    if x.ndim and source.ndim and rest(x) != rest(source):
        raise RuntimeError("source tensor shape must match self tensor shape, excluding the specified dimension. "
                           f"Got self.shape = {list(x.shape)} source.shape = {list(source.shape)}")
    size = x.shape[dim] if x.ndim else 1
    bad = index_value_outside(index, 0, size)
    if bad is not None:
        raise RuntimeError(f"index {bad} is out of bounds for dimension {dim} with size {size}")


@parses("index_add", "(int dim, Tensor index, Tensor source, *, Number alpha = 1)")
def index_add(x, dim, index, source, *, alpha=1):
    dim = norm_dim(dim, max(x.ndim, 1))
    _check_index_add(x, dim, index, source)
    src = source * alpha if alpha != 1 else source
    return x + _scatter_sum(x, dim, _along(x, dim, index, tuple(source.shape)), src.to(x.dtype))


@grad_fn_named(lambda x, dim, index, value: "IndexFillBackward1" if is_tensor_like(value) else "IndexFillBackward0")
def index_fill(x, dim, index, value):
    dim = norm_dim(dim, max(x.ndim, 1))
    if index.dtype is not dtypes.int64:
        raise IndexError("index_fill_(): Expected dtype int64 for index.")
    n = x.shape[dim] if x.ndim else 1
    bad = index_value_outside(index, -n, n)
    if bad is not None:
        raise IndexError(f"index {bad} is out of bounds for dimension {dim} with size {n}")
    n = x.shape[dim]
    positions = factories.arange(n, device=x.device).reshape(n, 1)
    wrapped = where(index < 0, index + n, index)       # negative indices count from the end, as PyTorch's
    hit = (positions == wrapped.reshape(1, -1)).any(1)
    shape = [1] * x.ndim
    shape[dim] = n
    # the value in x's dtype, as PyTorch fills it (bool(3) into a bool tensor; NaN refused by an integer one)
    if not is_tensor_like(value):
        dtypes.check_fits(value, x.dtype)
    value = value.to(x.dtype) if is_tensor_like(value) else x._scalar(value, x.dtype)
    return where(hit.reshape(*shape), value, x)


def scatter_reduce(x, dim, index, src, reduce, *, include_self=True):
    """``x`` with each source reduced into the position ``index`` names along ``dim``: "sum",
    "prod", "mean", "amax" or "amin", with (``include_self``) or without x's own value there."""
    dim = norm_dim(dim, max(x.ndim, 1))
    if is_tensor_like(src) and src.dtype is not x.dtype:
        raise RuntimeError("scatter_reduce(): Expected self.dtype to be equal to src.dtype")
    return apply("scatter_reduce", x, index, src, dim=dim, reduce=reduce, include_self=bool(include_self))


def scatter_reduce_(x, dim, index, src, reduce, *, include_self=True):
    return x._inplace(scatter_reduce(x, dim, index, src, reduce, include_self=include_self))


def index_reduce(x, dim, index, source, reduce, *, include_self=True):
    """``x`` with the slices of ``source`` reduced into the slices ``index`` (1-D) names along
    ``dim``: "prod", "mean", "amax" or "amin" (PyTorch's index_reduce)."""
    dim = norm_dim(dim, max(x.ndim, 1))
    if reduce not in ("prod", "mean", "amax", "amin"):
        raise RuntimeError(f"index_reduce(): Expected reduce to be one of prod, mean, amax or amin but got {reduce}.")
    if index.ndim > 1:
        raise IndexError("index_reduce_(): Index is supposed to be a vector")
    spread = _along(x, dim, index, tuple(source.shape))
    return apply("scatter_reduce", x, spread, source.to(x.dtype), dim=dim, reduce=reduce,
                 include_self=bool(include_self), _name="IndexReduceBackward0")


def index_reduce_(x, dim, index, source, reduce, *, include_self=True):
    return x._inplace(index_reduce(x, dim, index, source, reduce, include_self=include_self))


def scatter_(x, dim, index, src=None, value=None, *, reduce=None):
    return x._inplace(scatter(x, dim, index, src, value, reduce=reduce))


def scatter_add_(x, dim, index, src):
    return x._inplace(scatter_add(x, dim, index, src))


def index_add_(x, dim, index, source, *, alpha=1):
    return x._inplace(index_add(x, dim, index, source, alpha=alpha))


def index_fill_(x, dim, index, value):
    return x._inplace(index_fill(x, dim, index, value))


@parses("masked_fill_", "(Tensor mask, Tensor value)", "(Tensor mask, Number value)")
def masked_fill_(x, mask, value):
    return x._inplace(x.masked_fill(mask, value))


# ---- data-dependent shapes: eager only -------------------------------------------------------
def _values(t, name):
    data = getattr(t, "_data", None)
    if data is None:
        from .ir.errors import TraceError
        raise TraceError(f"{name} under @gradc.compile: its result's shape depends on the tensor's values, "
                           "which are unknown while tracing; compute it outside the compiled function")
    return t._host()


def masked_select(x, mask):
    """The elements of ``x`` where ``mask`` (broadcast together) is True, as a 1-D tensor."""
    _values(mask, "masked_select")
    if mask.dtype is not dtypes.bool_:
        raise RuntimeError("masked_select: expected BoolTensor for mask")
    from .ops.rules import broadcast_shapes
    shape = broadcast_shapes("masked_select", tuple(mask.shape), tuple(x.shape))
    return x.expand(*shape).reshape(-1)[mask.expand(*shape).reshape(-1)]


@parses("nonzero", "()", "(*, bool as_tuple)")
def nonzero(x, *, as_tuple=False):
    """Indices of the nonzero elements, one row each; a 0-d tensor is read as 1-D for as_tuple and
    gives (1, 0) or (0, 0) otherwise, as PyTorch's."""
    as_tuple = bool_arg(as_tuple)
    data = _values(x, "nonzero")
    idx = np.nonzero(np.atleast_1d(data))
    if as_tuple:
        return tuple(factories.tensor(i.astype(np.int64), device=x.device) for i in idx)
    if data.ndim == 0:
        return factories.tensor(np.zeros((int(bool(data)), 0), np.int64), device=x.device)
    return factories.tensor(np.stack(idx, 1).astype(np.int64).reshape(-1, x.ndim), device=x.device)


def argwhere(x):
    return nonzero(x)


def unique_dim(x, dim):
    """``dim`` of unique/unique_consecutive checked as PyTorch checks it (None: flattened)."""
    if dim is None:
        return None
    if x.ndim == 0:
        raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
    d = norm_dim(dim, x.ndim)
    if x.numel() == 0 and x.shape[d] != 0:
        raise RuntimeError("There are 0 sized dimensions, and they aren't selected, so unique cannot be applied")
    return d


def unique(x, sorted=True, return_inverse=False, return_counts=False, dim=None):  # noqa: A002
    """The distinct values (slices along ``dim``), sorted; a NaN is distinct from every value, as
    PyTorch's. Slices with a NaN or a signed zero are sorted and merged as PyTorch's CPU kernel does
    (``selection.unique_dim_order``); the others by NumPy, which gives the same."""
    data = _values(x, "unique")
    d = unique_dim(x, dim)
    if d is not None and data.shape[d] and data.dtype.kind == "f" and (np.isnan(data) | (data == 0)).any():
        vals, inverse, counts = _unique_slices(data, d)
    else:
        vals, inverse, counts = np.unique(data, return_inverse=True, return_counts=True, axis=d,
                                          equal_nan=False)     # PyTorch keeps every NaN apart
    out = [factories.tensor(vals, dtype=x.dtype, device=x.device)]
    if return_inverse:
        shape = data.shape if d is None else (data.shape[d],)
        out.append(factories.tensor(inverse.reshape(shape).astype(np.int64), device=x.device))
    if return_counts:
        out.append(factories.tensor(counts.astype(np.int64), device=x.device))
    return out[0] if len(out) == 1 else tuple(out)


def _unique_slices(data, d):
    """(values, inverse, counts) of unique along ``d`` as PyTorch's CPU kernel: its sort of the
    slices, then each slice merged into the one before if all its elements are equal (NaN is not)."""
    from .ops import selection
    moved = np.moveaxis(data, d, 0)
    rows = moved.reshape(moved.shape[0], -1)
    order = selection.unique_dim_order(rows)
    inverse = np.zeros(len(order), np.int64)
    kept = [order[0]]
    for i in order[1:]:
        if not np.array_equal(rows[i], rows[kept[-1]]):
            kept.append(i)
        inverse[i] = len(kept) - 1
    counts = np.bincount(inverse, minlength=len(kept))
    return np.moveaxis(moved[kept], 0, d), inverse, counts


def bincount(x, weights=None, minlength=0):
    data = _values(x, "bincount")
    if x.dtype.is_floating_point or x.dtype is dtypes.bool_:
        raise NotImplementedError(f"\"bincount_cpu\" not implemented for '{x.dtype.scalar_type}'")
    if data.ndim != 1:
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    if data.size and data.min() < 0:
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    w = None if weights is None else _values(weights, "bincount")
    counts = np.bincount(data, weights=w, minlength=minlength)
    dt = dtypes.int64 if weights is None else (weights.dtype if weights.dtype.is_floating_point else dtypes.float64)
    return factories.tensor(counts, dtype=dt, device=x.device)


METHODS = ("scatter", "scatter_add", "index_add", "index_fill", "scatter_", "scatter_add_", "index_add_",
           "scatter_reduce", "scatter_reduce_", "index_reduce", "index_reduce_",
           "index_fill_", "masked_fill_", "masked_select", "nonzero", "argwhere", "unique", "bincount")
FUNCTIONS = ("scatter", "scatter_add", "index_add", "index_fill", "scatter_reduce", "index_reduce", "masked_select", "nonzero", "argwhere", "unique",
             "bincount")
bind_methods(globals(), METHODS)
