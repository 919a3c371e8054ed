"""Coefficients of gradc's f32 tan (``_TAN_F32`` in ``gradc/codegen/llvm_math.py``), fitted against mpmath.

    python tools/fit_tan.py        (needs mpmath, which PyTorch's sympy brings along)

tan(r) = r + r^3 T(r^2) for the reduced argument |r| <= 0.79 (pi/4, and the few thousandths the
f32 quadrant's rounding adds).  T fits (tan r - r) / r^3 in z = r^2 by least squares on 400
Chebyshev nodes of [0, 0.79^2], weighted by r^3 / tan r (T's share of tan r: its relative error
counts that much), degree 6, converted to the power basis in z.  Printed: the coefficient list and
the largest relative error of r + r^3 T(r^2) against mpmath on a dense grid (before f32 rounding).
"""
import mpmath
import numpy as np
from numpy.polynomial import Polynomial, chebyshev

mpmath.mp.dps = 40
R_MAX = 0.79
DEGREE = 6


def t_exact(z):
    r = mpmath.sqrt(mpmath.mpf(z))
    return (mpmath.tan(r) - r) / r ** 3 if r else mpmath.mpf(1) / 3


def fit(degree=DEGREE, n=400):
    """Power-basis coefficients of T in z."""
    z_max = R_MAX ** 2
    nodes = np.cos(np.pi * (np.arange(n) + 0.5) / n)
    zs = z_max * (nodes + 1) / 2
    rs = np.sqrt(zs)
    weights = np.maximum(rs ** 3 / np.tan(rs), 1e-3)
    cheb = chebyshev.chebfit(nodes, [float(t_exact(z)) for z in zs], degree, w=weights)
    in_nodes = Polynomial(chebyshev.cheb2poly(cheb))
    return [float(c) for c in in_nodes(Polynomial([-1, 2 / z_max])).coef]


def main():
    coeffs = fit()
    print("_TAN_F32 =", coeffs)
    rs = np.linspace(1e-6, R_MAX, 4001)
    approx = rs + rs ** 3 * Polynomial(coeffs)(rs * rs)
    exact = np.array([float(mpmath.tan(mpmath.mpf(r))) for r in rs])
    print(f"largest relative error: {np.max(np.abs(approx - exact) / exact):.3g}")


if __name__ == "__main__":
    main()
