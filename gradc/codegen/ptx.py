"""GPU backend: kernel IR -> LLVM IR for ``nvptx64-nvidia-cuda`` -> PTX via llvmlite's NVPTX target.

The body lowering is ``llvm_common``'s, shared with the CPU; only how indices are produced
differs.  Every kernel is ``void @name(ptr addrspace(1) %p0, ...)`` (one global pointer per
``kernel.params`` entry) marked ``!{ptr @name, !"kernel", i32 1}`` in ``nvvm.annotations``.
Schedules (``GpuLaunch.mode``):

* ``elementwise``: no reductions; a grid-stride loop over the flattened space.
* ``rows``: short reductions (<= ``ROW_MODE_MAX`` points); one thread per outer point,
  grid-stride, the reduced axes looped sequentially as on the CPU.
* ``block``: one block per outer point (grid-stride over blocks); threads stride over the
  reduced points, partials combine with ``shfl.sync.down`` within warps and shared memory
  (addrspace 3) across warps; stores that do not vary over the reduced axes run on thread 0.
* ``matmul``: matmul-shaped kernels (``match_contraction``): TILE x TILE shared-memory tiles,
  one output per thread, the fused epilogue applied in registers.

Transcendentals come from ``llvm_math`` (NVPTX has no libm).  ``emit_ptx(kernel, sm)``
returns PTX text; ``compile_ptx`` also returns the launch description.
"""
from __future__ import annotations

import math
import threading
from collections import ChainMap
from dataclasses import dataclass

import llvmlite.binding as llvm
from llvmlite import ir

from .kernel_ir import Kernel, Store, coalesce, match_contraction
from .llvm_common import (reduced_loops, F64, I1, I32, I64, LL, BodyEmitter, Env, LowerCtx, acc_dtype, add_kernel_annotation,
                          combine, decompose, emit_point, for_range, identity)

TRIPLE = "nvptx64-nvidia-cuda"
GPTR = ir.PointerType(addrspace=1)
BLOCK = 256
ROW_MODE_MAX = 32
TILE = 16
_lock = threading.Lock()
_tms: dict = {}


@dataclass
class GpuLaunch:
    """How to launch a PTX kernel: block shape, grid computation inputs, schedule."""
    name: str
    mode: str            # elementwise | rows | block | matmul
    block: tuple         # (x, y, z)
    work: int            # points (elementwise), outer points (rows/block)
    grid: tuple | None = None   # fixed grid (matmul)
    params: tuple = ()

    def grid_for(self, sm_count: int = 132) -> tuple:
        if self.grid is not None:
            return self.grid
        if self.mode == "block":
            return (max(1, min(self.work, sm_count * 32)), 1, 1)
        return (max(1, min(math.ceil(self.work / self.block[0]), sm_count * 32)), 1, 1)


def target_machine(sm: str = "sm_80"):
    with _lock:
        if sm not in _tms:
            llvm.initialize_all_targets()
            llvm.initialize_all_asmprinters()
            _tms[sm] = llvm.Target.from_triple(TRIPLE).create_target_machine(cpu=sm, opt=3)
        return _tms[sm]


def _sreg(module, name):
    full = f"llvm.nvvm.read.ptx.sreg.{name}"
    return module.globals.get(full) or ir.Function(module, ir.FunctionType(I32, []), full)


class _Gpu:
    """Per-kernel emission state: module, function, builder, special registers."""

    def __init__(self, kernel: Kernel, name: str):
        self.k = kernel
        self.module = ir.Module(name=name)
        self.module.triple = TRIPLE
        self.fn = ir.Function(self.module, ir.FunctionType(ir.VoidType(), [GPTR] * len(kernel.params)), name)
        for a, p in zip(self.fn.args, kernel.params):
            a.name = p.name
        entry = self.fn.append_basic_block("entry")
        self.ab = ir.IRBuilder(entry)
        self.b = ir.IRBuilder(self.fn.append_basic_block("body"))
        self.ctx = LowerCtx(self.b, "nvptx", alloca_builder=self.ab)
        self.em = BodyEmitter(self.ctx, kernel, {p.name: a for p, a in zip(kernel.params, self.fn.args)})
        self._shared = 0

    def sreg(self, name):
        return self.b.zext(self.b.call(_sreg(self.module, name), []), I64)

    def barrier(self):
        name = "llvm.nvvm.barrier0"
        fn = self.module.globals.get(name) or ir.Function(self.module, ir.FunctionType(ir.VoidType(), []), name)
        fn.attributes.add("convergent")
        self.b.call(fn, [])

    def shared(self, ty, n):
        gv = ir.GlobalVariable(self.module, ir.ArrayType(ty, n), f"smem{self._shared}", addrspace=3)
        gv.linkage = "internal"
        gv.initializer = ir.Constant(ir.ArrayType(ty, n), ir.Undefined)
        gv.align = 8
        self._shared += 1
        return gv

    def sptr(self, gv, i):
        return self.b.gep(gv, [ir.Constant(I32, 0), i], inbounds=True)   # typed: element pointer

    def finish(self):
        self.b.ret_void()
        self.ab.branch(self.fn.blocks[1])
        add_kernel_annotation(self.module, self.fn)
        return self.module

    # -- warp / block reductions --------------------------------------------------------------
    def shfl_down(self, v, off):
        b = self.b
        fn_name = "llvm.nvvm.shfl.sync.down.i32"
        fn = self.module.globals.get(fn_name) or ir.Function(
            self.module, ir.FunctionType(I32, [I32, I32, I32, I32]), fn_name)
        fn.attributes.add("convergent")
        args = lambda x: [ir.Constant(I32, -1), x, ir.Constant(I32, off), ir.Constant(I32, 31)]  # noqa: E731
        bits = v.type.width if isinstance(v.type, ir.IntType) else (64 if v.type == F64 else 32)
        ity = ir.IntType(bits)
        x = v if isinstance(v.type, ir.IntType) and bits == v.type.width else b.bitcast(v, ity)
        if bits == 64:
            lo = b.call(fn, args(b.trunc(x, I32)))
            hi = b.call(fn, args(b.trunc(b.lshr(x, ir.Constant(I64, 32)), I32)))
            y = b.or_(b.zext(lo, I64), b.shl(b.zext(hi, I64), ir.Constant(I64, 32)))
        elif bits == 32:
            y = b.call(fn, args(x))
        else:   # i1 / i8
            y = b.trunc(b.call(fn, args(b.zext(x, I32))), ity)
        return y if y.type == v.type else b.bitcast(y, v.type)

    def warp_reduce(self, kind, dtype, v):
        for off in (16, 8, 4, 2, 1):
            v = combine(self.ctx, kind, dtype, v, self.shfl_down(v, off))
        return v

    def block_reduce(self, kind, dtype, v):
        """All-reduce over the block; every thread gets the result."""
        b = self.b
        ty = LL[dtype]
        sm = self.shared(ty if dtype != "i1" else ir.IntType(8), 33)
        tid = b.trunc(self.sreg("tid.x"), I32)
        nthreads = b.trunc(self.sreg("ntid.x"), I32)
        lane = b.and_(tid, ir.Constant(I32, 31))
        warp = b.lshr(tid, ir.Constant(I32, 5))
        nwarps = b.lshr(b.add(nthreads, ir.Constant(I32, 31)), ir.Constant(I32, 5))
        store_ty = sm.value_type.element

        def st(val, i):
            b.store(b.zext(val, store_ty) if dtype == "i1" else val, self.sptr(sm, i))

        def ld(i):
            x = b.load(self.sptr(sm, i), typ=store_ty)
            return b.trunc(x, I1) if dtype == "i1" else x

        v = self.warp_reduce(kind, dtype, v)
        with b.if_then(b.icmp_unsigned("==", lane, ir.Constant(I32, 0))):
            st(v, warp)
        self.barrier()
        with b.if_then(b.icmp_unsigned("==", warp, ir.Constant(I32, 0))):
            slot = self.ctx.alloca(ty)
            b.store(identity(kind, dtype), slot)
            with b.if_then(b.icmp_unsigned("<", lane, nwarps)):
                b.store(ld(lane), slot)
            x = self.warp_reduce(kind, dtype, b.load(slot, typ=ty))
            with b.if_then(b.icmp_unsigned("==", lane, ir.Constant(I32, 0))):
                st(x, ir.Constant(I32, 32))
        self.barrier()
        return ld(ir.Constant(I32, 32))


def _grid_stride(g: _Gpu, total: int, body, per_block: bool = False):
    """for (i = start; i < total; i += step) body(i): per thread, or per block when per_block."""
    b = g.b
    if per_block:
        start, step = g.sreg("ctaid.x"), g.sreg("nctaid.x")
    else:
        tid, bid, nt, nb = (g.sreg(r) for r in ("tid.x", "ctaid.x", "ntid.x", "nctaid.x"))
        start, step = b.add(b.mul(bid, nt), tid), b.mul(nt, nb)
    for_range(b, start, total, body, step=step, name="gs")


def _lower_generic(kernel: Kernel, name: str):
    k = coalesce(kernel)
    g = _Gpu(k, name)
    b = g.b
    outer, red = k.outer_axes, k.reduce_axes
    n_outer = math.prod(k.space[a] for a in outer)
    n_red = math.prod(k.space[a] for a in red)
    if not red and not k.reductions:
        mode = "elementwise"
        _grid_stride(g, k.numel, lambda i: emit_point(
            g.em, Env(decompose(b, i, tuple(range(len(k.space))), k.space), ChainMap()), None))
    elif n_red <= ROW_MODE_MAX or not red:
        mode = "rows"

        loop_reduced = reduced_loops(b, k.space, red)
        _grid_stride(g, n_outer, lambda o: emit_point(
            g.em, Env(decompose(b, o, outer, k.space), ChainMap()), loop_reduced))
    else:
        mode = "block"

        def loop_reduced(env, body):
            def inner(r):
                body(env.child(decompose(b, r, red, k.space)))
            for_range(b, g.sreg("tid.x"), n_red, inner, step=g.sreg("ntid.x"), name="r")

        def guard(emit):
            with b.if_then(b.icmp_unsigned("==", g.sreg("tid.x"), ir.Constant(I64, 0))):
                emit()

        _grid_stride(g, n_outer, lambda o: emit_point(
            g.em, Env(decompose(b, o, outer, k.space), ChainMap()), loop_reduced,
            finish=g.block_reduce, guard_outer=guard), per_block=True)
    module = g.finish()
    work = k.numel if mode == "elementwise" else n_outer
    return module, GpuLaunch(name, mode, (BLOCK, 1, 1), max(work, 0), None, tuple(kernel.params))


def _lower_matmul(kernel: Kernel, c, name: str):
    g = _Gpu(kernel, name)
    b = g.b
    sp = kernel.space
    M, N, K = sp[c.m_axis], sp[c.n_axis], sp[c.k_axis]
    nbatch = math.prod(sp[a] for a in c.batch_axes)
    adt = acc_dtype("max", c.reduce.result.dtype)      # f32 stays f32 (one fma chain per output)
    ty = LL[adt]
    As, Bs = g.shared(ty, TILE * TILE), g.shared(ty, TILE * TILE)
    tx, ty_, bx, by, bz = (g.sreg(r) for r in ("tid.x", "tid.y", "ctaid.x", "ctaid.y", "ctaid.z"))
    T = ir.Constant(I64, TILE)
    row = b.add(b.mul(by, T), ty_)
    col = b.add(b.mul(bx, T), tx)
    bidx = decompose(b, bz, c.batch_axes, sp) if c.batch_axes else {}
    acc = g.ctx.alloca(ty)
    b.store(ir.Constant(ty, 0.0), acc)
    zero = ir.Constant(ty, 0.0)

    def load_or_zero(load, idx, ok):
        slot = g.ctx.alloca(ty)
        b.store(zero, slot)
        with b.if_then(ok):
            env = Env(idx, ChainMap())
            b.store(g.em.value(load.result, env), slot)
        return b.load(slot, typ=ty)

    def sidx(r, cc):
        return b.trunc(b.add(b.mul(r, T), cc), I32)

    def tile(t):
        ka = b.add(b.mul(t, T), tx)
        kb = b.add(b.mul(t, T), ty_)
        ok_a = b.and_(b.icmp_signed("<", row, ir.Constant(I64, M)), b.icmp_signed("<", ka, ir.Constant(I64, K)))
        ok_b = b.and_(b.icmp_signed("<", kb, ir.Constant(I64, K)), b.icmp_signed("<", col, ir.Constant(I64, N)))
        b.store(load_or_zero(c.a, {**bidx, c.m_axis: row, c.k_axis: ka}, ok_a), g.sptr(As, sidx(ty_, tx)))
        b.store(load_or_zero(c.b, {**bidx, c.n_axis: col, c.k_axis: kb}, ok_b), g.sptr(Bs, sidx(ty_, tx)))
        g.barrier()
        s = b.load(acc, typ=ty)
        for kk in range(TILE):
            kkc = ir.Constant(I64, kk)
            av = b.load(g.sptr(As, sidx(ty_, kkc)), typ=ty)
            bv = b.load(g.sptr(Bs, sidx(kkc, tx)), typ=ty)
            s = b.fadd(s, b.fmul(av, bv, flags=("contract",)), flags=("contract",))
        b.store(s, acc)
        g.barrier()

    for_range(b, 0, math.ceil(K / TILE), tile, name="t")
    inside = b.and_(b.icmp_signed("<", row, ir.Constant(I64, M)), b.icmp_signed("<", col, ir.Constant(I64, N)))
    with b.if_then(inside):
        env = Env({**bidx, c.m_axis: row, c.n_axis: col}, ChainMap())
        res = b.load(acc, typ=ty)
        env.cache[c.reduce.result.id] = res
        for s in kernel.body:
            if isinstance(s, Store):
                g.em.store(s, env)
    module = g.finish()
    grid = (math.ceil(N / TILE) or 1, math.ceil(M / TILE) or 1, max(nbatch, 1))
    return module, GpuLaunch(name, "matmul", (TILE, TILE, 1), M * N * max(nbatch, 1), grid, tuple(kernel.params))


def lower_kernel(kernel: Kernel, name: str | None = None):
    """(llvmlite ir.Module, GpuLaunch) for the NVPTX target."""
    from .llvm_cpu import symbol
    name = symbol(name or kernel.name)
    c = match_contraction(kernel)
    if c is not None and all(kernel.space):
        return _lower_matmul(kernel, c, name)
    return _lower_generic(kernel, name)


def optimize(mod: llvm.ModuleRef, tm) -> llvm.ModuleRef:
    pto = llvm.create_pipeline_tuning_options(speed_level=3)
    pto.loop_vectorization = False
    pto.slp_vectorization = False
    pb = llvm.create_pass_builder(tm, pto)
    pb.getModulePassManager().run(mod, pb)
    return mod


@dataclass
class PtxKernel:
    ptx: str
    name: str
    sm: str
    launch: GpuLaunch


def compile_ptx(kernel: Kernel, sm: str = "sm_80", name: str | None = None) -> PtxKernel:
    module, launch = lower_kernel(kernel, name)
    tm = target_machine(sm)
    mod = llvm.parse_assembly(str(module))
    mod.triple = TRIPLE
    mod.data_layout = str(tm.target_data)
    mod.verify()
    optimize(mod, tm)
    return PtxKernel(tm.emit_assembly(mod), launch.name, sm, launch)


def emit_ptx(kernel: Kernel, sm: str = "sm_80") -> str:
    """PTX text of ``kernel`` for ``sm`` (e.g. 'sm_80', 'sm_90')."""
    return compile_ptx(kernel, sm).ptx
