"""The Bessel and Airy functions of ``torch.special`` as table ops: bessel_j0/j1/y0/y1,
modified_bessel_i0/i1/k0/k1, scaled_modified_bessel_k0/k1, spherical_bessel_j0 and airy_ai.

The NumPy references are PyTorch's kernels (ATen's ``native/Math.h``: Cephes' rational and
Chebyshev approximations, coefficients in ``cephes_coefficients``), vectorised, computed in the
operand's dtype (float32 stays float32, as PyTorch's CPU kernels compute it). PyTorch defines
no derivative for any of them: the results never require grad (the ops are NONDIFF), and its CPU
kernels exist for float32 and float64 only.
"""
from __future__ import annotations

import math

import numpy as np

from .cephes_coefficients import TABLES
from .polynomials import float_kernel_rule
from .registry import ELEMENTWISE, NONDIFF, PURE, defop

_PI_4 = 0.785398163397448309615660845819875721
_3PI_4 = 2.356194490192344928846982537459627163
_SQRT_2_PI = 0.797884560802865355879892119868763737      # sqrt(2 / pi)
_TWO_OVER_PI = 0.636619772367581343075535053490057448
_INV_SQRT_PI = 5.64189583547756286948e-01


def _table(function, name, dt):
    return np.asarray(TABLES[function][name], dtype=dt)


def _horner(z, coefficients):
    """sum c_i z^(n-i), highest degree first, as PyTorch's loops: r = r * z + c."""
    r = np.zeros_like(z)
    for c in coefficients:
        r = r * z + c
    return r


def _chbevl(y, coefficients):
    """Cephes' Chebyshev series sum' c_i T_i(y / 2), as PyTorch's loop computes it."""
    p = np.zeros_like(y)
    q = np.zeros_like(y)
    a = np.full_like(y, coefficients[0])
    for c in coefficients[1:]:
        p, q = q, a
        a = y * q - p + c
    return y.dtype.type(0.5) * (a - p)


def _asymptotic(function, x, z, phase, sine_first):
    """The large-x form of J and Y: sqrt(2 / (pi x)) (P cos(x - phase) - 5/x Q sin(x - phase))
    (J), or with sin and cos swapped and a plus (Y); P and Q are rational in z."""
    dt = x.dtype
    p = _horner(z, _table(function, "PP", dt)) / _horner(z, _table(function, "PQ", dt))
    q = _horner(z, _table(function, "QP", dt)) / _horner(z, _table(function, "QQ", dt))
    angle = x - dt.type(phase)
    five = dt.type(5.0) / x * q
    if sine_first:
        value = p * np.sin(angle) + five * np.cos(angle)
    else:
        value = p * np.cos(angle) - five * np.sin(angle)
    return value * dt.type(_SQRT_2_PI) / np.sqrt(x)


def _bessel_j0(x):
    x = np.abs(x)
    dt = x.dtype
    small = np.minimum(x, dt.type(5.0))
    zz = small * small
    near = (zz - dt.type(5.78318596294678452118e+00)) * (zz - dt.type(3.04712623436620863991e+01)) \
        * _horner(zz, _table("bessel_j0", "RP", dt)) / _horner(zz, _table("bessel_j0", "RQ", dt))
    near = np.where(small < dt.type(0.00001), dt.type(1.0) - zz / dt.type(4.0), near)
    big = np.maximum(x, dt.type(5.0))
    far = _asymptotic("bessel_j0", big, dt.type(25.0) / (big * big), _PI_4, False)
    return np.where(x <= 5, near, far)


def _bessel_j1(x):
    negative = x < 0
    x = np.abs(x)
    dt = x.dtype
    small = np.minimum(x, dt.type(5.0))
    zz = small * small
    near = _horner(zz, _table("bessel_j1", "RP", dt)) / _horner(zz, _table("bessel_j1", "RQ", dt)) * small \
        * (zz - dt.type(1.46819706421238932572e+01)) * (zz - dt.type(4.92184563216946036703e+01))
    big = np.maximum(x, dt.type(5.0))
    five = dt.type(5.0) / big
    far = _asymptotic("bessel_j1", big, five * five, _3PI_4, False)
    value = np.where(x <= 5, near, far)
    return np.where(negative, -value, value)


def _bessel_y0(x):
    dt = x.dtype
    small = np.clip(x, np.finfo(dt).tiny, dt.type(5.0))
    zz = small * small
    near = _horner(zz, _table("bessel_y0", "YP", dt)) / _horner(zz, _table("bessel_y0", "YQ", dt)) \
        + dt.type(_TWO_OVER_PI) * np.log(small) * _bessel_j0(small)
    big = np.maximum(x, dt.type(5.0))
    far = _asymptotic("bessel_y0", big, dt.type(25.0) / (big * big), _PI_4, True)
    value = np.where(x <= 5, near, far)
    return np.where(x == 0, -np.inf, np.where(x < 0, np.nan, value))


def _bessel_y1(x):
    dt = x.dtype
    small = np.clip(x, np.finfo(dt).tiny, dt.type(5.0))
    zz = small * small
    near = small * (_horner(zz, _table("bessel_y1", "YP", dt)) / _horner(zz, _table("bessel_y1", "YQ", dt))) \
        + dt.type(_TWO_OVER_PI) * (_bessel_j1(small) * np.log(small) - dt.type(1.0) / small)
    big = np.maximum(x, dt.type(5.0))
    five = dt.type(5.0) / big
    far = _asymptotic("bessel_y1", big, five * five, _3PI_4, True)
    value = np.where(x <= 5, near, far)
    return np.where(x == 0, -np.inf, np.where(x < 0, np.nan, value))


def _scaled_i(function, a):
    """exp(-|x|) I(|x|) / |x|^[order 1 below 8]: Cephes' Chebyshev series on [0, 8] and (8, inf)."""
    dt = a.dtype
    small = np.minimum(a, dt.type(8.0))
    near = _chbevl(small / dt.type(2.0) - dt.type(2.0), _table(function, "A", dt))
    big = np.maximum(a, dt.type(8.0))
    far = _chbevl(dt.type(32.0) / big - dt.type(2.0), _table(function, "B", dt)) / np.sqrt(big)
    return near, far


def _modified_bessel_i0(x):
    a = np.abs(x)
    near, far = _scaled_i("modified_bessel_i0", a)
    return np.exp(a) * np.where(a <= 8, near, far)


def _modified_bessel_i1(x):
    a = np.abs(x)
    near, far = _scaled_i("modified_bessel_i1", a)
    value = np.where(a <= 8, near * a * np.exp(a), np.exp(a) * far)
    return np.where(x < 0, -value, value)


def _bessel_k(function, x, scaled):
    """K0 or K1 (times exp(x) when ``scaled``): below 2 from I and a Chebyshev series in x^2,
    above it exp(-x) / sqrt(x) times a Chebyshev series in 8 / x."""
    dt = x.dtype
    small = np.clip(x, np.finfo(dt).tiny, dt.type(2.0))
    series = _chbevl(small * small - dt.type(2.0), _table(function, "A", dt))
    if function == "modified_bessel_k0":
        near = series - np.log(dt.type(0.5) * small) * _modified_bessel_i0(small)
    else:
        near = np.log(dt.type(0.5) * small) * _modified_bessel_i1(small) + series / small
    big = np.maximum(x, dt.type(2.0))
    far = _chbevl(dt.type(8.0) / big - dt.type(2.0), _table(function, "B", dt)) / np.sqrt(big)
    if scaled:
        near = near * np.exp(small)
    else:
        far = np.exp(-big) * far
    value = np.where(x <= 2, near, far)
    return np.where(x == 0, np.inf, np.where(x < 0, np.nan, value))


def _spherical_bessel_j0(x):
    """sin(x) / x, PyTorch's Taylor polynomial below 1/2, 0 at +-inf."""
    dt = x.dtype
    one = dt.type(1.0)
    zz = x * x
    series = one / dt.type(6227020800.0)
    for k in (-39916800.0, 362880.0, -5040.0, 120.0, -6.0):
        series = -one / dt.type(-k) + zz * series if k < 0 else one / dt.type(k) + zz * series
    taylor = one + zz * series
    safe = np.where(np.abs(x) < 0.5, one, x)
    value = np.where(np.abs(x) < 0.5, taylor, np.sin(safe) / safe)
    return np.where(np.isinf(x), dt.type(0.0), value)


def _airy_ai(x):
    """Cephes' airy: an asymptotic form below -2.09 and above 2.09 (alone beyond 8.32), the
    Maclaurin series (summed to machine epsilon) between; 0 above 103.892, NaN at +-inf."""
    dt = x.dtype
    T = dt.type
    with np.errstate(all="ignore"):
        neg = np.minimum(x, T(-2.09))
        z = T(1.0) / (T(-2.0) * neg * np.sqrt(-neg) / T(3.0))
        zz = z * z
        afn = _horner(zz, _table("airy_ai", "AFN", dt)) / _horner(zz, _table("airy_ai", "AFD", dt))
        agn = _horner(zz, _table("airy_ai", "AGN", dt)) / _horner(zz, _table("airy_ai", "AGD", dt))
        t = T(-2.0) * neg * np.sqrt(-neg) / T(3.0) + T(0.25) * T(math.pi)
        negative_side = T(_INV_SQRT_PI) / np.sqrt(np.sqrt(-neg)) * (np.sin(t) * (T(1.0) + zz * afn) - np.cos(t) * (z * agn))
        pos = np.maximum(x, T(2.09))
        zeta = T(2.0) * pos * np.sqrt(pos) / T(3.0)
        inv = T(1.0) / zeta
        ratio = _horner(inv, _table("airy_ai", "AN", dt)) / _horner(inv, _table("airy_ai", "AD", dt))
        positive_side = T(_INV_SQRT_PI) * ratio / (T(2.0) * np.sqrt(np.sqrt(pos)) * np.exp(zeta))
        series = _airy_series(np.clip(x, T(-2.09), T(8.3203353)))
    value = np.where(x < -2.09, negative_side, np.where(x >= 2.09, positive_side, series))
    value = np.where(x > T(103.892), T(0.0), value)
    return np.where(np.isinf(x), T(np.nan), value)


def _airy_series(x):
    """c1 f(x) - c2 g(x), the Maclaurin series of Ai, terms added until |m / f| <= epsilon
    (each element stops on its own, as PyTorch's loop)."""
    T = x.dtype.type
    eps = np.finfo(x.dtype).eps
    f = np.ones_like(x)
    g = x.copy()
    k = np.ones_like(x)
    m = np.ones_like(x)
    n = x.copy()
    z = x * x * x
    going = np.ones(x.shape, dtype=bool)
    while going.any():
        m_next = m * z
        k_next = k + T(1.0)
        m_next = m_next / k_next
        n_next = n * z
        k_next = k_next + T(1.0)
        n_next = n_next / k_next
        m_next = m_next / k_next
        f_next = f + m_next
        k_next = k_next + T(1.0)
        n_next = n_next / k_next
        g_next = g + n_next
        m, k, n, f, g = (np.where(going, new, old) for new, old in
                         ((m_next, m), (k_next, k), (n_next, n), (f_next, f), (g_next, g)))
        going = going & (np.abs(m / f) > eps)
    return T(0.355028053887817239260) * f - T(0.258819403792806798405) * g


def _in_dtype(fn):
    def forward(x):
        x = np.asarray(x)
        with np.errstate(all="ignore"):
            return np.asarray(fn(x), dtype=x.dtype)
    forward.__name__ = fn.__name__
    return forward


FUNCTIONS = {
    "bessel_j0": _bessel_j0,
    "bessel_j1": _bessel_j1,
    "bessel_y0": _bessel_y0,
    "bessel_y1": _bessel_y1,
    "modified_bessel_i0": _modified_bessel_i0,
    "modified_bessel_i1": _modified_bessel_i1,
    "modified_bessel_k0": lambda x: _bessel_k("modified_bessel_k0", x, False),
    "modified_bessel_k1": lambda x: _bessel_k("modified_bessel_k1", x, False),
    "scaled_modified_bessel_k0": lambda x: _bessel_k("modified_bessel_k0", x, True),
    "scaled_modified_bessel_k1": lambda x: _bessel_k("modified_bessel_k1", x, True),
    "spherical_bessel_j0": _spherical_bessel_j0,
    "airy_ai": _airy_ai,
}

for _name, _fn in FUNCTIONS.items():
    defop(_name, infer=float_kernel_rule(_name), forward=_in_dtype(_fn), traits=frozenset({PURE, ELEMENTWISE, NONDIFF}),
          num_inputs=1)
