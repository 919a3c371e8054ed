"""The tracer: run a Python function on proxy tensors and record a Function.

``trace(fn, specs)`` calls ``fn`` with one ``Proxy`` per ``ArgSpec`` (other spec
entries are passed through as ordinary Python values, so they end up baked into
the IR as constants or attributes). A ``Proxy`` speaks the whole tensor API
(``gradc.tensor_api``); every op it takes part in appends the table op to the
function through a ``Builder``, with result types from the op table and the
location comment ``file.py:LINE`` of the first stack frame outside the gradc
package (the user's line).

- Dispatch: ``Proxy._dispatch_priority`` is 2, above the eager ``Tensor``'s 1,
  so mixing them traces. A captured eager tensor (a closure variable, a
  factory result such as ``gradc.ones(3)``) becomes a ``gradc.constant`` whose
  ``value`` attribute holds its data as nested Python lists (a scalar for 0-d),
  with ``shape`` and ``dtype`` attributes, so no gradient flows to it. With
  ``lift_captured`` (``@gradc.compile``) a captured tensor that requires grad or
  has more than one element becomes an extra function argument instead, and an
  eager op on a tensor from outside the function (one that requires grad, or whose
  storage predates the trace: ``tensor._InternalCounter`` marks storage made during
  it) is recorded too (``dispatch.capturing``): a module's parameters and buffers
  are read afresh at every call, and parameters get gradients.
  Python scalars become 0-d constants (``_scalar``).
- In-place ops are functionalized: after ``x.add_(1)`` or ``x[0] = 2`` the proxy
  stands for the new value (``_assign_inplace``). A traced value written into an eager
  tensor (``running_mean.mul_(0.9)`` on a module's buffer) is ``_Trace.write_state``:
  the trace reads the new value from then on, and a write into a tensor from outside the
  function, or into an argument (``buf.add_(x)``), is listed in ``func.meta["state_writes"]``
  as ``(argument position, new value)`` for ``@gradc.compile`` to carry out.
  Modules called in the trace are listed with their scalar attributes, ``training`` among
  them (``meta["modules"]``). Views (reshape, permute,
  expand, basic indexing) do not alias under tracing, so in-place on a view
  raises ``TraceError``, and using a view after its base was modified in place
  raises ``TraceError`` too (eager code would see the update).
- ``gradc.autograd.grad`` of traced tensors is symbolic: the adjoint ops join the trace
  (``traced_grad``); ``x.requires_grad_()`` on a traced tensor that does not require grad
  makes it a leaf to differentiate with respect to (a ``detach``).
- Data-dependent Python (``bool()``, ``if x.sum() > 0``, ``item()``,
  ``tolist()``, ``numpy()``, ``float()``, ``int()``, ``__index__``, NumPy
  conversion) raises ``TraceError`` naming the user's file and line.
- Outputs: a tensor, or tensors nested in tuples, lists, named tuples and dicts,
  with None, numbers and strings beside them (returning an argument or an eager
  tensor is fine). ``func.meta`` records ``output_structure`` (``pytree``'s) and
  ``tensor_arg_positions`` (which positional arguments of ``fn`` are the
  function's arguments).
"""
from __future__ import annotations

import functools
import inspect
import os
import re
import sys
import threading
import weakref
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import dtypes
from ..arg_parser import bool_arg, parses
from ..autograd import grad_mode
from ..ops import dispatch, registry
from ..ops.registry import NONDIFF, VIEW, ShapeError
from ..tensor import (CPU, NON_LEAF_REQUIRES_GRAD, ONLY_FLOAT_REQUIRES_GRAD, Tensor, _InternalCounter, pop_counter,
                      push_counter)
from .pytree import flatten_output
from .core import Builder, Function, Value
from .emitter import IRTensor
from .errors import TraceError, TraceTypeError, add_location
from .saved_versions import SavedVersions
from .types import TensorType

_tracing = threading.local()     # .depth: traces running in this thread


def is_tracing() -> bool:
    """Whether this thread is tracing a function (``gradc.compiler.is_compiling``)."""
    return getattr(_tracing, "depth", 0) > 0

_PKG_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_$.]*")


@dataclass
class ArgSpec:
    """One tensor argument of a traced function."""
    name: str | None = None
    shape: tuple = ()
    dtype: Any = dtypes.float32
    requires_grad: bool = False


# ---- locations -----------------------------------------------------------------------------
_LIBRARY_DIRS = tuple({os.path.abspath(p) + os.sep for p in (sys.prefix, sys.base_prefix, os.path.dirname(os.__file__))})


@functools.lru_cache(maxsize=1024)
def _in_gradc(filename: str) -> bool:
    path = os.path.abspath(filename)
    return path == _PKG_DIR or path.startswith(_PKG_DIR + os.sep)


@functools.lru_cache(maxsize=1024)
def _in_library(filename: str) -> bool:
    """Whether ``filename`` is Python's or an installed package's code (``copy``, NumPy), not the user's."""
    return filename.startswith("<frozen ") or os.path.abspath(filename).startswith(_LIBRARY_DIRS)


def user_frame():
    """The innermost stack frame of the user's code: outside the gradc package and, where there
    is such a frame, outside Python's library and installed packages (``copy.deepcopy`` called
    by the user's line); None if there is none."""
    f = sys._getframe(1)
    while f is not None and _in_gradc(f.f_code.co_filename):
        f = f.f_back
    first = f
    while f is not None and (_in_gradc(f.f_code.co_filename) or _in_library(f.f_code.co_filename)):
        f = f.f_back
    return f if f is not None else first


def user_location() -> str | None:
    """``file.py:LINE`` of the user's code that is running now."""
    f = user_frame()
    if f is None:
        return None
    return f"{os.path.basename(f.f_code.co_filename)}:{f.f_lineno}"


def _raised_by_gradc_at(tb) -> str | None:
    """``file.py:LINE`` of the user's call into gradc that raised the exception whose traceback
    is ``tb``, or None when the user's own code raised it (its innermost frame is the user's)."""
    frames = []
    while tb is not None:
        frames.append((tb.tb_frame.f_code.co_filename, tb.tb_lineno))
        tb = tb.tb_next
    if not frames or not (_in_gradc(frames[-1][0]) or _in_library(frames[-1][0])):
        return None
    inside = False
    for filename, line in reversed(frames):
        if _in_gradc(filename):
            inside = True
        elif inside and not _in_library(filename):
            return f"{os.path.basename(filename)}:{line}"
    return None


def name_user_line(e: Exception) -> None:
    """Add the user's line to the message of an error gradc raised while tracing (a shape or
    dtype check of the tensor API, eager code's own errors: ``shape '[4, 2]' is invalid for
    input of size 6 (at model.py:12)``), unless it names it already."""
    add_location(e, _raised_by_gradc_at(e.__traceback__))


def _needs_values(what: str):
    return TraceError(f"{what} of a traced tensor is not supported under @gradc.compile: its values are unknown "
                      f"while tracing, at {user_location() or '<unknown location>'}")


def _data_dependent(what: str):
    loc = user_location() or "<unknown location>"
    return TraceError(f"data-dependent Python control flow is not supported under @gradc.compile: {what} "
                      f"of a traced tensor at {loc} (its value is unknown while tracing; use gradc.where(...) "
                      "for data-dependent choices)")


# ---- the trace -----------------------------------------------------------------------------
class _Trace:
    """The function being recorded, its builder, and the eager tensors captured so far."""

    def __init__(self, func: Function, lift: bool = False):
        self.func = func
        self.builder = Builder(func.body)
        self._captured: dict[int, tuple] = {}   # id(tensor) -> (tensor, version, value)
        self.lift = lift
        self.lifted: list[Tensor] = []          # captured tensors made function arguments, in order
        self.constants: list[tuple] = []        # (tensor, version) of those made constants
        self.state_writes: dict = {}            # target -> (argument Value, new value): in-place writes
        self.rewritten: set[int] = set()        # ids of eager tensors a traced value was written into
        self.modules: dict = {}                 # id(module) -> module, for the modules called
        self.lift_ids = frozenset()             # ids of small tensors to lift all the same (rebound before)
        self.view_detaches: set = set()         # the detaches after views taken under no_grad (see _apply)
        self.takes_input: dict = {}             # result Value -> name of its node whose backward takes the input
        self.grad_leaves: list = []             # the values made leaves that require grad by requires_grad_()
        self.requires_grad_args: list = []      # positions of the arguments requires_grad_() was called on
        self.freed: set = set()                 # ops whose saved tensors a grad without retain_graph freed
        self.saved_versions = SavedVersions()   # what eager autograd would save, at which versions
        self.view_written: set = set()          # the arguments written through a view of them

    def emit(self, name: str, operands, attrs):
        loc = user_location()
        try:
            return self.builder.create(name, list(operands), attrs, loc=loc)
        except ShapeError as e:      # the shape rule rejected the user's op: say where it was
            raise ShapeError(f"{e} (at {loc})" if loc else str(e)) from None

    def constant(self, array: np.ndarray, dtype) -> Value:
        dt = dtypes.as_dtype(dtype)
        value = array.item() if array.ndim == 0 else array.tolist()
        op = self.emit("constant", [], {"value": value, "shape": list(array.shape), "dtype": dt.name})
        return op.results[0]

    def capture(self, t: Tensor) -> Value:
        entry = self._captured.get(id(t))
        if entry is not None and entry[0] is t and (entry[1] == t._version_counter.value or entry[1] is None):
            return entry[2]
        if self.lift and (t.requires_grad or t.numel() > 1 or id(t) in self.lift_ids):
            v = self._lift(t)
            self._captured[id(t)] = (t, None, v)
            return v
        v = self.constant(np.asarray(t._data), t.dtype)
        self._captured[id(t)] = (t, t._version_counter.value, v)
        self.constants.append((t, t._version_counter.value))
        return v

    def apply_captured(self, op, inputs, attrs, node_name=None):
        """Record an op whose inputs are all eager tensors (``dispatch.capturing``): each becomes
        a captured value of this trace, wrapped as a proxy."""
        proxies = [Proxy(self.capture(x), self, requires_grad=x.requires_grad and grad_mode.is_grad_enabled(),
                         leaf=True) if isinstance(x, Tensor) else x for x in inputs]
        return Proxy._apply(op, proxies, attrs, node_name)

    def draw(self, op: str, shape, dtype) -> "Proxy":
        """``gradc.rand``/``randn`` called in the trace: the random op ``op`` (``ops/random.py``)
        on a broadcast zero of ``shape``, so each run of the function draws anew."""
        zero = Proxy(self.constant(np.zeros((), dtype.np), dtype), self)
        return dispatch.apply(op, zero.expand(*shape) if shape else zero)

    def note_module(self, module) -> None:
        """``module`` was called in the trace: its ``training`` flag and other Python scalar
        attributes (``p``, ``eps``, ``momentum``) chose what was recorded, so ``@gradc.compile``
        guards on them (``module_scalars``)."""
        self.modules.setdefault(id(module), module)

    def note_takes_input(self, outs, name: str, since: int) -> None:
        """A composition (``autograd.node.grad_fn_named``) traced from op ``since`` on returned
        ``outs`` (a proxy or a tuple/list) that eager autograd records as node ``name``, whose
        PyTorch backward takes the op's input (``autograd.node._TAKES_INPUT``: hardtanh, the
        pools, the pads, ...): its results made by the call are listed in
        ``func.meta["takes_input"]`` (the innermost such composition's name), for
        ``eager_graph.input_tied_gradients``."""
        made = {r for op in self.func.body.ops[since:] for r in op.results}
        for p in (outs if isinstance(outs, (tuple, list)) else (outs,)):
            if isinstance(p, Proxy) and p._trace is self and p.value in made:
                self.takes_input.setdefault(p.value, name)

    def write_state(self, t: Tensor, result) -> Tensor:
        """An in-place write of traced ``result`` into eager tensor ``t`` (``t.mul_(...)`` with
        ``t`` from outside the function: a BatchNorm's running statistics, a step counter).
        The rest of the trace reads the new value; for a tensor from outside the function the
        write is recorded (``func.meta["state_writes"]``) and ``@gradc.compile`` carries it
        out after each call, as eager code would have.  ``t`` becomes a function argument (a
        one-element tensor captured as a constant is turned into one), so each call reads its current value."""
        if t._base is not None:
            raise TraceError("in-place modification of a view of a tensor from outside the function is not "
                             "supported under @gradc.compile; write into the base tensor, at "
                             f"{user_location()}")
        value = self.operand(result)
        self.rewritten.add(id(t))
        if not self.lift or t._version_counter.internal:       # made during the trace: nothing to write back
            self._captured[id(t)] = (t, None, value)
            return t
        entry = self._captured.get(id(t))
        if entry is None or entry[0] is not t:
            self._lift(t)
        elif entry[1] is not None:             # compiled in as a constant: make it an argument
            arg = self._lift(t)
            entry[2].replace_all_uses_with(arg)
            entry[2].owner.erase()
            self.constants = [(c, v) for c, v in self.constants if c is not t]
        self._captured[id(t)] = (t, None, value)
        self.state_writes[("captured", id(t))] = (self.func.args[self._position(t)], value)
        return t

    def _position(self, t: Tensor) -> int:
        """The function argument position of lifted tensor ``t``."""
        k = next(k for k, c in enumerate(self.lifted) if c is t)
        return len(self.func.args) - len(self.lifted) + k

    def _lift(self, t: Tensor) -> Value:
        """A new function argument for captured tensor ``t`` (read afresh at every call)."""
        wants_grad = t.requires_grad and grad_mode.is_grad_enabled()
        arg = self.func.body.add_argument(TensorType(tuple(t.shape), t.dtype), f"captured{len(self.lifted)}")
        self.func.arg_attrs.append({"gradc.requires_grad": True} if wants_grad else {})
        self.lifted.append(t)
        return arg

    def operand(self, x) -> Value:
        """The IR value for an op input or function output."""
        if isinstance(x, Proxy):
            if x._trace is not self:
                raise TraceError("a traced tensor from another trace was used (did a proxy escape its "
                                 "@gradc.compile function?)")
            if x._stale is not None:
                raise TraceError(f"a view was used after its base tensor was modified in place at {x._stale}; "
                                 "under @gradc.compile views do not see later in-place updates (take the view "
                                 f"again after the update), at {user_location()}")
            return x.value
        if isinstance(x, Tensor):
            return self.capture(x)
        raise TypeError(f"cannot use a {type(x).__name__} as a traced tensor")


class Proxy(IRTensor):
    """A traced tensor: an IR ``Value`` plus the trace recording it."""

    _dispatch_priority = 2

    def __init__(self, value: Value, trace: _Trace, requires_grad: bool = False, leaf: bool = False):
        super().__init__(value, trace.builder)
        self._trace = trace
        self._requires_grad = bool(requires_grad)
        self._leaf = leaf
        self._base: Proxy | None = None     # the tensor this is a view of
        self._view_of = None                # (parent, view op, its attrs, its other operands)
        self._strides = None                # a view's strides in elements, as eagerly (None: row-major)
        self._views: list = []              # weak references to views of this tensor
        self._stale: str | None = None      # where the base was modified in place
        self._arg: Value | None = None      # the function argument this proxy was made for
        self._version = 0                   # (of a base) its in-place writes, as eager's version counter
        self._made_by = None                # the op that computed it, when recorded for backward
        self._node_name = None              # the grad_fn name it would have eagerly (saved_versions)

    # float16 emulated (autocast under @gradc.compile: the IR has no float16): the IR value is float32,
    # rounded to float16 after every op, and the proxy says float16, so the traced code promotes and
    # checks dtypes as eager code does; the compiled function returns such outputs as float16 tensors
    _half = False

    # ---- metadata ------------------------------------------------------------------------
    @property
    def dtype(self):
        return dtypes.float16 if self._half else self.value.type.dtype

    @property
    def device(self):
        return CPU

    @property
    def requires_grad(self) -> bool:
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, value):         # (as the eager Tensor's: x.requires_grad = True)
        if type(value) is not bool:
            raise RuntimeError("requires_grad must be a bool")
        self.requires_grad_(value)

    @property
    def grad_fn(self):
        return None

    @property
    def is_leaf(self) -> bool:      # (as eagerly: a tensor that does not require grad is a leaf)
        return self._leaf or not self._requires_grad

    @property
    def grad(self):
        return None

    def __repr__(self) -> str:
        rg = ", requires_grad=True" if self._requires_grad else ""
        return f"Proxy({self.value.type}{rg})"

    def __str__(self) -> str:
        if not _in_gradc(sys._getframe(1).f_code.co_filename):     # print(t) in the user's function
            from .._warnings import warn_at_user_code
            warn_at_user_code(f"printing a traced tensor inside a @gradc.compile function shows its type, not its "
                              f"values (unknown while tracing), and only once, when the function is compiled "
                              f"(at {user_location()}); print the compiled function's outputs instead",
                              with_held_output=True)
        return repr(self)

    # ---- op application ------------------------------------------------------------------
    @classmethod
    def _apply(cls, op, inputs, attrs, node_name=None):
        trace = next(x._trace for x in inputs if isinstance(x, Proxy))
        operands = [trace.operand(x) for x in inputs]
        created = trace.emit(op.name, operands, attrs)
        results = created.results
        half = op.name != "cast" and _half_inputs(inputs)
        if half and not _is_view(op, attrs):        # (a view's values are its base's: rounded already)
            results = [trace.emit("round_half", [r], {}).results[0] if r.type.dtype is dtypes.float32 else r
                       for r in results]
        grad_on = grad_mode.is_grad_enabled()
        needs = grad_on and not op.has(NONDIFF) and any(
            isinstance(x, (Proxy, Tensor)) and x.requires_grad and op.input_is_differentiable(i)
            for i, x in enumerate(inputs))
        if not grad_on and not op.has(NONDIFF) and any(
                isinstance(x, (Proxy, Tensor)) and x.requires_grad for x in inputs):
            # under no_grad inside the function: the results are constants to the autodiff pass,
            # as eager autograd records nothing (a detach in the IR)
            results = [trace.emit("detach", [r], {}).results[0] if r.type.dtype.is_floating_point else r
                       for r in results]
            if _is_view(op, attrs):     # (eagerly a view made in no_grad mode: @gradc.compile replays it so)
                trace.view_detaches.update(results)
        outs = []
        for k, r in enumerate(results):
            rg = needs and k in op.differentiable_outputs and r.type.dtype.is_floating_point
            outs.append(Proxy(r, trace, requires_grad=rg))
            outs[-1]._half = half and r.type.dtype is dtypes.float32
        if needs:
            trace.saved_versions.record(created, op, inputs, outs, node_name or op.grad_fn_name(attrs))
        if _is_view(op, attrs) and isinstance(inputs[0], Proxy):
            strides = _view_strides(inputs[0], op.name, attrs)
            if strides is not False:    # (a reshape that eagerly copies is no view)
                mark_view(outs[0], inputs[0], op.name, attrs, inputs[1:])
                outs[0]._strides = strides
        return outs[0] if len(outs) == 1 else tuple(outs)

    def _wrap(self, value: Value) -> "Proxy":
        return Proxy(value, self._trace)

    def _constant(self, array: np.ndarray) -> Value:
        return self._trace.constant(array, dtypes.from_numpy(array.dtype))   # with the user's location

    def _scalar(self, value, dtype):
        if dtypes.as_dtype(dtype) is not dtypes.float16:
            return super()._scalar(value, dtype)
        number = self._wrap(self._constant(np.asarray(np.float16(value), dtype=np.float32)))
        number._half = True          # (a number with an emulated float16 tensor: float16, as eagerly)
        return number

    def _assign_inplace(self, result):
        saved = self._trace.saved_versions
        saved.before_write(self, result)
        self._write(result)
        saved.after_write(self, result)

    def _write(self, result):
        if self._base is not None:
            self._write_through_view(result)
            return
        if (self._leaf and self._requires_grad and grad_mode.is_grad_enabled()
                and not (self._arg is not None and self._trace.lift and not self._made_leaf())):
            # (@gradc.compile checks a written argument at each call: leaf or not is no part of its key;
            # one the function made require grad is a leaf that requires grad whatever the caller's)
            raise RuntimeError("a leaf Variable that requires grad is being used in an in-place operation.")
        value = self._trace.operand(result)
        if self.value in self._trace.grad_leaves:    # (written under no_grad: still the leaf, with new data)
            self._trace.grad_leaves.append(value)
        self.value = value
        self._version += 1
        if self._arg is not None and self._trace.lift:      # the caller's tensor: written after the call
            self._trace.state_writes[("argument", self._arg)] = (self._arg, value)
        self._requires_grad = self._requires_grad or bool(getattr(result, "requires_grad", False))
        self._refresh_views()

    def _refresh_views(self):
        """After a write into this base tensor, each of its views is taken again from its parent
        (in the order they were made, so parents come first): views see the write, as eagerly.
        A view whose making was not recorded becomes stale: using it is an error."""
        loc = user_location()
        live = []
        for ref in list(self._views):       # (taking a view again registers a new one: not kept)
            view = ref()
            if view is None:
                continue
            live.append(ref)
            if view._view_of is None or view._view_of[1] is None:
                view._stale = loc
                continue
            parent, name, attrs, operands = view._view_of
            if parent._stale is not None:
                view._stale = parent._stale
                continue
            fresh = dispatch.apply(name, parent, *operands, **attrs)
            view.value = fresh.value
            view._requires_grad = fresh.requires_grad
        self._views = live

    def _write_through_view(self, result):
        """A write into a view is a write into its parent (the view op undone: index_put for an
        index, the inverse permutation, a reshape back) and so on up to the base, which then
        refreshes its views, this one included."""
        parent, name, attrs, operands = self._view_of or (None, None, None, ())
        if self._stale is not None or name is None:
            raise TraceError(f"in-place modification of a view whose base was modified in place at {self._stale} "
                             f"is not supported under @gradc.compile; take the view again, at {user_location()}"
                             if self._stale is not None else
                             "in-place modification of this view is not supported under @gradc.compile; clone() "
                             f"the view or write into its base tensor, at {user_location()}")
        base = self._base
        if base._arg is not None and self._trace.lift:   # (its leaf check at each call names the view)
            self._trace.view_written.add(base._arg)
        if base._leaf and base._requires_grad and grad_mode.is_grad_enabled() and not (
                base._arg is not None and self._trace.lift):
            raise RuntimeError("a view of a leaf Variable that requires grad is being used in an in-place operation.")
        if name == "detach":
            raise TraceError("an in-place write through detach() (memory shared with a tensor that has a history) is "
                             "not supported under @gradc.compile; write into the tensor itself under torch.no_grad(), "
                             f"or clone() the detached tensor, at {user_location()}")
        if name == "index":
            whole = dispatch.apply("index_put", parent, result, *operands, key=attrs["key"])
        elif name == "permute":
            inverse = [0] * len(attrs["dims"])
            for i, d in enumerate(attrs["dims"]):
                inverse[d] = i
            whole = result.permute(*inverse)
        elif name == "reshape" or (name == "expand" and self.numel() == parent.numel()):
            whole = result.reshape(tuple(parent.shape))
        else:               # an expand that repeats elements: eagerly the write is refused too
            raise RuntimeError("unsupported operation: more than one element of the written-to tensor refers to a "
                               "single memory location. Please clone() the tensor before performing the operation.")
        parent._assign_inplace(whole)
        base._node_name = "torch::autograd::CopySlices"      # (its grad_fn eagerly: saved_versions' errors)

    # ---- conversions that need data --------------------------------------------------------
    # (where eager code would fail whatever the values, the eager error: a tensor of several
    # elements is no Python number, a float tensor no index)
    def __bool__(self):
        if self.numel() != 1:
            raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
        raise _data_dependent("bool() (an if/while/and/or)")

    def item(self):
        if self.numel() != 1:
            raise RuntimeError(f"a Tensor with {self.numel()} elements cannot be converted to Scalar")
        raise _data_dependent("item()")

    def tolist(self):
        raise _data_dependent("tolist()")

    def numpy(self, *args, **kwargs):
        raise _data_dependent("numpy()")

    def __array__(self, *args, **kwargs):
        raise _data_dependent("NumPy conversion")

    def __float__(self):
        if self.numel() != 1:
            raise ValueError("only one element tensors can be converted to Python scalars")
        raise _data_dependent("float()")

    def __int__(self):
        if self.numel() != 1:
            raise ValueError("only one element tensors can be converted to Python scalars")
        raise _data_dependent("int()")

    def __index__(self):
        if self.dtype.is_floating_point or self.numel() != 1:
            raise TypeError("only integer tensors of a single element can be converted to an index")
        raise _data_dependent("__index__ (use as a Python int)")

    def __complex__(self):
        if self.numel() != 1:
            raise ValueError("only one element tensors can be converted to Python scalars")
        raise _data_dependent("complex()")

    def __format__(self, spec):
        if spec and self.ndim:
            raise TypeError("unsupported format string passed to Tensor.__format__")
        if spec:
            raise _needs_values(f"formatting with '{spec}'")
        return repr(self)

    def __reduce_ex__(self, protocol):
        raise _needs_values("pickling (gradc.save, pickle, copy)")

    def __deepcopy__(self, memo):
        raise _needs_values("copy.deepcopy")

    # ---- memory layout: what eager code would have, without data -----------------------------
    def stride(self, dim=None):
        from ..tensor_api import norm_dim
        strides = self._strides or _contiguous_strides(tuple(self.shape))
        return strides if dim is None else strides[norm_dim(dim, self.ndim)]

    def is_contiguous(self, memory_format=None):
        return is_contiguous(self)

    def element_size(self) -> int:
        return self.dtype.itemsize

    @property
    def itemsize(self) -> int:
        return self.dtype.itemsize

    @property
    def nbytes(self) -> int:
        return self.numel() * self.dtype.itemsize

    @property
    def is_cuda(self) -> bool:
        return False

    def cpu(self):
        return self

    @property
    def retains_grad(self) -> bool:
        return False

    # ---- autograd API of eager tensors: not inside a traced function -----------------------
    def _eager_only(self, what):
        raise TraceError(f"{what} inside a @gradc.compile function is not supported: call it on the compiled "
                         f"function's inputs or outputs, outside it, at {user_location()}")

    def register_hook(self, hook):
        self._eager_only("Tensor.register_hook")

    def _restride_(self, view, node_name):
        self._eager_only(f"an in-place shape change ({node_name[:-len('Backward1')].lower()}_)")

    def t_(self): self._restride_(None, "TBackward1")
    def transpose_(self, dim0, dim1): self._restride_(None, "TransposeBackward1")
    def swapdims_(self, dim0, dim1): self._restride_(None, "TransposeBackward1")
    def swapaxes_(self, axis0, axis1): self._restride_(None, "TransposeBackward1")
    def unsqueeze_(self, dim): self._restride_(None, "UnsqueezeBackward1")
    def squeeze_(self, dim=None): self._restride_(None, "SqueezeBackward1")

    def retain_grad(self):
        self._eager_only("Tensor.retain_grad")

    def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
        self._eager_only("Tensor.backward")

    def _grad_edge(self):        # what gradc.autograd.grad and .backward ask of each output
        self._eager_only("gradc.autograd.grad (or backward)")

    @parses("requires_grad_", "(bool requires_grad = True)")
    def requires_grad_(self, requires_grad=True):
        """``x.requires_grad_()`` on a traced tensor that does not require grad makes it a leaf
        of the trace's autograd graph: a ``detach`` of its value, which ``gradc.autograd.grad``
        differentiates with respect to (``ir/traced_grad.py``) and through which no gradient
        flows further back, as eagerly. On an argument that does not require grad (a
        physics-informed loss's coordinates) it is the caller's tensor that requires grad from
        then on: the argument is differentiated with respect to (``_make_argument_leaf``).
        Clearing the flag of an argument, or setting that of a captured tensor, is a TraceError."""
        requires_grad = bool_arg(requires_grad)
        if requires_grad == self._requires_grad:
            return self
        if self._requires_grad and not self._leaf:
            raise RuntimeError(NON_LEAF_REQUIRES_GRAD)
        if requires_grad and not self.dtype.is_floating_point:
            raise RuntimeError(ONLY_FLOAT_REQUIRES_GRAD)
        if requires_grad and self._arg is not None and self.value is self._arg:
            self._make_argument_leaf()
            return self
        if self._arg is not None or self.value in self._trace.func.args:
            self._eager_only("Tensor.requires_grad_ of the caller's tensor (an argument or a captured tensor)")
        if requires_grad:
            if self.value.uses or self.value.owner.name != "gradc.detach":    # (x.detach().requires_grad_(): that one)
                self.value = self._trace.emit("detach", [self.value], {}).results[0]
            self._trace.grad_leaves.append(self.value)
        else:
            self._trace.grad_leaves.remove(self.value)
        self._requires_grad, self._leaf = requires_grad, True
        return self

    def _made_leaf(self) -> bool:
        """Whether this is an argument the function called ``requires_grad_()`` on."""
        return self._trace.func.args.index(self._arg) in self._trace.requires_grad_args

    def _make_argument_leaf(self):
        """``x.requires_grad_()`` on argument ``x``, which does not require grad: the argument
        gets the ``gradc.requires_grad`` attribute and its position is listed in
        ``func.meta["requires_grad_args"]``, for ``@gradc.compile`` to differentiate with respect
        to it and to set the caller's tensor's flag at each call, as eager code does. Its uses
        so far (eagerly made without grad) read a ``detach`` of it instead."""
        func, arg = self._trace.func, self._arg
        if arg.uses:
            first = Builder(func.body, 0).create("detach", [arg], loc=user_location())
            arg.replace_uses_if(first.results[0], lambda op: op is not first)
        k = func.args.index(arg)
        func.arg_attrs[k]["gradc.requires_grad"] = True
        self._trace.requires_grad_args.append(k)
        self._requires_grad = True

    @property
    def data(self):
        self._eager_only("Tensor.data")

    def data_ptr(self):
        self._eager_only("Tensor.data_ptr (a traced tensor has no memory)")

    def untyped_storage(self):
        self._eager_only("Tensor.untyped_storage (a traced tensor has no memory)")

    def storage_offset(self):
        self._eager_only("Tensor.storage_offset")

    def cuda(self, device=None, non_blocking=False):
        self._eager_only("Tensor.cuda (moving a tensor between devices)")

    def detach_(self):
        self._eager_only("Tensor.detach_")

    def resize_(self, *sizes, memory_format=None):
        self._eager_only("Tensor.resize_")

    def resize_as_(self, other, memory_format=None):
        self._eager_only("Tensor.resize_as_")


# Python's own errors name a traced tensor's type as they name an eager one's ("unsupported operand
# type(s) for *: 'Tensor' and 'NoneType'", "type Tensor doesn't define __round__ method", and by
# the qualified name "property 'shape' of 'Tensor' object has no setter")
Proxy.__name__ = Proxy.__qualname__ = "Tensor"


def mark_view(view: "Proxy", parent: "Proxy", op_name=None, attrs=None, operands=()) -> None:
    """Record that ``view`` is a view of ``parent`` made by ``op_name`` (eagerly it would share
    its memory): a write through it is a write into its base, and a write into the base is seen
    through it (``Proxy._refresh_views``)."""
    base = parent._base if parent._base is not None else parent
    view._base = base
    view._view_of = (parent, op_name, dict(attrs or {}), tuple(operands))
    base._views.append(weakref.ref(view))


def _contiguous_strides(shape) -> tuple:
    strides, step = [], 1
    for n in reversed(shape):
        strides.append(step)
        step *= max(n, 1)
    return tuple(reversed(strides))


def _view_strides(parent: "Proxy", name, attrs):
    """The strides (in elements) an eager view made by ``name`` would have, worked out on a NumPy
    stand-in with the parent's layout whose memory is never read; None when row-major; False for
    a reshape that would have to copy (eagerly its result is no view)."""
    from ..tensor_api import decode_index
    shape = tuple(parent.shape)
    # (an IRTensor of the autodiff pass, a VJP rule's view, has no eager layout: row-major)
    probe = np.lib.stride_tricks.as_strided(np.zeros(1, np.int8), shape,
                                            getattr(parent, "_strides", None) or _contiguous_strides(shape))
    if name == "reshape":
        try:
            out = np.reshape(probe, tuple(attrs["shape"]), copy=False)
        except ValueError:
            return False
    elif name == "permute":
        out = probe.transpose(attrs["dims"])
    elif name == "expand":
        out = np.broadcast_to(probe, tuple(attrs["shape"]))
    elif name == "index":
        out = probe[tuple(decode_index(attrs["key"], []))]
    else:
        return None
    strides = tuple(out.strides)
    return None if not out.size or strides == _contiguous_strides(out.shape) else strides


def is_contiguous(proxy: "Proxy") -> bool:
    return proxy._strides is None or proxy._strides == _contiguous_strides(tuple(proxy.shape))


def _is_view(op, attrs) -> bool:
    if op.has(VIEW) or op.name == "detach":     # (a detached tensor shares its source's memory)
        return True
    return op.name == "index" and not any(e[0] == "tensor" for e in attrs.get("key", ()))


# ---- entry points --------------------------------------------------------------------------
def _symbol_name(fn, name) -> str:
    if name is None:
        name = getattr(fn, "__name__", None) or "traced"
    name = re.sub(r"[^A-Za-z0-9_]", "_", name).strip("_") or "traced"
    return name if not name[0].isdigit() else "_" + name


def _param_names(fn) -> list:
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return []
    return [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]


_SCALARS = (bool, int, float, str, type(None))


def module_scalars(module) -> tuple:
    """``(name, value)`` of a module's attributes that are Python scalars or None, in order."""
    return tuple((k, v) for k, v in module.__dict__.items() if type(v) in _SCALARS)


def _half_inputs(inputs) -> bool:
    """Whether an op's floating traced inputs are all emulated float16 ones (and there is one)."""
    floats = [x for x in inputs if isinstance(x, Proxy) and x.value.type.dtype.is_floating_point]
    return bool(floats) and all(x._half for x in floats)


def emulated_half(x) -> "Proxy":
    """Autocast's cast of float32 ``x`` to float16 in a trace: its values rounded to float16, held as
    float32 (``Proxy._half``); an eager tensor from outside the function (a parameter) is captured.
    (An explicit ``.half()`` in a compiled function stays an error: only autocast's casts emulate.)"""
    round_half = registry.get("round_half")
    if isinstance(x, Proxy):
        if x._half:
            return x
        out = Proxy._apply(round_half, [x], {})
    elif dispatch._outside(x):
        out = dispatch.capturing[-1].apply_captured(round_half, [x], {})
    else:                       # made by the function itself: a constant of the trace, as its eager ops
        trace = dispatch.capturing[-1]
        out = Proxy._apply(round_half, [Proxy(trace.constant(np.asarray(x._data), x.dtype), trace)], {})
    out._half = True
    return out


def trace(fn, specs, name: str | None = None, lift_captured: bool = False, lift_ids=frozenset(),
          source=None) -> Function:
    """Record ``fn(*args)`` as a Function; ``specs`` gives one entry per positional argument.

    An ``ArgSpec`` entry becomes a function argument (named by ``ArgSpec.name`` or
    else the parameter's name; ``{"gradc.requires_grad": True}`` in its arg_attrs
    when it requires grad); any other entry is passed to ``fn`` unchanged.

    ``lift_captured`` (what ``@gradc.compile`` uses): an eager tensor the function captures
    that requires grad or has more than one element (a module's parameters and buffers, a
    mask) becomes an extra argument after the given ones, named ``captured<k>``, instead of
    a constant: the compiled function reads its current value at every call, and gradients
    reach it.  ``func.meta["captured"]`` lists those tensors; ``func.meta["constants"]``
    lists ``(tensor, version)`` of the captured tensors baked in as constants (one-element ones without grad);
    ``lift_ids``: ids of small tensors lifted all the same (``@gradc.compile`` saw them rebound).
    ``source``: the user's function, which errors name, when ``fn`` is a wrapper of it.
    """
    specs = list(specs)
    params = _param_names(fn)
    types, names, arg_attrs, positions = [], [], [], []
    for i, s in enumerate(specs):
        if not isinstance(s, ArgSpec):
            continue
        dt = dtypes.as_dtype(s.dtype)
        if s.requires_grad and not dt.is_floating_point:
            raise RuntimeError(ONLY_FLOAT_REQUIRES_GRAD)
        n = s.name if s.name is not None else (params[i] if i < len(params) else None)
        types.append(TensorType(tuple(int(d) for d in s.shape), dt))
        names.append(n if n is not None and _NAME_RE.fullmatch(n) else None)
        arg_attrs.append({"gradc.requires_grad": True} if s.requires_grad else {})
        positions.append(i)
    func = Function(_symbol_name(fn, name), types, names, arg_attrs=arg_attrs)
    tr = _Trace(func, lift=lift_captured)
    tr.lift_ids = lift_ids
    args, k = [], 0
    for s in specs:
        if isinstance(s, ArgSpec):
            p = Proxy(func.args[k], tr, requires_grad=s.requires_grad, leaf=True)
            p._arg = func.args[k]
            args.append(p)
            k += 1
        else:
            args.append(s)
    if lift_captured:
        dispatch.capturing.append(tr)
        push_counter(_InternalCounter)
    _tracing.depth = getattr(_tracing, "depth", 0) + 1
    try:
        out = fn(*args)
    except Exception as e:
        name_user_line(e)
        raise
    finally:
        _tracing.depth -= 1
        if lift_captured:
            dispatch.capturing.pop()
            pop_counter()
    outs: list = []
    structure = flatten_output(out, outs, (Proxy, Tensor))
    if structure is None or not outs:
        what = "a tensor, or tensors in tuples, lists and dicts"
        if isinstance(out, (tuple, list)):
            for k, o in enumerate(out):
                if flatten_output(o, [], (Proxy, Tensor)) is None:
                    raise TraceTypeError(f"{_returns(source or fn)} {what}, got {_kind(o)} as output {k}")
        raise TraceTypeError(f"{_returns(source or fn)} {what}, got {_kind(out)}")
    func.set_outputs([tr.operand(o) for o in outs])
    func.meta["half_outputs"] = [k for k, o in enumerate(outs) if isinstance(o, Proxy) and o._half]
    func.loc = _definition_location(fn)
    func.meta["output_structure"] = structure
    func.meta["tensor_arg_positions"] = positions
    func.meta["captured"] = tr.lifted
    func.meta["constants"] = tr.constants
    func.meta["view_detaches"] = tr.view_detaches
    func.meta["state_writes"] = [(func.args.index(arg), v) for arg, v in tr.state_writes.values()]
    func.meta["takes_input"] = tr.takes_input
    func.meta["requires_grad_args"] = tr.requires_grad_args
    func.meta["freed"] = tr.freed
    func.meta["grad_leaves"] = tr.grad_leaves
    func.meta["stale_saves"] = tr.saved_versions.stale()
    func.meta["view_written"] = {func.args.index(arg) for arg in tr.view_written}
    # the in-place writes' new values are extra outputs after the function's own: @gradc.compile
    # writes them back after each call (``gradc dump-ir`` shows them so)
    if tr.state_writes:
        func.set_outputs(list(func.outputs) + [v for _, v in tr.state_writes.values()])
    # taken after the trace: what a compiled call leaves them as (a forward may set some)
    func.meta["modules"] = [(m, module_scalars(m)) for m in tr.modules.values()]
    return func


def _returns(fn) -> str:
    """The start of the error for a function output the IR cannot hold."""
    where = _definition_location(fn)
    name = getattr(fn, "__name__", None) or type(fn).__name__
    return (f"{name}{f' (defined at {where})' if where else ''} returns a value the compiler cannot output: "
            "under @gradc.compile a function must return")


def _kind(value) -> str:
    """How an error names a non-tensor output: its type, with a word on generators and coroutines."""
    if inspect.isgenerator(value):
        return "a generator (generators cannot be compiled: return tensors)"
    if inspect.iscoroutine(value):
        value.close()
        return "a coroutine (an async function cannot be compiled)"
    if value is None:
        return "None"
    kind = type(value).__name__
    return f"{'an' if kind[0] in 'aeiou' else 'a'} {kind}"


def _definition_location(fn) -> str | None:
    code = getattr(fn, "__code__", None)
    if code is None:
        return None
    return f"{os.path.basename(code.co_filename)}:{code.co_firstlineno}"


def trace_from_examples(fn, examples, name: str | None = None) -> Function:
    """``trace`` with specs taken from example values: gradc Tensors and NumPy arrays become
    arguments (shape, dtype, requires_grad); anything else is passed through unchanged."""
    specs = []
    for x in examples:
        if isinstance(x, Tensor):
            specs.append(ArgSpec(None, tuple(x.shape), x.dtype, x.requires_grad))
        elif isinstance(x, np.ndarray):
            specs.append(ArgSpec(None, tuple(x.shape), dtypes.from_numpy(x.dtype), False))
        else:
            specs.append(x)
    return trace(fn, specs, name)
