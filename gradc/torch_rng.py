"""PyTorch's CPU random number stream, bit for bit: ``torch.manual_seed(0); torch.randn(3)``
and ``gradc.manual_seed(0); gradc.randn(3)`` give the same numbers.

PyTorch's CPU generator is a 32-bit Mersenne Twister (mt19937, seeded with the low 32 bits of
the seed as ``init_genrand`` does); NumPy's ``MT19937`` bit generator with its legacy seeding
is the same engine, and gives its raw 32-bit outputs.  On top of it this module spells the
transformations of ATen's CPU kernels (``DistributionsHelper.h``, ``TransformationHelper.h``,
``cpu/DistributionTemplates.h``), checked against PyTorch 2.13 on x86-64:

* a float (and float16) uniform in [0, 1) takes the low 24 bits of one 32-bit draw, a double
  the low 53 bits of a 64-bit draw (two 32-bit draws, the first the high word);
* ``uniform_(a, b)`` is ``u * (b - a) + a``, fused, in float (float16 too) or double;
* normal draws of 16 or more float32 elements fill the tensor with float uniforms and turn
  each block of 16 into normals by Box-Muller with the AVX2 ``log``/``sincos`` approximations
  of ``avx_mathfun.h`` (PyTorch keeps its normal kernel off AVX-512), with the FMA
  contractions the compiled kernel has; a tail shorter than 16 redraws the last 16.  Other
  dtypes of 16 or more do the same with the C library's functions; fewer than 16 elements
  draw one double normal each (Box-Muller on two double uniforms, the second value kept for
  the next draw: the generator's cached normal);
* integers in [low, high) are ``draw % (high - low) + low`` with a 64-bit draw when the range
  is 2**28 or more, a 32-bit one otherwise; ``randperm`` is a Fisher-Yates shuffle with
  ``draw % (n - i)``; bernoulli(p) is ``double uniform < p`` (PyTorch's non-MKL path, which it
  also takes on AMD processors; on Intel ones it uses MKL's stream instead).

Float32 normal fills of 4096 or more elements and longer shuffles run small functions compiled
once through llvmlite (``_native``) that do the same operations as the NumPy code beside them.

Not reproduced: float16 normal draws (PyTorch rounds each step of its Box-Muller to half
precision; gradc computes in float32 and rounds once: about a third of the values differ in the
last bit); poisson and binomial (NumPy's samplers, seeded from this stream).
"""
from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

F32 = np.float32
_U53 = np.uint64((1 << 53) - 1)
_NORMAL_BLOCK = 16
_CHUNK = 1 << 14          # elements turned into normals at a time (a multiple of _NORMAL_BLOCK)
_NATIVE_NORMAL_MIN = 1 << 12      # float32 normal fills this large run compiled (_normal_fill_native)


def _fma32(a, b, c):
    """float32 fused multiply-add (the product is exact in float64; one rounding of the sum in
    float64, then to float32: equal to a true fma except in rare double-rounding ties)."""
    return (np.asarray(a, np.float64) * np.asarray(b, np.float64) + np.asarray(c, np.float64)).astype(F32)


def _log_avx(x):
    """``log256_ps`` of avx_mathfun.h (cephes' logf), float32, with the compiled FMAs."""
    x = np.maximum(x.astype(F32), np.array(0x00800000, np.int32).view(F32))
    bits = x.view(np.int32)
    e = ((bits.view(np.uint32) >> np.uint32(23)).astype(np.int32) - np.int32(0x7F)).astype(F32) + F32(1)
    x = ((bits & np.int32(~0x7F800000)) | np.array(0.5, F32).view(np.int32)).view(F32)
    small = x < F32(0.707106781186547524)
    x = (x - F32(1)) + np.where(small, x, F32(0))
    e = e - np.where(small, F32(1), F32(0))
    z = x * x
    y = np.full_like(x, F32(7.0376836292e-2))
    for c in (-1.1514610310e-1, 1.1676998740e-1, -1.2420140846e-1, 1.4249322787e-1, -1.6668057665e-1,
              2.0000714765e-1, -2.4999993993e-1, 3.3333331174e-1):
        y = _fma32(y, x, F32(c))
    y = _fma32(y * x, z, e * F32(-2.12194440e-4))
    y = _fma32(-z, F32(0.5), y)
    return _fma32(e, F32(0.693359375), x + y)


def _sincos_avx(x):
    """``sincos256_ps`` of avx_mathfun.h (cephes' sinf/cosf), float32, with the compiled FMAs."""
    x = x.astype(F32)
    sign_sin = x.view(np.int32) & np.int32(-0x80000000)
    x = np.abs(x)
    j = ((x * F32(1.27323954473516)).astype(np.int32) + 1) & ~1
    y = j.astype(F32)
    for dp in (-0.78515625, -2.4187564849853515625e-4, -3.77489497744594108e-8):
        x = _fma32(y, F32(dp), x)
    sign_sin = sign_sin ^ ((j & 4) << 29)
    sign_cos = (~(j - 2) & 4) << 29
    sin_poly = (j & 2) == 0
    z = x * x
    yc = _fma32(_fma32(F32(2.443315711809948e-5), z, F32(-1.388731625493765e-3)), z, F32(4.166664568298827e-2))
    yc = _fma32(yc * z, z, -(z * F32(0.5))) + F32(1)
    ys = _fma32(_fma32(F32(-1.9515295891e-4), z, F32(8.3321608736e-3)), z, F32(-1.6666654611e-1))
    ys = _fma32(ys * z, x, x)
    s_part = np.where(sin_poly, ys, F32(0)) + np.where(sin_poly, F32(0), yc)
    c_part = np.where(sin_poly, yc, F32(0)) + np.where(sin_poly, F32(0), ys)
    return ((s_part.view(np.int32) ^ sign_sin).view(F32), (c_part.view(np.int32) ^ sign_cos).view(F32))


def _fma64(a: float, b: float, c: float) -> float:
    """double fused multiply-add, exactly rounded (the compiled kernels contract ``a * b + c``)."""
    return float(Fraction(a) * Fraction(b) + Fraction(c))


def _libm(fn, x):
    """``fn`` (a math-module function: the C library's, as C++'s std:: calls) of each element."""
    flat = np.asarray(x, np.float64).ravel()
    return np.fromiter(map(fn, flat.tolist()), np.float64, flat.size).reshape(np.shape(x))


class TorchStream:
    """One PyTorch CPU generator's stream: the engine and the cached second normal values."""

    def __init__(self, seed: int):
        self.bits = np.random.MT19937()
        self.bits._legacy_seeding(int(seed) & 0xFFFFFFFF)
        self.next_double_normal = None

    # ---- raw draws ---------------------------------------------------------------------------
    def u32(self, n: int) -> np.ndarray:
        return self.bits.random_raw(int(n)).astype(np.uint64, copy=False)

    def u64(self, n: int) -> np.ndarray:
        r = self.u32(2 * int(n))
        return (r[0::2] << np.uint64(32)) | r[1::2]

    def unit(self, n: int, dtype) -> np.ndarray:
        """``n`` uniforms in [0, 1) as PyTorch draws them for ``dtype`` (float32 for float16)."""
        dtype = np.dtype(dtype)
        if dtype == np.float64:
            return (self.u64(n) & _U53).astype(np.float64) * 2.0 ** -53
        low24 = self.u32(n).astype(np.uint32) & np.uint32((1 << 24) - 1)     # (exact in float32)
        return low24.view(np.int32).astype(F32) * F32(2.0 ** -24)          # (float16: drawn as float)

    # ---- distributions -----------------------------------------------------------------------
    def uniform(self, low, high, shape, dtype=np.float64) -> np.ndarray:
        dtype = np.dtype(dtype)
        n = math.prod(shape)
        u = self.unit(n, dtype)
        if float(low) == 0.0 and float(high) == 1.0:
            out = u                        # (u * 1 + 0, fused or not, is u)
        elif dtype == np.float64:
            out = _fma64_array(u, float(high) - float(low), float(low))
        else:
            out = _fma32(u, F32(high) - F32(low), F32(low))
        return out.astype(dtype).reshape(shape)

    def random(self, shape, dtype=np.float64) -> np.ndarray:
        return self.uniform(0.0, 1.0, shape, dtype)

    def normal(self, mean, std, shape, dtype=np.float64) -> np.ndarray:
        dtype = np.dtype(dtype)
        n = math.prod(shape)
        if n >= _NORMAL_BLOCK:
            out = self._normal_fill(n, dtype, mean, std)
        else:
            out = np.array([self._one_normal(mean, std) for _ in range(n)], np.float64)
        return out.astype(dtype).reshape(shape)

    def standard_normal(self, shape, dtype=np.float64) -> np.ndarray:
        return self.normal(0.0, 1.0, shape, dtype)

    def _one_normal(self, mean, std) -> float:
        """One double normal with ``mean`` and ``std``: ATen's ``val * std + mean``, fused."""
        return _fma64(self._one_double_normal(), float(std), float(mean))

    def _one_double_normal(self) -> float:
        if self.next_double_normal is not None:
            v, self.next_double_normal = self.next_double_normal, None
            return v
        u1, u2 = self.unit(2, np.float64)
        r = math.sqrt(-2.0 * math.log1p(-float(u2)))
        theta = 2.0 * math.pi * float(u1)
        self.next_double_normal = r * math.sin(theta)
        return r * math.cos(theta)

    def _normal_fill(self, n: int, dtype, mean, std) -> np.ndarray:
        data = self.unit(n, dtype)
        whole = n - n % _NORMAL_BLOCK
        out = data.copy()
        if dtype == np.float32 and whole >= _NATIVE_NORMAL_MIN:        # the same operations, compiled
            _normal_fill_native(out[:whole], mean, std)
        elif dtype == np.float64 and whole >= _NATIVE_NORMAL_MIN:
            _normal_fill64_native(out[:whole], mean, std)
        else:
            for lo in range(0, whole, _CHUNK):      # (in chunks: the temporaries stay in the cache)
                hi = min(whole, lo + _CHUNK)
                out[lo:hi] = self._box_muller(data[lo:hi], dtype, mean, std)
        if n % _NORMAL_BLOCK:           # PyTorch redraws the last 16 values
            out[n - _NORMAL_BLOCK:] = self._box_muller(self.unit(_NORMAL_BLOCK, dtype), dtype, mean, std)
        return out

    @staticmethod
    def _box_muller(data, dtype, mean, std):
        """Blocks of 16 uniforms to normals: the first 8 of a block give radius, the last 8 angle."""
        blocks = data.reshape(-1, 2, _NORMAL_BLOCK // 2)
        u1, u2 = 1 - blocks[:, 0], blocks[:, 1]
        if dtype == np.float32:
            radius = np.sqrt(F32(-2) * _log_avx(u1))
            s, c = _sincos_avx(F32(2.0 * math.pi) * u2)
            first, second = _fma32(radius * c, F32(std), F32(mean)), _fma32(radius * s, F32(std), F32(mean))
        else:
            acc = np.float64 if dtype == np.float64 else F32
            radius = np.sqrt(acc(-2) * _libm(math.log, u1).astype(acc))
            theta = (2.0 * math.pi * u2.astype(np.float64)).astype(acc)
            fma = _fma64_array if acc is np.float64 else _fma32
            first = fma(radius * _libm(math.cos, theta).astype(acc), acc(std), acc(mean))
            second = fma(radius * _libm(math.sin, theta).astype(acc), acc(std), acc(mean))
        return np.stack([first, second], axis=1).reshape(-1)

    def integers(self, low, high, size=(), dtype=np.int64) -> np.ndarray:
        low, high = int(low), int(high)
        span = high - low
        n = math.prod(size) if isinstance(size, tuple) else int(size)
        raw = self.u64(n) if span >= 1 << 28 else self.u32(n)
        vals = (raw % np.uint64(span)).astype(np.int64) + np.int64(low) if span < 1 << 63 else \
            np.array([int(v) % span + low for v in raw.tolist()], np.int64)
        return vals.reshape(size)

    def permutation(self, n: int) -> np.ndarray:
        n = int(n)
        if n > _NATIVE_SHUFFLE_MIN:
            out = np.arange(n, dtype=np.int64)
            draws = np.ascontiguousarray(self.u32(n - 1))
            _fisher_yates(out, draws)
            return out
        out = list(range(n))
        if n > 1:
            draws = self.u32(n - 1).tolist()
            for i, r in enumerate(draws):
                z = i + r % (n - i)
                out[i], out[z] = out[z], out[i]
        return np.array(out, np.int64)

    def bernoulli(self, p, shape) -> np.ndarray:
        """``double uniform < p`` per element (``p`` a number or an array of the shape)."""
        u = self.unit(math.prod(shape), np.float64).reshape(shape)
        return u < p

    def exponential(self, scale, shape) -> np.ndarray:
        """``-1/lambda * log1p(-u)`` of double uniforms (``scale`` = 1/lambda)."""
        u = self.unit(math.prod(shape), np.float64)
        return (-scale * _libm(math.log1p, -u)).reshape(shape)

    def log_normal(self, mean, std, shape) -> np.ndarray:
        """``exp`` of double normals (one at a time, with the cached second value)."""
        n = math.prod(shape)
        return np.array([math.exp(self._one_normal(mean, std)) for _ in range(n)], np.float64).reshape(shape)

    def geometric(self, p, shape) -> np.ndarray:
        """``ceil(log(u) / log(1 - p))`` of double uniforms."""
        u = self.unit(math.prod(shape), np.float64)
        return np.ceil(_libm(math.log, u) / math.log(1 - p)).reshape(shape)

    def cauchy(self, median, sigma, shape) -> np.ndarray:
        """``median + sigma * tan(pi * (u - 0.5))`` of double uniforms."""
        u = self.unit(math.prod(shape), np.float64)
        return _fma64_array(_libm(math.tan, math.pi * (u - 0.5)), float(sigma), float(median)).reshape(shape)

    def multinomial_rows(self, rows: np.ndarray, n_sample: int, replacement: bool, dtype) -> np.ndarray:
        """PyTorch's CPU multinomial of each row of ``rows`` (non-negative weights): without
        replacement (or one sample) the largest ``row / q`` with ``q`` exponential draws of the
        rows' dtype (its topk); with replacement a double uniform per sample searched in the
        row's normalised cumulative distribution."""
        if not replacement or n_sample == 1:
            q = self.exponential(1.0, rows.shape).astype(dtype)
            keys = (rows.astype(dtype) / q).astype(dtype)
            order = np.argsort(-keys, axis=1, kind="stable")
            return order[:, :n_sample]
        out = np.empty((rows.shape[0], n_sample), np.int64)
        for i, row in enumerate(rows):
            acc = np.float64 if np.dtype(dtype) == np.float64 else F32
            cum = np.cumsum(row.astype(acc), dtype=acc)
            cum = (cum / cum[-1]).astype(acc)
            cum[-1] = 1
            u = self.unit(n_sample, np.float64)
            for k in range(n_sample):
                left, right = 0, cum.size
                while right - left > 0:
                    mid = left + (right - left) // 2
                    if cum[mid] < u[k]:
                        left = mid + 1
                    else:
                        right = mid
                out[i, k] = left
        return out

    # ---- samplers whose PyTorch algorithm is not reproduced here ------------------------------
    def _numpy_generator(self) -> np.random.Generator:
        """A NumPy generator seeded with one 64-bit draw of this stream: the right distribution
        and reproducible after a seed, but not PyTorch's numbers (poisson, binomial)."""
        return np.random.Generator(np.random.PCG64(int(self.u64(1)[0])))

    def poisson(self, lam, shape) -> np.ndarray:
        return self._numpy_generator().poisson(lam, shape)

    def binomial(self, n, p, shape) -> np.ndarray:
        return self._numpy_generator().binomial(n, p, shape)


# ---- randperm's shuffle, compiled for long permutations -------------------------------------------
_NATIVE_SHUFFLE_MIN = 1 << 12      # shorter ones shuffle in Python (no compile on first use)
def _loop_function(name: str, params: str, setup: str, count: str, body: str, declares: str = "") -> str:
    """LLVM IR of ``void @name(params)``: ``setup``, then ``body`` for ``%i`` from 0 while below
    ``count`` (an i64 value ``setup`` or ``params`` names)."""
    return f"""{declares}
define void @{name}({params}) {{
entry:
{setup}
  %any = icmp sgt i64 {count}, 0
  br i1 %any, label %loop, label %done
loop:
  %i = phi i64 [0, %entry], [%next, %loop]
{body}
  %next = add i64 %i, 1
  %more = icmp slt i64 %next, {count}
  br i1 %more, label %loop, label %done
done:
  ret void
}}
"""


_SHUFFLE_IR = _loop_function("gradc_fisher_yates", "ptr %out, ptr %draws, i64 %n", "  %last = sub i64 %n, 1", "%last", """\
  %dp = getelementptr inbounds i64, ptr %draws, i64 %i
  %d = load i64, ptr %dp
  %left = sub i64 %n, %i
  %r = urem i64 %d, %left
  %z = add i64 %i, %r
  %pi = getelementptr inbounds i64, ptr %out, i64 %i
  %pz = getelementptr inbounds i64, ptr %out, i64 %z
  %vi = load i64, ptr %pi
  %vz = load i64, ptr %pz
  store i64 %vz, ptr %pi
  store i64 %vi, ptr %pz""")
_compiled: dict = {}      # symbol -> (its execution engine, kept alive; the ctypes function)


def _native(symbol: str, make_ir, *argtypes):
    """The function ``symbol`` of the LLVM IR ``make_ir()``, compiled once through llvmlite (and
    the disk cache) and called through ctypes with ``argtypes``."""
    hit = _compiled.get(symbol)
    if hit is None:
        import ctypes
        from .codegen.runtime_cpu import jit_llvm_ir
        engine, addrs = jit_llvm_ir(make_ir(), [symbol])
        hit = _compiled[symbol] = (engine, ctypes.CFUNCTYPE(None, *argtypes)(addrs[symbol]))
    return hit[1]


def _fisher_yates(out: np.ndarray, draws: np.ndarray) -> None:
    """PyTorch's randperm shuffle of ``out`` (int64, 0..n-1) in place: for i < n - 1, swap
    ``out[i]`` with ``out[i + draws[i] % (n - i)]``, compiled."""
    import ctypes
    fn = _native("gradc_fisher_yates", lambda: _SHUFFLE_IR, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64)
    fn(out.ctypes.data, draws.ctypes.data, out.size)


# ---- float32 Box-Muller, compiled: the same operations as _log_avx/_sincos_avx/_box_muller ------
def _f32_hex(v: float) -> str:
    """A float32 constant as LLVM IR spells it (the double with the float's value, in hex)."""
    return "0x%016X" % np.array(np.float32(v), np.float64).view(np.uint64)


def _block_pair_function(name: str, elem: str, body: str, declares: str) -> str:
    """LLVM IR of ``void @name(ptr %data, i64 %blocks, <elem> %mean, <elem> %std)``: for each block
    of 16 values (``%row1``: its first 8, ``%row2``: its last 8), ``body`` for each ``%j`` of its 8
    pairs.  Unit stride in ``%j``, so the loop vectorizer makes a block one pass of 8-lane vectors
    (no fast-math: every lane rounds as the scalar code does); the pairs as one flat loop (index
    16 * (k >> 3) + (k & 7)) stayed scalar: 16M float32 uniforms to normals took 0.16 s, now 0.015."""
    return f"""{declares}
define void @{name}(ptr %data, i64 %blocks, {elem} %mean, {elem} %std) {{
entry:
  %any = icmp sgt i64 %blocks, 0
  br i1 %any, label %block, label %done
block:
  %i = phi i64 [0, %entry], [%next, %block.end]
  %base = shl i64 %i, 4
  %row1 = getelementptr inbounds {elem}, ptr %data, i64 %base
  %row2 = getelementptr inbounds {elem}, ptr %row1, i64 8
  br label %pair
pair:
  %j = phi i64 [0, %block], [%jnext, %pair]
{body}
  %jnext = add nuw nsw i64 %j, 1
  %jmore = icmp ult i64 %jnext, 8
  br i1 %jmore, label %pair, label %block.end
block.end:
  %next = add i64 %i, 1
  %more = icmp slt i64 %next, %blocks
  br i1 %more, label %block, label %done
done:
  ret void
}}
"""


_TWO_PI_HEX = "0x%016X" % np.array(2.0 * math.pi).view(np.uint64)


def _normal_fill_ir() -> str:
    """LLVM IR of ``gradc_normal_fill(ptr data, i64 blocks, float mean, float std)``: each block of
    16 float uniforms in place to normals, step by step as ``_box_muller``'s float32 branch (plain
    fmul/fadd/fsub without fast-math flags round like NumPy's float32 ops, llvm.fma is _fma32)."""
    lines, n = [], [0]

    def v(expr):
        n[0] += 1
        lines.append(f"  %t{n[0]} = {expr}")
        return f"%t{n[0]}"

    def c(x):
        return _f32_hex(x)

    def fma(a, b, cc):
        return v(f"call float @llvm.fma.f32(float {a}, float {b}, float {cc})")

    p1 = v("getelementptr inbounds float, ptr %row1, i64 %j")
    p2 = v("getelementptr inbounds float, ptr %row2, i64 %j")
    d1 = v(f"load float, ptr {p1}")
    d2 = v(f"load float, ptr {p2}")
    # log of u1 = 1 - d1
    x = v(f"fsub float {c(1.0)}, {d1}")
    minpos = c(float(np.array(0x00800000, np.int32).view(np.float32)))
    lt = v(f"fcmp olt float {x}, {minpos}")
    x = v(f"select i1 {lt}, float {minpos}, float {x}")
    bits = v(f"bitcast float {x} to i32")
    ex = v(f"lshr i32 {bits}, 23")
    ex = v(f"sub i32 {ex}, 127")
    e = v(f"sitofp i32 {ex} to float")
    e = v(f"fadd float {e}, {c(1.0)}")
    mb = v(f"and i32 {bits}, {~0x7F800000}")
    mb = v(f"or i32 {mb}, {int(np.array(0.5, np.float32).view(np.int32))}")
    x = v(f"bitcast i32 {mb} to float")
    small = v(f"fcmp olt float {x}, {c(0.707106781186547524)}")
    tmp = v(f"select i1 {small}, float {x}, float 0.0")
    xm1 = v(f"fsub float {x}, {c(1.0)}")
    x = v(f"fadd float {xm1}, {tmp}")
    one_if = v(f"select i1 {small}, float {c(1.0)}, float 0.0")
    e = v(f"fsub float {e}, {one_if}")
    z = v(f"fmul float {x}, {x}")
    y = c(7.0376836292e-2)
    for cf in (-1.1514610310e-1, 1.1676998740e-1, -1.2420140846e-1, 1.4249322787e-1, -1.6668057665e-1,
               2.0000714765e-1, -2.4999993993e-1, 3.3333331174e-1):
        y = fma(y, x, c(cf))
    yx = v(f"fmul float {y}, {x}")
    eq1 = v(f"fmul float {e}, {c(-2.12194440e-4)}")
    y = fma(yx, z, eq1)
    nz = v(f"fneg float {z}")
    y = fma(nz, c(0.5), y)
    xy = v(f"fadd float {x}, {y}")
    lg = fma(e, c(0.693359375), xy)
    m2 = v(f"fmul float {c(-2.0)}, {lg}")
    radius = v(f"call float @llvm.sqrt.f32(float {m2})")
    # sincos of theta = 2 pi * u2
    th = v(f"fmul float {c(2.0 * math.pi)}, {d2}")
    thb = v(f"bitcast float {th} to i32")
    sign_sin = v(f"and i32 {thb}, -2147483648")
    ax = v(f"call float @llvm.fabs.f32(float {th})")
    sc = v(f"fmul float {ax}, {c(1.27323954473516)}")
    ji = v(f"fptosi float {sc} to i32")
    ji = v(f"add i32 {ji}, 1")
    ji = v(f"and i32 {ji}, -2")
    yf = v(f"sitofp i32 {ji} to float")
    xr = ax
    for dp in (-0.78515625, -2.4187564849853515625e-4, -3.77489497744594108e-8):
        xr = fma(yf, c(dp), xr)
    j4 = v(f"and i32 {ji}, 4")
    sw = v(f"shl i32 {j4}, 29")
    sign_sin = v(f"xor i32 {sign_sin}, {sw}")
    jm2 = v(f"sub i32 {ji}, 2")
    njm2 = v(f"xor i32 {jm2}, -1")
    cj = v(f"and i32 {njm2}, 4")
    sign_cos = v(f"shl i32 {cj}, 29")
    j2 = v(f"and i32 {ji}, 2")
    sin_poly = v(f"icmp eq i32 {j2}, 0")
    z = v(f"fmul float {xr}, {xr}")
    yc = fma(c(2.443315711809948e-5), z, c(-1.388731625493765e-3))
    yc = fma(yc, z, c(4.166664568298827e-2))
    ycz = v(f"fmul float {yc}, {z}")
    zh = v(f"fmul float {z}, {c(0.5)}")
    nzh = v(f"fneg float {zh}")
    yc = fma(ycz, z, nzh)
    yc = v(f"fadd float {yc}, {c(1.0)}")
    ys = fma(c(-1.9515295891e-4), z, c(8.3321608736e-3))
    ys = fma(ys, z, c(-1.6666654611e-1))
    ysz = v(f"fmul float {ys}, {z}")
    ys = fma(ysz, xr, xr)
    s1 = v(f"select i1 {sin_poly}, float {ys}, float 0.0")
    s2 = v(f"select i1 {sin_poly}, float 0.0, float {yc}")
    sp = v(f"fadd float {s1}, {s2}")
    c1 = v(f"select i1 {sin_poly}, float {yc}, float 0.0")
    c2 = v(f"select i1 {sin_poly}, float 0.0, float {ys}")
    cp = v(f"fadd float {c1}, {c2}")
    spb = v(f"bitcast float {sp} to i32")
    spb = v(f"xor i32 {spb}, {sign_sin}")
    s = v(f"bitcast i32 {spb} to float")
    cpb = v(f"bitcast float {cp} to i32")
    cpb = v(f"xor i32 {cpb}, {sign_cos}")
    co = v(f"bitcast i32 {cpb} to float")
    rc = v(f"fmul float {radius}, {co}")
    rs = v(f"fmul float {radius}, {s}")
    first = fma(rc, "%std", "%mean")
    second = fma(rs, "%std", "%mean")
    lines.append(f"  store float {first}, ptr {p1}")
    lines.append(f"  store float {second}, ptr {p2}")
    return _block_pair_function("gradc_normal_fill", "float", "\n".join(lines),
                                "declare float @llvm.fma.f32(float, float, float)\n"
                                "declare float @llvm.sqrt.f32(float)\ndeclare float @llvm.fabs.f32(float)")


_FMA64_IR = _loop_function("gradc_fma64", "ptr %x, double %b, double %c, ptr %out, i64 %n", "", "%n", """\
  %px = getelementptr inbounds double, ptr %x, i64 %i
  %v = load double, ptr %px
  %r = call double @llvm.fma.f64(double %v, double %b, double %c)
  %po = getelementptr inbounds double, ptr %out, i64 %i
  store double %r, ptr %po""", declares="declare double @llvm.fma.f64(double, double, double)")


def _fma64_array(x, b: float, c: float) -> np.ndarray:
    """``fma(x, b, c)`` of each double of ``x`` (ATen's transformations, contracted by its
    compiler), exactly rounded; compiled."""
    import ctypes
    fn = _native("gradc_fma64", lambda: _FMA64_IR, ctypes.c_void_p, ctypes.c_double, ctypes.c_double,
                 ctypes.c_void_p, ctypes.c_int64)
    x = np.ascontiguousarray(x, np.float64)
    out = np.empty_like(x)
    fn(x.ctypes.data, float(b), float(c), out.ctypes.data, x.size)
    return out


_LIBM_SYMBOLS: list = []


def _register_libm() -> None:
    """The C library's log, sin and cos as ``gradc.libm.<name>`` for compiled code: called by
    address, so that LLVM neither folds nor merges them (sin and cos of one argument into
    sincos) and every value is the C library's, as ATen's ``std::log`` etc. give."""
    if _LIBM_SYMBOLS:
        return
    import ctypes
    import ctypes.util
    import llvmlite.binding as llvm
    libm = ctypes.CDLL(ctypes.util.find_library("m"))
    for name in ("log", "sin", "cos"):
        fn = getattr(libm, name)
        llvm.add_symbol(f"gradc.libm.{name}", ctypes.cast(fn, ctypes.c_void_p).value)
        _LIBM_SYMBOLS.append(fn)        # (kept alive)


def _normal_fill64_ir() -> str:
    """LLVM IR of ``gradc_normal_fill64(ptr data, i64 blocks, double mean, double std)``: each block
    of 16 double uniforms in place to normals as ``_box_muller``'s float64 branch does (the C
    library's log/cos/sin, exact sqrt and fma)."""
    body = """  %p1 = getelementptr inbounds double, ptr %row1, i64 %j
  %p2 = getelementptr inbounds double, ptr %row2, i64 %j
  %d1 = load double, ptr %p1
  %d2 = load double, ptr %p2
  %u1 = fsub double 1.0, %d1
  %lg = call double @gradc.libm.log(double %u1)
  %m2 = fmul double -2.0, %lg
  %radius = call double @llvm.sqrt.f64(double %m2)
  %theta = fmul double %d2, TWO_PI
  %c = call double @gradc.libm.cos(double %theta)
  %s = call double @gradc.libm.sin(double %theta)
  %rc = fmul double %radius, %c
  %rs = fmul double %radius, %s
  %first = call double @llvm.fma.f64(double %rc, double %std, double %mean)
  %second = call double @llvm.fma.f64(double %rs, double %std, double %mean)
  store double %first, ptr %p1
  store double %second, ptr %p2
"""
    return _block_pair_function("gradc_normal_fill64", "double", body.replace("TWO_PI", _TWO_PI_HEX),
                                "declare double @gradc.libm.log(double)\ndeclare double @gradc.libm.cos(double)\n"
                                "declare double @gradc.libm.sin(double)\n"
                                "declare double @llvm.fma.f64(double, double, double)\n"
                                "declare double @llvm.sqrt.f64(double)")


def _normal_fill64_native(data: np.ndarray, mean, std) -> None:
    """``_box_muller``'s float64 branch on ``data`` (a contiguous multiple of 16 doubles),
    compiled, in place: 10x faster than the C library called per element from Python."""
    import ctypes
    _register_libm()
    fn = _native("gradc_normal_fill64", _normal_fill64_ir, ctypes.c_void_p, ctypes.c_int64, ctypes.c_double,
                 ctypes.c_double)
    assert data.dtype == np.float64 and data.flags.c_contiguous and data.size % _NORMAL_BLOCK == 0
    fn(data.ctypes.data, data.size // _NORMAL_BLOCK, float(mean), float(std))


def _normal_fill_native(data: np.ndarray, mean, std) -> None:
    """``_box_muller``'s float32 branch on ``data`` (a contiguous multiple of 16 float32
    uniforms), compiled, in place."""
    import ctypes
    fn = _native("gradc_normal_fill", _normal_fill_ir, ctypes.c_void_p, ctypes.c_int64, ctypes.c_float,
                 ctypes.c_float)
    assert data.dtype == F32 and data.flags.c_contiguous and data.size % _NORMAL_BLOCK == 0
    fn(data.ctypes.data, data.size // _NORMAL_BLOCK, F32(mean), F32(std))
