"""PyTorch functions that gradc spells with its table ops (eagerly and under @gradc.compile alike).

Values, dtypes, shapes and gradients are PyTorch's; the ``grad_fn`` graph is that of the pieces
(``tril`` records a WhereBackward0 where PyTorch records TrilBackward0).  Importing this module
(``gradc.functional`` does) binds the ``METHODS`` on the shared tensor API (``x.tril()``);
``gradc.tril(x)`` is the same function.
"""
from __future__ import annotations

import math

import numpy as np

from .autograd.node import grad_fn_named
from . import dtypes, factories
from .tensor import mark_multi_output_views
from .arg_parser import ArgumentError, bool_arg, check, int_arg, int_list, parses
from .tensor_api import cat, norm_dim, where
from .autocast_state import float32_precision, float32_precision_if, lower_precision


def _varargs(args) -> tuple:
    """``f(a, b)`` and ``f([a, b])`` alike, as PyTorch takes sizes and tensor lists."""
    return tuple(args[0]) if len(args) == 1 and isinstance(args[0], (list, tuple)) else tuple(args)

# ---- tests on values (bool results, no gradient) -------------------------------------------------


def isnan(x):
    return x != x


def isinf(x):
    return x.abs() == math.inf if x.dtype.is_floating_point else x != x


def isfinite(x):
    return (x.abs() < math.inf) if x.dtype.is_floating_point else x == x


def _reduces_nothing(dim) -> bool:
    """any/all read an empty dim list as "no dims" (sum reads it as all of them)."""
    return isinstance(dim, (tuple, list)) and len(dim) == 0


def _as_input_kind(out, x):
    """any/all of a uint8 tensor are uint8, as PyTorch's."""
    return out.to(dtypes.uint8) if x.dtype is dtypes.uint8 else out


_ANY_ALL = ("()", "(tuple of ints dim = None, bool keepdim = False)", "(int dim, bool keepdim = False)")


@parses("any", *_ANY_ALL)
def any(x, dim=None, keepdim=False):
    keepdim = bool_arg(keepdim)
    nonzero = x != 0
    out = nonzero if _reduces_nothing(dim) else nonzero.sum(dim, keepdim=keepdim) > 0
    return _as_input_kind(out, x)


@parses("all", *_ANY_ALL)
def all(x, dim=None, keepdim=False):
    keepdim = bool_arg(keepdim)
    zero = x == 0
    out = ~zero if _reduces_nothing(dim) else zero.sum(dim, keepdim=keepdim) == 0
    return _as_input_kind(out, x)


@parses("count_nonzero", "(int dim = None)", "(tuple of ints dim)")
def count_nonzero(x, dim=None):
    return (x != 0).sum(dim)


def allclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False) -> bool:
    return bool(isclose(a, b, rtol, atol, equal_nan).all().item())


def isclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    from .tensor_api import _tensor_argument
    _tensor_argument("isclose", b, 2)
    if a.dtype is not b.dtype:
        raise RuntimeError(f"{a.dtype.scalar_type} did not match {b.dtype.scalar_type}")
    if a.dtype is dtypes.bool_ and b.dtype is dtypes.bool_:
        return a == b
    if not a.dtype.is_floating_point:       # (integers compared in float64: no wrapping of a - b)
        a, b = a.double(), b.double()
    close = ((a - b).abs() <= atol + rtol * b.abs()) & isfinite(a) & isfinite(b)
    if equal_nan:
        close = close | (isnan(a) & isnan(b))
    return close | (a == b)           # (equal infinities; an infinity is close to nothing else)


def equal(a, b) -> bool:
    from .tensor_api import _tensor_argument
    _tensor_argument("equal", b, 2)
    return tuple(a.shape) == tuple(b.shape) and bool((a == b).all().item())


# ---- elementwise ---------------------------------------------------------------------------------
@grad_fn_named("NanToNumBackward0")
def nan_to_num(x, nan=0.0, posinf=None, neginf=None):
    if not x.dtype.is_floating_point:
        return x.clone()
    big = float(np.finfo(x.dtype.np).max)
    out = where(isnan(x), 0.0 if nan is None else nan, x)
    out = where(out == math.inf, big if posinf is None else posinf, out)
    return where(out == -math.inf, -big if neginf is None else neginf, out)


@parses("lerp", "(Tensor end, Tensor weight)", "(Tensor end, Number weight)")
@grad_fn_named(lambda start, end, weight: "LerpBackward1" if hasattr(weight, "dtype") else "LerpBackward0",
               edges=lambda start, end, weight: (start, end, weight) if hasattr(weight, "dtype") else (start, end))
def lerp(start, end, weight):
    """PyTorch's lerp: ``start + weight * (end - start)`` where |weight| < 0.5, else
    ``end - (end - start) * (1 - weight)`` (so lerp(1, inf, 1) is NaN, as PyTorch's), of floating
    point tensors of one dtype; with a 0-d weight of another dtype, in their common dtype."""
    check_lerp_dtypes(start, end, weight)
    if hasattr(weight, "dtype") and weight.dtype is not start.dtype:      # a 0-d weight: their common dtype
        from .tensor_api import promote_operands
        (start, end, weight), _ = promote_operands([start, end, weight])
    if not start.dtype.is_floating_point:
        from .ops.rules import not_implemented_for
        raise not_implemented_for("lerp_kernel_tensor" if hasattr(weight, "dtype") else "lerp_kernel_scalar",
                                  start.dtype)
    check_broadcast("lerp", start, end, weight)
    return rounded_once(_lerp, (start, end, weight), start.dtype)


def check_lerp_dtypes(start, end, weight):
    """lerp's argument and dtype checks: end of start's dtype, and a weight with dimensions too."""
    if not hasattr(end, "dtype") or not (hasattr(weight, "dtype") or isinstance(weight, (int, float, np.number))):
        raise ArgumentError("lerp's end or weight")
    for name, t in (("end", end), ("weight", weight)):
        if hasattr(t, "dtype") and t.dtype is not start.dtype and (name == "end" or t.ndim):
            raise RuntimeError(f"expected dtype {start.dtype.c_type} for `{name}` but got dtype {t.dtype.c_type}")


def _lerp(start, end, weight):
    if not hasattr(weight, "dtype"):
        return start + weight * (end - start) if abs(weight) < 0.5 else end - (end - start) * (1 - weight)
    return where(weight.abs() < 0.5, start + weight * (end - start), end - (end - start) * (1 - weight))


def rounded_once(compute, operands, dt):
    """``compute(*operands)``; for float16 at float32 and rounded once, as PyTorch's fused kernels
    (a number among the operands stays as it is)."""
    if dt is not dtypes.float16:
        return compute(*operands)
    return compute(*[x.float() if hasattr(x, "dtype") else x for x in operands]).to(dt)


def check_broadcast(op, *operands):
    """PyTorch's broadcast error for operands in its order (a function spelled with several ops
    would report its pieces' operands otherwise)."""
    from .ops.rules import broadcast_shapes
    broadcast_shapes(op, *[tuple(t.shape) for t in operands if hasattr(t, "shape")])


def floating_operands(kernel, a, b):
    """``a`` and ``b`` promoted to their common dtype (integers stay integers), which PyTorch's
    ``kernel`` needs floating point; and that dtype."""
    from .ops.rules import not_implemented_for
    from .tensor_api import promote_operands
    (a, b), dt = promote_operands([a, b])
    if not dt.is_floating_point:
        raise not_implemented_for(kernel, dt)
    return a, b, dt


@parses("logaddexp", "(Tensor other)")
@grad_fn_named("LogaddexpBackward0")
def logaddexp(a, b):
    """log(exp(a) + exp(b)) = max(a, b) + log1p(exp(-|a - b|)) (equal infinities: that infinity),
    of floating point operands (float16 at float32, rounded once)."""
    if not hasattr(b, "dtype"):
        raise ArgumentError("logaddexp(): other")
    a, b, dt = floating_operands("logaddexp_cpu", a, b)
    return rounded_once(_logaddexp, (a, b), dt)


def _logaddexp(a, b):
    m = a.maximum(b)
    d = (a - b).abs()
    return where(d == d, m + (-d).exp().log1p(), a + b)


@parses("hypot", "(Tensor other)")
@grad_fn_named("HypotBackward0")
def hypot(a, b):
    """sqrt(a^2 + b^2) scaled by max(|a|, |b|), so that it does not overflow early: of floating
    point operands only (PyTorch promotes, without turning integers into floats), float16 at
    float32 and rounded once."""
    if not hasattr(b, "dtype"):
        raise ArgumentError("hypot(): other")
    a, b, dt = floating_operands("hypot_cpu", a, b)
    if dt is dtypes.float16:
        a, b = a.float(), b.float()
    abs_a, abs_b = a.abs(), b.abs()
    s = abs_a.maximum(abs_b)
    safe = where(s == 0, 1.0, s)
    r = s * ((a / safe) ** 2 + (b / safe) ** 2).sqrt()
    r = where((abs_a == math.inf) | (abs_b == math.inf), math.inf, r)     # (C's hypot: inf with NaN too)
    return r.to(dt) if dt is dtypes.float16 else r


# ---- triangles, diagonals, products -------------------------------------------------------------
def _triangle_mask(x, diagonal, lower):
    rows, cols = x.shape[-2], x.shape[-1]
    r = factories.arange(rows, device=x.device).unsqueeze(1)
    c = factories.arange(cols, device=x.device).unsqueeze(0)
    return (c - r <= diagonal) if lower else (c - r >= diagonal)


@parses("tril", "(int diagonal = 0)")
@grad_fn_named("TrilBackward0", edges=lambda x, *a, **k: (x,))
def tril(x, diagonal=0):
    diagonal = int_arg(diagonal)
    if x.ndim < 2:
        raise RuntimeError("tril: input tensor must have at least 2 dimensions")
    return where(_triangle_mask(x, diagonal, True), x, x._scalar(0, x.dtype))     # (a bool x stays bool)


@parses("triu", "(int diagonal = 0)")
@grad_fn_named("TriuBackward0", edges=lambda x, *a, **k: (x,))
def triu(x, diagonal=0):
    diagonal = int_arg(diagonal)
    if x.ndim < 2:
        raise RuntimeError("triu: input tensor must have at least 2 dimensions")
    return where(_triangle_mask(x, diagonal, False), x, x._scalar(0, x.dtype))     # (a bool x stays bool)


@parses("diagonal", "(int offset = 0, int dim1 = 0, int dim2 = 1)")
def diagonal(x, offset=0, dim1=0, dim2=1):
    """The diagonal of dims ``dim1``/``dim2`` as the last dim (PyTorch's layout): an index of the
    permuted input whose eager result is a view of the input's memory, as PyTorch's (writes
    through it reach the input, with CopySlices history)."""
    return diagonal_index(x, int_arg(offset), dim1, dim2, as_view=True, name="DiagonalBackward0")


def diagonal_index(x, offset, dim1, dim2, as_view, name):
    """``diagonal``, as a view of ``x`` or (``torch.diag``'s) a copy, with grad_fn ``name``."""
    from .ops.dispatch import apply
    from .tensor_api import encode_index
    d1, d2 = norm_dim(dim1, x.ndim), norm_dim(dim2, x.ndim)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    rest = [d for d in range(x.ndim) if d not in (d1, d2)]
    y = x.permute(*rest, d1, d2)
    n1, n2 = y.shape[-2], y.shape[-1]
    r0, c0 = (0, offset) if offset >= 0 else (-offset, 0)
    n = max(0, min(n1 - r0, n2 - c0))
    rows = factories.tensor([r0 + k for k in range(n)], dtype=dtypes.int64)
    cols = factories.tensor([c0 + k for k in range(n)], dtype=dtypes.int64)
    key, tensors = encode_index((Ellipsis, rows, cols), y)
    out = apply("index", y, *tensors, key=key, _name=name)
    from .tensor import Tensor, view_as_index_of
    if as_view and type(out) is Tensor and isinstance(y._data, np.ndarray):
        corner = y._data[..., r0:r0 + n, c0:c0 + n]
        strided = np.lib.stride_tricks.as_strided(
            corner, shape=corner.shape[:-2] + (n,), strides=corner.strides[:-2] + (corner.strides[-2] + corner.strides[-1],),
            writeable=corner.flags.writeable)
        view_as_index_of(out, y, strided, key, tensors)
    elif as_view:
        from .ir.tracer import Proxy, mark_view
        if isinstance(y, Proxy):                        # traced: a view too, for the tracer's checks
            mark_view(out, y, "index", {"key": key}, tensors)
    return out


@float32_precision
@grad_fn_named("TraceBackward0", edges=lambda x: (x,))
def trace(x):
    if x.ndim != 2:
        raise RuntimeError(f"trace: expected a matrix, but got tensor with dim {x.ndim}")
    return diagonal(x).sum()


def outer(a, b):
    from .tensor_api import _tensor_argument
    _tensor_argument("outer", a, 1, "input")
    _tensor_argument("outer", b, 2, "vec2")
    for name, t in (("self", a), ("vec2", b)):
        if t.ndim != 1:
            raise RuntimeError(f"outer: Expected 1-D argument {name}, but got {t.ndim}-D")
    return a.unsqueeze(1) * b.unsqueeze(0)


@grad_fn_named("AddmmBackward0")
def beta_scaled(input, beta):
    """``beta * input`` of addmm and its kin; at beta = 0 the input is ignored, NaN and inf
    included (zeros of its shape, its gradient zero), as PyTorch's."""
    if beta == 1:
        return input
    if beta == 0:
        return where(factories.ones((), dtype=dtypes.bool_), 0.0, input)
    return input * beta


@lower_precision
@grad_fn_named("AddmmBackward0", edges=lambda input, mat1, mat2, **k: (input, mat1, mat2))
def addmm(input, mat1, mat2, *, beta=1, alpha=1):
    prod = mat1 @ mat2
    return beta_scaled(input, beta) + (prod if alpha == 1 else prod * alpha)


@grad_fn_named("VarMeanBackward0")
def var_mean(x, dim=None, unbiased=None, keepdim=False, *, correction=None):
    return x.var(dim, unbiased, keepdim, correction=correction), x.mean(dim, keepdim=keepdim)


@grad_fn_named("StdMeanBackward0")
def std_mean(x, dim=None, unbiased=None, keepdim=False, *, correction=None):
    return x.std(dim, unbiased, keepdim, correction=correction), x.mean(dim, keepdim=keepdim)


# ---- splitting, repeating, reordering ------------------------------------------------------------
@grad_fn_named(lambda x, split_size_or_sections, dim=0:
               "SplitBackward0" if isinstance(split_size_or_sections, int) else "SplitWithSizesBackward0")
@parses("split", "(Tensor input, int split_size, int dim = 0)",
        "(Tensor input, tuple of ints split_size, int dim = 0)", method=False)
def split(x, split_size_or_sections, dim=0):
    if x.ndim == 0:
        raise RuntimeError("split expects at least a 1-dimensional tensor")
    d = norm_dim(dim, x.ndim)
    n = x.shape[d]
    if isinstance(split_size_or_sections, int):
        step = split_size_or_sections
        if step < 0:
            raise RuntimeError(f"split expects split_size be non-negative, but got split_size={step}")
        if step == 0 and n:
            raise RuntimeError("split_size can only be 0 if dimension size is 0, but got dimension size of "
                               f"{n}")
        sizes = [min(step, n - s) for s in range(0, n, step)] if n else [0]
    else:
        if not isinstance(split_size_or_sections, (tuple, list)):
            raise TypeError("split_with_sizes(): argument 'split_sizes' (position 2) must be tuple of ints, not "
                            f"{type(split_size_or_sections).__name__}")
        try:
            sizes = list(int_list((split_size_or_sections,)))
        except ArgumentError:       # (Tensor.split hands a list to split_with_sizes: its message)
            check("split_with_sizes", ("(Tensor input, tuple of ints split_sizes, int dim = 0)",),
                  (x, split_size_or_sections, dim))
            raise
        if _builtin_any(v < 0 for v in sizes):
            raise RuntimeError(f"split_with_sizes expects split_sizes have only non-negative entries, but got "
                               f"split_sizes={sizes}")
        if sum(sizes) != n:
            raise RuntimeError(f"split_with_sizes expects split_sizes to sum exactly to {n} (input tensor's size at "
                               f"dimension {d}), but got split_sizes={sizes}")
    out, start = [], 0
    for s in sizes:
        out.append(x.narrow(d, start, s))
        start += s
    return mark_multi_output_views(x, tuple(out))


@parses("chunk", "(int chunks, int dim = 0)")
@grad_fn_named("SplitBackward0")
def chunk(x, chunks, dim=0):
    chunks = int_arg(chunks)
    if x.ndim == 0:
        raise RuntimeError("chunk expects at least a 1-dimensional tensor")
    if chunks <= 0:
        raise RuntimeError("chunk expects `chunks` to be greater than 0, got: " + str(chunks))
    d = norm_dim(dim, x.ndim)
    if x.shape[d] == 0:                     # an empty dim gives ``chunks`` empty chunks, as PyTorch's
        return tuple(x.narrow(d, 0, 0) for _ in range(chunks))
    return split(x, max(1, -(-x.shape[d] // chunks)), d)


@parses("unbind", "(int dim = 0)")
@grad_fn_named("UnbindBackward0")
def unbind(x, dim=0):
    d = norm_dim(dim, x.ndim)
    return mark_multi_output_views(x, tuple(x.select(d, i) for i in range(x.shape[d])))


@parses("repeat", "(tuple of ints repeats)")
@grad_fn_named("RepeatBackward0", edges=lambda x, *a, **k: (x,))
def repeat(x, *sizes):
    sizes = int_list(sizes)
    if len(sizes) < x.ndim:
        raise RuntimeError("Number of dimensions of repeat dims can not be smaller than number of dimensions of "
                           "tensor")
    shape = (1,) * (len(sizes) - x.ndim) + tuple(x.shape)
    result = [r * n for r, n in zip(sizes, shape)]
    negative = [n for n in result if n < 0]     # (this module's any/min are tensor functions)
    if negative:
        raise RuntimeError(f"Trying to create tensor with negative dimension {negative[0]}: {result}")
    y = x.reshape(*shape)
    inter = [v for n in shape for v in (1, n)]
    big = [v for r, n in zip(sizes, shape) for v in (r, n)]
    out = y.reshape(*inter).expand(*big).reshape(*[r * n for r, n in zip(sizes, shape)])
    return out.clone()          # a new tensor, as PyTorch's (the reshape of an expand can be a view of x)


def repeat_interleave(x, repeats=None, dim=None, *, output_size=None):
    """Each element (each slice along ``dim``; of the flattened tensor when ``dim`` is None)
    repeated ``repeats`` times in place.  An int repeats by expand-and-reshape; a tensor of
    per-slice counts (or one count) gathers with ``index_select``, its output length read from
    the counts, so they must be concrete (an eager tensor).  ``repeat_interleave(counts)``
    alone repeats each index ``counts[i]`` times."""
    if repeats is None:                       # torch.repeat_interleave(repeats)
        counts = x
        return repeat_interleave(factories.arange(counts.shape[0] if counts.ndim else 1, device=counts.device), counts)
    if dim is None:
        x, dim = x.reshape(-1), 0
    dim = norm_dim(dim, x.ndim)
    if hasattr(repeats, "dtype"):             # a tensor (eager, or traced under @gradc.compile)
        if repeats.ndim > 1:
            raise RuntimeError("repeats must be 0-dim or 1-dim tensor")
        if repeats.dtype.is_floating_point or repeats.dtype.name == "bool":
            raise NotImplementedError(f'"repeat_interleave_cpu" not implemented for '
                                      f"'{repeats.dtype.tensor_type[:-6]}'")
        data = getattr(repeats, "_data", None)
        if data is None:
            from .ir.errors import TraceError
            raise TraceError("repeat_interleave with tensor repeats under @gradc.compile: the output length "
                               "depends on the repeats' values; pass an int, or compute the index outside")
        counts = np.broadcast_to(np.asarray(data).reshape(-1), (x.shape[dim],)) if data.size == 1 else \
            np.asarray(data).reshape(-1)
        if counts.shape[0] != x.shape[dim]:
            raise RuntimeError(f"repeats must have the same size as input along dim, but got repeats.size(0) = "
                               f"{counts.shape[0]} and input.size({dim}) = {x.shape[dim]}")
        if (counts < 0).any():
            raise RuntimeError("repeats can not be negative")
        index = np.repeat(np.arange(x.shape[dim]), counts)
        return x.index_select(dim, factories.tensor(index, device=x.device))
    repeats = int(repeats)
    if repeats < 0:
        raise RuntimeError("Repeats must be non-negative")
    shape = list(x.shape)
    wide = shape[:dim + 1] + [repeats] + shape[dim + 1:]
    out = shape[:dim] + [shape[dim] * repeats] + shape[dim + 1:]
    return x.unsqueeze(dim + 1).expand(*wide).reshape(*out)


def apply_copy(x):
    """A copy of ``x`` recorded as PyTorch's CopyBackwards (what it returns where nothing else happens)."""
    from .ops.dispatch import apply
    return apply("clone", x, _name="CopyBackwards")


@parses("flip", "(tuple of ints dims)")
@grad_fn_named("FlipBackward0")
def flip(x, *dims, **kwargs):
    """Reverse ``dims`` (a list, several ints: ``x.flip(0, 1)``, or ``dims=``)."""
    if "dims" in kwargs:
        dims = (kwargs.pop("dims"),)
    if kwargs:
        raise TypeError(f"flip() got an unexpected keyword argument '{next(iter(kwargs))}'")
    dims = list(int_list(dims))
    normalized = [norm_dim(d, x.ndim) for d in dims]
    for k, d in enumerate(normalized):
        if d in normalized[:k]:
            raise RuntimeError(f"dim {d} appears multiple times in the list of dims")
    if x.ndim == 0 or not dims:
        return x.clone()
    for d in normalized:
        x = x.index_select(d, factories.arange(x.shape[d] - 1, -1, -1, device=x.device))
    return x


@parses("roll", "(tuple of ints[1] shifts, tuple of ints[1] dims = ())")
@grad_fn_named("RollBackward0", edges=lambda x, *a, **k: (x,))
def roll(x, shifts, dims=None):
    shifts = list(int_list((shifts,)))
    if dims is None:
        if len(shifts) != 1:
            raise RuntimeError(f"shifts and dimensions must align. shifts: {len(shifts)}, dims:0")
        return roll(x.reshape(-1), shifts, 0).reshape(*x.shape)
    dims = list(int_list((dims,)))
    if not shifts:
        raise RuntimeError("`shifts` required")
    if len(shifts) != len(dims):
        raise RuntimeError(f"shifts and dimensions must align. shifts: {len(shifts)}, dims:{len(dims)}")
    source = x
    for s, d in zip(shifts, dims):
        if not x.ndim:
            raise IndexError(f"Dimension specified as {d} but tensor has no dimensions")
        d = norm_dim(d, x.ndim)
        n = x.shape[d]
        if n == 0:
            continue
        s %= n
        if s:
            x = cat([x.narrow(d, n - s, s), x.narrow(d, 0, n - s)], d)
    return x.clone() if x is source else x          # always a new tensor, as PyTorch's


def diff(x, n=1, dim=-1, prepend=None, append=None):
    """n-th differences along ``dim`` (``prepend``/``append`` joined first; a bool tensor's
    differences are its changes, ``!=``, as PyTorch's)."""
    if x.ndim == 0:
        raise RuntimeError("diff expects input to be at least one-dimensional")
    d = norm_dim(dim, x.ndim)
    if prepend is not None or append is not None:
        x = cat([t for t in (prepend, x, append) if t is not None], d)
    if n == 0:
        return apply_copy(x)
    for _ in range(n):
        m = x.shape[d]
        later, earlier = x.narrow(d, 1, m - 1), x.narrow(d, 0, m - 1)
        x = later != earlier if x.dtype is dtypes.bool_ else later - earlier
    return x


def meshgrid(*tensors, indexing="ij"):
    tensors = list(_varargs(tensors))
    if indexing not in ("ij", "xy"):
        raise RuntimeError(f"torch.meshgrid: indexing must be one of \"xy\" or \"ij\", but received: {indexing}")
    for t in tensors:
        if t.ndim > 1:       # (PyTorch's message prints the tensor: only its type line is kept here)
            raise RuntimeError(f"torch.meshgrid: Expected 0D or 1D tensor in the tensor list but got: "
                               f"[ torch.{t.dtype.tensor_type}{{{','.join(map(str, t.shape))}}} ]")
    if _builtin_any(t.dtype is not tensors[0].dtype for t in tensors):
        raise RuntimeError("meshgrid expects all tensors to have the same dtype")
    if indexing == "xy" and len(tensors) >= 2:
        tensors[0], tensors[1] = tensors[1], tensors[0]
    shape = [t.numel() for t in tensors]
    out = []
    for k, t in enumerate(tensors):
        view = [1] * len(tensors)
        view[k] = shape[k]
        out.append(t.reshape(*view).expand(*shape))
    if indexing == "xy" and len(out) >= 2:     # the grids of (y, x, ...) in 'ij' order, given back as (x, y, ...)
        out[0], out[1] = out[1], out[0]
    return tuple(out)


# ---- new tensors like this one (Tensor.new_*): its dtype and device unless given ----------------------
def _new(x, make, shape, dtype, device, requires_grad, *args):
    return make(shape, *args, dtype=dtype or x.dtype, device=device or x.device, requires_grad=requires_grad)


def new_zeros(x, *size, dtype=None, device=None, requires_grad=False):
    return _new(x, factories.zeros, _varargs(size), dtype, device, requires_grad)


def new_ones(x, *size, dtype=None, device=None, requires_grad=False):
    return _new(x, factories.ones, _varargs(size), dtype, device, requires_grad)


def new_empty(x, *size, dtype=None, device=None, requires_grad=False):
    return _new(x, factories.empty, _varargs(size), dtype, device, requires_grad)


def new_full(x, size, fill_value, dtype=None, device=None, requires_grad=False):
    return _new(x, factories.full, _varargs((size,)), dtype, device, requires_grad, fill_value)


def new_tensor(x, data, dtype=None, device=None, requires_grad=False):
    return _new(x, factories.tensor, data, dtype, device, requires_grad)


# methods too (``x.tril()``: each takes the tensor first), and the free functions (``gradc.tril``)
METHODS = ("isnan", "isinf", "isfinite", "any", "all", "count_nonzero", "allclose", "isclose", "equal",
           "nan_to_num", "lerp", "logaddexp", "hypot", "tril", "triu", "diagonal", "trace", "outer", "addmm",
           "split", "chunk", "unbind", "repeat", "repeat_interleave", "flip", "roll", "diff")
FUNCTIONS = METHODS + ("var_mean", "std_mean", "meshgrid", "einsum", "tensordot")


TENSOR_ONLY = ("new_zeros", "new_ones", "new_empty", "new_full", "new_tensor")      # methods, not gradc.*


def bind_methods(namespace: dict, names):
    """Make each function ``namespace[name]`` a Tensor method too (unless the API has one)."""
    from .tensor_api import TensorAPI
    for name in names:
        if not hasattr(TensorAPI, name):
            setattr(TensorAPI, name, namespace[name])


bind_methods(globals(), METHODS + TENSOR_ONLY)


# ---- einsum ---------------------------------------------------------------------------------------
def einsum(equation, *operands):
    """``torch.einsum``: each operand's repeated labels become its diagonal, labels no other operand
    or the output needs are summed out, and two operands contract as one batched ``matmul``
    (batch, free and contracted labels grouped); more than two contract left to right.  The
    sublist form ``einsum(a, [0, 1], b, [1, 2], [0, 2])`` is spelled as an equation first."""
    if not isinstance(equation, str):
        equation, operands = _einsum_sublists((equation,) + operands)
    operands = _varargs(operands)
    ins, out = _parse_einsum(equation, operands)
    terms = [_einsum_diagonals(x, list(labels)) for x, labels in zip(operands, ins)]
    while len(terms) > 1:
        (a, la), (b, lb) = terms[0], terms[1]
        later = set(out) | {c for _, lab in terms[2:] for c in lab}
        keep = [c for c in dict.fromkeys(la + lb) if c in later]
        terms = [_einsum_pair(a, la, b, lb, keep)] + terms[2:]
    x, labels = terms[0]
    return _einsum_finish(x, labels, out)


def _einsum_sublists(args):
    """(op0, sublist0, op1, sublist1, ..., [output sublist]) -> (equation, operands); labels are
    ints in [0, 52) or ``...``, as PyTorch's."""
    letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"

    def spell(sublist):
        out = []
        for label in sublist:
            if label is Ellipsis:
                out.append("...")
            elif isinstance(label, int) and 0 <= label < 52:
                out.append(letters[label])
            else:
                raise RuntimeError("einsum(): expected subscript to be within the range [0, 52), but got "
                                   f"{label}" if isinstance(label, int) else
                                   f"einsum(): expected a list of ints or Ellipsis as a sublist, got {label!r}")
        return "".join(out)
    has_output = len(args) % 2 == 1
    operands = list(args[0:-1:2] if has_output else args[0::2])
    sublists = list(args[1::2])
    if len(operands) != len(sublists):
        raise RuntimeError("einsum(): must specify the equation string and at least one operand, or at least "
                           "one operand and its subscripts list")
    equation = ",".join(spell(s) for s in sublists) + ("->" + spell(args[-1]) if has_output else "")
    return equation, tuple(operands)


def _parse_einsum(equation, operands):
    eq = equation.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    ins = lhs.split(",")
    if len(ins) != len(operands):
        raise RuntimeError("einsum(): more operands were provided than specified in the equation"
                           if len(operands) > len(ins) else
                           "einsum(): fewer operands were provided than specified in the equation")
    spare = iter(c for c in "ABCDEFGHIJKLMNOPQRSTUVWXYZ" if c not in eq)
    ell_n = max([x.ndim - (len(s) - 3) for x, s in zip(operands, ins) if "..." in s] or [0])
    ell = "".join(next(spare) for _ in range(ell_n))
    expanded = []
    for x, s in zip(operands, ins):
        if "..." in s:
            n = x.ndim - (len(s) - 3)
            s = s.replace("...", ell[ell_n - n:])
        if len(s) != x.ndim:
            raise RuntimeError(f"einsum(): the number of subscripts in the equation ({len(s)}) does not match the "
                               f"number of dimensions ({x.ndim}) for operand {len(expanded)}"
                               + (" and no ellipsis was given" if "..." not in equation else ""))
        expanded.append(s)
    if arrow:
        out = rhs.replace("...", ell)
    else:
        counts = {}
        for s in expanded:
            for c in s:
                counts[c] = counts.get(c, 0) + 1
        out = ell + "".join(sorted(c for c, k in counts.items() if k == 1 and c not in ell))
    _check_einsum_sizes(operands, expanded, ell)
    return expanded, out


def _check_einsum_sizes(operands, labels, ell):
    """PyTorch's checks of the sizes einsum's subscripts name, in its order: a subscript repeated
    in one operand (a diagonal) has one size; across operands sizes broadcast (1 or equal)."""
    seen = {}
    for i, (x, lab) in enumerate(zip(operands, labels)):
        own = {}
        for c, n in zip(lab, x.shape):
            if c in own:
                if n != own[c]:
                    raise RuntimeError(f"einsum(): subscript {c} is repeated for operand {i} but the sizes don't "
                                       f"match, {n} != {own[c]}")
                continue
            own[c] = n
            prev = seen.get(c, 1)
            if prev == 1:
                seen[c] = n
            elif n not in (1, prev) and c in ell:      # (PyTorch's message has no space after the operand)
                raise RuntimeError(f"einsum(): dimension {ell.index(c)} covered by ellipsis in operand {i}has size "
                                   f"{n} which does not broadcast with previously seen ellipsis with size {prev} "
                                   "for the respective dimension")
            elif n not in (1, prev):
                raise RuntimeError(f"einsum(): subscript {c} has size {n} for operand {i} which does not broadcast "
                                   f"with previously seen size {prev}")


def _einsum_diagonals(x, labels):
    """(x, labels) with each label once: a repeated label's dims become their diagonal."""
    while len(set(labels)) < len(labels):
        c = next(c for c in labels if labels.count(c) > 1)
        p = labels.index(c)
        q = labels.index(c, p + 1)
        x = diagonal(x, 0, p, q)
        labels = [c2 for k, c2 in enumerate(labels) if k not in (p, q)] + [c]
    return x, labels


def _sum_out(x, labels, keep):
    dims = [k for k, c in enumerate(labels) if c not in keep]
    if dims:
        x = x.sum(dims)
    return x, [c for c in labels if c in keep]


def _einsum_pair(a, la, b, lb, keep):
    """Contract two operands into one whose labels are ``keep`` (batch, then a's, then b's)."""
    a, la = _sum_out(a, la, set(keep) | set(lb))
    b, lb = _sum_out(b, lb, set(keep) | set(la))
    batch = [c for c in la if c in lb and c in keep]
    contract = [c for c in la if c in lb and c not in keep]
    a_free = [c for c in la if c not in lb]
    b_free = [c for c in lb if c not in la]
    size = {}
    for x, lab in ((a, la), (b, lb)):
        for c, n in zip(lab, x.shape):
            if size.get(c, 1) != 1 and n not in (1, size[c]):
                raise RuntimeError(f"einsum(): operands do not broadcast with remapped shapes (original->remapped): "
                                   f"subscript {c} has sizes {size[c]} and {n}")
            if size.get(c, 1) == 1:       # (a size-1 dim broadcasts, to 0 too)
                size[c] = n

    layout = batch + a_free + b_free
    if not contract:            # an outer or elementwise product: a broadcast multiply
        return _aligned(a, la, layout) * _aligned(b, lb, layout), layout

    def arrange(x, lab, groups):
        order = [lab.index(c) for g in groups for c in g]
        x = x.permute(*order) if order != list(range(len(order))) else x
        x = x.expand(*[size[c] for g in groups for c in g])
        return x.reshape(*[math.prod(size[c] for c in g) for g in groups])
    am = arrange(a, la, (batch, a_free, contract))
    bm = arrange(b, lb, (batch, contract, b_free))
    return (am @ bm).reshape(*[size[c] for c in layout]), layout


def _aligned(x, labels, layout):
    """``x`` with its dims in ``layout`` order and a size-1 dim for each layout label it lacks."""
    present = [c for c in layout if c in labels]
    order = [labels.index(c) for c in present]
    x = x.permute(*order) if order != list(range(len(order))) else x
    return x.reshape(*[x.shape[present.index(c)] if c in labels else 1 for c in layout])


def _einsum_finish(x, labels, out):
    x, labels = _sum_out(x, list(labels), set(out))
    missing = [c for c in out if c not in labels]
    if missing:
        raise RuntimeError(f"einsum(): output subscript {missing[0]} does not appear in the equation for any input "
                           "operand")
    order = [labels.index(c) for c in out]
    return x.permute(*order) if order != list(range(len(order))) else x


def tensordot(a, b, dims=2):
    """Contract the last ``dims`` dims of ``a`` with the first of ``b`` (or the listed dims) via einsum."""
    if isinstance(dims, int):
        if dims < 0:
            raise RuntimeError(f"tensordot expects dims >= 0, but got dims={dims}")
        given_a, given_b = list(range(-dims, 0)), list(range(dims))
    else:
        given_a, given_b = ([d] if isinstance(d, int) else list(d) for d in dims)
    da, db = [norm_dim(d, a.ndim) for d in given_a], [norm_dim(d, b.ndim) for d in given_b]
    for i, j, gi, gj in zip(da, db, given_a, given_b):
        if a.shape[i] != b.shape[j]:
            raise RuntimeError(f"contracted dimensions need to match, but first has size {a.shape[i]} in dim {gi} and "
                               f"second has size {b.shape[j]} in dim {gj}")
    letters = iter("abcdefghijklmnopqrstuvwxyz")
    la = [next(letters) for _ in range(a.ndim)]
    lb = [next(letters) for _ in range(b.ndim)]
    for i, j in zip(da, db):
        lb[j] = la[i]
    out = [c for k, c in enumerate(la) if k not in da] + [c for k, c in enumerate(lb) if k not in db]
    return einsum(f"{''.join(la)},{''.join(lb)}->{''.join(out)}", a, b)


def _pad_node_name(x, pad, mode="constant", value=None):
    """PyTorch's node for F.pad: ConstantPadNd, or Reflection/ReplicationPad{1,2,3}D by the pad's length
    (circular padding records CopySlices, which a composition does not name)."""
    if mode == "constant":
        return "ConstantPadNdBackward0"
    if mode in ("reflect", "replicate") and 1 <= len(pad) // 2 <= 3:
        return f"{'Reflection' if mode == 'reflect' else 'Replication'}Pad{len(pad) // 2}DBackward0"
    return None


def _float32_pad(x, pad, mode="constant", value=None):
    """Whether F.pad is an ATen op on autocast's float32 list: reflection_pad1d/2d, replication_pad1d/2d/3d."""
    n = len(pad) // 2 if isinstance(pad, (tuple, list)) else 0
    return (mode == "reflect" and n in (1, 2)) or (mode == "replicate" and n in (1, 2, 3))


@float32_precision_if(_float32_pad)
@grad_fn_named(_pad_node_name, edges=lambda x, *a, **k: (x,))
def pad(x, pad, mode="constant", value=None):
    """``nn.functional.pad``: ``pad`` lists (before, after) pairs from the last dim backwards; negative
    amounts crop.  Modes: constant (``value``, default 0), reflect, replicate, circular."""
    if not (isinstance(pad, (tuple, list)) and not _builtin_any(type(p) is not int for p in pad)
            and isinstance(mode, str)
            and (value is None or isinstance(value, (int, float)))):
        check("pad", ('(Tensor input, tuple of ints pad, str mode = "constant", float? value = None)',),
              (x, pad, mode, value))
    if len(pad) % 2 or len(pad) // 2 > x.ndim:
        raise RuntimeError("Padding length must be divisible by 2" if len(pad) % 2 else
                           "Padding length should be less than or equal to two times the input dimension but got "
                           f"padding length {len(pad)} and input of dimension {x.ndim}")
    if mode not in ("constant", "reflect", "replicate", "circular"):
        raise NotImplementedError(f"Unrecognised padding mode {mode}")
    n_pad = len(pad) // 2
    if mode != "constant" and not (1 <= n_pad <= 3 and x.ndim in (n_pad + 1, n_pad + 2)):
        raise NotImplementedError(
            f"Padding size {len(pad)} is not supported for {x.ndim}D input tensor.\n"
            "Supported combinations for non-constant padding:\n"
            "  - 2D or 3D input: padding size = 2 (pads last dimension)\n"
            "  - 3D or 4D input: padding size = 4 (pads last 2 dimensions)\n"
            "  - 4D or 5D input: padding size = 6 (pads last 3 dimensions)")
    for k in range(len(pad) // 2):
        d = x.ndim - 1 - k
        before, after = pad[2 * k], pad[2 * k + 1]
        if before < 0:
            x, before = x.narrow(d, -before, x.shape[d] + before), 0
        if after < 0:
            x, after = x.narrow(d, 0, x.shape[d] + after), 0
        n = x.shape[d]
        if mode == "reflect" and (before >= n or after >= n):
            raise RuntimeError(f"Argument #4: Padding size should be less than the corresponding input dimension, "
                               f"but got: padding ({before}, {after}) at dimension {d} of input {list(x.shape)}")
        if mode == "circular" and (before > n or after > n):
            raise RuntimeError("Padding value causes wrapping around more than once.")
        pieces = [_pad_side(x, d, before, mode, value, True), x, _pad_side(x, d, after, mode, value, False)]
        x = cat([p for p in pieces if p is not None], d)
    return x


def _pad_side(x, d, amount, mode, value, before):
    if amount == 0:
        return None
    n = x.shape[d]
    if mode == "constant":
        shape = list(x.shape)
        shape[d] = amount
        return factories.full(shape, 0.0 if value is None else value, dtype=x.dtype, device=x.device)
    if mode == "replicate":
        edge = x.narrow(d, 0 if before else n - 1, 1)
        return edge.expand(*[amount if k == d else s for k, s in enumerate(x.shape)])
    if mode == "circular":
        return x.narrow(d, n - amount, amount) if before else x.narrow(d, 0, amount)
    part = x.narrow(d, 1, amount) if before else x.narrow(d, n - 1 - amount, amount)     # reflect
    return flip(part, d)


# ---- convolution and pooling (N, C, *spatial) as patches and a matmul ----------------------------
import builtins  # noqa: E402  (any/all are gradc functions in this module)
_builtin_any = builtins.any


def _ntuple(v, n):
    return tuple(v) if isinstance(v, (tuple, list)) else (v,) * n


def _pair(v):
    return _ntuple(v, 2)


def _triple(v):
    return _ntuple(v, 3)


def _patches(x, kernel, stride, dilation, out):
    """(N, C, prod(kernel), *out): for each kernel offset (row-major), the strided window of the
    (padded) input over its trailing ``len(kernel)`` dims."""
    import itertools
    from .tensor_api import stack
    cols = []
    for offsets in itertools.product(*(range(k) for k in kernel)):
        key = (slice(None), slice(None)) + tuple(slice(o * d, o * d + s * (n - 1) + 1, s)
                                                 for o, d, s, n in zip(offsets, dilation, stride, out))
        cols.append(x[key])
    return stack(cols, 2)


def _out_size(n, pad, dil, k, stride):
    return (n + 2 * pad - dil * (k - 1) - 1) // stride + 1


def _pad_list(pairs):
    """F.pad's list (last dim first) from (before, after) pairs given first dim first."""
    return [v for before_after in reversed(pairs) for v in before_after]


def _same_padding(kernel, dilation):
    """padding='same': the total ``dilation * (k - 1)`` split with the odd one after, as PyTorch."""
    return [(d * (k - 1) // 2, d * (k - 1) - d * (k - 1) // 2) for k, d in zip(kernel, dilation)]


def _conv(input, weight, bias, stride, padding, dilation, groups, nd, name):
    """conv{nd}d as im2col: the kernel's windows of the padded input stacked, then one batched
    matmul per group."""
    if input.ndim not in (nd + 1, nd + 2):
        raise RuntimeError(f"Expected {nd + 1}D (unbatched) or {nd + 2}D (batched) input to {name}, but got input of "
                           f"size: {list(input.shape)}")
    if input.ndim == nd + 1:     # (PyTorch's unbatched convolution: the batched one between an unsqueeze and a squeeze)
        return _BATCHED[name](input.unsqueeze(0), weight, bias, stride, padding, dilation, groups).squeeze(0)
    _check_conv(input, weight, bias, stride, padding, groups, nd)
    n = input.shape[0]
    o, cg, ks = weight.shape[0], weight.shape[1], tuple(weight.shape[2:])
    s, d = _ntuple(stride, nd), _ntuple(dilation, nd)
    if padding == "valid":
        padding = 0
    if padding == "same":
        if s != (1,) * nd:
            raise RuntimeError("padding='same' is not supported for strided convolutions")
        pairs = _same_padding(ks, d)
    else:
        pairs = [(q, q) for q in _ntuple(padding, nd)]
    sizes = [input.shape[2 + i] + sum(pairs[i]) for i in range(nd)]
    if _builtin_any(sz < di * (k - 1) + 1 for sz, di, k in zip(sizes, d, ks)):
        raise RuntimeError(f"Calculated padded input size per channel: ({' x '.join(map(str, sizes))}). Kernel size: "
                           f"({' x '.join(str(di * (k - 1) + 1) for di, k in zip(d, ks))}). Kernel size can't be "
                           "greater than actual input size")
    if _builtin_any(v for pr in pairs for v in pr):
        input = pad(input, _pad_list(pairs))
    outs = [_out_size(input.shape[2 + i], 0, d[i], ks[i], s[i]) for i in range(nd)]
    kk, length = math.prod(ks), math.prod(outs)
    cols = _patches(input, ks, s, d, outs).reshape(n, groups, cg * kk, length)
    out = (weight.reshape(1, groups, o // groups, cg * kk) @ cols).reshape(n, o, *outs)
    if bias is not None:
        out = out + bias.reshape(1, o, *(1,) * nd)
    return out


def _check_conv(input, weight, bias, stride, padding, groups, nd):
    """PyTorch's checks of a convolution's arguments (its check_shape_forward), in its order."""
    if isinstance(padding, str) and padding not in ("same", "valid"):
        raise RuntimeError(f"Invalid padding string: '{padding}'")
    k = weight.ndim - 2
    if k != nd:          # (PyTorch expands the stride to the weight's dims first)
        raise RuntimeError(f"expected stride to be a single integer value or a list of {k} values to match the "
                           f"convolution dimensions, but got stride={list(_ntuple(stride, nd))}")
    if not isinstance(padding, str) and _builtin_any(v < 0 for v in _ntuple(padding, nd)):
        raise RuntimeError("negative padding is not supported")
    if _builtin_any(v <= 0 for v in _ntuple(stride, nd)):
        raise RuntimeError("non-positive stride is not supported")
    if input.dtype is not weight.dtype:
        raise RuntimeError(f"expected scalar type {input.dtype.scalar_type} but found {weight.dtype.scalar_type}")
    o, cg = weight.shape[0], weight.shape[1]
    if o < groups:
        raise RuntimeError(f"Given groups={groups}, expected weight to be at least {groups} at dimension 0, but got "
                           f"weight of size {list(weight.shape)} instead")
    if o % groups:
        raise RuntimeError(f"Given groups={groups}, expected weight to be divisible by {groups} at dimension 0, but "
                           f"got weight of size [{list(weight.shape)}] instead")
    if input.shape[1] != cg * groups:
        raise RuntimeError(f"Given groups={groups}, weight of size {list(weight.shape)}, expected input"
                           f"{list(input.shape)} to have {cg * groups} channels, but got {input.shape[1]} channels "
                           "instead")
    if bias is not None and (bias.ndim != 1 or bias.shape[0] != o):
        raise RuntimeError(f"Given weight of size {list(weight.shape)}, expected bias to be 1-dimensional with {o} "
                           f"elements, but got bias of size {list(bias.shape)} instead")
    if bias is not None and bias.dtype is not input.dtype:
        raise RuntimeError(f"Input type ({input.dtype.c_type}) and bias type ({bias.dtype.c_type}) should be the same")


def _conv_edges(input, weight, bias=None, *args, **kwargs):
    return (input, weight, bias)


def _conv_node(nd):
    """ConvolutionBackward0 for a batched input; PyTorch squeezes an unbatched one's batch dim off last."""
    return lambda input, *args, **kwargs: "ConvolutionBackward0" if input.ndim == nd + 2 else None


@lower_precision
@grad_fn_named(_conv_node(2), edges=_conv_edges)
def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """``nn.functional.conv2d`` as im2col (PyTorch records one ConvolutionBackward0)."""
    return _conv(input, weight, bias, stride, padding, dilation, groups, 2, "conv2d")


@lower_precision
@grad_fn_named(_conv_node(3), edges=_conv_edges)
def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """``nn.functional.conv3d``: input (N, C, D, H, W) or unbatched (C, D, H, W), weight
    (O, C / groups, kD, kH, kW)."""
    return _conv(input, weight, bias, stride, padding, dilation, groups, 3, "conv3d")


def _single(v):
    return tuple(v) if isinstance(v, (tuple, list)) else (v,)


@lower_precision
@grad_fn_named(_conv_node(1), edges=_conv_edges)
def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """``nn.functional.conv1d``: conv2d on a height-1 image (input (N, C, L) or unbatched (C, L),
    weight (O, C / groups, K))."""
    if input.ndim not in (2, 3):
        raise RuntimeError(f"Expected 2D (unbatched) or 3D (batched) input to conv1d, but got input of size: "
                           f"{list(input.shape)}")
    batched = input if input.ndim == 3 else input.unsqueeze(0)
    c, k = batched.shape[1], weight.shape[-1]
    if weight.ndim == 3 and c != weight.shape[1] * groups:
        raise RuntimeError(f"Given groups={groups}, weight of size {list(weight.shape)}, expected input"
                           f"{list(batched.shape)} to have {weight.shape[1] * groups} channels, but got {c} channels "
                           "instead")
    (s,), (d,) = _single(stride), _single(dilation)
    if not isinstance(padding, str):
        (p,) = _single(padding)
        if batched.shape[2] + 2 * p < d * (k - 1) + 1:
            raise RuntimeError(f"Calculated padded input size per channel: ({batched.shape[2] + 2 * p}). Kernel size: "
                               f"({d * (k - 1) + 1}). Kernel size can't be greater than actual input size")
        padding = (0, p)
    out = conv2d(batched.unsqueeze(2), weight.unsqueeze(2), bias, (1, s), padding, (1, d), groups).squeeze(2)
    return out if input.ndim == 3 else out.squeeze(0)


_AXES = {1: ("width",), 2: ("height", "width"), 3: ("depth", "height", "width")}


def _conv_transpose(input, weight, bias, stride, padding, output_padding, groups, dilation, nd):
    """conv_transpose{nd}d, the adjoint of the convolution: the input spread out by the stride
    (zeros between its elements), padded by ``dilation * (k - 1) - padding`` (plus
    ``output_padding`` at the end), then a stride-1 convolution with the weight flipped and its
    in/out channels swapped per group (weight (C_in, C_out / groups, *kernel))."""
    if input.ndim == nd + 1:
        return _BATCHED[f"conv_transpose{nd}d"](input.unsqueeze(0), weight, bias, stride, padding, output_padding,
                                                groups, dilation).squeeze(0)
    n, c, sizes = input.shape[0], input.shape[1], tuple(input.shape[2:])
    cin, cog, ks = weight.shape[0], weight.shape[1], tuple(weight.shape[2:])
    if c != cin:
        raise RuntimeError(f"Given transposed=1, weight of size {list(weight.shape)}, expected input{list(input.shape)} "
                           f"to have {cin} channels, but got {c} channels instead")
    s, p, op, d = (_ntuple(v, nd) for v in (stride, padding, output_padding, dilation))
    if _builtin_any(op[i] >= max(s[i], d[i]) for i in range(nd)):
        axes = _AXES[nd]
        raise RuntimeError("output padding must be smaller than either stride or dilation, but got " + " ".join(
            [f"output_padding_{a}: {v}" for a, v in zip(axes, op)] + [f"stride_{a}: {v}" for a, v in zip(axes, s)]
            + [f"dilation_{a}: {v}" for a, v in zip(axes, d)]))
    x = input
    if _builtin_any(v > 1 for v in s):     # spread: (.., L, 1, ..) padded to (.., L, s, ..), cut to (L - 1) * s + 1
        x = x.reshape(n, c, *[v for sz in sizes for v in (sz, 1)])
        x = pad(x, _pad_list([pr for si in s for pr in ((0, 0), (0, si - 1))]))
        x = x.reshape(n, c, *[sz * si for sz, si in zip(sizes, s)])
        x = x[(slice(None), slice(None)) + tuple(slice(0, (sz - 1) * si + 1) for sz, si in zip(sizes, s))]
    edge = [d[i] * (ks[i] - 1) - p[i] for i in range(nd)]
    x = pad(x, _pad_list([(edge[i], edge[i] + op[i]) for i in range(nd)]))
    flipped = weight.reshape(groups, cin // groups, cog, *ks).transpose(1, 2).reshape(
        groups * cog, cin // groups, *ks).flip(tuple(range(2, 2 + nd)))
    return _conv(x, flipped, bias, 1, 0, d, groups, nd, f"conv{nd}d")


@lower_precision
@grad_fn_named(_conv_node(2), edges=_conv_edges)
def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """``nn.functional.conv_transpose2d`` (weight (C_in, C_out / groups, kH, kW))."""
    return _conv_transpose(input, weight, bias, stride, padding, output_padding, groups, dilation, 2)


@lower_precision
@grad_fn_named(_conv_node(3), edges=_conv_edges)
def conv_transpose3d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """``nn.functional.conv_transpose3d`` (weight (C_in, C_out / groups, kD, kH, kW))."""
    return _conv_transpose(input, weight, bias, stride, padding, output_padding, groups, dilation, 3)


# the batched convolutions, recorded as PyTorch's ConvolutionBackward0 (whose backward takes the
# input), that an unbatched call runs between an unsqueeze and a squeeze
_BATCHED = {"conv2d": conv2d, "conv3d": conv3d, "conv_transpose2d": conv_transpose2d,
            "conv_transpose3d": conv_transpose3d}


@lower_precision
@grad_fn_named(_conv_node(1), edges=_conv_edges)
def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    batched = input if input.ndim == 3 else input.unsqueeze(0)
    out = conv_transpose2d(batched.unsqueeze(2), weight.unsqueeze(2), bias, (1, _single(stride)[0]),
                           (0, _single(padding)[0]), (0, _single(output_padding)[0]), groups,
                           (1, _single(dilation)[0])).squeeze(2)
    return out if input.ndim == 3 else out.squeeze(0)


def unfold(input, kernel_size, dilation=1, padding=0, stride=1):
    """im2col: (N, C, H, W) -> (N, C * kh * kw, L), each column one window (channel-major, then
    the kernel's offsets in row-major order), as PyTorch's."""
    if input.ndim < 3:
        norm_dim(input.ndim, input.ndim)          # PyTorch's IndexError (it reads a dim past the last)
    unbatched = input.ndim == 3
    if unbatched:
        input = input.unsqueeze(0)
    (kh, kw), (dh, dw), (ph, pw), (sh, sw) = _pair(kernel_size), _pair(dilation), _pair(padding), _pair(stride)
    if ph or pw:
        input = pad(input, (pw, pw, ph, ph))
    n, c = input.shape[0], input.shape[1]
    ho, wo = _out_size(input.shape[2], 0, dh, kh, sh), _out_size(input.shape[3], 0, dw, kw, sw)
    out = _patches(input, (kh, kw), (sh, sw), (dh, dw), (ho, wo)).reshape(n, c * kh * kw, ho * wo)
    return out.squeeze(0) if unbatched else out


@grad_fn_named("Col2ImBackward0", edges=lambda input, *a, **k: (input,))
def fold(input, output_size, kernel_size, dilation=1, padding=0, stride=1):
    """col2im, unfold's adjoint: the columns summed back into (N, C, H, W), overlapping windows
    adding up.  A grouped transposed convolution whose kernels are one-hot at each column's
    offset (PyTorch records one Col2ImBackward0, whose backward, unlike a convolution's, does
    not take the input)."""
    unbatched = input.ndim == 2
    if unbatched:
        input = input.unsqueeze(0)
    (kh, kw), (dh, dw), (ph, pw), (sh, sw) = _pair(kernel_size), _pair(dilation), _pair(padding), _pair(stride)
    (h, w) = _pair(output_size)
    n, ck, length = input.shape
    if ck % (kh * kw):
        raise RuntimeError(f"Expected size of input's dimension 1 to be divisible by the product of kernel_size, but "
                           f"got input.size(1)={ck} and kernel_size=({kh}, {kw}).")
    ho, wo = _out_size(h, ph, dh, kh, sh), _out_size(w, pw, dw, kw, sw)
    if ho * wo != length:
        raise RuntimeError(f"Given output_size=({h}, {w}), kernel_size=({kh}, {kw}), dilation=({dh}, {dw}), "
                           f"padding=({ph}, {pw}), stride=({sh}, {sw}), expected size of input's dimension 2 to match "
                           f"the calculated number of sliding blocks {ho} * {wo} = {ho * wo}, but got "
                           f"input.size(2)={length}.")
    c = ck // (kh * kw)
    onehot = np.zeros((ck, 1, kh, kw))
    for k in range(ck):
        onehot[k, 0, (k % (kh * kw)) // kw, k % kw] = 1.0
    weight = factories.tensor(onehot, dtype=input.dtype, device=input.device)
    out = _conv_transpose(input.reshape(n, ck, ho, wo), weight, None, (sh, sw), (ph, pw), 0, c, (dh, dw), 2)
    covered = (out.shape[2], out.shape[3])
    if covered != (h, w):            # windows that do not reach the bottom/right edge: zeros there
        out = pad(out, (0, w - covered[1], 0, h - covered[0]))
    return out.squeeze(0) if unbatched else out


def _pool_out_size(n, k, s, p, d, ceil_mode):
    """PyTorch's pooling output size; with ``ceil_mode`` a last partial window counts if it
    starts inside the input or its left padding."""
    span = n + 2 * p - d * (k - 1) - 1
    out = (-(-span // s) if ceil_mode else span // s) + 1
    if ceil_mode and (out - 1) * s >= n + p:
        out -= 1
    return out


def _pool(input, kernel_size, stride, padding, dilation, fill, reduce, ceil_mode=False, nd=2, check=None):
    """``reduce(patches, geometry)`` of the windows of ``input`` ((N,) C, *spatial with ``nd``
    spatial dims), where patches are (N, C, prod(kernel), *out) and geometry is (kernel, stride,
    padding, dilation, input sizes); the result's tensors get the batch dim back off for an
    unbatched input.  ``ceil_mode``'s last windows read ``fill`` past the padded input."""
    unbatched = input.ndim == nd + 1
    if unbatched:
        input = input.unsqueeze(0)
    k = _ntuple(kernel_size, nd)
    s = _ntuple(stride if stride is not None and stride != () else kernel_size, nd)
    p, d = _ntuple(padding, nd), _ntuple(dilation, nd)
    if 0 in s:
        raise RuntimeError("stride should not be zero")
    for i in range(nd):
        if p[i] > k[i] // 2:
            raise RuntimeError(f"pad should be at most half of effective kernel size, but got pad={p[i]}, "
                               f"kernel_size={k[i]} and dilation={d[i]}")
    sizes = tuple(input.shape[2:])
    if check is not None:
        check(sizes, k, p)
    outs = tuple(_pool_out_size(n, k[i], s[i], p[i], d[i], ceil_mode) for i, n in enumerate(sizes))
    if _builtin_any(o <= 0 for o in outs):
        raise RuntimeError(f"Given input size: ({'x'.join(map(str, (input.shape[1],) + sizes))}). Calculated output "
                           f"size: ({'x'.join(map(str, (input.shape[1],) + outs))}). Output size is too small")
    extra = [max(0, (o - 1) * s[i] + d[i] * (k[i] - 1) + 1 - (n + 2 * p[i])) for i, (o, n) in
             enumerate(zip(outs, sizes))]
    if _builtin_any(p) or _builtin_any(extra):
        input = pad(input, _pad_list([(p[i], p[i] + extra[i]) for i in range(nd)]), value=fill)
    out = reduce(_patches(input, k, s, d, outs), (k, s, p, d) + sizes)
    if unbatched:
        return tuple(t.squeeze(0) for t in out) if isinstance(out, tuple) else out.squeeze(0)
    return out


def _avg_pool_divisor(geometry, outs, count_include_pad, divisor_override):
    """The divisors (shape ``outs``) of PyTorch's avg_pool: the window clipped to the padded input
    (padding counted), or to the input itself (``count_include_pad=False``), or the override."""
    if divisor_override is not None:
        return np.full(tuple(outs), float(divisor_override))
    nd = len(outs)
    k, s, p, sizes = geometry[0], geometry[1], geometry[2], geometry[4:]

    def counts(n_out, k, s, p, n):
        start = np.arange(n_out) * s - p
        end = np.minimum(start + k, n + p)
        if count_include_pad:
            return end - start
        return np.minimum(end, n) - np.maximum(start, 0)
    out = np.ones(())
    for i in range(nd):
        out = np.multiply.outer(out, counts(outs[i], k[i], s[i], p[i], sizes[i]))
    return out.astype(float)


def _window_argmax_to_flat(arg, geometry):
    """PyTorch's max_pool indices (flat, into each unpadded spatial plane/volume) from the index of
    the maximum within each window (row-major over the kernel's offsets)."""
    from .factories import arange
    k, s, p, d, sizes = geometry[0], geometry[1], geometry[2], geometry[3], geometry[4:]
    nd = len(k)
    outs = tuple(arg.shape[-nd:])
    flat = None
    for i in range(nd):
        inner = math.prod(k[i + 1:])
        offset = (arg // inner) % k[i] if i else arg // inner
        start = (arange(outs[i]) * s[i] - p[i]).reshape(outs[i], *(1,) * (nd - 1 - i))
        pos = offset * d[i] + start
        flat = pos if flat is None else flat * sizes[i] + pos
    return flat


_COUNT = {2: "two", 3: "three"}
_DIM_LETTERS = {2: "HW", 3: "THW"}


def _check_pool(name, input, kernel_size, stride, padding, dilation, nd):
    """PyTorch's checks of a 2-D/3-D max or average pool's arguments, with its messages (which
    differ between the four)."""
    is_max, count = name.startswith("max"), _COUNT[nd]
    for arg, value in (("kernel_size", kernel_size), ("stride", stride)):
        n = len(value) if isinstance(value, (tuple, list)) else 1
        if n not in (1, nd) and not (arg == "stride" and n == 0):
            if arg == "stride":
                raise RuntimeError(f"{name}: stride must either be omitted, a single int, or a tuple of {count} ints")
            either = "either " if (is_max or nd == 2) else ""
            raise RuntimeError(f"{name}: kernel_size must {either}be a single int, or a tuple of {count} ints")
    if _builtin_any(v < 0 for v in _ntuple(padding, nd)):
        raise RuntimeError(f"pad must be non-negative, but got pad: {min(_ntuple(padding, nd))}")
    if is_max and _builtin_any(v <= 0 for v in _ntuple(dilation, nd)):
        raise RuntimeError("dilation should be greater than zero, but got " + " ".join(
            f"dilation{a}: {v}" for a, v in zip(_DIM_LETTERS[nd], _ntuple(dilation, nd))))
    if input.ndim < nd + 1 and name == "avg_pool2d":
        norm_dim(-3, input.ndim)                # (PyTorch reads input.size(-3) first)
    if input.ndim not in (nd + 1, nd + 2):
        if nd == 2 and not is_max:
            raise RuntimeError("Expected 3D or 4D (batch mode) tensor with optional 0 dim batch size for input, but "
                               f"got:{list(input.shape)}")
        raise RuntimeError(f"non-empty {nd + 1}D or {nd + 2}D (batch mode) tensor expected for input")
    spatial = list(input.shape[input.ndim - nd - 1:])
    if 0 in spatial:
        if nd == 2:
            raise RuntimeError("Expected 3D or 4D (batch mode) tensor with optional 0 dim batch size for input, but "
                               f"got:{list(input.shape)}")
        where = "max_pool3d_with_indices_out_cpu_template()" if is_max else "avg_pool3d()"
        raise RuntimeError(f"{where}: Expected input's non-batch dimensions to have positive length, but input has a "
                           f"shape of {list(input.shape)} and non-batch dimension {spatial.index(0)} has length zero!")


def _max_pool(input, kernel_size, stride, padding, dilation, ceil_mode, return_indices, nd):
    _check_pool(f"max_pool{nd}d", input, kernel_size, stride, padding, dilation, nd)

    def reduce(patches, geometry):
        values, arg = patches.max(2)
        return (values, _window_argmax_to_flat(arg, geometry)) if return_indices else values
    return _pool(input, kernel_size, stride, padding, dilation, -math.inf, reduce, ceil_mode, nd)


@grad_fn_named("MaxPool2DWithIndicesBackward0", edges=lambda input, *a, **k: (input,))
def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """The maximum of each window; its gradient goes to one element of the window, the first
    maximum in row-major order, as PyTorch's does.  ``return_indices``: also the flat index
    of that element in its (unpadded) H*W plane."""
    return _max_pool(input, kernel_size, stride, padding, dilation, ceil_mode, return_indices, 2)


@float32_precision
@grad_fn_named("MaxPool3DWithIndicesBackward0")
def max_pool3d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """max_pool2d over (D, H, W); indices flat into each D*H*W volume."""
    return _max_pool(input, kernel_size, stride, padding, dilation, ceil_mode, return_indices, 3)


def _avg_pool(input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override, nd, check=None):
    _check_pool(f"avg_pool{nd}d", input, kernel_size, stride, padding, 1, nd)
    if divisor_override is not None and divisor_override == 0:
        raise RuntimeError("divisor must be not zero")
    if ceil_mode or not count_include_pad or divisor_override is not None:
        def reduce(patches, geometry):
            divisor = _avg_pool_divisor(geometry, tuple(patches.shape[3:]), count_include_pad, divisor_override)
            return patches.sum(2) / factories.tensor(divisor, dtype=patches.dtype, device=patches.device)
    else:
        def reduce(patches, geometry):
            return patches.mean(2)
    return _pool(input, kernel_size, stride, padding, 1, 0.0, reduce, ceil_mode, nd, check)


@grad_fn_named("AvgPool2DBackward0", edges=lambda input, *a, **k: (input,))
def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    """The mean of each window, zero padding counted (PyTorch's default) or not
    (``count_include_pad=False``), or the sum over ``divisor_override``."""
    return _avg_pool(input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override, 2)


def _check_avg_pool3d(sizes, k, p):
    if _builtin_any(n + 2 * q < kk for n, kk, q in zip(sizes, k, p)):
        raise RuntimeError(f"input image (T: {sizes[0]} H: {sizes[1]} W: {sizes[2]}) smaller than kernel size "
                           f"(kT: {k[0]} kH: {k[1]} kW: {k[2]})")


@float32_precision
@grad_fn_named("AvgPool3DBackward0")
def avg_pool3d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    """avg_pool2d over (D, H, W)."""
    return _avg_pool(input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override, 3,
                     _check_avg_pool3d)
