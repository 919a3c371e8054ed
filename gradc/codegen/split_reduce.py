"""Splitting a full reduction so both cores share it.

A kernel that reduces its whole (1-D, after ``coalesce``) space has no outer loop for the
runtime to divide between threads. ``split_full_reduction`` rewrites it over the space
``(P, N/P)``, reducing only the second axis: each of the P rows is an independent
partial reduction (so the runtime splits rows over threads), elementwise stores keep
their element order, and each stored reduction result becomes P partials that
``combine`` folds (sum / max / min / prod). It applies only where that is exact: every
value stored from a reduction is the reduction itself, or a sum scaled by a constant
(a mean), and nothing else in the kernel reads a reduction result.
"""
from __future__ import annotations

import numpy as np

from .kernel_ir import Buffer, Compute, Index, Kernel, Load, Reduce, Store, Value, coalesce

MIN_ELEMENTS = 1 << 20
PARTS = 64
_COMBINE = {"sum": np.add, "max": np.maximum, "min": np.minimum, "prod": np.multiply}


def _linear_in_reduction(v, defs, reduces):
    """The Reduce a stored value is (or a sum of, scaled by constants), else None."""
    s = defs.get(v.id)
    if isinstance(s, Reduce):
        return s
    if isinstance(s, Compute) and s.op in ("mul", "div") and len(s.operands) == 2:
        a, b = s.operands
        cb = defs.get(b.id)
        if isinstance(cb, Compute) and cb.op == "constant":
            r = _linear_in_reduction(a, defs, reduces)
            return r if r is not None and r.kind == "sum" else None
    return None


def split_full_reduction(kernel: Kernel):
    """(new kernel, {output name: combine ufunc}) or None when the split does not apply."""
    k = coalesce(kernel)
    if len(k.space) != 1 or k.reduce_axes != (0,) or k.space[0] < MIN_ELEMENTS or k.space[0] % PARTS:
        return None
    n = k.space[0]
    inner = n // PARTS
    defs = {s.result.id: s for s in k.body if not isinstance(s, Store)}
    reduces = {s.result.id for s in k.body if isinstance(s, Reduce)}
    # values derived from a reduction result may only feed stores (through a linear scale)
    derived = set(reduces)
    for s in k.body:
        if isinstance(s, Compute) and any(o.id in derived for o in s.operands):
            derived.add(s.result.id)
        if isinstance(s, Reduce) and s.operand.id in derived:
            return None
    combine = {}
    for s in k.body:
        if isinstance(s, Store) and s.value.id in derived:
            r = _linear_in_reduction(s.value, defs, reduces)
            if r is None or s.buffer.numel != 1:
                return None
            combine[s.buffer.name] = _COMBINE[r.kind]
    for s in k.body:
        if isinstance(s, Compute) and s.result.id in derived and s.result.id not in reduces:
            if not any(isinstance(t, Store) and t.value.id == s.result.id for t in k.body) and \
                    not any(isinstance(t, Compute) and s.result in t.operands for t in k.body):
                return None
    params, new_param = [], {}
    for p in k.params:
        q = Buffer(p.name, p.dtype, (PARTS,), p.role) if p.name in combine else p
        params.append(q)
        new_param[p.name] = q

    def index(ix: Index) -> Index:
        st = ix.strides[0]
        return Index((st * inner, st), ix.offset)

    vals = {}

    def nv(v: Value) -> Value:
        if v.id not in vals:
            axes = {1} if 0 in v.axes else set()
            vals[v.id] = Value(v.id, v.dtype, axes)
        return vals[v.id]

    body = []
    for s in k.body:
        if isinstance(s, Load):
            body.append(Load(nv(s.result), new_param[s.buffer.name], index(s.index)))
        elif isinstance(s, Compute):
            body.append(Compute(nv(s.result), s.op, tuple(nv(o) for o in s.operands), s.attrs))
        elif isinstance(s, Reduce):
            r = Reduce(nv(s.result), s.kind, nv(s.operand), (1,))
            vals[s.result.id] = Value(s.result.id, s.result.dtype, {0})
            body.append(Reduce(vals[s.result.id], r.kind, r.operand, (1,)))
        elif isinstance(s, Store):
            if s.buffer.name in combine:
                body.append(Store(new_param[s.buffer.name], Index((1, 0), 0), nv(s.value)))
            else:
                body.append(Store(new_param[s.buffer.name], index(s.index), nv(s.value)))
        else:
            return None      # AxisIndex: the element index would need the two axes recombined
    return Kernel(k.name + "_split", (PARTS, inner), tuple(params), tuple(body), (1,), dict(k.meta)), combine
