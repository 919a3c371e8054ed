"""Deep copies of functions and op sequences with value remapping."""
from __future__ import annotations

from .core import Block, Function, Operation, Region


def clone_op(op: Operation, mapping: dict) -> Operation:
    """Copy ``op`` (with its regions), mapping operands through ``mapping`` and recording results."""
    new = Operation(op.name, [mapping.get(v, v) for v in op.operands], [r.type for r in op.results],
                    dict(op.attrs), loc=op.loc)
    for r in op.regions:
        nr = Region()
        for b in r.blocks:
            nb = Block([a.type for a in b.args], [a.name_hint for a in b.args])
            for a, na in zip(b.args, nb.args):
                mapping[a] = na
            for inner in b.ops:
                nb.append(clone_op(inner, mapping))
            nr.add_block(nb)
        new.add_region(nr)
    for r, nr in zip(op.results, new.results):
        mapping[r] = nr
        nr.name_hint = r.name_hint
    return new


def clone_function(f: Function, name: str | None = None) -> Function:
    g = Function(name or f.name, [a.type for a in f.args], [a.name_hint for a in f.args],
                 list(f.result_types), [dict(a) for a in f.arg_attrs], dict(f.attrs))
    g.loc = f.loc
    g.meta = dict(getattr(f, "meta", {}))
    mapping = {a: b for a, b in zip(f.args, g.args)}
    for op in f.body.ops:
        g.body.append(clone_op(op, mapping))
    return g
