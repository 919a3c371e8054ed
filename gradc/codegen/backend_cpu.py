"""CPU backend for the executor: ``gradc.fused`` regions -> kernel IR -> native kernels.

``CPUBackend.compile_fused(op)`` lowers a fused region with ``lower_fused`` and compiles it
with ``runtime_cpu``; the returned callable takes the region's input arrays and returns a
tuple of outputs drawn from ``Recycler`` pools (touching fresh pages costs ~2.2 us per
4 KiB here, so buffers are reused once nobody references them).  Regions ``lower_fused`` cannot express run with the
op table's NumPy references (the interpreter path).  ``compile_op`` sends ``gradc.matmul``
to ``matmul_cpu`` (BLAS) and leaves other ops to their NumPy references.
"""
from __future__ import annotations

import ctypes
import functools
import hashlib
import itertools
import logging
import weakref

import numpy as np

from .kernel_ir import build_matmul, np_dtype
from .lower_fused import Unlowerable, lower_fused
from .host_buffers import Recycler, empty_aligned
from .split_reduce import split_reduction

log = logging.getLogger("gradc.codegen")
_ids = itertools.count()


class _Fixed:
    """An output that always goes to the same array (``Recycler``'s interface)."""
    __slots__ = ("entry",)

    def __init__(self, array):
        self.entry = [array, array.ctypes.data]

    def get(self):
        return self.entry


def make_runner(ck, kernel, fixed=None, pool_for=Recycler):
    """A fast ``(*inputs) -> outputs`` for a compiled kernel: one reusable argument vector,
    data pointers cached per input slot while the same array comes back, pooled outputs.
    ``fixed[k]``, when given and not None, is the array output k is always written to (a
    buffer in the executor's arena: its pointer is set once). ``pool_for(shape, dtype)`` gives
    the other outputs' pools."""
    in_specs = [np_dtype(p.dtype) for p in kernel.inputs]
    fixed = list(fixed) if fixed is not None else [None] * len(kernel.outputs)
    pools = [pool_for(p.shape, np_dtype(p.dtype)) if f is None else _Fixed(f)
             for p, f in zip(kernel.outputs, fixed)]
    n_in = len(in_specs)
    argv = (ctypes.c_void_p * len(kernel.params))()
    last = [None] * n_in
    out_ptrs = [None] * len(pools)     # the pointer in each output slot of ``argv``
    if ck.parallel:
        call = functools.partial(ck.run_args, argv)
    else:                                      # the entry point itself, on the whole index space
        call = ck.serial_call(argv)

    def run(*arrays):
        keep = None
        for i in range(n_in):
            a = arrays[i]
            ref = last[i]
            if ref is None or ref() is not a:      # (else the array of the last call: pointer already set)
                if a.flags.c_contiguous and a.dtype == in_specs[i]:
                    argv[i] = a.ctypes.data
                    last[i] = weakref.ref(a)
                else:
                    a = np.ascontiguousarray(a, dtype=in_specs[i])
                    keep = [a] if keep is None else [*keep, a]    # alive until the call
                    argv[i] = a.ctypes.data
                    last[i] = None
        outs = []
        j = 0
        for pool in pools:
            e = pool.get()
            if e[1] != out_ptrs[j]:       # (else the buffer of the last call: pointer already set)
                argv[n_in + j] = out_ptrs[j] = e[1]
            outs.append(e[0])
            j += 1
        call()
        return tuple(outs)
    return run


class CPUBackend:
    name = "cpu"
    uses_arena = True      # the executor may hand compile_fused/compile_op arena outputs

    def __init__(self, math_mode: str = "ir", pool_for=Recycler):
        self.math_mode = math_mode
        self.pool_for = pool_for       # (shape, dtype) -> the output pool of a kernel result
        self.kernels = []          # compiled kernels, for dump-ir --stage kernels / inspection
        self._ready = {}           # fused op -> (kernel, compiled) from precompile

    def _lower(self, op):
        """Kernel IR for a fused op, named by a hash of its text so that the names (and the
        disk cache keys of the compiled objects) are the same in every process."""
        kernel = lower_fused(op, name="fused")
        kernel.name = "fused_" + hashlib.sha1(str(kernel).encode()).hexdigest()[:16]
        return kernel

    def precompile(self, ops) -> None:
        """Compile the kernels of several fused ops at once, on all cores (``compile_into_cache``)."""
        from .runtime_cpu import compile_into_cache, num_threads
        todo = []
        for op in ops:
            try:
                todo.append((op, self._plan(op)))
            except (Unlowerable, NotImplementedError):
                continue
        if len(todo) < 2 or num_threads() < 2:
            return
        try:
            compile_into_cache([plan[1] for _, plan in todo], self.math_mode)
        except (OSError, NotImplementedError) as e:   # then compile_fused compiles them one by one
            log.info("parallel kernel compilation skipped: %s", e)
            return
        for op, plan in todo:
            ck = self._try_compile(plan[1])
            if ck is not None:
                self._ready[op] = (plan, ck)

    def _plan(self, op):
        """(kernel, kernel to compile, split combine or None): a reduction over the leading
        axis is compiled only in its split form (partial slices on all cores), the other
        kernels as lowered."""
        kernel = self._lower(op)
        split = split_reduction(kernel)
        if split is not None:
            return kernel, split[0], split[1]
        return kernel, kernel, None

    def _try_compile(self, kernel):
        from .runtime_cpu import compile_kernel
        try:
            return compile_kernel(kernel, math_mode=self.math_mode)
        except NotImplementedError:
            return None

    def compile_fused(self, op, fixed=None):
        """A callable running fused ``op`` natively; ``fixed``: per result, an arena array to
        write it to, or None for a pooled buffer (kernels with their own output handling,
        BLAS contractions and split reductions, ignore it and pool)."""
        from ..executor import _run_region
        from .runtime_cpu import compile_kernel
        try:
            if op in self._ready:
                (kernel, target, combine), ck = self._ready.pop(op)
            else:
                kernel, target, combine = self._plan(op)
                ck = compile_kernel(target, math_mode=self.math_mode)
        except (Unlowerable, NotImplementedError) as e:
            log.info("fused region runs interpreted: %s", e)
            return _run_region(op)
        self.kernels.append(kernel)
        if not hasattr(ck, "run_args"):       # a contraction plan (BLAS) has its own calling convention
            outs = [(np_dtype(p.dtype), p.shape) for p in target.outputs]

            def run(*arrays):
                res = [empty_aligned(shape, dt) for dt, shape in outs]
                ck(*[np.ascontiguousarray(a) for a in arrays], *res, check=False)
                return tuple(res)
            return run
        if combine is not None:
            return self._split_runner(kernel, make_runner(ck, target, pool_for=self.pool_for), combine)
        return make_runner(ck, kernel, fixed, self.pool_for)

    def _split_runner(self, kernel, run, combine):
        """Fold the partial slices of a split reduction (axis 0) into the kernel's outputs."""
        folds = [(combine.get(p.name), p.shape, np_dtype(p.dtype)) for p in kernel.outputs]

        def run_split(*arrays):
            results = run(*arrays)
            return tuple(r if fold is None else
                         np.asarray(fold.reduce(r, dtype=np.float64 if fold is np.add else None),
                                    dtype=dt).reshape(shape)
                         for r, (fold, shape, dt) in zip(results, folds))
        return run_split

    def compile_op(self, op, fixed=None):
        """``gradc.matmul`` through BLAS, writing to ``fixed[0]`` (an arena array) when given;
        None for other ops (they run their NumPy reference)."""
        if op.name != "gradc.matmul":
            return None
        from .runtime_cpu import compile_kernel
        a, b = (tuple(v.type.shape) for v in op.operands)
        dt = op.operands[0].type.dtype
        if not dt.is_floating_point or 0 in a or 0 in b:
            return None
        npdt = np_dtype(dt.ir_name)
        plans = {}

        def plan_for(ta: bool, tb: bool):
            """The BLAS plan for operands given as their transposes' contiguous memory (a 2-D
            operand that is a transposed view needs no copy: BLAS takes the transpose flag)."""
            key = (ta, tb)
            if key not in plans:
                st_a = (1, a[0]) if ta else None
                st_b = (1, b[0]) if tb else None
                kernel = build_matmul(f"matmul_{next(_ids)}", a, b, dt.ir_name, a_strides=st_a, b_strides=st_b)
                plans[key] = (compile_kernel(kernel), kernel.outputs[0].shape)
            return plans[key]
        pool = {}
        if fixed is not None and fixed[0] is not None:
            pool[tuple(fixed[0].shape)] = _Fixed(fixed[0])

        def operand(x, two_d):
            if two_d and not x.flags.c_contiguous and x.flags.f_contiguous and x.dtype == npdt:
                return x.T, True
            return np.ascontiguousarray(x, dtype=npdt), False

        def run(x, y):
            x, ta = operand(x, len(a) == 2)
            y, tb = operand(y, len(b) == 2)
            plan, shape = plan_for(ta, tb)
            rec = pool.get(shape)
            if rec is None:
                rec = pool[shape] = Recycler(shape, npdt)
            out = rec.get()[0]
            plan(x, y, out, check=False)
            return out
        plan_for(False, False)
        return run
