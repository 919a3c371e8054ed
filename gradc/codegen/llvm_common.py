"""Shared lowering of kernel IR bodies to LLVM IR (llvmlite.ir), used by the CPU and PTX backends.

* ``LOWER``: the lowering table, op name -> ``fn(ctx, args, in_dtypes, out_dtype, attrs, consts)``
  returning an ``ir.Value``; ``consts[i]`` is the Python value of operand i when it is a
  kernel-IR constant (so ``pow(x, 2)`` becomes ``x*x``).
* ``BodyEmitter``: emits loads/ops/stores of a kernel at an iteration point given the
  index of each axis (addresses by GEP on the buffer's element type, never ptrtoint).
* ``emit_point``: the per-outer-point schedule (reduction loops, then stores), with the
  loop over the reduced axes and the cross-thread combine supplied by the backend.  Each
  store runs in the pass that computes its value (``store_stages``), values an earlier pass
  computed are kept for the store pass when that saves work (``scratch_plan``), and one-hot
  sums and addends are read or added at their label instead of compared per element
  (``gathered``, ``one_hot_addend``).

Floats: maximum/minimum propagate NaN (``llvm.maximum``/``llvm.minimum``, with ``nsz``: -0
and +0 unordered) like PyTorch;
f32 prod (and f32 sums on the GPU) accumulate in f64 with ``reassoc`` so the vectorizer can
split them; on the CPU f32 sums are blocked (``emit_point(loop_blocked=...)``): each block of
``llvm_cpu.SUM_BLOCK`` elements is summed in f32 with ``reassoc`` (the vectorizer keeps
VF x interleave independent vector partial sums, no f32->f64 converts, full vector width)
and the block's sum is added to an f64 total.
"""
from __future__ import annotations

import math
from collections import ChainMap

from llvmlite import ir

from . import llvm_math
from .kernel_ir import AxisIndex, Compute, Kernel, Load, Reduce, Store, contiguous_strides

F32, F64, I64, I32, I8, I1 = ir.FloatType(), ir.DoubleType(), ir.IntType(64), ir.IntType(32), ir.IntType(8), ir.IntType(1)
LL = {"f32": F32, "f64": F64, "i64": I64, "i1": I1}
MEM = {"f32": F32, "f64": F64, "i64": I64, "i1": I8}
ALIGN = {"f32": 4, "f64": 8, "i64": 8, "i1": 1}
REASSOC = ("reassoc", "contract")
# float add/sub/mul may fuse into an fma (one rounding instead of two), as C compilers do
# by default (-ffp-contract) and CUDA does (--fmad): fewer ops in every row pass
CONTRACT = ("contract",)


def const(dtype: str, value) -> ir.Constant:
    if dtype == "i1":
        return ir.Constant(I1, int(bool(value)))
    if dtype == "i64":
        return ir.Constant(I64, int(value))
    return ir.Constant(LL[dtype], float(value))


def intrinsic(module: ir.Module, name: str, ret, args) -> ir.Function:
    fn = module.globals.get(name)
    if fn is None:
        fn = ir.Function(module, ir.FunctionType(ret, list(args)), name)
    return fn


class LowerCtx:
    """What lowering functions see: builder, module, target ('cpu' | 'nvptx') and math choice.

    ``math_mode``: 'ir' uses ``llvm_math`` (vectorizable, works on NVPTX); 'libm' uses the
    LLVM intrinsics / libm calls (CPU only).
    """

    def __init__(self, builder: ir.IRBuilder, target: str = "cpu", math_mode: str = "ir",
                 alloca_builder: ir.IRBuilder | None = None):
        self.b = builder
        self.module = builder.module
        self.target = target
        self.math_mode = "ir" if target == "nvptx" else math_mode
        self._ab = alloca_builder

    def intrinsic(self, name, ret, args):
        return intrinsic(self.module, name, ret, args)

    def call_math(self, name: str, dtype: str, *args):
        ty = LL[dtype]
        sfx = "f64" if dtype == "f64" else "f32"
        if self.math_mode == "libm" and name in ("exp", "log", "sin", "cos", "pow"):
            fn = self.intrinsic(f"llvm.{name}.{sfx}", ty, [ty] * len(args))
        elif self.math_mode == "libm" and name == "tanh":
            fn = self.intrinsic("tanh" if dtype == "f64" else "tanhf", ty, [ty])
        else:
            fn = llvm_math.math_fn(self.module, name, ty)
        return self.b.call(fn, list(args))

    def alloca(self, ty, count: int | None = None):
        """A stack slot (or ``count`` of them) in the entry block (mem2reg promotes scalars)."""
        size = None if count is None else ir.Constant(I64, count)
        return (self._ab or self.b).alloca(ty, size=size)


# ---------------------------------------------------------------------------------------------
# the lowering table
# ---------------------------------------------------------------------------------------------
LOWER = {}


def lowers(*names):
    def reg(fn):
        for n in names:
            LOWER[n] = fn
        return fn
    return reg


def _isf(dt):
    return dt in ("f32", "f64")


def _fsfx(dt):
    return "f64" if dt == "f64" else "f32"


@lowers("add", "sub", "mul")
def _arith(ctx, a, dts, out, attrs, consts):
    b, (x, y), op = ctx.b, a, attrs["_op"]
    if _isf(out):
        return {"add": b.fadd, "sub": b.fsub, "mul": b.fmul}[op](x, y, flags=CONTRACT)
    if out == "i1":
        return {"add": b.or_, "sub": b.xor, "mul": b.and_}[op](x, y)
    return {"add": b.add, "sub": b.sub, "mul": b.mul}[op](x, y)


@lowers("div")
def _div(ctx, a, dts, out, attrs, consts):
    b, (x, y) = ctx.b, a
    if _isf(out):
        return b.fdiv(x, y)
    zero = ir.Constant(y.type, 0)
    isz = b.icmp_signed("==", y, zero)
    q = b.sdiv(x, b.select(isz, ir.Constant(y.type, 1), y))
    return b.select(isz, zero, q)


@lowers("pow")
def _pow(ctx, a, dts, out, attrs, consts):
    b, (x, y) = ctx.b, a
    if not _isf(out):
        if out == "i1":
            return b.or_(x, b.xor(y, ir.Constant(I1, 1)))
        return b.call(llvm_math.ipow_fn(ctx.module), [x, y])
    c = consts[1]
    if c is not None:
        if c == 1:
            return x
        if c == 2:
            return b.fmul(x, x, flags=CONTRACT)
        if c == 3:
            return b.fmul(b.fmul(x, x, flags=CONTRACT), x, flags=CONTRACT)
        if c == 0:
            return const(out, 1.0)
        if c == -1:
            return b.fdiv(const(out, 1.0), x)
        if c == 0.5:
            return b.call(ctx.intrinsic(f"llvm.sqrt.{_fsfx(out)}", x.type, [x.type]), [x])
    return ctx.call_math("pow", out, x, y)


@lowers("maximum", "minimum")
def _minmax(ctx, a, dts, out, attrs, consts):
    b, (x, y), mx = ctx.b, a, attrs["_op"] == "maximum"
    if _isf(out):
        name = f"llvm.{'maximum' if mx else 'minimum'}.{_fsfx(out)}"
        # NaN-propagating; nsz: -0 and +0 need not be ordered (NumPy's maximum does not order
        # them either), which spares x86 three instructions per vector (sign tests, blends)
        return b.call(ctx.intrinsic(name, x.type, [x.type, x.type]), [x, y], fastmath=("nsz",))
    if out == "i1":
        return b.or_(x, y) if mx else b.and_(x, y)
    return b.select(b.icmp_signed(">" if mx else "<", x, y), x, y)


@lowers("neg")
def _neg(ctx, a, dts, out, attrs, consts):
    if _isf(out):
        return ctx.b.fneg(a[0])
    return a[0] if out == "i1" else ctx.b.neg(a[0])


@lowers(*sorted(llvm_math.FUNCTIONS - {"pow"}))     # pow: _pow (integer exponents, squares)
def _math(ctx, a, dts, out, attrs, consts):
    return ctx.call_math(attrs["_op"], out, *a)


@lowers("sqrt", "rsqrt")
def _sqrt(ctx, a, dts, out, attrs, consts):
    x = a[0]
    r = ctx.b.call(ctx.intrinsic(f"llvm.sqrt.{_fsfx(out)}", x.type, [x.type]), [x])
    return ctx.b.fdiv(const(out, 1.0), r) if attrs["_op"] == "rsqrt" else r


@lowers("relu")
def _relu(ctx, a, dts, out, attrs, consts):
    b, x = ctx.b, a[0]
    if out == "i1":
        return x
    zero = const(out, 0)
    neg = b.fcmp_ordered("<", x, zero) if _isf(out) else b.icmp_signed("<", x, zero)
    return b.select(neg, zero, x)


@lowers("silu")
def _silu(ctx, a, dts, out, attrs, consts):
    return ctx.b.fmul(a[0], ctx.call_math("sigmoid", out, a[0]))


@lowers("softplus")
def _softplus(ctx, a, dts, out, attrs, consts):
    """PyTorch's: x where beta * x > threshold, else log1p(exp(beta * x)) / beta."""
    b, x = ctx.b, a[0]
    beta = attrs.get("beta", 1.0)
    bx = b.fmul(x, const(out, beta)) if beta != 1 else x
    sp = ctx.call_math("log1p", out, ctx.call_math("exp", out, bx))
    if beta != 1:
        sp = b.fdiv(sp, const(out, beta))
    return b.select(b.fcmp_ordered(">", bx, const(out, attrs.get("threshold", 20.0))), x, sp)


@lowers("log_sigmoid")
def _log_sigmoid(ctx, a, dts, out, attrs, consts):
    """min(x, 0) - log1p(exp(-|x|))."""
    b, x = ctx.b, a[0]
    ax = b.call(ctx.intrinsic(f"llvm.fabs.{_fsfx(out)}", x.type, [x.type]), [x])
    lp = ctx.call_math("log1p", out, ctx.call_math("exp", out, b.fneg(ax)))
    neg = b.select(b.fcmp_ordered("<", x, const(out, 0)), x, const(out, 0))
    return b.fsub(neg, lp)


@lowers("elu")
def _elu(ctx, a, dts, out, attrs, consts):
    b, x = ctx.b, a[0]
    neg = b.fmul(ctx.call_math("expm1", out, x), const(out, attrs.get("alpha", 1.0)))
    return b.select(b.fcmp_ordered(">", x, const(out, 0)), x, neg)


@lowers("gelu")
def _gelu(ctx, a, dts, out, attrs, consts):
    """x * Phi(x): 0.5 * x * (1 + erf(x / sqrt 2)), or with approximate='tanh'
    0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 x^3)))."""
    b, x = ctx.b, a[0]
    from ..ops.elementwise import GELU_TANH_CUBIC, GELU_TANH_SCALE, SQRT1_2
    if attrs.get("approximate", "none") == "tanh":
        inner = b.fmul(b.fadd(x, b.fmul(b.fmul(b.fmul(x, x), x), const(out, GELU_TANH_CUBIC))),
                       const(out, GELU_TANH_SCALE))
        s = ctx.call_math("tanh", out, inner)
    else:
        s = ctx.call_math("erf", out, b.fmul(x, const(out, SQRT1_2)))
    return b.fmul(b.fmul(x, const(out, 0.5)), b.fadd(s, const(out, 1.0)))


@lowers("leaky_relu")
def _leaky_relu(ctx, a, dts, out, attrs, consts):
    b, x = ctx.b, a[0]
    return b.select(b.fcmp_ordered(">", x, const(out, 0)), x, b.fmul(x, const(out, attrs["negative_slope"])))


@lowers("abs")
def _abs(ctx, a, dts, out, attrs, consts):
    b, x = ctx.b, a[0]
    if _isf(out):
        return b.call(ctx.intrinsic(f"llvm.fabs.{_fsfx(out)}", x.type, [x.type]), [x])
    if out == "i1":
        return x
    return b.select(b.icmp_signed("<", x, const(out, 0)), b.neg(x), x)


@lowers("sign")
def _sign(ctx, a, dts, out, attrs, consts):
    b, x = ctx.b, a[0]
    if out == "i1":
        return x
    zero, one, m1 = const(out, 0), const(out, 1), const(out, -1)
    if _isf(out):   # PyTorch's (0 < x) - (x < 0): NaN and -0.0 give +0.0
        return b.select(b.fcmp_ordered(">", x, zero), one, b.select(b.fcmp_ordered("<", x, zero), m1, zero))
    return b.select(b.icmp_signed(">", x, zero), one, b.select(b.icmp_signed("<", x, zero), m1, zero))


@lowers("floor", "ceil", "round", "trunc", "frac")
def _rounding(ctx, a, dts, out, attrs, consts):
    b, x, op = ctx.b, a[0], attrs["_op"]
    if not _isf(out):
        return x                         # integers are already whole
    name = {"floor": "floor", "ceil": "ceil", "round": "roundeven", "trunc": "trunc", "frac": "trunc"}[op]
    decimals = attrs.get("decimals") or 0
    scale = const(out, 10.0 ** abs(decimals))
    if decimals:              # PyTorch's round(decimals=d): nearbyint(x * 10**d) / 10**d
        x = b.fmul(x, scale) if decimals > 0 else b.fdiv(x, scale)
    r = b.call(ctx.intrinsic(f"llvm.{name}.{_fsfx(out)}", x.type, [x.type]), [x])
    if decimals:
        return b.fdiv(r, scale) if decimals > 0 else b.fmul(r, scale)
    return b.fsub(x, r) if op == "frac" else r


@lowers("clamp")
def _clamp(ctx, a, dts, out, attrs, consts):
    b, x = ctx.b, a[0]
    lo, hi = attrs.get("min"), attrs.get("max")
    if _isf(out):
        lt = lambda p, q: b.fcmp_ordered("<", p, q)   # noqa: E731  NaN stays NaN
    else:
        lt = lambda p, q: b.icmp_signed("<", p, q)    # noqa: E731
    if lo is not None:
        c = const(out, lo)
        x = b.select(lt(x, c), c, x)
    if hi is not None:
        c = const(out, hi)
        x = b.select(lt(c, x), c, x)
    return x


@lowers("cast")
def _cast(ctx, a, dts, out, attrs, consts):
    b, x, src = ctx.b, a[0], dts[0]
    if src == out:
        return x
    if out == "i1":
        if _isf(src):
            return b.fcmp_unordered("!=", x, const(src, 0))   # NaN -> True, like bool(nan)
        return b.icmp_signed("!=", x, const(src, 0))
    if src == "i1":
        return b.uitofp(x, LL[out]) if _isf(out) else b.zext(x, LL[out])
    if _isf(src) and _isf(out):
        return b.fpext(x, F64) if out == "f64" else b.fptrunc(x, F32)
    if _isf(src):   # float -> i64, saturating (NaN -> 0) instead of poison
        return b.call(ctx.intrinsic(f"llvm.fptosi.sat.i64.{_fsfx(src)}", I64, [x.type]), [x])
    return b.sitofp(x, LL[out])


@lowers("where")
def _where(ctx, a, dts, out, attrs, consts):
    return ctx.b.select(a[0], a[1], a[2])


_FCMP = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}


@lowers(*_FCMP)
def _cmp(ctx, a, dts, out, attrs, consts):
    b, (x, y), op = ctx.b, a, _FCMP[attrs["_op"]]
    if _isf(dts[0]):
        return b.fcmp_unordered(op, x, y) if op == "!=" else b.fcmp_ordered(op, x, y)
    if dts[0] == "i1":
        return b.icmp_unsigned(op, x, y)
    return b.icmp_signed(op, x, y)


@lowers("logical_and", "logical_or", "logical_not")
def _logic(ctx, a, dts, out, attrs, consts):
    b, op = ctx.b, attrs["_op"]
    if op == "logical_not":
        return b.xor(a[0], ir.Constant(I1, 1))
    return b.and_(a[0], a[1]) if op == "logical_and" else b.or_(a[0], a[1])


@lowers("constant")
def _constant(ctx, a, dts, out, attrs, consts):
    return const(out, attrs["value"])


def lower_op(ctx: LowerCtx, op: str, args, dts, out, attrs, consts=None):
    try:
        fn = LOWER[op]
    except KeyError:
        raise NotImplementedError(f"no LLVM lowering for kernel op '{op}'") from None
    return fn(ctx, list(args), list(dts), out, dict(attrs, _op=op), consts or [None] * len(args))


# ---------------------------------------------------------------------------------------------
# reductions: accumulator types and combine
# ---------------------------------------------------------------------------------------------
def acc_dtype(kind: str, dtype: str) -> str:
    return "f64" if dtype == "f32" and kind in ("sum", "prod") else dtype


def block_sum(kind: str, dtype: str) -> bool:
    """Whether a reduction accumulates blocks in its own dtype before the wide accumulator
    (f32 sums on the CPU; prod stays f64 throughout: an f32 partial product can overflow)."""
    return kind == "sum" and dtype == "f32"


def identity(kind: str, dtype: str) -> ir.Constant:
    inf = float("inf")
    if kind == "sum":
        return const(dtype, 0)
    if kind == "prod":
        return const(dtype, 1)
    if _isf(dtype):
        return const(dtype, -inf if kind == "max" else inf)
    if dtype == "i1":
        return const(dtype, kind == "min")
    return const(dtype, -(1 << 63) if kind == "max" else (1 << 63) - 1)


def combine(ctx: LowerCtx, kind: str, dtype: str, acc, x):
    b = ctx.b
    if kind in ("sum", "prod"):
        if _isf(dtype):
            return (b.fadd if kind == "sum" else b.fmul)(acc, x, flags=REASSOC)
        return (b.add if kind == "sum" else b.mul)(acc, x)
    return lower_op(ctx, "maximum" if kind == "max" else "minimum", [acc, x], [dtype, dtype], dtype, {})


# ---------------------------------------------------------------------------------------------
# body emission
# ---------------------------------------------------------------------------------------------
class Env:
    """Iteration indices (axis -> i64 ir.Value) and the SSA cache of one scope.

    ``inner``: the axis of the innermost loop the scope is in (None: unknown); a child that
    binds one new axis is inside that axis's loop."""

    def __init__(self, idx: dict, cache: ChainMap, inner=None):
        self.idx, self.cache, self.inner = idx, cache, inner

    def child(self, more_idx: dict | None = None) -> "Env":
        idx = dict(self.idx)
        idx.update(more_idx or {})
        inner = next(reversed(more_idx)) if more_idx else self.inner
        return Env(idx, self.cache.new_child(), inner)


class BodyEmitter:
    """Emits a kernel's statements at an iteration point.  ``ptrs``: buffer name -> pointer."""

    def __init__(self, ctx: LowerCtx, kernel: Kernel, ptrs: dict):
        self.ctx, self.k, self.ptrs = ctx, kernel, ptrs
        self.defs = kernel.defs()
        self.accumulating = {r.result.id: r for r in kernel.accumulations}
        self.consts = {s.result.id: s.attr["value"] for s in kernel.body
                       if isinstance(s, Compute) and s.op == "constant"}
        self.row_slots: dict = {}      # buffer name -> (stack chunk, lane) its stores go to

    def address(self, buf, index, env: Env):
        b = self.ctx.b
        lin = None
        slot = self.row_slots.get(buf.name)
        if slot is not None:         # (chunk, lane): the stack chunk ``streaming_pass`` copies out
            return b.gep(slot[0], [slot[1]], inbounds=True, source_etype=MEM[buf.dtype])
        for axis, stride in enumerate(index.strides):
            if stride == 0:
                continue
            i = env.idx[axis]
            t = i if stride == 1 else b.mul(i, ir.Constant(I64, stride), flags=("nsw",))
            lin = t if lin is None else b.add(lin, t, flags=("nsw",))
        if index.offset:
            off = ir.Constant(I64, index.offset)
            lin = off if lin is None else b.add(lin, off, flags=("nsw",))
        if lin is None:
            lin = ir.Constant(I64, 0)
        return b.gep(self.ptrs[buf.name], [lin], inbounds=True, source_etype=MEM[buf.dtype])

    def value(self, v, env: Env):
        hit = env.cache.get(v.id)
        if hit is not None:
            return hit
        s = self.defs[v.id]
        b = self.ctx.b
        if isinstance(s, Load):
            raw = b.load(self.address(s.buffer, s.index, env), typ=MEM[s.buffer.dtype],
                         align=ALIGN[s.buffer.dtype])
            r = b.icmp_unsigned("!=", raw, ir.Constant(I8, 0)) if s.buffer.dtype == "i1" else raw
        elif isinstance(s, Compute):
            r = self.loop_special(s, env) if self.ctx.target == "cpu" and env.inner is not None else None
            if r is None:
                args = [self.value(o, env) for o in s.operands]
                r = lower_op(self.ctx, s.op, args, [o.dtype for o in s.operands], s.result.dtype, s.attr,
                             [self.consts.get(o.id) for o in s.operands])
        elif isinstance(s, AxisIndex):
            r = env.idx[s.axis]
        elif isinstance(s, Reduce):
            raise RuntimeError(f"reduction %{v.id} used before it was computed")
        else:
            raise TypeError(s)
        env.cache[v.id] = r
        return r

    def preload(self, env: Env, varying):
        """Load, in ``env`` (before a loop), every buffer element that does not vary over the
        axes in ``varying``: the loop's stores may alias it as far as LLVM knows, so it
        would otherwise stay in the loop, and an i64 load there halves the vector width."""
        for s in self.k.body:
            if isinstance(s, Load) and not (s.result.axes & set(varying)) and s.index.axes() <= set(env.idx):
                self.value(s.result, env)

    def loop_special(self, s: Compute, env: Env):
        """CPU lowerings that depend on the innermost loop axis ``env.inner`` (None: default):
        ``x / c`` with ``c`` invariant in the loop and ``x`` not becomes ``x * (1/c)`` (the
        reciprocal is hoisted; one vector multiply instead of a divide per element, within
        ~1.5 ulp instead of 0.5; 0, inf and NaN divisors give what the division gives, a
        divisor below ~1/FLT_MAX in magnitude overflows the reciprocal).

        ``index == label`` (or ``!=``) with the index that of the loop's axis and the label
        invariant in it compares the two as f32, the index from its f32 twin (``float_index``):
        16 lanes per AVX-512 vector and one vector add per 16 indices, instead of two vectors
        of 8 i64 (W3's one-hot columns cost 0.27 ms instead of 0.75 here).  Exact: the index
        is below 2**24 (``FLOAT_EXACT_INDEX``), and a label outside that range rounds to a
        float no index equals.  (Tried before: an i32 compare after clamping the label;
        InstCombine widened it back to i64.  ``preload`` keeps the label's load out of the loop.)
        """
        b, ax = self.ctx.b, env.inner
        ops = s.operands
        if s.op in ("eq", "ne") and ops[0].dtype == "i64" and self.k.space[ax] <= FLOAT_EXACT_INDEX:
            a, c = ops
            if not (isinstance(self.defs.get(a.id), AxisIndex) and self.defs[a.id].axis == ax):
                a, c = c, a
            if isinstance(self.defs.get(a.id), AxisIndex) and self.defs[a.id].axis == ax and ax not in c.axes:
                fi = float_index(b, self.value(a, env))
                fc = b.sitofp(self.value(c, env), F32)
                return b.fcmp_ordered("==", fi, fc) if s.op == "eq" else b.fcmp_unordered("!=", fi, fc)
            return None
        if s.op == "div" and _isf(s.result.dtype):
            x, c = ops
            if ax in x.axes and ax not in c.axes:
                rc = b.fdiv(const(s.result.dtype, 1.0), self.value(c, env))
                return b.fmul(self.value(x, env), rc, flags=CONTRACT)
            return None
        return None

    def store(self, s: Store, env: Env, value=None):
        """Emit store ``s`` at ``env``'s point (of ``value`` instead of its own, if given)."""
        acc = self.accumulating.get(s.value.id)
        if acc is not None:
            self.accumulate(s, acc, env)
            return
        v = self.value(s.value if value is None else value, env)
        if s.buffer.dtype == "i1":
            v = self.ctx.b.zext(v, I8)
        self.ctx.b.store(v, self.address(s.buffer, s.index, env), align=ALIGN[s.buffer.dtype])

    def accumulate(self, s: Store, r: Reduce, env: Env):
        """Add this point's operand of accumulation ``r`` into its stored element (set to 0
        before the outer loops run: ``init_accumulation`` on the CPU, by the driver on a
        GPU, where threads add atomically)."""
        b, dt = self.ctx.b, s.buffer.dtype
        x = self.value(r.operand, env)
        p = self.address(s.buffer, s.index, env)
        if self.ctx.target == "cpu":
            b.store(combine(self.ctx, "sum", dt, b.load(p, typ=MEM[dt], align=ALIGN[dt]), x), p,
                    align=ALIGN[dt])
        elif dt in ("f32", "f64"):
            b.atomic_rmw("fadd", p, x, "monotonic")
        else:
            b.atomic_rmw("add", p, x, "monotonic")

    def init_accumulation(self, s: Store, env: Env):
        """Set every element that store ``s`` (of an accumulation) reaches from ``env``'s
        bound axes to 0: loops over the index's unbound axes."""
        b = self.ctx.b
        free = [a for a, st in enumerate(s.index.strides) if st != 0 and a not in env.idx]

        def loop(e, depth):
            if depth == len(free):
                b.store(const(s.buffer.dtype, 0), self.address(s.buffer, s.index, e), align=ALIGN[s.buffer.dtype])
                return
            ax = free[depth]
            for_range(b, 0, self.k.space[ax], lambda i: loop(e.child({ax: i}), depth + 1), name=f"z{ax}")
        loop(env.child(), 0)


def for_range(b: ir.IRBuilder, lo, hi, body, step=1, name="i"):
    """Emit ``for (i = lo; i < hi; i += step) body(i)`` with i64 bounds; returns nothing.
    ``float_index(i)`` in the body gives ``i`` as an f32 induction of its own."""
    lo = lo if isinstance(lo, ir.Value) else ir.Constant(I64, lo)
    hi = hi if isinstance(hi, ir.Value) else ir.Constant(I64, hi)
    step = step if isinstance(step, ir.Value) else ir.Constant(I64, step)
    pre = b.block
    fn = pre.function
    cond = fn.append_basic_block(f"{name}.cond")
    loop = fn.append_basic_block(f"{name}.body")
    done = fn.append_basic_block(f"{name}.end")
    b.branch(cond)
    b.position_at_end(cond)
    i = b.phi(I64, name=name)
    i.add_incoming(lo, pre)
    b.cbranch(b.icmp_signed("<", i, hi), loop, done)
    b.position_at_end(loop)
    twin = _FloatTwin(b, pre, cond, lo, step)
    i.gradc_float = twin.get
    body(i)
    nxt = b.add(i, step, flags=("nsw",))
    i.add_incoming(nxt, b.block)
    twin.close(b.block)
    b.branch(cond)
    b.position_at_end(done)


class _FloatTwin:
    """A loop's index as an f32 phi (created on first use): the vectorizer widens it into one
    vector add per iteration, where converting the i64 index costs two vectors and a pack."""

    def __init__(self, b, pre, cond, lo, step):
        self.b, self.pre, self.cond, self.lo, self.step, self.phi = b, pre, cond, lo, step, None

    def get(self):
        b = self.b
        if self.phi is None:
            here = b.block
            with b.goto_block(self.pre):
                start = b.sitofp(self.lo, F32)
            b.position_at_start(self.cond)
            self.phi = b.phi(F32, name="fi")
            self.phi.add_incoming(start, self.pre)
            b.position_at_end(here)
        return self.phi

    def close(self, latch):
        if self.phi is not None:
            step = (ir.Constant(F32, float(self.step.constant)) if isinstance(self.step, ir.Constant)
                    else self.b.sitofp(self.step, F32))
            self.phi.add_incoming(self.b.fadd(self.phi, step, flags=("reassoc", "nsz")), latch)


def float_index(b: ir.IRBuilder, i):
    """``i`` (a loop index, or an invariant base plus one) as f32, exact below 2**24."""
    twin = getattr(i, "gradc_float", None)
    return twin() if twin is not None else b.sitofp(b.trunc(i, I32), F32)


def offset_index(b: ir.IRBuilder, base, i):
    """``base + i`` for a loop index ``i`` (blocked and lane loops), keeping its float twin."""
    v = b.add(base, i, flags=("nsw",))
    twin = getattr(i, "gradc_float", None)
    if twin is not None:
        v.gradc_float = lambda: b.fadd(b.sitofp(base, F32), twin(), flags=("reassoc", "nsz"))
    return v


def reduced_loops(b: ir.IRBuilder, space, red):
    """``loop(env, body)``: nested loops over the reduced axes ``red`` of ``space``, calling
    ``body`` with the environment extended by each axis index (shared by CPU and GPU)."""
    def loop(env, body, depth=0):
        if depth == len(red):
            body(env.child())
            return
        ax = red[depth]
        for_range(b, 0, space[ax], lambda i: loop(env.child({ax: i}), body, depth + 1), name=f"r{ax}")
    return loop


def reduction_phases(kernel: Kernel):
    """Group consecutive reductions that do not depend on each other into one loop each."""
    defs = kernel.defs()
    dep_cache: dict[int, frozenset] = {}

    def reds_used(vid):
        if vid in dep_cache:
            return dep_cache[vid]
        s = defs[vid]
        out = frozenset()
        if isinstance(s, Reduce):
            out = frozenset([vid])
        elif isinstance(s, Compute):
            out = frozenset().union(*(reds_used(o.id) for o in s.operands)) if s.operands else frozenset()
        dep_cache[vid] = out
        return out

    phases: list[list[Reduce]] = []
    for r in kernel.reductions:
        used = reds_used(r.operand.id)
        if phases and not (used & {q.result.id for q in phases[-1]}):
            phases[-1].append(r)
        else:
            phases.append([r])
    return phases, reds_used


def stored_values(kernel: Kernel) -> dict:
    """{id(store): the value it computes at each point}: an accumulation's operand, else its value."""
    acc = {r.result.id: r.operand for r in kernel.accumulations}
    return {id(s): acc.get(s.value.id, s.value) for s in kernel.body if isinstance(s, Store)}


def split_stores(kernel: Kernel):
    """(outer stores, inner stores): inner ones vary over the reduced axes."""
    red = set(kernel.reduce_axes)
    values = stored_values(kernel)
    inner, outer = [], []
    for s in kernel.body:
        if isinstance(s, Store):
            varies = bool((values[id(s)].axes | s.index.axes()) & red)
            (inner if varies else outer).append(s)
    return outer, inner


class OneHot:
    """``where(index(axis) == label, value, 0)``, the label invariant along ``axis``."""
    __slots__ = ("axis", "label", "value")

    def __init__(self, axis, label, value):
        self.axis, self.label, self.value = axis, label, value

    @staticmethod
    def match(defs: dict, v) -> "OneHot | None":
        w = defs.get(v.id)
        if not (isinstance(w, Compute) and w.op == "where"):
            return None
        cond, value, zero = w.operands
        z, c = defs.get(zero.id), defs.get(cond.id)
        if not (isinstance(z, Compute) and z.op == "constant" and z.attr["value"] == 0
                and isinstance(c, Compute) and c.op == "eq"):
            return None
        for i, label in (c.operands, reversed(c.operands)):
            ix = defs.get(i.id)
            if isinstance(ix, AxisIndex) and ix.axis not in label.axes and label.dtype == "i64":
                return OneHot(ix.axis, label, value)
        return None

    def at_label(self, em: "BodyEmitter", env: "Env"):
        """(label in range, an env at the label clamped into the axis): for values at it."""
        b, n = em.ctx.b, em.k.space[self.axis]
        lab = em.value(self.label, env)
        ok = b.and_(b.icmp_signed(">=", lab, ir.Constant(I64, 0)), b.icmp_signed("<", lab, ir.Constant(I64, n)))
        return ok, env.child({self.axis: b.select(ok, lab, ir.Constant(I64, 0))})


def gathered(kernel: Kernel, r: Reduce) -> "OneHot | None":
    """A one-hot reduction ``sum_i where(i == label, v(i), 0)`` over one axis is ``v(label)``
    (0 for a label outside the axis): a load per outer point instead of a compare, select and
    add per element (the picked logit of a cross-entropy)."""
    if r.kind != "sum" or len(r.axes) != 1 or kernel.space[r.axes[0]] == 0:
        return None
    oh = OneHot.match(kernel.defs(), r.operand)
    return oh if oh is not None and oh.axis == r.axes[0] and oh.value.dtype == r.result.dtype else None


def one_hot_addend(kernel: Kernel, s: Store):
    """(a, OneHot) when store ``s`` stores ``a + where(i == label, w, 0)`` along the innermost
    reduced axis: the loop can store ``a`` and add ``w`` at the label once after it (CPU)."""
    if not kernel.reduce_axes or s.buffer.dtype not in ("f32", "f64"):
        return None
    defs = kernel.defs()
    v = defs.get(s.value.id)
    if not (isinstance(v, Compute) and v.op == "add"):
        return None
    for a, w in (v.operands, reversed(v.operands)):
        oh = OneHot.match(defs, w)
        if (oh is not None and oh.axis == kernel.reduce_axes[-1] and len(kernel.reduce_axes) == 1
                and s.index.strides[oh.axis] != 0):
            return a, oh
    return None


def store_stages(kernel: Kernel) -> list:
    """The inner stores by the loop that emits them: ``stages[j]`` for ``j < len(phases)`` run
    inside reduction phase ``j``'s loop, ``stages[-1]`` in the store pass after the last phase.

    A store that reads no reduction runs in the first phase's loop (one pass over the inputs
    fewer).  One that reads reductions of phases before ``j < len(phases)`` only runs in phase
    ``j``'s loop when that costs no more work than it saves: the ops it adds to that loop
    (those the loop does not compute already) are at most the ops the store pass no longer
    computes for it.  W4's gamma/beta column sums run in the pass that computes the
    normalised row for its row sums, not again in the store pass."""
    _, inner = split_stores(kernel)
    phases, reds_used = reduction_phases(kernel)
    n = len(phases)
    stages = [[] for _ in range(n + 1)]
    if not n:
        stages[0].extend(inner)
        return stages
    phase_of = {r.result.id: j for j, group in enumerate(phases) for r in group}
    values = stored_values(kernel)
    first = {}
    for s in inner:
        used = reds_used(values[id(s)].id)
        first[id(s)] = max((phase_of[r] + 1 for r in used if r in phase_of), default=0)
    work = RowWork(kernel)
    rest = work.cone([values[id(t)] for t in inner if first[id(t)] == n])   # the store pass computes these anyway
    for s in inner:
        j = first[id(s)]
        if 0 < j < n:
            in_loop = work.cone([r.operand for r in phases[j] if gathered(kernel, r) is None]
                                + [values[id(t)] for t in stages[j]])
            mine = work.cone([values[id(s)]])
            if work.cost(mine - in_loop) > work.cost(mine - rest):
                j = n
        stages[j].append(s)
    return stages


def pass_plan(kernel: Kernel) -> list:
    """What ``emit_point`` runs per outer point, in order: for each reduction phase
    ``(picked, looped, stores)``, its one-hot sums read at the label (``[(Reduce, OneHot)]``),
    the reductions its loop computes and the stores in that loop (a phase with neither
    emits no loop); last ``([], [], stores)``, the store pass (no loop when empty)."""
    phases, _ = reduction_phases(kernel)
    stages = store_stages(kernel)
    plan = []
    for j, phase in enumerate(phases):
        picked = [(r, oh) for r in phase if (oh := gathered(kernel, r)) is not None]
        looped = [r for r in phase if not any(r is p for p, _ in picked)]
        plan.append((picked, looped, stages[j]))
    plan.append(([], [], stages[-1]))
    return plan


class RowWork:
    """Counts the per-element work of computing values in a loop over the reduced axes: the
    ops that vary over those axes (reduction results, constants and row-invariant values
    come for free), an expensive op (``EXPENSIVE_OPS``) as ``EXPENSIVE_COST`` cheap ones."""

    def __init__(self, kernel: Kernel):
        self.defs = kernel.defs()
        self.red = set(kernel.reduce_axes)

    def cone(self, values, known=frozenset()) -> set:
        """Ids of the varying Compute ops needed for ``values``, given the ``known`` ids."""
        out, stack = set(), [v.id for v in values]
        while stack:
            vid = stack.pop()
            s = self.defs.get(vid)
            if vid in out or vid in known or not isinstance(s, Compute) or not (s.result.axes & self.red):
                continue
            out.add(vid)
            stack.extend(o.id for o in s.operands)
        return out

    def cost(self, ids) -> int:
        return sum(EXPENSIVE_COST if self.defs[i].op in EXPENSIVE_OPS else 1 for i in ids)


# loop indices below this are exact in f32 (one-hot compares in ``loop_special``)
FLOAT_EXACT_INDEX = 1 << 24

# values worth keeping in memory rather than computing again in a later pass over the row
EXPENSIVE_OPS = llvm_math.FUNCTIONS | {"silu", "softplus", "log_sigmoid", "elu", "gelu"}
EXPENSIVE_COST = 8
# a kept value costs a store in the pass that computes it and a load in each later pass
# (both from L1: a row is small); keep it when the store pass saves at least this many ops
SCRATCH_MIN_SAVING = 2
# ... unless the kernel's rows (every buffer indexed along the reduced axes) take more than
# this much of the L1: then the kept row pushes the others out of it in the pass that writes
# it, and only a value that saves an expensive op is kept.  W4's kernel (six 4 KiB rows: x,
# gamma, beta, dx and two column sums) ran 0.48-0.57 ns per element on one thread without
# keeping dL/dxhat (5 cheap ops recomputed), 0.60-0.63 with it (AMD EPYC, 32 KiB L1, in-process A/B).
SCRATCH_ROW_BUDGET = 16 * 1024
_ITEM_BYTES = ALIGN          # an element's bytes in memory (i1 as one byte) are also its alignment


def _writers(kernel: Kernel) -> dict:
    """{output name: the stores that write it}."""
    writers: dict = {}
    for s in kernel.body:
        if isinstance(s, Store):
            writers.setdefault(s.buffer.name, []).append(s)
    return writers


def row_bytes(kernel: Kernel) -> int:
    """Bytes one outer point reads and writes along the reduced axes: one row of every buffer
    whose index varies along them."""
    red = kernel.reduce_axes
    n = math.prod(kernel.space[a] for a in red)
    rows = {}
    for s in kernel.body:
        if isinstance(s, (Load, Store)) and any(s.index.strides[a] for a in red):
            rows[s.buffer.name] = n * _ITEM_BYTES[s.buffer.dtype]
    return sum(rows.values())


def scratch_plan(kernel: Kernel, passes=None) -> dict:
    """{value id: Store} for values an earlier pass over the row computes and the store pass
    would compute again: the earlier pass writes the value into the store's output (a dense,
    row-major output written by that one store), later passes read it back (from L1: a row is
    small) and the store pass overwrites it with the result.  Each such output keeps the value
    whose reuse saves the store pass the most work (``RowWork``), if at least
    ``SCRATCH_MIN_SAVING`` ops: softmax's gradient computes ``exp`` once per element instead
    of twice, and W4's dx pass reads the gradient of the normalised row instead of computing
    the row, its affine map and that gradient again (5 ops per element).  ``passes``: the
    kernel's ``pass_plan``, if the caller has it."""
    passes = pass_plan(kernel) if passes is None else passes
    final = passes[-1][2]
    if not final:
        return {}
    work = RowWork(kernel)
    values = stored_values(kernel)
    dense = contiguous_strides(kernel.space)
    writers = _writers(kernel)
    earlier = work.cone([r.operand for _, looped, _ in passes for r in looped]
                        + [values[id(s)] for _, _, stores in passes[:-1] for s in stores])
    needed = [values[id(s)] for s in final]
    min_saving = SCRATCH_MIN_SAVING if row_bytes(kernel) <= SCRATCH_ROW_BUDGET else EXPENSIVE_COST
    plan: dict = {}
    for s in final:
        if (len(writers[s.buffer.name]) != 1 or s.index.offset or tuple(s.index.strides) != dense
                or any(t.buffer.name == s.buffer.name for t in plan.values())):
            continue
        known = frozenset(plan)
        base = work.cost(work.cone(needed, known))
        best, best_saving = None, min_saving - 1
        for vid in sorted(earlier & work.cone(needed, known)):
            if work.defs[vid].result.dtype != s.buffer.dtype:
                continue
            saving = base - work.cost(work.cone(needed, known | {vid}))
            if saving > best_saving:
                best, best_saving = vid, saving
        if best is not None:
            plan[best] = s
    return plan


def emit_point(em: BodyEmitter, env: Env, loop_reduced, finish=None, guard_outer=None,
               loop_blocked=None, preload=False, scratch=False, fixups=False, streaming=None,
               prefetch=None):
    """Emit the work of one outer point.

    ``loop_reduced(env, body)`` emits a loop over the reduced axes calling ``body(inner_env)``;
    ``finish(kind, dtype, acc)`` combines per-thread partial results (GPU), identity on CPU;
    ``guard_outer(emit)`` wraps stores that do not vary over the reduced axes (GPU: one thread).
    ``loop_blocked(env, body, begin, end)`` (CPU, optional): like ``loop_reduced`` but the
    innermost reduced axis runs in blocks, calling ``begin()`` before and ``end()`` after each
    block.  With it, f32 sums accumulate each block in f32 (``block_sum``: vector-width
    partial sums, no conversions in the loop) and add the block's sum to an f64 total.
    ``preload``: load the elements that do not vary over the reduced axes before the loops.
    ``scratch``: keep expensive values for the store pass in its output (``scratch_plan``;
    CPU: a thread owns whole rows).
    One-hot sums (``gathered``) are read at their label instead of looped over.  ``fixups``
    (CPU: one thread per point): a store of ``a + one-hot w`` (``one_hot_addend``) stores
    ``a`` in its loop and adds ``w`` at the label after it.
    ``streaming`` (CPU, optional): ``streaming_stores``' buffers, written by the store pass
    with non-temporal stores when their pointers are cache-line aligned (``streaming_pass``).
    ``prefetch`` (CPU, optional): a ``row_prefetch.RowPrefetch``, whose pass also prefetches
    the rows of later outer points.
    """
    ctx, k = em.ctx, em.k
    b = ctx.b
    if preload:
        em.preload(env, k.reduce_axes)
    passes = pass_plan(k)
    plan = scratch_plan(k, passes) if scratch else {}
    written: dict = {}      # value id -> Store whose buffer holds it, once a pass wrote it

    pending: dict = {}

    def scratch_body(body):
        """``body`` that first loads the values earlier passes kept and then keeps the
        planned values it computed (committed once the pass's loops are emitted)."""
        if not plan:
            return body

        def wrapped(ienv):
            for vid, st in written.items():
                ienv.cache[vid] = b.load(em.address(st.buffer, st.index, ienv), typ=LL[st.buffer.dtype],
                                         align=ALIGN[st.buffer.dtype])
            body(ienv)
            for vid, st in plan.items():
                if vid not in written and vid in ienv.cache:
                    b.store(ienv.cache[vid], em.address(st.buffer, st.index, ienv), align=ALIGN[st.buffer.dtype])
                    pending[vid] = st
        return wrapped

    addends = {}
    if fixups:
        for _, _, stage in passes:
            for st in stage:
                f = one_hot_addend(k, st)
                if f is not None:
                    addends[id(st)] = f

    def put(st, ienv):
        f = addends.get(id(st))
        em.store(st, ienv, value=None if f is None else f[0])

    def fix_up(stores):
        """After a loop over the reduced axis: add each one-hot addend at its label."""
        for st in stores:
            f = addends.get(id(st))
            if f is None:
                continue
            ok, lenv = f[1].at_label(em, env)
            with b.if_then(ok):
                dt = st.buffer.dtype
                ptr = em.address(st.buffer, st.index, lenv)
                old = b.load(ptr, typ=LL[dt], align=ALIGN[dt])
                b.store(b.fadd(old, em.value(f[1].value, lenv)), ptr, align=ALIGN[dt])

    def with_prefetch(j, body):
        return body if prefetch is None or prefetch.pass_index != j else prefetch.wrap(em, body)

    for j, (picked, group, stores) in enumerate(passes[:-1]):
        for r, oh in picked:
            ok, lenv = oh.at_label(em, env)
            env.cache[r.result.id] = b.select(ok, em.value(oh.value, lenv), const(r.result.dtype, 0))
        if not group and not stores:
            continue
        slots = []
        for r in group:
            adt = acc_dtype(r.kind, r.result.dtype)
            slot = ctx.alloca(LL[adt])
            b.store(identity(r.kind, adt), slot)
            local = None
            if loop_blocked is not None and block_sum(r.kind, r.result.dtype):
                local = ctx.alloca(LL[r.result.dtype])
            slots.append((r, adt, slot, local))

        def body(ienv, slots=slots, stores=stores):
            for r, adt, slot, local in slots:
                x = em.value(r.operand, ienv)
                if local is not None:
                    dt = r.result.dtype
                    b.store(combine(ctx, r.kind, dt, b.load(local, typ=LL[dt]), x), local)
                    continue
                if adt != r.result.dtype:
                    x = b.fpext(x, F64)
                b.store(combine(ctx, r.kind, adt, b.load(slot, typ=LL[adt]), x), slot)
            for st in stores:
                put(st, ienv)

        blocked = [(r, adt, slot, local) for r, adt, slot, local in slots if local is not None]
        if blocked:
            def begin(blocked=blocked):
                for r, adt, slot, local in blocked:
                    b.store(identity(r.kind, r.result.dtype), local)

            def end(blocked=blocked):
                for r, adt, slot, local in blocked:
                    part = b.load(local, typ=LL[r.result.dtype])
                    if adt != r.result.dtype:
                        part = b.fpext(part, LL[adt])
                    b.store(combine(ctx, r.kind, adt, b.load(slot, typ=LL[adt]), part), slot)
            loop_blocked(env, with_prefetch(j, scratch_body(body)), begin, end)
        else:
            loop_reduced(env, with_prefetch(j, scratch_body(body)))
        fix_up(stores)
        written.update(pending)
        for r, adt, slot, local in slots:
            acc = b.load(slot, typ=LL[adt])
            if finish is not None:
                acc = finish(r.kind, adt, acc)
            if adt != r.result.dtype:
                acc = b.fptrunc(acc, LL[r.result.dtype])
            env.cache[r.result.id] = acc
    outer, _ = split_stores(k)
    inner = passes[-1][2]
    if outer:
        def emit_outer():
            oenv = env.child()
            for s in outer:
                em.store(s, oenv)
        if guard_outer is not None:
            guard_outer(emit_outer)
        else:
            emit_outer()
    if inner:
        def body(ienv):
            for st in inner:
                put(st, ienv)

        body = with_prefetch(len(passes) - 1, scratch_body(body))
        if streaming:
            streaming_pass(em, env, streaming, body, loop_reduced)
        else:
            loop_reduced(env, body)
        fix_up(inner)


# An output of at least this many bytes, written once per element by a row kernel's store
# pass, is written with non-temporal stores (``vmovntps``): it goes to memory without being
# read into the cache first, and does not push the rows the kernel reads out of it.  W4's
# kernel (16 MiB of dx) took 0.97-1.12 ms instead of 1.32-1.71 (medians; best 0.79-0.88
# against 1.02-1.11; AMD EPYC, both cores, in-process A/B).  The stores of a value kept for
# a later pass stay ordinary: W3's kept exp row is read back, and with every store to it
# streaming its kernel took 2.3 ms instead of 0.8.  (Tried for W3: its exp kept in a stack
# row, its one-hot addend added to the chunk before the streaming store: 0.84-0.92 ms
# against 0.81-0.82 plain, medians; for W4: dL/dxhat kept in a stack row for the dx pass,
# dx streamed: 0.76-1.11 ms against 0.76-0.92; neither kept.)
STREAMING_MIN_BYTES = 8 << 20
CACHE_LINE = 64


def streaming_stores(kernel: Kernel, plan: dict, passes=None) -> frozenset:
    """Names of the outputs the store pass may write with non-temporal stores: written only
    there (not an accumulation, not a kept value's row, no one-hot addend added to it after
    the loop: those read the lines back), in whole cache lines (each row along
    the one reduced axis is contiguous, a multiple of ``CACHE_LINE`` bytes, and so is each
    step of the outer axes), and at least ``STREAMING_MIN_BYTES``; all of one float type.
    ``passes``: the kernel's ``pass_plan``, if the caller has it."""
    red = kernel.reduce_axes
    if len(red) != 1:
        return frozenset()
    n = kernel.space[red[0]]
    kept = {st.buffer.name for st in plan.values()}
    acc = {r.result.id for r in kernel.accumulations}
    writers = _writers(kernel)
    out = set()
    for s in (pass_plan(kernel) if passes is None else passes)[-1][2]:
        buf, idx = s.buffer, s.index
        item = _ITEM_BYTES[buf.dtype]
        if (buf.dtype not in ("f32", "f64") or len(writers[buf.name]) != 1 or buf.name in kept
                or s.value.id in acc or one_hot_addend(kernel, s) is not None or idx.offset or (n * item) % CACHE_LINE
                or buf.numel * item < STREAMING_MIN_BYTES
                or tuple(idx.strides[a] for a in red) != contiguous_strides(tuple(kernel.space[a] for a in red))
                or any((idx.strides[a] * item) % CACHE_LINE for a in kernel.outer_axes)):
            continue
        out.add(buf)
    if len({buf.dtype for buf in out}) > 1:
        return frozenset()
    return frozenset(buf.name for buf in out)


def streaming_pass(em: BodyEmitter, env: Env, names, body, loop_reduced):
    """The store pass (``body`` at each point of the reduced axis) with the stores to ``names``
    non-temporal, where every one of their pointers is cache-line aligned; ``loop_reduced``'s
    plain loop where one is not.  The loop vectorizer keeps a loop with non-temporal scalar
    stores scalar (a vector non-temporal store must be aligned, a float's store is not), so
    the streaming loop runs in chunks of one cache line: an inner loop over the chunk stores
    to a stack chunk (vectorized into one vector, the chunk promoted to a register) and
    an aligned non-temporal vector store writes the chunk out."""
    b, ctx, k = em.ctx.b, em.ctx, em.k
    (ax,) = k.reduce_axes
    n = k.space[ax]
    ok = None
    for name in sorted(names):
        low = b.and_(b.ptrtoint(em.ptrs[name], I64), ir.Constant(I64, CACHE_LINE - 1))
        c = b.icmp_unsigned("==", low, ir.Constant(I64, 0))
        ok = c if ok is None else b.and_(ok, c)
    stores = {s.buffer.name: s for s in k.body if isinstance(s, Store) and s.buffer.name in names}
    (dt,) = {stores[name].buffer.dtype for name in names}
    width = CACHE_LINE // _ITEM_BYTES[dt]
    vec = ir.VectorType(LL[dt], width)
    with b.if_else(ok) as (streaming, plain):
        with streaming:
            chunks = {}
            for name in sorted(names):
                chunk = ctx.alloca(LL[dt], width)
                chunk.align = CACHE_LINE
                chunks[name] = chunk

            def chunk_of(c):
                base = b.mul(c, ir.Constant(I64, width), flags=("nsw",))

                def lane(j):
                    em.row_slots = {name: (chunk, j) for name, chunk in chunks.items()}
                    body(env.child({ax: offset_index(b, base, j)}))
                    em.row_slots = {}
                for_range(b, 0, width, lane, name=f"r{ax}l")
                start = env.child({ax: base})
                for name, chunk in chunks.items():
                    st = stores[name]
                    v = b.load(chunk, typ=vec, align=CACHE_LINE)
                    out = b.store(v, em.address(st.buffer, st.index, start), align=CACHE_LINE)
                    out.set_metadata("nontemporal", ctx.module.add_metadata([ir.Constant(I32, 1)]))
            for_range(b, 0, n // width, chunk_of, name=f"r{ax}c")
        with plain:
            loop_reduced(env.child(), body)


def store_fence(module: ir.Module, b: ir.IRBuilder):
    """``sfence``: non-temporal stores are weakly ordered; after it they are visible to any
    thread that later synchronises with this one."""
    b.call(intrinsic(module, "llvm.x86.sse.sfence", ir.VoidType(), []), [])


def decompose(b: ir.IRBuilder, flat, axes, space) -> dict:
    """Split a flat i64 index over ``axes`` (row-major, extents from ``space``) into axis indices."""
    out = {}
    rest = flat
    for pos, ax in enumerate(reversed(axes)):
        n = space[ax]
        if pos == len(axes) - 1:
            out[ax] = rest
        else:
            c = ir.Constant(I64, n)
            out[ax] = b.urem(rest, c)
            rest = b.udiv(rest, c)
    return out


def add_kernel_annotation(module: ir.Module, fn: ir.Function):
    md = module.add_metadata([fn, "kernel", ir.Constant(I32, 1)])
    module.add_named_metadata("nvvm.annotations", md)
