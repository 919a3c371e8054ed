"""Eager CPU ops on large tensors as compiled single-op kernels, on all cores.

An eager op runs its op-table NumPy reference: one op at a time, on one core, with a
temporary per intermediate of a composite (a logsumexp makes four). For an op whose
operands hold at least ``MIN_ELEMENTS`` elements, the op is instead compiled as a one-op
function through the compiler's own path (``decompose,canonicalize,cse,dce``, ``fuse``,
the CPU backend), cached per (op, attrs, operand types) and run by an ``Executor``; eager
CUDA ops take the same path (``backend_cuda.run_op``).

Results come from buffers shared by every eager kernel result of one shape and dtype, reused
once nothing references them (``Recycler``), up to ``POOL_BYTES`` in all: a fresh 16 MiB
array costs some 9 ms of page faults here, more than the kernel that fills it, and W4's eager
step makes twelve. Pools per kernel, as ``@gradc.compile`` keeps, held twice NumPy's memory
between W4's steps; ``clear()`` gives the buffers back.

Measured (in-process A/B, this 2-core machine, forward+backward per step with the path on and
off): W1 0.26-0.31x, W3 0.17-0.28x, W4 0.35-0.37x the NumPy references' time; a logsumexp
over 4096x1024 is 20x faster (one fused kernel instead of four NumPy passes and temporaries).
A broadcast view (an ``expand``) goes in as the memory it repeats; other strided operands stay
on NumPy, which reads them in place. ``empty`` and ``zeros`` give NumPy references' large
results (matmul's, the scatters of gather's and indexing's backward) pooled buffers too.

An op is compiled on its ``WARMUP``-th call with one key, so a one-off op on a big array
does not pay a compile (10-40 ms; the disk cache makes later processes cheap). An op whose
one-op function does not become a native kernel that writes every result (no lowering, or
canonicalize folded it into a view of an operand) is remembered and left to NumPy.
``GRADC_EAGER_KERNELS=0`` turns the path off.
"""
from __future__ import annotations

import logging
import math
import os
import threading

import numpy as np

from .. import dtypes
from .host_buffers import Recycler

_COMPILED_NAMES = frozenset(d.name for d in dtypes.COMPILED)

log = logging.getLogger("gradc.codegen")

MIN_ELEMENTS = 1 << 19        # 2 MiB of f32: below it a kernel call (about 20 us of overhead) wins little or
                              # loses (W2's 256x1024 elementwise ops ran 0.2-0.5 ms slower per step as kernels)
POOL_MIN_ELEMENTS = 1 << 16   # ``empty``/``zeros`` pool results from 256 KiB of f32 (past malloc's mmap threshold)
WARMUP = 2                    # compile on the second call with one key
POOL_BYTES = 256 << 20        # most bytes of result buffers kept for reuse, over all shapes
ENABLED = os.environ.get("GRADC_EAGER_KERNELS", "1") != "0"

_NUMPY = "numpy"              # an entry's marker: this key runs the NumPy reference
_entries: dict = {}           # key -> calls seen (int), _NUMPY, or an Executor
MAX_ENTRIES = 1024            # more keys than this (many shapes): start over
_lock = threading.Lock()       # compiles
_run_lock = threading.Lock()   # kernel runs


def run(op, arrays, attrs, types):
    """The results (a tuple of arrays) of table op ``op`` on NumPy ``arrays`` of ``types``
    from a compiled kernel, or None when the NumPy reference should run instead (also for a
    non-contiguous operand)."""
    if not ENABLED or (op.name == "cast" and attrs.get("dtype") == "int64" and types[0].dtype.is_floating_point):
        return None       # out-of-range floats: NumPy's int64 cast and the kernel's (saturating) differ
    if any([t.dtype not in dtypes.COMPILED for t in types]) or attrs.get("dtype", "int64") not in _COMPILED_NAMES:
        return None       # int32, float16, ...: eager only (NumPy)
    compact = None
    for k, a in enumerate(arrays):
        if not a.flags.c_contiguous:      # a broadcast view goes in as the memory it repeats; NumPy
            c = _compact(a)               # reads any other strided view in place, where the
            if c is None:                 # kernel would first copy it to contiguous memory
                return None
            compact = compact or list(arrays)
            compact[k] = c
    if compact is not None:
        arrays = compact
    from ..ir.attrs import format_attr_dict     # (gradc.ir imports gradc.tensor, which imports this)
    baked = _baked_operand(op, types)
    try:
        key = (op.name, format_attr_dict(attrs), tuple(types),
               None if baked is None else arrays[baked].item(),
               None if compact is None else tuple(a.shape for a in compact))
    except TypeError:         # an attr the IR cannot hold
        return None
    entry = _entries.get(key, 0)
    if entry is _NUMPY:
        return None
    if type(entry) is int:
        if entry + 1 < WARMUP:
            if len(_entries) >= MAX_ENTRIES:
                _entries.clear()
            _entries[key] = entry + 1
            return None
        with _lock:
            entry = _entries.get(key, 0)
            if type(entry) is int:
                entry = _entries[key] = _build(op, attrs, types, baked, key[3], key[4]) or _NUMPY
        if entry is _NUMPY:
            return None
    if baked is not None:
        arrays = arrays[:baked] + arrays[baked + 1:]
    with _run_lock:         # the shared pools hand out a buffer only once the last result took it
        return tuple(entry.run(list(arrays)))


# Operands whose value, when 0-d, shapes the kernel: PyTorch's pow(Tensor, Scalar) has the
# exponent as an attribute, and canonicalize turns x ** 2 into x * x; as a kernel operand it
# would be a libm pow per element (4x NumPy's square). Such a value is part of the cache key.
_BAKED_OPERANDS = {"pow": 1}


def _baked_operand(op, types):
    k = _BAKED_OPERANDS.get(op.name)
    return k if k is not None and len(types) > k and not types[k].shape else None


def _compact(a):
    """The contiguous memory that broadcast view ``a`` repeats (its stride-0 dims cut to size 1),
    or None for another layout."""
    strides = a.strides
    if 0 not in strides:
        return None
    c = a[tuple(slice(0, 1) if st == 0 else slice(None) for st in strides)]
    return c if c.flags.c_contiguous else None


def _build(op, attrs, types, baked=None, value=None, shapes=None):
    """An Executor running the one-op function natively, or None. Operand ``baked`` (if not
    None) is the constant ``value`` instead of an argument; ``shapes`` (if not None) are the
    arguments' shapes, each broadcast to its operand type's shape by an ``expand``."""
    from ..compile import optimize
    from ..executor import Executor
    from ..ir.core import FUSED, Builder, Function
    from ..ir.types import TensorType
    from ..passes.fuse import fuse
    from .backend_cpu import CPUBackend
    try:
        arg_shapes = shapes or [t.shape for t in types]
        args = [TensorType(arg_shapes[k], t.dtype) for k, t in enumerate(types) if k != baked]
        func = Function(f"eager_{op.name}", args)
        b = Builder.at_end(func.body)
        operands = list(func.args)
        for k, t in enumerate(types):
            if k != baked and tuple(arg_shapes[k]) != tuple(t.shape):
                i = k - (baked is not None and baked < k)
                operands[i] = b.create("expand", [operands[i]], {"shape": list(t.shape)}).results[0]
        if baked is not None:
            operands.insert(baked, b.constant(value, (), types[baked].dtype))
        func.set_outputs(b.create(op.name, operands, dict(attrs)).results)
        optimize(func)
        fuse(func)
        if not all(getattr(v.owner, "name", None) == FUSED for v in func.outputs):   # (an argument's owner is a Block)
            return None       # a result is an operand, a view or a NumPy step: nothing to gain
        backend = CPUBackend(pool_for=_shared_pool)
        executor = Executor(func, backend)
    except Exception as e:  # noqa: BLE001 - the NumPy reference is always a correct answer
        log.info("eager %s stays on NumPy: %s", op.name, e)
        return None
    if len(backend.kernels) == 0:
        return None
    return executor


class _SharedRecycler(Recycler):
    """The pool of every eager kernel result of one shape and dtype; a new buffer is kept for
    reuse while all these pools together hold at most ``POOL_BYTES``."""
    __slots__ = ()
    held = 0                  # bytes kept by all of them

    def _keep(self, array) -> bool:
        if _SharedRecycler.held + array.nbytes > POOL_BYTES:
            return False
        _SharedRecycler.held += array.nbytes
        return True


_pools: dict = {}


def _shared_pool(shape, dtype) -> _SharedRecycler:
    key = (tuple(shape), dtype)
    pool = _pools.get(key)
    if pool is None:
        pool = _pools[key] = _SharedRecycler(shape, dtype)
    return pool


def empty(shape, dtype):
    """``np.empty(shape, dtype)`` for a NumPy reference's large result (a matmul's, a scatter's):
    a pooled buffer when the path is on and the result large, so that repeated steps reuse
    memory instead of faulting in fresh pages (a fresh 16 MiB is 4096 page faults, about 9 ms)."""
    shape = tuple(shape)
    dtype = np.dtype(dtype)
    if not ENABLED or math.prod(shape) < POOL_MIN_ELEMENTS:
        return np.empty(shape, dtype)
    with _run_lock:                       # (a shared buffer is handed out once referenced)
        out = _shared_pool(shape, dtype).get()[0]
    return out


def zeros(shape, dtype):
    """``np.zeros(shape, dtype)`` as ``empty`` gives it (a fill of a reused buffer costs a copy's
    time; fresh zeros cost a page fault per 4 KiB written)."""
    out = empty(shape, dtype)
    out.fill(0)
    return out


def clear() -> None:
    """Forget every compiled eager kernel and call count, and give back the pooled buffers."""
    with _lock, _run_lock:
        _entries.clear()
        _pools.clear()
        _SharedRecycler.held = 0
