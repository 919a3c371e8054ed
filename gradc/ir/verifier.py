"""The IR verifier: structural and type invariants every pass must preserve.

Checks, per function:

- every op is a table op (``gradc.<name>``) or structural (``func.return``,
  ``gradc.fused``, ``gradc.yield``);
- every operand is a value of this function that dominates its use: defined
  earlier in the same block, an argument of the block, or (inside a region body)
  defined before the region's op in an enclosing block; use-lists agree;
- table ops: operand count (``num_inputs``; variadic ops need at least one),
  result count (``num_outputs``), attribute names (``attr_names`` when non-empty;
  required keyword attributes of the NumPy reference must be present), attribute
  values printable, and result types equal to what the op's ``infer`` rule gives
  for the operand types and attrs;
- the body ends in exactly one ``func.return`` whose operand types are the
  function's result types; ``arg_attrs`` has one dict per argument;
- ``gradc.fused`` has one region with one block whose arguments match the fused
  op's operands in number and type, ending in a ``gradc.yield`` whose operand
  types are the fused op's result types; ``gradc.yield`` appears nowhere else.

Failures raise ``VerifyError`` naming the op and its position: by default the
line and column in the printed IR (``print_function``/``print_module`` of what
was verified); pass ``positions`` (e.g. from the parser) to point elsewhere.
"""
from __future__ import annotations

import inspect

from ..ops import registry
from .attrs import normalize
from .core import FUSED, RETURN, YIELD, BlockArgument, Function, Module, Operation, OpResult
from .types import TensorType


class VerifyError(ValueError):
    """An IR invariant is broken; ``op`` (an Operation or Function) is the culprit."""

    def __init__(self, message: str, op=None, line: int | None = None, col: int | None = None):
        self.message = message
        self.op = op
        self.line = line
        self.col = col
        super().__init__(self.format())

    def format(self, filename: str | None = None) -> str:
        parts = [filename] if filename else []
        if self.line is not None:
            parts += [str(self.line), str(self.col or 1)]
        prefix = ":".join(parts)
        return f"{prefix}: error: {self.message}" if prefix else f"error: {self.message}"


def verify(target, *, positions: dict | None = None) -> None:
    """Verify a Function or Module; raise ``VerifyError`` for the first problem found.

    The exception's ``errors`` attribute lists every problem found.
    """
    errors = collect_errors(target, positions=positions)
    if errors:
        first = errors[0]
        first.errors = errors
        raise first


def collect_errors(target, *, positions: dict | None = None) -> list[VerifyError]:
    """Every problem in a Function or Module, in program order (empty when it verifies)."""
    funcs = target.functions if isinstance(target, Module) else [target]
    raw: list[tuple] = []
    for f in funcs:
        _FunctionVerifier(f, raw).run()
    if isinstance(target, Module):
        names = set()
        for f in funcs:
            if f.name in names:
                raw.append((f, f"redefinition of symbol @{f.name}"))
            names.add(f.name)
    if not raw:
        return []
    if positions is None:
        from .printer import print_function, print_module
        positions = {}
        if isinstance(target, Module):
            print_module(target, positions=positions)
        else:
            print_function(target, positions=positions)
    out = []
    for obj, msg in raw:
        line, col = positions.get(obj, (None, None))
        out.append(VerifyError(msg, obj, line, col))
    return out


def _describe(obj) -> str:
    if isinstance(obj, Function):
        return f"function @{obj.name}"
    return f"'{obj.name}' op"


class _FunctionVerifier:
    def __init__(self, func: Function, errors: list):
        self.func = func
        self.errors = errors
        self.defined: set = set()   # every value defined anywhere in the function
        self._use_sets: dict = {}

    def fail(self, obj, message: str) -> None:
        self.errors.append((obj, f"{_describe(obj)} {message}"))

    def run(self) -> None:
        f = self.func
        if len(f.arg_attrs) != len(f.args):
            self.fail(f, f"has {len(f.args)} arguments but {len(f.arg_attrs)} argument attribute dicts")
        for i, a in enumerate(f.arg_attrs):
            self._check_attr_values(f, a, f"argument {i} attribute")
        self._check_attr_values(f, f.attrs, "attribute")
        self._collect_defs(f.body)
        ops = f.body.ops
        if not ops or ops[-1].name != RETURN:
            self.fail(f, "body must end with 'func.return'")
        self._block(f.body, set(), terminator=RETURN)
        ret = f.return_op
        if ret is not None:
            got = [v.type for v in ret.operands]
            want = list(f.result_types)
            if got != want:
                self.fail(ret, f"returns ({', '.join(map(str, got))}) but @{f.name} declares results "
                          f"({', '.join(map(str, want))})")

    def _collect_defs(self, block) -> None:
        self.defined.update(block.args)
        for op in block.ops:
            self.defined.update(op.results)
            for r in op.regions:
                for b in r.blocks:
                    self._collect_defs(b)

    def _block(self, block, visible: set, terminator: str) -> None:
        visible = set(visible) | set(block.args)
        for a in block.args:
            if a.block is not block:
                self.fail(self.func, f"block argument {a.index} records the wrong owner block")
        for i, op in enumerate(block.ops):
            if op.parent is not block:
                self.fail(op, "records the wrong parent block")
            last = i == len(block.ops) - 1
            if op.name in (RETURN, YIELD):
                if op.name != terminator:
                    where = "a 'gradc.fused' body" if op.name == YIELD else "a function body"
                    self.fail(op, f"may only terminate {where}")
                elif not last:
                    self.fail(op, "must be the last op of its block")
            self._operands(op, visible)
            self._op(op, visible)
            visible.update(op.results)

    def _operands(self, op: Operation, visible: set) -> None:
        for i, v in enumerate(op.operands):
            uses = self._use_sets.get(v)
            if uses is None:
                uses = self._use_sets[v] = {(id(o), k) for o, k in v.uses}
            if (id(op), i) not in uses:
                self.fail(op, f"operand #{i} is missing from its value's use-list")
            if v in visible:
                continue
            if v in self.defined:
                self.fail(op, f"operand #{i} does not dominate this use (it is defined later, or inside "
                              "another region)")
            elif isinstance(v, OpResult) and v.op.parent is None:
                self.fail(op, f"operand #{i} is the result of an erased '{v.op.name}' op")
            elif isinstance(v, (OpResult, BlockArgument)):
                self.fail(op, f"operand #{i} is defined outside this function")
            else:
                self.fail(op, f"operand #{i} is an undefined value")
        for r in op.results:
            if r.op is not op:
                self.fail(op, f"result {r.index} records the wrong owner op")
            for user, k in r.uses:
                if k >= len(user.operands) or user.operands[k] is not r:
                    self.fail(op, f"result {r.index} has a stale use-list entry")

    def _op(self, op: Operation, visible: set) -> None:
        for r in op.results:
            if not isinstance(r.type, TensorType):
                self.fail(op, f"result {r.index} has a non-tensor type {r.type!r}")
        self._check_attr_values(op, op.attrs, "attribute")
        if op.name == RETURN:
            if op.results or op.regions:
                self.fail(op, "must have no results and no regions")
            return
        if op.name == YIELD:
            if op.results or op.regions:
                self.fail(op, "must have no results and no regions")
            return
        if op.name == FUSED:
            self._fused(op, visible)
            return
        if not op.name.startswith("gradc.") or op.short_name not in registry.all_ops():
            self.fail(op, "is not in the op table")
            return
        if op.regions:
            self.fail(op, f"must have no regions (it has {len(op.regions)})")
        self._table_op(op, registry.get(op.short_name))

    def _table_op(self, op: Operation, d: registry.OpDef) -> None:
        n = len(op.operands)
        if d.num_inputs is None:
            if n < 1:
                self.fail(op, "expects at least 1 operand, got 0")
                return
        elif n != d.num_inputs:
            self.fail(op, f"expects {d.num_inputs} operand(s), got {n}")
            return
        if len(op.results) != d.num_outputs:
            self.fail(op, f"expects {d.num_outputs} result(s), got {len(op.results)}")
            return
        if d.attr_names:
            unknown = sorted(set(op.attrs) - set(d.attr_names))
            if unknown:
                self.fail(op, f"has unknown attribute(s) {', '.join(repr(k) for k in unknown)} "
                              f"(allowed: {', '.join(d.attr_names)})")
                return
            missing = [k for k in _required_attrs(d) if k not in op.attrs]
            if missing:
                self.fail(op, f"is missing required attribute(s) {', '.join(repr(k) for k in missing)}")
                return
        try:
            inferred = d.infer([v.type for v in op.operands], dict(op.attrs))
        except registry.ShapeError as e:
            self.fail(op, f"rejects its operands: {e}")
            return
        except KeyError as e:
            self.fail(op, f"is missing required attribute {e}")
            return
        except Exception as e:  # a malformed attribute value, usually
            self.fail(op, f"has invalid attributes for its shape rule ({type(e).__name__}: {e})")
            return
        inferred = [TensorType.of(t) for t in inferred]
        if len(inferred) != len(op.results):
            self.fail(op, f"has {len(op.results)} results but the op table infers {len(inferred)}")
            return
        for r, t in zip(op.results, inferred):
            if r.type != t:
                self.fail(op, f"result #{r.index} has type {r.type} but the op table infers {t} "
                              f"from operands ({', '.join(str(v.type) for v in op.operands)})")

    def _fused(self, op: Operation, visible: set) -> None:
        if len(op.regions) != 1 or len(op.regions[0].blocks) != 1:
            self.fail(op, "must have exactly one region with one block")
            return
        region = op.regions[0]
        if region.parent is not op:
            self.fail(op, "region records the wrong parent op")
        block = region.blocks[0]
        if block.parent is not region:
            self.fail(op, "block records the wrong parent region")
        if len(block.args) != len(op.operands):
            self.fail(op, f"has {len(op.operands)} operands but its body has {len(block.args)} arguments")
        else:
            for i, (v, a) in enumerate(zip(op.operands, block.args)):
                if v.type != a.type:
                    self.fail(op, f"operand #{i} has type {v.type} but body argument {i} has type {a.type}")
        term = block.ops[-1] if block.ops else None
        if term is None or term.name != YIELD:
            self.fail(op, "body must end with 'gradc.yield'")
        self._block(block, visible, terminator=YIELD)
        if term is not None and term.name == YIELD:
            got = [v.type for v in term.operands]
            want = [r.type for r in op.results]
            if got != want:
                self.fail(term, f"yields ({', '.join(map(str, got))}) but the enclosing 'gradc.fused' has "
                                f"results ({', '.join(map(str, want))})")

    def _check_attr_values(self, obj, attrs: dict, what: str) -> None:
        if not isinstance(attrs, dict):
            self.fail(obj, f"{what}s must be a dict, got {type(attrs).__name__}")
            return
        for k, v in attrs.items():
            if not isinstance(k, str):
                self.fail(obj, f"{what} name {k!r} is not a string")
                continue
            try:
                normalize(v)
            except TypeError as e:
                self.fail(obj, f"{what} '{k}' has an unprintable value: {e}")


_REQUIRED: dict[str, tuple] = {}


def _required_attrs(d: registry.OpDef) -> tuple:
    """Attributes the op's NumPy reference takes as keyword arguments without defaults."""
    if d.name not in _REQUIRED:
        req = []
        try:
            params = inspect.signature(d.forward).parameters.values()
        except (TypeError, ValueError):
            params = []
        for p in params:
            if p.name in d.attr_names and p.default is inspect.Parameter.empty and \
                    p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD):
                req.append(p.name)
        _REQUIRED[d.name] = tuple(req)
    return _REQUIRED[d.name]
