"""IR core: Value (OpResult, BlockArgument), Operation, Block, Region, Function, Module.

Small MLIR-like classes with use-lists, replace_all_uses_with, erase and
insertion. Ops named ``gradc.<name>`` are the op table's ops; the others are
structural: ``func.return``, ``gradc.fused`` (a region holding a fused kernel
body) and ``gradc.yield`` (its terminator).
"""
from __future__ import annotations

from typing import Iterable, Iterator

from ..ops import registry
from .types import TensorType

RETURN = "func.return"
FUSED = "gradc.fused"
YIELD = "gradc.yield"
STRUCTURAL = {RETURN, FUSED, YIELD}


class Value:
    """An SSA value: a typed def with a list of uses (operation, operand index)."""

    def __init__(self, type: TensorType, name_hint: str | None = None):
        self.type = TensorType.of(type)
        self.uses: list[tuple[Operation, int]] = []
        self.name_hint = name_hint

    @property
    def owner(self):
        raise NotImplementedError

    def users(self) -> list["Operation"]:
        seen, out = set(), []
        for op, _ in self.uses:
            if id(op) not in seen:
                seen.add(id(op))
                out.append(op)
        return out

    def has_uses(self) -> bool:
        return bool(self.uses)

    def replace_all_uses_with(self, new: "Value") -> None:
        if new is self:
            return
        for op, i in list(self.uses):
            op.set_operand(i, new)

    def replace_uses_if(self, new: "Value", pred) -> None:
        for op, i in list(self.uses):
            if pred(op):
                op.set_operand(i, new)


class OpResult(Value):
    def __init__(self, type, op: "Operation", index: int):
        super().__init__(type)
        self.op = op
        self.index = index

    @property
    def owner(self) -> "Operation":
        return self.op

    def __repr__(self) -> str:
        return f"<OpResult {self.index} of {self.op.name} : {self.type}>"


class BlockArgument(Value):
    def __init__(self, type, block: "Block", index: int, name_hint=None):
        super().__init__(type, name_hint)
        self.block = block
        self.index = index

    @property
    def owner(self) -> "Block":
        return self.block

    def __repr__(self) -> str:
        return f"<BlockArgument {self.index} : {self.type}>"


class Operation:
    """One operation: name, operands, results, attrs, regions and a source location."""

    def __init__(self, name: str, operands: Iterable[Value] = (), result_types: Iterable[TensorType] = (),
                 attrs: dict | None = None, regions: Iterable["Region"] = (), loc: str | None = None):
        self.name = name
        self.operands: list[Value] = []
        self.attrs = dict(attrs or {})
        self.loc = loc
        self.parent: Block | None = None
        self.results = [OpResult(t, self, i) for i, t in enumerate(result_types)]
        self.regions: list[Region] = []
        for v in operands:
            self._add_operand(v)
        for r in regions:
            self.add_region(r)

    # ---- operands ------------------------------------------------------------------------------
    def _add_operand(self, v: Value) -> None:
        if not isinstance(v, Value):
            raise TypeError(f"{self.name}: operand must be an IR Value, got {type(v).__name__}")
        v.uses.append((self, len(self.operands)))
        self.operands.append(v)

    def set_operand(self, i: int, v: Value) -> None:
        old = self.operands[i]
        old.uses.remove((self, i))
        self.operands[i] = v
        v.uses.append((self, i))

    def set_operands(self, values: Iterable[Value]) -> None:
        self.drop_operands()
        for v in values:
            self._add_operand(v)

    def drop_operands(self) -> None:
        for i, v in enumerate(self.operands):
            v.uses.remove((self, i))
        self.operands = []

    # ---- structure -----------------------------------------------------------------------------
    def add_region(self, region: "Region") -> "Region":
        region.parent = self
        self.regions.append(region)
        return region

    @property
    def result(self) -> OpResult:
        if len(self.results) != 1:
            raise ValueError(f"{self.name} has {len(self.results)} results, not one")
        return self.results[0]

    @property
    def short_name(self) -> str:
        return self.name.split(".", 1)[1] if "." in self.name else self.name

    @property
    def opdef(self):
        """The op-table entry for a ``gradc.*`` op (None for structural ops)."""
        if self.name in STRUCTURAL or not self.name.startswith("gradc."):
            return None
        return registry.get(self.short_name)

    def has_trait(self, trait: str) -> bool:
        d = self.opdef
        return d is not None and d.has(trait)

    def walk(self) -> Iterator["Operation"]:
        """This op and every op nested in its regions, pre-order."""
        yield self
        for r in self.regions:
            for b in r.blocks:
                for op in list(b.ops):
                    yield from op.walk()

    def erase(self) -> None:
        """Remove from the parent block; results must be unused."""
        for r in self.results:
            if r.uses:
                raise ValueError(f"cannot erase {self.name}: result {r.index} still has "
                                 f"{len(r.uses)} use(s)")
        for op in list(self.walk())[1:]:
            op.drop_operands()
        self.drop_operands()
        if self.parent is not None:
            self.parent.ops.remove(self)
            self.parent = None

    def move_before(self, other: "Operation") -> None:
        if self.parent is not None:
            self.parent.ops.remove(self)
        blk = other.parent
        blk.ops.insert(blk.ops.index(other), self)
        self.parent = blk

    def __repr__(self) -> str:
        return f"<Operation {self.name} ({len(self.operands)} operands, {len(self.results)} results)>"


class Block:
    def __init__(self, arg_types: Iterable[TensorType] = (), arg_names: Iterable[str | None] = ()):
        names = list(arg_names)
        self.args: list[BlockArgument] = []
        for i, t in enumerate(arg_types):
            self.add_argument(t, names[i] if i < len(names) else None)
        self.ops: list[Operation] = []
        self.parent: Region | None = None

    def add_argument(self, type: TensorType, name: str | None = None) -> BlockArgument:
        a = BlockArgument(type, self, len(self.args), name)
        self.args.append(a)
        return a

    def erase_argument(self, index: int) -> None:
        a = self.args[index]
        if a.uses:
            raise ValueError(f"cannot erase block argument {index}: it still has uses")
        del self.args[index]
        for i, b in enumerate(self.args):
            b.index = i

    def append(self, op: Operation) -> Operation:
        op.parent = self
        self.ops.append(op)
        return op

    def insert(self, index: int, op: Operation) -> Operation:
        op.parent = self
        self.ops.insert(index, op)
        return op

    def insert_before(self, anchor: Operation, op: Operation) -> Operation:
        return self.insert(self.ops.index(anchor), op)

    def insert_after(self, anchor: Operation, op: Operation) -> Operation:
        return self.insert(self.ops.index(anchor) + 1, op)

    @property
    def terminator(self) -> Operation | None:
        return self.ops[-1] if self.ops else None

    def __iter__(self):
        return iter(list(self.ops))


class Region:
    def __init__(self, blocks: Iterable[Block] = ()):
        self.blocks: list[Block] = []
        self.parent: Operation | None = None
        for b in blocks:
            self.add_block(b)

    def add_block(self, b: Block) -> Block:
        b.parent = self
        self.blocks.append(b)
        return b

    @property
    def block(self) -> Block:
        return self.blocks[0]


class Function:
    """``func.func @name(%args) -> results``: one block ending in ``func.return``.

    ``arg_attrs[i]`` holds per-argument attributes (``{"gradc.requires_grad": True}``);
    ``attrs`` holds function attributes printed after ``attributes``; ``meta`` holds
    Python-side facts that are not part of the IR text (e.g. the tracer's record of
    how the traced function's outputs were structured).
    """

    def __init__(self, name: str, arg_types: Iterable[TensorType], arg_names: Iterable[str] | None = None,
                 result_types: Iterable[TensorType] = (), arg_attrs: list[dict] | None = None,
                 attrs: dict | None = None):
        arg_types = [TensorType.of(t) for t in arg_types]
        self.name = name
        self.body = Block(arg_types, list(arg_names or []))
        self.result_types = [TensorType.of(t) for t in result_types]
        self.arg_attrs = arg_attrs if arg_attrs is not None else [{} for _ in arg_types]
        self.attrs = dict(attrs or {})
        self.loc: str | None = None
        self.meta: dict = {}

    @property
    def args(self) -> list[BlockArgument]:
        return self.body.args

    @property
    def return_op(self) -> Operation | None:
        t = self.body.terminator
        return t if t is not None and t.name == RETURN else None

    @property
    def outputs(self) -> list[Value]:
        r = self.return_op
        return list(r.operands) if r is not None else []

    def set_outputs(self, values: Iterable[Value]) -> None:
        values = list(values)
        r = self.return_op
        if r is None:
            self.body.append(Operation(RETURN, values))
        else:
            r.set_operands(values)
        self.result_types = [v.type for v in values]

    def add_argument(self, type: TensorType, name: str | None = None, attrs: dict | None = None):
        a = self.body.add_argument(TensorType.of(type), name)
        self.arg_attrs.append(dict(attrs or {}))
        return a

    def erase_argument(self, index: int) -> None:
        self.body.erase_argument(index)
        del self.arg_attrs[index]

    def walk(self) -> Iterator[Operation]:
        for op in list(self.body.ops):
            yield from op.walk()

    @property
    def ops(self) -> list[Operation]:
        return self.body.ops

    def clone(self) -> "Function":
        from .clone import clone_function
        return clone_function(self)

    def __str__(self) -> str:
        from .printer import print_function
        return print_function(self)


class Module:
    def __init__(self, functions: Iterable[Function] = ()):
        self.functions: list[Function] = list(functions)

    def get(self, name: str) -> Function:
        for f in self.functions:
            if f.name == name:
                return f
        raise KeyError(f"no function @{name} in module")

    def add(self, f: Function) -> Function:
        self.functions.append(f)
        return f

    def __str__(self) -> str:
        from .printer import print_module
        return print_module(self)


class Builder:
    """Creates ops at an insertion point; result types come from the op table's shape rule."""

    def __init__(self, block: Block, index: int | None = None, loc: str | None = None):
        self.block = block
        self.index = index   # None: append at the end
        self.loc = loc

    @classmethod
    def before(cls, op: Operation) -> "Builder":
        return cls(op.parent, op.parent.ops.index(op), op.loc)

    @classmethod
    def at_end(cls, block: Block) -> "Builder":
        """Append before the block's terminator if it has one."""
        t = block.terminator
        if t is not None and t.name in (RETURN, YIELD):
            return cls(block, len(block.ops) - 1)
        return cls(block)

    def insert(self, op: Operation) -> Operation:
        if op.loc is None:
            op.loc = self.loc
        if self.index is None:
            self.block.append(op)
        else:
            self.block.insert(self.index, op)
            self.index += 1
        return op

    def create(self, name: str, operands=(), attrs: dict | None = None, result_types=None,
               loc: str | None = None) -> Operation:
        """Create ``gradc.<name>`` (or a full dotted name); types inferred when not given."""
        full = name if "." in name else f"gradc.{name}"
        attrs = dict(attrs or {})
        if result_types is None:
            opdef = registry.get(full.split(".", 1)[1])
            result_types = [TensorType.of(t) for t in opdef.infer([v.type for v in operands], attrs)]
        return self.insert(Operation(full, operands, result_types, attrs, loc=loc or self.loc))

    def op(self, name: str, *operands, loc=None, **attrs) -> Value | tuple:
        """Create a table op and return its result (a tuple for multi-result ops)."""
        o = self.create(name, operands, attrs, loc=loc)
        return o.results[0] if len(o.results) == 1 else tuple(o.results)

    def constant(self, value, shape=(), dtype="float32", loc=None) -> Value:
        from .. import dtypes
        return self.op("constant", value=value, shape=list(shape), dtype=dtypes.as_dtype(dtype).name, loc=loc)
