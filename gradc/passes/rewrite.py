"""Rewrite patterns and a greedy worklist driver (MLIR's applyPatternsGreedily).

A pattern names the ops it matches and implements ``match_and_rewrite(op, rewriter)``,
returning True when it changed the IR. The driver revisits the users and producers
of every changed op, and every op a pattern creates through ``rewriter.builder_before``,
until nothing matches, so one run reaches a fixed point.
"""
from __future__ import annotations

from ..ir.core import Builder, Function, Operation, Value


class _NotifyingBuilder(Builder):
    """A Builder that puts every op it creates on the driver's worklist."""

    def __init__(self, rewriter: "Rewriter", block, index, loc):
        super().__init__(block, index, loc)
        self._rewriter = rewriter

    def insert(self, op: Operation) -> Operation:
        super().insert(op)
        self._rewriter.notify(op)
        return op


class Rewriter:
    """Mutation helpers that keep the driver's worklist informed."""

    def __init__(self, worklist: list):
        self._worklist = worklist

    def builder_before(self, op: Operation) -> Builder:
        """A builder inserting before ``op``; the ops it creates are revisited by the driver."""
        return _NotifyingBuilder(self, op.parent, op.parent.ops.index(op), op.loc)

    def notify(self, op: Operation) -> None:
        self._worklist.append(op)

    def replace_op(self, op: Operation, values) -> None:
        """Replace every result of ``op`` by ``values`` and erase it."""
        if isinstance(values, Value):
            values = [values]
        for r, v in zip(op.results, values):
            for user in r.users():
                self._worklist.append(user)
            r.replace_all_uses_with(v)
            if isinstance(v.owner, Operation):
                self._worklist.append(v.owner)
        self.erase_op(op)

    def erase_op(self, op: Operation) -> None:
        producers = [v.owner for v in op.operands if isinstance(v.owner, Operation)]
        op.erase()
        self._worklist.extend(producers)


class RewritePattern:
    op_names: tuple = ()   # empty: every op

    def match_and_rewrite(self, op: Operation, rewriter: Rewriter) -> bool:  # pragma: no cover - interface
        raise NotImplementedError


def apply_patterns_greedily(func: Function, patterns, max_iterations: int = 100000) -> bool:
    by_name: dict = {}
    generic = []
    for p in patterns:
        if p.op_names:
            for n in p.op_names:
                by_name.setdefault(n, []).append(p)
        else:
            generic.append(p)
    worklist = list(func.walk())
    rewriter = Rewriter(worklist)
    changed = False
    steps = 0
    while worklist:
        op = worklist.pop()
        if op.parent is None:     # erased (ids are not used: a new op may reuse a dead one's id)
            continue
        steps += 1
        if steps > max_iterations:
            raise RuntimeError("canonicalize: pattern application did not converge")
        for p in by_name.get(op.name, []) + generic:
            if p.match_and_rewrite(op, rewriter):
                changed = True
                break
    return changed
