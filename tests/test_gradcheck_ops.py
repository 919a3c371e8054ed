"""gradcheck and gradgradcheck (float64) for every differentiable op of the op table.

Each ``Case`` names the table op it is about and a function written with gradc's public API;
while the case runs, the ops it applies are recorded, so a case that no longer reaches its op
fails. ``test_every_differentiable_op_has_a_case`` fails when an op is added to the table
without a case here (and ``test_every_nondiff_op_is_listed`` does the same for ops without
gradient). Shapes are drawn at random (seeded per case) with broadcasting and size-1 dims;
values are kept away from the points where an op is not differentiable (ties of max/min,
zero for abs/relu/sign, the bounds of clamp).
"""
from __future__ import annotations

import contextlib
import zlib
from dataclasses import dataclass
from typing import Callable

import numpy as np
import pytest

import gradc
from gradc.autograd import gradcheck, gradgradcheck
from gradc.ops import all_ops
from gradc.ops.bessel import FUNCTIONS as BESSEL_FUNCTIONS
from gradc.ops.polynomials import POLYNOMIALS
from gradc.ops.registry import NONDIFF
from gradc.tensor import Tensor

DRAWS = 3   # random draws (shapes and values) per case


# ---- input helpers ----------------------------------------------------------------------------
def T(a, requires_grad=True):
    """A float64 leaf (or, for integer/bool arrays, a constant tensor)."""
    a = np.asarray(a)
    if a.dtype.kind == "f":
        return gradc.tensor(a.astype(np.float64), requires_grad=requires_grad)
    return gradc.tensor(a)


def rand_shape(rng, min_ndim=0, max_ndim=3, lo=1, hi=3):
    return tuple(int(rng.integers(lo, hi + 1)) for _ in range(int(rng.integers(min_ndim, max_ndim + 1))))


def bcast_shapes(rng, n=2, min_ndim=1):
    """Shapes that broadcast together: a random full shape, each operand dropping leading dims
    and turning some dims into 1."""
    full = rand_shape(rng, min_ndim=min_ndim, max_ndim=3, lo=2, hi=3)
    out = []
    for _ in range(n):
        drop = int(rng.integers(0, len(full) + 1))
        s = [1 if rng.random() < 0.35 else d for d in full[drop:]]
        out.append(tuple(s))
    if not any(len(s) == len(full) for s in out):   # keep the full rank present
        out[0] = tuple([1] * (len(full) - len(out[0]))) + out[0]
    return out


def normal(rng, shape):
    return rng.standard_normal(shape)


def away(rng, shape, points=(0.0,), margin=0.2, scale=2.0):
    """Values in [-scale, scale] at least ``margin`` from each of ``points``."""
    x = rng.uniform(-scale, scale, shape)
    for p in points:
        d = x - p
        near = np.abs(d) < margin
        x = np.where(near, p + np.where(d >= 0, 1, -1) * (margin + np.abs(d)), x)
    return x


def positive(rng, shape, lo=0.5, hi=2.0):
    return rng.uniform(lo, hi, shape)


def distinct(rng, *shapes, spacing=0.25):
    """Arrays whose values are all different from each other (no ties anywhere)."""
    sizes = [int(np.prod(s, dtype=np.int64)) for s in shapes]
    vals = (rng.permutation(sum(sizes)) - sum(sizes) / 2) * spacing + rng.uniform(-0.05, 0.05, sum(sizes))
    out, k = [], 0
    for s, n in zip(shapes, sizes):
        out.append(vals[k:k + n].reshape(s))
        k += n
    return out


# ---- cases ------------------------------------------------------------------------------------
@dataclass
class Case:
    op: str                         # the table op the case is about
    name: str
    make: Callable                  # rng -> (fn, [inputs])
    eps: float = 1e-6
    atol: float = 1e-5
    rtol: float = 1e-3
    gradgrad: bool = True


CASES: list = []


def case(op, name, **kw):
    def deco(make):
        CASES.append(Case(op, name, make, **kw))
        return make
    return deco


def unary(op, name, fn, values=normal, **kw):
    @case(op, name, **kw)
    def _(rng):
        return fn, [T(values(rng, rand_shape(rng)))]


def binary(op, name, fn, values=normal, values_b=None, **kw):
    @case(op, name, **kw)
    def _(rng):
        sa, sb = bcast_shapes(rng)
        return fn, [T(values(rng, sa)), T((values_b or values)(rng, sb))]


# arithmetic: tensor-tensor with broadcasting, tensor-scalar, reflected scalar-tensor, 0-d operands
binary("add", "tensor+tensor", lambda a, b: a + b)
unary("add", "tensor+scalar", lambda a: a + 1.5)
unary("add", "scalar+tensor", lambda a: 2 + a)
unary("add", "add(alpha)", lambda a: a.add(a * a, alpha=0.5))
binary("sub", "tensor-tensor", lambda a, b: a - b)
unary("sub", "tensor-scalar", lambda a: a - 1.5)
unary("sub", "scalar-tensor(rsub)", lambda a: 1.5 - a)
binary("mul", "tensor*tensor", lambda a, b: a * b)
unary("mul", "tensor*scalar", lambda a: a * 3)
unary("mul", "scalar*tensor", lambda a: -0.5 * a)
unary("mul", "square", lambda a: a.square())


@case("mul", "0-d*tensor")
def _(rng):
    return (lambda s, a: s * a), [T(normal(rng, ())), T(normal(rng, rand_shape(rng, 1)))]


binary("div", "tensor/tensor", lambda a, b: a / b, values_b=lambda r, s: away(r, s, margin=0.5))
unary("div", "tensor/scalar", lambda a: a / 4)
unary("div", "scalar/tensor", lambda a: 2 / a, values=lambda r, s: away(r, s, margin=0.5))
unary("div", "reciprocal", lambda a: a.reciprocal(), values=lambda r, s: away(r, s, margin=0.5))
binary("pow", "tensor**tensor", lambda a, b: a ** b, values=positive, values_b=normal)
unary("pow", "tensor**2", lambda a: a ** 2)
unary("pow", "tensor**3", lambda a: a ** 3)
unary("pow", "tensor**-1.5", lambda a: a ** -1.5, values=positive)
unary("pow", "tensor**0.5", lambda a: a ** 0.5, values=positive)
unary("pow", "tensor**0", lambda a: a ** 0)
unary("pow", "scalar**tensor(rpow)", lambda a: 2.5 ** a)


@case("maximum", "maximum(broadcast)")
def _(rng):
    sa, sb = bcast_shapes(rng)
    a, b = distinct(rng, sa, sb)
    return gradc.maximum, [T(a), T(b)]


@case("minimum", "minimum(broadcast)")
def _(rng):
    sa, sb = bcast_shapes(rng)
    a, b = distinct(rng, sa, sb)
    return gradc.minimum, [T(a), T(b)]


@case("clamp_tensor", "clamp(min=tensor)")
def _(rng):
    sa, sb = bcast_shapes(rng)
    a, b = distinct(rng, sa, sb)
    return (lambda x, lo: x.clamp(min=lo)), [T(a), T(b)]


@case("clamp_tensor", "clamp(max=tensor)")
def _(rng):
    sa, sb = bcast_shapes(rng)
    a, b = distinct(rng, sa, sb)
    return (lambda x, hi: x.clamp(max=hi)), [T(a), T(b)]


@case("clamp_tensor", "clamp(tensor,tensor)")
def _(rng):
    sa, sb, sc = bcast_shapes(rng, n=3)
    a, b, c = distinct(rng, sa, sb, sc)      # no ties, so lo < x, x < hi, lo > hi all occur cleanly
    return (lambda x, lo, hi: x.clamp(lo, hi)), [T(a), T(b), T(c)]


# unary math
unary("neg", "neg", lambda a: -a)
unary("neg", "neg()", lambda a: a.neg())
unary("exp", "exp", lambda a: a.exp())
unary("log", "log", lambda a: a.log(), values=positive)
unary("sqrt", "sqrt", lambda a: a.sqrt(), values=positive)
unary("rsqrt", "rsqrt", lambda a: a.rsqrt(), values=positive)
unary("tanh", "tanh", lambda a: a.tanh())
unary("sigmoid", "sigmoid", lambda a: a.sigmoid())
unary("sin", "sin", lambda a: a.sin())
unary("cos", "cos", lambda a: a.cos())
unary("relu", "relu", lambda a: a.relu(), values=away)
unary("abs", "abs", lambda a: a.abs(), values=away)
unary("abs", "abs()", lambda a: abs(a) * a, values=away)
unary("sign", "sign", lambda a: a.sign() * a, values=away)
_WHOLE = lambda r, s: away(r, s, (-2, -1, 0, 1, 2), 0.1)                    # noqa: E731
unary("floor", "floor", lambda a: a.floor() * a, values=_WHOLE)
unary("ceil", "ceil", lambda a: a.ceil() * a, values=_WHOLE)
unary("round", "round", lambda a: a.round() * a, values=lambda r, s: away(r, s, (-1.5, -0.5, 0.5, 1.5), 0.1))
unary("round", "round(decimals)", lambda a: a.round(decimals=1) * a,
      values=lambda r, s: away(r, s, tuple(k / 10 + 0.05 for k in range(-20, 20)), 0.01))
unary("trunc", "trunc", lambda a: a.trunc() * a, values=_WHOLE)
unary("frac", "frac", lambda a: a.frac() * a, values=_WHOLE)
unary("silu", "silu", lambda a: gradc.nn.functional.silu(a))
unary("leaky_relu", "leaky_relu", lambda a: gradc.nn.functional.leaky_relu(a, 0.2) * a, values=away)
unary("exp2", "exp2", lambda a: a.exp2())
unary("log2", "log2", lambda a: a.log2(), values=positive)
unary("log10", "log10", lambda a: gradc.log10(a), values=positive)
unary("tan", "tan", lambda a: a.tan(), values=lambda r, s: r.uniform(-1.2, 1.2, s))
unary("atan", "atan", lambda a: a.atan() * 2)
unary("asin", "asin", lambda a: a.asin(), values=lambda r, s: r.uniform(-0.9, 0.9, s))
unary("acos", "acos", lambda a: a.acos(), values=lambda r, s: r.uniform(-0.9, 0.9, s))
unary("sinh", "sinh", lambda a: a.sinh())
unary("cosh", "cosh", lambda a: a.cosh() * a)
unary("asinh", "asinh", lambda a: a.asinh() * 3)
unary("acosh", "acosh", lambda a: a.acosh(), values=lambda r, s: r.uniform(1.2, 4.0, s))
unary("atanh", "atanh", lambda a: a.atanh(), values=lambda r, s: r.uniform(-0.9, 0.9, s))
binary("atan2", "atan2", lambda a, b: gradc.atan2(a, b), values_b=lambda r, s: away(r, s, (0.0,), 0.3))
unary("log1p", "log1p", lambda a: a.log1p(), values=lambda r, s: r.uniform(-0.8, 3.0, s))
unary("expm1", "expm1", lambda a: a.expm1())
unary("erf", "erf", lambda a: gradc.erf(a * 1.5))
unary("erfinv", "erfinv", lambda a: gradc.erfinv(a) * a, values=lambda r, s: r.uniform(-0.95, 0.95, s))
unary("erfc", "erfc", lambda a: gradc.erfc(a * 1.5))
unary("erfcx", "erfcx", lambda a: gradc.special.erfcx(a * 3))
unary("lgamma", "lgamma", lambda a: a.lgamma(), values=lambda r, s: away(r, s, (0.0, -1.0, -2.0), 0.2))
unary("digamma", "digamma", lambda a: gradc.digamma(a), values=lambda r, s: away(r, s, (0.0, -1.0, -2.0), 0.2))
unary("polygamma", "polygamma(1)", lambda a: gradc.polygamma(1, a), values=lambda r, s: away(r, s, (0.0, -1.0, -2.0), 0.2))
unary("polygamma", "polygamma(3)", lambda a: a.polygamma(3), values=positive)
unary("zeta", "zeta(s, q)", lambda a: gradc.special.zeta(3.0, a), values=positive)
unary("igamma", "igamma(a, x) in x", lambda x: gradc.igamma(gradc.full(x.shape, 2.5, dtype=x.dtype), x), values=positive)
unary("igammac", "igammac(a, x) in x", lambda x: gradc.special.gammaincc(gradc.full(x.shape, 0.7, dtype=x.dtype), x),
      values=positive)
unary("entr", "entr", lambda a: gradc.special.entr(a), values=positive)
unary("ndtri", "ndtri", lambda a: gradc.special.ndtri(a), values=lambda r, s: r.uniform(0.05, 0.95, s))
unary("log_ndtr", "log_ndtr", lambda a: gradc.special.log_ndtr(a * 4))


@case("binary_cross_entropy", "binary_cross_entropy")
def _(rng):
    shape = rand_shape(rng)
    return (lambda p, t: gradc.nn.functional.binary_cross_entropy(p, t, reduction="none"),
            [T(rng.uniform(0.05, 0.95, shape)), T(rng.uniform(0.0, 1.0, shape))])


unary("logit", "logit", lambda a: gradc.logit(a), values=lambda r, s: r.uniform(0.1, 0.9, s))
unary("logit", "logit(eps)", lambda a: gradc.logit(a, eps=0.2), values=lambda r, s: r.uniform(0.25, 0.75, s))
binary("xlogy", "xlogy", lambda a, b: gradc.xlogy(a, b), values_b=lambda r, s: r.uniform(0.2, 2.0, s))
binary("xlog1py", "xlog1py", lambda a, b: gradc.special.xlog1py(a, b), values_b=lambda r, s: r.uniform(-0.8, 2.0, s))
unary("i0", "i0", lambda a: gradc.i0(a * 3))
unary("i0e", "i0e", lambda a: gradc.special.i0e(a * 3), values=away)
unary("i1", "i1", lambda a: gradc.special.i1(a * 3))
unary("i1e", "i1e", lambda a: gradc.special.i1e(a * 3), values=away)
unary("lgamma", "mvlgamma", lambda a: gradc.mvlgamma(a, 3), values=lambda r, s: r.uniform(1.5, 4.0, s))
def _scatter_reduce_case(reduce, include_self, larger_src=False):
    @case("scatter_reduce", f"scatter_reduce({reduce}, include_self={include_self}{', larger src' if larger_src else ''})")
    def _(rng):
        x, src = distinct(rng, (3, 4), (5, 5 if larger_src else 4))      # no ties for amax/amin
        index = gradc.tensor(rng.integers(0, 3, (5, 4)))
        return (lambda a, b: a.scatter_reduce(0, index, b, reduce, include_self=include_self)), [T(x), T(src)]


for _reduce in ("sum", "prod", "mean", "amax", "amin"):
    for _include in (True, False):
        _scatter_reduce_case(_reduce, _include)
_scatter_reduce_case("prod", True, larger_src=True)
binary("copysign", "copysign", lambda a, b: gradc.copysign(a, b) * a, values=away, values_b=away)
binary("nextafter", "nextafter", lambda a, b: gradc.nextafter(a, b) * a)
unary("softplus", "softplus", lambda a: gradc.nn.functional.softplus(a * 3))
unary("softplus", "softplus(beta,threshold)", lambda a: gradc.nn.functional.softplus(a, beta=2.0, threshold=1.0) * a,
      values=lambda r, s: away(r, s, (0.5,), 0.1))
unary("log_sigmoid", "logsigmoid", lambda a: gradc.nn.functional.logsigmoid(a * 4))
unary("elu", "elu", lambda a: gradc.nn.functional.elu(a, alpha=0.7) * a, values=away)
unary("gelu", "gelu", lambda a: gradc.nn.functional.gelu(a * 2))
unary("gelu", "gelu(tanh)", lambda a: gradc.nn.functional.gelu(a * 2, approximate="tanh"))
binary("remainder", "%", lambda a, b: (a % b) * a, values_b=lambda r, s: away(r, s, (0.0,), 0.5))
binary("fmod", "fmod", lambda a, b: gradc.fmod(a, b) * b, values_b=lambda r, s: away(r, s, (0.0,), 0.5))
binary("div_rounding", "div(floor)", lambda a, b: a.div(b, rounding_mode="floor") * a + b,
       values_b=lambda r, s: away(r, s, (0.0,), 0.5))
binary("div_rounding", "div(trunc)", lambda a, b: a.div(b, rounding_mode="trunc") * b,
       values_b=lambda r, s: away(r, s, (0.0,), 0.5))
unary("clamp", "clamp(min,max)", lambda a: a.clamp(-0.5, 0.5), values=lambda r, s: away(r, s, (-0.5, 0.5), 0.1))
unary("clamp", "clamp(min)", lambda a: a.clamp(min=0.3), values=lambda r, s: away(r, s, (0.3,), 0.1))
unary("clamp", "clamp(max)", lambda a: a.clamp(max=-0.2), values=lambda r, s: away(r, s, (-0.2,), 0.1))
unary("clamp", "clip", lambda a: gradc.clip(a, -1, 1), values=lambda r, s: away(r, s, (-1, 1), 0.1))
unary("clone", "clone", lambda a: a.clone() * a)
# float64 -> float32 -> float64 loses digits, so the finite differences use a larger step
unary("cast", "to(float32)", lambda a: a.to(gradc.float32).double(), eps=1e-3, atol=1e-3)
unary("cast", "float()", lambda a: a.float() * 2, eps=1e-3, atol=1e-3)
unary("cast", "to(dtype=float64)", lambda a: a.float().to(dtype=gradc.float64), eps=1e-3, atol=1e-3)
# float16 emulated in compiled autocast regions: values rounded (steps of at most 2**-8 here), the
# gradient passed through rounded: finite differences over many steps see slope 1
unary("round_half", "round_half (autocast under compile)", lambda a: gradc.ops.dispatch.apply("round_half", a),
      eps=0.1, atol=3e-2)


@case("fill", "fill_ on a non-leaf")
def _(rng):
    def fn(a):
        y = a * 1
        y.fill_(1.5)
        return y * a
    return fn, [T(normal(rng, rand_shape(rng)))]


@case("where", "where(broadcast)")
def _(rng):
    sc, sa, sb = bcast_shapes(rng, 3)
    cond = T(rng.random(sc) < 0.5)
    return (lambda a, b: gradc.where(cond, a, b)), [T(normal(rng, sa)), T(normal(rng, sb))]


@case("where", "where(tensor, scalar)")
def _(rng):
    s = rand_shape(rng, 1)
    cond = T(rng.random(s) < 0.5)
    return (lambda a: gradc.where(cond, a, 0.5) * a), [T(normal(rng, s))]


@case("where", "masked_fill")
def _(rng):
    s = rand_shape(rng, 1)
    mask = T(rng.random(s) < 0.5)
    return (lambda a: a.masked_fill(mask, -1.0)), [T(normal(rng, s))]


# reductions
def _dims(rng, ndim):
    """A random non-empty subset of dims (some negative), or None for all."""
    if ndim == 0 or rng.random() < 0.2:
        return None
    k = int(rng.integers(1, ndim + 1))
    dims = sorted(rng.choice(ndim, size=k, replace=False).tolist())
    dims = [d - ndim if rng.random() < 0.3 else d for d in dims]
    return dims[0] if len(dims) == 1 and rng.random() < 0.5 else tuple(dims)


def reduction(op, name, call, values=normal, min_ndim=1, **kw):
    @case(op, name, **kw)
    def _(rng):
        shape = rand_shape(rng, min_ndim)
        dim = _dims(rng, len(shape))
        keep = bool(rng.random() < 0.5)
        vals = values(rng, shape)
        return (lambda a: call(a, dim, keep)), [T(vals)]


unary("sum", "sum()", lambda a: a.sum())
reduction("sum", "sum(dim,keepdim)", lambda a, d, k: a.sum(d, keepdim=k) if d is not None else a.sum())
unary("mean", "mean()", lambda a: a.mean())
reduction("mean", "mean(dim,keepdim)", lambda a, d, k: a.mean(d, keepdim=k) if d is not None else a.mean())
unary("prod", "prod()", lambda a: a.prod(), values=lambda r, s: away(r, s, margin=0.5))
reduction("prod", "prod(dim,keepdim)",
          lambda a, d, k: a.prod(d if isinstance(d, int) else (d or (0,))[0], keepdim=k),
          values=lambda r, s: away(r, s, margin=0.5))


@case("prod", "prod with one zero")
def _(rng):
    x = away(rng, (3, 4), margin=0.5)
    x[1, 2] = 0.0
    return (lambda a: a.prod(1)), [T(x)]


@case("prod", "prod with two zeros")
def _(rng):
    x = away(rng, (2, 4), margin=0.5)
    x[0, 1] = x[0, 3] = 0.0
    return (lambda a: a.prod(1)), [T(x)]


reduction("amax", "amax(dim,keepdim)", lambda a, d, k: a.amax(d, keepdim=k) if d is not None else a.amax(),
          values=lambda r, s: distinct(r, s)[0])
reduction("amin", "amin(dim,keepdim)", lambda a, d, k: a.amin(d, keepdim=k) if d is not None else a.amin(),
          values=lambda r, s: distinct(r, s)[0])
unary("amax", "max()", lambda a: a.max(), values=lambda r, s: distinct(r, s)[0])
unary("amin", "min()", lambda a: a.min(), values=lambda r, s: distinct(r, s)[0])


def extremum_dim(op, kind):
    @case(op, f"{kind}(dim,keepdim)")
    def _(rng):
        shape = rand_shape(rng, 1)
        d = int(rng.integers(-len(shape), len(shape)))
        keep = bool(rng.random() < 0.5)
        return (lambda a: getattr(a, kind)(d, keepdim=keep)), [T(distinct(rng, shape)[0])]

    @case(op, f"{kind}(dim).values")
    def _(rng):
        shape = rand_shape(rng, 2)
        return (lambda a: getattr(a, kind)(1).values * 2), [T(distinct(rng, shape)[0])]


extremum_dim("max_dim", "max")
extremum_dim("min_dim", "min")
reduction("norm", "norm(dim)", lambda a, d, k: a.norm(dim=d, keepdim=k), values=lambda r, s: away(r, s, margin=0.3))
unary("norm", "norm()", lambda a: a.norm(), values=lambda r, s: away(r, s, margin=0.3))
reduction("norm", "norm(p=1)", lambda a, d, k: a.norm(1, d, k), values=lambda r, s: away(r, s, margin=0.3))
reduction("norm", "norm(p=3)", lambda a, d, k: a.norm(3, d, k), values=lambda r, s: away(r, s, margin=0.3))
reduction("norm", "norm(p=inf)", lambda a, d, k: a.norm(float("inf"), d, k),
          values=lambda r, s: np.abs(distinct(r, s)[0]) + 0.3)


def var_like(op):
    @case(op, f"{op}(dim,keepdim,correction)")
    def _(rng):
        shape = rand_shape(rng, 1, lo=2, hi=4)
        dim = _dims(rng, len(shape))
        keep = bool(rng.random() < 0.5)
        corr = int(rng.integers(0, 2))
        return (lambda a: getattr(a, op)(dim, keepdim=keep, correction=corr)), [T(normal(rng, shape))]

    unary(op, f"{op}()", lambda a: getattr(a, op)(), values=lambda r, s: normal(r, (3, 2)))
    unary(op, f"{op}(unbiased=False)", lambda a: getattr(a, op)(0, unbiased=False),
          values=lambda r, s: normal(r, (3, 2)))


var_like("var")
var_like("std")
reduction("logsumexp", "logsumexp(dim,keepdim)", lambda a, d, k: a.logsumexp(d if d is not None else 0, k))


@case("sort", "sort(dim,descending)")
def _(rng):
    shape = rand_shape(rng, 1, lo=1, hi=4)
    dim, desc = int(rng.integers(-len(shape), len(shape))), bool(rng.random() < 0.5)
    return (lambda a: a.sort(dim, descending=desc).values * a), [T(distinct(rng, shape)[0])]


@case("topk", "topk(k,dim,largest)")
def _(rng):
    shape = rand_shape(rng, 1, lo=2, hi=4)
    dim = int(rng.integers(-len(shape), len(shape)))
    k, largest = int(rng.integers(1, shape[dim] + 1)), bool(rng.random() < 0.5)
    return (lambda a: a.topk(k, dim, largest=largest).values.exp()), [T(distinct(rng, shape)[0])]


@case("kthvalue", "kthvalue(k,dim,keepdim)")
def _(rng):
    shape = rand_shape(rng, 1, lo=2, hi=4)
    dim = int(rng.integers(-len(shape), len(shape)))
    k, keep = int(rng.integers(1, shape[dim] + 1)), bool(rng.random() < 0.5)
    return (lambda a: a.kthvalue(k, dim, keep).values.exp()), [T(distinct(rng, shape)[0])]


@case("mode", "mode(dim,keepdim)")
def _(rng):
    shape = rand_shape(rng, 1, lo=2, hi=4)
    dim, keep = int(rng.integers(-len(shape), len(shape))), bool(rng.random() < 0.5)
    return (lambda a: a.mode(dim, keep).values.exp()), [T(distinct(rng, shape)[0])]


@case("cumsum", "cumsum(dim)")
def _(rng):
    shape = rand_shape(rng, 0, lo=1, hi=4)
    dim = int(rng.integers(-len(shape), len(shape))) if shape else 0
    return (lambda a: a.cumsum(dim) * a), [T(normal(rng, shape))]


def _well_conditioned(rng, batch=()):
    n = int(rng.integers(1, 4))
    return rng.standard_normal(batch + (n, n)) + (n + 1) * np.eye(n)


@case("linalg_inv", "linalg.inv")
def _(rng):
    return (lambda a: gradc.linalg.inv(a)), [T(_well_conditioned(rng, (2,)))]


@case("linalg_det", "linalg.det")
def _(rng):
    return (lambda a: gradc.linalg.det(a)), [T(_well_conditioned(rng))]


@case("linalg_slogdet", "linalg.slogdet")
def _(rng):
    return (lambda a: gradc.linalg.slogdet(a).logabsdet), [T(_well_conditioned(rng, (2,)))]


@case("linalg_solve", "linalg.solve")
def _(rng):
    a = _well_conditioned(rng)
    return (lambda a, b: gradc.linalg.solve(a, b)), [T(a), T(rng.standard_normal((a.shape[-1], 2)))]


def _distinct_spectrum(rng, m, n, batch=()):
    """A random m x n matrix with well-separated singular values (Q1 diag(s) Q2)."""
    k = min(m, n)
    q1 = np.linalg.qr(rng.standard_normal(batch + (m, m)))[0][..., :k]
    q2 = np.linalg.qr(rng.standard_normal(batch + (n, n)))[0][..., :k]
    s = 1.0 + 0.7 * np.arange(k)[::-1] + rng.uniform(0, 0.1, batch + (k,))
    return (q1 * s[..., None, :]) @ np.swapaxes(q2, -1, -2)


@case("linalg_svd", "linalg.svd(gauge-invariant)")
def _(rng):
    m, n = (int(x) for x in rng.integers(1, 4, 2))
    return (lambda a: (lambda r: r.U ** 2 * r.S.unsqueeze(-2) + (r.U @ r.Vh).sum(-1, keepdim=True))(
        gradc.linalg.svd(a, full_matrices=False))), [T(_distinct_spectrum(rng, m, n, (2,)))]


@case("linalg_eigh", "linalg.eigh(sym)")
def _(rng):
    a = _distinct_spectrum(rng, 3, 3)
    return (lambda a: (lambda r: r.eigenvectors ** 2 * r.eigenvalues)(gradc.linalg.eigh(a + a.mT))), [T(a)]


@case("linalg_cholesky", "linalg.cholesky")
def _(rng):
    a = _well_conditioned(rng, (2,))
    return (lambda a: gradc.linalg.cholesky(a @ a.mT, upper=bool(a.shape[-1] % 2))), [T(a)]


@case("linalg_qr", "linalg.qr")
def _(rng):
    m, n = (int(x) for x in rng.integers(1, 4, 2))
    return (lambda a: (lambda r: r.Q.sum(-1, keepdim=True) * r.R.sum(-2, keepdim=True))(gradc.linalg.qr(a))), \
        [T(_distinct_spectrum(rng, m, n))]


@case("linalg_pinv", "linalg.pinv")
def _(rng):
    m, n = (int(x) for x in rng.integers(1, 4, 2))
    return (lambda a: gradc.linalg.pinv(a)), [T(_distinct_spectrum(rng, m, n, (2,)))]


@case("linalg_matrix_exp", "matrix_exp")
def _(rng):
    return (lambda a: gradc.matrix_exp(a)), [T(rng.standard_normal((2, 3, 3)) * rng.uniform(0.3, 3.0))]


@case("linalg_lu_factor", "linalg.lu_factor")
def _(rng):
    m, n = (int(x) for x in rng.integers(1, 5, 2))
    return (lambda a: gradc.linalg.lu_factor(a).LU), [T(rng.standard_normal((2, m, n)) + 2 * np.eye(m, n))]


@case("linalg_lu", "linalg.lu")
def _(rng):
    m, n = (int(x) for x in rng.integers(1, 5, 2))
    return (lambda a: (lambda r: r.L.sum(-1, keepdim=True) * r.U.sum(-2, keepdim=True))(gradc.linalg.lu(a))), \
        [T(rng.standard_normal((m, n)) + 2 * np.eye(m, n))]


@case("cumprod", "cumprod(dim)")
def _(rng):
    shape = rand_shape(rng, 0, lo=1, hi=4)
    dim = int(rng.integers(-len(shape), len(shape))) if shape else 0
    return (lambda a: a.cumprod(dim) * a), [T(normal(rng, shape))]


def softmax_like(op):
    @case(op, f"{op}(dim)")
    def _(rng):
        shape = rand_shape(rng, 1)
        d = int(rng.integers(-len(shape), len(shape)))
        return (lambda a: getattr(a, op)(d)), [T(normal(rng, shape))]


softmax_like("softmax")
softmax_like("log_softmax")

# matmul: 1-D, 2-D, mixed, batched with broadcasting


def matmul_case(name, shapes):
    @case("matmul", name)
    def _(rng):
        n, k, m = (int(v) for v in rng.integers(1, 4, 3))
        b1, b2 = (int(v) for v in rng.integers(1, 3, 2))
        sa, sb = shapes(n, k, m, b1, b2)
        return (lambda a, b: a @ b), [T(normal(rng, sa)), T(normal(rng, sb))]


matmul_case("1-D@1-D", lambda n, k, m, b1, b2: ((k,), (k,)))
matmul_case("2-D@2-D", lambda n, k, m, b1, b2: ((n, k), (k, m)))
matmul_case("2-D@1-D", lambda n, k, m, b1, b2: ((n, k), (k,)))
matmul_case("1-D@2-D", lambda n, k, m, b1, b2: ((k,), (k, m)))
matmul_case("batched broadcast", lambda n, k, m, b1, b2: ((b1, 1, n, k), (2, k, m)))
matmul_case("3-D@1-D", lambda n, k, m, b1, b2: ((b1, n, k), (k,)))
matmul_case("1-D@3-D", lambda n, k, m, b1, b2: ((k,), (b2, k, m)))


@case("matmul", "torch.mm/torch.matmul spellings")
def _(rng):
    return (lambda a, b: gradc.mm(a, b) + gradc.matmul(a, b)), [T(normal(rng, (2, 3))), T(normal(rng, (3, 2)))]


# shape ops
def _factor(rng, shape):
    n = int(np.prod(shape, dtype=np.int64))
    divs = [d for d in range(1, n + 1) if n % d == 0]
    d = int(rng.choice(divs))
    return (d, n // d) if rng.random() < 0.5 else (d, -1)


@case("reshape", "reshape")
def _(rng):
    shape = rand_shape(rng)
    new = _factor(rng, shape)
    return (lambda a: a.reshape(new) * a.reshape(new)), [T(normal(rng, shape))]


unary("reshape", "view(-1)", lambda a: a.view(-1))
unary("reshape", "flatten", lambda a: a.flatten(), values=lambda r, s: normal(r, rand_shape(r, 2)))
unary("reshape", "flatten(1)", lambda a: a.flatten(1), values=lambda r, s: normal(r, rand_shape(r, 3, 3)))
unary("reshape", "squeeze()", lambda a: a.squeeze(), values=lambda r, s: normal(r, (2, 1, 3, 1)))
unary("reshape", "squeeze(dim)", lambda a: a.squeeze(-1), values=lambda r, s: normal(r, (2, 3, 1)))
unary("reshape", "unsqueeze(dim)", lambda a: a.unsqueeze(-1) * a.unsqueeze(0))


@case("reshape", "view_as")
def _(rng):
    return (lambda a, b: a.view_as(b) * b), [T(normal(rng, (2, 3))), T(normal(rng, (3, 2)))]


@case("permute", "permute")
def _(rng):
    shape = rand_shape(rng, 1)
    perm = [int(p) for p in rng.permutation(len(shape))]
    return (lambda a: a.permute(*perm)), [T(normal(rng, shape))]


@case("permute", "transpose")
def _(rng):
    shape = rand_shape(rng, 2)
    d0, d1 = (int(v) for v in rng.choice(len(shape), 2, replace=False))
    return (lambda a: a.transpose(d0, d1 - len(shape))), [T(normal(rng, shape))]


unary("permute", ".T", lambda a: a.T @ a, values=lambda r, s: normal(r, rand_shape(r, 2, 2)))
unary("permute", ".t()", lambda a: a.t(), values=lambda r, s: normal(r, rand_shape(r, 2, 2)))
unary("permute", ".mT", lambda a: a.mT, values=lambda r, s: normal(r, rand_shape(r, 3, 3)))


@case("expand", "expand")
def _(rng):
    shape = [1 if rng.random() < 0.5 else 2 for _ in range(int(rng.integers(1, 4)))]
    target = [2] + [3 if s == 1 else s for s in shape]
    if rng.random() < 0.5:
        target[-1] = -1
    return (lambda a: a.expand(*target)), [T(normal(rng, shape))]


@case("expand", "expand_as/broadcast_to")
def _(rng):
    sa, sb = bcast_shapes(rng)
    full = np.broadcast_shapes(sa, sb)
    return (lambda a, b: a.expand_as(b * 1) * b + gradc.broadcast_to(a, full)), [T(normal(rng, sa)),
                                                                                T(normal(rng, full))]


@case("sum", "sum_to_size")
def _(rng):
    small, _ = bcast_shapes(rng)
    full = tuple(2 if s == 1 else s for s in small)
    full = (2,) + full
    return (lambda a: a.sum_to_size(small)), [T(normal(rng, full))]


@case("sum", "broadcast backward")     # (PyTorch's sum_to: a kept sum, then a view)
def _(rng):
    sa, sb = bcast_shapes(rng)
    return (lambda a, b: (a + b) * (a + b)), [T(normal(rng, sa)), T(normal(rng, sb))]


@case("sum_to", "sum_to")      # (an IR op: no tensor method applies it)
def _(rng):
    small, _ = bcast_shapes(rng)
    full = (2,) + tuple(2 if s == 1 else s for s in small)
    return (lambda a: gradc.ops.apply("sum_to", a * a, shape=list(small))), [T(normal(rng, full))]


@case("cat", "cat")
def _(rng):
    shape = list(rand_shape(rng, 1))
    d = int(rng.integers(-len(shape), len(shape)))
    parts = []
    for _ in range(int(rng.integers(1, 4))):
        s = list(shape)
        s[d] = int(rng.integers(1, 4))
        parts.append(T(normal(rng, s)))
    return (lambda *xs: gradc.cat(xs, d)), parts


@case("cat", "cat with an empty (0,) tensor")
def _(rng):
    return (lambda a, b: gradc.cat([a, gradc.zeros(0, dtype=gradc.float64), b], 1)), [
        T(normal(rng, (2, 1))), T(normal(rng, (2, 3)))]


@case("stack", "stack")
def _(rng):
    shape = rand_shape(rng)
    d = int(rng.integers(-len(shape) - 1, len(shape) + 1))
    return (lambda *xs: gradc.stack(xs, d)), [T(normal(rng, shape)) for _ in range(int(rng.integers(1, 4)))]


# indexing
def getitem(name, shape, key):
    @case("index", f"getitem[{name}]")
    def _(rng):
        k = key() if callable(key) else key
        return (lambda a: a[k]), [T(normal(rng, shape))]


getitem("int", (4, 3), 1)
getitem("negative int", (4, 3), -1)
getitem("int,int", (4, 3), (2, -2))
getitem("slice", (5, 3), slice(1, 4))
getitem("slice with step", (7, 4), (slice(None, None, 2), slice(3, 0, None)))
getitem("slice step 3", (7, 4), (slice(1, None, 3),))
getitem("None", (3, 2), (None, slice(None), None))
getitem("ellipsis", (2, 3, 4), (Ellipsis, 1))
getitem("ellipsis,None", (2, 3, 4), (0, Ellipsis, None))
getitem("int tensor (repeats)", (5, 2), lambda: gradc.tensor([0, 2, 2, 4, 0]))
getitem("2-D int tensor", (4, 3), lambda: gradc.tensor([[0, 1], [3, 3]]))
getitem("two int tensors", (4, 3), lambda: (gradc.tensor([0, 3, 1]), gradc.tensor([2, 2, 0])))
getitem("slice + int tensor", (4, 5), lambda: (slice(1, None), gradc.tensor([4, 0, 4])))
getitem("list", (4, 3), ([3, 1, 1],))
getitem("negative int tensor", (4, 3), lambda: (slice(None), gradc.tensor([-1, 0, -3])))
getitem("bool mask", (3, 4), lambda: gradc.tensor([[True, False, True, True], [False] * 4,
                                                  [True, True, False, False]]))
getitem("bool row mask", (3, 4), lambda: gradc.tensor([True, False, True]))
getitem("bool mask + slice", (3, 4), lambda: (slice(None), gradc.tensor([False, True, True, False])))


@case("index", "index_select")
def _(rng):
    shape = rand_shape(rng, 1, lo=2)
    d = int(rng.integers(0, len(shape)))
    idx = gradc.tensor(rng.integers(0, shape[d], 4))
    return (lambda a: a.index_select(d, idx)), [T(normal(rng, shape))]


@case("index", "select/narrow")
def _(rng):
    return (lambda a: a.select(1, 2) * a.narrow(1, 0, 1).squeeze(1)), [T(normal(rng, (3, 4)))]


@case("index", "unbind by iteration")
def _(rng):
    return (lambda a: gradc.stack([row * i for i, row in enumerate(a)])), [T(normal(rng, (3, 2)))]


@case("index_backward", "adjoint of getitem (grad of x[idx] w.r.t. x, as a function of the grad)")
def _(rng):
    x = T(normal(rng, (4, 3)))
    idx = gradc.tensor([0, 3, 3])

    def fn(g):
        return gradc.autograd.grad(x[idx, 1:], x, g, create_graph=True)[0]
    return fn, [T(normal(rng, (3, 2)))]


def setitem(name, shape, key, value_shape):
    @case("index_put", f"setitem[{name}]")
    def _(rng):
        k = key() if callable(key) else key

        def fn(a, v):
            y = a * 1
            y[k] = v
            return y
        return fn, [T(normal(rng, shape)), T(normal(rng, value_shape))]


setitem("int", (4, 3), 1, (3,))
setitem("slice step, broadcast value", (6, 3), slice(0, None, 2), (1, 3))
setitem("0-d value", (3, 2), (1, 0), ())
setitem("int tensor", (5, 2), lambda: gradc.tensor([4, 0, 2]), (3, 2))
setitem("bool mask, broadcast value", (3, 4), lambda: gradc.tensor([True, False, True]), (4,))
setitem("None/ellipsis", (2, 3), (Ellipsis, None, 1), (2, 1))


@case("index_put", "setitem with a Python scalar")
def _(rng):
    def fn(a):
        y = a.clone()
        y[0, 1:] = 2.0
        return y * a
    return fn, [T(normal(rng, (2, 3)))]


@case("gather", "gather")
def _(rng):
    shape = rand_shape(rng, 1, lo=2)
    d = int(rng.integers(-len(shape), len(shape)))
    ishape = list(shape)
    ishape[d] = int(rng.integers(1, 5))
    ishape = [int(rng.integers(1, s + 1)) if i != d % len(shape) else s for i, s in enumerate(ishape)]
    idx = gradc.tensor(rng.integers(0, shape[d], ishape))
    return (lambda a: a.gather(d, idx)), [T(normal(rng, shape))]


@case("scatter_add", "adjoint of gather (grad of gather w.r.t. x, as a function of the grad)")
def _(rng):
    x = T(normal(rng, (3, 4)))
    idx = gradc.tensor([[0, 0, 3], [1, 2, 1]])

    def fn(g):
        return gradc.autograd.grad(x.gather(1, idx), x, g, create_graph=True)[0]
    return fn, [T(normal(rng, (2, 3)))]


@case("scatter_add", "max(dim) backward")
def _(rng):
    return (lambda a: a.max(0).values * a.sum(0)), [T(distinct(rng, (3, 4))[0])]


# a composite: a small MLP with softmax cross-entropy, exercising many rules at once
@case("matmul", "mlp")
def _(rng):
    target = gradc.tensor([1, 0, 2])

    def fn(x, w1, w2):
        h = (x @ w1).tanh()
        logits = h @ w2
        logp = logits.log_softmax(-1)
        return -logp.gather(1, target.unsqueeze(1)).mean()
    return fn, [T(normal(rng, (3, 4))), T(normal(rng, (4, 5))), T(normal(rng, (5, 3)))]


# ---- running ----------------------------------------------------------------------------------
@contextlib.contextmanager
def record_ops():
    """Names of the table ops applied to eager tensors inside the block."""
    seen = set()
    original = Tensor.__dict__["_apply"].__func__

    def recording(cls, op, inputs, attrs, node_name=None):
        seen.add(op.name)
        return original(cls, op, inputs, attrs, node_name)
    Tensor._apply = classmethod(recording)
    try:
        yield seen
    finally:
        Tensor._apply = classmethod(original)


PARAMS = [pytest.param(c, k, id=f"{c.op}:{c.name}:{k}") for c in CASES for k in range(DRAWS)]


def _instantiate(c: Case, draw: int):
    rng = np.random.default_rng(zlib.crc32(f"{c.op}/{c.name}/{draw}".encode()))
    return c.make(rng)


@pytest.mark.parametrize("c,draw", PARAMS)
def test_gradcheck(c, draw):
    fn, inputs = _instantiate(c, draw)
    with record_ops() as seen:   # the forward and one backward pass
        out = fn(*inputs)
        outs = [o for o in (out if isinstance(out, tuple) else (out,)) if o.requires_grad]
        assert outs, "the case's output does not require grad"
        wrt = [x for x in inputs if x.requires_grad]
        gradc.autograd.grad(outs, wrt, [gradc.ones_like(o) for o in outs], allow_unused=True)
    assert c.op in seen, f"case {c.name!r} does not apply gradc.{c.op} (applied: {sorted(seen)})"
    assert gradcheck(fn, inputs, eps=c.eps, atol=c.atol, rtol=c.rtol)


@pytest.mark.parametrize("c,draw", PARAMS)
def test_gradgradcheck(c, draw):
    if not c.gradgrad:
        pytest.skip("first derivative only")
    fn, inputs = _instantiate(c, draw)
    assert gradgradcheck(fn, inputs, eps=c.eps, atol=c.atol, rtol=c.rtol)


# ops that record a node whose backward raises, as PyTorch's do (its NotImplemented node)
RAISING_DERIVATIVES = {"floor_divide": "derivative for aten::floor_divide is not implemented",
                       "heaviside": "derivative for aten::heaviside is not implemented"}


@pytest.mark.parametrize("op", sorted(RAISING_DERIVATIVES))
def test_derivatives_that_raise_like_pytorch(op):
    a = gradc.tensor([3.5, -3.5], requires_grad=True)
    out = gradc.ops.dispatch.apply(op, a, gradc.tensor(2.0))
    assert out.requires_grad and type(out.grad_fn).__name__ == "NotImplemented"
    with pytest.raises(RuntimeError, match=RAISING_DERIVATIVES[op]):
        out.sum().backward()
    # compiled too: the call runs, the backward raises (the compiled gradient is never precomputed)
    loss = gradc.compile(lambda x: gradc.ops.dispatch.apply(op, x, gradc.tensor(2.0)).sum())(a)
    assert loss.item() == out.sum().item() and loss.requires_grad
    with pytest.raises(RuntimeError, match=RAISING_DERIVATIVES[op]):
        loss.backward()


def test_every_differentiable_op_has_a_case():
    differentiable = {n for n, op in all_ops().items() if not op.has(NONDIFF)} - set(RAISING_DERIVATIVES)
    covered = {c.op for c in CASES}
    assert differentiable - covered == set(), "ops with no gradcheck case"
    assert covered - differentiable == set(), "cases naming ops that are not differentiable table ops"
    for n in differentiable:
        assert all_ops()[n].vjp is not None, f"gradc.{n} is differentiable but has no VJP"


# ---- ops without a gradient -----------------------------------------------------------------
def _nondiff_cases():
    from gradc.ops import apply
    x = gradc.tensor([[0.5, -1.0, 2.0], [3.0, 0.5, -2.0]], dtype=gradc.float64, requires_grad=True)
    i = gradc.tensor([[5, -3, 12], [0, 7, -8]])
    return {
        "detach": lambda: apply("detach", x),   # eager Tensor.detach() shares storage without the table
        "eq": lambda: x == 0.5, "ne": lambda: x != 0.5, "lt": lambda: x < 0.5,
        "le": lambda: x <= 0.5, "gt": lambda: x > 0.5, "ge": lambda: x >= 0.5,
        "logical_and": lambda: (x > 0) & (x < 1), "logical_or": lambda: (x > 0) | (x < -1),
        "logical_not": lambda: (x > 0).logical_not(),
        "argmax": lambda: x.argmax(1), "argmin": lambda: x.argmin(),
        "rand_like": lambda: apply("rand_like", x), "randn_like": lambda: apply("randn_like", x),
        "bitwise_and": lambda: i & 6, "bitwise_or": lambda: i | 6, "bitwise_xor": lambda: i ^ 6,
        "bitwise_left_shift": lambda: i << 2, "bitwise_right_shift": lambda: i >> 1,
        "bitwise_not": lambda: ~i,
        "gcd": lambda: gradc.gcd(i, i * 2 + 1), "lcm": lambda: i.lcm(i + 1),
        **{name: (lambda name=name: getattr(gradc.special, name)(x)) for name in BESSEL_FUNCTIONS},
        **{name: (lambda name=name: getattr(gradc.special, name)(x, x * 3)) for name in POLYNOMIALS},
    }


# 'constant' only appears in traced IR (eager tensors hold their data): it has no eager spelling.
IR_ONLY = {"constant", "iota", "check_index", "backward_error"}   # created by compiler passes, not by the tensor API


def test_every_nondiff_op_is_listed():
    nondiff = {n for n, op in all_ops().items() if op.has(NONDIFF)}
    assert nondiff == set(_nondiff_cases()) | IR_ONLY


@pytest.mark.parametrize("name", sorted(_nondiff_cases()))
def test_nondiff_op_records_no_graph(name):
    with record_ops() as seen:
        y = _nondiff_cases()[name]()
    assert name in seen
    assert y.grad_fn is None and not y.requires_grad


def test_constant_is_not_an_eager_op():
    from gradc.ops import apply
    with pytest.raises(TypeError, match="expected at least one tensor input"):
        apply("constant", value=1.0, shape=[1], dtype="float64")


def test_gradcheck_detects_a_wrong_gradient():
    """The checkers are not vacuous: a function whose graph hides a dependency fails both."""
    x = T(np.array([0.5, 1.5, -2.0]))
    with pytest.raises(RuntimeError, match="Jacobian mismatch"):
        gradcheck(lambda a: a * a.detach(), (x,))
    with pytest.raises(RuntimeError, match="Jacobian mismatch"):
        gradgradcheck(lambda a: (a * a).detach().requires_grad_() * a, (x,))
    assert gradcheck(lambda a: a * a.detach(), (x,), raise_exception=False) is False
