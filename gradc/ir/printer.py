"""The IR printer: functions and modules as MLIR-like text, one op per line.

::

    func.func @loss(%x: tensor<2x2xf32> {gradc.requires_grad}, %w: tensor<f32>) -> tensor<f32> {
      %0 = gradc.mul %x, %w : (tensor<2x2xf32>, tensor<f32>) -> tensor<2x2xf32>   // model.py:12
      %1 = gradc.mean %0 {dims = [0, 1], keepdim = false} : (tensor<2x2xf32>) -> tensor<f32>
      func.return %1 : tensor<f32>
    }

Naming: a block argument prints as its ``name_hint`` when that hint is a valid
identifier used by no other block argument of the function, else as ``%argN``;
op results are numbered ``%0, %1, ...`` in print order (a multi-result op defines
``%2:2`` and its results are used as ``%2#0``, ``%2#1``). Attributes print sorted by
key (see ``attrs``). An op's ``loc`` prints as a trailing ``   // file.py:LINE``
comment. Ops with regions (``gradc.fused``) print their region in parentheses
between the attributes and the type, with an ``^bb0(...)`` block header and nested
indentation. A function's result types are omitted when it has none and
parenthesised when it has several; its ``attrs`` print after ``attributes``, its
``loc`` as a comment after the opening brace. A module is its functions separated
by blank lines. The parser reads all of this back to the identical objects, so
``print(parse(print(f))) == print(f)``.
"""
from __future__ import annotations

import re

from .attrs import format_attr_dict
from .core import RETURN, YIELD, Block, Function, Module, Operation, Value

NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_$.]*")
INDENT = "  "


def format_symbol(name: str) -> str:
    from .attrs import format_string
    return "@" + (name if NAME_RE.fullmatch(name) else format_string(name))


def format_types(types) -> str:
    return ", ".join(str(t) for t in types)


def format_result_types(types) -> str:
    """``t``, ``(t1, t2)`` or ``()``: the right-hand side of a function type."""
    types = list(types)
    if len(types) == 1:
        return str(types[0])
    return f"({format_types(types)})"


class Namer:
    """SSA names for one function: block arguments by hint or ``argN``, results by number."""

    def __init__(self, func: Function):
        self.names: dict[Value, str] = {}
        args = list(_all_block_args(func))
        counts: dict[str, int] = {}
        for a in args:
            if a.name_hint is not None:
                counts[a.name_hint] = counts.get(a.name_hint, 0) + 1
        taken = {h for h, n in counts.items() if n == 1 and NAME_RE.fullmatch(h)}
        k = 0
        for a in args:
            h = a.name_hint
            if h is not None and h in taken:
                self.names[a] = "%" + h
            else:
                while f"arg{k}" in taken:
                    k += 1
                self.names[a] = f"%arg{k}"
                k += 1

        # Results are numbered in print order (an op before the ops of its regions) up front,
        # so a use printed before its definition (IR that fails to verify) still shows its name.
        self.lhs: dict[Operation, str] = {}
        n = 0
        for op in func.walk():
            if not op.results:
                continue
            if len(op.results) == 1:
                self.names[op.results[0]] = f"%{n}"
                self.lhs[op] = f"%{n}"
            else:
                for r in op.results:
                    self.names[r] = f"%{n}#{r.index}"
                self.lhs[op] = f"%{n}:{len(op.results)}"
            n += 1

    def define(self, op: Operation) -> str:
        """The left-hand side naming ``op``'s results (``%3`` or ``%3:2``)."""
        return self.lhs[op]

    def __getitem__(self, v: Value) -> str:
        try:
            return self.names[v]
        except KeyError:
            return "%<<UNKNOWN>>"


def _all_block_args(func: Function):
    yield from func.args
    for op in func.walk():
        for r in op.regions:
            for b in r.blocks:
                yield from b.args


class _Printer:
    def __init__(self, positions: dict | None, line_offset: int):
        self.lines: list[str] = []
        self.positions = positions
        self.line_offset = line_offset

    def emit(self, text: str, obj=None, indent: int = 0) -> None:
        if obj is not None and self.positions is not None:
            self.positions[obj] = (self.line_offset + len(self.lines) + 1, indent * len(INDENT) + 1)
        self.lines.append(INDENT * indent + text)

    # ---- functions -------------------------------------------------------------------------
    def function(self, func: Function) -> None:
        namer = Namer(func)
        args = []
        for a, attrs in zip(func.args, _padded(func.arg_attrs, len(func.args))):
            s = f"{namer[a]}: {a.type}"
            ad = format_attr_dict(attrs, unit=True, strict=False)
            if ad:
                s += " " + ad
            args.append(s)
        header = f"func.func {format_symbol(func.name)}({', '.join(args)})"
        if func.result_types:
            header += " -> " + format_result_types(func.result_types)
        fa = format_attr_dict(func.attrs, unit=True, strict=False)
        if fa:
            header += " attributes " + fa
        header += " {"
        if func.loc:
            header += f"   // {func.loc}"
        self.emit(header, func)
        for op in func.body.ops:
            self.op(op, namer, 1)
        self.emit("}")

    # ---- operations ------------------------------------------------------------------------
    def op(self, op: Operation, namer: Namer, indent: int) -> None:
        if op.name in (RETURN, YIELD) and not op.results and not op.regions and not op.attrs:
            text = op.name
            if op.operands:
                text += " " + ", ".join(namer[v] for v in op.operands)
                text += " : " + format_types(v.type for v in op.operands)
            self.emit(text + _loc(op), op, indent)
            return
        lhs = namer.define(op) + " = " if op.results else ""
        text = lhs + op.name
        if op.operands:
            text += " " + ", ".join(namer[v] for v in op.operands)
        ad = format_attr_dict(op.attrs, strict=False)
        if ad:
            text += " " + ad
        sig = f" : ({format_types(v.type for v in op.operands)}) -> " + \
            format_result_types(r.type for r in op.results)
        if not op.regions:
            self.emit(text + sig + _loc(op), op, indent)
            return
        self.emit(text + " ({", op, indent)
        for i, region in enumerate(op.regions):
            if i:
                self.emit("}, {", None, indent)
            for block in region.blocks:
                self.block(block, namer, indent)
        self.emit("})" + sig + _loc(op), None, indent)

    def block(self, block: Block, namer: Namer, indent: int) -> None:
        if block.args:
            args = ", ".join(f"{namer[a]}: {a.type}" for a in block.args)
            self.emit(f"^bb0({args}):", None, indent)
        else:
            self.emit("^bb0:", None, indent)
        for op in block.ops:
            self.op(op, namer, indent + 1)


def _loc(op) -> str:
    return f"   // {op.loc}" if op.loc else ""


def _padded(arg_attrs, n):
    attrs = list(arg_attrs or [])
    return attrs + [{}] * (n - len(attrs))


def print_function(func: Function, *, positions: dict | None = None, line_offset: int = 0) -> str:
    """The text of ``func`` (ending in a newline).

    ``positions``, when given, is filled with ``{op or function: (line, column)}`` of the
    printed text (1-based, shifted by ``line_offset``); the verifier uses it to name lines.
    """
    p = _Printer(positions, line_offset)
    p.function(func)
    return "\n".join(p.lines) + "\n"


def print_module(module: Module, *, positions: dict | None = None) -> str:
    """The functions of ``module`` separated by blank lines."""
    chunks, line = [], 0
    for f in module.functions:
        text = print_function(f, positions=positions, line_offset=line)
        chunks.append(text)
        line += text.count("\n") + 1
    return "\n".join(chunks)


def print_op(op: Operation) -> str:
    """A one-line summary of ``op`` for messages: name, attributes and type signature."""
    text = op.name
    ad = format_attr_dict(op.attrs, strict=False)
    if ad:
        text += " " + ad
    return text + f" : ({format_types(v.type for v in op.operands)}) -> " + \
        format_result_types(r.type for r in op.results)
