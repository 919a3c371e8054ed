"""Splitting a reduction over the leading axis so both cores share it.

The runtime divides a kernel's outermost *outer* (non-reduced) axis between threads. A
kernel that reduces its leading axis (a full reduction, a column sum ``x.sum(0)``, the
whole of a 2-D loss) has no such axis, or only a short, badly strided one, and ran on one
core. ``split_reduction`` rewrites the leading axis ``M`` as ``(P, M/P)`` and reduces only
the second part: each of the P slices is an independent partial reduction (the runtime
splits slices over threads), elementwise stores keep their element order, and each stored
reduction result becomes P partials (a new leading output axis) that ``combine`` folds
(sum / max / min / prod along axis 0). It applies only where that is exact: every value
stored from a reduction is the reduction itself, or a sum scaled by a constant (a mean),
and nothing else in the kernel reads a reduction result.

A kernel with accumulations (sums over outer axes stored beside inner reductions, see
``kernel_ir``) over the leading axis splits the same way: each slice accumulates into its
own partial row, which makes them thread-private, and the inner reductions stay per point.
"""
from __future__ import annotations

import numpy as np

from .kernel_ir import AxisIndex, Buffer, Compute, Index, Kernel, Load, Reduce, Store, Value, coalesce

MIN_ELEMENTS = 1 << 20
PARTS = 64            # slices of a 1-D full reduction
PARTS_ND = 16         # slices of the leading axis of a multi-dimensional reduction
_COMBINE = {"sum": np.add, "max": np.maximum, "min": np.minimum, "prod": np.multiply}


def _linear_in_reduction(v, defs):
    """The Reduce a stored value is (or a sum of, scaled by constants), else None."""
    s = defs.get(v.id)
    if isinstance(s, Reduce):
        return s
    if isinstance(s, Compute) and s.op in ("mul", "div") and len(s.operands) == 2:
        a, b = s.operands
        cb = defs.get(b.id)
        if isinstance(cb, Compute) and cb.op == "constant":
            r = _linear_in_reduction(a, defs)
            return r if r is not None and r.kind == "sum" else None
    return None


def _parts(k: Kernel) -> int | None:
    m = k.space[0]
    if len(k.space) == 1:
        return PARTS if m % PARTS == 0 else None
    for p in (PARTS_ND, 8, 4, 2):
        if m % p == 0 and m // p >= 2:
            return p
    return None


def _foldable_stores(k: Kernel) -> dict | None:
    """{output name: combine ufunc} for the stores of reduction results, or None when some
    reduction result is used in a way partials cannot reproduce."""
    defs = {s.result.id: s for s in k.body if not isinstance(s, Store)}
    reduces = {s.result.id for s in k.body if isinstance(s, Reduce)}
    derived = set(reduces)     # values computed from a reduction result
    for s in k.body:
        if isinstance(s, Compute) and any(o.id in derived for o in s.operands):
            derived.add(s.result.id)
        if isinstance(s, Reduce) and s.operand.id in derived:
            return None
    combine = {}
    for s in k.body:
        if isinstance(s, Store) and s.value.id in derived:
            r = _linear_in_reduction(s.value, defs)
            if r is None or s.buffer.name in combine:
                return None
            combine[s.buffer.name] = _COMBINE[r.kind]
    stored = {s.value.id for s in k.body if isinstance(s, Store)}
    for s in k.body:       # a derived value must be stored, or feed only other computations
        if isinstance(s, Compute) and s.result.id in derived and s.result.id not in reduces:
            if s.result.id not in stored and not any(
                    isinstance(t, Compute) and s.result in t.operands for t in k.body):
                return None
    if any(isinstance(s, Store) and s.buffer.name in combine and s.value.id not in derived for s in k.body):
        return None        # the same output also stores elementwise values
    return combine


def split_reduction(kernel: Kernel):
    """(new kernel, {output name: combine ufunc}) or None when the split does not apply."""
    k = coalesce(kernel)
    if k.numel < MIN_ELEMENTS or any(isinstance(s, AxisIndex) and s.axis == 0 for s in k.body):
        return None        # (an element index along axis 0 would need the two parts recombined)
    if k.accumulations:
        if not all(0 in r.axes for r in k.accumulations):
            return None
        combine = {name: np.add for name in k.accumulated_outputs()}
    elif k.reduce_axes and k.reduce_axes[0] == 0:
        combine = _foldable_stores(k)
    else:
        return None
    parts = _parts(k)
    if combine is None or parts is None:
        return None
    return _split_leading(k, parts, combine), combine


def _split_leading(k: Kernel, parts: int, combine: dict) -> Kernel:
    """``k`` with axis 0 as (parts, M/parts): reductions over axis 0 reduce the second part
    only, and the outputs in ``combine`` get a leading axis of partial results."""
    inner = k.space[0] // parts
    params, new_param = [], {}
    for p in k.params:
        q = Buffer(p.name, p.dtype, (parts,) + tuple(p.shape), p.role) if p.name in combine else p
        params.append(q)
        new_param[p.name] = q

    def index(ix: Index) -> Index:
        st = ix.strides[0]
        return Index((st * inner, st) + tuple(ix.strides[1:]), ix.offset)

    def axes(old) -> set:
        return {a + 1 for a in old} | ({0} if 0 in old else set())

    vals = {}

    def nv(v: Value) -> Value:
        if v.id not in vals:
            vals[v.id] = Value(v.id, v.dtype, axes(v.axes))
        return vals[v.id]

    def reduced(old) -> tuple:
        return ((1,) if 0 in old else ()) + tuple(a + 1 for a in old if a != 0)

    body = []
    for s in k.body:
        if isinstance(s, Load):
            body.append(Load(nv(s.result), new_param[s.buffer.name], index(s.index)))
        elif isinstance(s, Compute):
            ops = tuple(nv(o) for o in s.operands)
            vals[s.result.id] = Value(s.result.id, s.result.dtype, frozenset().union(*(o.axes for o in ops)))
            body.append(Compute(vals[s.result.id], s.op, ops, s.attrs))
        elif isinstance(s, AxisIndex):
            body.append(AxisIndex(nv(s.result), s.axis + 1))
        elif isinstance(s, Reduce):
            partial = {0} if 0 in s.axes else set()
            vals[s.result.id] = Value(s.result.id, s.result.dtype, axes(s.result.axes) | partial)
            body.append(Reduce(vals[s.result.id], s.kind, nv(s.operand), reduced(s.axes)))
        elif isinstance(s, Store):
            buf = new_param[s.buffer.name]
            if s.buffer.name in combine:
                ix = Index((s.buffer.numel, 0) + tuple(s.index.strides[1:]), s.index.offset)
            else:
                ix = index(s.index)
            body.append(Store(buf, ix, nv(s.value)))
    space = (parts, inner) + tuple(k.space[1:])
    return Kernel(k.name + "_split", space, tuple(params), tuple(body), reduced(k.reduce_axes), dict(k.meta))
