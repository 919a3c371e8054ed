"""The LLVM-IR math library (llvm_math) against NumPy: accuracy and special values, f32 and f64."""
import math
import re

import numpy as np
import pytest

from gradc.codegen import runtime_cpu
from gradc.codegen.kernel_ir import KernelBuilder

SPECIAL = [0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan, 1e-30, -1e-30, 1e-300, 5e-324, 88.5, -88.5,
           89.0, 104.0, -104.0, 709.0, 710.0, -745.0, -746.0, 1e5, -1e5, 0.1, 0.19999, 0.2, 0.20001]
RANGES = {"exp": (-100, 100), "log": (1e-6, 1e6), "sin": (-1e4, 1e4), "cos": (-1e4, 1e4),
          "tanh": (-12, 12), "sigmoid": (-50, 50)}
REF = {"exp": np.exp, "log": np.log, "sin": np.sin, "cos": np.cos, "tanh": np.tanh,
       "sigmoid": lambda x: 1 / (1 + np.exp(-x)), "log1p": np.log1p, "expm1": np.expm1,
       "erf": lambda x: np.asarray(np.frompyfunc(math.erf, 1, 1)(x), dtype=np.float64)}


def run_unary(op, x, mode="ir"):
    dtype = "f32" if x.dtype == np.float32 else "f64"
    kb = KernelBuilder(f"m_{op}", x.shape)
    v = kb.op(op, kb.load(kb.input("x", dtype, x.shape)))
    kb.store(kb.output("o", dtype, x.shape), v)
    out = np.empty_like(x)
    runtime_cpu.compile_kernel(kb.build(), math_mode=mode)(x, out)
    return out


def max_ulp_err(got, want, dtype):
    want = want.astype(dtype)
    eps = np.finfo(dtype).eps
    scale = np.maximum(np.abs(want), np.finfo(dtype).tiny)
    return np.max(np.abs(got.astype(np.float64) - want.astype(np.float64)) / (scale * eps))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("op", sorted(RANGES))
def test_accuracy(op, dtype):
    rng = np.random.default_rng(0)
    lo, hi = RANGES[op]
    if op == "log":
        x = np.exp(rng.uniform(np.log(lo), np.log(hi), 20000))
    else:
        x = np.concatenate([rng.uniform(lo, hi, 10000), rng.uniform(-2, 2, 10000),
                            rng.uniform(-1e-3, 1e-3, 1000)])
    x = x.astype(dtype)
    with np.errstate(all="ignore"):
        want = REF[op](x.astype(np.float64))
    got = run_unary(op, x)
    with np.errstate(over="ignore"):
        want_t = want.astype(dtype)
    inf = np.isinf(want_t)
    np.testing.assert_array_equal(got[inf], want_t[inf])
    ulps = max_ulp_err(got[~inf], want[~inf], dtype)
    # f32 sin/cos without FMA: the three-part reduction loses a little for |x| up to 1e4
    limit = 8 if op in ("sin", "cos") and dtype == np.float32 and not host_has_fma() else 4
    assert ulps <= limit, f"{op} {np.dtype(dtype).name}: max error {ulps:.1f} ulp"


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("op", sorted(RANGES))
def test_special_values(op, dtype):
    x = np.array(SPECIAL, dtype=dtype)
    with np.errstate(all="ignore"):
        want = REF[op](x.astype(np.float64)).astype(dtype)
    got = run_unary(op, x)
    finite = np.isfinite(want) & (np.abs(want) > np.finfo(dtype).tiny)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want), err_msg=f"{op} NaN pattern {x}")
    np.testing.assert_array_equal(got[np.isinf(want)], want[np.isinf(want)])
    np.testing.assert_allclose(got[finite], want[finite], rtol=4 * np.finfo(dtype).eps)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_pow(dtype):
    rng = np.random.default_rng(1)
    a = np.concatenate([rng.uniform(0, 10, 2000), rng.uniform(-5, 5, 2000),
                        [0, 0, 0, -0.0, 1, 1, -1, -2, -2, np.inf, -np.inf, np.nan, 2, 4, -8]]).astype(dtype)
    b = np.concatenate([rng.uniform(-4, 4, 2000), rng.integers(-4, 5, 2000),
                        [0, 2, -1, 3, np.nan, np.inf, np.inf, 3, 0.5, -1, 3, 0, np.nan, 1e3, 1 / 3]]).astype(dtype)
    kb = KernelBuilder("pow", a.shape)
    dt = "f32" if dtype == np.float32 else "f64"
    v = kb.op("pow", kb.load(kb.input("a", dt, a.shape)), kb.load(kb.input("b", dt, b.shape)))
    kb.store(kb.output("o", dt, a.shape), v)
    out = np.empty_like(a)
    runtime_cpu.compile_kernel(kb.build())(a, b, out)
    with np.errstate(all="ignore"):
        want = np.power(a.astype(np.float64), b.astype(np.float64)).astype(dtype)
    np.testing.assert_array_equal(np.isnan(out), np.isnan(want))
    ok = ~np.isnan(want)
    np.testing.assert_allclose(out[ok], want[ok], rtol=1e-12 if dtype == np.float64 else 2e-7)


@pytest.mark.parametrize("op", ["exp", "log", "sin", "tanh"])
def test_libm_mode_matches(op):
    x = np.linspace(0.01, 5, 1001)
    np.testing.assert_allclose(run_unary(op, x, "libm"), REF[op](x), rtol=1e-15)


def _near_zero_inputs(op, rng):
    """Inputs of log1p, expm1 and erf: the ranges where they matter, and tiny arguments (where
    log(1 + x), exp(x) - 1 and a plain series would lose every digit)."""
    tiny = np.concatenate([rng.uniform(-1e-3, 1e-3, 2000), rng.uniform(-1e-8, 1e-8, 500),
                           np.exp(rng.uniform(-60, -5, 500)) * rng.choice([-1, 1], 500)])
    if op == "log1p":
        wide = np.concatenate([np.exp(rng.uniform(-30, 30, 10000)), -np.exp(rng.uniform(-30, -1e-4, 10000)),
                               rng.uniform(-0.5, 0.5, 5000)])
    elif op == "expm1":
        wide = np.concatenate([rng.uniform(-60, 80, 10000), rng.uniform(-1, 1, 10000)])
    else:
        wide = np.concatenate([rng.uniform(-7, 7, 10000), rng.uniform(-1.2, 1.2, 5000), rng.uniform(2.3, 2.7, 2000)])
    return np.concatenate([wide, tiny])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("op", ["log1p", "expm1", "erf"])
def test_near_zero_functions_accuracy(op, dtype):
    """log1p, expm1 and erf within 2 ulp of NumPy's (erf: Python's math.erf), tiny arguments included."""
    x = _near_zero_inputs(op, np.random.default_rng(3)).astype(dtype)
    want = REF[op](x.astype(np.float64))
    got = run_unary(op, x)
    with np.errstate(over="ignore"):
        inf = np.isinf(want.astype(dtype))
    np.testing.assert_array_equal(got[inf], want.astype(dtype)[inf])
    ulps = max_ulp_err(got[~inf], want[~inf], dtype)
    assert ulps <= 2, f"{op} {np.dtype(dtype).name}: max error {ulps:.2f} ulp"


DOMAIN_REF = {"tan": np.tan, "atan": np.arctan, "asin": np.arcsin, "acos": np.arccos, "sinh": np.sinh,
              "cosh": np.cosh, "asinh": np.arcsinh, "acosh": np.arccosh, "atanh": np.arctanh, "log2": np.log2,
              "log10": np.log10, "exp2": np.exp2}


def _domain_inputs(op, rng):
    """Each function's domain, wide and near its special points (0, +-1, large arguments)."""
    tiny = rng.uniform(-1e-4, 1e-4, 1000)
    if op in ("log2", "log10"):
        return np.concatenate([np.exp(rng.uniform(-745, 709, 20000)), rng.uniform(0.5, 2, 5000)])
    if op == "exp2":
        return np.concatenate([rng.uniform(-1080, 1030, 20000), rng.uniform(-1, 1, 5000), tiny])
    if op in ("asin", "acos", "atanh"):
        edge = 1 - np.exp(rng.uniform(-40, -1, 3000))
        return np.concatenate([rng.uniform(-1, 1, 20000), edge, -edge, tiny])
    if op == "acosh":
        return np.concatenate([1 + np.exp(rng.uniform(-40, 5, 20000)), np.exp(rng.uniform(0, 700, 2000))])
    if op in ("sinh", "cosh"):
        return np.concatenate([rng.uniform(-88, 88, 20000), rng.uniform(-1, 1, 5000), tiny])
    if op == "tan":
        return np.concatenate([rng.uniform(-1e4, 1e4, 20000), rng.uniform(-2, 2, 5000), tiny])
    wide = np.exp(rng.uniform(-40, 300, 3000)) * rng.choice([-1, 1], 3000)
    return np.concatenate([rng.uniform(-1e4, 1e4, 5000), rng.uniform(-3, 3, 20000), wide, tiny])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("op", sorted(DOMAIN_REF))
def test_domain_functions_accuracy(op, dtype):
    """Within 3 ulp of NumPy over each domain; overflow, infinities and NaN where NumPy has them."""
    with np.errstate(over="ignore"):           # f32: the widest inputs become inf
        x = _domain_inputs(op, np.random.default_rng(4)).astype(dtype)
    with np.errstate(all="ignore"):
        want = DOMAIN_REF[op](x.astype(np.float64))
        want_t = want.astype(dtype)
    got = run_unary(op, x)
    finite = np.isfinite(want_t)
    np.testing.assert_array_equal(got[~finite], want_t[~finite])
    ulps = max_ulp_err(got[finite], want[finite], dtype)
    assert ulps <= 3, f"{op} {np.dtype(dtype).name}: max error {ulps:.2f} ulp"


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("op", ["log1p", "expm1", "erf"] + sorted(DOMAIN_REF))
def test_special_values_and_signed_zeros(op, dtype):
    """NumPy's NaN and infinities, within 3 eps elsewhere, and -0.0 kept where NumPy keeps it."""
    x = np.array(SPECIAL + [-1.0, -2.0, 2.0, 0.5, -0.5, 6.0, 5.9, -6.5, 1e-45, 3.0, 2.5, 0.99999,
                            1.5707963267948966], dtype=dtype)
    with np.errstate(all="ignore"):
        want = {**REF, **DOMAIN_REF}[op](x.astype(np.float64)).astype(dtype)
    got = run_unary(op, x)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want), err_msg=f"{op} NaN pattern {x}")
    np.testing.assert_array_equal(got[np.isinf(want)], want[np.isinf(want)])
    finite = np.isfinite(want)
    np.testing.assert_allclose(got[finite], want[finite], rtol=3 * np.finfo(dtype).eps, atol=0)
    np.testing.assert_array_equal(np.signbit(got[want == 0]), np.signbit(want[want == 0]))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_atan2_quadrants_and_special_values(dtype):
    """C's atan2: signed zeros, infinities in every quadrant, NaN; random pairs within 3 ulp."""
    rng = np.random.default_rng(5)
    sy = [0.0, -0.0, 0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.inf, np.inf, 1.0, np.nan, 0.0, 5.0, -5.0, 1e-300,
          1e300, -np.inf, 3.0]
    sx = [0.0, 0.0, -0.0, -0.0, -np.inf, np.inf, 1.0, 1.0, -np.inf, np.inf, np.nan, 1.0, -1.0, 0.0, -0.0, 1e300,
          1e-300, -np.inf, -3.0]
    with np.errstate(over="ignore"):           # f32: 1e300 becomes inf
        y = np.concatenate([rng.standard_normal(20000) * 10, sy]).astype(dtype)
        x = np.concatenate([rng.standard_normal(20000) * 10, sx]).astype(dtype)
    dt = "f32" if dtype == np.float32 else "f64"
    kb = KernelBuilder(f"atan2_{dt}", y.shape)
    v = kb.op("atan2", kb.load(kb.input("y", dt, y.shape)), kb.load(kb.input("x", dt, x.shape)))
    kb.store(kb.output("o", dt, y.shape), v)
    out = np.empty_like(y)
    runtime_cpu.compile_kernel(kb.build())(y, x, out)
    want = np.arctan2(y.astype(np.float64), x.astype(np.float64))
    n = len(sy)
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(out[-n:], want[-n:].astype(dtype))
    np.testing.assert_array_equal(np.signbit(out[-n:]), np.signbit(want[-n:]))
    assert max_ulp_err(out[:-n], want[:-n], dtype) <= 3


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_exact_powers(dtype):
    """log2 of powers of two, log10 of powers of ten and exp2 of integers are exact (rounded from
    float64: NumPy's float32 exp2(127) and log10(100) are one ulp off)."""
    lo, hi = (-149, 127) if dtype == np.float32 else (-1074, 1023)
    k = np.arange(lo, hi + 1).astype(dtype)
    powers = np.ldexp(np.ones(len(k)), np.arange(lo, hi + 1)).astype(dtype)
    np.testing.assert_array_equal(run_unary("log2", powers), k)
    np.testing.assert_array_equal(run_unary("exp2", k), powers)
    tens = np.array([10.0 ** j for j in range(-7 if dtype == np.float32 else -22, 11 if dtype == np.float32 else 23)],
                    dtype=dtype)
    np.testing.assert_array_equal(run_unary("log10", tens), np.log10(tens.astype(np.float64)).astype(dtype))


TRIG = {"sin": np.sin, "cos": np.cos, "tan": np.tan}


def _log_spaced(dtype, n, rng):
    """Magnitudes log-spaced from 1/8 to the largest finite value, both signs, and the edges:
    the largest finite value, powers of two, the switch to the large-argument reduction."""
    top = np.log2(np.finfo(dtype).max)
    mags = 2.0 ** rng.uniform(-3, top, n)
    big = float(np.finfo(dtype).max)
    edges = [big, -big, 2.0 ** 15, -2.0 ** 15, 2.0 ** 15 * (1 - 2.0 ** -24), 2.0 ** 28, 2.0 ** 28 * (1 - 2.0 ** -53),
             1e10, 3e7, 1e20, 1e38, -5e15, 2.0 ** 100, 2.0 ** 127]
    if dtype == np.float64:
        edges += [1e300, 2.0 ** 1023, -1e200, 1e15, 1e22]
    return np.concatenate([mags * rng.choice([-1, 1], n), edges]).astype(dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("op", sorted(TRIG))
@pytest.mark.parametrize("n", [5, 20000])
def test_trig_large_arguments(op, dtype, n):
    """sin/cos/tan over log-spaced magnitudes up to the largest finite value are within 2 ulp of
    NumPy's (tan 3: its r / cos r rounds twice); inf and NaN give NaN.  n = 5: the scalar loop
    (no vector lanes); 20000: vectors whose lanes mix small and large arguments, and a remainder."""
    x = _log_spaced(dtype, 20000, np.random.default_rng(7))[-n:]
    got = run_unary(op, x)
    want = TRIG[op](x.astype(np.float64))
    ulps = max_ulp_err(got, want, dtype)
    assert ulps <= (3 if op == "tan" else 2), f"{op} {np.dtype(dtype).name}: max error {ulps:.2f} ulp"
    # inf and NaN in vectors with large and small lanes (the large branch taken, they keep NaN)
    mixed = np.array([np.inf, 1e30, -np.inf, 0.5, np.nan, -3e7] * 7, dtype=dtype)
    got = run_unary(op, mixed)
    fin = np.isfinite(mixed)
    assert np.isnan(got[~fin]).all()
    assert max_ulp_err(got[fin], TRIG[op](mixed[fin].astype(np.float64)), dtype) <= (3 if op == "tan" else 2)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("op", sorted(TRIG))
def test_trig_near_multiples_of_half_pi(op, dtype):
    """Arguments closest to multiples of pi/2 (the reduction's cancellation), among them f64's worst
    case 6381956970095103 * 2**797 (within 2**-61 of one), against mpmath's exact values."""
    mpmath = pytest.importorskip("mpmath")
    rng = np.random.default_rng(11)
    exps = (0, 20, 60, 100) if dtype == np.float32 else (0, 40, 200, 900)
    with mpmath.workprec(2600):
        xs = [float(mpmath.mpf(int(k)) * 2 ** e * mpmath.pi / 2) for k in rng.integers(1, 2 ** 30, 60) for e in exps]
        xs = np.array(xs + ([16367173 * 2.0 ** 72] if dtype == np.float32 else [6381956970095103 * 2.0 ** 797]))
        with np.errstate(over="ignore"):
            x = xs.astype(dtype)
        x = x[np.isfinite(x)]
        fn = {"sin": mpmath.sin, "cos": mpmath.cos, "tan": mpmath.tan}[op]
        want = np.array([float(fn(mpmath.mpf(float(v)))) for v in x])
    got = run_unary(op, x)
    ulps = np.abs(got - want) / np.spacing(np.abs(want).astype(dtype)).astype(np.float64)
    assert ulps.max() <= (3 if op == "tan" else 2), f"{op}: {ulps.max():.2f} ulp at {x[np.argmax(ulps)]!r}"


def host_has_fma() -> bool:
    from gradc.codegen import llvm_cpu
    return "+fma" in llvm_cpu.host_features().split(",")


def f32_near_half_pi_multiples(top=2.0 ** 16):
    """Every f32 nearest a multiple of pi/2 below ``top`` in magnitude and the two floats either
    side of it, both signs: up to 2**15 the Cody-Waite reduction's cancellation (the closest,
    252.89821, is within 4.2e-9 of 161 pi/2), above it the switch to the Payne-Hanek one."""
    base = (np.arange(1, int(top / (np.pi / 2)) + 1) * (np.pi / 2)).astype(np.float32)
    x = [base]
    for direction in (np.float32(np.inf), np.float32(0)):
        v = base
        for _ in range(2):
            v = np.nextafter(v, direction)
            x.append(v)
    x = np.concatenate(x)
    x = x[x < top]
    return np.concatenate([x, -x])


def trig_ulps(got, want, dtype):
    """(error in ulps of the exact ``want``, error in ulps against ``want`` correctly rounded to
    ``dtype``), per element; an ulp is the spacing of the rounded value."""
    rounded = want.astype(dtype)
    spacing = np.spacing(np.abs(rounded)).astype(np.float64)
    got = got.astype(np.float64)
    return np.abs(got - want) / spacing, np.abs(got - rounded.astype(np.float64)) / spacing


# f32 sin/cos/tan with FMA: within these ulps of the exact value and of the correctly rounded one
# (every f32 below 2**17 checked once against NumPy's f64: sin 1.206, cos 1.205, tan 1.688; 1, 1, 2)
F32_TRIG_ULPS = {"sin": (1.25, 1), "cos": (1.25, 1), "tan": (1.75, 2)}


@pytest.mark.parametrize("op", sorted(TRIG))
def test_f32_trig_near_multiples_of_half_pi_below_the_large_path(op):
    """f32 sin/cos/tan where the Cody-Waite reduction cancels: r + r_lo keeps ~2**-45 of r (the
    three-part reduction it replaces lost the low bits: 600-1900 ulp near k pi), and across the
    switch to the Payne-Hanek reduction at 2**15."""
    if not host_has_fma():
        pytest.skip("the FMA reduction; without FMA test_f32_trig_without_fma covers the fallback")
    x = f32_near_half_pi_multiples()
    exact, rounded = trig_ulps(run_unary(op, x), TRIG[op](x.astype(np.float64)), np.float32)
    bound, bound_rounded = F32_TRIG_ULPS[op]
    assert exact.max() <= bound, f"{op}: {exact.max():.2f} ulp at {x[np.argmax(exact)]!r}"
    assert rounded.max() <= bound_rounded, f"{op}: {rounded.max():.0f} ulp from the rounded value"
    assert op == "cos" or np.array_equal(np.signbit(run_unary(op, -x)), ~np.signbit(run_unary(op, x)))


@pytest.mark.parametrize("op", sorted(TRIG))
def test_f32_trig_random_arguments(op):
    """f32 sin/cos/tan of random arguments below 2**15, small ones, and signed zeros."""
    if not host_has_fma():
        pytest.skip("the FMA reduction; without FMA test_f32_trig_without_fma covers the fallback")
    rng = np.random.default_rng(21)
    x = np.concatenate([rng.uniform(-2.0 ** 15, 2.0 ** 15, 200000), rng.uniform(-4, 4, 100000),
                        np.exp(rng.uniform(-90, 0, 20000)) * rng.choice([-1, 1], 20000)]).astype(np.float32)
    exact, rounded = trig_ulps(run_unary(op, x), TRIG[op](x.astype(np.float64)), np.float32)
    bound, bound_rounded = F32_TRIG_ULPS[op]
    assert exact.max() <= bound and rounded.max() <= bound_rounded, f"{op}: {exact.max():.2f} ulp"
    zeros = run_unary(op, np.array([0.0, -0.0], np.float32))
    want = np.array([1.0, 1.0] if op == "cos" else [0.0, -0.0], np.float32)
    assert np.array_equal(zeros, want) and np.array_equal(np.signbit(zeros), np.signbit(want))


def test_f32_trig_without_fma(monkeypatch):
    """Where ``llvm.fma`` is no instruction the f32 reduction is the three-part one whose first
    product is exact without FMA: a few ulp for random arguments, up to 1.3e-10 absolute near the
    multiples of pi/2 (n times p1 + p2 + p3's distance from pi/2; many ulp there)."""
    from gradc.codegen import llvm_math
    monkeypatch.setattr(llvm_math, "_has_fma", lambda module: False)
    rng = np.random.default_rng(22)
    x = rng.uniform(-1e4, 1e4, 20000).astype(np.float32)
    near = f32_near_half_pi_multiples(2.0 ** 15)
    for op in ("sin", "cos"):
        assert max_ulp_err(run_unary(op, x), TRIG[op](x.astype(np.float64)), np.float32) <= 8
        err = np.abs(run_unary(op, near).astype(np.float64) - TRIG[op](near.astype(np.float64)))
        small = np.abs(TRIG[op](near.astype(np.float64))) < 1e-3
        assert small.sum() > 10000 and err[small].max() < 2e-10


def test_two_over_pi_table():
    """The large-argument reduction's table: 2/pi's bits (mpmath's, and the well-known first words)."""
    from gradc.codegen import llvm_math
    words = llvm_math._TWO_OVER_PI
    assert words[0] == 0 and words[1:3] == [0xA2F9836E4E441529, 0xFC2757D1F534DDC0]
    mpmath = pytest.importorskip("mpmath")
    nbits = 64 * (len(words) - 1)
    with mpmath.workprec(nbits + 64):
        want = int(mpmath.floor(2 / mpmath.pi * mpmath.mpf(2) ** nbits))
    assert sum(w << (64 * (len(words) - 1 - k)) for k, w in enumerate(words)) == want


@pytest.mark.parametrize("op", sorted(TRIG))
def test_f64_trig_near_multiples_of_half_pi_below_the_large_path(op):
    """f64 sin/cos/tan near the multiples of pi/2 below 2**28, where the three-part reduction of
    33-bit parts was up to 250 ulp off (r's rounding before n * p3 was taken off): with FMA r +
    r_lo, within an ulp of NumPy's (tan 2)."""
    if not host_has_fma():
        pytest.skip("the FMA reduction")
    rng = np.random.default_rng(23)
    k = np.concatenate([np.arange(1, 20001), rng.integers(1, int(2.0 ** 28 / (np.pi / 2)), 200000)])
    base = k * (np.pi / 2)
    # among 25M floats next to multiples, the ones the three-part reduction missed by 9-250 ulp
    found = [94433543.55209689, 146355347.48393348, 85023479.2405206, 21255869.81013015, 125099477.67380333,
             51921803.93183659, 191302828.29117134, 236250309.0984092, 91997802.36511932, 129638059.61142449,
             243557532.6593419, 50870383.55651479]
    x = np.concatenate([base, np.nextafter(base, np.inf), np.nextafter(base, 0), found])
    x = np.concatenate([x, -x[::3], -np.array(found)])
    got, want = run_unary(op, x), TRIG[op](x)
    ulps = np.abs(got - want) / np.spacing(np.abs(want))
    assert ulps.max() <= (2 if op == "tan" else 1), f"{op}: {ulps.max():.0f} ulp at {x[np.argmax(ulps)]!r}"


def test_tan_f32_polynomial():
    """f32 tan's r + r^3 T(r^2) (``_TAN_F32``, tools/fit_tan.py) against mpmath for |r| <= 0.79, in
    f64: within 2**-29 of tan r before f32 rounding, so the ulp bound is the evaluation's."""
    from gradc.codegen import llvm_math
    mpmath = pytest.importorskip("mpmath")
    r = np.linspace(1e-4, 0.79, 2001)
    approx = r + r ** 3 * np.polynomial.Polynomial(llvm_math._TAN_F32)(r * r)
    exact = np.array([float(mpmath.tan(mpmath.mpf(v))) for v in r])
    assert np.max(np.abs(approx - exact) / exact) < 2.0 ** -29


@pytest.mark.parametrize("op", sorted(TRIG))
@pytest.mark.parametrize("dtype", ["f32", "f64"])
def test_trig_loops_stay_vectorized(dtype, op):
    """sin's, cos's and tan's loops are vectorized (f32 with FMA: r's low part and tan's own
    polynomial too), the small-argument path inline and the large one (its window of 2/pi's bits:
    funnel shifts; f64's from a gathered table) a vector function called behind a branch per
    vector; no libm."""
    from gradc.codegen import llvm_cpu
    if "+avx512f" not in llvm_cpu.host_features():
        pytest.skip("needs AVX-512 (16 x f32 / 8 x f64 lanes)")
    kb = KernelBuilder(f"vec_{op}_{dtype}", (4096,))
    v = kb.op(op, kb.load(kb.input("x", dtype, (4096,))))
    kb.store(kb.output("o", dtype, (4096,)), v)
    text = llvm_cpu.emit_llvm(kb.build(), optimized=True)
    vec, ivec = ("<16 x float>", "<16 x i64>") if dtype == "f32" else ("<8 x double>", "<8 x i64>")
    assert f"call {vec} @llvm.fma" in text and f"call {vec} @llvm.rint" in text
    assert op != "tan" or f"fdiv {vec}" in text
    assert f"call {ivec} @llvm.fshl" in text
    assert dtype == "f32" or "@llvm.masked.gather.v8i64" in text
    assert f"@{op}" not in text and f"@llvm.{op}" not in text
    assert not re.search(rf"call [^\n]*@gradc\.{op}\.{dtype}\.v\d+\(", text), "vector variant not inlined"
    assert re.search(rf"call [^\n]*@gradc\.{op}\.{dtype}\.v\d+\.large\(", text), "no large-argument call"


@pytest.mark.parametrize("dtype", ["f32", "f64"])
def test_exp_scales_by_vscalef_on_its_float_exponent(dtype, monkeypatch):
    """With AVX-512, exp's vector loop scales by vscalefps/pd on the float exponent (no integer
    round trip) and its scalar code by ldexp; both equal the ldexp-only kernel bit for bit,
    subnormal, overflowing, infinite and NaN results included, at any length (remainders)."""
    from gradc.codegen import llvm_cpu, llvm_math
    if "+avx512f" not in llvm_cpu.host_features():
        pytest.skip("needs AVX-512")
    np_dt = np.float32 if dtype == "f32" else np.float64
    lo, hi = (-110.0, 95.0) if dtype == "f32" else (-760.0, 720.0)
    x = np.concatenate([np.linspace(lo, hi, 4099), [np.inf, -np.inf, np.nan, 0.0, -0.0]]).astype(np_dt)
    kb = KernelBuilder(f"vexp_{dtype}", x.shape)
    e = kb.op("exp", kb.load(kb.input("x", dtype, x.shape)))
    kb.store(kb.output("o", dtype, x.shape), e)
    k = kb.build()
    asm = llvm_cpu.emit_assembly(k)
    loop = max(asm.split(".LBB")[1:], key=lambda block: block.count("vfmadd"))
    assert ("vscalefps" if dtype == "f32" else "vscalefpd") in loop
    assert not re.search(r"vcvtt?(ps2dq|dq2ps|pd2dq|dq2pd|pd2qq|qq2pd)", loop)
    fast = np.empty_like(x)
    runtime_cpu.compile_kernel(k)(x, fast)
    monkeypatch.setattr(llvm_math, "_scalef_lanes", lambda f: ())
    monkeypatch.setattr(runtime_cpu, "_lowered", {})
    monkeypatch.setattr(runtime_cpu, "_memo", {})
    plain = np.empty_like(x)
    runtime_cpu.compile_kernel(k)(x, plain)
    assert fast.tobytes() == plain.tobytes()
    sub = np.finfo(np_dt).tiny
    assert ((fast > 0) & (fast < sub)).any() and np.isinf(fast).any() and np.isnan(fast).any()
