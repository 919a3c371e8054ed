"""Which of several equal elements PyTorch's CPU kernels pick, reproduced exactly.

``topk``, ``kthvalue``, ``mode``, ``nanmedian``, ``sort(stable=False)`` and ``unique(dim=...)``
choose among equal values (ties, -0.0 and 0.0, NaNs) by the algorithm PyTorch runs, not by a
documented rule: topk runs libstdc++'s ``std::partial_sort`` or ``std::nth_element`` then
``std::sort`` (``aten/src/ATen/native/TopKImpl.h``), kthvalue the Sedgewick quickselect of
``aten/src/ATen/native/Sorting.cpp``, mode and the unstable sort ``std::sort`` (of (value, index)
pairs), nanmedian ``std::nth_element``, unique over a dim a ``std::sort`` of its slices. Code that
uses the index (argmax-like training code, a gradient routed to the selected element) sees
PyTorch's only if the same steps are taken, so this module runs those algorithms step for step on
one row at a time, in Python. Callers take a vectorised NumPy path for the rows whose answer no
algorithm can change (no tie where it selects) and come here for the others only.

The algorithm functions (``sort``, ``nth_element``, ``partial_sort``, ``quickselect``) take a
Python list and a ``less(a, b)`` (``greater``) on its items and reorder the list in place as the
C++ code reorders its array; the ``*_row`` functions take one NumPy row. (PyTorch's x86 wheels sort
with ``std::sort``; a build with x86-simd-sort would order the ties of an unstable float/int sort
its own way.)
"""
from __future__ import annotations

import functools
import math

import numpy as np

INSERTION_SORT_THRESHOLD = 16     # libstdc++'s _S_threshold: introsort leaves runs this short to insertion sort


def _lg(n):
    return n.bit_length() - 1


def _move_median_to_first(a, result, i, j, k, less):
    if less(a[i], a[j]):
        if less(a[j], a[k]):
            a[result], a[j] = a[j], a[result]
        elif less(a[i], a[k]):
            a[result], a[k] = a[k], a[result]
        else:
            a[result], a[i] = a[i], a[result]
    elif less(a[i], a[k]):
        a[result], a[i] = a[i], a[result]
    elif less(a[j], a[k]):
        a[result], a[k] = a[k], a[result]
    else:
        a[result], a[j] = a[j], a[result]


def _unguarded_partition_pivot(a, first, last, less):
    """libstdc++'s median-of-three pivot moved to ``first``, then a Hoare partition of the rest."""
    _move_median_to_first(a, first, first + 1, first + (last - first) // 2, last - 1, less)
    pivot, lo, hi = first, first + 1, last
    while True:
        while less(a[lo], a[pivot]):
            lo += 1
        hi -= 1
        while less(a[pivot], a[hi]):
            hi -= 1
        if not lo < hi:
            return lo
        a[lo], a[hi] = a[hi], a[lo]
        lo += 1


def _unguarded_linear_insert(a, last, less):
    val = a[last]
    nxt = last - 1
    while less(val, a[nxt]):
        a[last] = a[nxt]
        last = nxt
        nxt -= 1
    a[last] = val


def _insertion_sort(a, first, last, less):
    for i in range(first + 1, last):
        if less(a[i], a[first]):
            val = a[i]
            a[first + 1:i + 1] = a[first:i]
            a[first] = val
        else:
            _unguarded_linear_insert(a, i, less)


def _push_heap(a, first, hole, top, value, less):
    parent = (hole - 1) // 2
    while hole > top and less(a[first + parent], value):
        a[first + hole] = a[first + parent]
        hole = parent
        parent = (hole - 1) // 2
    a[first + hole] = value


def _adjust_heap(a, first, hole, length, value, less):
    top = second = hole
    while second < (length - 1) // 2:
        second = 2 * (second + 1)
        if less(a[first + second], a[first + second - 1]):
            second -= 1
        a[first + hole] = a[first + second]
        hole = second
    if length & 1 == 0 and second == (length - 2) // 2:
        second = 2 * (second + 1)
        a[first + hole] = a[first + second - 1]
        hole = second - 1
    _push_heap(a, first, hole, top, value, less)


def _make_heap(a, first, last, less):
    length = last - first
    if length < 2:
        return
    for parent in range((length - 2) // 2, -1, -1):
        _adjust_heap(a, first, parent, length, a[first + parent], less)


def _pop_heap(a, first, last, result, less):
    value = a[result]
    a[result] = a[first]
    _adjust_heap(a, first, 0, last - first, value, less)


def _heap_select(a, first, middle, last, less):
    _make_heap(a, first, middle, less)
    for i in range(middle, last):
        if less(a[i], a[first]):
            _pop_heap(a, first, middle, i, less)


def _sort_heap(a, first, last, less):
    while last - first > 1:
        last -= 1
        _pop_heap(a, first, last, last, less)


def partial_sort(a, middle, less, first=0, last=None):
    """``std::partial_sort(first, middle, last, less)``."""
    last = len(a) if last is None else last
    _heap_select(a, first, middle, last, less)
    _sort_heap(a, first, middle, less)


def nth_element(a, nth, less):
    """``std::nth_element(begin, begin + nth, end, less)`` (introselect)."""
    first, last = 0, len(a)
    if first == last or nth == last:
        return
    depth = 2 * _lg(last - first)
    while last - first > 3:
        if depth == 0:
            _heap_select(a, first, nth + 1, last, less)
            a[first], a[nth] = a[nth], a[first]
            return
        depth -= 1
        cut = _unguarded_partition_pivot(a, first, last, less)
        if cut <= nth:
            first = cut
        else:
            last = cut
    _insertion_sort(a, first, last, less)


def _introsort_loop(a, first, last, depth, less):
    while last - first > INSERTION_SORT_THRESHOLD:
        if depth == 0:
            partial_sort(a, last, less, first, last)
            return
        depth -= 1
        cut = _unguarded_partition_pivot(a, first, last, less)
        _introsort_loop(a, cut, last, depth, less)
        last = cut


def sort(a, less, last=None):
    """``std::sort(begin, begin + last, less)`` (introsort, then a final insertion sort)."""
    last = len(a) if last is None else last
    if last <= 0:
        return
    _introsort_loop(a, 0, last, 2 * _lg(last), less)
    if last > INSERTION_SORT_THRESHOLD:
        _insertion_sort(a, 0, INSERTION_SORT_THRESHOLD, less)
        for i in range(INSERTION_SORT_THRESHOLD, last):
            _unguarded_linear_insert(a, i, less)
    else:
        _insertion_sort(a, 0, last, less)


def quickselect(a, k, greater):
    """The Sedgewick quickselect of PyTorch's kthvalue (``quick_select_template``), ``greater``
    being its ``gt_or_nan``."""
    lo, hi = 0, len(a) - 1
    while True:
        if hi <= lo:
            return
        if hi == lo + 1:
            if greater(a[lo], a[hi]):
                a[lo], a[hi] = a[hi], a[lo]
            return
        mid = (lo + hi) >> 1
        a[mid], a[lo + 1] = a[lo + 1], a[mid]
        if greater(a[lo + 1], a[hi]):
            a[lo + 1], a[hi] = a[hi], a[lo + 1]
        if greater(a[lo], a[hi]):
            a[lo], a[hi] = a[hi], a[lo]
        if greater(a[lo + 1], a[lo]):
            a[lo + 1], a[lo] = a[lo], a[lo + 1]
        i, j, piv = lo + 1, hi, a[lo]
        while True:
            i += 1
            while greater(piv, a[i]):
                i += 1
            j -= 1
            while greater(a[j], piv):
                j -= 1
            if j < i:
                break
            a[i], a[j] = a[j], a[i]
        a[lo], a[j] = a[j], a[lo]
        if j <= k:
            lo = i
        if j >= k:
            hi = j - 1


# ---- PyTorch's comparisons on (value, index) pairs -------------------------------------------------
def _isnan(v):
    return isinstance(v, float) and math.isnan(v)


def _nan_greatest(x, y):
    """topk's and kthvalue's ``x > y`` with NaN above everything."""
    return (_isnan(x[0]) and not _isnan(y[0])) or x[0] > y[0]


def _nan_least_less(x, y):
    return (not _isnan(x[0]) and _isnan(y[0])) or x[0] < y[0]


def _pairs(row):
    return [(v, i) for i, v in enumerate(row.tolist())]


def topk_row(row, k, largest, sorted_):
    """PyTorch's CPU topk of one row: the indices it returns, in its order."""
    n = len(row)
    q = _pairs(row)
    less = _nan_greatest if largest else _nan_least_less
    if k * 64 <= n:
        partial_sort(q, k, less)
    else:
        nth_element(q, k - 1, less)
        if sorted_:
            sort(q, less, k - 1)
    return [i for _, i in q[:k]]


def kthvalue_row(row, k):
    """The index PyTorch's CPU kthvalue picks for the k-th smallest (k from 1)."""
    q = _pairs(row)
    quickselect(q, k - 1, _nan_greatest)
    return q[k - 1][1]


def mode_row(row):
    """PyTorch's CPU mode of one row: (value, index) from a ``std::sort`` by value and a scan."""
    q = _pairs(row)
    sort(q, lambda x, y: x[0] < y[0])
    best, best_freq, freq = q[0], 0, 0
    for i, item in enumerate(q):
        freq += 1
        if i == len(q) - 1 or item[0] != q[i + 1][0]:
            if freq > best_freq:
                best, best_freq = item, freq
            freq = 0
    return best[1]


def nanmedian_row(row):
    """The index PyTorch's CPU nanmedian picks along a dim (its ``std::nth_element`` of indices)."""
    vals = row.tolist()
    nans = sum(1 for v in vals if _isnan(v))
    idx = list(range(len(vals)))

    def less(i, j):
        a, b = vals[i], vals[j]
        return a < b or (a == b and i < j) or (_isnan(b) and not _isnan(a))
    nth_element(idx, int((len(vals) - nans - 1) / 2), less)   # (C++ division truncates toward 0)
    return idx[int((len(vals) - nans - 1) / 2)]


@functools.lru_cache(maxsize=None)
def nanmedian_of_nans(n):
    """The index PyTorch's CPU nanmedian gives a slice of n NaNs (depends on n only)."""
    return nanmedian_row(np.full(n, np.nan))


def sort_row(row, descending):
    """PyTorch's CPU ``sort(stable=False)`` of one row: the order ``std::sort`` leaves (rows of
    up to 16 elements are insertion-sorted, so only longer rows can differ from a stable sort)."""
    q = _pairs(row)
    sort(q, _nan_greatest if descending else _nan_least_less)
    return [i for _, i in q]


def unique_dim_order(rows):
    """The order PyTorch's CPU unique(dim=...) sorts the slices (rows of a 2-D array) in: a
    ``std::sort`` comparing them lexicographically with ``<`` and ``>`` (a NaN compares as equal
    to everything there)."""
    data = rows.tolist()

    def less(a, b):
        for lhs, rhs in zip(data[a], data[b]):
            if lhs < rhs:
                return True
            if lhs > rhs:
                return False
        return False
    order = list(range(len(data)))
    sort(order, less)
    return order


def _equal_neighbours(s):
    same = (s[:, 1:] == s[:, :-1])
    if s.dtype.kind == "f":
        same |= np.isnan(s[:, 1:]) & np.isnan(s[:, :-1])
    return same


def ties_at(sorted_rows, positions=None):
    """Per row of values sorted along the last axis (PyTorch's order, NaNs together): whether the
    element at any of ``positions`` (None: anywhere) is equal to (or, for NaN, as NaN as) a
    neighbour, so that an algorithm could have picked another index there."""
    s = sorted_rows
    same = _equal_neighbours(s)
    if positions is None:
        return same.any(axis=1)
    n = s.shape[1]
    tie = np.zeros(s.shape[0], dtype=bool)
    for p in positions:
        if p > 0:
            tie |= same[:, p - 1]
        if p < n - 1:
            tie |= same[:, p]
    return tie
