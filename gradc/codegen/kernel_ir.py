"""Kernel IR: a small loop-level IR that both code generators (CPU, PTX) lower.

A ``Kernel`` has typed buffer parameters, an iteration space (a shape) and a body
of scalar SSA statements evaluated at every point ``(i0, i1, ...)`` of the space:

* ``Load(buffer, Index)``   reads ``buffer[offset + sum(strides[k] * i_k)]``; an
  ``Index`` maps the iteration point to an element offset in the buffer's flat
  storage, so broadcasting (stride 0), transposes and other views are just strides;
* ``Compute(op, operands, attrs)`` a scalar op named by the gradc op table (``add``,
  ``exp``, ``where``, ``cast{dtype}``, ``clamp{min,max}``, ``constant{value,dtype}`` ...);
* ``AxisIndex(axis)``        the iteration index along an axis, as i64;
* ``Reduce(kind, operand, axes)``  sum/max/min/prod of ``operand`` over ``axes`` of the
  space; its result varies only over the other axes and can feed an epilogue;
* ``Store(buffer, Index, value)``.

The reductions whose results the kernel computes with all reduce the same axes
(``Kernel.reduce_axes``, the *inner* axes); the other axes are the *outer* axes.  Per
outer point the generated code runs one loop over the reduced axes per reduction (in
program order), then one loop for the stores that depend on the reduced axes: softmax
is max-loop, sum-loop, store-loop in one kernel without intermediates in memory.

A kernel may also have *accumulations* (``Kernel.accumulations``): sums over outer axes
whose results are only stored, such as the column sums of a layernorm's backward beside
its row reductions.  Code generators add each point's operand into the stored element as
the outer loops run (after setting it to 0), so the kernel reads its inputs once for both
kinds of reduction.  ``split_reduce`` gives each thread its own partial slice of them.

Build kernels with ``KernelBuilder`` (``kb.input``, ``kb.load``, ``kb.op``,
``kb.reduce``, ``kb.store``, ``kb.build``); ``build_matmul`` builds a (batched)
matrix product as a sum-contraction that the backends recognise
(``match_contraction``).  ``str(kernel)`` prints the text form used by
``gradc dump-ir --stage kernels``.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Sequence

from .. import dtypes as _dt

DTYPES = ("f32", "f64", "i64", "i1")
FLOATS = ("f32", "f64")
REDUCE_KINDS = ("sum", "max", "min", "prod")
_REDUCE_ALIASES = {"amax": "max", "amin": "min"}


def ir_dtype(d) -> str:
    """Normalise a dtype (``'f32'``, ``'float32'``, gradc dtype, NumPy dtype) to an IR name."""
    if isinstance(d, str) and d in DTYPES:
        return d
    return _dt.as_dtype(d).ir_name


def np_dtype(d):
    return _dt.from_ir(ir_dtype(d)).np


def contiguous_strides(shape) -> tuple:
    strides, acc = [], 1
    for s in reversed(tuple(shape)):
        strides.append(acc)
        acc *= max(int(s), 1)
    return tuple(reversed(strides))


# ---------------------------------------------------------------------------------------------
# parameters and index expressions
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Buffer:
    """A kernel parameter: flat storage of ``numel(shape)`` elements (bool stored as i8)."""
    name: str
    dtype: str
    shape: tuple
    role: str = "input"          # "input" | "output"

    @property
    def numel(self) -> int:
        return math.prod(self.shape)

    def __str__(self) -> str:
        return f"%{self.name}: {self.dtype}[{','.join(map(str, self.shape))}] {self.role}"


@dataclass(frozen=True)
class Index:
    """Affine map from an iteration point to an element offset: ``offset + sum(strides[k]*i_k)``."""
    strides: tuple
    offset: int = 0

    @staticmethod
    def broadcast(shape, space, strides=None, offset=0) -> "Index":
        """Index of a value of logical ``shape`` broadcast (right-aligned) to ``space``.

        ``strides`` are the element strides of the logical shape (default: contiguous);
        size-1 and missing dims get stride 0.
        """
        shape, space = tuple(shape), tuple(space)
        if len(shape) > len(space):
            raise ValueError(f"cannot broadcast shape {list(shape)} to iteration space {list(space)}")
        strides = contiguous_strides(shape) if strides is None else tuple(strides)
        if len(strides) != len(shape):
            raise ValueError(f"strides {strides} do not match shape {list(shape)}")
        lead = len(space) - len(shape)
        out = [0] * lead
        for d, (s, st) in enumerate(zip(shape, strides)):
            if s == 1:
                out.append(0)
            elif s == space[lead + d]:
                out.append(int(st))
            else:
                raise ValueError(f"cannot broadcast shape {list(shape)} to iteration space {list(space)}")
        return Index(tuple(out), int(offset))

    def axes(self) -> frozenset:
        return frozenset(k for k, s in enumerate(self.strides) if s != 0)

    def extent(self, space) -> tuple:
        """(min, max) element offsets touched over a non-empty ``space``."""
        lo = hi = self.offset
        for s, n in zip(self.strides, space):
            if n > 0:
                lo += min(0, s * (n - 1))
                hi += max(0, s * (n - 1))
        return lo, hi

    def __str__(self) -> str:
        terms = [(f"i{k}" if s == 1 else f"{s}*i{k}") for k, s in enumerate(self.strides) if s != 0]
        if self.offset or not terms:
            terms.append(str(self.offset))
        return " + ".join(terms)


# ---------------------------------------------------------------------------------------------
# SSA values and statements
# ---------------------------------------------------------------------------------------------
class Value:
    """An SSA scalar value.  ``axes``: the iteration axes it varies over."""
    __slots__ = ("id", "dtype", "axes", "_kb")

    def __init__(self, id: int, dtype: str, axes: frozenset, kb=None):
        self.id, self.dtype, self.axes, self._kb = id, dtype, frozenset(axes), kb

    def __repr__(self) -> str:
        return f"%{self.id}:{self.dtype}"

    # arithmetic sugar (needs the builder that made the value)
    def _b(self, name, *xs):
        if self._kb is None:
            raise TypeError("this value has no builder; use KernelBuilder.op")
        return self._kb.op(name, *xs)

    def __add__(self, o): return self._b("add", self, o)
    def __radd__(self, o): return self._b("add", o, self)
    def __sub__(self, o): return self._b("sub", self, o)
    def __rsub__(self, o): return self._b("sub", o, self)
    def __mul__(self, o): return self._b("mul", self, o)
    def __rmul__(self, o): return self._b("mul", o, self)
    def __truediv__(self, o): return self._b("div", self, o)
    def __rtruediv__(self, o): return self._b("div", o, self)
    def __neg__(self): return self._b("neg", self)


@dataclass(frozen=True, eq=False)
class Load:
    result: Value
    buffer: Buffer
    index: Index


@dataclass(frozen=True, eq=False)
class Compute:
    result: Value
    op: str
    operands: tuple
    attrs: tuple = ()            # sorted (name, value) pairs

    @property
    def attr(self) -> dict:
        return dict(self.attrs)


@dataclass(frozen=True, eq=False)
class AxisIndex:
    result: Value
    axis: int


@dataclass(frozen=True, eq=False)
class Reduce:
    result: Value
    kind: str
    operand: Value
    axes: tuple


@dataclass(frozen=True, eq=False)
class Store:
    buffer: Buffer
    index: Index
    value: Value


@dataclass(eq=False)
class Kernel:
    name: str
    space: tuple
    params: tuple
    body: tuple
    reduce_axes: tuple = ()
    meta: dict = field(default_factory=dict)

    @property
    def inputs(self):
        return [p for p in self.params if p.role == "input"]

    @property
    def outputs(self):
        return [p for p in self.params if p.role == "output"]

    @property
    def outer_axes(self) -> tuple:
        return tuple(k for k in range(len(self.space)) if k not in self.reduce_axes)

    @property
    def reductions(self):
        """The inner reductions (over ``reduce_axes``)."""
        red = tuple(self.reduce_axes)
        return [s for s in self.body if isinstance(s, Reduce) and tuple(s.axes) == red]

    @property
    def accumulations(self):
        """Reductions over outer axes, only stored (see the module docstring)."""
        red = tuple(self.reduce_axes)
        return [s for s in self.body if isinstance(s, Reduce) and tuple(s.axes) != red]

    def accumulated_outputs(self) -> dict:
        """{output name: Reduce} for the outputs that accumulations store into."""
        acc = {r.result.id: r for r in self.accumulations}
        return {s.buffer.name: acc[s.value.id] for s in self.body
                if isinstance(s, Store) and s.value.id in acc}

    @property
    def numel(self) -> int:
        return math.prod(self.space)

    def defs(self) -> dict:
        """value id -> defining statement."""
        return {s.result.id: s for s in self.body if not isinstance(s, Store)}

    def __str__(self) -> str:
        return print_kernel(self)


# ---------------------------------------------------------------------------------------------
# op typing via the op table
# ---------------------------------------------------------------------------------------------
_BOOL_OPS = {"logical_and", "logical_or", "logical_not"}
_CMP_OPS = {"eq", "ne", "lt", "le", "gt", "ge"}
_FLOAT_ONLY = {"exp", "exp2", "log", "log2", "log10", "log1p", "expm1", "erf", "sqrt", "rsqrt", "tanh", "sigmoid", "sin", "cos", "div", "frac",
               "silu", "leaky_relu", "softplus", "log_sigmoid", "elu", "gelu", "tan", "atan", "atan2", "asin", "acos",
               "sinh", "cosh", "asinh", "acosh", "atanh"}
_ARITY = {"where": 3, "constant": 0}
_BINARY = {"add", "sub", "mul", "div", "pow", "atan2", "maximum", "minimum", "logical_and", "logical_or"} | _CMP_OPS


def result_dtype(op: str, in_dtypes: Sequence[str], attrs: dict) -> str:
    """Result dtype of a scalar op, following the op table's dtype rules."""
    from ..ops import registry
    registry.get(op)                                 # unknown op -> KeyError naming it
    if op == "constant":
        return ir_dtype(attrs["dtype"])
    if op == "cast":
        return ir_dtype(attrs["dtype"])
    arity = _ARITY.get(op, 2 if op in _BINARY else 1)
    if len(in_dtypes) != arity:
        raise TypeError(f"kernel op '{op}' takes {arity} operands, got {len(in_dtypes)}")
    if op in _CMP_OPS:
        if in_dtypes[0] != in_dtypes[1]:
            raise TypeError(f"kernel op '{op}': operand dtypes differ ({in_dtypes[0]}, {in_dtypes[1]})")
        return "i1"
    if op in _BOOL_OPS:
        if any(d != "i1" for d in in_dtypes):
            raise TypeError(f"kernel op '{op}' expects i1 operands, got {list(in_dtypes)}")
        return "i1"
    if op == "where":
        if in_dtypes[0] != "i1" or in_dtypes[1] != in_dtypes[2]:
            raise TypeError(f"kernel op 'where' expects (i1, T, T), got {list(in_dtypes)}")
        return in_dtypes[1]
    if len(set(in_dtypes)) != 1:
        raise TypeError(f"kernel op '{op}': operand dtypes differ {list(in_dtypes)}; insert a cast")
    if op in _FLOAT_ONLY and in_dtypes[0] not in FLOATS:
        raise TypeError(f"kernel op '{op}' expects a floating point operand, got {in_dtypes[0]}")
    return in_dtypes[0]


# ---------------------------------------------------------------------------------------------
# builder
# ---------------------------------------------------------------------------------------------
class KernelBuilder:
    """Builds a ``Kernel``.  Example (softmax over the last axis of ``x: f32[N, M]``)::

        kb = KernelBuilder("softmax", space=(N, M))
        x = kb.load(kb.input("x", "f32", (N, M)))
        m = kb.reduce("max", x, axes=(1,))
        e = kb.op("exp", kb.op("sub", x, m))
        kb.store(kb.output("out", "f32", (N, M)), kb.op("div", e, kb.reduce("sum", e, axes=(1,))))
        kernel = kb.build()
    """

    def __init__(self, name: str, space: Sequence[int]):
        self.name = name
        self.space = tuple(int(s) for s in space)
        self.params: list[Buffer] = []
        self.body: list = []
        self._next = 0

    # -- parameters --------------------------------------------------------------------------
    def param(self, name, dtype, shape, role) -> Buffer:
        if any(p.name == name for p in self.params):
            raise ValueError(f"kernel '{self.name}' already has a parameter named '{name}'")
        if role not in ("input", "output"):
            raise ValueError(f"buffer role must be 'input' or 'output', got {role!r}")
        b = Buffer(name, ir_dtype(dtype), tuple(int(s) for s in shape), role)
        self.params.append(b)
        return b

    def input(self, name, dtype, shape) -> Buffer:
        return self.param(name, dtype, shape, "input")

    def output(self, name, dtype, shape) -> Buffer:
        return self.param(name, dtype, shape, "output")

    # -- values --------------------------------------------------------------------------------
    def _value(self, dtype, axes) -> Value:
        v = Value(self._next, dtype, axes, self)
        self._next += 1
        return v

    def _index(self, buf: Buffer, index, broadcast_from_shape, strides, offset, default) -> Index:
        if index is not None:
            if broadcast_from_shape is not None or strides is not None:
                raise ValueError("give either index= or broadcast_from_shape=/strides=")
            idx = index if isinstance(index, Index) else Index(tuple(index), offset)
            if len(idx.strides) != len(self.space):
                raise ValueError(f"index {idx.strides} has {len(idx.strides)} strides; the iteration "
                                 f"space {list(self.space)} has {len(self.space)} axes")
        elif broadcast_from_shape is None and strides is None and default is not None:
            idx = default
        else:
            shape = buf.shape if broadcast_from_shape is None else tuple(broadcast_from_shape)
            idx = Index.broadcast(shape, self.space, strides, offset)
        if self.space and all(n > 0 for n in self.space) and buf.numel > 0:
            lo, hi = idx.extent(self.space)
            if lo < 0 or hi >= buf.numel:
                raise IndexError(f"index [{idx}] of %{buf.name} reaches elements {lo}..{hi}, outside its "
                                 f"{buf.numel} elements")
        return idx

    def load(self, buf: Buffer, *, broadcast_from_shape=None, strides=None, offset=0, index=None) -> Value:
        """Load ``buf`` at each point of the space.

        Default: the buffer's shape broadcast (right-aligned) to the space.
        ``broadcast_from_shape``: the logical shape of the value if it differs from ``buf.shape``
        (e.g. a reshape); ``strides``/``offset``: element strides of that logical shape for
        views (transpose: ``strides=(1, rows)``); ``index``: an explicit ``Index`` or a tuple
        of one stride per iteration axis.
        """
        if buf not in self.params:
            raise ValueError(f"buffer %{buf.name} is not a parameter of kernel '{self.name}'")
        if buf.role != "input":
            raise ValueError(f"load from %{buf.name}, which is an output (kernels read inputs only)")
        idx = self._index(buf, index, broadcast_from_shape, strides, offset, None)
        v = self._value(buf.dtype, idx.axes())
        self.body.append(Load(v, buf, idx))
        return v

    def constant(self, value, dtype) -> Value:
        dtype = ir_dtype(dtype)
        value = bool(value) if dtype == "i1" else int(value) if dtype == "i64" else float(value)
        v = self._value(dtype, ())
        self.body.append(Compute(v, "constant", (), (("dtype", dtype), ("value", value))))
        return v

    def index(self, axis: int) -> Value:
        """The iteration index along ``axis`` (i64)."""
        if not 0 <= axis < len(self.space):
            raise ValueError(f"axis {axis} out of range for space {list(self.space)}")
        v = self._value("i64", (axis,))
        self.body.append(AxisIndex(v, axis))
        return v

    def op(self, name: str, *operands, **attrs) -> Value:
        """A scalar op from the op table; Python numbers become constants of a sibling's dtype."""
        if name == "constant":
            return self.constant(attrs["value"], attrs["dtype"])
        if name in ("clone", "detach"):
            return operands[0]
        if name == "fill":
            return self.constant(attrs["value"], operands[0].dtype)
        like = next((o.dtype for o in operands if isinstance(o, Value)), None)
        if name == "where" and len(operands) == 3:
            like = next((o.dtype for o in operands[1:] if isinstance(o, Value)), "f32")
        vals = []
        for i, o in enumerate(operands):
            if isinstance(o, Value):
                vals.append(o)
            elif name == "where" and i == 0:
                vals.append(self.constant(o, "i1"))
            else:
                vals.append(self.constant(o, like or ("f32" if isinstance(o, float) else "i64")))
        attrs = {k: v for k, v in attrs.items() if v is not None or k not in ("min", "max")}
        if name == "cast":
            attrs["dtype"] = ir_dtype(attrs["dtype"])
        dtype = result_dtype(name, [v.dtype for v in vals], attrs)
        if name == "cast" and vals[0].dtype == dtype:
            return vals[0]
        axes = frozenset().union(*(v.axes for v in vals)) if vals else frozenset()
        v = self._value(dtype, axes)
        self.body.append(Compute(v, name, tuple(vals), tuple(sorted(attrs.items()))))
        return v

    def reduce(self, kind: str, value: Value, axes: Sequence[int]) -> Value:
        """Reduce ``value`` over ``axes`` of the space (sum/max/min/prod; also mean, amax, amin)."""
        axes = tuple(sorted({a % len(self.space) for a in axes})) if self.space else ()
        if kind == "mean":
            n = math.prod(self.space[a] for a in axes)
            return self.op("div", self.reduce("sum", value, axes), self.constant(n, value.dtype))
        kind = _REDUCE_ALIASES.get(kind, kind)
        if kind not in REDUCE_KINDS:
            raise ValueError(f"unknown reduction '{kind}' (expected one of {REDUCE_KINDS})")
        dtype = value.dtype
        if kind in ("sum", "prod") and dtype == "i1":
            value, dtype = self.op("cast", value, dtype="i64"), "i64"
        v = self._value(dtype, value.axes - set(axes))
        self.body.append(Reduce(v, kind, value, axes))
        return v

    def store(self, buf: Buffer, value, *, broadcast_from_shape=None, strides=None, offset=0,
              index=None) -> None:
        """Store ``value`` into ``buf``.

        Default index: ``buf.shape`` broadcast to the space; when the kernel reduces and
        ``buf`` has as many elements as the outer axes, a contiguous index over the outer
        axes (so a ``[N]`` or ``[N, 1]`` output of a row reduction needs no arguments).
        """
        if not isinstance(value, Value):
            value = self.constant(value, buf.dtype)
        if buf.role != "output":
            raise ValueError(f"store into %{buf.name}, which is not an output")
        if value.dtype != buf.dtype:
            raise TypeError(f"store of a {value.dtype} value into %{buf.name}: {buf.dtype}; insert a cast")
        default = None
        red = next((s.axes for s in self.body if isinstance(s, Reduce) and s.result is value),
                   next((s.axes for s in self.body if isinstance(s, Reduce)), ()))
        if red and not (value.axes & set(red)):
            outer = [k for k in range(len(self.space)) if k not in red]
            if math.prod(self.space[k] for k in outer) == buf.numel:
                cs = contiguous_strides([self.space[k] for k in outer])
                st = [0] * len(self.space)
                for k, s in zip(outer, cs):
                    st[k] = s if self.space[k] != 1 else 0
                default = Index(tuple(st), 0)
        idx = self._index(buf, index, broadcast_from_shape, strides, offset, default)
        missing = set(value.axes) - idx.axes()
        missing = {k for k in missing if self.space[k] != 1}
        if missing:
            raise ValueError(f"store into %{buf.name}: the value varies over axes {sorted(missing)} but the "
                             f"index [{idx}] does not (elements would be overwritten)")
        self.body.append(Store(buf, idx, value))

    def build(self) -> Kernel:
        if not any(isinstance(s, Store) for s in self.body):
            raise ValueError(f"kernel '{self.name}' stores nothing")
        self._fold_scaled_accumulations()
        red = inner_reduce_axes(self.name, self.body)
        kernel = Kernel(self.name, self.space, tuple(self.params), tuple(self.body), tuple(red))
        check_accumulations(kernel)
        return kernel

    def _fold_scaled_accumulations(self) -> None:
        """With reductions over two axis sets, a sum over one set whose result is only scaled
        by constants (``mean``, a loss's 1/N) before it is stored becomes a sum of the scaled
        operand, stored directly: an accumulation (a reassociation, as fast-math would do)."""
        reds = [s for s in self.body if isinstance(s, Reduce)]
        sets = list(dict.fromkeys(r.axes for r in reds))
        if len(sets) < 2:
            return
        users: dict = {}
        for s in self.body:
            for o in (s.operands if isinstance(s, Compute) else (s.operand,) if isinstance(s, Reduce)
                      else (s.value,) if isinstance(s, Store) else ()):
                users.setdefault(o.id, []).append(s)
        consts = {s.result.id for s in self.body if isinstance(s, Compute) and s.op == "constant"}

        def scaling(vid, u):
            """The constant ``u`` scales ``vid`` by (mul/div), or None."""
            if not (isinstance(u, Compute) and u.op in ("mul", "div") and len(u.operands) == 2):
                return None
            a, c = u.operands
            if u.op == "mul" and a.id != vid:
                a, c = c, a
            return c if a.id == vid and c.id in consts and c.id != vid else None

        def only_scaled(vid) -> bool:
            return all(isinstance(u, Store) or (scaling(vid, u) is not None and only_scaled(u.result.id))
                       for u in users.get(vid, ()))

        def stored_only(axes) -> bool:      # (up to scaling by constants)
            return all(r.kind == "sum" and only_scaled(r.result.id) for r in reds if r.axes == axes)

        def foldable(axes) -> bool:
            return stored_only(axes) and any(not isinstance(u, Store) for r in reds if r.axes == axes
                                             for u in users.get(r.result.id, ()))

        computing = [a for a in sets if not stored_only(a)]
        if len(computing) > 1:
            return               # inner_reduce_axes reports the conflict
        inner = computing[0] if computing else _set_with_last_axis(sets)
        paths = []              # (reduce, [(op, constant)], store)

        def walk(r, vid, chain):
            for u in users.get(vid, ()):
                if isinstance(u, Store):
                    paths.append((r, chain, u))
                else:
                    walk(r, u.result.id, chain + [(u.op, scaling(vid, u))])
        folded = [r for r in reds if r.axes != inner and foldable(r.axes)]
        for r in folded:
            walk(r, r.result.id, [])
        if not folded:
            return
        drop = set()
        for r, chain, st in paths:
            drop.add(id(r))
            drop.add(id(st))
        for r in folded:            # the scaling statements between the reduction and its stores
            stack = [r.result.id]
            while stack:
                for u in users.get(stack.pop(), ()):
                    if not isinstance(u, Store):
                        drop.add(id(u))
                        stack.append(u.result.id)
        self.body = [s for s in self.body if id(s) not in drop]
        for r, chain, st in paths:
            v = r.operand
            for op, c in chain:
                v = self.op(op, v, c)
            self.store(st.buffer, self.reduce("sum", v, r.axes), index=st.index)


def inner_reduce_axes(name: str, body) -> tuple:
    """The axes of the reductions whose results the kernel computes with (one set at most);
    without such, those of the first reduction, or of a reduction over the last axis."""
    reds = [s for s in body if isinstance(s, Reduce)]
    sets = list(dict.fromkeys(r.axes for r in reds))
    if len(sets) <= 1:
        return sets[0] if sets else ()
    red_ids = {r.result.id: r.axes for r in reds}
    used = {red_ids[o.id] for s in body if isinstance(s, Compute) for o in s.operands if o.id in red_ids}
    used |= {red_ids[s.operand.id] for s in reds if s.operand.id in red_ids}
    if len(used) > 1:
        raise ValueError(f"kernel '{name}' computes with reductions over {sorted(used)}; only one axis set "
                         "may feed computations (the others can only be stored)")
    if used:
        return used.pop()
    return _set_with_last_axis(sets)


def _set_with_last_axis(sets) -> tuple:
    """Of several reduction axis sets, the one holding the highest axis (rows before columns)."""
    last = max(a for axes in sets for a in axes)
    return next(axes for axes in sets if last in axes)


def check_accumulations(kernel: Kernel) -> None:
    """Accumulations are sums over outer axes, each stored once into an output nothing else writes."""
    acc = kernel.accumulations
    if not acc:
        return
    if not kernel.reduce_axes:
        raise ValueError(f"kernel '{kernel.name}' has reductions over outer axes but no inner reduction")
    for r in acc:
        if set(r.axes) & set(kernel.reduce_axes):
            raise ValueError(f"kernel '{kernel.name}' reduces axes {kernel.reduce_axes}; a reduction over "
                             f"{r.axes} overlaps them (sums over outer axes must leave the inner ones alone)")
        if r.kind != "sum":
            raise ValueError(f"kernel '{kernel.name}': a reduction over outer axes {r.axes} must be a sum "
                             f"(got {r.kind}); only sums accumulate")
    ids = {r.result.id for r in acc}
    writers: dict = {}
    for s in kernel.body:
        if isinstance(s, Store):
            writers.setdefault(s.buffer.name, []).append(s.value.id)
        elif isinstance(s, Compute) and any(o.id in ids for o in s.operands):
            raise ValueError(f"kernel '{kernel.name}': a reduction over outer axes can only be stored, "
                             f"but '{s.op}' reads it")
    for name, vals in writers.items():
        if any(v in ids for v in vals) and len(vals) != 1:
            raise ValueError(f"kernel '{kernel.name}': output %{name} holds a reduction over outer axes and "
                             "must be written by that one store")


# ---------------------------------------------------------------------------------------------
# matmul as a contraction
# ---------------------------------------------------------------------------------------------
def build_matmul(name, a_shape, b_shape, dtype="f32", *, a_strides=None, b_strides=None,
                 a_offset=0, b_offset=0, a_storage=None, b_storage=None, a_name="a", b_name="b",
                 out_name="out", epilogue=None) -> Kernel:
    """``out = a @ b`` with ``numpy.matmul`` semantics (1-D operands, broadcast batch dims).

    The space is ``(*batch, M, N, K)`` with K reduced.  ``a_strides``/``b_strides`` are element
    strides of the operands' logical shapes (views, e.g. a transpose) and ``a_storage``/
    ``b_storage`` the shapes of the underlying buffers (default: the logical shapes).
    ``epilogue(kb, acc, idx)``
    may return a new value to store instead of the accumulator (``idx``: the builder's space
    axes ``(batch..., m, n)``), e.g. ``lambda kb, acc, idx: kb.op("relu", acc)``.
    """
    from ..ops.rules import broadcast_shapes
    a_shape, b_shape = tuple(a_shape), tuple(b_shape)
    am = a_shape if len(a_shape) > 1 else (1,) + a_shape
    bm = b_shape if len(b_shape) > 1 else b_shape + (1,)
    a_st = contiguous_strides(a_shape) if a_strides is None else tuple(a_strides)
    b_st = contiguous_strides(b_shape) if b_strides is None else tuple(b_strides)
    am_st = a_st if len(a_shape) > 1 else (0,) + a_st
    bm_st = b_st if len(b_shape) > 1 else b_st + (0,)
    if am[-1] != bm[-2]:
        raise ValueError(f"matmul: shapes {list(a_shape)} and {list(b_shape)} do not contract")
    batch = broadcast_shapes("matmul", am[:-2], bm[:-2])
    M, K, N = am[-2], am[-1], bm[-1]
    space = tuple(batch) + (M, N, K)
    nb = len(batch)

    def index(shape, st, kind):
        lead = nb - (len(shape) - 2)
        strides = [0] * len(space)
        for d in range(len(shape) - 2):
            if shape[d] != 1:
                strides[lead + d] = st[d]
        r, c = st[-2], st[-1]
        if kind == "a":
            strides[nb], strides[nb + 2] = (r if shape[-2] != 1 else 0), (c if shape[-1] != 1 else 0)
        else:
            strides[nb + 2], strides[nb + 1] = (r if shape[-2] != 1 else 0), (c if shape[-1] != 1 else 0)
        return Index(tuple(strides), 0)

    out_shape = tuple(batch) + ((M,) if len(a_shape) > 1 else ()) + ((N,) if len(b_shape) > 1 else ())
    kb = KernelBuilder(name, space)
    A = kb.input(a_name, dtype, a_shape if a_storage is None else a_storage)
    B = kb.input(b_name, dtype, b_shape if b_storage is None else b_storage)
    O = kb.output(out_name, dtype, out_shape)
    a = kb.load(A, index=replace(index(am, am_st, "a"), offset=a_offset))
    b = kb.load(B, index=replace(index(bm, bm_st, "b"), offset=b_offset))
    acc = kb.reduce("sum", kb.op("mul", a, b), axes=(nb + 2,))
    if epilogue is not None:
        acc = epilogue(kb, acc, tuple(range(nb + 2)))
    ost = contiguous_strides(tuple(batch) + (M, N))
    ost = tuple(0 if space[k] == 1 else s for k, s in enumerate(ost)) + (0,)
    kb.store(O, acc, index=Index(ost, 0))
    return kb.build()


@dataclass(frozen=True)
class Contraction:
    """A recognised ``sum_k a[.., m, k] * b[.., k, n]`` kernel: loads, axes and the reduce."""
    a: Load
    b: Load
    reduce: Reduce
    batch_axes: tuple
    m_axis: int
    n_axis: int
    k_axis: int


def match_contraction(kernel: Kernel) -> Contraction | None:
    """Recognise a matmul-like kernel: space ``(*batch, M, N, K)``, one sum over K of
    ``mul(load a, load b)`` where a does not vary over N and b not over M."""
    reds = kernel.reductions
    if len(reds) != 1 or reds[0].kind != "sum" or len(kernel.space) < 3 or kernel.accumulations:
        return None
    r = reds[0]
    nd = len(kernel.space)
    if r.axes != (nd - 1,):
        return None
    defs = kernel.defs()
    mul = defs.get(r.operand.id)
    if not (isinstance(mul, Compute) and mul.op == "mul" and r.operand.dtype in FLOATS):
        return None
    la, lb = (defs.get(o.id) for o in mul.operands)
    if not (isinstance(la, Load) and isinstance(lb, Load)):
        return None
    m, n, k = nd - 3, nd - 2, nd - 1
    if la.index.strides[n] != 0 and lb.index.strides[m] == 0:
        la, lb = lb, la
    if la.index.strides[n] != 0 or lb.index.strides[m] != 0:
        return None
    return Contraction(la, lb, r, tuple(range(nd - 3)), m, n, k)


def split_contraction(kernel: Kernel, c: Contraction):
    """Split a contraction kernel into (accumulator Buffer, epilogue Kernel | None, direct store).

    The epilogue kernel runs over ``(*batch, M, N)`` and reads the contraction result from a
    new input ``acc`` (contiguous ``(*batch, M, N)``, the contraction's dtype).  When the
    kernel only stores the result contiguously, ``direct`` is that Store and the epilogue is
    None.  Returns None if some other statement varies over K.
    """
    k_axis = c.k_axis
    skip = {c.a.result.id, c.b.result.id, c.reduce.operand.id}
    stores = [s for s in kernel.body if isinstance(s, Store)]
    space = kernel.space[:k_axis]
    acc_buf = Buffer("__acc", c.reduce.result.dtype, tuple(space), "input")
    contiguous = Index(tuple(0 if n == 1 else st for n, st in zip(space, contiguous_strides(space))) + (0,), 0)
    if (len(stores) == 1 and stores[0].value.id == c.reduce.result.id and len(kernel.body) == 5
            and stores[0].index == contiguous and stores[0].buffer.dtype == acc_buf.dtype):
        return acc_buf, None, stores[0]
    body, vals = [], {}

    def nv(v):
        return vals.setdefault(v.id, Value(v.id, v.dtype, v.axes - {k_axis}))

    for s in kernel.body:
        if isinstance(s, (Load, Compute)) and s.result.id in skip:
            continue
        if isinstance(s, Reduce):
            body.append(Load(nv(s.result), acc_buf, Index(contiguous.strides[:k_axis], 0)))
            continue
        if isinstance(s, Store):
            if s.index.strides[k_axis] != 0:
                return None
            body.append(Store(s.buffer, Index(s.index.strides[:k_axis], s.index.offset), nv(s.value)))
            continue
        if k_axis in s.result.axes or (isinstance(s, AxisIndex) and s.axis == k_axis):
            return None
        if isinstance(s, Load):
            body.append(Load(nv(s.result), s.buffer, Index(s.index.strides[:k_axis], s.index.offset)))
        elif isinstance(s, Compute):
            body.append(Compute(nv(s.result), s.op, tuple(nv(o) for o in s.operands), s.attrs))
        else:
            body.append(AxisIndex(nv(s.result), s.axis))
    used = {s.buffer.name for s in body if isinstance(s, (Load, Store))}
    params = (acc_buf,) + tuple(p for p in kernel.params if p.name in used)
    epi = Kernel(kernel.name + "_epilogue", tuple(space), params, tuple(body), (), {})
    return acc_buf, epi, None


# ---------------------------------------------------------------------------------------------
# normalisation: drop unit axes, merge axes that are contiguous for every access
# ---------------------------------------------------------------------------------------------
def coalesce(kernel: Kernel) -> Kernel:
    """Return an equivalent kernel over fewer axes: size-1 axes dropped, and adjacent axes
    merged where every load/store index is contiguous across them (both outer or both reduced,
    no ``AxisIndex`` on them).  Makes inner loops long and unit-stride for the vectorizer."""
    space = list(kernel.space)
    if any(n == 0 for n in space):
        return kernel
    idx_axes = {s.axis for s in kernel.body if isinstance(s, AxisIndex)}
    red = set(kernel.reduce_axes)
    acc_sets = [set(r.axes) for r in kernel.accumulations]

    def axis_class(a):
        return (a in red,) + tuple(a in A for A in acc_sets)
    accesses = [s.index for s in kernel.body if isinstance(s, (Load, Store))]
    # groups: lists of original axes forming one new axis
    groups: list[list[int]] = []
    for k in range(len(space)):
        if space[k] == 1 and k not in idx_axes:
            continue
        if groups:
            p = groups[-1][-1]
            same_class = axis_class(p) == axis_class(k)
            mergeable = same_class and p not in idx_axes and k not in idx_axes and all(
                ix.strides[p] == ix.strides[k] * space[k] for ix in accesses)
            if mergeable:
                groups[-1].append(k)
                continue
        groups.append([k])
    if len(groups) == len(space):
        return kernel
    new_space = tuple(math.prod(space[k] for k in g) for g in groups)
    new_axis = {}
    for j, g in enumerate(groups):
        for k in g:
            new_axis[k] = j

    def remap_index(ix: Index) -> Index:
        return Index(tuple(ix.strides[g[-1]] for g in groups), ix.offset)

    vals: dict[int, Value] = {}

    def nv(v: Value) -> Value:
        if v.id not in vals:
            vals[v.id] = Value(v.id, v.dtype, {new_axis[a] for a in v.axes if a in new_axis})
        return vals[v.id]

    body = []
    for s in kernel.body:
        if isinstance(s, Load):
            body.append(Load(nv(s.result), s.buffer, remap_index(s.index)))
        elif isinstance(s, Store):
            body.append(Store(s.buffer, remap_index(s.index), nv(s.value)))
        elif isinstance(s, Compute):
            body.append(Compute(nv(s.result), s.op, tuple(nv(o) for o in s.operands), s.attrs))
        elif isinstance(s, AxisIndex):
            if s.axis in new_axis:
                body.append(AxisIndex(nv(s.result), new_axis[s.axis]))
            else:
                body.append(Compute(nv(s.result), "constant", (), (("dtype", "i64"), ("value", 0))))
        elif isinstance(s, Reduce):
            axes = tuple(sorted({new_axis[a] for a in s.axes if a in new_axis}))
            body.append(Reduce(nv(s.result), s.kind, nv(s.operand), axes))
    red_new = tuple(sorted({new_axis[a] for a in kernel.reduce_axes if a in new_axis}))
    return Kernel(kernel.name, new_space, kernel.params, tuple(body), red_new, dict(kernel.meta))


# ---------------------------------------------------------------------------------------------
# printer
# ---------------------------------------------------------------------------------------------
def _fmt_attr(v) -> str:
    if isinstance(v, float):
        return repr(v)
    return str(v)


def print_kernel(k: Kernel) -> str:
    params = ", ".join(str(p) for p in k.params)
    head = f"kernel @{k.name}({params}) space [{', '.join(map(str, k.space))}]"
    if k.reduce_axes:
        head += f" reduce ({', '.join(map(str, k.reduce_axes))})"
    lines = [head + " {"]
    for s in k.body:
        if isinstance(s, Load):
            lines.append(f"  %{s.result.id} = load %{s.buffer.name}[{s.index}] : {s.result.dtype}")
        elif isinstance(s, Compute):
            if s.op == "constant":
                lines.append(f"  %{s.result.id} = constant {_fmt_attr(s.attr['value'])} : {s.result.dtype}")
                continue
            attrs = "".join(f" {{{', '.join(f'{a}={_fmt_attr(v)}' for a, v in s.attrs)}}}" for _ in [0] if s.attrs)
            ops = ", ".join(f"%{o.id}" for o in s.operands)
            lines.append(f"  %{s.result.id} = {s.op} {ops}{attrs} : {s.result.dtype}")
        elif isinstance(s, AxisIndex):
            lines.append(f"  %{s.result.id} = index i{s.axis} : i64")
        elif isinstance(s, Reduce):
            lines.append(f"  %{s.result.id} = reduce.{s.kind} %{s.operand.id} over "
                         f"({', '.join(f'i{a}' for a in s.axes)}) : {s.result.dtype}")
        elif isinstance(s, Store):
            lines.append(f"  store %{s.buffer.name}[{s.index}], %{s.value.id}")
    lines.append("}")
    return "\n".join(lines)
