"""fuse: group elementwise ops, broadcasts and the reduction that consumes them
into ``gradc.fused`` region ops, each one loop nest in codegen.

A group has an iteration shape: the output shape of its root (for a reduction,
the shape of the reduced input). Walking the schedule backwards, a producer joins
the group of its consumers when

- it is fusible: elementwise (incl. constants, casts, where, comparisons),
  ``expand`` (a broadcast load) or a ``reshape`` that only adds or drops unit dims;
- its result broadcasts to the group's iteration shape;
- every user is in that group, or (multi-output fusion) the group also stores it,
  which needs its shape to equal the iteration shape and its outside users to run
  after the group.

A reduction joins the group of its consumers too (an epilogue in the same loop
nest: softmax, layernorm) when its input shape is the group's iteration shape and
it reduces the same dims as the group's other reductions.

Matmuls and indexing ops stay separate kernels; an elementwise op consuming a
matmul (bias add, activation) starts a new group right after it (an epilogue).
The fused op's operands are the group's external inputs, bound to the region's
block arguments; ``gradc.yield`` returns the group's outputs. Fusible ops whose
results nothing reads (dead code; they are all pure) are erased first rather than
grouped: their kernel would have no results, and dce never removes an op without results.
"""
from __future__ import annotations

from ..ir.clone import clone_op
from ..ir.core import FUSED, RETURN, YIELD, Block, Function, Operation, Region
from ..ops.registry import ELEMENTWISE, PURE, REDUCTION

FUSIBLE_REDUCTIONS = {"gradc.sum", "gradc.mean", "gradc.amax", "gradc.amin", "gradc.prod"}


def _squeezed(shape) -> tuple:
    return tuple(s for s in shape if s != 1)


def _broadcasts_to(shape, target) -> bool:
    """``shape`` fits the iteration space ``target``: it broadcasts to it (right-aligned), or
    it is the space with unit dims added or dropped (as keepdim reshapes produce)."""
    if _squeezed(shape) == _squeezed(target):
        return True
    if len(shape) > len(target):
        return False
    lead = len(target) - len(shape)
    return all(s == 1 or s == target[lead + i] for i, s in enumerate(shape))


def _unit_reshape(op) -> bool:
    src = [s for s in op.operands[0].type.shape if s != 1]
    dst = [s for s in op.results[0].type.shape if s != 1]
    return src == dst


def is_elementwise_like(op: Operation) -> bool:
    if op.has_trait(ELEMENTWISE) or op.name in ("gradc.constant", "gradc.expand"):
        return True
    return op.name == "gradc.reshape" and _unit_reshape(op)


class _Group:
    def __init__(self, root: Operation, shape):
        self.ops = [root]
        self.shape = tuple(shape)
        self.anchor = root
        self.reduce_dims = _reduce_dims(root) if root.name in FUSIBLE_REDUCTIONS else None


def _reduce_dims(op: Operation) -> frozenset:
    """The non-unit dims a reduction reduces (its input shape is its group's space)."""
    shape = op.operands[0].type.shape
    return frozenset(d for d in op.attrs["dims"] if shape[d] != 1)


def _iteration_shape(op: Operation):
    if op.name in FUSIBLE_REDUCTIONS:
        return op.operands[0].type.shape
    return op.results[0].type.shape


def find_groups(func: Function) -> list[_Group]:
    ops = [op for op in func.body.ops if op.name != RETURN]
    position = {op: i for i, op in enumerate(ops)}
    group_of: dict = {}
    groups: list[_Group] = []
    for op in reversed(ops):
        if not (is_elementwise_like(op) or op.name in FUSIBLE_REDUCTIONS):
            continue
        if len(op.results) != 1:
            continue
        target = _join_target(op, group_of, position)
        if target is not None:
            target.ops.append(op)
            group_of[op] = target
            continue
        g = _Group(op, _iteration_shape(op))
        groups.append(g)
        group_of[op] = g
    for g in groups:
        g.ops.sort(key=lambda o: position[o])
    return [g for g in groups if _worth_fusing(g)]


def erase_dead_fusible_ops(func: Function) -> bool:
    """Erase fusible ops (all pure) whose results nothing reads, dead chains in one sweep:
    grouped, they would become kernels without results, which dce can never remove."""
    changed = False
    for op in reversed(list(func.body.ops)):
        if op.name == RETURN or not (is_elementwise_like(op) or op.name in FUSIBLE_REDUCTIONS):
            continue
        if op.has_trait(PURE) and not any(r.uses for r in op.results):
            op.erase()
            changed = True
    return changed


def _join_target(op, group_of, position):
    r = op.results[0]
    users = r.users()
    inside = {group_of.get(u) for u in users if group_of.get(u) is not None}
    if not inside:
        return None
    # join the earliest consuming group; later groups read the value it stores
    g = min(inside, key=lambda grp: position[grp.anchor])
    outside = [u for u in users if group_of.get(u) is not g]
    if any(u.name != RETURN and position.get(u, 1 << 30) < position[g.anchor] for u in outside):
        return None
    if any(group_of.get(u) is not None and position[group_of[u].anchor] <= position[g.anchor]
           for u in outside):
        return None
    if op.name in FUSIBLE_REDUCTIONS:
        # a reduction whose result feeds an epilogue over its own input's space
        # (softmax, layernorm): every reduction of a kernel reduces the same axes
        in_shape = tuple(op.operands[0].type.shape)
        dims = _reduce_dims(op)
        if not dims or (g.reduce_dims is not None and g.reduce_dims != dims):
            return None
        if in_shape != g.shape:
            # a group of per-row values grows into the space of the reduction feeding it
            if g.reduce_dims is not None or not (_broadcasts_to(g.shape, in_shape)
                                                 and len(g.shape) <= len(in_shape)):
                return None
            g.shape = in_shape
        g.reduce_dims = dims
        return g
    if not _broadcasts_to(r.type.shape, g.shape):
        return None
    if op.name == "gradc.reshape" and not _broadcasts_to(op.operands[0].type.shape, g.shape):
        return None     # its input could not be loaded in the group's space; reshape outside
    if outside and (_squeezed(r.type.shape) != _squeezed(g.shape) and g.reduce_dims is None
                    or op.name == "gradc.constant"):
        return None
    return g


def _worth_fusing(g: _Group) -> bool:
    real = [o for o in g.ops if o.name not in ("gradc.constant", "gradc.reshape", "gradc.expand")]
    return len(real) >= 1 and not (len(g.ops) == 1 and g.ops[0].name in ("gradc.constant", "gradc.reshape"))


def outline_group(func: Function, g: _Group) -> Operation:
    """Replace the group's ops by one ``gradc.fused`` op placed at the group's anchor."""
    members = set(g.ops)
    inputs, outputs = [], []
    for op in g.ops:
        for v in op.operands:
            if (not isinstance(v.owner, Operation) or v.owner not in members) and v not in inputs:
                inputs.append(v)
        for r in op.results:
            if any(u not in members for u in r.users()):
                outputs.append(r)
    block = Block([v.type for v in inputs])
    mapping = dict(zip(inputs, block.args))
    for op in g.ops:
        block.append(clone_op(op, mapping))
    block.append(Operation(YIELD, [mapping[r] for r in outputs]))
    fused = Operation(FUSED, inputs, [r.type for r in outputs], regions=[Region([block])], loc=g.anchor.loc)
    func.body.insert_before(g.anchor, fused)
    for r, nr in zip(outputs, fused.results):
        r.replace_all_uses_with(nr)
        nr.name_hint = r.name_hint
    for op in reversed(g.ops):
        op.erase()
    return fused


def kernel_signature(op: Operation):
    """(iteration space, reduced dims) of a fused op, or None if it has an unusual shape mix."""
    block = op.regions[0].blocks[0]
    space, dims = None, None
    for o in block.ops:
        if o.name in FUSIBLE_REDUCTIONS:
            shape = tuple(o.operands[0].type.shape)
            d = _reduce_dims(o)
            if (space is not None and shape != space) or (dims is not None and d != dims):
                return None
            space, dims = shape, d
    if space is None:
        shapes = [tuple(v.type.shape) for v in block.ops[-1].operands]
        space = max(shapes, key=len) if shapes else ()
        if any(not _broadcasts_to(s, space) for s in shapes):
            return None
    return space, dims


def _merge_into(func: Function, first: Operation, second: Operation) -> Operation:
    """One fused op computing both ``first`` and ``second`` (second's inputs may be first's results)."""
    b1, b2 = first.regions[0].blocks[0], second.regions[0].blocks[0]
    inputs = list(first.operands)
    for v in second.operands:
        if v not in inputs and v.owner is not first:
            inputs.append(v)
    block = Block([v.type for v in inputs])
    outer_to_arg = dict(zip(inputs, block.args))
    m1 = dict(zip(b1.args, [outer_to_arg[v] for v in first.operands]))
    for o in b1.ops[:-1]:
        block.append(clone_op(o, m1))
    first_yield = [m1[v] for v in b1.ops[-1].operands]
    from_first = dict(zip(first.results, first_yield))
    m2 = {a: (from_first[v] if v.owner is first else outer_to_arg[v]) for a, v in zip(b2.args, second.operands)}
    for o in b2.ops[:-1]:
        block.append(clone_op(o, m2))
    second_yield = [m2[v] for v in b2.ops[-1].operands]
    # first's results still needed outside (besides by second) stay outputs
    keep1 = [k for k, r in enumerate(first.results) if any(u is not second for u in r.users())]
    outs = [first_yield[k] for k in keep1] + second_yield
    block.append(Operation(YIELD, outs))
    merged = Operation(FUSED, inputs, [v.type for v in outs], regions=[Region([block])], loc=first.loc)
    func.body.insert_before(first, merged)
    for k, r in zip(keep1, merged.results):
        first.results[k].replace_uses_if(r, lambda u: u is not second)
    for r, nr in zip(second.results, merged.results[len(keep1):]):
        r.replace_all_uses_with(nr)
    second.erase()
    first.erase()
    return merged


def merge_siblings(func: Function) -> bool:
    """Horizontal fusion: a fused op joins an earlier one with the same iteration space and
    reduced dims when all its inputs exist at the earlier op (they are read once, and small
    graphs such as a scalar loss's backward become one kernel)."""
    changed = True
    any_change = False
    while changed:
        changed = False
        fused = [op for op in func.body.ops if op.name == FUSED]
        position = {op: i for i, op in enumerate(func.body.ops)}
        sig = {op: kernel_signature(op) for op in fused}
        for j, second in enumerate(fused):
            if sig[second] is None:
                continue
            for first in fused[:j]:
                if sig[first] != sig[second] and not _compatible(sig[first], sig[second]):
                    continue
                if all(v.owner is first or not isinstance(v.owner, Operation)
                       or position.get(v.owner, -1) < position[first] for v in second.operands):
                    _merge_into(func, first, second)
                    changed = any_change = True
                    break
            if changed:
                break
    return any_change


def _compatible(a, b) -> bool:
    """Same space; at most one of the two reduces (an elementwise kernel joins a reduction's)."""
    if a is None or b is None or a[0] != b[0]:
        return False
    return a[1] is None or b[1] is None or a[1] == b[1]


def fuse(func: Function) -> bool:
    erased = erase_dead_fusible_ops(func)
    groups = find_groups(func)
    for g in groups:
        outline_group(func, g)
    merged = merge_siblings(func)
    return erased or bool(groups) or merged


from .manager import Pass, register_pass  # noqa: E402


@register_pass
class FusePass(Pass):
    name = "fuse"
    summary = "group elementwise ops and reductions into gradc.fused kernels"

    def run(self, func) -> bool:
        return fuse(func)
