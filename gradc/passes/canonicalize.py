"""canonicalize: algebraic identities and constant folding, as rewrite patterns.

Identities: x*1, 1*x, x+0, 0+x, x-0, x/1, x**1, where(true, a, b) = a and
where(false, a, b) = b, neg(neg(x)), reshape of reshape,
reshape/expand/sum_to/cast to the same type, permute of permute and identity
permutes, sum/mean over size-1 dims (a reshape), sum_to as sum + reshape; elementwise ops
before broadcasts and per-row factors outside sums (``reduction_algebra.py``). Folding: a pure table op whose
operands are all constants is evaluated with the op's NumPy reference when the
result is small or uniform (one value broadcast), so constants stay readable.
"""
from __future__ import annotations

import numpy as np

from .. import dtypes
from ..ir.core import Operation
from ..ops.elementwise import constant_array
from ..ops.registry import ELEMENTWISE, PURE, VIEW
from .rewrite import RewritePattern, apply_patterns_greedily

FOLD_MAX_ELEMENTS = 16


def constant_value(v):
    """The NumPy value of a ``gradc.constant`` result, else None."""
    op = v.owner
    if not isinstance(op, Operation) or op.name != "gradc.constant":
        return None
    a = op.attrs
    return constant_array(a["value"], a["shape"], a["dtype"])


def splat_value(v):
    """The scalar of a ``gradc.constant`` whose value is one number (any shape), else None."""
    op = v.owner
    if not isinstance(op, Operation) or op.name != "gradc.constant" or isinstance(op.attrs["value"], list):
        return None
    return np.asarray(op.attrs["value"], dtype=dtypes.from_name(op.attrs["dtype"]).np)


def is_splat(v, scalar) -> bool:
    c = splat_value(v)
    if c is not None:
        return v.type.numel > 0 and bool(c == scalar)
    c = constant_value(v)
    return c is not None and c.size > 0 and bool(np.all(c == scalar))


class Identity(RewritePattern):
    """``op(x, c)`` is ``x`` when c is a splat of ``unit`` and types agree."""

    def __init__(self, name, unit, sides):
        self.op_names = (f"gradc.{name}",)
        self.unit = unit
        self.sides = sides   # operand positions that may hold the unit

    def match_and_rewrite(self, op, rw):
        scaled = op.attrs.get("alpha") is not None     # add/sub's a + alpha * b
        for side in self.sides:
            if scaled and side == 0:                     # 0 + alpha * b is not b (a + alpha * 0 is a)
                continue
            other = op.operands[1 - side]
            if is_splat(op.operands[side], self.unit) and other.type == op.results[0].type:
                rw.replace_op(op, other)
                return True
        return False


class SameTypeNoop(RewritePattern):
    op_names = ("gradc.reshape", "gradc.expand", "gradc.sum_to", "gradc.cast", "gradc.clone")

    def match_and_rewrite(self, op, rw):
        if op.name == "gradc.clone":
            return False
        if op.operands[0].type == op.results[0].type:
            rw.replace_op(op, op.operands[0])
            return True
        return False


class DoubleNeg(RewritePattern):
    op_names = ("gradc.neg",)

    def match_and_rewrite(self, op, rw):
        src = op.operands[0].owner
        if isinstance(src, Operation) and src.name == "gradc.neg":
            rw.replace_op(op, src.operands[0])
            return True
        return False


class WhereOfConstant(RewritePattern):
    """``where(c, a, b)`` with c all true (all false) is ``a`` (``b``) when no broadcasting
    changes its type."""
    op_names = ("gradc.where",)

    def match_and_rewrite(self, op, rw):
        cond, a, b = op.operands
        for value, pick in ((True, a), (False, b)):
            if is_splat(cond, value) and pick.type == op.results[0].type:
                rw.replace_op(op, pick)
                return True
        return False


class ReshapeOfReshape(RewritePattern):
    op_names = ("gradc.reshape",)

    def match_and_rewrite(self, op, rw):
        src = op.operands[0].owner
        if isinstance(src, Operation) and src.name == "gradc.reshape":
            new = rw.builder_before(op).op("reshape", src.operands[0], shape=list(op.attrs["shape"]))
            rw.replace_op(op, new)
            return True
        return False


class PermuteOfPermute(RewritePattern):
    op_names = ("gradc.permute",)

    def match_and_rewrite(self, op, rw):
        dims = list(op.attrs["dims"])
        if dims == sorted(dims):
            rw.replace_op(op, op.operands[0])
            return True
        src = op.operands[0].owner
        if isinstance(src, Operation) and src.name == "gradc.permute":
            inner = list(src.attrs["dims"])
            composed = [inner[d] for d in dims]
            new = rw.builder_before(op).op("permute", src.operands[0], dims=composed)
            rw.replace_op(op, new)
            return True
        return False


class ReduceUnitDims(RewritePattern):
    """sum/mean/amax/amin over dims that all have size 1 only reshape."""
    op_names = ("gradc.sum", "gradc.mean", "gradc.amax", "gradc.amin", "gradc.prod")

    def match_and_rewrite(self, op, rw):
        shape = op.operands[0].type.shape
        dims = op.attrs["dims"]
        if not shape or not all(shape[d] == 1 for d in dims):
            return False
        out = op.results[0].type
        if out.dtype is not op.operands[0].type.dtype:
            return False
        new = rw.builder_before(op).op("reshape", op.operands[0], shape=list(out.shape))
        rw.replace_op(op, new)
        return True


class SumToAsSum(RewritePattern):
    """sum_to (the adjoint of broadcasting) is a keepdim sum plus a reshape, which fuses."""
    op_names = ("gradc.sum_to",)

    def match_and_rewrite(self, op, rw):
        src = op.operands[0].type.shape
        dst = tuple(op.attrs["shape"])
        lead = len(src) - len(dst)
        dims = list(range(lead)) + [lead + i for i, s in enumerate(dst) if s == 1 and src[lead + i] != 1]
        if not dims:
            return False
        b = rw.builder_before(op)
        summed = b.op("sum", op.operands[0], dims=dims, keepdim=True)
        rw.replace_op(op, b.op("reshape", summed, shape=list(dst)))
        return True


class ConstantFold(RewritePattern):
    def match_and_rewrite(self, op, rw):
        d = op.opdef
        if d is None or not d.has(PURE) or op.name == "gradc.constant" or not op.operands:
            return False
        out_types = [r.type for r in op.results]
        splats = [splat_value(v) for v in op.operands]
        if d.has(VIEW) and len(op.results) == 1 and splats and splats[0] is not None:
            # a view (reshape, expand, permute, slice ...) of one number everywhere is that number
            t = out_types[0]
            b = rw.builder_before(op)
            rw.replace_op(op, [b.constant(np.asarray(splats[0], dtype=t.dtype.np).item(), t.shape, t.dtype)])
            return True
        if d.has(ELEMENTWISE) and all(v is not None for v in splats):
            # every operand one number: fold on 0-d arrays, not on arrays of the full shape
            result = d.forward(*splats, **op.attrs)
            arrays = result if isinstance(result, tuple) else (result,)
            folded = [(np.asarray(a, dtype=t.dtype.np).item(), t) for a, t in zip(arrays, out_types)]
            if not any(isinstance(v, float) and np.isnan(v) for v, _ in folded):
                b = rw.builder_before(op)
                rw.replace_op(op, [b.constant(v, t.shape, t.dtype) for v, t in folded])
                return True
        values = [constant_value(v) for v in op.operands]
        if any(v is None for v in values) or sum(v.size for v in values) > 64 * FOLD_MAX_ELEMENTS:
            return False
        result = d.forward(*[np.array(v) for v in values], **op.attrs)
        arrays = result if isinstance(result, tuple) else (result,)
        folded = []
        for a, t in zip(arrays, out_types):
            a = np.asarray(a, dtype=t.dtype.np)
            flat = a.reshape(-1)
            if a.size and np.all(flat == flat[0]) and not np.isnan(flat[0]):
                value = flat[0].item()
            elif a.size <= FOLD_MAX_ELEMENTS and not np.isnan(a).any():
                value = a.tolist()
            else:
                return False
            folded.append((value, t))
        b = rw.builder_before(op)
        rw.replace_op(op, [b.constant(v, t.shape, t.dtype) for v, t in folded])
        return True


from .reduction_algebra import CenteredSum, FactorReduction, SinkExpand  # noqa: E402

PATTERNS = [
    Identity("mul", 1, (0, 1)), Identity("add", 0, (0, 1)), Identity("sub", 0, (1,)), Identity("div", 1, (1,)),
    Identity("pow", 1, (1,)), WhereOfConstant(), SinkExpand(), FactorReduction(), CenteredSum(), SameTypeNoop(), DoubleNeg(), ReshapeOfReshape(), PermuteOfPermute(), ReduceUnitDims(), SumToAsSum(), ConstantFold(),
]


def canonicalize(func) -> bool:
    return apply_patterns_greedily(func, PATTERNS)


from .manager import Pass, register_pass  # noqa: E402


@register_pass
class CanonicalizePass(Pass):
    name = "canonicalize"
    summary = "algebraic identities and constant folding (greedy rewrite patterns)"

    def run(self, func) -> bool:
        return canonicalize(func)
