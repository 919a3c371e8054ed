"""PyTorch's statistics and scans spelled with table ops (eager and under @gradc.compile, with
gradients from the ops they use): quantile/nanquantile (all five interpolations), kthvalue,
aminmax, cov/corrcoef, pairwise distances (cdist, dist), trapezoid integration, a stable
logcumsumexp (a log-depth scan of logaddexp) and searchsorted/bucketize (counts of
comparisons, so they trace too)."""
from __future__ import annotations

import math

from . import dtypes, factories
from .autograd.node import grad_fn_named
from .autocast_state import float32_precision
from .compositions import bind_methods, logaddexp
from .arg_parser import ArgumentError, bool_arg, int_arg, parses
from .ops.registry import EmptyReductionError
from .return_types import return_type
from .tensor_api import _named_return, cat, is_tensor_like, norm_dim, stack, where

_KTHVALUE = _named_return("kthvalue")


_MinMax = return_type("aminmax", ("min", "max"))


@grad_fn_named("AminmaxBackward0")
def aminmax(input, *, dim=None, keepdim=False):
    if dim is None and input.numel() == 0:
        raise RuntimeError("aminmax(): cannot compute aminmax over an empty dimension as the operation has no "
                           "identity.")
    if dim is not None and input.ndim and input.shape[norm_dim(dim, input.ndim)] == 0:
        raise EmptyReductionError(f"aminmax: Expected reduction dim {norm_dim(dim, input.ndim)} to have non-zero "
                                  "size.")
    return _MinMax(input.amin(() if dim is None else dim, keepdim), input.amax(() if dim is None else dim, keepdim))


@parses("kthvalue", "(int k, int dim = -1, bool keepdim = False)")
@grad_fn_named("KthvalueBackward0")
def kthvalue(input, k, dim=-1, keepdim=False):
    """The k-th smallest value along ``dim`` and its index (PyTorch's among equal values)."""
    from .ops.dispatch import apply
    k, keepdim = int_arg(k), bool_arg(keepdim)
    d = norm_dim(dim, max(input.ndim, 1))
    values, indices = apply("kthvalue", input, k=k, dim=d)
    if not keepdim and input.ndim:
        values, indices = values.squeeze(d), indices.squeeze(d)
    return _KTHVALUE(values, indices)


# ---- quantiles ------------------------------------------------------------------------------------
_INTERPOLATIONS = ("linear", "lower", "higher", "midpoint", "nearest")


def _quantile(name, input, q, dim, keepdim, interpolation, ignore_nan):
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"{name}() input tensor must be either float or double dtype")
    if interpolation not in _INTERPOLATIONS:
        raise RuntimeError(f"{name}() interpolation must be one of linear, lower, higher, midpoint or nearest. "
                           f"Got {interpolation}")
    scalar_q = not is_tensor_like(q)
    qs = [float(q)] if scalar_q else [float(v) for v in q.reshape(-1).tolist()]
    if not scalar_q and q.ndim > 1:
        raise RuntimeError(f"{name}() q must be a scalar or 1D tensor")
    for v in qs:
        if not 0 <= v <= 1:
            raise RuntimeError(f"{name}() q must be in the range [0, 1] but got {v}")
    x = input.reshape(-1) if dim is None else input
    d = 0 if dim is None else norm_dim(dim, max(input.ndim, 1))
    if x.ndim == 0:
        x = x.reshape(1)
    n = x.shape[d]
    if n == 0:
        raise RuntimeError(f"{name}() input tensor must be non-empty")
    s = x.sort(d).values                           # NaNs last
    valid = (x == x).sum(d, keepdim=True)          # per slice
    count = valid if ignore_nan else valid * 0 + n
    outs = []
    for v in qs:
        pos = (count - 1).clamp(min=0).to(x.dtype) * v
        lo, hi = pos.floor(), pos.ceil()
        if interpolation == "lower":
            picks = [(lo, None)]
        elif interpolation == "higher":
            picks = [(hi, None)]
        elif interpolation == "nearest":
            picks = [(pos.round(), None)]
        else:
            picks = [(lo, hi)]
        idx_lo = picks[0][0].long()
        value = s.gather(d, idx_lo)
        if picks[0][1] is not None:
            upper = s.gather(d, hi.long())
            weight = 0.5 if interpolation == "midpoint" else pos - lo
            value = value + (upper - value) * weight
        if ignore_nan:
            value = where(valid == 0, math.nan, value)
        else:
            value = where(valid < n, math.nan, value)
        outs.append(value if keepdim and dim is not None else value.squeeze(d) if x.ndim > 0 else value)
    if dim is None and keepdim:
        outs = [o.reshape(*([1] * input.ndim)) for o in outs]
    return outs[0] if scalar_q else stack(outs, 0)


@float32_precision
def quantile(input, q, dim=None, keepdim=False, *, interpolation="linear"):
    """The q-th quantiles along ``dim`` (of all elements when None); NaN if a slice has one."""
    return _quantile("quantile", input, q, dim, keepdim, interpolation, ignore_nan=False)


@float32_precision
def nanquantile(input, q, dim=None, keepdim=False, *, interpolation="linear"):
    """``quantile`` ignoring NaNs (NaN for a slice of NaNs only)."""
    return _quantile("nanquantile", input, q, dim, keepdim, interpolation, ignore_nan=True)


# ---- covariance -----------------------------------------------------------------------------------
def cov(input, *, correction=1, fweights=None, aweights=None):
    """Covariance of the rows (variables) over the columns (observations)."""
    if fweights is not None or aweights is not None:
        raise NotImplementedError("gradc.cov: fweights and aweights are not supported")
    if input.ndim > 2:
        raise RuntimeError(f"cov(): expected input to have two or fewer dimensions but got an input with "
                           f"{input.ndim} dimensions")
    x = input if input.dtype.is_floating_point else input.to(dtypes.default_float)
    x = x.reshape(1, -1) if x.ndim < 2 else x
    n = x.shape[1]
    centred = x - x.mean(1, keepdim=True)
    c = (centred @ centred.transpose(0, 1)) / max(n - correction, 0)
    return c.reshape(()) if x.shape[0] == 1 else c          # one variable: a 0-d variance, as PyTorch


def corrcoef(input):
    c = cov(input)
    if c.ndim == 0:
        return c / c
    d = c.diagonal()
    std = d.sqrt()
    r = c / std.unsqueeze(1) / std.unsqueeze(0)
    return r.clamp(-1, 1)


# ---- distances ------------------------------------------------------------------------------------
def _p_norm_last(diff, p):
    a = diff.abs()
    if p == 0:
        return (a != 0).sum(-1).to(diff.dtype)
    if p == math.inf:
        return a.amax(-1)
    if p == 2:                          # zero distances get gradient 0, as PyTorch's
        s = (diff * diff).sum(-1)       # not |d|^2: its second derivative at d = 0 would be 0
        zero = s == 0
        return where(zero, 0.0, where(zero, 1.0, s).sqrt())
    if p == 1:
        return a.sum(-1)
    nonzero = a != 0                    # |d|^p with no 0 * inf in its gradient at d = 0 (p < 1)
    s = where(nonzero, where(nonzero, a, 1.0) ** p, 0.0).sum(-1)
    zero = s == 0
    return where(zero, 0.0, where(zero, 1.0, s) ** (1.0 / p))


@float32_precision
@grad_fn_named("CdistBackward0", edges=lambda x1, x2, *a, **k: (x1, x2))
def cdist(x1, x2, p=2.0, compute_mode=None):
    """Distances between every row of ``x1`` and of ``x2`` (batched over leading dims)."""
    if x1.ndim < 2 or x2.ndim < 2:
        raise RuntimeError(f"cdist only supports at least 2D tensors, X1 got: {x1.ndim}D")
    if x1.shape[-1] != x2.shape[-1]:
        raise RuntimeError(f"X1 and X2 must have the same number of columns. X1: {x1.shape[-1]} X2: {x2.shape[-1]}")
    if p < 0:
        raise RuntimeError("cdist only supports non-negative p values")
    return _p_norm_last(x1.unsqueeze(-2) - x2.unsqueeze(-3), p)


@parses("dist", "(Tensor other, Number p = 2)")
@grad_fn_named("DistBackward0")
def dist(input, other, p=2):
    """The p-norm of ``input - other``, a floating point difference (float16 at float32, rounded once)."""
    from .compositions import rounded_once
    if not is_tensor_like(other):
        raise ArgumentError("dist(): other")
    diff = (input - other).reshape(-1)
    if not diff.dtype.is_floating_point:
        raise RuntimeError(f"norm(): input dtype should be either floating point or complex. Got "
                           f"{diff.dtype.scalar_type} instead.")
    return rounded_once(lambda d: _p_norm_last(d, p), (diff,), diff.dtype)


# ---- integration and scans ------------------------------------------------------------------------
def _trapezoid_terms(y, x, dx, dim):
    d = norm_dim(dim, y.ndim)
    n = y.shape[d]
    if n == 0:
        return None, d
    avg = (y.narrow(d, 1, n - 1) + y.narrow(d, 0, n - 1)) / 2
    if x is None:
        return avg * (1.0 if dx is None else dx), d
    if x.ndim == 1:
        shape = [1] * y.ndim
        shape[d] = n
        x = x.reshape(*shape)
        xd = d
    else:
        xd = norm_dim(dim, x.ndim)
    spacing = x.narrow(xd, 1, n - 1) - x.narrow(xd, 0, n - 1)
    return avg * spacing, d


def trapezoid(y, x=None, *, dx=None, dim=-1):
    terms, d = _trapezoid_terms(y, x, dx, dim)
    if terms is None:
        return y.sum(d) * 0
    return terms.sum(d)


def trapz(y, x=None, *, dx=None, dim=-1):
    return trapezoid(y, x, dx=dx, dim=dim)


def cumulative_trapezoid(y, x=None, *, dx=None, dim=-1):
    terms, d = _trapezoid_terms(y, x, dx, dim)
    if terms is None:
        return y * 1
    return terms.cumsum(d)


@parses("logcumsumexp", "(int dim)")
@grad_fn_named("LogcumsumexpBackward0")
def logcumsumexp(input, dim):
    """log(cumsum(exp(x))) without overflow or early underflow: a log-depth scan of logaddexp."""
    x = input if input.dtype.is_floating_point else input.to(dtypes.default_float)
    if x.ndim == 0:
        norm_dim(dim, 1)
        return x * 1
    d = norm_dim(dim, x.ndim)
    n = x.shape[d]
    out, shift = x, 1
    while shift < n:
        out = cat([out.narrow(d, 0, shift), logaddexp(out.narrow(d, shift, n - shift), out.narrow(d, 0, n - shift))], d)
        shift *= 2
    return out if out is not x else x * 1


# ---- sorted search --------------------------------------------------------------------------------
def searchsorted(sorted_sequence, input, *, out_int32=False, right=False, side=None, sorter=None):
    """Where each value of ``input`` would go in the sorted last dim of ``sorted_sequence``
    (the count of entries below it, or not above it with ``right``)."""
    if sorter is not None:
        sorted_sequence = sorted_sequence.gather(-1, sorter)
    if side is not None:
        if side not in ("left", "right"):
            raise RuntimeError(f"torch.searchsorted(): side can only be 'left' or 'right' but got {side}")
        if right and side == "left":
            raise RuntimeError("torch.searchsorted(): side and right can't be set to opposites, got side of left "
                               "while right was True")
        right = side == "right"
    scalar = not is_tensor_like(input)
    values = sorted_sequence._scalar(input, sorted_sequence.dtype) if scalar else input
    seq = sorted_sequence.detach()
    if seq.ndim == 1:
        cmp = seq <= values.detach().unsqueeze(-1) if right else seq < values.detach().unsqueeze(-1)
    else:
        if tuple(seq.shape[:-1]) != tuple(values.shape[:-1]):
            raise RuntimeError("torch.searchsorted(): boundaries tensor should be 1 dimension or the first N-1 "
                               "dimensions of boundaries tensor and input value tensor must match, but we got "
                               f"boundaries tensor {list(seq.shape)} and input value tensor {list(values.shape)}")
        v = values.detach().unsqueeze(-1)
        s = seq.unsqueeze(-2)
        cmp = s <= v if right else s < v
    out = cmp.sum(-1)
    return out.to(dtypes.int32) if out_int32 else out


def bucketize(input, boundaries, *, out_int32=False, right=False):
    if boundaries.ndim != 1:
        raise RuntimeError(f"boundaries tensor must be 1 dimension, but got dim({boundaries.ndim})")
    return searchsorted(boundaries, input, out_int32=out_int32, right=right)


METHODS = ("aminmax", "kthvalue", "quantile", "nanquantile", "logcumsumexp")
FUNCTIONS = METHODS + ("cov", "corrcoef", "cdist", "dist", "trapezoid", "trapz", "cumulative_trapezoid",
                       "searchsorted", "bucketize")
bind_methods(globals(), METHODS + ("cov", "corrcoef", "dist"))
