"""PyTorch's arithmetic helpers spelled with table ops: fused forms (addcmul, addcdiv, mv, addmv,
baddbmm, addbmm, inner, cross), one-sided clamps, logit, angle conversions, sgn/signbit,
NaN-skipping sums and means, median, running extrema (cummax/cummin) and logspace."""
from __future__ import annotations

import math

from ._warnings import warn_at_user_code
from .autograd.node import grad_fn_named
from . import dtypes, factories
from .ops import selection
from .compositions import beta_scaled, bind_methods, check_broadcast, rounded_once
from .arg_parser import ArgumentError, bool_arg, int_arg, number_arg, parses
from .ops.registry import EmptyReductionError
from .ops.rules import not_implemented_for
from .tensor_api import _named_return, _tensor_argument, cat, is_tensor_like, norm_dim, promote_operands, where
from .autocast_state import autocast_excluded, lower_precision


def _pointwise_operands(name, input, tensor1, tensor2, value):
    """addcmul's and addcdiv's operands promoted to their common dtype (PyTorch computes
    ``tensor1 * tensor2`` in it, not in the factors' own), and that dtype."""
    if not (is_tensor_like(tensor1) and is_tensor_like(tensor2)):
        raise ArgumentError(f"{name}(): tensor1 or tensor2")
    number_arg(value)
    check_broadcast(name, input, tensor1, tensor2)
    return promote_operands([input, tensor1, tensor2])


@parses("addcmul", "(Tensor tensor1, Tensor tensor2, *, Number value = 1)")
@grad_fn_named("AddcmulBackward0")
def addcmul(input, tensor1, tensor2, *, value=1):
    (x, t1, t2), dt = _pointwise_operands("addcmul", input, tensor1, tensor2, value)
    if dt is dtypes.bool_:
        raise not_implemented_for("addcmul_cpu_out", dt)
    if not dt.is_floating_point:
        value = int(value)                  # integer tensors take the value as an integer, as PyTorch's
    return rounded_once(lambda x, t1, t2: x + value * (t1 * t2), (x, t1, t2), dt)


_ADDCDIV_INTEGERS = (
    "Integer division with addcdiv is no longer supported, and in a future  release addcdiv will perform a true "
    "division of tensor1 and tensor2. The historic addcdiv behavior can be implemented as (input + value * "
    "torch.trunc(tensor1 / tensor2)).to(input.dtype) for integer inputs and as (input + value * tensor1 / tensor2) "
    "for float inputs. The future addcdiv behavior is just the latter implementation: (input + value * tensor1 / "
    "tensor2), for all dtypes.")


@parses("addcdiv", "(Tensor tensor1, Tensor tensor2, *, Number value = 1)")
@grad_fn_named("AddcdivBackward0")
def addcdiv(input, tensor1, tensor2, *, value=1):
    (x, t1, t2), dt = _pointwise_operands("addcdiv", input, tensor1, tensor2, value)
    if not (tensor1.dtype.is_floating_point or tensor2.dtype.is_floating_point):
        raise RuntimeError(_ADDCDIV_INTEGERS)
    return rounded_once(lambda x, t1, t2: x + value * (t1 / t2), (x, t1, t2), dt)


def clamp_min(x, min):
    return x.clamp_min(min)


def clamp_max(x, max):
    return x.clamp_max(max)


def logit(x, eps=None):
    """log(x / (1 - x)), x clamped to [eps, 1 - eps] first when ``eps`` is given (a table op with
    PyTorch's gradient; integer and bool inputs as the default float dtype)."""
    from .ops.dispatch import apply
    from . import dtypes
    if not x.dtype.is_floating_point:
        x = x.to(dtypes.default_float)
    return apply("logit", x, eps=None if eps is None else float(eps))


@grad_fn_named("Deg2RadBackward0")
def deg2rad(x):
    return x * (math.pi / 180.0)


@grad_fn_named("Rad2DegBackward0")
def rad2deg(x):
    return x * (180.0 / math.pi)


def sgn(x):
    """sign for real tensors, with PyTorch's node for sgn (SgnBackward0)."""
    from .ops.dispatch import apply
    return apply("sign", x, _name="SgnBackward0")


@grad_fn_named("AngleBackward0")
def angle(x):
    """The argument of a real number: pi below zero, else 0 (-0.0 too), NaN for NaN, in a floating
    dtype (integers and bools in the default one); its gradient is zero, as PyTorch's."""
    if not x.dtype.is_floating_point:
        x = x.to(dtypes.default_float)
    argument = where(x < 0, x._scalar(math.pi, x.dtype), x._scalar(0.0, x.dtype))
    return where(x != x, x * 0, argument)      # (NaN stays NaN; x * 0 carries x's zero gradient)


def signbit(x):
    """True where the sign bit is set (-0.0 and NaNs with it included), as PyTorch's."""
    if not x.dtype.is_floating_point:
        return x < 0
    return (x < 0) | ((x == 0) & ((1.0 / x) < 0))


@parses("nansum", "(tuple of ints[1]? dim = None, bool keepdim = False, *, torch.dtype dtype = None)")
@grad_fn_named("NansumBackward0")
def nansum(x, dim=None, keepdim=False, *, dtype=None):
    kept = where(x.isnan(), 0.0, x) if x.dtype.is_floating_point else x
    return kept.sum(dim, keepdim=keepdim, dtype=dtype)


def nanmean(x, dim=None, keepdim=False, *, dtype=None):
    if not x.dtype.is_floating_point:
        raise RuntimeError(f"nanmean(): expected input to have floating point or complex dtype but got "
                           f"{x.dtype.tensor_type[:-6]}")
    x = x._float_reduction_input("nanmean", dtype)
    counted = (~x.isnan()).sum(dim, keepdim=keepdim)
    return nansum(x, dim, keepdim) / counted


def _median_node_name(prefix):
    return lambda x, dim=None, keepdim=False: f"{prefix}Backward{0 if dim is None else 1}"


@parses("median", "()", "(int dim, bool keepdim = False)")
@grad_fn_named(_median_node_name("Median"))
def median(x, dim=None, keepdim=False):
    """The lower median ((n - 1) // 2-th smallest), with its index when ``dim`` is given
    (``torch.return_types.median``); a slice with a NaN gives NaN and the index of its first NaN,
    as PyTorch's. The gradient goes to the element picked."""
    return _median(x, dim, keepdim, skip_nan=False)


@parses("nanmedian", "()", "(int dim, bool keepdim = False)")
@grad_fn_named(_median_node_name("Nanmedian"))
def nanmedian(x, dim=None, keepdim=False):
    """The lower median of each slice's non-NaN values; a slice of NaNs only gives NaN and the
    index of its first element (PyTorch's selection leaves that index unspecified: 0 or 2 seen)."""
    return _median(x, dim, keepdim, skip_nan=True)


def _median(x, dim, keepdim, skip_nan):
    from .tensor_api import return_types_median, return_types_nanmedian
    named = return_types_nanmedian if skip_nan else return_types_median
    keepdim = bool_arg(keepdim)
    if dim is None:
        if x.numel() == 0:         # PyTorch's median of nothing: NaN in the input's dtype
            return _empty_median(x)
        if x.dtype is dtypes.bool_:
            raise not_implemented_for("median_cpu", x.dtype)
        return _shared_by_equals(x, _lower_median(x.reshape(-1), 0, skip_nan)[0].reshape(()).detach())
    dim = norm_dim(dim, max(x.ndim, 1))
    if x.ndim and x.shape[dim] == 0:     # (nanmedian's message names median too, as PyTorch's)
        raise EmptyReductionError(f"median(): Expected reduction dim {dim} to have non-zero size.")
    if x.dtype is dtypes.bool_:
        raise not_implemented_for("median_out", x.dtype)
    if x.ndim == 0:
        return named(x * 1, factories.zeros((), dtype=dtypes.int64))
    values, indices = _lower_median(x, dim, skip_nan)
    if not keepdim:
        values, indices = values.squeeze(dim), indices.squeeze(dim)
    return named(values, indices)


def _shared_by_equals(x, value):
    """``value`` (x's median) with PyTorch's gradient for median()/nanmedian() of all elements:
    shared evenly by the elements equal to it (the NaNs when it is NaN). An amax over x where it
    equals value (-inf elsewhere) is value, and its VJP shares the gradient so."""
    from .ops.dispatch import apply
    from .tensor_api import where
    if not x.dtype.is_floating_point:       # (no gradient)
        return value
    equal = (x == value) | (x.isnan() & value.isnan())
    return apply("amax", where(equal, x, -math.inf), dims=list(range(x.ndim)), keepdim=False, nan_shares=True)


def _empty_median(x):
    """PyTorch's median of no elements: NaN converted to the input's dtype as its CPU converts it
    (True; int32's and int64's lowest value; 0, its low bits, in the narrower integer types)."""
    import numpy as np
    if x.dtype.is_floating_point or x.dtype is dtypes.bool_:
        fill = np.nan if x.dtype.is_floating_point else True
    else:
        fill = np.iinfo(x.dtype.np).min if x.dtype.itemsize >= 4 else 0
    return cat([x.reshape(-1), factories.full((1,), fill, dtype=x.dtype)])[0]


def _lower_median(x, dim, skip_nan=False):
    """(values, indices) of the lower median along ``dim``, kept as a size-1 dim. The sort puts
    NaNs last and keeps their order, so a slice's first NaN sits just after its other values;
    ``skip_nan`` takes the lower median of the values before it."""
    s = x.sort(dim=dim, stable=True)       # (PyTorch's nth_element breaks ties by index)
    n = x.shape[dim]
    k = (n - 1) // 2
    if not x.dtype.is_floating_point:
        return s.values.narrow(dim, k, 1), s.indices.narrow(dim, k, 1)
    valid = (x == x).sum(dim, keepdim=True)
    if skip_nan:       # (a slice of NaNs only: the one PyTorch's nth_element leaves first, by n alone)
        pos = where(valid > 0, (valid - 1) // 2, selection.nanmedian_of_nans(n))
    else:
        pos = where(valid < n, valid, k)
    return s.values.gather(dim, pos), s.indices.gather(dim, pos)


@autocast_excluded
def mv(mat, vec):
    _tensor_argument("mv", mat, 1, "input")
    _tensor_argument("mv", vec, 2, "vec")
    if mat.ndim != 2 or vec.ndim != 1:
        raise RuntimeError(f"vector + matrix @ vector expected, got {mat.ndim}, {mat.ndim}, {vec.ndim}")
    return mat @ vec


@autocast_excluded
@grad_fn_named("AddmvBackward0")
def addmv(input, mat, vec, *, beta=1, alpha=1):
    return beta_scaled(input, beta) + alpha * mv(mat, vec)


@lower_precision
@grad_fn_named("BaddbmmBackward0", edges=lambda input, batch1, batch2, **k: (input, batch1, batch2))
def baddbmm(input, batch1, batch2, *, beta=1, alpha=1):
    return beta_scaled(input, beta) + alpha * (batch1 @ batch2)


@lower_precision
@grad_fn_named("AddbmmBackward0")
def addbmm(input, batch1, batch2, *, beta=1, alpha=1):
    return beta_scaled(input, beta) + alpha * (batch1 @ batch2).sum(0)


def inner(a, b):
    """The sum over the last dims of ``a`` and ``b`` of their products (scalars: a * b)."""
    if a.ndim == 0 or b.ndim == 0:
        return a * b
    from .compositions import tensordot
    return tensordot(a, b, dims=([a.ndim - 1], [b.ndim - 1]))


@grad_fn_named("LinalgCrossBackward0")
def cross(a, b, dim=None):
    """The cross product along ``dim`` (by default, and with PyTorch's deprecation warning, the
    first dim of size 3)."""
    if dim is None:
        warn_at_user_code("Using torch.cross without specifying the dim arg is deprecated.\nPlease either pass the dim "
                          "explicitly or simply use torch.linalg.cross.\nThe default value of dim will change to agree "
                          "with that of linalg.cross in a future release.", UserWarning)
        sizes = [d for d in range(a.ndim) if a.shape[d] == 3]
        if not sizes:
            raise RuntimeError("no dimension of size 3 in input")
        dim = sizes[0]
    dim = norm_dim(dim, a.ndim)
    if a.shape[dim] != 3 or b.shape[dim] != 3:
        raise RuntimeError(f"linalg.cross: inputs dimension {dim} must have length 3. Got {a.shape[dim]} and "
                           f"{b.shape[dim]}")
    a0, a1, a2 = a.unbind(dim)
    b0, b1, b2 = b.unbind(dim)
    from .tensor_api import stack
    return stack([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0], dim)


def logspace(start, end, steps, base=10.0, dtype=None, device=None, requires_grad=False):
    """base ** linspace(start, end, steps), computed in float64 and rounded to the dtype."""
    from . import dtypes
    dt = dtypes.as_dtype(dtype) if dtype is not None else dtypes.default_float
    exps = factories.linspace(start, end, steps, dtype=dtypes.float64)._data
    return factories.tensor(float(base) ** exps, dtype=dt, device=device, requires_grad=requires_grad)


def _running_extremum(x, dim, kind):
    """cummax/cummin: the running extremum along ``dim`` and where it was (PyTorch's rule: a value
    equal to the extremum so far, or a NaN, takes over). The indices come from a log-depth scan
    over (value, index) pairs in table ops; the values are ``x`` gathered at them, so the gradient
    goes to the index each output came from, as PyTorch's does."""
    from . import dtypes
    from .tensor_api import is_tensor_like
    if not is_tensor_like(x):
        raise TypeError(f"{kind}(): argument 'input' must be Tensor, not {type(x).__name__}")
    if x.numel() == 0:         # (PyTorch checks no dim then)
        return x.clone(), factories.zeros(x.shape, dtype=dtypes.int64, device=x.device)
    if x.ndim == 0:
        if int_arg(dim) not in (-1, 0):
            raise IndexError(f"{kind}(): Expected reduction dim -1 or 0 for scalar but got {dim}")
        return x.clone(), factories.zeros((), dtype=dtypes.int64, device=x.device)
    d = norm_dim(dim, x.ndim)
    n = x.shape[d]
    shape = [1] * x.ndim
    shape[d] = n
    index = factories.arange(n, device=x.device).reshape(*shape).expand(*x.shape)
    value = x.detach()
    shift = 1
    while shift < n:
        earlier_v, later_v = value.narrow(d, 0, n - shift), value.narrow(d, shift, n - shift)
        earlier_i, later_i = index.narrow(d, 0, n - shift), index.narrow(d, shift, n - shift)
        beats = earlier_v > later_v if kind == "cummax" else earlier_v < later_v
        if x.dtype.is_floating_point:
            beats = (beats | earlier_v.isnan()) & ~later_v.isnan()
        value = cat([value.narrow(d, 0, shift), where(beats, earlier_v, later_v)], d)
        index = cat([index.narrow(d, 0, shift), where(beats, earlier_i, later_i)], d)
        shift *= 2
    return x.gather(d, index), index


_CUMMAX, _CUMMIN = _named_return("cummax"), _named_return("cummin")


@parses("cummax", "(int dim)")
@grad_fn_named("CummaxBackward0")
def cummax(input, dim):
    return _CUMMAX(*_running_extremum(input, dim, "cummax"))


@parses("cummin", "(int dim)")
@grad_fn_named("CumminBackward0")
def cummin(input, dim):
    return _CUMMIN(*_running_extremum(input, dim, "cummin"))


METHODS = ("addcmul", "addcdiv", "clamp_min", "clamp_max", "logit", "deg2rad", "rad2deg", "sgn", "angle", "signbit",
           "nansum", "nanmean", "median", "nanmedian", "mv", "addmv", "baddbmm", "addbmm", "inner", "cross", "cummax",
           "cummin")
FUNCTIONS = METHODS + ("logspace",)
bind_methods(globals(), METHODS)
