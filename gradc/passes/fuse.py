"""fuse: group elementwise ops, broadcasts and the reductions around them into
``gradc.fused`` region ops, each one loop nest (kernel) in codegen.

A group has an iteration space: the output shape of its root, or the input shape of
its reductions. Walking the schedule backwards, a producer joins the group(s) of its
consumers when

- it is fusible: elementwise (incl. constants, iota, casts, where, comparisons),
  ``expand`` (a broadcast load) or a ``reshape`` that only adds or drops unit dims
  (and whose input can itself be loaded in the space);
- its result fits the space: it broadcasts to it, or is it with unit dims added or dropped;
- every user is in one group; or every user is in some group and the op is cheap: then
  it is duplicated into each consuming group (recomputing beats a round trip through
  memory); or (multi-output fusion) it joins the earliest consuming group, which also
  stores it for its other users, all of which run after that group.

A reduction joins its consumers' group too (an epilogue in the same loop nest:
softmax, layernorm) when it reduces the same dims as the group's other reductions;
a group of per-row values grows into the space of the reduction feeding it.
After outlining, sibling kernels over the same space whose inputs already exist at
the earlier one are merged (horizontal fusion: a small graph's backward is one kernel), and
the ops that duplication copied into each of them are merged again (CSE of the body).
A kernel of sums that are only stored (column sums) also joins a sibling that reduces other
dims of the same space (rows): the sums accumulate as that kernel's outer loops run.

Matmuls and indexing ops stay separate kernels; an elementwise op consuming a
matmul (bias add, activation) starts a new group right after it (an epilogue).
The fused op's operands are the group's external inputs, bound to the region's
block arguments; ``gradc.yield`` returns the group's outputs. Fusible ops whose
results nothing reads (dead code; they are all pure) are erased first rather than
grouped: their kernel would have no results, and dce never removes an op without results.
"""
from __future__ import annotations

from ..ir.clone import clone_op
from ..ir.core import FUSED, RETURN, YIELD, Block, Builder, Function, Operation, Region
from ..ops.registry import ELEMENTWISE, PURE
from .cse import _cse_block

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
        targets = _join_targets(op, group_of, position)
        if targets:
            for target in targets:
                target.ops.append(op)
            group_of[op] = targets
            continue
        g = _Group(op, _iteration_shape(op))
        groups.append(g)
        group_of[op] = [g]
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


MAX_DUPLICATES = 6


def _fits(op, g) -> bool:
    if not _broadcasts_to(op.results[0].type.shape, g.shape):
        return False
    return op.name != "gradc.reshape" or _broadcasts_to(op.operands[0].type.shape, g.shape)


def _join_targets(op, group_of, position) -> list:
    """The groups ``op`` joins: one, or (duplication) every consuming group when a cheap
    elementwise op is read only by kernels: recomputing it in each is cheaper than writing
    it to memory and reading it back."""
    r = op.results[0]
    users = r.users()
    inside = {g for u in users for g in group_of.get(u, ())}
    if not inside:
        return []
    if (op.name not in FUSIBLE_REDUCTIONS and 1 < len(inside) <= MAX_DUPLICATES
            and all(group_of.get(u) for u in users) and all(_fits(op, g) for g in inside)):
        return sorted(inside, key=lambda grp: position[grp.anchor])
    g = _join_target(op, group_of, position, users, inside)
    return [] if g is None else [g]


def _join_target(op, group_of, position, users, inside):
    r = op.results[0]
    # join the earliest consuming group; later groups read the value it stores
    g = min(inside, key=lambda grp: position[grp.anchor])
    outside = [u for u in users if g not in group_of.get(u, ())]
    if any(u.name != RETURN and position.get(u, 1 << 30) < position[g.anchor] for u in outside):
        return None
    if any(group_of.get(u) and min(position[h.anchor] for h in group_of[u]) <= position[g.anchor]
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


def outline_group(func: Function, g: _Group, copies=None) -> Operation:
    """Replace the group's ops by one ``gradc.fused`` op placed at the group's anchor.

    ``copies`` maps an op duplicated into several groups to those groups: a use by an op of
    another group that has its own copy is not an output of this one."""
    copies = copies or {}
    g.ops = _movable_ops(func, g, copies)
    members = set(g.ops)
    inputs, outputs = [], []
    for op in g.ops:
        for v in op.operands:
            if (not isinstance(v.owner, Operation) or v.owner not in members) and v not in inputs:
                inputs.append(v)
        own = copies.get(op, ())
        for r in op.results:
            if any(u not in members and not any(u in h.ops for h in own if h is not g) for u in r.users()):
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
        if not any(r.uses for r in op.results):   # a duplicated op goes with its last group
            op.erase()
    return fused


def _movable_ops(func: Function, g: _Group, copies) -> list:
    """The group's ops that can move to its anchor: not those whose results an op outside the
    group reads before the anchor (directly or through such an op).  They stay where they are
    and the kernel reads their results.  (A reshape that was duplicated into a consumer group
    dropped as not worth a kernel fed an expand placed before this group's anchor: moved into
    the kernel, it would have been defined after its use.)"""
    position = {op: i for i, op in enumerate(func.body.ops)}
    anchor = position[g.anchor]
    members = set(g.ops)
    changed = True
    while changed:
        changed = False
        for op in list(members):
            own = copies.get(op, ())
            early = any(u not in members and not any(u in h.ops for h in own if h is not g)
                        and position.get(u, anchor) < anchor for r in op.results for u in r.users())
            if early:
                members.discard(op)
                changed = True
    return [op for op in g.ops if op in members]


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


def _inputs_ready(first: Operation, second: Operation, position: dict) -> bool:
    """Every input of ``second`` is a result of ``first`` or exists before it (so the two can
    become one op at ``first``'s place)."""
    return all(v.owner is first or not isinstance(v.owner, Operation)
               or position.get(v.owner, -1) < position[first] for v in second.operands)


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
                if _inputs_ready(first, second, position):
                    _merge_into(func, first, second)
                    changed = any_change = True
                    break
            if changed:
                break
    return any_change


def _scalar_constant(v) -> bool:
    op = v.owner
    return (isinstance(op, Operation) and op.name == "gradc.constant"
            and not isinstance(op.attrs.get("value"), list) and all(n == 1 for n in v.type.shape))


def _yield_only_sums(op: Operation) -> bool:
    """Every reduction in fused ``op`` is a sum or mean whose result only reaches the yield
    (directly, through reshapes, or scaled by constants): it can accumulate beside another
    kernel's reductions (``KernelBuilder`` folds the scaling into the sum)."""
    block = op.regions[0].blocks[0]
    reds = [o for o in block.ops if o.name in FUSIBLE_REDUCTIONS]

    def scaled(v, u) -> bool:
        if u.name == "gradc.mul":
            return any(w is not v and _scalar_constant(w) for w in u.operands)
        return u.name == "gradc.div" and u.operands[0] is v and _scalar_constant(u.operands[1])

    def only_yielded(v) -> bool:
        return all(u.name == YIELD or ((u.name == "gradc.reshape" or scaled(v, u)) and only_yielded(u.results[0]))
                   for u in v.users())
    return bool(reds) and all(o.name in ("gradc.sum", "gradc.mean") and only_yielded(o.results[0])
                              for o in reds)


def _computes_with_reductions(op: Operation) -> bool:
    """Some reduction result in fused ``op`` feeds a computation (not just the yield)."""
    block = op.regions[0].blocks[0]
    return any(u.name not in (YIELD, "gradc.reshape") for o in block.ops if o.name in FUSIBLE_REDUCTIONS
               for u in o.results[0].users())


def _leading(dims) -> bool:
    """The reduced dims are 0, 1, ..., k (column sums, not row statistics; a reduction of a 0-d
    value reduces none)."""
    return bool(dims) and dims == frozenset(range(max(dims) + 1))


def merge_accumulations(func: Function) -> bool:
    """Join a kernel of sums over leading dims, only stored (column sums), to a kernel over the
    same space that reduces other dims and computes with them (rows: a layernorm's gradient
    beside its gamma/beta gradients): one pass over the shared inputs instead of two.  The
    sums become kernel IR accumulations (``codegen.kernel_ir``); leading dims only, since
    those split into per-thread partial slices (``split_reduce``), while sums over trailing
    dims beside column reductions would keep the kernel on one thread."""
    changed = False
    while True:
        fused = [op for op in func.body.ops if op.name == FUSED]
        position = {op: i for i, op in enumerate(func.body.ops)}
        sig = {op: kernel_signature(op) for op in fused}
        pair = None
        for j, second in enumerate(fused):
            for first in fused[:j]:
                a, b = sig[first], sig[second]
                if (a is None or b is None or a[0] != b[0] or a[1] is None or b[1] is None
                        or a[1] & b[1]):
                    continue
                # (sums that the other kernel computes with cannot become its accumulations: they
                # are complete only after its last row)
                if not ((_yield_only_sums(second) and _computes_with_reductions(first) and _leading(b[1]))
                        or (_yield_only_sums(first) and _computes_with_reductions(second) and _leading(a[1])
                            and not any(v.owner is first for v in second.operands))):
                    continue
                if _inputs_ready(first, second, position):
                    pair = first, second
                    break
            if pair:
                break
        if pair is None:
            return changed
        _merge_into(func, *pair)
        changed = True


def _compatible(a, b) -> bool:
    """Same space; at most one of the two reduces (an elementwise kernel joins a reduction's)."""
    if a is None or b is None or a[0] != b[0]:
        return False
    return a[1] is None or b[1] is None or a[1] == b[1]


def split_total_reductions(func: Function) -> bool:
    """Rewrite a sum/mean over every dim of an input that another reduction in ``func`` reduces
    over some dims only (column sums beside a loss, as in a layernorm's backward; row
    statistics beside it, as in its forward) as that reduction's dims followed by a small
    reduction over the rest: the big stage then fuses with its sibling into one pass over
    the input instead of a second pass.  Row-reduction dims are preferred to leading dims
    (column sums): a row sum is one more register chain in the row kernel's pass, a column
    sum an accumulator row it loads and stores per element, and those rows share the L1 with
    the input and output rows.  W4's kernel with its loss as the third column sum beside
    dgamma and dbeta took 0.80 ns per element on one thread (4096 x 1024, from memory), 0.52
    as a row sum; its step 1.96 -> 1.34 ms (AMD EPYC, in-process A/B)."""
    ops = [op for op in func.body.ops if op.name in FUSIBLE_REDUCTIONS]
    leading, other = {}, {}
    for op in ops:
        shape = tuple(op.operands[0].type.shape)
        dims = _reduce_dims(op)
        if not dims or len(dims) >= len(_squeezed(shape)):
            continue
        if _leading(dims):
            leading.setdefault(shape, dims)
        else:
            other.setdefault(shape, dims)
    changed = False
    for op in ops:
        shape = tuple(op.operands[0].type.shape)
        dims = other.get(shape, leading.get(shape))
        if (op.name not in ("gradc.sum", "gradc.mean") or dims is None
                or _reduce_dims(op) != frozenset(d for d, n in enumerate(shape) if n != 1)):
            continue
        b = Builder.before(op)
        part = b.op(op.name.split(".")[1], op.operands[0], dims=sorted(dims), keepdim=False)
        rest = list(range(len(part.type.shape)))
        total = b.op(op.name.split(".")[1], part, dims=rest, keepdim=bool(op.attrs.get("keepdim")))
        if tuple(total.type.shape) != tuple(op.results[0].type.shape):
            total = b.op("reshape", total, shape=list(op.results[0].type.shape))
        op.results[0].replace_all_uses_with(total)
        op.erase()
        changed = True
    return changed


def fuse(func: Function) -> bool:
    erased = erase_dead_fusible_ops(func)
    erased = split_total_reductions(func) or erased
    groups = find_groups(func)
    copies: dict = {}
    for g in groups:
        for op in g.ops:
            copies.setdefault(op, []).append(g)
    copies = {op: gs for op, gs in copies.items() if len(gs) > 1}
    for g in groups:
        outline_group(func, g, copies)
    erase_dead_fusible_ops(func)      # originals of duplicated ops whose groups were all outlined
    merged = merge_siblings(func)
    merged = merge_accumulations(func) or merged
    if merged:     # merged kernels hold the copies that duplication gave each of them
        for op in func.body.ops:
            if op.name == FUSED:
                _cse_block(op.regions[0].blocks[0])
    return erased or bool(groups) or merged


from .manager import Pass, register_pass  # noqa: E402


@register_pass
class FusePass(Pass):
    name = "fuse"
    summary = "group elementwise ops and reductions into gradc.fused kernels"

    def run(self, func) -> bool:
        return fuse(func)
