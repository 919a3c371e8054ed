"""CUDA drivers: device memory, copies and kernel launches behind one small interface.

``driver()`` returns the process's driver:

* ``PyCudaDriver``: an NVIDIA GPU through PyCUDA (``pip install 'gradc[cuda]'``). Kernels are
  emitted as PTX for the device's compute capability (``ptx.py``), loaded with
  ``module_from_buffer`` (cached per PTX text) and launched with the block/grid of their
  ``GpuLaunch``; buffers come from PyCUDA's ``DeviceMemoryPool``, which keeps freed blocks for
  reuse. This driver has not yet run on a GPU (none on the development machine).
* ``SimulatorDriver`` (``GRADC_CUDA_SIMULATOR=1``, like numba's CUDA simulator): device memory
  is host memory that only the driver touches, and a launch runs the kernel's NVPTX-lowered
  LLVM IR on CPU threads (``gpusim.py``): every GPU schedule, index computation and
  shared-memory reduction runs as on the device, only the NVPTX code generation itself is
  not exercised (``ptxas`` checks that in CI). Slow: for tests and small examples.

Without either, ``driver()`` raises ``CudaUnavailable`` saying what to install.

``DeviceArray`` is a contiguous device buffer with a shape and a NumPy dtype; ``reshape``
shares the buffer. Kernels take one DeviceArray per parameter, in ``kernel.params`` order.
"""
from __future__ import annotations

import math
import os
import threading

import numpy as np

from .kernel_ir import Kernel


class CudaUnavailable(RuntimeError):
    """PyCUDA or a CUDA device is missing."""


class _Flags:
    c_contiguous = True
    writeable = True
    f_contiguous = False


class DeviceArray:
    """A contiguous array in device memory (``buffer`` is the driver's allocation)."""
    __slots__ = ("shape", "dtype", "buffer", "driver", "offset")
    flags = _Flags()

    def __init__(self, driver, buffer, shape, dtype, offset=0):
        self.driver, self.buffer = driver, buffer
        self.shape, self.dtype, self.offset = tuple(int(s) for s in shape), np.dtype(dtype), offset

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def nbytes(self) -> int:
        return self.size * self.dtype.itemsize

    @property
    def itemsize(self) -> int:
        return self.dtype.itemsize

    @property
    def strides(self) -> tuple:
        st, acc = [], self.dtype.itemsize
        for s in reversed(self.shape):
            st.append(acc)
            acc *= max(s, 1)
        return tuple(reversed(st))

    def reshape(self, shape) -> "DeviceArray":
        shape = tuple(shape)
        if math.prod(shape) != self.size:
            raise ValueError(f"cannot reshape a device array of shape {list(self.shape)} to {list(shape)}")
        return DeviceArray(self.driver, self.buffer, shape, self.dtype, self.offset)

    def get(self) -> np.ndarray:
        """A host copy."""
        return self.driver.to_host(self)

    def __repr__(self) -> str:
        return f"DeviceArray(shape={list(self.shape)}, dtype={self.dtype}, driver={self.driver.name})"


class _LaunchCache:
    def __init__(self):
        self._compiled: dict = {}
        self._lock = threading.Lock()

    def get(self, kernel: Kernel, build):
        key = str(kernel)
        with self._lock:
            hit = self._compiled.get(key)
        if hit is None:
            hit = build(kernel)
            with self._lock:
                self._compiled[key] = hit
        return hit


class SimulatorDriver:
    """Device memory in host arrays only this driver touches; launches simulated on CPU threads."""
    name = "simulator"

    def __init__(self, sm: str = "sm_80"):
        self.sm = sm
        self.device_name = "gradc CUDA simulator (CPU threads)"
        self._kernels = _LaunchCache()

    def empty(self, shape, dtype) -> DeviceArray:
        dtype = np.dtype(dtype)
        nbytes = max(math.prod(shape) * dtype.itemsize, 1)
        return DeviceArray(self, np.empty(nbytes, np.uint8), shape, dtype)

    def to_device(self, a: np.ndarray) -> DeviceArray:
        a = _c_order(a)
        d = self.empty(a.shape, a.dtype)
        self._view(d)[...] = a
        return d

    def to_host(self, d: DeviceArray) -> np.ndarray:
        return self._view(d).copy()

    def copy(self, dst: DeviceArray, src: DeviceArray) -> None:
        self._view(dst)[...] = self._view(src).reshape(dst.shape)

    def _view(self, d: DeviceArray) -> np.ndarray:
        raw = d.buffer[d.offset:d.offset + d.nbytes]
        return raw.view(d.dtype).reshape(d.shape)

    def compile(self, kernel: Kernel):
        from .gpusim import SimKernel
        sk = self._kernels.get(kernel, SimKernel)
        zero = _accumulated_slots(kernel)

        def launch(*arrays: DeviceArray):
            _check_args(kernel, arrays)
            for k in zero:
                self._view(arrays[k])[...] = 0
            sk.launch([a.buffer.ctypes.data + a.offset for a in arrays], block=_sim_block(sk))
        return launch

    def synchronize(self) -> None:
        pass


def _sim_block(sk):
    """Smaller blocks than the GPU's (one OS thread per simulated thread); matmul keeps its tile."""
    return None if sk.launch_desc.mode == "matmul" else (min(sk.launch_desc.block[0], 64), 1, 1)


class PyCudaDriver:
    """An NVIDIA GPU through PyCUDA; PTX per compute capability, modules cached per PTX text."""
    name = "pycuda"

    def __init__(self, device: int = 0):
        try:
            import pycuda.driver as drv
        except ImportError as e:
            raise CudaUnavailable(f"PyCUDA is not installed (pip install 'gradc[cuda]'): {e}") from None
        try:
            drv.init()
            if drv.Device.count() == 0:
                raise CudaUnavailable("PyCUDA is installed but no CUDA device was found")
            dev = drv.Device(device)
            self.context = dev.retain_primary_context()
            self.context.push()
            import atexit
            atexit.register(self._close)
        except CudaUnavailable:
            raise
        except Exception as e:
            raise CudaUnavailable(f"the CUDA driver could not be initialised: {e}") from None
        self.drv = drv
        major, minor = dev.compute_capability()
        self.sm = f"sm_{major}{minor}"
        self.device_name = dev.name()
        self.sm_count = dev.get_attribute(drv.device_attribute.MULTIPROCESSOR_COUNT)
        self._modules: dict = {}
        self._kernels = _LaunchCache()
        from pycuda.tools import DeviceMemoryPool
        self._pool = DeviceMemoryPool()   # freed buffers are kept for reuse: no cudaMalloc per launch

    def _close(self):
        try:
            self._pool.stop_holding()
            self.context.pop()
        except Exception:   # the driver may already be shutting down
            pass

    def empty(self, shape, dtype) -> DeviceArray:
        dtype = np.dtype(dtype)
        nbytes = max(math.prod(shape) * dtype.itemsize, 1)
        return DeviceArray(self, self._pool.allocate(nbytes), shape, dtype)

    def _ptr(self, d: DeviceArray) -> int:
        return int(d.buffer) + d.offset

    def to_device(self, a: np.ndarray) -> DeviceArray:
        a = _c_order(a)
        d = self.empty(a.shape, a.dtype)
        if a.nbytes:
            self.drv.memcpy_htod(self._ptr(d), a)
        return d

    def to_host(self, d: DeviceArray) -> np.ndarray:
        out = np.empty(d.shape, d.dtype)
        if out.nbytes:
            self.drv.memcpy_dtoh(out, self._ptr(d))
        return out

    def copy(self, dst: DeviceArray, src: DeviceArray) -> None:
        if dst.nbytes:
            self.drv.memcpy_dtod(self._ptr(dst), self._ptr(src), dst.nbytes)

    def compile(self, kernel: Kernel):
        from . import ptx
        pk = self._kernels.get(kernel, lambda k: ptx.compile_ptx(k, self.sm))
        mod = self._modules.get(pk.ptx)
        if mod is None:
            mod = self._modules[pk.ptx] = self.drv.module_from_buffer(pk.ptx.encode())
        fn = mod.get_function(pk.name)
        block, grid = pk.launch.block, pk.launch.grid_for(self.sm_count)
        zero = _accumulated_slots(kernel)
        import numpy as _np

        def launch(*arrays: DeviceArray):
            _check_args(kernel, arrays)
            for k in zero:
                if arrays[k].nbytes:
                    self.drv.memset_d8(self._ptr(arrays[k]), 0, arrays[k].nbytes)
            fn(*[_np.uintp(self._ptr(a)) for a in arrays], block=block, grid=grid)
        return launch

    def synchronize(self) -> None:
        self.drv.Context.synchronize()


def _c_order(a) -> np.ndarray:
    a = np.asarray(a)
    return a if a.flags.c_contiguous else a.copy(order="C")    # (ascontiguousarray makes 0-d 1-d)


def _accumulated_slots(kernel: Kernel) -> list:
    """Argument positions of the outputs the kernel's threads add into atomically (sums over
    outer axes): the launch sets them to 0 first (all-zero bytes are 0.0 and 0)."""
    acc = kernel.accumulated_outputs()
    return [k for k, p in enumerate(kernel.params) if p.name in acc]


def _check_args(kernel: Kernel, arrays) -> None:
    if len(arrays) != len(kernel.params):
        raise TypeError(f"kernel '{kernel.name}' takes {len(kernel.params)} buffers, got {len(arrays)}")
    for p, a in zip(kernel.params, arrays):
        if not isinstance(a, DeviceArray) or a.size < p.numel:
            raise TypeError(f"kernel '{kernel.name}': %{p.name} needs a device array of {p.numel} elements, "
                            f"got {a!r}")


_driver = None
_reason = None
_lock = threading.Lock()


def simulator_requested() -> bool:
    return os.environ.get("GRADC_CUDA_SIMULATOR", "") not in ("", "0")


def driver():
    """The process's CUDA driver (created on first use), or ``CudaUnavailable``."""
    global _driver, _reason
    with _lock:
        if _driver is None:
            try:
                _driver = SimulatorDriver() if simulator_requested() else PyCudaDriver()
            except CudaUnavailable as e:
                _reason = str(e)
                raise
        return _driver


def unavailable_reason() -> str | None:
    try:
        driver()
        return None
    except CudaUnavailable as e:
        return str(e)
