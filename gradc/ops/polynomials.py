"""The orthogonal polynomials of ``torch.special`` as table ops: chebyshev_polynomial_t/u/v/w,
their shifted forms, hermite_polynomial_h/he, laguerre_polynomial_l and legendre_polynomial_p,
each a function of ``(x, n)``.

The NumPy references are PyTorch's kernels (ATen's ``native/Math.h``) run element by element in
the operands' own dtype (float32 stays float32, as PyTorch computes it): ``n`` is truncated to an
integer (a non-finite one counts as negative), a negative ``n`` gives 0, and the three-term
recurrence stops early once it is NaN. The Chebyshev polynomials take their closed forms
(cos(n acos x), ...) inside (-1, 1) for large ``n``, as PyTorch's do. PyTorch defines no
derivative for any of them: the results never require grad (the ops are NONDIFF).
"""
from __future__ import annotations

import math

import numpy as np

from .registry import ELEMENTWISE, NONDIFF, PURE, defop
from .rules import elementwise_rule, not_implemented_for
from .. import dtypes


def _degree(n) -> int:
    """``static_cast<int64_t>(n)``: truncation; NaN, infinities and out-of-range values give a
    negative degree (x86's integer indefinite), hence a zero polynomial."""
    n = float(n)
    if not math.isfinite(n) or abs(n) >= 2.0 ** 63:
        return -1
    return int(n)


def _recurrence(two_x, p, q, n, first=2):
    """q_k = two_x q_{k-1} - q_{k-2} for k = first..n, stopping once q is NaN (PyTorch's loop)."""
    r = q
    k = first
    while k <= n and not np.isnan(q):
        r = two_x * q - p
        p, q = q, r
        k += 1
    return r


def _signed(T, n, value):
    """value for an even n, -value for an odd one."""
    return T(value) if n % 2 == 0 else T(-value)


class _Chebyshev:
    """One Chebyshev kind as PyTorch's kernels compute it: its values at 1 and -1, its first
    polynomial, and the closed form it takes inside (-1, 1) above a degree (whose fallback,
    where its denominator is degenerate, ``closed`` also gives)."""

    def __init__(self, at_one, at_minus_one, first, closed):
        self.at_one, self.at_minus_one, self.first, self.closed = at_one, at_minus_one, first, closed

    def series(self, y, n):
        T = type(y)
        if n == 0:
            return T(1.0)
        first = self.first(y)
        return first if n == 1 else _recurrence(y + y, T(1.0), first, n)

    def unshifted(self, closed_from):
        def forward(x, n):
            T = type(x)
            if n < 0:
                return T(0.0)
            if abs(x) == 1:
                return T(self.at_one(n)) if x > 0 else T(self.at_minus_one(n))
            if n > closed_from and abs(x) < 1:
                return T(self.closed(x, n, False))
            return self.series(x, n)
        return forward

    def shifted(self, closed_from):
        """At 2x - 1, with PyTorch's tests at x == 1 and x == 0 rather than at 2x - 1 == +-1."""
        def forward(x, n):
            T = type(x)
            if n < 0:
                return T(0.0)
            if x == 1:
                return T(self.at_one(n))
            if x == 0:
                return T(self.at_minus_one(n))
            y = x + x - T(1.0)
            if n > closed_from and abs(y) < 1:
                return T(self.closed(y, n, True))
            return self.series(y, n)
        return forward


def _closed_t(y, n, shifted):
    return np.cos(type(y)(n) * np.arccos(y))


def _closed_u(y, n, shifted):
    T = type(y)
    angle = np.arccos(y)
    if np.sin(angle) != 0:
        return np.sin(T(n + 1) * angle) / np.sin(angle)
    return T(n + 1) * np.cos(T(n + 1) * angle) / y


def _closed_v(y, n, shifted):
    T = type(y)
    angle = np.arccos(y)
    if np.sin(angle / T(2.0)) != 1:
        return np.cos((T(n) + T(0.5)) * angle) / np.cos(angle / T(2.0))
    return _signed(T, n, n + n + 1)


def _closed_w(y, n, shifted):
    T = type(y)
    angle = np.arccos(y)
    if np.cos(angle / T(2.0)) != 1:
        return np.sin((T(n) + T(0.5)) * angle) / np.sin(angle / T(2.0))
    if y > 0 and not shifted:          # (PyTorch's shifted W gives +-1 here)
        return T(n + n + 1)
    return _signed(T, n, 1.0)


_T = _Chebyshev(lambda n: 1.0, lambda n: _signed(float, n, 1.0), lambda y: y, _closed_t)
_U = _Chebyshev(lambda n: n + 1, lambda n: _signed(float, n, n + 1), lambda y: y + y, _closed_u)
_V = _Chebyshev(lambda n: 1.0, lambda n: _signed(float, n, n + n + 1), lambda y: y + y - type(y)(1.0), _closed_v)
_W = _Chebyshev(lambda n: n + n + 1, lambda n: _signed(float, n, 1.0), lambda y: y + y + type(y)(1.0), _closed_w)


def _hermite_limit(T):
    return 128 if T is np.float32 else 512


def _hermite_h(x, n):
    T = type(x)
    if n < 0:
        return T(0.0)
    if n == 0:
        return T(1.0)
    if n == 1:
        return x + x
    if n > _hermite_limit(T):
        return T(np.nan)
    p, q, r = T(1.0), x + x, T(0.0)
    for k in range(2, n + n, 2):
        r = (x + x) * q - T(k) * p
        p, q = q, r
    return r


def _hermite_he(x, n):
    T = type(x)
    if n < 0:
        return T(0.0)
    if n == 0:
        return T(1.0)
    if n == 1:
        return x
    if n > _hermite_limit(T):
        return T(np.nan)
    p, q = T(1.0), x
    r = q
    for k in range(1, n):
        r = x * q - T(k) * p
        p, q = q, r
    return r


def _laguerre_l(x, n):
    T = type(x)
    if n < 0:
        return T(0.0)
    if abs(x) == 0:
        return T(1.0)
    if n == 0:
        return T(1.0)
    if n == 1:
        return T(1.0) - x
    p, q = T(1.0), T(1.0) - x
    r = q
    k = 1
    while k < n and not np.isnan(q):
        r = ((T(k + k) + (T(1.0) - x)) * q - T(k) * p) / T(k + 1)
        p, q = q, r
        k += 1
    return r


def _legendre_p(x, n):
    T = type(x)
    if n < 0:
        return T(0.0)
    if abs(x) == 1:
        return T(1.0) if x > 0 or n % 2 == 0 else T(-1.0)
    if n == 0:
        return T(1.0)
    if n == 1:
        return x
    p, q = T(1.0), x
    r = q
    k = 1
    while k < n and not np.isnan(q):
        r = (T(k + k + 1) * x * q - T(k) * p) / T(k + 1)
        p, q = q, r
        k += 1
    return r


def _elementwise(scalar_fn):
    """A reference over broadcast arrays ``x`` and ``n`` (of one floating dtype): ``scalar_fn`` of
    each element of ``x`` (a NumPy scalar of that dtype) and the integer degree."""
    def forward(x, n):
        x, n = np.broadcast_arrays(np.asarray(x), np.asarray(n))
        scalar = x.dtype.type
        out = np.empty(x.shape, dtype=x.dtype)
        flat_x, flat_n, flat_out = x.reshape(-1), n.reshape(-1), out.reshape(-1)
        with np.errstate(all="ignore"):
            for i in range(flat_out.size):
                flat_out[i] = scalar_fn(scalar(flat_x[i]), _degree(flat_n[i]))
        return out
    forward.__name__ = scalar_fn.__name__
    return forward


def float_kernel_rule(name):
    """Broadcast shapes, one floating dtype: PyTorch's CPU kernels have float32 and float64 only."""
    base = elementwise_rule()(name)

    def infer(types, attrs):
        out = base(types, attrs)
        if out[0].dtype not in (dtypes.float32, dtypes.float64):
            raise not_implemented_for(f"{name}_cpu", out[0].dtype)
        return out
    return infer


POLYNOMIALS = {
    "chebyshev_polynomial_t": _T.unshifted(6),
    "chebyshev_polynomial_u": _U.unshifted(8),
    "chebyshev_polynomial_v": _V.unshifted(8),
    "chebyshev_polynomial_w": _W.unshifted(8),
    "shifted_chebyshev_polynomial_t": _T.shifted(6),
    "shifted_chebyshev_polynomial_u": _U.shifted(6),
    "shifted_chebyshev_polynomial_v": _V.shifted(6),
    "shifted_chebyshev_polynomial_w": _W.shifted(4),
    "hermite_polynomial_h": _hermite_h,
    "hermite_polynomial_he": _hermite_he,
    "laguerre_polynomial_l": _laguerre_l,
    "legendre_polynomial_p": _legendre_p,
}

for _name, _fn in POLYNOMIALS.items():
    defop(_name, infer=float_kernel_rule(_name), forward=_elementwise(_fn), traits=frozenset({PURE, ELEMENTWISE, NONDIFF}),
          num_inputs=2)
