"""CUDA backend for the executor, and eager ops on CUDA tensors.

``CudaBackend`` gives the executor a callable per step that takes and returns
``DeviceArray``s (``cuda_driver.py``):

* ``gradc.fused`` regions lower to kernel IR (``lower_fused``, as on the CPU) and run as
  one GPU kernel each, outputs allocated on the device;
* matmuls run the tiled shared-memory matmul kernel (``build_matmul``);
* reshapes, ``detach`` and ``clone`` of contiguous device arrays share or copy the buffer;
* every other op (indexing, gathers, concatenation, ...) runs its op-table NumPy reference
  on a host copy and copies the result back. This is correct but slow; it is logged once
  per op name (``gradc.cuda`` logger) so the round trips are visible.

``run_op`` executes one table op eagerly on device arrays: a one-op function, fused and
cached per (op, attrs, input types), is run by an executor with this backend, so eager
CUDA ops are compiled single-op kernels.
"""
from __future__ import annotations

import hashlib
import logging
import threading

import numpy as np

from ..ir.attrs import format_attr_dict
from ..ir.core import FUSED, Builder, Function
from ..ir.types import TensorType
from .cuda_driver import DeviceArray
from .kernel_ir import build_matmul, np_dtype
from .lower_fused import Unlowerable, lower_fused

log = logging.getLogger("gradc.cuda")
_warned: set = set()


def _note_host_fallback(name: str, why: str) -> None:
    if name not in _warned:
        _warned.add(name)
        log.info("%s runs on the host (copies to and from the device): %s", name, why)


class CudaBackend:
    name = "cuda"

    def __init__(self, drv):
        self.drv = drv
        self.kernels = []

    # ---- host round trip -----------------------------------------------------------------
    def _host(self, fn, name, why):
        drv = self.drv
        _note_host_fallback(name, why)

        def run(*arrays):
            host = [a.get() if isinstance(a, DeviceArray) else a for a in arrays]
            res = fn(*host)
            res = res if isinstance(res, tuple) else (res,)
            return tuple(drv.to_device(np.asarray(r)) for r in res)
        return run

    # ---- executor hooks ------------------------------------------------------------------
    def compile_fused(self, op):
        from ..executor import _run_region
        try:
            kernel = lower_fused(op, name="fused")
        except (Unlowerable, NotImplementedError) as e:
            return self._host(_run_region(op), "gradc.fused", str(e))
        kernel.name = "fused_" + hashlib.sha1(str(kernel).encode()).hexdigest()[:16]
        return self._kernel_runner(kernel)

    def _kernel_runner(self, kernel):
        drv = self.drv
        launch = drv.compile(kernel)
        self.kernels.append(kernel)
        in_dtypes = [np_dtype(p.dtype) for p in kernel.inputs]
        outs = [(p.shape, np_dtype(p.dtype)) for p in kernel.outputs]

        def run(*arrays):
            args = []
            for a, dt in zip(arrays, in_dtypes):
                if not isinstance(a, DeviceArray):
                    a = drv.to_device(np.asarray(a, dtype=dt))
                elif a.dtype != dt:
                    raise TypeError(f"kernel '{kernel.name}': a {a.dtype} device array where {dt} was expected")
                args.append(a)
            res = [drv.empty(shape, dt) for shape, dt in outs]
            launch(*args, *res)
            return tuple(res)
        return run

    def compile_op(self, op):
        """A device callable for a non-fused op (the executor wraps single results)."""
        name = op.name
        if name == "gradc.matmul":
            a, b = (tuple(v.type.shape) for v in op.operands)
            dt = op.operands[0].type.dtype
            if dt.is_floating_point and 0 not in a and 0 not in b:
                kernel = build_matmul("matmul", a, b, dt.ir_name)
                kernel.name = "matmul_" + hashlib.sha1(str(kernel).encode()).hexdigest()[:16]
                run = self._kernel_runner(kernel)
                shape = tuple(op.results[0].type.shape)
                return lambda x, y: run(x, y)[0].reshape(shape)
        if name in ("gradc.reshape", "gradc.detach", "gradc.alias"):
            shape = tuple(op.results[0].type.shape)
            return lambda x: x.reshape(shape)
        if name == "gradc.clone":
            drv = self.drv

            def clone(x):
                out = drv.empty(x.shape, x.dtype)
                drv.copy(out, x)
                return out
            return clone
        d = op.opdef
        if d is None:
            raise NotImplementedError(f"cuda backend: no implementation for '{name}'")
        fn = (lambda *xs: d.forward(*xs, **op.attrs)) if op.attrs else d.forward
        run = self._host(fn, name, "no GPU lowering for this op")
        return run if len(op.results) > 1 else (lambda *xs: run(*xs)[0])


# ---- eager ops ---------------------------------------------------------------------------
_executors: dict = {}
_exec_lock = threading.Lock()


def _executor(drv, opdef, attrs, types):
    from ..executor import Executor
    from ..passes.fuse import fuse
    key = (opdef.name, format_attr_dict(attrs), tuple((tuple(t.shape), t.dtype.name) for t in types))
    with _exec_lock:
        ex = _executors.get(key)
    if ex is None:
        func = Function(f"eager_{opdef.name}", [TensorType.of(t) for t in types])
        b = Builder.at_end(func.body)
        op = b.create(opdef.name, list(func.args), attrs)
        func.set_outputs(op.results)
        fuse(func)
        if not any(o.name == FUSED for o in func.body.ops) and opdef.name not in ("matmul",):
            log.debug("eager %s on cuda is not a fusible kernel", opdef.name)
        ex = Executor(func, CudaBackend(drv))
        with _exec_lock:
            _executors[key] = ex
    return ex


def run_op(drv, opdef, arrays, attrs, types):
    """Outputs (device arrays) of table op ``opdef`` on device ``arrays`` of ``types``."""
    ex = _executor(drv, opdef, attrs, types)
    return tuple(ex.run(list(arrays)))
