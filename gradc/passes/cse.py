"""cse: common subexpression elimination.

Two ops are equivalent when they are pure (the op table's ``pure`` trait), have
no regions, and share name, operands (the same SSA values), attributes (compared
by their printed form, so ``1`` != ``1.0`` and ``nan`` == ``nan``) and result
types. Walking each block in order, a later equivalent op's results are replaced
by the earlier op's and the later op is erased.

Regions are separate scopes: ops inside a ``gradc.fused`` body are only merged
with equivalent ops of the same body, never with ops of the enclosing block
(a fused body stays self-contained: it reads outer values only through its
block arguments), and nothing inside a body is reused outside it.
"""
from __future__ import annotations

from ..ir.attrs import format_attr_dict
from ..ir.core import Block, Function, Operation
from ..ops.registry import PURE
from .manager import Pass, register_pass


def _key(op: Operation):
    if op.regions or not op.has_trait(PURE):
        return None
    try:
        attrs = format_attr_dict(op.attrs)
    except TypeError:
        return None
    return (op.name, tuple(id(v) for v in op.operands), attrs, tuple(str(r.type) for r in op.results))


def _cse_block(block: Block) -> bool:
    changed = False
    seen: dict = {}
    for op in list(block.ops):
        for region in op.regions:
            for inner in region.blocks:
                changed = _cse_block(inner) or changed
        key = _key(op)
        if key is None:
            continue
        existing = seen.get(key)
        if existing is None:
            seen[key] = op
            continue
        for old, new in zip(op.results, existing.results):
            old.replace_all_uses_with(new)
        op.erase()
        changed = True
    return changed


def eliminate_common_subexpressions(func: Function) -> bool:
    """Run CSE on ``func`` in place; True if any op was removed."""
    return _cse_block(func.body)


@register_pass
class CSE(Pass):
    name = "cse"
    summary = "merge equivalent pure ops (same name, operands, attributes and types)"

    def run(self, func: Function) -> bool:
        return eliminate_common_subexpressions(func)
