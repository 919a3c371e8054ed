"""Canonicalize patterns that move work to smaller shapes around broadcasts and reductions.

- ``SinkExpand``: an elementwise op with an ``expand(a)`` operand computes on ``a`` directly
  (elementwise ops broadcast their operands) and, when every operand was smaller than the
  result, expands its own, smaller result instead: ``expand(r) / 1024`` is ``expand(r / 1024)``.
- ``FactorReduction``: a sum or mean of ``a * b`` or ``a / b``, where ``b`` is the same along
  every reduced dim (a per-row value for a sum over a row), is ``sum(a) * b`` or ``sum(a) / b``;
  a sum or mean of ``-a`` is ``-sum(a)``; one of ``a * (c / b)`` or ``a * (c * b)`` is
  ``sum(a * c) / b`` or ``sum(a * c) * b``.

Autodiff of normalisations (layer norm, softmax) produces both shapes: a per-row scalar is
expanded, scaled and multiplied into a full-shape term that is summed over the same row.
After these rewrites the per-row factors are applied once per row, not once per element, and
a sum such as ``sum(c * (x - mean))`` becomes ``c * sum(x - mean)``: a reduction that no longer
waits for ``c``, so the fused row kernel needs one pass fewer over its row.
- ``CenteredSum``: a sum or mean of ``a - mean(a)`` over the dims of that mean is 0 in exact
  arithmetic (computed, it is rounding noise): it becomes ``mean(a) * 0``, a per-row value,
  which is NaN exactly when the sum would be (a NaN or infinite element makes the mean NaN or
  infinite, and inf * 0 is NaN as inf - inf is).  A layer norm's backward has one (the
  variance's gradient through the mean): an add per element fewer in its row kernel.
Sums are reassociated as by fast-math: results can differ in the last bits, and an infinite
factor times a row holding a zero gives inf where the unfactored sum gave nan (0 * inf).
"""
from __future__ import annotations

from ..ir.core import Operation
from ..ops.registry import ELEMENTWISE, PURE, TypeInfo
from .rewrite import RewritePattern

REDUCTIONS = ("gradc.sum", "gradc.mean")


def _producer(v, name):
    op = v.owner
    return op if isinstance(op, Operation) and op.name == name else None


def _infer(op, operands):
    """The result types ``op`` would have with ``operands``, or None if its rule rejects them."""
    try:
        return op.opdef.infer([TypeInfo(tuple(v.type.shape), v.type.dtype) for v in operands], op.attrs)
    except Exception:        # a rule that does not broadcast this way: leave the op alone
        return None


class SinkExpand(RewritePattern):
    """``f(expand(a), b)`` is ``f(a, b)``, expanded when that is smaller than the result."""

    def match_and_rewrite(self, op, rw):
        d = op.opdef
        if d is None or not (d.has(ELEMENTWISE) and d.has(PURE)) or len(op.results) != 1:
            return False
        sources = [e.operands[0] if (e := _producer(v, "gradc.expand")) else v for v in op.operands]
        if all(s is v for s, v in zip(sources, op.operands)):
            return False
        out = op.results[0].type
        types = _infer(op, sources)
        if types is None or types[0].dtype != out.dtype:
            return False
        shape = tuple(types[0].shape)
        if shape != tuple(out.shape) and not _broadcasts_to(shape, tuple(out.shape)):
            return False
        b = rw.builder_before(op)
        new = b.op(op.name.split(".", 1)[1], *sources, **op.attrs)
        if shape != tuple(out.shape):
            new = b.op("expand", new, shape=list(out.shape))
        rw.replace_op(op, new)
        return True


def _broadcasts_to(shape, target) -> bool:
    if len(shape) > len(target):
        return False
    return all(s == t or s == 1 for s, t in zip(shape, target[len(target) - len(shape):]))


def _invariant_along(v, dims, rank) -> bool:
    """``v`` (broadcast to rank ``rank``) has size 1, or no axis, at every dim in ``dims``."""
    shape = tuple(v.type.shape)
    lead = rank - len(shape)
    return all(d < lead or shape[d - lead] == 1 for d in dims)


class FactorReduction(RewritePattern):
    """sum/mean of ``-a``, ``a * b``, ``b * a`` or ``a / b`` with ``b`` invariant along the
    reduced dims: the reduction of ``a``, then the negation, product or quotient."""
    op_names = REDUCTIONS

    def match_and_rewrite(self, op, rw):
        x = op.operands[0]
        inner = x.owner
        if not isinstance(inner, Operation) or inner.name not in ("gradc.neg", "gradc.mul", "gradc.div"):
            return False
        dims, rank = list(op.attrs["dims"]), len(x.type.shape)
        if inner.name == "gradc.neg":
            a, b, combine = inner.operands[0], None, "neg"
        else:
            combine = inner.name.split(".", 1)[1]
            candidates = [(0, 1), (1, 0)] if combine == "mul" else [(0, 1)]
            for ia, ib in candidates:
                a, b = inner.operands[ia], inner.operands[ib]
                if a.type == x.type and _invariant_along(b, dims, rank):
                    break
            else:
                return combine == "mul" and self._factor_nested(op, inner, dims, rank, rw)
        if a.type != x.type:
            return False
        # a has the full shape and b is 1 (or absent) along the reduced dims, so combining the
        # keepdim reduction of a with b gives the keepdim shape: only a reshape may remain
        bld = rw.builder_before(op)
        kept = bld.op(op.name.split(".", 1)[1], a, **{**op.attrs, "keepdim": True})
        new = bld.op("neg", kept) if b is None else bld.op(combine, kept, b)
        if new.type != op.results[0].type:
            new = bld.op("reshape", new, shape=list(op.results[0].type.shape))
        rw.replace_op(op, new)
        return True


    @staticmethod
    def _factor_nested(op, inner, dims, rank, rw) -> bool:
        """sum/mean of ``a * (c / b)`` or ``a * (c * b)`` (either order), ``b`` invariant
        along the reduced dims and ``c / b`` used only here: the reduction of ``a * c``, then
        ``/ b`` or ``* b``.  W4's backward sums ``-g * (xhat / std)`` per row: one op per
        element fewer."""
        x = op.operands[0]
        for ia, it in ((0, 1), (1, 0)):
            a, t = inner.operands[ia], inner.operands[it]
            nested = t.owner
            if (not isinstance(nested, Operation) or nested.name not in ("gradc.mul", "gradc.div")
                    or len(t.uses) != 1 or a.type != x.type):
                continue
            pairs = [(0, 1), (1, 0)] if nested.name == "gradc.mul" else [(0, 1)]
            for ic, ib in pairs:
                c, b = nested.operands[ic], nested.operands[ib]
                if c.type == x.type and _invariant_along(b, dims, rank):
                    bld = rw.builder_before(op)
                    kept = bld.op(op.name.split(".", 1)[1], bld.op("mul", a, c),
                                  **{**op.attrs, "keepdim": True})
                    new = bld.op(nested.name.split(".", 1)[1], kept, b)
                    if new.type != op.results[0].type:
                        new = bld.op("reshape", new, shape=list(op.results[0].type.shape))
                    rw.replace_op(op, new)
                    return True
        return False


def _reduced_dims(op, rank) -> list:
    dims = op.attrs.get("dims")
    return sorted({d % rank for d in dims}) if dims is not None else list(range(rank))


class CenteredSum(RewritePattern):
    """sum/mean over dims D of ``a - mean(a, D, keepdim=True)``: ``mean(a) * 0``."""
    op_names = REDUCTIONS

    def match_and_rewrite(self, op, rw):
        sub = _producer(op.operands[0], "gradc.sub")
        if sub is None or sub.attrs.get("alpha") is not None:
            return False
        a, m = sub.operands
        if (e := _producer(m, "gradc.expand")) is not None:
            m = e.operands[0]
        mean = _producer(m, "gradc.mean")
        rank = len(a.type.shape)
        if (mean is None or mean.operands[0] is not a or not mean.attrs.get("keepdim")
                or a.type != sub.results[0].type or not a.type.dtype.is_floating_point
                or _reduced_dims(op, rank) != _reduced_dims(mean, rank)):
            return False
        bld = rw.builder_before(op)
        new = bld.op("mul", m, bld.constant(0.0, (), m.type.dtype))
        if new.type != op.results[0].type:
            new = bld.op("reshape", new, shape=list(op.results[0].type.shape))
        rw.replace_op(op, new)
        return True
