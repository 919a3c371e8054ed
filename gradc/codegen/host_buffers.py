"""Host buffers on cache-line boundaries, for kernel outputs, pools and the executor's arena;
``Recycler``, the pool of one kernel result's output buffers.

NumPy aligns large arrays to 16 bytes only, so where a buffer starts within its 64-byte line
depends on the allocator's history; a 64-byte vector store to a buffer off the line
boundary touches two lines.  Measured here (``bench/bench_floor.py``'s kernels, outputs
16 bytes off the line against on it): W4's row kernel 2.6-2.7 ms against 2.1-2.2 ms.
"""
from __future__ import annotations

import sys

import numpy as np

ALIGN = 64      # bytes: one cache line, one AVX-512 vector


def empty_aligned(shape, dtype) -> np.ndarray:
    """``np.empty(shape, dtype)`` whose data starts on an ``ALIGN``-byte boundary: a view whose
    ``base`` is the allocation (views of it share that base, not the view)."""
    dtype = np.dtype(dtype)
    nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    raw = np.empty(nbytes + ALIGN, np.uint8)
    start = -raw.ctypes.data % ALIGN
    return raw[start:start + nbytes].view(dtype).reshape(shape)


class Recycler:
    """Output buffers for one kernel result, reused once nobody else references them.

    Touching fresh memory costs about 2.2 us per 4 KiB page here (9 ms for 16 MiB), so
    results come from arrays this recycler handed out before whose only remaining
    reference is the recycler's own (a Tensor, a view or a saved residual holding one
    keeps it out of reuse). Each entry keeps its data pointer, so no lookup per call.
    """
    __slots__ = ("shape", "dtype", "entries", "limit")

    def __init__(self, shape, dtype, limit=4):
        self.shape, self.dtype, self.entries, self.limit = tuple(shape), dtype, [], limit

    def get(self):
        for e in self.entries:
            # free: only the entry list (and getrefcount's argument) holds the array, and
            # only the array holds the memory it views (``empty_aligned``: a view of it made
            # by the user, e.g. a reshape, references that memory and not the array)
            if sys.getrefcount(e[0]) == 2 and sys.getrefcount(e[0].base) == 2:
                return e
        a = empty_aligned(self.shape, self.dtype)
        e = [a, a.ctypes.data]
        if self._keep(a):
            self.entries.append(e)
        return e

    def _keep(self, array) -> bool:
        """Whether a newly allocated buffer joins the entries for reuse."""
        return len(self.entries) < self.limit
