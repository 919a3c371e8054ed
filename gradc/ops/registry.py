"""The op table: one ``OpDef`` per primitive op, the single source of truth.

Every op declares its IR name, traits, shape/dtype rule, NumPy reference, the
inputs/outputs its VJP needs saved, and its VJP written in gradc's own tensor API
(so the VJP runs unchanged on eager tensors, on tracer proxies and in the IR
autodiff pass, and double backward is the same rule applied again).
Lowerings for the code generators are attached by the backends, keyed by name.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Sequence


# Traits used by passes.
PURE = "pure"                # no side effects: CSE/DCE may touch it
ELEMENTWISE = "elementwise"  # output[i] depends on broadcast inputs[i] only
REDUCTION = "reduction"      # reduces over attrs['dims']
VIEW = "view"                # a pure reshaping of memory (reshape, transpose, expand, ...)
NONDIFF = "nondiff"          # has no gradient (comparisons, argmax, ...)
PIECEWISE_CONSTANT = "piecewise_constant"   # its gradient is zeros carrying no graph (floor, sign: zero_grad)
CONSTANT = "constant"        # materialises attrs['value']
RANDOM = "random"            # draws random numbers each run (ops/random.py): not PURE, never recomputed


class ShapeError(RuntimeError):
    """A shape or dtype rule rejected its operands; the message names op and shapes."""


class NoDerivative(RuntimeError):
    """Raised by the VJP of an op PyTorch has no derivative for (floor_divide, heaviside): eagerly
    when backward reaches the op's node; the autodiff pass emits a ``backward_error`` op instead,
    which raises it when the compiled backward runs. A traceback names it RuntimeError, as PyTorch's."""


NoDerivative.__name__ = NoDerivative.__qualname__ = "RuntimeError"
NoDerivative.__module__ = "builtins"


class KernelDtypeError(ShapeError, NotImplementedError):
    """An op PyTorch has no kernel for in the operands' dtype (``"pow" not implemented for 'Bool'``)."""


class EmptyReductionError(ShapeError, IndexError):
    """A max/min/argmax-like reduction over a dim of size 0 (PyTorch raises an IndexError)."""


class TypeInfo:
    """What a shape rule sees of an operand and returns for a result: shape and dtype.

    Compared and hashed by value, so treated as immutable. A plain slotted class, not a frozen
    dataclass: every eager op makes a few, and a frozen dataclass's ``__init__`` costs more
    than twice as much."""
    __slots__ = ("shape", "dtype")

    def __init__(self, shape, dtype):
        self.shape = shape
        self.dtype = dtype

    def __eq__(self, other):
        return type(other) is TypeInfo and self.shape == other.shape and self.dtype == other.dtype

    def __hash__(self):
        return hash((self.shape, self.dtype))

    def __repr__(self):
        return f"TypeInfo(shape={self.shape!r}, dtype={self.dtype!r})"

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def numel(self) -> int:
        n = 1
        for s in self.shape:
            n *= s
        return n


class VJPContext:
    """What a VJP rule sees: inputs, outputs and attrs of the forward op.

    ``inputs``/``outputs`` are tensor-likes (eager ``Tensor`` or IR proxy); an eager
    context only provides the ones the op declared in ``saves`` (others raise).
    ``needs_input_grad[i]`` tells which gradients are wanted. ``node_name`` is the eager node's
    grad_fn name (None in the IR autodiff pass): one table op spells several PyTorch functions
    (permute is also t and transpose), whose derivative formulas PyTorch writes with other ops.
    """
    node_name = None

    def __init__(self, inputs, outputs, attrs, needs_input_grad, input_types):
        self._inputs = inputs
        self._outputs = outputs
        self.attrs = attrs
        self.needs_input_grad = needs_input_grad
        self.input_types = input_types   # TypeInfo per input, always available

    def input(self, i):
        x = self._inputs[i]
        if x is None:
            raise RuntimeError(f"VJP read input {i}, which its op did not declare in `saves`")
        return x

    def output(self, i=0):
        y = self._outputs[i]
        if y is None:
            raise RuntimeError(f"VJP read output {i}, which its op did not declare in `saves`")
        return y

    def input_shape(self, i) -> tuple:
        return self.input_types[i].shape


@dataclass(frozen=True)
class OpDef:
    name: str                                        # IR name without the 'gradc.' prefix
    infer: Callable[[Sequence[TypeInfo], dict], list]  # -> list of TypeInfo, one per result
    forward: Callable[..., Any]                      # NumPy reference: (arrays..., **attrs) -> array or tuple
    vjp: Callable[[VJPContext, list], list] | None = None  # grads of outputs -> grads of inputs
    saves: tuple = ()                                # e.g. ("in0", "in1", "out0") needed by vjp
    traits: frozenset = frozenset({PURE})
    node_name: str | Callable[[dict], str] = ""      # eager grad_fn class name, e.g. "AddBackward0"
    num_inputs: int | None = 1                       # None: variadic
    num_outputs: int = 1
    differentiable_inputs: tuple | None = None       # input indices that can get gradients (None: all)
    differentiable_outputs: tuple = (0,)
    attr_names: tuple = ()                           # attrs the op accepts (verifier checks)

    def has(self, trait: str) -> bool:
        return trait in self.traits

    def grad_fn_name(self, attrs: dict) -> str:
        n = self.node_name
        if callable(n):
            return n(attrs)
        if n:
            return n
        n = self.__dict__.get("_default_node_name")      # (memoized on this frozen instance)
        if n is None:    # "index_put" -> "IndexPutBackward0"
            n = self.__dict__["_default_node_name"] = "".join(
                p.capitalize() for p in self.name.split("_")) + "Backward0"
        return n

    def differentiable_positions(self, n_inputs: int) -> tuple:
        """The input positions (of ``n_inputs``) that can have a gradient, memoized per count."""
        memo = self.__dict__.setdefault("_positions", {})
        hit = memo.get(n_inputs)
        if hit is None:
            hit = memo[n_inputs] = tuple(i for i in range(n_inputs) if self.input_is_differentiable(i))
        return hit

    def input_is_differentiable(self, i: int) -> bool:
        if NONDIFF in self.traits:
            return False
        return self.differentiable_inputs is None or i in self.differentiable_inputs


_TABLE: dict[str, OpDef] = {}


def register(op: OpDef) -> OpDef:
    if op.name in _TABLE:
        raise ValueError(f"op '{op.name}' registered twice")
    _TABLE[op.name] = op
    return op


def defop(name, *, infer, forward, vjp=None, **kw) -> OpDef:
    return register(OpDef(name=name, infer=infer, forward=forward, vjp=vjp, **kw))


def get(name: str) -> OpDef:
    try:
        return _TABLE[name]
    except KeyError:
        raise KeyError(f"unknown op 'gradc.{name}': it is not in the op table") from None


def all_ops() -> dict[str, OpDef]:
    return dict(_TABLE)


def vjp_rule(op: OpDef):
    """The op's VJP, or an error naming the op when it has none."""
    if op.vjp is None:
        raise NotImplementedError(f"the op table has no VJP rule for 'gradc.{op.name}'; "
                                  "it cannot be differentiated")
    return op.vjp
