"""CUDA runtime for PTX kernels: PyCUDA imported lazily, one module per (kernel, compute capability).

``CudaRuntime().compile(kernel)`` emits PTX for the current device's ``sm_XY`` (``ptx.py``),
loads it with ``pycuda.driver.module_from_buffer`` (cached per PTX text) and returns a
``CudaKernel``; calling it with one array per parameter (NumPy arrays are copied in and
outputs copied back; ``pycuda.gpuarray.GPUArray``s are used in place) launches it with the
block/grid from ``GpuLaunch`` (grid-stride kernels get at most 32 blocks per SM).
Without PyCUDA or a GPU, ``CudaUnavailable`` says what is missing.
"""
from __future__ import annotations

import numpy as np

from . import ptx as _ptx
from .kernel_ir import Kernel, np_dtype


class CudaUnavailable(RuntimeError):
    """PyCUDA or a CUDA device is missing."""


def _driver():
    try:
        import pycuda.driver as drv
    except ImportError as e:
        raise CudaUnavailable("gradc's GPU runtime needs PyCUDA (pip install 'gradc[cuda]'); "
                              f"import failed: {e}. PTX can still be produced with gradc.codegen.ptx.emit_ptx") from None
    try:
        drv.init()
        if drv.Device.count() == 0:
            raise CudaUnavailable("PyCUDA is installed but no CUDA device was found")
    except CudaUnavailable:
        raise
    except Exception as e:
        raise CudaUnavailable(f"the CUDA driver could not be initialised: {e}") from None
    return drv


def available() -> bool:
    try:
        _driver()
        return True
    except CudaUnavailable:
        return False


class CudaKernel:
    def __init__(self, runtime, kernel: Kernel, pk: _ptx.PtxKernel, function):
        self.runtime, self.kernel, self.ptx, self.function = runtime, kernel, pk, function

    def __call__(self, *arrays):
        drv = self.runtime.drv
        if len(arrays) != len(self.kernel.params):
            raise TypeError(f"kernel '{self.kernel.name}' takes {len(self.kernel.params)} buffers, got {len(arrays)}")
        args, copies = [], []
        for p, a in zip(self.kernel.params, arrays):
            if isinstance(a, np.ndarray):
                if a.dtype != np_dtype(p.dtype) or a.size < p.numel:
                    raise TypeError(f"kernel '{self.kernel.name}': %{p.name} needs {p.numel} x {np_dtype(p.dtype)}")
                a = np.ascontiguousarray(a)
                buf = drv.mem_alloc(max(a.nbytes, 1))
                if p.role == "input":
                    drv.memcpy_htod(buf, a)
                args.append(buf)
                copies.append((p, a, buf))
            else:
                args.append(a.gpudata if hasattr(a, "gpudata") else a)
        launch = self.ptx.launch
        grid = launch.grid_for(self.runtime.sm_count)
        self.function(*args, block=launch.block, grid=grid)
        for p, a, buf in copies:
            if p.role == "output":
                drv.memcpy_dtoh(a, buf)
        return arrays


class CudaRuntime:
    """The current device's context, compute capability and loaded modules."""

    def __init__(self, device: int = 0):
        self.drv = _driver()
        import pycuda.autoinit  # noqa: F401  (creates a context on device 0)
        dev = self.drv.Device(device)
        major, minor = dev.compute_capability()
        self.sm = f"sm_{major}{minor}"
        self.sm_count = dev.get_attribute(self.drv.device_attribute.MULTIPROCESSOR_COUNT)
        self._modules: dict = {}

    def compile(self, kernel: Kernel) -> CudaKernel:
        pk = _ptx.compile_ptx(kernel, self.sm)
        mod = self._modules.get(pk.ptx)
        if mod is None:
            mod = self._modules[pk.ptx] = self.drv.module_from_buffer(pk.ptx.encode())
        return CudaKernel(self, kernel, pk, mod.get_function(pk.name))


_runtime = None


def runtime() -> CudaRuntime:
    global _runtime
    if _runtime is None:
        _runtime = CudaRuntime()
    return _runtime


def run_kernel(kernel: Kernel, *arrays):
    return runtime().compile(kernel)(*arrays)
