"""Special functions as table ops (``torch.special`` and its top-level names): erfc, erfcx,
lgamma, digamma, polygamma, the Hurwitz zeta function, entr, ndtri, log_ndtr, xlogy, xlog1py and the
modified Bessel functions i0, i0e, i1, i1e.

NumPy has none of these, so each NumPy reference is written here, vectorised, in float64
(float32 results are rounded from it), with PyTorch's values at poles, infinities and NaN.
Every VJP is written in the same table ops (digamma's is polygamma(1), polygamma(n)'s is
polygamma(n + 1), i0's is i1, ...), so second derivatives are the rules run again. None of
them has a kernel lowering: under ``@gradc.compile`` they run their NumPy reference between
kernels, as erfinv does.
"""
from __future__ import annotations

import math

import numpy as np

from .elementwise import _binary, _unary
from .registry import NoDerivative
from .rules import scalar_mul, unbroadcast

_INV_SQRT_PI = 0.5641895835477563
_TWO_OVER_SQRT_PI = 1.1283791670955126
_SQRT2 = 1.4142135623730951
_SQRT1_2 = 0.7071067811865476
_INV_SQRT_2PI = 0.3989422804014327


def _f64(x):
    return np.asarray(x, dtype=np.float64)


def _per_element(fn):
    """``fn`` (a float -> float of Python's math module) over an array, in float64."""
    ufunc = np.frompyfunc(fn, 1, 1)

    def run(x):
        x64 = _f64(x)
        return np.asarray(ufunc(x64), dtype=np.float64).reshape(x64.shape)
    return run


def _in_dtype(fn):
    """A reference computed in float64 and returned in its input's dtype."""
    def forward(x, *rest, **attrs):
        return np.asarray(fn(_f64(x), *(_f64(r) for r in rest), **attrs)).astype(x.dtype, copy=False)
    forward.__name__ = fn.__name__
    return forward


# ---- erfc and erfcx ----------------------------------------------------------------------------
_erfc = _per_element(math.erfc)


def _erfcx(x):
    """exp(x^2) erfc(x): the product below 26 (erfc is still normal there); above it, the
    asymptotic series 1 / (x sqrt(pi)) * sum_k (-1)^k (2k-1)!! / (2x^2)^k (terms below 1e-19)."""
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        small = np.minimum(x, 26.0)
        direct = np.exp(small * small) * _erfc(small)
        big = np.maximum(x, 26.0)
        inv = 1.0 / (2.0 * big * big)
        term, total = np.ones_like(big), np.ones_like(big)
        for k in range(1, 9):
            term = -term * (2 * k - 1) * inv
            total = total + term
        tail = np.where(big == np.inf, 0.0, total * _INV_SQRT_PI / big)
    return np.where(x < 26.0, direct, tail)


def _erfc_vjp(ctx, g):
    x = ctx.input(0)
    return [scalar_mul((-x ** 2).exp(), -_TWO_OVER_SQRT_PI) * g[0]]     # (PyTorch's spelling)


def _erfcx_vjp(ctx, g):
    """PyTorch's: (2 x erfcx(x) - 2 / sqrt(pi)) g."""
    return [g[0] * (2 * ctx.input(0) * ctx.output(0) - _TWO_OVER_SQRT_PI)]


_unary("erfc", _in_dtype(_erfc), _erfc_vjp, saves=("in0",))
_unary("erfcx", _in_dtype(_erfcx), _erfcx_vjp, saves=("in0", "out0"), node_name="SpecialErfcxBackward0")


# ---- lgamma, digamma, polygamma, zeta -------------------------------------------------------------
def _lgamma_scalar(v):
    try:
        return math.lgamma(v)
    except (ValueError, OverflowError):    # the poles 0, -1, -2, ... and huge arguments
        return math.inf


_lgamma = _per_element(_lgamma_scalar)

# psi(x) ~ log x - 1/(2x) - sum_k B_2k / (2k x^2k), k = 1..7 (B_2k the Bernoulli numbers)
_DIGAMMA_SERIES = (1 / 12, -1 / 120, 1 / 252, -1 / 240, 1 / 132, -691 / 32760, 1 / 12)


def _digamma(x):
    """PyTorch's digamma: -inf at +0 and +inf at -0, NaN at the negative integers and -inf,
    the reflection psi(1 - x) - pi / tan(pi frac(x)) below 0, the recurrence up to 10 and the
    asymptotic series above it."""
    with np.errstate(all="ignore"):
        negative = x < 0
        frac = x - np.trunc(x)
        reflect = np.where(negative, math.pi / np.tan(math.pi * frac), 0.0)
        y = np.where(negative, 1.0 - x, x)
        result = np.zeros_like(y)
        for _ in range(10):
            low = y < 10
            result = result - np.where(low, 1.0 / np.where(low, y, 1.0), 0.0)
            y = np.where(low, y + 1.0, y)
        z = 1.0 / (y * y)
        series = z * np.polyval(_DIGAMMA_SERIES[::-1], z)
        value = result + np.log(y) - 0.5 / y - np.where(y < 1e17, series, 0.0) - reflect
        value = np.where(negative & (x == np.trunc(x)), np.nan, value)
        return np.where(x == 0, np.copysign(np.inf, -x), value)


# psi'(x) ~ 1/x + 1/(2x^2) + sum_k B_2k / x^(2k+1), k = 1..8
_TRIGAMMA_SERIES = (1 / 6, -1 / 30, 1 / 42, -1 / 30, 5 / 66, -691 / 2730, 7 / 6, -3617 / 510)


def _trigamma(x):
    """psi'(x): below 1/2 the reflection pi^2 / sin^2(pi x) - psi'(1 - x) (sin of the fractional
    part, so that it stays exact next to the poles, which give inf), the recurrence up to 10 and
    the asymptotic series above it. PyTorch's (six recurrence steps, four terms) is off by up to
    about 5e-10 relative near 1; this is within a few ulp."""
    with np.errstate(all="ignore"):
        reflect = x < 0.5
        sin_pi_x = np.sin(math.pi * (x - np.trunc(x)))
        mirror = np.where(reflect, (math.pi * math.pi) / (sin_pi_x * sin_pi_x), 0.0)
        y = np.where(reflect, 1.0 - x, x)
        result = np.zeros_like(y)
        for _ in range(10):
            low = y < 10
            result = result + np.where(low, 1.0 / np.where(low, y * y, 1.0), 0.0)
            y = np.where(low, y + 1.0, y)
        z = 1.0 / (y * y)
        result = result + (1.0 + 0.5 / y + z * np.polyval(_TRIGAMMA_SERIES[::-1], z)) / y
        return np.where(reflect, mirror - result, result)


# Euler-Maclaurin tail of the Hurwitz zeta sum: B_2j / (2j)!, j = 1..12
_ZETA_TAIL = tuple(b / math.factorial(2 * j) for j, b in enumerate(
    (1 / 6, -1 / 30, 1 / 42, -1 / 30, 5 / 66, -691 / 2730, 7 / 6, -3617 / 510, 43867 / 798,
     -174611 / 330, 854513 / 138, -236364091 / 2730), start=1))
_ZETA_DIRECT_TERMS = 9


def _zeta(s, q):
    """The Hurwitz zeta function sum_k (q + k)^-s (PyTorch's special.zeta, Cephes' method): the
    terms up to q + k > 9 (at least nine) summed directly, then the Euler-Maclaurin tail. inf at
    s == 1 and at the non-positive integers q; NaN for s < 1, and for q < 0 with s not an integer."""
    s, q = np.broadcast_arrays(_f64(s), _f64(q))
    with np.errstate(all="ignore"):
        needed = np.where(np.isfinite(q), np.maximum(_ZETA_DIRECT_TERMS, np.ceil(9.0 - q)), _ZETA_DIRECT_TERMS)
        steps = int(needed.max(initial=0))
        a = q.copy()
        total = a ** -s
        for k in range(1, steps + 1):
            a = np.where(k <= needed, a + 1.0, a)
            total = total + np.where(k <= needed, a ** -s, 0.0)
        w = a
        b = w ** -s
        total = total + b * w / (s - 1.0) - 0.5 * b
        rising = np.ones_like(s)
        k = 0.0
        for coeff in _ZETA_TAIL:
            rising = rising * (s + k)
            b = b / w
            total = total + rising * b * coeff
            k += 1.0
            rising = rising * (s + k)
            b = b / w
            k += 1.0
        total = np.where(s == 1.0, np.inf, np.where(s < 1.0, np.nan, total))
        pole = (q <= 0) & (q == np.floor(q))
        total = np.where(pole & (s >= 1.0), np.inf, total)
        return np.where((q < 0) & ~pole & (s != np.floor(s)), np.nan, total)


def _polygamma(x, n):
    if n == 0:
        return _digamma(x)
    if n == 1:
        return _trigamma(x)
    sign = 1.0 if n % 2 else -1.0
    with np.errstate(all="ignore"):
        return sign * math.factorial(n) * _zeta(float(n + 1), x)


def _apply_polygamma(x, n):
    from ..tensor_api import apply
    return apply("digamma", x) if n == 0 else apply("polygamma", x, n=n)


_unary("lgamma", _in_dtype(_lgamma),
       lambda ctx, g: [g[0] * _apply_polygamma(ctx.input(0), 0)], saves=("in0",))
_unary("digamma", _in_dtype(_digamma),
       lambda ctx, g: [g[0] * _apply_polygamma(ctx.input(0), 1)], saves=("in0",))
_unary("polygamma", _in_dtype(_polygamma),
       lambda ctx, g: [g[0] * _apply_polygamma(ctx.input(0), ctx.attrs["n"] + 1)], saves=("in0",), attr_names=("n",))


def _zeta_vjp(ctx, g):
    """d/dq zeta(s, q) = -s zeta(s + 1, q); PyTorch has no derivative in s either."""
    from ..tensor_api import apply
    if ctx.needs_input_grad[0]:
        raise NoDerivative("the derivative for 'zeta' is not implemented.")
    s, q = ctx.input(0), ctx.input(1)
    return [None, unbroadcast(g[0] * (-s * apply("zeta", s + 1, q)), ctx.input_types[1].shape)]


_binary("zeta", _in_dtype(_zeta), _zeta_vjp, saves=("in0", "in1"), node_name="SpecialZetaBackward0")


# ---- entr, ndtri, log_ndtr, xlog1py ---------------------------------------------------------------
def _entr(x):
    with np.errstate(all="ignore"):
        return np.where(x > 0, -x * np.log(np.where(x > 0, x, 1.0)), np.where(x == 0, 0.0, np.where(x < 0, -np.inf, x)))


def _erfcinv_pair(a, c):
    """y with erf(y) = a and erfc(y) = c = 1 - a for 0 <= a <= 1, where ``c`` is exact (not 1 - a
    rounded): Giles' approximation (made for float32; sqrt(-log c - log(sqrt(pi) y)) beyond
    it, from w = 25 on), then Newton on erf(y) = a near 0 and on log(erfc(y)) = log(erfcx(y)) - y^2 = log(c) in
    the tail, which keeps full precision down to the smallest c."""
    from .elementwise import _ERFINV_CENTRAL, _ERFINV_TAIL, _erf_f64
    with np.errstate(all="ignore"):
        w = -np.log(c * (1.0 + a))
        p = np.where(w < 5.0, np.polyval(_ERFINV_CENTRAL, w - 2.5), np.polyval(_ERFINV_TAIL, np.sqrt(w) - 3.0)) * a
        log_c = np.log(c)
        rough = np.sqrt(-log_c)
        p = np.where(w > 25.0, np.sqrt(-log_c - np.log(math.sqrt(math.pi) * rough)), p)
        ok = (c > 0) & (a >= 0)
        y = np.where(ok, p, 0.0)
        big = a > 0.5
        for _ in range(4):
            scaled = _erfcx(y)
            tail_step = (np.log(scaled) - y * y - log_c) * scaled
            near_step = (a - np.asarray(_erf_f64(y), np.float64)) * np.exp(y * y)
            y = np.where(ok, y + np.where(big, tail_step, near_step) * (math.sqrt(math.pi) / 2), y)
        return np.where(c == 0, np.inf, np.where(ok, y, np.nan))


def _ndtri(p):
    """The standard normal quantile, sqrt(2) * erfinv(2p - 1), computed from the smaller tail so
    that tiny p keeps its precision: -inf at 0, inf at 1, NaN outside [0, 1]."""
    with np.errstate(all="ignore"):
        lower = p < 0.5
        c = np.where(lower, 2.0 * p, 2.0 * (1.0 - p))         # 1 - p is exact for p >= 1/2
        y = _erfcinv_pair(1.0 - c, c) * _SQRT2
        y = np.where(lower, -y, y)
        return np.where((p < 0) | (p > 1) | np.isnan(p), np.nan, y)


def _log_ndtr(x):
    """log of the standard normal CDF: log(erfcx(-x / sqrt 2) / 2) - x^2 / 2 below -1 (no
    underflow), log1p(-erfc(x / sqrt 2) / 2) above."""
    with np.errstate(all="ignore"):
        low = np.minimum(x, -1.0)
        high = np.maximum(x, -1.0)
        lower = np.log(_erfcx(-low * _SQRT1_2) / 2.0) - low * low / 2.0
        upper = np.log1p(-_erfc(high * _SQRT1_2) / 2.0)
        return np.where(x < -1.0, lower, upper)


def _xlog1py(x, y):
    with np.errstate(all="ignore"):
        return np.where((x == 0) & ~np.isnan(y), 0.0, x * np.log1p(y))


def _log_ndtr_vjp(ctx, g):
    """PyTorch's: g / sqrt(2 pi) * exp(-(log_ndtr(x) + x^2 / 2))."""
    x = ctx.input(0)
    return [g[0] * (_INV_SQRT_2PI * (-(ctx.output(0) + x * x / 2)).exp())]


def _xlog1py_vjp(ctx, g):
    """PyTorch's: xlog1py(x != 0, y) for x, x / (y + 1) for y."""
    from ..tensor_api import apply
    x, y = ctx.input(0), ctx.input(1)
    sx, sy = ctx.input_types[0].shape, ctx.input_types[1].shape
    gx = unbroadcast(g[0] * apply("xlog1py", (x != 0).to(x.dtype), y), sx) if ctx.needs_input_grad[0] else None
    gy = unbroadcast(g[0] * x / (y + 1), sy) if ctx.needs_input_grad[1] else None
    return [gx, gy]


_unary("entr", _in_dtype(_entr), lambda ctx, g: [g[0] * -(1 + ctx.input(0).log())], saves=("in0",),
       node_name="SpecialEntrBackward0")
_unary("ndtri", _in_dtype(_ndtri),
       lambda ctx, g: [g[0] * (math.sqrt(2 * math.pi) * (ctx.output(0) * ctx.output(0) / 2).exp())],
       saves=("out0",), node_name="SpecialNdtriBackward0")
_unary("log_ndtr", _in_dtype(_log_ndtr), _log_ndtr_vjp, saves=("in0", "out0"), node_name="SpecialLogNdtrBackward0")
_binary("xlog1py", _in_dtype(_xlog1py), _xlog1py_vjp, saves=("in0", "in1"), node_name="SpecialXlog1PyBackward0")


def _xlogy(x, y):
    with np.errstate(all="ignore"):
        return np.where((x == 0) & ~np.isnan(y), 0.0, x * np.log(y))


def _xlogy_vjp(ctx, g):
    """PyTorch's: xlogy(g, y) for x, 0 where x == 0 and y <= 0; g x / y for y."""
    from ..tensor_api import apply, where
    x, y = ctx.input(0), ctx.input(1)
    sx, sy = ctx.input_types[0].shape, ctx.input_types[1].shape
    gx = gy = None
    if ctx.needs_input_grad[0]:
        gx = unbroadcast(where((x == 0) & (y <= 0), 0.0, apply("xlogy", g[0], y)), sx)
    if ctx.needs_input_grad[1]:
        gy = unbroadcast(g[0] * x / y, sy)
    return [gx, gy]


_binary("xlogy", _in_dtype(_xlogy), _xlogy_vjp, saves=("in0", "in1"), node_name="XlogyBackward0")


def _logit(x, eps=None):
    with np.errstate(all="ignore"):
        if eps is not None:
            x = np.clip(x, eps, 1 - eps)
        return np.log(x / (1 - x))


def _logit_vjp(ctx, g):
    """PyTorch's logit_backward: g / (x (1 - x)); NaN outside [0, 1] without ``eps``, 0 outside
    [eps, 1 - eps] with it (where the clamp holds the input)."""
    from ..tensor_api import where
    x, eps = ctx.input(0), ctx.attrs.get("eps")
    slope = g[0] / (x * (1 - x))
    if eps is None:
        return [where((x < 0) | (x > 1), float("nan"), slope)]
    return [where((x < eps) | (x > 1 - eps), 0.0, slope)]


_unary("logit", _in_dtype(_logit), _logit_vjp, saves=("in0",), node_name="LogitBackward0", attr_names=("eps",))


# ---- modified Bessel functions of the first kind, orders 0 and 1 ----------------------------------
_BESSEL_SERIES_LIMIT = 30.0


def _bessel_i_scaled(x, order):
    """exp(-|x|) I_order(|x|) for order 0 or 1: the power series sum (x/2)^(2k+order) / (k! (k+order)!)
    up to |x| = 30 (positive terms, so no cancellation), the asymptotic series
    1/sqrt(2 pi x) sum_k (-1)^k prod_j (4 order^2 - (2j-1)^2) / (k! (8x)^k) above (its smallest term
    there is far below float64's precision)."""
    a = np.abs(x)
    with np.errstate(all="ignore"):
        small = np.minimum(a, _BESSEL_SERIES_LIMIT)
        quarter = small * small / 4.0
        term = (small / 2.0) ** order
        total = term.copy()
        for k in range(1, 90):
            term = term * quarter / (k * (k + order))
            total = total + term
        series = total * np.exp(-small)
        big = np.maximum(a, _BESSEL_SERIES_LIMIT)
        mu = 4.0 * order * order
        term, asym = np.ones_like(big), np.ones_like(big)
        for k in range(1, 40):
            term = -term * (mu - (2 * k - 1) ** 2) / (k * 8.0 * big)
            asym = asym + term
        asym = np.where(big == np.inf, 0.0, asym / np.sqrt(2.0 * math.pi * big))
        return np.where(a <= _BESSEL_SERIES_LIMIT, series, asym)


def _i0e(x):
    return _bessel_i_scaled(x, 0)


def _i1e(x):
    return np.copysign(_bessel_i_scaled(x, 1), x)


def _i0(x):
    """exp(|x|) i0e(x): inf above about 713, and NaN at +-inf (0 * inf, as PyTorch's)."""
    with np.errstate(over="ignore", invalid="ignore"):
        return _i0e(x) * np.exp(np.abs(x))


def _i1(x):
    with np.errstate(over="ignore", invalid="ignore"):
        return _i1e(x) * np.exp(np.abs(x))


def _apply(name, x):
    from ..tensor_api import apply
    return apply(name, x)


def _i1_derivative(x, i0, i1):
    """i1'(x) = i0(x) - i1(x) / x, 1/2 at 0."""
    from ..tensor_api import where
    zero = x == 0
    return where(zero, 0.5, i0 - i1 / where(zero, 1.0, x))


def _i1e_vjp(ctx, g):
    """i1e'(x) = i0e(x) - i1e(x) (sign(x) + 1/x), 1/2 at 0."""
    from ..tensor_api import where
    x, y = ctx.input(0), ctx.output(0)
    zero = x == 0
    return [g[0] * where(zero, 0.5, _apply("i0e", x) - y * (x.sign() + 1 / where(zero, 1.0, x)))]


_unary("i0", _in_dtype(_i0), lambda ctx, g: [g[0] * _apply("i1", ctx.input(0))], saves=("in0",))
_unary("i0e", _in_dtype(_i0e), lambda ctx, g: [g[0] * (_apply("i1e", ctx.input(0)) - ctx.input(0).sign() * ctx.output(0))],
       saves=("in0", "out0"), node_name="SpecialI0EBackward0")
_unary("i1", _in_dtype(_i1), lambda ctx, g: [g[0] * _i1_derivative(ctx.input(0), _apply("i0", ctx.input(0)), ctx.output(0))],
       saves=("in0", "out0"), node_name="SpecialI1Backward0")
_unary("i1e", _in_dtype(_i1e), _i1e_vjp, saves=("in0", "out0"), node_name="SpecialI1EBackward0")
