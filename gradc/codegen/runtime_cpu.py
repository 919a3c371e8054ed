"""CPU runtime: JIT-compile kernels with MCJIT, call them through ctypes on NumPy buffers.

``compile_kernel(kernel)`` returns a ``CompiledKernel``; calling it with one contiguous
NumPy array per parameter (``kernel.params`` order, outputs included) runs the kernel.
Shapes are baked into the code, so a new shape is a new compilation; compiled objects
are cached on disk (``cache.py``, key: LLVM IR + triple + CPU + features), so a second
process loads the object file into a fresh engine without optimizing or code-generating.

Threads: the kernel function takes a ``[start, end)`` range of its outermost outer loop;
kernels estimated at ``PARALLEL_MIN_NS`` or more (``estimate_ns``) are split over ``num_threads()``
threads (ctypes releases the GIL during the call), smaller ones run on the caller's.
Matmul-shaped kernels (``kernel_ir.match_contraction``) go to ``matmul_cpu``.
"""
from __future__ import annotations

import ctypes
import functools
import os
import queue
import threading

import llvmlite.binding as llvm
import numpy as np

from . import cache, llvm_cpu, native_pool
from .host_buffers import empty_aligned
from .kernel_ir import Kernel, np_dtype
from .native_pool import NativePool

PARALLEL_MIN_NS = float(os.environ.get("GRADC_PARALLEL_MIN_NS", 80_000))
# Parts of a parallel call per thread on the native pool, claimed one at a time: a thread that
# starts late (or not at all) leaves its share to the others.
CHUNKS_PER_THREAD = 4
_KFN = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64)
# The same entry point without argument types, called with ctypes objects made once (the argument
# vector and two c_int64 bounds): ctypes converts nothing per call (measured here: 200 ns a call
# against 410 ns with argtypes). Only for serial calls, whose bounds never change.
_KFN_UNTYPED = ctypes.CFUNCTYPE(None)
_memo: dict = {}
_lock = threading.Lock()
_pool = None
_pool_lock = threading.Lock()
_compile_lock = threading.RLock()
stats = {"compiled": 0, "loaded": 0}


# The CPUs this process may run on, counted once: ``os.cpu_count()`` reads sysfs, about 5 us a
# call here, and every parallel kernel call asks.
_CPUS = max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1)


def num_threads() -> int:
    n = os.environ.get("GRADC_NUM_THREADS")
    return max(1, int(n)) if n else _CPUS


class _Workers:
    """Persistent worker threads fed through SimpleQueues (about 20 us per parallel call here,
    against 50 us for a ThreadPoolExecutor)."""

    def __init__(self, n):
        self.inqs = [queue.SimpleQueue() for _ in range(n)]
        self.done = queue.SimpleQueue()
        self.lock = threading.Lock()
        for q in self.inqs:
            threading.Thread(target=self._loop, args=(q,), daemon=True, name="gradc-worker").start()

    def _loop(self, q):
        while True:
            fn, args = q.get()
            try:
                fn(*args)
                self.done.put(None)
            except BaseException as e:   # pragma: no cover - kernels do not raise
                self.done.put(e)

    def run(self, fn, jobs):
        """Run jobs[1:] on workers and jobs[0] here; wait for all (one parallel call at a time:
        the workers and the completion queue are shared)."""
        with self.lock:
            for q, args in zip(self.inqs, jobs[1:]):
                q.put((fn, args))
            fn(*jobs[0])
            errs = [self.done.get() for _ in jobs[1:]]
        for e in errs:
            if e is not None:
                raise e


def _get_pool():
    """The process's worker pool: native workers (``native_pool``) where supported, else
    Python threads (``_Workers``)."""
    global _pool
    pool = _pool
    if pool is not None:
        return pool
    with _pool_lock:
        if _pool is None:
            workers = max(1, num_threads() - 1)
            _pool = NativePool(workers) if native_pool.supported() else _Workers(workers)
    return _pool


def _forget_pool_in_child():
    """A forked child has none of its parent's worker threads: it makes its own pool."""
    global _pool, _pool_lock
    _pool, _pool_lock = None, threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool_in_child)


def estimate_ns(kernel: Kernel) -> float:
    """Rough single-thread time: memory accesses and transcendental ops per point, per phase."""
    from .kernel_ir import Compute, Load, Store
    from .llvm_common import EXPENSIVE_OPS, reduction_phases
    acc = sum(isinstance(s, (Load, Store)) for s in kernel.body)
    heavy = sum(isinstance(s, Compute) and s.op in EXPENSIVE_OPS for s in kernel.body)
    phases = len(reduction_phases(kernel)[0]) + 1
    return max(kernel.numel, 1) * (0.15 * acc + 0.6 * heavy + 0.05) * (1 + 0.5 * (phases - 1))


def _engine_from_object(obj: bytes):
    tm = llvm_cpu.new_target_machine()     # the engine owns (and frees) its target machine
    empty = llvm.parse_assembly("")
    empty.triple = tm.triple
    ee = llvm.create_mcjit_compiler(empty, tm)
    ee.add_object_file(llvm.ObjectFileRef.from_data(obj))
    ee.finalize_object()
    return ee


def _object_key(llvm_ir: str, speed_level: int) -> str:
    return cache.key(llvm_ir, llvm_cpu.target_signature(), f"O{speed_level}", llvm_cpu.pipeline_signature())


def _compile_object(llvm_ir: str, speed_level: int) -> bytes:
    tm = llvm_cpu.host_target_machine()
    return tm.emit_object(llvm_cpu.compile_ir(llvm_ir, tm, speed_level))


def jit_llvm_ir(llvm_ir: str, symbols, speed_level: int = 3):
    """Compile (or load from the disk cache) LLVM IR; returns (engine, {symbol: address})."""
    with _compile_lock:      # LLVM's global state: one compilation at a time
        key = _object_key(llvm_ir, speed_level)
        obj = cache.load(key)
        if obj is None:
            obj = _compile_object(llvm_ir, speed_level)
            cache.store(key, obj)
            stats["compiled"] += 1
        else:
            stats["loaded"] += 1
        ee = _engine_from_object(obj)
    addrs = {s: ee.get_function_address(s) for s in symbols}
    missing = [s for s, a in addrs.items() if not a]
    if missing:
        raise RuntimeError(f"JIT: symbols {missing} not found in the compiled object")
    return ee, addrs


def check_buffers(kernel: Kernel, arrays):
    """Raise a clear error unless ``arrays`` fit ``kernel.params`` (count, dtype, size, layout)."""
    if len(arrays) != len(kernel.params):
        raise TypeError(f"kernel '{kernel.name}' takes {len(kernel.params)} buffers, got {len(arrays)}")
    for p, a in zip(kernel.params, arrays):
        dt = np_dtype(p.dtype)
        if not isinstance(a, np.ndarray) or a.dtype != dt or a.size < p.numel or not a.flags.c_contiguous:
            raise TypeError(f"kernel '{kernel.name}': buffer %{p.name} needs a C-contiguous {dt} "
                            f"array of at least {p.numel} elements, got "
                            f"{type(a).__name__} {getattr(a, 'dtype', '')} {getattr(a, 'shape', '')}")
        if p.role == "output" and not a.flags.writeable:
            raise ValueError(f"kernel '{kernel.name}': output %{p.name} is read-only")


class CompiledKernel:
    """A compiled kernel; ``ck(*arrays)`` runs it on one array per parameter."""

    def __init__(self, kernel: Kernel, info, engine, address):
        self.kernel = kernel
        self.info = info
        self._engine = engine            # keeps the machine code alive
        self.address = address
        self._fn = _KFN(address)
        self.parallel = (info.parallel_ok and estimate_ns(kernel) >= PARALLEL_MIN_NS
                         and info.parallel_extent >= 2 and num_threads() > 1)

    def check(self, arrays):
        check_buffers(self.kernel, arrays)

    def args(self, arrays):
        return (ctypes.c_void_p * len(arrays))(*[a.ctypes.data for a in arrays])

    def __call__(self, *arrays, check: bool = True):
        if check:
            self.check(arrays)
        argv = self.args(arrays)
        self.run_args(argv)
        return arrays

    def serial_call(self, argv):
        """A callable that runs the whole index space on this thread for the argument vector
        ``argv`` (a ctypes array the caller fills and keeps): no conversion per call."""
        fn = _KFN_UNTYPED(self.address)
        first, end = ctypes.c_int64(0), ctypes.c_int64(self.info.parallel_extent)
        return functools.partial(fn, argv, first, end)

    def run_args(self, argv):
        ext = self.info.parallel_extent
        if not self.parallel:
            self._fn(argv, 0, ext)
            return
        n = min(num_threads(), ext)
        pool = _get_pool()
        if isinstance(pool, NativePool):
            pool.run(self.address, argv, ext, n * CHUNKS_PER_THREAD)
            return
        bounds = [ext * i // n for i in range(n + 1)]
        pool.run(self._fn, [(argv, bounds[i], bounds[i + 1]) for i in range(n)])


_lowered: dict = {}


class _no_lock:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def _lower(kernel: Kernel, math_mode: str):
    """(LLVM IR text, CpuKernelInfo) of a kernel, memoized by the kernel's text."""
    key = (str(kernel), kernel.name, math_mode)
    hit = _lowered.get(key)
    if hit is None:
        module, info = llvm_cpu.lower_kernel(kernel, math_mode=math_mode)
        hit = _lowered[key] = (str(module), info)
        if len(_lowered) > 512:
            _lowered.pop(next(iter(_lowered)))
    return hit


def compile_cost(text: str, info) -> float:
    """A guess at LLVM's time for a kernel, for balancing work between processes: IR length,
    doubled for lane-loop kernels (W2's column sum: 4.9 KB of IR, 72 ms; a row kernel of the
    same size, 32 ms)."""
    return len(text) * (2.0 if info.lane_loops else 1.0)


def _balance(todo):
    """Split kernels (cost last in each tuple) between this process and a child: longest
    first, each to the side with less work so far; this process takes the first."""
    sides = ([], [])
    load = [0.0, 0.0]
    for item in sorted(todo, key=lambda t: -t[-1]):
        k = 0 if load[0] <= load[1] else 1
        sides[k].append(item)
        load[k] += item[-1]
    return sides


def compile_into_cache(kernels, math_mode: str = "ir") -> int:
    """Compile the kernels that the disk cache lacks on all cores, into the cache; returns how
    many were compiled.  llvmlite serialises every call into LLVM behind one lock, so threads
    cannot compile at once: a forked child compiles half of them while this process compiles
    the other half (the child only writes cache files and leaves with ``os._exit``).  Without
    a cache directory, fork, or a second core, nothing happens here and ``compile_kernel``
    compiles them one by one."""
    if cache.cache_dir() is None or not hasattr(os, "fork") or num_threads() < 2:
        return 0
    from .kernel_ir import match_contraction
    todo = []
    for kernel in kernels:
        if match_contraction(kernel) is not None:      # matmuls go to BLAS
            continue
        text, info = _lower(kernel, math_mode)
        key = _object_key(text, info.speed_level)
        if (text, info.name) not in _memo and cache.load(key) is None:
            todo.append((text, info.speed_level, key, compile_cost(text, info)))
    if len(todo) < 2:
        return 0
    mine, theirs = _balance(todo)
    # Fork holding llvmlite's own lock too: no other thread is inside LLVM at that moment, so
    # the child cannot inherit a lock that nobody will release.
    from llvmlite.binding import ffi
    llvm_lock = getattr(ffi.lib, "_lock", None)
    with _compile_lock, (llvm_lock if llvm_lock is not None else _no_lock()):
        pid = os.fork()
        if pid == 0:            # child: compile, write the cache files, leave without cleanup
            code = 0
            try:
                for text, level, key, _ in theirs:
                    cache.store(key, _compile_object(text, level))
            except BaseException:
                code = 1
            os._exit(code)
        try:
            for text, level, key, _ in mine:
                cache.store(key, _compile_object(text, level))
        finally:
            os.waitpid(pid, 0)
    stats["compiled"] += len(todo)
    return len(todo)


def compile_kernel(kernel: Kernel, math_mode: str = "ir"):
    """Compile a kernel for the host (memoized in-process by its LLVM IR)."""
    from . import matmul_cpu
    special = matmul_cpu.compile_contraction(kernel)
    if special is not None:
        return special
    text, info = _lower(kernel, math_mode)
    memo_key = (text, info.name)
    with _lock:
        hit = _memo.get(memo_key)
    if hit is not None:
        return CompiledKernel(kernel, info, hit[0], hit[1])
    ee, addrs = jit_llvm_ir(text, [info.name], info.speed_level)
    with _lock:
        _memo[memo_key] = (ee, addrs[info.name])
    return CompiledKernel(kernel, info, ee, addrs[info.name])


def run_kernel(kernel: Kernel, *arrays):
    """Compile (cached) and run; returns the arrays."""
    return compile_kernel(kernel)(*arrays)


def empty_buffers(kernel: Kernel, inputs: dict | None = None):
    """Arrays for every parameter: given inputs (by name) and fresh outputs."""
    out = []
    for p in kernel.params:
        if inputs is not None and p.name in inputs:
            out.append(np.ascontiguousarray(inputs[p.name], dtype=np_dtype(p.dtype)))
        else:
            out.append(empty_aligned(p.shape, np_dtype(p.dtype)))
    return out
