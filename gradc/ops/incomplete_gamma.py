"""The regularized incomplete gamma functions as table ops: ``igamma`` (P(a, x), torch.igamma and
special.gammainc) and ``igammac`` (Q(a, x) = 1 - P(a, x), torch.igammac and special.gammaincc).

The NumPy reference is PyTorch's kernel (ATen's ``native/Math.h``, from SciPy's and Cephes' igam
and igamc with Boost's Lanczos approximation), run element by element in the operands' dtype
(float16 in float32, as PyTorch's): Temme's uniform asymptotic expansion where a is large and
close to x, the power series of P or of Q, or Legendre's continued fraction of Q. The VJP is
PyTorch's: x^(a-1) e^-x / Gamma(a) for x (negated for Q); PyTorch has no derivative in ``a``.
"""
from __future__ import annotations

import math

import numpy as np

from .cephes_coefficients import IGAM_D, LANCZOS_DENOM, LANCZOS_NUM
from .elementwise import _binary
from .rules import unbroadcast

_MAXITER = 2000


def _constants(T):
    """MACHEP, MAXLOG, BIG and 1/BIG of PyTorch's kernel for float or double."""
    if T is np.float64:
        return 1.11022302462515654042e-16, 7.09782712893383996843e2, 4.503599627370496e15, 2.22044604925031308085e-16
    return 5.9604644775390625e-8, 88.72283905206835, 16777216.0, 5.9604644775390625e-8


def _lgamma(T, a):
    try:
        return T(math.lgamma(float(a)))
    except (ValueError, OverflowError):
        return T(math.inf)


def _ratevl(x, num, denom):
    """num(x) / denom(x), coefficients highest degree first (evaluated in 1/x above 1, as Boost's)."""
    T = type(x)
    if abs(x) > 1:
        y = T(1) / x
        num_ans, denom_ans = T(num[-1]), T(denom[-1])
        for c in reversed(num[:-1]):
            num_ans = num_ans * y + T(c)
        for c in reversed(denom[:-1]):
            denom_ans = denom_ans * y + T(c)
        return x ** T(len(denom) - len(num)) * num_ans / denom_ans
    num_ans, denom_ans = T(num[0]), T(denom[0])
    for c in num[1:]:
        num_ans = num_ans * x + T(c)
    for c in denom[1:]:
        denom_ans = denom_ans * x + T(c)
    return num_ans / denom_ans


def _fac(a, x):
    """x^a e^-x / Gamma(a), by Lanczos' approximation where a and x are close."""
    T = type(a)
    maxlog = _constants(T)[1]
    if abs(a - x) > T(0.4) * abs(a):
        ax = a * np.log(x) - x - _lgamma(T, a)
        return T(0.0) if ax < -maxlog else T(np.exp(ax))
    g = T(6.024680040776729583740234375)
    fac = a + g - T(0.5)
    res = np.sqrt(fac / T(2.718281828459045)) / _ratevl(a, LANCZOS_NUM, LANCZOS_DENOM)
    if a < 200 and x < 200:
        return T(res * np.exp(a - x) * (x / fac) ** a)
    numfac = (x - a - g + T(0.5)) / fac
    return T(res * np.exp(a * (np.log1p(numfac) - numfac) + x * (T(0.5) - g) / fac))


def _p_series(a, x):
    """P(a, x) by DLMF 8.11.4."""
    T = type(a)
    machep = _constants(T)[0]
    ax = _fac(a, x)
    if ax == 0:
        return T(0.0)
    r, c, ans = a, T(1.0), T(1.0)
    for _ in range(_MAXITER):
        r = r + T(1.0)
        c = c * (x / r)
        ans = ans + c
        if c <= machep * ans:
            break
    return T(ans * ax / a)


def _q_series(a, x):
    """Q(a, x) by DLMF 8.7.3, arranged against cancellation."""
    T = type(a)
    machep = _constants(T)[0]
    fac, total = T(1.0), T(0.0)
    for n in range(1, _MAXITER):
        fac = fac * (-x / T(n))
        term = fac / (a + T(n))
        total = total + term
        if abs(term) <= machep * abs(total):
            break
    logx = np.log(x)
    return T(-np.expm1(a * logx - _lgamma(T, T(1) + a)) - np.exp(a * logx - _lgamma(T, a)) * total)


def _asymptotic(a, x, lower):
    """Temme's uniform expansion (DLMF 8.12.3 for P, 8.12.4 for Q) for large a near x."""
    T = type(a)
    machep = _constants(T)[0]
    sgn = -1 if lower else 1
    lam, sigma = x / a, (x - a) / a
    eta = T(0.0)
    if lam != 1:
        eta = np.sqrt(T(-2) * (np.log1p(sigma) - sigma))
        eta = eta if lam > 1 else -eta
    res = T(0.5) * T(math.erfc(float(T(sgn) * eta * np.sqrt(a / T(2)))))
    etapow = [T(1.0)]
    total, afac, old = T(0.0), T(1.0), T(math.inf)
    for row in IGAM_D:
        ck = T(row[0])
        for n in range(1, 25):
            if n >= len(etapow):
                etapow.append(eta * etapow[-1])
            ckterm = T(row[n]) * etapow[n]
            ck = ck + ckterm
            if abs(ckterm) < machep * abs(ck):
                break
        term = ck * afac
        if abs(term) > old:
            break
        total = total + term
        if abs(term) < machep * abs(total):
            break
        old = abs(term)
        afac = afac / a
    two_pi = T(2 * float(np.float32(math.pi)))      # (PyTorch's c10::pi<float>)
    return T(res + T(sgn) * np.exp(T(-0.5) * a * eta * eta) * total / np.sqrt(two_pi * a))


def _q_continued_fraction(a, x):
    """Q(a, x) by Legendre's continued fraction, DLMF 8.9.2."""
    T = type(a)
    machep, _, big, biginv = _constants(T)
    ax = _fac(a, x)
    if ax == 0:
        return T(0.0)
    y = T(1.0) - a
    z = x + y + T(1.0)
    c = T(0.0)
    pkm2, qkm2, pkm1, qkm1 = T(1.0), x, x + T(1.0), z * x
    ans = pkm1 / qkm1
    for _ in range(_MAXITER):
        c, y, z = c + T(1.0), y + T(1.0), z + T(2.0)
        yc = y * c
        pk = pkm1 * z - pkm2 * yc
        qk = qkm1 * z - qkm2 * yc
        t = T(1.0)
        if qk != 0:
            r = pk / qk
            t = abs((ans - r) / r)
            ans = r
        pkm2, pkm1, qkm2, qkm1 = pkm1, pk, qkm1, qk
        if abs(pk) > big:
            pkm2, pkm1, qkm2, qkm1 = pkm2 * T(biginv), pkm1 * T(biginv), qkm2 * T(biginv), qkm1 * T(biginv)
        if t <= machep:
            break
    return T(ans * ax)


def _asymptotic_regime(a, x):
    ratio = abs(x - a) / a
    return (20 < a < 200 and ratio < 0.3) or (a > 200 and ratio < 4.5 / np.sqrt(a))


def _boundary(a, x, lower):
    """PyTorch's (SciPy's) values at the edges of the domain, or None inside it."""
    T = type(a)
    if x < 0 or a < 0 or np.isnan(a) or np.isnan(x):
        return T(np.nan) if (x < 0 or a < 0) else None
    if a == 0:
        return T(np.nan) if x <= 0 else T(1.0 if lower else 0.0)
    if x == 0:
        return T(0.0 if lower else 1.0)
    if np.isinf(a):
        return T(np.nan) if np.isinf(x) else T(0.0 if lower else 1.0)
    if np.isinf(x):
        return T(1.0 if lower else 0.0)
    return None


def _igammac_scalar(a, x):
    T = type(a)
    edge = _boundary(a, x, False)
    if edge is not None:
        return edge
    if _asymptotic_regime(a, x):
        return _asymptotic(a, x, False)
    if x > 1.1:
        return T(1.0) - _p_series(a, x) if x < a else _q_continued_fraction(a, x)
    if x <= 0.5:
        return T(1.0) - _p_series(a, x) if T(-0.4) / np.log(x) < a else _q_series(a, x)
    return T(1.0) - _p_series(a, x) if x * T(1.1) < a else _q_series(a, x)


def _igamma_scalar(a, x):
    T = type(a)
    edge = _boundary(a, x, True)
    if edge is not None:
        return edge
    if _asymptotic_regime(a, x):
        return _asymptotic(a, x, True)
    if x > 1 and x > a:
        return T(1.0) - _igammac_scalar(a, x)
    return _p_series(a, x)


def _elementwise(scalar_fn):
    """``scalar_fn`` over broadcast ``a`` and ``x`` in their dtype (float16 computed in float32)."""
    def forward(a, x):
        a, x = np.broadcast_arrays(np.asarray(a), np.asarray(x))
        work = np.float32 if a.dtype == np.float16 else a.dtype.type
        out = np.empty(a.shape, dtype=work)
        flat_a, flat_x, flat_out = a.reshape(-1), x.reshape(-1), out.reshape(-1)
        with np.errstate(all="ignore"):
            for i in range(flat_out.size):
                flat_out[i] = scalar_fn(work(flat_a[i]), work(flat_x[i]))
        return out.astype(a.dtype, copy=False)
    forward.__name__ = scalar_fn.__name__
    return forward


def _vjp(name, sign):
    def vjp(ctx, g):
        """PyTorch's: +-g exp((a - 1) log x - x - lgamma(a)) for x; no derivative for a."""
        from ..tensor_api import apply
        if ctx.needs_input_grad[0]:
            raise NotImplementedError(f"the derivative for '{name}: input' is not implemented.")
        a, x = ctx.input(0), ctx.input(1)
        density = ((a - 1) * x.log() - x - apply("lgamma", a)).exp()
        return [None, unbroadcast(g[0] * density * sign, ctx.input_types[1].shape)]
    return vjp


_binary("igamma", _elementwise(_igamma_scalar), _vjp("igamma", 1), saves=("in0", "in1"), node_name="IgammaBackward0")
_binary("igammac", _elementwise(_igammac_scalar), _vjp("igammac", -1), saves=("in0", "in1"),
        node_name="IgammacBackward0")
