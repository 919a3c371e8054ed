"""Coefficients of gradc's erf (``gradc/codegen/llvm_math.py``), fitted against mpmath.

    python tools/fit_erf.py        (needs mpmath, which PyTorch's sympy brings along)

erf(a) for a = |x| (erf is odd) in three pieces, in float64:

* a < 1: ``a * T(a*a)``, the Taylor series of erf(a)/a in a*a (18 terms: the first term
  left out is below 1e-17 for a*a <= 1);
* 1 <= a < 2.5: ``1 - exp(-a*a) * P(u)``, u = (a - 1.75) / 0.75 in [-1, 1];
* 2.5 <= a < 6: ``1 - exp(-a*a) * Q(v)``, v the map of 1/a from [1/6, 1/2.5] to [-1, 1];
* a >= 6: 1 (erfc(6) is 2e-17, below half an ulp of 1).

P and Q fit erfcx(a) = exp(a*a) * erfc(a) by least squares on 300 Chebyshev nodes, degrees
16 and 10, converted to the power basis in u and v.  Printed: the coefficient lists and the
largest error of the three pieces against mpmath on a dense grid, in ulp of erf(a).
"""
import mpmath
import numpy as np
from numpy.polynomial import chebyshev

mpmath.mp.dps = 40
SPLIT, CUT = 2.5, 6.0


def erfcx(a):
    return mpmath.erfc(a) * mpmath.exp(a * a)


def taylor(n_terms=18):
    return [float(2 / mpmath.sqrt(mpmath.pi) * (-1) ** k / (mpmath.factorial(k) * (2 * k + 1)))
            for k in range(n_terms)]


def fit(lo, hi, degree, to_var):
    """Power-basis coefficients in the variable that maps to_var(a) from [lo, hi] to [-1, 1]."""
    wlo, whi = sorted((to_var(lo), to_var(hi)))
    nodes = np.cos(np.pi * (np.arange(300) + 0.5) / 300)
    ws = wlo + (whi - wlo) * (nodes + 1) / 2
    a_of_w = {"a": lambda w: w, "1/a": lambda w: 1 / w}[to_var.__name__]
    ys = np.array([float(erfcx(mpmath.mpf(a_of_w(w)))) for w in ws])
    return [float(c) for c in chebyshev.cheb2poly(chebyshev.chebfit(nodes, ys, degree))], (wlo, whi)


def a(x):
    return x


a.__name__ = "a"


def inv(x):
    return 1 / x


inv.__name__ = "1/a"


def main():
    t = taylor()
    p, _ = fit(1.0, SPLIT, 16, a)
    q, (wlo, whi) = fit(SPLIT, CUT, 10, inv)
    print("TAYLOR =", t)
    print("P =", p)
    print("Q =", q, " # v = (1/a -", wlo, ") *", 2 / (whi - wlo), "- 1")
    xs = np.linspace(0, CUT, 20001)
    worst = 0.0
    for x in xs:
        if x < 1:
            got = x * np.polyval(t[::-1], x * x)
        elif x < SPLIT:
            got = 1 - np.exp(-x * x) * np.polyval(p[::-1], (x - 1.75) / 0.75)
        else:
            got = 1 - np.exp(-x * x) * np.polyval(q[::-1], (1 / x - wlo) * 2 / (whi - wlo) - 1)
        want = float(mpmath.erf(x))
        if want:
            worst = max(worst, abs(got - want) / np.spacing(want))
    print(f"largest error on [0, {CUT}]: {worst:.2f} ulp (NumPy float64 evaluation)")


if __name__ == "__main__":
    main()
