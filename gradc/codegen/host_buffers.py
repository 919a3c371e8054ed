"""Host buffers on cache-line boundaries, for kernel outputs, pools and the executor's arena.

NumPy aligns large arrays to 16 bytes only, so where a buffer starts within its 64-byte line
depends on the allocator's history; a 64-byte vector store to a buffer off the line
boundary touches two lines.  Measured here (``bench/bench_floor.py``'s kernels, outputs
16 bytes off the line against on it): W4's row kernel 2.6-2.7 ms against 2.1-2.2 ms.
"""
from __future__ import annotations

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
