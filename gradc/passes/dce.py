"""dce: dead code elimination.

Removes ops whose results are all unused and that have no effect besides their
results: table ops with the ``pure`` trait, unused random draws (``random``: dropping one
only changes which numbers later draws get), and ``gradc.fused`` ops whose body holds only
such ops. Blocks are swept back to front (so a dead chain goes in one
sweep), region bodies before their op, and sweeps repeat until nothing changes.
``func.return``, ``gradc.yield`` and function arguments are never removed.
"""
from __future__ import annotations

from ..ir.core import FUSED, YIELD, Block, Function, Operation
from ..ops.registry import PURE, RANDOM
from .manager import Pass, register_pass


def is_removable(op: Operation) -> bool:
    """True if ``op`` may be deleted once its results are unused."""
    if op.name == FUSED:
        return all(inner.name == YIELD or is_removable(inner)
                   for r in op.regions for b in r.blocks for inner in b.ops)
    return not op.regions and (op.has_trait(PURE) or op.has_trait(RANDOM))


def _sweep(block: Block) -> bool:
    changed = False
    for op in reversed(list(block.ops)):
        for region in op.regions:
            for inner in region.blocks:
                changed = _sweep(inner) or changed
        if op.results and not any(r.uses for r in op.results) and is_removable(op):
            op.erase()
            changed = True
    return changed


def eliminate_dead_code(func: Function) -> bool:
    """Run DCE on ``func`` in place; True if any op was removed."""
    changed = False
    while _sweep(func.body):
        changed = True
    return changed


@register_pass
class DCE(Pass):
    name = "dce"
    summary = "remove pure ops whose results are unused"

    def run(self, func: Function) -> bool:
        return eliminate_dead_code(func)
