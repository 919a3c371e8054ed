"""Transcendental functions written in LLVM IR (exp, exp2, log, log2, log10, log1p, expm1, erf,
sin, cos, tan, atan, atan2, asin, acos, sinh, cosh, tanh, asinh, acosh, atanh, pow, integer pow).

Branch-free (selects only), built from fma/rint/bitcasts (and ``llvm.ldexp`` for exp's scale
on the CPU: one ``vscalefps`` with AVX-512), so the CPU loop vectorizer can
vectorize a loop that calls them (libm calls stay scalar) and the NVPTX backend, which has
no libm, can lower them.  Each function is emitted once per module as an internal,
``alwaysinline`` function ``gradc.<name>.<f32|f64>``.

sin, cos and tan reduce |x| by pi/2 (sin and tan take x's sign back): a Cody-Waite reduction
below 2**15 (f32) / 2**28 (f64; three parts of pi/2, with FMA r plus a low part:
``_reduce_small``; f32's tan a polynomial of its own, ``_tan_f32``), and above that a
Payne-Hanek one (``_reduce_large``: integer products of the significand with a window of 2/pi's
bits, the exponent choosing the window; finite arguments all the way to the largest give a few
ulp, inf and NaN give NaN).  The large path costs two to four times the rest of the function,
so it sits behind a branch: on the GPU a thread's own; on the CPU, where the loop vectorizer
would run both sides of a branch, once per vector in the vector variants it calls instead of the
scalar function (``_define_with_variants``; measured in ``_trig_vector_body``).

Accuracy (checked against NumPy in tests/codegen/test_math.py): a few ulp for |x| in the
ranges that matter; sin/cos/tan for every finite x (f32 with FMA, every float below 2**17
checked: sin and cos within 1.21 ulp of the exact value, 1 of the correctly rounded one; tan
within 1.69, 2; f64 with FMA near the multiples of pi/2 too: within an ulp of NumPy's, tan 2).
f32 ``pow`` and ``erf`` are computed in f64.  ``log1p`` and ``expm1`` are exact-ish near 0
(Kahan's ``log(u) * x / (u - 1)``; the Taylor series of expm1(x)/x for |x| < 1/2); ``erf``
is a Taylor series below 1 and ``1 - exp(-x*x) * erfcx(x)`` fits above (``tools/fit_erf.py``).
"""
from __future__ import annotations

import math
import re

from llvmlite import ir

F32, F64, I32, I64 = ir.FloatType(), ir.DoubleType(), ir.IntType(32), ir.IntType(64)

_INV_FACT = [1.0 / math.factorial(k) for k in range(24)]
_TANH = [1.0, -0.3333333333333333, 0.13333333333333333, -0.05396825396825397, 0.021869488536155203,
         -0.008863235529902197, 0.003592128036572481, -0.0014558343870513183, 0.000590027440945586,
         -0.00023912911424355248, 9.691537956929451e-05, -3.927832388331683e-05]


# e**r on |r| <= ln(2)/2 for f32: degree 6, least-squares fit on Chebyshev nodes
# (0.8 ulp before rounding in the Horner steps; the degree-7 Taylor series needs one fma more)
_EXP_F32 = [1.0000000005920204, 1.0000000361258994, 0.4999999149303666, 0.16666420832120124,
            0.04166835803306008, 0.008374771520024202, 0.0013829420592772793]


# (tan r - r) / r^3 in z = r*r for |r| <= 0.79, f32's tan: degree 6, least squares weighted by
# r^3 / tan r on Chebyshev nodes (tools/fit_tan.py; 2**-29 of tan r before rounding)
_TAN_F32 = [0.3333335095960805, 0.13332622533413913, 0.05406466964837911, 0.021256607083582013,
            0.010905140993386126, -2.281207984256581e-06, 0.004423483546482557]


class _F:
    """Per-float-type constants; ``lanes`` > 1: the vector type of that many lanes (its
    constants splats)."""

    def __init__(self, ty, lanes: int = 1):
        self.scalar = ty
        self.f64 = isinstance(ty, ir.DoubleType)
        self.lanes = lanes
        ity = I64 if self.f64 else I32
        self.ty = ty if lanes == 1 else ir.VectorType(ty, lanes)
        self.ity = ity if lanes == 1 else ir.VectorType(ity, lanes)
        self.mant = 52 if self.f64 else 23
        self.bias = 1023 if self.f64 else 127
        self.suffix = "f64" if self.f64 else "f32"

    def c(self, v):
        return ir.Constant(self.ty, v) if self.lanes == 1 else _Splat(self.ty, v)

    def i(self, v):
        return ir.Constant(self.ity, v) if self.lanes == 1 else _Splat(self.ity, v)

    def vt(self, ty):
        """``ty``, or the vector of ``lanes`` of it."""
        return ty if self.lanes == 1 else ir.VectorType(ty, self.lanes)

    def k(self, ty, v):
        """A constant of type ``vt(ty)``."""
        return ir.Constant(ty, v) if self.lanes == 1 else _Splat(self.vt(ty), v)

    def sfx(self, ty):
        """An intrinsic's suffix for ``vt(ty)``: f32, v16f32, v8i64, v8p0."""
        name = "p0" if isinstance(ty, ir.PointerType) else ty.intrinsic_name
        return name if self.lanes == 1 else f"v{self.lanes}{name}"


class _Splat(ir.Constant):
    """A vector constant of one value, written as LLVM's ``splat (<type> <value>)`` (llvmlite writes
    every lane: four times the text, and its parsing time, for the vector variants)."""

    def __init__(self, ty, value):
        super().__init__(ty, None)
        self.element = ir.Constant(ty.element, value)

    def _get_reference(self):
        return f"splat ({self.element})"


def _intrinsic(module, name, ret, args):
    fn = module.globals.get(name)
    if fn is None:
        fn = ir.Function(module, ir.FunctionType(ret, args), name)
    return fn


class _Emit:
    """Small helpers bound to a builder."""

    def __init__(self, b: ir.IRBuilder, f: _F):
        self.b, self.f = b, f
        m = b.module
        self._fma = _intrinsic(m, f"llvm.fma.{f.sfx(f.scalar)}", f.ty, [f.ty] * 3)
        self._rint = _intrinsic(m, f"llvm.rint.{f.sfx(f.scalar)}", f.ty, [f.ty])
        self._fabs = _intrinsic(m, f"llvm.fabs.{f.sfx(f.scalar)}", f.ty, [f.ty])

    def fma(self, a, b, c):
        return self.b.call(self._fma, [a, b, c])

    def rint(self, x):
        return self.b.call(self._rint, [x])

    def fabs(self, x):
        return self.b.call(self._fabs, [x])

    def poly(self, x, coeffs):
        """sum coeffs[k] * x**k (Horner, fma)."""
        acc = self.f.c(coeffs[-1])
        for c in reversed(coeffs[:-1]):
            acc = self.fma(acc, x, self.f.c(c))
        return acc

    def sel(self, cond, a, b):
        return self.b.select(cond, a, b)

    def freeze(self, v):
        """LLVM's ``freeze`` (not in llvmlite's builder): poison becomes some fixed value."""
        inst = ir.instructions.Instruction(self.b.block, v.type, "freeze", [v])
        self.b._insert(inst)
        return inst

    def lt(self, a, b):
        return self.b.fcmp_ordered("<", a, b)

    def clamp(self, x, lo, hi):
        """x clamped to [lo, hi] by compare-and-select, ordered so that a NaN passes through."""
        x = self.sel(self.lt(x, self.f.c(lo)), self.f.c(lo), x)
        return self.sel(self.lt(self.f.c(hi), x), self.f.c(hi), x)

    def isnan(self, x):
        return self.b.fcmp_unordered("uno", x, x)

    def pow2i(self, n):
        """2**n as a float for an integer n in the normal exponent range."""
        f = self.f
        bits = self.b.shl(self.b.add(n, f.i(f.bias)), f.i(f.mant))
        return self.b.bitcast(bits, f.ty)


def _define(module, name, ty, nargs, body, inline: bool = True):
    fn = module.globals.get(name)
    if fn is not None:
        return fn
    fn = ir.Function(module, ir.FunctionType(ty, [ty] * nargs), name)
    fn.linkage = "internal"
    fn.attributes.add("alwaysinline" if inline else "noinline")
    fn.attributes.add("nounwind")
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    b.ret(body(b, *fn.args))
    return fn


# ---- exp --------------------------------------------------------------------------------------
def _split(v: float, bits: int) -> tuple:
    """(hi, lo): v = hi + lo, hi with ``bits`` significant bits (so hi * small integers is exact)."""
    m, ex = math.frexp(v)
    hi = math.ldexp(math.floor(m * 2 ** bits), ex - bits)
    return hi, v - hi


def _exp_body(f: _F, base2: bool = False):
    def body(b, x):
        e = _Emit(b, f)
        if base2:       # exp2: n = rint(x), r = (x - n) ln 2 (x - n is exact), then as exp
            lo, hi = (-1076.0, 1025.0) if f.f64 else (-151.0, 129.0)
            xc = e.clamp(x, lo, hi)
            n = e.rint(xc)
            d = b.fsub(xc, n)
            ln2_hi, ln2_lo = _split(math.log(2), 24 if f.f64 else 12)
            r = e.fma(d, f.c(ln2_hi), b.fmul(d, f.c(ln2_lo)))
            return _scale_exp(e, f, b, r, n)
        lo, hi = (-746.0, 710.0) if f.f64 else (-104.0, 89.0)
        ln2_hi, ln2_lo = ((6.93147180369123816490e-01, 1.90821492927058770002e-10) if f.f64
                          else (0.693359375, -2.12194440e-4))
        # clamp as compare-and-select, ordered so that a NaN x passes through: one
        # vmaxps/vminps each, and the NaN flows through the polynomial into the result (no
        # final NaN test).  Its exponent n is then NaN: fptosi gives poison, frozen to some
        # integer, and the scaled NaN is still NaN.
        xc = e.clamp(x, lo, hi)
        n = e.rint(b.fmul(xc, f.c(1.4426950408889634)))
        r = e.fma(n, f.c(-ln2_hi), xc)
        r = e.fma(n, f.c(-ln2_lo), r)
        return _scale_exp(e, f, b, r, n)
    return body


def _scale_exp(e: "_Emit", f: _F, b, r, n):
    """e**r * 2**n for |r| <= ln(2)/2 and an integer-valued float n."""
    p = e.poly(r, _INV_FACT[:14] if f.f64 else _EXP_F32)
    if _is_cpu(b.module) and f.lanes == 1 and _scalef_lanes(f):
        return b.call(_scalef_fn(b.module, f), [p, n])
    if _is_cpu(b.module):
        # llvm.ldexp: one vscalefps per vector with AVX-512, subnormals and overflow exact
        ldexp = _intrinsic(b.module, f"llvm.ldexp.{f.suffix}.i32", f.ty, [f.ty, I32])
        return b.call(ldexp, [p, e.freeze(b.fptosi(n, I32))])
    ni = e.freeze(b.fptosi(n, f.ity))
    n1 = b.ashr(ni, f.i(1))
    n2 = b.sub(ni, n1)
    return b.fmul(b.fmul(p, e.pow2i(n1)), e.pow2i(n2))


# ---- exp's scaling with AVX-512 ------------------------------------------------------------------
# ``llvm.ldexp(p, fptosi(n))`` takes an integer exponent: the x86 backend converts n to an
# integer and back (vcvttps2dq, vcvtdq2ps) before its vscalefps, which takes a float one.  With
# AVX-512 the exp calls ``gradc.scalef.<f32|f64>(p, n)`` instead, a declaration whose vector
# variants (``vector-function-abi-variant``) are the vscalefps/vscalefpd intrinsics on the
# float n: two instructions fewer per vector (W3's exp pass: 18 -> 16).  Scalar code gets
# its ldexp definition once the pipeline ran (``scalar_definitions``); results are the same
# (both round p * 2**n once).

def _scalef_lanes(f: _F) -> tuple:
    """The vector widths with a vscalef variant here: () without AVX-512."""
    from .llvm_cpu import host_has, vector_bits     # llvm_cpu imports this module
    if vector_bits() < 512:
        return ()
    lanes = 8 if f.f64 else 16
    return (lanes, lanes // 2, lanes // 4) if host_has("avx512vl") else (lanes,)


def _scalef_fn(module, f: _F):
    name = f"gradc.scalef.{f.suffix}"
    fn = module.globals.get(name)
    if fn is not None:
        return fn
    abi = []
    for lanes in _scalef_lanes(f):
        vt = ir.VectorType(f.scalar, lanes)
        bits = lanes * (64 if f.f64 else 32)
        mask = ir.IntType(max(8, lanes))
        extra = [I32] if bits == 512 else []          # the 512-bit forms take a rounding mode
        intr = _intrinsic(module, f"llvm.x86.avx512.mask.scalef.{'pd' if f.f64 else 'ps'}.{bits}", vt,
                          [vt, vt, vt, mask] + extra)
        v = ir.Function(module, ir.FunctionType(vt, [vt, vt]), f"{name}.v{lanes}")   # external until vectorized
        v.attributes.add("alwaysinline")
        v.attributes.add("nounwind")
        vb = ir.IRBuilder(v.append_basic_block("entry"))
        args = [v.args[0], v.args[1], ir.Constant(vt, None), ir.Constant(mask, -1)]
        vb.ret(vb.call(intr, args + [ir.Constant(I32, 4)] * len(extra)))     # 4: the current rounding
        abi.append(f"_ZGV_LLVM_N{lanes}vv_{name}({v.name})")
    fn = ir.Function(module, ir.FunctionType(f.scalar, [f.scalar, f.scalar]), name)
    fn.attributes = _Attributes(["nounwind", "readnone", "willreturn",
                                 f'"vector-function-abi-variant"="{",".join(abi)}"'])
    return fn


_SCALEF = re.compile(r"gradc\.scalef\.(f32|f64)")


def scalar_definitions(mod) -> str:
    """LLVM IR text defining (always inlined, as ``llvm.ldexp``) the scalar ``gradc.scalef``
    functions that the optimized module ``mod`` (an llvmlite binding module) still declares;
    empty when there are none."""
    lines = []
    for fn in mod.functions:
        m = _SCALEF.fullmatch(fn.name)
        if not (fn.is_declaration and m):
            continue
        t = "double" if m.group(1) == "f64" else "float"
        lines.append(f"declare {t} @llvm.ldexp.{m.group(1)}.i32({t}, i32)\n"
                     f'define {t} @"{fn.name}"({t} %p, {t} %n) alwaysinline nounwind {{\n'
                     f"  %i = fptosi {t} %n to i32\n  %j = freeze i32 %i\n"
                     f"  %r = call {t} @llvm.ldexp.{m.group(1)}.i32({t} %p, i32 %j)\n  ret {t} %r\n}}")
    return "\n".join(lines) + "\n" if lines else ""


# ---- log --------------------------------------------------------------------------------------
def _log_body(f: _F, base: str = "e"):
    def body(b, x):
        e = _Emit(b, f)
        tiny = 2.2250738585072014e-308 if f.f64 else 1.1754943508222875e-38
        small = e.lt(x, f.c(tiny))
        xs = e.sel(small, b.fmul(x, f.c(float(2 ** f.mant))), x)
        eadj = e.sel(small, f.i(-f.mant), f.i(0))
        bits = b.bitcast(xs, f.ity)
        ex = b.sub(b.lshr(bits, f.i(f.mant)), f.i(f.bias))
        mbits = b.or_(b.and_(bits, f.i((1 << f.mant) - 1)), f.i(f.bias << f.mant))
        m = b.bitcast(mbits, f.ty)
        big = e.lt(f.c(1.4142135623730951), m)
        m = e.sel(big, b.fmul(m, f.c(0.5)), m)
        ex = b.add(b.add(ex, eadj), b.zext(big, f.ity))
        fm = b.fsub(m, f.c(1.0))
        s = b.fdiv(fm, b.fadd(m, f.c(1.0)))
        z = b.fmul(s, s)
        nterms = 11 if f.f64 else 5
        P = e.poly(z, [1.0 / (2 * k + 3) for k in range(nterms)])
        s2 = b.fadd(s, s)
        logm = e.fma(b.fmul(s2, z), P, s2)
        ef = b.sitofp(ex, f.ty)
        if base == "2":         # e + log(m) / ln 2: exact for powers of two
            inv_hi, inv_lo = _split(1 / math.log(2), 24 if f.f64 else 12)
            y = b.fadd(ef, e.fma(logm, f.c(inv_hi), b.fmul(logm, f.c(inv_lo))))
        else:                   # e * log_b(2) + log(m) / ln b, log_b(2) split so e * hi is exact
            ln2 = math.log(2) if base == "e" else math.log10(2)
            hi, lo = _split(ln2, 32 if f.f64 else 12)
            tail = logm if base == "e" else b.fmul(logm, f.c(1 / math.log(10)))
            y = b.fadd(b.fmul(ef, f.c(hi)), e.fma(ef, f.c(lo), tail))
        y = e.sel(b.fcmp_ordered("==", x, f.c(0.0)), f.c(float("-inf")), y)
        y = e.sel(b.fcmp_ordered("==", x, f.c(float("inf"))), x, y)
        y = e.sel(e.lt(x, f.c(0.0)), f.c(float("nan")), y)
        return e.sel(e.isnan(x), x, y)
    return body


# ---- log1p, expm1 ------------------------------------------------------------------------------
def _log1p_body(f: _F, module):
    def body(b, x):
        e = _Emit(b, f)
        # Kahan: u = 1 + x rounds, but log(u) * x / (u - 1) cancels the rounding (a few ulp);
        # where u == 1, log1p(x) is x to working precision
        u = b.fadd(f.c(1.0), x)
        d = b.fsub(u, f.c(1.0))
        r = b.fmul(b.call(math_fn(module, "log", f.ty), [u]), b.fdiv(x, d))
        r = e.sel(b.fcmp_ordered("==", d, f.c(0.0)), x, r)
        return e.sel(b.fcmp_ordered("==", x, f.c(float("inf"))), x, r)
    return body


def _expm1_body(f: _F, module):
    def body(b, x):
        e = _Emit(b, f)
        # |x| < 1/2: x * (1 + x/2! + x^2/3! + ...), the first term left out below half an ulp;
        # elsewhere exp(x) - 1 loses at most a factor 2.6 of exp's error to the subtraction
        nterms = 17 if f.f64 else 9
        small = b.fmul(x, e.poly(x, _INV_FACT[1:nterms + 1]))
        big = b.fsub(b.call(math_fn(module, "exp", f.ty), [x]), f.c(1.0))
        return e.sel(e.lt(e.fabs(x), f.c(0.5)), small, big)
    return body


# ---- erf ------------------------------------------------------------------------------------------
# tools/fit_erf.py: Taylor series of erf(a)/a in a*a below 1; erfcx(a) = exp(a*a) * erfc(a) fitted
# on [1, 2.5] in u = (a - 1.75) / 0.75 and on [2.5, 6] in v, 1/a mapped from [1/6, 0.4] to [-1, 1]
_ERF_TAYLOR = [1.1283791670955126, -0.37612638903183754, 0.11283791670955126, -0.026866170645131252,
               0.005223977625442188, -0.0008548327023450853, 0.00012055332981789664, -1.492565035840625e-05,
               1.6462114365889248e-06, -1.6365844691234924e-07, 1.4807192815879218e-08, -1.2290555301717928e-09,
               9.422759064650411e-11, -6.7113668551641105e-12, 4.4632242632864775e-13, -2.7835162072109215e-14,
               1.6342614095367152e-15, -9.063970842808673e-17]
_ERFCX_MID = [0.2849722347374363, -0.09823225913586242, 0.03136704192398736, -0.009390935492551652,
              0.002659179124206866, -0.0007168914442270186, 0.00018495607807050333, -4.585617622051367e-05,
              1.0962895367453373e-05, -2.5344796338057674e-06, 5.680108649678612e-07, -1.2372051578668287e-07,
              2.6211278558818712e-08, -5.347651173468327e-09, 1.0792976909230465e-09, -2.506690477172383e-10,
              4.796544484502844e-11]
_ERFCX_TAIL = [0.15408741116918978, 0.05915361899676603, -0.0023316669964238267, -0.0001361763367718981,
               3.595721695465615e-05, -2.634057433900773e-06, -2.2465100743043783e-07, 8.97987703138769e-08,
               -1.1149803232102149e-08, -2.709626130023515e-10, 3.419287595142904e-10]


def _erf_body(f: _F, module):
    def body(b, x):
        if not f.f64:
            return b.fptrunc(b.call(math_fn(module, "erf", F64), [b.fpext(x, F64)]), F32)
        e = _Emit(b, f)
        a = e.fabs(x)
        t = b.fmul(a, a)
        small = b.fmul(a, e.poly(t, _ERF_TAYLOR))
        mid = e.poly(b.fmul(b.fsub(a, f.c(1.75)), f.c(1 / 0.75)), _ERFCX_MID)
        v = b.fsub(b.fmul(b.fsub(b.fdiv(f.c(1.0), a), f.c(1 / 6)), f.c(2 / (0.4 - 1 / 6))), f.c(1.0))
        tail = e.poly(v, _ERFCX_TAIL)
        erfcx = e.sel(e.lt(a, f.c(2.5)), mid, tail)
        big = b.fsub(f.c(1.0), b.fmul(b.call(math_fn(module, "exp", f.ty), [b.fneg(t)]), erfcx))
        r = e.sel(e.lt(a, f.c(1.0)), small, e.sel(e.lt(a, f.c(6.0)), big, f.c(1.0)))
        cs = _intrinsic(module, "llvm.copysign.f64", f.ty, [f.ty, f.ty])
        return e.sel(e.isnan(x), x, b.call(cs, [r, x]))
    return body


# ---- sin / cos ----------------------------------------------------------------------------------
def _two_over_pi_bits(nbits: int) -> int:
    """floor(2/pi * 2**nbits), from Machin's formula pi = 16 atan(1/5) - 4 atan(1/239) in integers."""
    g = nbits + 64                          # guard bits: the series' truncations stay far below 2**-nbits

    def atan_inv(k):                        # atan(1/k) * 2**g, to a few units
        total = term = (1 << g) // k
        n, sign = 3, -1
        while term:
            term //= k * k
            total += sign * (term // n)
            n, sign = n + 2, -sign
        return total

    pi = 16 * atan_inv(5) - 4 * atan_inv(239)
    return (1 << (g + nbits + 1)) // pi


_PH_WORDS = 20      # one zero word, then 2/pi's first 1216 bits: bit E - 1 onward for every f64 exponent E


def _two_over_pi_words() -> list:
    """The table of the large-argument reduction: 64-bit words, most significant first, of the bit
    string 0**64 (the integer part, so a window may start up to 64 bits before the point), then
    2/pi's fraction bits."""
    v = _two_over_pi_bits(64 * (_PH_WORDS - 1))
    return [(v >> (64 * (_PH_WORDS - 1 - k))) & (2 ** 64 - 1) for k in range(_PH_WORDS)]


_TWO_OVER_PI = _two_over_pi_words()


def _mul_wide(f: _F, b, x, y):
    """(high, low) 64-bit words of the 128-bit product of unsigned i64 ``x`` and ``y``, from four
    32 x 32 -> 64-bit products (one vpmuludq each; those of an ``x`` known below 2**32 fold away)."""
    c32, mask = f.k(I64, 32), f.k(I64, 2 ** 32 - 1)
    xl, xh, yl, yh = b.and_(x, mask), b.lshr(x, c32), b.and_(y, mask), b.lshr(y, c32)
    ll, lh, hl, hh = b.mul(xl, yl), b.mul(xl, yh), b.mul(xh, yl), b.mul(xh, yh)
    mid = b.add(lh, b.lshr(ll, c32))                    # below 2**64: no carry lost
    mid2 = b.add(hl, b.and_(mid, mask))
    hi = b.add(hh, b.add(b.lshr(mid, c32), b.lshr(mid2, c32)))
    return hi, b.or_(b.shl(mid2, c32), b.and_(ll, mask))


def _ph_window(e: "_Emit", f: _F, t0, nwords):
    """``nwords`` i64 words of the table's bit string from bit ``t0`` on (most significant first).

    f32 needs table words 0..4 only (``t0 >> 6`` is 0, 1 or 2): selects, no memory.  f64's word
    index runs to 16: a load per word from the constant table ``gradc.two_over_pi`` (a gather
    for a vector)."""
    b = e.b
    w, s = b.lshr(t0, f.k(I64, 6)), b.and_(t0, f.k(I64, 63))
    if f.f64:
        words = [_ph_load(b, f, b.add(w, f.k(I64, j))) for j in range(nwords + 1)]
    else:
        w0, w1 = (b.icmp_unsigned("==", w, f.k(I64, k)) for k in (0, 1))
        c = [f.k(I64, v) for v in _TWO_OVER_PI]
        words = [b.select(w0, c[j], b.select(w1, c[j + 1], c[j + 2])) for j in range(nwords + 1)]
    fshl = _intrinsic(b.module, f"llvm.fshl.{f.sfx(I64)}", f.vt(I64), [f.vt(I64)] * 3)
    return [b.call(fshl, [words[j], words[j + 1], s]) for j in range(nwords)]


def _ph_load(b, f: _F, index):
    """Word ``index`` of the table (lanes: a gather)."""
    table = _ph_table(b.module)
    if f.lanes == 1:
        return b.load(b.gep(table, [ir.Constant(I64, 0), index], inbounds=True, source_etype=table.value_type),
                      typ=I64)
    ptrs = b.gep(table, [index], inbounds=True, source_etype=I64)
    ptrs.type = f.vt(ir.PointerType())               # llvmlite types a vector-indexed GEP as one pointer
    gather = _intrinsic(b.module, f"llvm.masked.gather.{f.sfx(I64)}.v{f.lanes}p0", f.vt(I64),
                        [ptrs.type, f.vt(ir.IntType(1)), f.vt(I64)])
    return b.call(gather, [ptrs, f.k(ir.IntType(1), 1), ir.Constant(f.vt(I64), ir.Undefined)])


def _ph_table(module):
    name = "gradc.two_over_pi"
    gv = module.globals.get(name)
    if gv is None:
        ty = ir.ArrayType(I64, _PH_WORDS)
        gv = ir.GlobalVariable(module, ty, name)
        gv.global_constant = True
        gv.linkage = "internal"
        gv.initializer = ir.Constant(ty, _TWO_OVER_PI)
    return gv


def _reduce_large(e: "_Emit", f: _F, x):
    """(r, r_lo, quadrant) with x = r + r_lo + quadrant * pi/2 (mod 2 pi), |r| <= pi/4, for any
    finite x whose exponent is at least -60: a Payne-Hanek reduction in integer arithmetic.  r_lo
    is r's rounding error (f32: r is an f64 first; f64: a double-double).

    |x| = M * 2**E (M the integer significand).  Bits of 2/pi before the (E - 1)-th add multiples of
    4 to x * 2/pi (whole turns): x * 2/pi mod 4 is M times the 2/pi bits from E - 1 on, a window
    of 128 (f32) or 192 (f64) bits, its product's top two bits the quadrant and the rest the
    fraction (62 bits in f32; 126 in f64, so f64's worst cases, x within 2**-61 of a multiple of
    pi/2, keep their digits)."""
    b = e.b
    bits = b.bitcast(x, f.ity)
    ebits = b.and_(b.lshr(bits, f.i(f.mant)), f.i(2 * f.bias + 1))
    m = b.or_(b.and_(bits, f.i((1 << f.mant) - 1)), f.i(1 << f.mant))
    if not f.f64:
        ebits, m = b.zext(ebits, f.vt(I64)), b.zext(m, f.vt(I64))
    # window start: 2/pi's bit E - 1 is the string's bit E - 2 + 64; E = ebits - bias - mant
    t0 = b.add(ebits, f.k(I64, 62 - f.bias - f.mant))
    t0 = b.select(b.icmp_signed("<", t0, f.k(I64, 0)), f.k(I64, 0), t0)   # tiny x: any window (unused)
    a = _ph_window(e, f, t0, 3 if f.f64 else 2)
    top = b.mul(m, a[0])                                  # mod 2**64: the bits at 2**0 and above
    hi1, lo1 = _mul_wide(f, b, m, a[1])
    if f.f64:
        hi2, _ = _mul_wide(f, b, m, a[2])
        low = b.add(lo1, hi2)
        top = b.add(b.add(top, hi1), b.zext(b.icmp_unsigned("<", low, lo1), f.vt(I64)))
    else:
        top = b.add(top, hi1)
    # round to the nearest quadrant: frac = top - n * 2**62 in [-2**61, 2**61)
    n = b.lshr(b.add(top, f.k(I64, 1 << 61)), f.k(I64, 62))
    frac = b.sub(top, b.shl(n, f.k(I64, 62)))
    if f.f64:
        return (*_ph_fraction_f64(e, f, frac, low), n)
    r = b.fmul(b.sitofp(frac, f.vt(F64)), f.k(F64, math.pi / 2 * 2.0 ** -62))
    r_hi = b.fptrunc(r, f.ty)
    return r_hi, b.fptrunc(b.fsub(r, b.fpext(r_hi, f.vt(F64))), f.ty), b.trunc(n, f.ity)


def _ph_fraction_f64(e: "_Emit", f: _F, frac, low):
    """(frac * 2**64 + low) * 2**-126 * pi/2 as a double-double (r, r_lo) (frac signed, low
    unsigned): the magnitude's 128 bits split so that no digit cancels, times pi/2 as a
    double-double."""
    b = e.b
    neg = b.icmp_signed("<", frac, f.i(0))
    nlow = b.sub(f.i(0), low)
    nfrac = b.add(b.xor(frac, f.i(-1)), b.zext(b.icmp_unsigned("==", low, f.i(0)), f.ity))
    mag, low = b.select(neg, nfrac, frac), b.select(neg, nlow, low)
    hi = b.sitofp(mag, f.ty)                        # rounded; the rest (at most 2**8) goes to lo
    rest = b.sub(mag, b.fptosi(hi, f.ity))
    lo = e.fma(b.sitofp(rest, f.ty), f.c(2.0 ** 64), b.uitofp(low, f.ty))
    fh, fl = b.fmul(hi, f.c(2.0 ** -62)), b.fmul(lo, f.c(2.0 ** -126))
    p_hi = math.pi / 2
    p_lo = 6.123233995736766e-17                    # pi/2 - p_hi
    rh = b.fmul(fh, f.c(p_hi))
    rl = b.fadd(e.fma(fh, f.c(p_hi), b.fneg(rh)), e.fma(fh, f.c(p_lo), b.fmul(fl, f.c(p_hi))))
    r = b.fadd(rh, rl)
    r_lo = b.fadd(b.fsub(rh, r), rl)               # Fast2Sum: r + r_lo = rh + rl
    return e.sel(neg, b.fneg(r), r), e.sel(neg, b.fneg(r_lo), r_lo)


# beyond these |x| the Cody-Waite reduction's n * pi/2 loses digits: the Payne-Hanek one instead
_LARGE = {"f32": 2.0 ** 15, "f64": 2.0 ** 28}


# pi/2 as three parts: with FMA, each part the rounding of the rest (24-bit floats in f32; in f64
# p1 + p2 + p3 within 2**-160 of it); without, the first two parts short enough that n * p1 needs
# no FMA to be exact (f32: 8 and 11 bits; f64: 33 bits each)
_HALF_PI = {("f32", True): tuple(float.fromhex(h) for h in ("0x1.921fb6p+0", "-0x1.777a5cp-25", "-0x1.ee59dap-50")),
            ("f64", True): (1.5707963267948966, 6.123233995736766e-17, -1.4973849048591698e-33),
            ("f32", False): (1.5703125, 4.83751296997070312500e-04, 7.54978995489188216e-8),
            ("f64", False): (1.57079632673412561417e+00, 6.07710050630396597660e-11, 2.02226624879595063154e-21)}


def _has_fma(module) -> bool:
    """Whether ``llvm.fma`` is one instruction on the module's target: always on the GPU and on
    64-bit ARM; on x86 where the host CPU has FMA3 (elsewhere it is a libm call, or unknown)."""
    triple = module.triple or ""
    if "nvptx" in triple or triple.startswith(("aarch64", "arm64")):
        return True
    if not triple.startswith("x86_64"):
        return False
    from .llvm_cpu import host_features     # llvm_cpu imports this module
    return "+fma" in host_features().split(",")


def _reduce_small(e: "_Emit", f: _F, ax):
    """(r, r_lo, quadrant, small) for ``ax`` = |x| (``_trig_from_quadrant`` gives sin and tan
    x's sign back): ax = r + r_lo + quadrant * pi/2, |r| <= pi/4, by a Cody-Waite reduction, exact
    enough where ``small`` (|x| < ``_LARGE``); elsewhere the quadrant is 0 (r is NaN for inf and
    NaN, and replaced for large finite x).

    With FMA, ``r + r_lo`` is ax - n * pi/2 to far below an ulp of r, so that sin near a multiple
    of pi keeps its digits (4.2e-9 is the closest an f32 below 2**15 comes to one, at 252.89821;
    the three-part reductions of ``_HALF_PI``'s short parts were up to 1900 ulp off there in f32,
    250 in f64): r1 = ax - n * p1 is exact (a multiple of ulp(1/2) below 1: p1 has the full
    precision, n fewer than 15 (f32) / 28 (f64) bits); r = r1 - n * p2 rounded, and r_lo the rest:
    r1 - r (exact, Fast2Sum's first step) less n * p2 and n * p3 (fmas).  Measured (2**20 sins
    in a row reduction, in-process A/B): as fast as the three-part reduction, f32 and f64.
    Without FMA (``llvm.fma`` a libm call) the three-part reduction whose first product is exact
    without one, r_lo 0 (f32: up to 1.3e-10 absolute, many ulp near the multiples)."""
    b = e.b
    fma = _has_fma(b.module)
    p1, p2, p3 = _HALF_PI[f.suffix, fma]
    n = e.rint(b.fmul(ax, f.c(0.6366197723675814)))
    if fma:
        r1 = e.fma(n, f.c(-p1), ax)
        r = b.fsub(r1, b.fmul(n, f.c(p2)))
        r_lo = e.fma(n, f.c(-p3), e.fma(n, f.c(-p2), b.fsub(r1, r)))
    else:
        r = ax
        for p in (p1, p2, p3):
            r = e.fma(n, f.c(-p), r)
        r_lo = f.c(0.0)
    small = e.lt(ax, f.c(_LARGE[f.suffix]))
    return r, r_lo, b.fptosi(e.sel(small, n, f.c(0.0)), f.ity), small


def _is_large(e: "_Emit", f: _F, x):
    """|x| at least ``_LARGE`` and finite: where ``_reduce_large`` replaces ``_reduce_small``."""
    ax = e.fabs(x)
    return e.b.and_(e.b.fcmp_ordered(">=", ax, f.c(_LARGE[f.suffix])),
                    e.lt(ax, f.c(float("inf"))))


def _reduce_half_pi(e: "_Emit", f: _F, x):
    """(r, r_lo, quadrant): x = r + r_lo + quadrant * pi/2 for x = |x|, |r| <= pi/4, the quadrant
    an integer (mod 4 is what counts); infinities and NaN give a NaN r.  ``_reduce_small``'s, and where ``_is_large`` ``_reduce_large``'s: for a scalar behind
    a branch (a GPU warp diverges only where some thread's argument is large); a vector's lanes
    are all reduced both ways, selected (the vector variants call this only where some lane is
    large: ``_trig_vector_body``)."""
    *fast, _ = _reduce_small(e, f, x)
    b = e.b
    if f.lanes > 1:
        slow = _reduce_large(e, f, x)
        large = _is_large(e, f, x)
        return [e.sel(large, w, v) for v, w in zip(fast, slow)]
    before = b.block
    with b.if_then(_is_large(e, f, x), likely=False):
        slow = _reduce_large(e, f, x)
        large_block = b.block
    merged = []
    for v, w in zip(fast, slow):
        phi = b.phi(v.type)
        phi.add_incoming(v, before)
        phi.add_incoming(w, large_block)
        merged.append(phi)
    return merged


def _sin_cos_r(e: "_Emit", f: _F, r, r_lo):
    """(sin, cos) of r + r_lo for |r| <= pi/4, Taylor series: r + (r^3 S1(r^2) + r_lo), the small
    parts summed first and r added last (one rounding where r * S rounded twice, and r_lo
    counted), and C(r^2).  r_lo leaves cos alone (at most 0.4 ulp there, cos r being at least
    0.7; in f32 the corrections for it and for r*r's rounding cost a tenth more time for cos
    1.2 -> 0.95 ulp)."""
    b = e.b
    ns, nc = (9, 10) if f.f64 else (6, 7)
    z = b.fmul(r, r)
    C = e.poly(z, [(-1) ** k * _INV_FACT[2 * k] for k in range(nc)])
    S1 = e.poly(z, [(-1) ** k * _INV_FACT[2 * k + 1] for k in range(1, ns)])
    return b.fadd(r, e.fma(b.fmul(r, z), S1, r_lo)), C


def _trig_from_quadrant(e: "_Emit", f: _F, which, r, r_lo, q, x):
    """sin, cos or tan of x = r + r_lo + q * pi/2 (r and q |x|'s: sin and tan take x's sign)."""
    b = e.b
    if which == "tan" and not f.f64:
        return _with_sign_of(e, f, _tan_f32(e, f, r, r_lo, q), x)
    sr, C = _sin_cos_r(e, f, r, r_lo)
    if which == "cos":
        q = b.add(q, f.i(1))
    odd = b.icmp_unsigned("!=", b.and_(q, f.i(1)), f.i(0))
    if which == "tan":                  # f64: tan(r + pi/2) = -cos r / sin r
        return _with_sign_of(e, f, b.fdiv(e.sel(odd, b.fneg(C), sr), e.sel(odd, sr, C)), x)
    sign = b.shl(b.and_(q, f.i(2)), f.i(62 if f.f64 else 30))        # quadrants 2, 3: -v
    v = b.bitcast(b.xor(b.bitcast(e.sel(odd, C, sr), f.ity), sign), f.ty)
    return v if which == "cos" else _with_sign_of(e, f, v, x)


def _with_sign_of(e: "_Emit", f: _F, v, x):
    """v, negated where x's sign bit is set (sin and tan of |x|, made sin and tan of x)."""
    b = e.b
    sign = b.and_(b.bitcast(x, f.ity), f.i(-(1 << (63 if f.f64 else 31))))
    return b.bitcast(b.xor(b.bitcast(v, f.ity), sign), f.ty)


def _tan_f32(e: "_Emit", f: _F, r, r_lo, q):
    """tan(r + r_lo + q pi/2) in f32: t = r + (r^3 T(r^2) + r_lo (1 + r^2)) (``_TAN_F32``; r's own
    term added last), -1/t for odd q.  Within 1.7 ulp of the exact value (sin r / cos r, each rounded,
    was within 2.6).  Measured: -1/(t + t_lo), t_lo t's rounding error, would be within 1.3 ulp
    but cost a tenth more; this one is a tenth faster than sin r / cos r (one polynomial, not two)."""
    b = e.b
    z = b.fmul(r, r)
    t = b.fadd(r, e.fma(b.fmul(r, z), e.poly(z, _TAN_F32), e.fma(r_lo, z, r_lo)))
    odd = b.icmp_unsigned("!=", b.and_(q, f.i(1)), f.i(0))
    return e.sel(odd, b.fdiv(f.c(-1.0), t), t)


def _trig_body(f: _F, which):
    def body(b, x):
        e = _Emit(b, f)
        r, r_lo, q = _reduce_half_pi(e, f, e.fabs(x))
        return _trig_from_quadrant(e, f, which, r, r_lo, q, x)
    return body


def _trig_vector_body(f: _F, which, large_fn):
    """A vector variant: the lanes by the small-argument path; unless all are small (one
    ``kortest`` of the mask ``_reduce_small`` computes anyway, and a branch), the vector again by
    ``large_fn`` (``_trig_body``'s: both reductions, selected), a call, so that its registers
    and constants stay out of the loop's own.

    Measured (2-core AVX-512 host shared with other jobs, elementwise kernels of 2**22 elements,
    |x| <= 100, in-process interleaved A/B against the Cody-Waite-only functions, medians of 41):
    f32 sin 0.95 -> 1.04 ms (fastest runs 0.87 -> 0.89), f64 sin 2.52 -> 2.54 ms, cos likewise;
    with the large reduction inline in the branch f32 sin took 1.9x (its constants and spills in
    the loop), with it on every lane, selected, 2.6x (f64: 5x in cache).  A vector with a large
    lane costs about 5x (f32) / 7x (f64) a small one's.  Row sums of sin ([1024, 1024], axis 1)
    run 10-15% slower (0.20 -> 0.22 ms f32, 0.58 -> 0.67 ms f64): the loop's four interleaved
    copies are no longer scheduled together, each ends in its branch; before the call's callee
    saved the registers it uses (``no_caller_saved_registers``), spills around it on the hot path
    made that 15-30%."""
    def body(b, x):
        e = _Emit(b, f)
        r, r_lo, q, small = _reduce_small(e, f, e.fabs(x))
        fast = _trig_from_quadrant(e, f, which, r, r_lo, q, x)
        mask = f.vt(ir.IntType(1))
        all_small = _intrinsic(b.module, f"llvm.vector.reduce.and.{f.sfx(ir.IntType(1))}", ir.IntType(1), [mask])
        before = b.block
        with b.if_then(b.not_(b.call(all_small, [small])), likely=False):
            slow = b.call(large_fn, [x])
            slow_block = b.block
        v = b.phi(f.ty)
        v.add_incoming(fast, before)
        v.add_incoming(slow, slow_block)
        return v
    return body


# ---- atan, atan2, asin, acos ----------------------------------------------------------------------
_PI = 3.141592653589793


def _atan_unit(e: "_Emit", f: _F, t):
    """atan(t) for t in [0, 1]: above tan(pi/12), pi/6 + atan((t sqrt3 - 1) / (t + sqrt3)); then the
    Taylor series on [0, tan(pi/12)] (the first term left out below half an ulp)."""
    b = e.b
    sqrt3 = 1.7320508075688772
    shift = e.lt(f.c(0.2679491924311227), t)
    u = e.sel(shift, b.fdiv(e.fma(t, f.c(sqrt3), f.c(-1.0)), b.fadd(t, f.c(sqrt3))), t)
    nterms = 15 if f.f64 else 7
    p = b.fmul(u, e.poly(b.fmul(u, u), [(-1) ** k / (2 * k + 1) for k in range(nterms)]))
    return e.sel(shift, b.fadd(f.c(_PI / 6), p), p)


def _copysign(e: "_Emit", f: _F, mag, sign):
    cs = _intrinsic(e.b.module, f"llvm.copysign.{f.suffix}", f.ty, [f.ty, f.ty])
    return e.b.call(cs, [mag, sign])


def _atan_body(f: _F):
    def body(b, x):
        e = _Emit(b, f)
        a = e.fabs(x)
        inv = e.lt(f.c(1.0), a)                 # atan(a) = pi/2 - atan(1/a)
        r = _atan_unit(e, f, e.sel(inv, b.fdiv(f.c(1.0), a), a))
        return _copysign(e, f, e.sel(inv, b.fsub(f.c(_PI / 2), r), r), x)
    return body


def _atan2_body(f: _F):
    def body(b, y, x):
        e = _Emit(b, f)
        ax, ay = e.fabs(x), e.fabs(y)
        swap = e.lt(ax, ay)                     # atan(ay/ax) = pi/2 - atan(ax/ay)
        q = b.fdiv(e.sel(swap, ax, ay), e.sel(swap, ay, ax))
        inf = f.c(float("inf"))
        both_inf = b.and_(b.fcmp_ordered("==", ax, inf), b.fcmp_ordered("==", ay, inf))
        both_zero = b.and_(b.fcmp_ordered("==", ax, f.c(0.0)), b.fcmp_ordered("==", ay, f.c(0.0)))
        r = _atan_unit(e, f, q)
        r = e.sel(both_inf, f.c(_PI / 4), e.sel(both_zero, f.c(0.0), r))
        r = e.sel(swap, b.fsub(f.c(_PI / 2), r), r)
        x_neg = b.icmp_signed("<", b.bitcast(x, f.ity), f.i(0))     # sign bit: atan2(0, -0) is pi
        r = e.sel(x_neg, b.fsub(f.c(_PI), r), r)
        r = _copysign(e, f, r, y)
        return e.sel(b.or_(e.isnan(x), e.isnan(y)), b.fadd(x, y), r)
    return body


def _asin_acos_body(f: _F, module, which):
    def body(b, x):
        # asin x = atan2(x, sqrt(1 - x^2)), acos x = atan2(sqrt(1 - x^2), x); (1 - x)(1 + x) keeps
        # the digits of 1 - x^2 near |x| = 1; |x| > 1 gives sqrt of a negative: NaN
        c = b.call(_intrinsic(module, f"llvm.sqrt.{f.suffix}", f.ty, [f.ty]),
                   [b.fmul(b.fsub(f.c(1.0), x), b.fadd(f.c(1.0), x))])
        at2 = math_fn(module, "atan2", f.ty)
        return b.call(at2, [x, c] if which == "asin" else [c, x])
    return body


# ---- sinh, cosh, asinh, acosh, atanh ---------------------------------------------------------------
def _sinh_cosh_body(f: _F, module, which):
    def body(b, x):
        e = _Emit(b, f)
        a = e.fabs(x)
        ex = math_fn(module, "exp", f.ty)
        # large |x|: exp(a/2) * (exp(a/2) / 2) overflows only where the result does
        h = b.call(ex, [b.fmul(a, f.c(0.5))])
        big = b.fmul(h, b.fmul(h, f.c(0.5)))
        if which == "sinh":
            u = b.call(math_fn(module, "expm1", f.ty), [a])        # sinh a = (u + u / (u + 1)) / 2: exact near 0
            small = b.fmul(f.c(0.5), b.fadd(u, b.fdiv(u, b.fadd(u, f.c(1.0)))))
            r = e.sel(e.lt(a, f.c(20.0)), small, big)
            return _copysign(e, f, r, x)
        ea = b.call(ex, [a])
        small = b.fmul(f.c(0.5), b.fadd(ea, b.fdiv(f.c(1.0), ea)))
        return e.sel(e.lt(a, f.c(20.0)), small, big)
    return body


def _asinh_body(f: _F, module):
    def body(b, x):
        # asinh a = log1p(a + a^2 / (1 + sqrt(1 + a^2))); beyond 2^28 (f32: 2^12) a^2 would
        # overflow or add nothing: log(a) + log(2)
        e = _Emit(b, f)
        a = e.fabs(x)
        sq = _intrinsic(module, f"llvm.sqrt.{f.suffix}", f.ty, [f.ty])
        a2 = b.fmul(a, a)
        small = b.call(math_fn(module, "log1p", f.ty),
                       [b.fadd(a, b.fdiv(a2, b.fadd(f.c(1.0), b.call(sq, [b.fadd(f.c(1.0), a2)]))))])
        big = b.fadd(b.call(math_fn(module, "log", f.ty), [a]), f.c(0.6931471805599453))
        r = e.sel(e.lt(a, f.c(2.0 ** 28 if f.f64 else 2.0 ** 12)), small, big)
        return _copysign(e, f, r, x)
    return body


def _acosh_body(f: _F, module):
    def body(b, x):
        # acosh x = log1p(t + sqrt(2t + t^2)), t = x - 1 (exact near 1); beyond 2^28: log(x) + log(2)
        e = _Emit(b, f)
        t = b.fsub(x, f.c(1.0))
        sq = _intrinsic(module, f"llvm.sqrt.{f.suffix}", f.ty, [f.ty])
        small = b.call(math_fn(module, "log1p", f.ty), [b.fadd(t, b.call(sq, [e.fma(t, t, b.fadd(t, t))]))])
        big = b.fadd(b.call(math_fn(module, "log", f.ty), [x]), f.c(0.6931471805599453))
        r = e.sel(e.lt(x, f.c(2.0 ** 28 if f.f64 else 2.0 ** 12)), small, big)
        return e.sel(e.lt(x, f.c(1.0)), f.c(float("nan")), r)        # below the domain
    return body


def _atanh_body(f: _F, module):
    def body(b, x):
        # atanh a = log1p(2a / (1 - a)) / 2
        e = _Emit(b, f)
        a = e.fabs(x)
        r = b.fmul(f.c(0.5), b.call(math_fn(module, "log1p", f.ty), [b.fdiv(b.fadd(a, a), b.fsub(f.c(1.0), a))]))
        return _copysign(e, f, r, x)
    return body


# ---- tanh, sigmoid ---------------------------------------------------------------------------------
def _tanh_body(f: _F, module):
    def body(b, x):
        e = _Emit(b, f)
        ax = e.fabs(x)
        ex = b.call(math_fn(module, "exp", f.ty), [b.fadd(ax, ax)])
        big = b.fsub(f.c(1.0), b.fdiv(f.c(2.0), b.fadd(ex, f.c(1.0))))
        z = b.fmul(x, x)
        small = b.fmul(x, e.poly(z, _TANH[:12 if f.f64 else 6]))
        cs = _intrinsic(module, f"llvm.copysign.{f.suffix}", f.ty, [f.ty, f.ty])
        big = b.call(cs, [big, x])
        return e.sel(e.lt(ax, f.c(0.2)), small, e.sel(e.isnan(x), x, big))
    return body


def _sigmoid_body(f: _F, module):
    def body(b, x):
        ex = b.call(math_fn(module, "exp", f.ty), [b.fneg(x)])
        return b.fdiv(f.c(1.0), b.fadd(f.c(1.0), ex))
    return body


# ---- pow ----------------------------------------------------------------------------------------
def _pow_body(f: _F, module):
    def body(b, a, y):
        if not f.f64:
            r = b.call(math_fn(module, "pow", F64), [b.fpext(a, F64), b.fpext(y, F64)])
            return b.fptrunc(r, F32)
        e = _Emit(b, f)
        la = b.call(math_fn(module, "log", f.ty), [e.fabs(a)])
        r = b.call(math_fn(module, "exp", f.ty), [b.fmul(y, la)])
        yint = b.fcmp_ordered("==", e.rint(y), y)
        half = b.fmul(y, f.c(0.5))
        yodd = b.and_(yint, b.fcmp_unordered("!=", e.rint(half), half))
        neg = e.lt(a, f.c(0.0))
        signed = e.sel(yodd, b.fneg(r), r)
        r = e.sel(neg, e.sel(yint, signed, f.c(float("nan"))), r)
        one = b.or_(b.fcmp_ordered("==", y, f.c(0.0)), b.fcmp_ordered("==", a, f.c(1.0)))
        unit_inf = b.and_(b.fcmp_ordered("==", e.fabs(a), f.c(1.0)),
                          b.fcmp_ordered("==", e.fabs(y), f.c(float("inf"))))
        one = b.or_(one, unit_inf)          # C99: pow(-1, +-inf) == 1
        return e.sel(one, f.c(1.0), r)
    return body


def ipow_fn(module):
    """i64 power by squaring (negative exponents: 1, +-1 for base +-1, else 0)."""
    name = "gradc.ipow.i64"
    fn = module.globals.get(name)
    if fn is not None:
        return fn
    fn = ir.Function(module, ir.FunctionType(I64, [I64, I64]), name)
    fn.linkage = "internal"
    a, n = fn.args
    entry, loop, done = (fn.append_basic_block(s) for s in ("entry", "loop", "done"))
    b = ir.IRBuilder(entry)
    one, zero = ir.Constant(I64, 1), ir.Constant(I64, 0)
    # n <= 0: n == 0 -> 1; base 1 -> 1; base -1 -> +-1; otherwise 0
    nodd = b.icmp_unsigned("!=", b.and_(n, one), zero)
    m1 = b.select(nodd, ir.Constant(I64, -1), one)
    negres = b.select(b.icmp_signed("==", a, one), one,
                      b.select(b.icmp_signed("==", a, ir.Constant(I64, -1)), m1, zero))
    small = b.select(b.icmp_signed("==", n, zero), one, negres)
    b.cbranch(b.icmp_signed(">", n, zero), loop, done)
    b.position_at_end(loop)
    acc = b.phi(I64)
    base = b.phi(I64)
    k = b.phi(I64)
    acc.add_incoming(one, entry)
    base.add_incoming(a, entry)
    k.add_incoming(n, entry)
    odd = b.icmp_unsigned("!=", b.and_(k, one), zero)
    acc2 = b.select(odd, b.mul(acc, base), acc)
    base2 = b.mul(base, base)
    k2 = b.lshr(k, one)
    acc.add_incoming(acc2, loop)
    base.add_incoming(base2, loop)
    k.add_incoming(k2, loop)
    b.cbranch(b.icmp_unsigned("!=", k2, zero), loop, done)
    b.position_at_end(done)
    res = b.phi(I64)
    res.add_incoming(acc2, loop)
    res.add_incoming(small, entry)
    b.ret(res)
    return fn


# name -> (operand count, body maker (float constants, module) -> body(builder, *operands))
_BODIES = {
    "exp": (1, lambda f, m: _exp_body(f)),
    "log": (1, lambda f, m: _log_body(f)),
    "log2": (1, lambda f, m: _log_body(f, "2")),
    "log10": (1, lambda f, m: _log_body(f, "10")),
    "exp2": (1, lambda f, m: _exp_body(f, base2=True)),
    "log1p": (1, _log1p_body),
    "expm1": (1, _expm1_body),
    "erf": (1, _erf_body),
    "sin": (1, lambda f, m: _trig_body(f, "sin")),
    "cos": (1, lambda f, m: _trig_body(f, "cos")),
    "tan": (1, lambda f, m: _trig_body(f, "tan")),
    "atan": (1, lambda f, m: _atan_body(f)),
    "atan2": (2, lambda f, m: _atan2_body(f)),
    "asin": (1, lambda f, m: _asin_acos_body(f, m, "asin")),
    "acos": (1, lambda f, m: _asin_acos_body(f, m, "acos")),
    "sinh": (1, lambda f, m: _sinh_cosh_body(f, m, "sinh")),
    "cosh": (1, lambda f, m: _sinh_cosh_body(f, m, "cosh")),
    "tanh": (1, _tanh_body),
    "asinh": (1, _asinh_body),
    "acosh": (1, _acosh_body),
    "atanh": (1, _atanh_body),
    "sigmoid": (1, _sigmoid_body),
    "pow": (2, _pow_body),
}


FUNCTIONS = frozenset(_BODIES)


# ---- vector variants (CPU) ------------------------------------------------------------------------
# sin, cos, tan on the CPU: the scalar function is not inlined before the loop vectorizer runs, and
# names its vector variants (``vector-function-abi-variant``), which the vectorizer calls instead:
# these take the large-argument branch once per vector, where any lane needs it, which a
# vectorized inlined scalar branch could not (it runs both sides, selected, for every vector).
# ``llvm_cpu.optimize`` inlines the variants after vectorization and drops them
# (``VECTOR_VARIANT``: their names).
_VECTOR_VARIANTS = {"sin", "cos", "tan"}
VECTOR_VARIANT = re.compile(r"gradc\.\w+\.(f32|f64)\.v\d+|gradc\.\w+\.ptr\.v")   # also row_prefetch's


class _Attributes(ir.values.FunctionAttributes):
    """llvmlite's function attributes, plus ``willreturn`` and string ones (``"key"="value"``)."""
    _known = ir.values.FunctionAttributes._known | {"willreturn"}

    def add(self, name):
        if name.startswith('"'):
            return set.add(self, name)
        return super().add(name)


def _vector_lanes(f: _F) -> tuple:
    """The host's vector width in lanes of ``f``: the loop vectorizer's main loops.  (A variant for
    its epilogues, half that, cost a fifth more compile time; their lanes call the scalar function.)"""
    from .llvm_cpu import vector_bits     # llvm_cpu imports this module
    return (vector_bits() // (64 if f.f64 else 32),)


def _define_with_variants(module, name: str, f: _F):
    """The scalar ``gradc.<name>.<f32|f64>`` (not inlined; its vector variants named) and the
    variants ``gradc.<name>.<f32|f64>.v<lanes>`` (inlined once the vectorizer calls them)."""
    fname = f"gradc.{name}.{f.suffix}"
    fn = module.globals.get(fname)
    if fn is not None:
        return fn
    fn = _define(module, fname, f.ty, 1, _trig_body(f, name), inline=False)
    variants = []
    for lanes in _vector_lanes(f):
        fv = _F(f.scalar, lanes)
        large = _define(module, f"{fname}.v{lanes}.large", fv.ty, 1, _trig_body(fv, name), inline=False)
        # the callee saves what it uses: a call clobbering every zmm register made the loop spill
        # values that live across its interleaved copies' branches on the hot path too
        large.attributes = _Attributes(sorted(large.attributes) + ['"no_caller_saved_registers"'])
        v = _define(module, f"{fname}.v{lanes}", fv.ty, 1, _trig_vector_body(fv, name, large))
        v.linkage = ""          # external: kept, uncalled, until the vectorizer runs (then internal, dropped)
        variants.append(v)
    abi = ",".join(f"_ZGV_LLVM_N{v.type.pointee.args[0].count}v_{fname}({v.name})" for v in variants)
    fn.attributes = _Attributes(sorted(fn.attributes) + ["readnone", "willreturn",
                                                         f'"vector-function-abi-variant"="{abi}"'])
    return fn


def _is_cpu(module) -> bool:
    return bool(module.triple) and "nvptx" not in module.triple


def math_fn(module, name: str, ty):
    """The module's ``gradc.<name>.<f32|f64>`` function (emitted on first use)."""
    nargs, make = _BODIES[name]
    f = _F(ty)
    if name in _VECTOR_VARIANTS and _is_cpu(module):
        return _define_with_variants(module, name, f)
    return _define(module, f"gradc.{name}.{f.suffix}", ty, nargs, make(f, module))
