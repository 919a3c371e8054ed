"""CPU matrix multiply: contraction kernels go to the BLAS NumPy links, or a generated blocked kernel.

Measured on this machine (2 cores, Emerald Rapids, AVX-512) with
``bench/bench_kernels_matmul.py``, square M=N=K, GFLOP/s, best of several runs, both paths on
2 threads (the machine is shared, so runs vary by up to 2x; this is the quietest run):

    size   dtype   BLAS via ctypes   generated blocked   numpy.matmul
      64   f32          35.4              13.0               34.8
     128   f32          81.5              91.7               80.6
     256   f32         191.2             128.5              193.4
     512   f32         233.1              69.9              241.2
    1024   f32         277.7             151.3              256.7
      64   f64          26.8              14.3               27.7
     128   f64          61.8              70.7               61.4
     256   f64         101.6              35.6              101.8
     512   f64         121.6              32.0              122.6
    1024   f64         124.0              38.0               98.4

Choice: BLAS.  OpenBLAS packs panels and uses hand-written micro-kernels; the generated
kernel (4 x 2-vector register tile, fma, K-blocked, no packing) is close only around 128 and
falls to 30-60% at larger sizes (power-of-two leading dimensions alias in cache without packing).
The generated kernel stays available (``GRADC_MATMUL=generated``) and is the fallback when
no BLAS symbol is found.  The BLAS is called through ctypes on the kernel's buffers
(``scipy_cblas_{s,d}gemm64_`` in NumPy's bundled OpenBLAS; ``cblas_{s,d}gemm`` otherwise),
with transposes and leading dimensions taken from the load strides; layouts BLAS cannot
express go through ``numpy.matmul`` on strided views.  An elementwise epilogue fused into
the contraction (bias, activation) runs as a second generated kernel reading the product.

Threads by problem size: OpenBLAS already chooses them (one thread below its multithreading
threshold), so gradc leaves it to the BLAS.  f32 ``numpy.matmul`` in microseconds, best of 7,
default threads vs ``OPENBLAS_NUM_THREADS=1`` (two runs each, 2026-11-22):

    M x K x N          default      one thread
    2 x 2 x 2          0.9, 0.9     0.9, 1.7
    32 x 64 x 64       2.6, 2.6     2.6, 4.4
    200 x 64 x 64      11.8, 12.7   11.0, 16.9
    256 x 256 x 256    171, 160     269, 336
    256 x 1024 x 1024  2076, 2000   4214, 5398     (W2's forward product)

Small products cost the same (one thread either way); from 256^3 on the default is 1.6-2.7x
faster.  No size here ran slower with the default.
"""
from __future__ import annotations

import ctypes
import glob
import os

import numpy as np
from numpy.lib.stride_tricks import as_strided
from llvmlite import ir

from .kernel_ir import Kernel, match_contraction, np_dtype, split_contraction

# ---------------------------------------------------------------------------------------------
# BLAS through ctypes
# ---------------------------------------------------------------------------------------------
_blas_cache: dict = {}
RowMajor, NoTrans, Trans = 101, 111, 112


def _find_blas():
    """(sgemm, dgemm, int type) from NumPy's BLAS, or None."""
    if "fns" in _blas_cache:
        return _blas_cache["fns"]
    found = None
    libs = []
    try:
        from numpy._core import _multiarray_umath as mu
    except ImportError:  # pragma: no cover - NumPy < 2
        from numpy.core import _multiarray_umath as mu
    libs.append(mu.__file__)
    npdir = os.path.dirname(os.path.dirname(np.__file__))
    libs += sorted(glob.glob(os.path.join(npdir, "numpy.libs", "*blas*.so*")))
    for path in libs:
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for prefix, suffix, ity in (("scipy_cblas_", "64_", ctypes.c_int64), ("cblas_", "64_", ctypes.c_int64),
                                    ("cblas_", "", ctypes.c_int)):
            try:
                s = getattr(lib, f"{prefix}sgemm{suffix}")
                d = getattr(lib, f"{prefix}dgemm{suffix}")
            except AttributeError:
                continue
            for fn, fty in ((s, ctypes.c_float), (d, ctypes.c_double)):
                fn.restype = None
                fn.argtypes = [ity, ity, ity, ity, ity, ity, fty, ctypes.c_void_p, ity, ctypes.c_void_p, ity,
                               fty, ctypes.c_void_p, ity]
            found = (s, d, ity)
            break
        if found:
            break
    _blas_cache["fns"] = found
    return found


def _blas_layout(rs, cs, rows, cols):
    """(transpose flag, leading dimension) for a strided 2-D operand, or None."""
    if cs == 1 and (rs >= max(cols, 1) or rows == 1):
        return NoTrans, max(rs, cols, 1)
    if rs == 1 and (cs >= max(rows, 1) or cols == 1):
        return Trans, max(cs, rows, 1)
    return None


class ContractionPlan:
    """How to run one matmul-shaped kernel: operand views, BLAS call or numpy.matmul, epilogue."""

    def __init__(self, kernel: Kernel, mode: str | None = None):
        c = match_contraction(kernel)
        split = split_contraction(kernel, c) if c is not None else None
        if split is None:
            raise ValueError(f"kernel '{kernel.name}' is not a matmul-shaped contraction")
        self.kernel, self.c = kernel, c
        self.acc_buf, epi, self.direct = split
        sp = kernel.space
        self.batch = tuple(sp[a] for a in c.batch_axes)
        self.M, self.N, self.K = sp[c.m_axis], sp[c.n_axis], sp[c.k_axis]
        self.dtype = c.reduce.result.dtype
        self.np_dtype = np_dtype(self.dtype)
        self.names = [p.name for p in kernel.params]
        ia, ib = c.a.index, c.b.index
        self.a_strides = tuple(ia.strides[a] for a in c.batch_axes) + (ia.strides[c.m_axis], ia.strides[c.k_axis])
        self.b_strides = tuple(ib.strides[a] for a in c.batch_axes) + (ib.strides[c.k_axis], ib.strides[c.n_axis])
        self.a_off, self.b_off = ia.offset, ib.offset
        self.epilogue = None
        if epi is not None:
            from .runtime_cpu import compile_kernel
            self.epilogue = compile_kernel(epi)
            self.epi_names = [p.name for p in epi.params]
        self.out_name = self.direct.buffer.name if self.direct is not None else None
        self.mode = mode or os.environ.get("GRADC_MATMUL", "blas")
        blas = _find_blas() if self.mode == "blas" else None
        self.blas = None
        if blas is not None:
            la = _blas_layout(self.a_strides[-2], self.a_strides[-1], self.M, self.K)
            lb = _blas_layout(self.b_strides[-2], self.b_strides[-1], self.K, self.N)
            if la and lb:
                self.blas = (blas[0] if self.dtype == "f32" else blas[1], la, lb)
        self.generated = None
        if self.blas is None and self.mode != "numpy" and not self.batch \
                and self.b_strides[-1] == 1 and kernel.numel > 0:
            self.generated = compile_blocked(self.M, self.N, self.K, self.dtype,
                                             self.a_strides, self.b_strides[0], self.a_off, self.b_off)

    def _view(self, flat, strides, off, shape):
        item = flat.itemsize
        return as_strided(flat[off:] if off else flat, shape=shape, strides=[s * item for s in strides])

    def __call__(self, *arrays, check: bool = True):
        if check:
            from .runtime_cpu import check_buffers
            check_buffers(self.kernel, arrays)
        env = dict(zip(self.names, arrays))
        a = env[self.c.a.buffer.name].reshape(-1)
        b = env[self.c.b.buffer.name].reshape(-1)
        if self.direct is not None:
            acc = env[self.out_name].reshape(self.batch + (self.M, self.N))
        else:
            acc = np.empty(self.batch + (self.M, self.N), self.np_dtype)
        self.matmul(a, b, acc)
        if self.epilogue is not None:
            env["__acc"] = acc
            self.epilogue(*[env[n] for n in self.epi_names])
        return arrays

    def matmul(self, a, b, acc):
        M, N, K = self.M, self.N, self.K
        if self.generated is not None:
            self.generated(a, b, acc)      # operand offsets are baked into the kernel
            return
        if self.blas is None or M == 0 or N == 0:
            av = self._view(a, self.a_strides, self.a_off, self.batch + (M, K))
            bv = self._view(b, self.b_strides, self.b_off, self.batch + (K, N))
            np.matmul(av, bv, out=acc)
            return
        gemm, (ta, lda), (tb, ldb) = self.blas
        item = a.itemsize
        pa0, pb0, pc0 = a.ctypes.data + self.a_off * item, b.ctypes.data + self.b_off * item, acc.ctypes.data
        for bi in np.ndindex(*self.batch):
            oa = sum(i * s for i, s in zip(bi, self.a_strides))
            ob = sum(i * s for i, s in zip(bi, self.b_strides))
            oc = sum(i * s for i, s in zip(bi, acc.strides[:-2])) // item
            gemm(RowMajor, ta, tb, M, N, K, 1.0, pa0 + oa * item, lda, pb0 + ob * item, ldb, 0.0,
                 pc0 + oc * item, max(N, 1))


def compile_contraction(kernel: Kernel, mode: str | None = None):
    """A callable running ``kernel`` through BLAS/blocked matmul, or None if it is not a matmul."""
    c = match_contraction(kernel)
    if c is None or split_contraction(kernel, c) is None:
        return None
    return ContractionPlan(kernel, mode)


# ---------------------------------------------------------------------------------------------
# generated blocked kernel: MR x (2 vectors) register tile, fma, K blocking, masked column tail
# ---------------------------------------------------------------------------------------------
MR = 4
KC = 256


def _vector_width(dtype):
    from .llvm_cpu import host_features
    wide = "+avx512f" in host_features()
    return (16 if wide else 8) if dtype == "f32" else (8 if wide else 4)


def lower_blocked(M, N, K, dtype, a_strides, ldb, a_off=0, b_off=0, name="gradc_matmul_blocked"):
    """LLVM module: ``void name(ptr args{a, b, c}, i64 start, i64 end)`` over row blocks of MR."""
    from .llvm_common import F32, F64, I1, I64, for_range
    from .llvm_cpu import PTR, init_native
    import llvmlite.binding as llvm
    init_native()
    ety = F32 if dtype == "f32" else F64
    VL = _vector_width(dtype)
    vty = ir.VectorType(ety, VL)
    mty = ir.VectorType(I1, VL)
    sfx = f"v{VL}{'f32' if dtype == 'f32' else 'f64'}"
    m = ir.Module(name=name)
    m.triple = llvm.get_process_triple()
    fn = ir.Function(m, ir.FunctionType(ir.VoidType(), [PTR, I64, I64]), name)
    args, start, end = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    pa, pb, pc = (b.load(b.gep(args, [ir.Constant(I64, i)], source_etype=PTR), typ=PTR) for i in range(3))
    fma = ir.Function(m, ir.FunctionType(vty, [vty] * 3), f"llvm.fma.{sfx}")
    mload = ir.Function(m, ir.FunctionType(vty, [PTR, mty, vty]), f"llvm.masked.load.{sfx}.p0")
    mstore = ir.Function(m, ir.FunctionType(ir.VoidType(), [vty, PTR, mty]), f"llvm.masked.store.{sfx}.p0")
    zero_v = ir.Constant(vty, [0.0] * VL)
    ars, acs = a_strides[-2], a_strides[-1]
    i64 = lambda v: ir.Constant(I64, v)  # noqa: E731

    def splat(x):
        v = b.insert_element(ir.Constant(vty, ir.Undefined), x, ir.Constant(ir.IntType(32), 0))
        return b.shuffle_vector(v, ir.Constant(vty, ir.Undefined), ir.Constant(ir.VectorType(ir.IntType(32), VL), [0] * VL))

    def tile(i0, rows, j0, masks, k0, kc, first):
        """C[i0:i0+rows, j0:j0+len(masks)*VL] (+)= A[i0:, k0:k0+kc] @ B[k0:k0+kc, j0:]."""
        nv = len(masks)
        accs = []
        for r in range(rows):
            row = []
            for v in range(nv):
                ptr = b.gep(pc, [b.add(b.mul(b.add(i0, i64(r)), i64(N)), b.add(j0, i64(v * VL)))], source_etype=ety)
                if masks[v] is None:
                    old = b.load(ptr, typ=vty, align=4)
                else:
                    old = b.call(mload, [ptr, masks[v], zero_v])
                row.append(b.select(first, zero_v, old))
            accs.append(row)
        # k loop with accumulators as phis
        pre = b.block
        loop = fn.append_basic_block("k")
        done = fn.append_basic_block("k.end")
        b.branch(loop)
        b.position_at_end(loop)
        k = b.phi(I64)
        k.add_incoming(k0, pre)
        phis = [[b.phi(vty) for _ in range(nv)] for _ in range(rows)]
        for r in range(rows):
            for v in range(nv):
                phis[r][v].add_incoming(accs[r][v], pre)
        bv = []
        for v in range(nv):
            ptr = b.gep(pb, [b.add(b.add(b.mul(k, i64(ldb)), b.add(j0, i64(v * VL))), i64(b_off))], source_etype=ety)
            bv.append(b.load(ptr, typ=vty, align=4) if masks[v] is None else b.call(mload, [ptr, masks[v], zero_v]))
        new = []
        for r in range(rows):
            aoff = b.add(b.add(b.mul(b.add(i0, i64(r)), i64(ars)), b.mul(k, i64(acs))), i64(a_off))
            av = splat(b.load(b.gep(pa, [aoff], source_etype=ety), typ=ety))
            new.append([b.call(fma, [av, bv[v], phis[r][v]]) for v in range(nv)])
        k2 = b.add(k, i64(1))
        k.add_incoming(k2, b.block)
        for r in range(rows):
            for v in range(nv):
                phis[r][v].add_incoming(new[r][v], b.block)
        b.cbranch(b.icmp_signed("<", k2, b.add(k0, kc)), loop, done)
        b.position_at_end(done)
        for r in range(rows):
            for v in range(nv):
                ptr = b.gep(pc, [b.add(b.mul(b.add(i0, i64(r)), i64(N)), b.add(j0, i64(v * VL)))], source_etype=ety)
                if masks[v] is None:
                    b.store(new[r][v], ptr, align=4)
                else:
                    b.call(mstore, [new[r][v], ptr, masks[v]])

    full_cols = N // (2 * VL)
    tail = N - full_cols * 2 * VL
    tail_masks = []
    for v in range((tail + VL - 1) // VL):
        n_on = min(VL, tail - v * VL)
        tail_masks.append(None if n_on == VL else ir.Constant(mty, [1] * n_on + [0] * (VL - n_on)))
    nrb_full, row_tail = M // MR, M % MR

    def row_block(rb, k0, kc, first):
        def body_rows(rows):
            i0 = b.mul(rb, i64(MR))
            if full_cols:
                for_range(b, 0, full_cols, lambda jc: tile(i0, rows, b.mul(jc, i64(2 * VL)), [None, None],
                                                           k0, kc, first), name="jc")
            if tail_masks:
                tile(i0, rows, i64(full_cols * 2 * VL), tail_masks, k0, kc, first)
        if row_tail:
            is_tail = b.icmp_signed("==", rb, i64(nrb_full))
            with b.if_else(is_tail) as (then, other):
                with then:
                    body_rows(row_tail)
                with other:
                    body_rows(MR)
        else:
            body_rows(MR)

    def kblock(kb_i):
        k0 = b.mul(kb_i, i64(KC))
        kc = b.select(b.icmp_signed("<", b.add(k0, i64(KC)), i64(K)), i64(KC), b.sub(i64(K), k0))
        first = b.icmp_signed("==", kb_i, i64(0))
        for_range(b, start, end, lambda rb: row_block(rb, k0, kc, first), name="rb")

    if K > 0:
        for_range(b, 0, (K + KC - 1) // KC, kblock, name="kb")
    else:
        zero = ir.Constant(ety, 0.0)
        for_range(b, 0, M * N, lambda i: b.store(zero, b.gep(pc, [i], source_etype=ety)), name="z")
    b.ret_void()
    return m, (M + MR - 1) // MR


class BlockedMatmul:
    """The generated kernel, callable as ``(a_flat, b_flat, c)``; splits row blocks over threads."""

    def __init__(self, ck):
        self.ck = ck

    def __call__(self, a, b, c):
        self.ck.run_args(self.ck.args([a, b, c]))


def compile_blocked(M, N, K, dtype, a_strides, ldb, a_off=0, b_off=0):
    from .llvm_cpu import CpuKernelInfo
    from .runtime_cpu import CompiledKernel, jit_llvm_ir, num_threads
    module, nrb = lower_blocked(M, N, K, dtype, a_strides, ldb, a_off, b_off)
    ee, addrs = jit_llvm_ir(str(module), ["gradc_matmul_blocked"])
    info = CpuKernelInfo("gradc_matmul_blocked", (), nrb, M * N * K)
    ck = CompiledKernel.__new__(CompiledKernel)
    ck.kernel, ck.info, ck._engine, ck.address = None, info, ee, addrs[info.name]
    from .runtime_cpu import _KFN
    ck._fn = _KFN(ck.address)
    ck.parallel = M * N * K >= 1 << 18 and nrb >= 2 and num_threads() > 1
    return BlockedMatmul(ck)
