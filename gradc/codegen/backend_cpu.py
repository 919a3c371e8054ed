"""CPU backend for the executor: ``gradc.fused`` regions -> kernel IR -> native kernels.

``CPUBackend.compile_fused(op)`` lowers a fused region with ``lower_fused`` and compiles it
with ``runtime_cpu``; the returned callable takes the region's input arrays and returns a
tuple of freshly allocated outputs.  Regions ``lower_fused`` cannot express run with the
op table's NumPy references (the interpreter path).  ``compile_op`` sends ``gradc.matmul``
to ``matmul_cpu`` (BLAS) and leaves other ops to their NumPy references.
"""
from __future__ import annotations

import itertools
import logging

import numpy as np

from .kernel_ir import build_matmul, np_dtype
from .lower_fused import Unlowerable, lower_fused

log = logging.getLogger("gradc.codegen")
_ids = itertools.count()


class CPUBackend:
    name = "cpu"

    def __init__(self, math_mode: str = "ir"):
        self.math_mode = math_mode
        self.kernels = []          # compiled kernels, for dump-ir --stage kernels / inspection

    def compile_fused(self, op):
        from ..executor import _run_region
        from .runtime_cpu import compile_kernel
        try:
            kernel = lower_fused(op, name=f"fused_{next(_ids)}")
            ck = compile_kernel(kernel, math_mode=self.math_mode)
        except (Unlowerable, NotImplementedError) as e:
            log.info("fused region runs interpreted: %s", e)
            return _run_region(op)
        self.kernels.append(kernel)
        ins = [(np_dtype(p.dtype), p.shape) for p in kernel.inputs]
        outs = [(np_dtype(p.dtype), p.shape) for p in kernel.outputs]

        def run(*arrays):
            args = [np.ascontiguousarray(a, dtype=dt) for a, (dt, _) in zip(arrays, ins)]
            res = [np.empty(shape, dt) for dt, shape in outs]
            ck(*args, *res, check=False)
            return tuple(res)
        return run

    def compile_op(self, op):
        if op.name != "gradc.matmul":
            return None
        from .runtime_cpu import compile_kernel
        a, b = (tuple(v.type.shape) for v in op.operands)
        dt = op.operands[0].type.dtype
        if not dt.is_floating_point or 0 in a or 0 in b:
            return None
        kernel = build_matmul(f"matmul_{next(_ids)}", a, b, dt.ir_name)
        plan = compile_kernel(kernel)
        out_shape, npdt = kernel.outputs[0].shape, np_dtype(dt.ir_name)

        def run(x, y):
            out = np.empty(out_shape, npdt)
            plan(np.ascontiguousarray(x, dtype=npdt), np.ascontiguousarray(y, dtype=npdt), out, check=False)
            return out
        return run
