"""Backward graph nodes: one ``Node`` subclass per PyTorch grad_fn name.

A node created by an op holds the op's table entry, its attrs, the saved tensors
its VJP declared, and edges (``next_functions``) to the nodes of its inputs.
Its backward is the table's VJP run on saved tensors with the tensor API, so with
``create_graph=True`` the backward itself is recorded and can be differentiated; the VJP
rules use the ops of PyTorch's derivative formulas, so such a gradient mostly has PyTorch's nodes.
Two kinds of node show PyTorch's one node where gradc computes with several table ops: a
``_FormulaNode`` for a backward function with derivatives of its own (tanh_backward under
create_graph=True: TanhBackwardBackward0), and a ``_CompositeNode`` for a function composed of
table ops (mse_loss: MseLossBackward0 with edges to input and target; ``grad_fn_named``).
"""
from __future__ import annotations

import itertools
import weakref
from types import MappingProxyType

from .. import autocast_state as _autocast
from ..ops import dispatch
from ..ops.registry import TypeInfo, VJPContext, vjp_rule
from . import anomaly_mode, grad_mode

_seq = itertools.count()
# Nodes that PyTorch implements by hand in C++: name() gives the C++ name (type name stays short).
CPP_NODES = frozenset({"AccumulateGrad", "CopySlices", "CopyBackwards"})
_classes: dict[str, type] = {}

FREED_MESSAGE = (
    "Trying to backward through the graph a second time (or directly access saved tensors after they have "
    "already been freed). Saved intermediate values of the graph are freed when you call .backward() or "
    "autograd.grad(). Specify retain_graph=True if you need to backward through the graph a second time or "
    "if you need to access saved tensors after calling backward.")


class RemovableHandle:
    _ids = itertools.count()

    def __init__(self, store: dict):
        self.id = next(self._ids)
        self._store = store

    def remove(self) -> None:
        self._store.pop(self.id, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


_NONE = MappingProxyType({})

# Whether a hook was ever registered on a leaf tensor or its AccumulateGrad (``_hook_dict``,
# ``Tensor.register_hook``): until then the engine's fast paths need not look at each leaf's.
leaf_hooks_seen = [False]


class Node:
    """Base class of every grad_fn. Subclasses differ only by name."""
    _next = ()
    # Hook tables, empty and shared until the first registration gives the node its own
    # (``_hook_dict``): most nodes never get one, and a node is made on every recorded op.
    _pre_hooks = _NONE           # hooks on the gradients flowing into this node
    _post_hooks = _NONE
    _tensor_pre_hooks = _NONE    # output_nr -> {id: fn}, from Tensor.register_hook
    _retains_grad = _NONE        # output_nr -> weakref to the tensor retaining its grad

    def __init__(self):
        self._seq = next(_seq)
        if anomaly_mode._state.enabled:
            self._anomaly_stack = anomaly_mode.forward_stack()

    def _hook_dict(self, attr: str) -> dict:
        """This node's own table ``attr`` (one of the four above), made on first use."""
        d = self.__dict__.get(attr)
        if d is None:
            d = {}
            setattr(self, attr, d)
            if isinstance(self, AccumulateGrad):
                leaf_hooks_seen[0] = True
        return d

    def _rebind_output(self, old, new):
        """After an in-place op on an output (a node that saves none has nothing to do)."""

    def name(self) -> str:
        n = type(self).__name__
        return f"torch::autograd::{n}" if n in CPP_NODES else n

    @property
    def next_functions(self):
        """The edges as PyTorch shows them. The engine follows ``_next``: one edge per input."""
        return self._next

    def register_hook(self, fn):
        store = self._hook_dict("_post_hooks")
        h = RemovableHandle(store)
        store[h.id] = fn
        return h

    def register_prehook(self, fn):
        store = self._hook_dict("_pre_hooks")
        h = RemovableHandle(store)
        store[h.id] = fn
        return h

    def __call__(self, *grads):
        return self.apply(list(grads))

    # overridden
    def apply(self, grads, retain_graph=True):
        raise NotImplementedError


def node_class(name: str) -> type:
    cls = _classes.get(name)
    if cls is None:
        # PyTorch's nodes are C++ types in 'builtins' with object's repr: the same here, so that
        # repr() gives <MulBackward0 object at 0x...> and IPython shows <MulBackward0 at 0x...>.
        cls = _classes[name] = type(name, (OpNode,), {"__module__": "builtins"})
    return cls


def version_error_label(node) -> str:
    """How PyTorch 2.x names a node (or a node name) in its errors (a saved tensor's version, a
    view written in place): 'ExpBackward0' -> 'Exp', 'SumBackward1' -> 'Sum1', 'MyFnBackward' ->
    'MyFn'; C++-only nodes by their C++ name."""
    name = node if isinstance(node, str) else node.name()
    if name.startswith("torch::"):
        return name
    if name.endswith("Backward0"):
        return name[:-len("Backward0")]
    return name.replace("Backward", "", 1)


def version_error(t, expected_version, output_of=None, output_nr=0) -> RuntimeError:
    """The error for a saved tensor modified in place. A saved output names the node that produced
    it; a saved input names its tensor's grad_fn at the time of the backward pass (as PyTorch does)."""
    node, nr = (output_of, output_nr) if output_of is not None else (t.grad_fn, t._output_nr)
    src = f", which is output {nr} of {version_error_label(node)}," if node is not None else ""
    return RuntimeError(
        "one of the variables needed for gradient computation has been modified by an inplace operation: "
        f"[torch.{t.dtype.tensor_type} [{', '.join(str(s) for s in t.shape)}]]{src} is at version "
        f"{t._version_counter.value}; expected version {expected_version} instead. Hint: enable anomaly "
        "detection to find the operation that failed to compute its gradient, with "
        "torch.autograd.set_detect_anomaly(True, check_nan=False).")


# Saved-tensor hooks (``autograd.graph.saved_tensors_hooks``): a stack of (pack, unpack) pairs, the
# innermost applying; and the message raised when they are disabled (``disable_saved_tensors_hooks``).
_DEFAULT_HOOKS: list = []
_HOOKS_DISABLED: list = [None]


class SavedTensor:
    """A tensor saved for backward, with the version it had when saved.

    ``output_of``/``output_nr``: for a node's own output, the node and output index (PyTorch's
    SavedVariable with is_output); None for a saved input.

    Under ``saved_tensors_hooks`` the tensor goes through the pack hook when saved and only what
    it returned is kept (``tensor`` is None); ``unpack`` runs the unpack hook and gives its result
    the saved tensor's place in the graph (grad_fn or leaf), so double backward still works. As in
    PyTorch, a hooked tensor's version is not checked."""
    __slots__ = ("tensor", "version", "output_of", "output_nr", "_unpack_hook", "_packed", "_ref", "_edge")

    def __init__(self, tensor, output_of=None, output_nr=0):
        if tensor._version_counter.inference:
            from ..tensor import INFERENCE_SAVE_ERROR
            raise RuntimeError(INFERENCE_SAVE_ERROR)
        self.tensor = tensor
        self.version = tensor._version_counter.value
        self.output_of = output_of
        self.output_nr = output_nr
        self._unpack_hook = None
        if _DEFAULT_HOOKS:
            self._pack(tensor)

    def _pack(self, tensor):
        from . import grad_mode
        pack, self._unpack_hook = _DEFAULT_HOOKS[-1]
        if self.output_of is not None:
            self._edge = (self.output_of, self.output_nr)
            if tensor._dtype.is_floating_point:      # the hook sees the output as it will be (PyTorch packs after)
                tensor._grad_fn, tensor._output_nr, tensor._requires_grad = self.output_of, self.output_nr, True
        else:
            self._edge = tensor._grad_edge() if tensor._requires_grad else None
        self._ref = weakref.ref(tensor)
        with grad_mode.no_grad():
            self._packed = pack(tensor)
        if tensor._version_counter.value != self.version:
            raise RuntimeError(
                "A saved tensor pack hook is modifying its input in place. Tensors provided as input to pack hook "
                "cannot be modified by in-place operations as this can lead to unexpected side-effects. Please "
                "open an issue if you need to perform in-place operations on the input to a pack hook.")
        self.tensor = None

    def holds(self, t) -> bool:
        """Whether ``t`` is the tensor that was saved."""
        return self.tensor is t if self._unpack_hook is None else self._ref() is t

    def unpack(self):
        if self._unpack_hook is not None:
            return self._unpack_hooked()
        t = self.tensor
        if t._version_counter.value != self.version:
            raise version_error(t, self.version, self.output_of, self.output_nr)
        return t

    def _unpack_hooked(self):
        from ..tensor_api import is_tensor_like
        t = self._unpack_hook(self._packed)
        if not is_tensor_like(t):
            raise TypeError(f"Output of saved tensor unpack_hook expected to be a Tensor but got result of type "
                            f"{type(t).__name__}")
        edge = self._edge
        if edge is None or self._ref() is t:
            return t
        node, nr = edge
        r = t.detach()                    # the unpacked values, at the saved tensor's place in the graph
        r._requires_grad = True
        if isinstance(node, AccumulateGrad):
            r._leaf_edge = edge
        else:
            r._grad_fn, r._output_nr = node, nr
        return r


class _SavedView:
    """Lazy list of saved inputs/outputs: unpacking (and its version check) happens on access."""

    def __init__(self, node, kind, n):
        self._node, self._kind, self._n = node, kind, n

    def __len__(self):
        return self._n

    def __getitem__(self, i):
        saved = self._node._saved
        if saved is None:
            if self._node._had_saved:
                raise RuntimeError(FREED_MESSAGE)
            return None                  # the op saves nothing (VJPContext names the op's mistake)
        s = saved.get((self._kind, i))
        return None if s is None else s.unpack()


_SAVE_PLANS: dict = {}


def _save_plan(op, n_inputs: int) -> tuple:
    """The op's ``saves`` tokens ("in0", "out0", "in1+": inputs 1 onwards) as ("in"|"out", k)
    pairs for ``n_inputs`` inputs, parsed once per op and input count."""
    key = (op.name, n_inputs)
    plan = _SAVE_PLANS.get(key)
    if plan is None:
        pairs = []
        for token in op.saves:
            if token.startswith("out"):
                pairs.append(("out", int(token[3:])))
            elif token.endswith("+"):
                pairs.extend(("in", k) for k in range(int(token[2:-1]), n_inputs))
            else:
                pairs.append(("in", int(token[2:])))
        plan = _SAVE_PLANS[key] = tuple(pairs)
    return plan


class OpNode(Node):
    """A node recorded by a table op."""
    _saved = None          # key ("in"|"out", k) -> SavedTensor; None once released
    _had_saved = False

    def __init__(self, op, attrs, inputs, outputs, input_types, next_functions, needs_input_grad,
                 output_types=None, edge_view=None):
        self._seq = next(_seq)
        if anomaly_mode._state.enabled:
            self._anomaly_stack = anomaly_mode.forward_stack()
        self._op = op
        self._attrs = attrs
        self._input_types = input_types
        self._output_types = output_types or [TypeInfo(o._data.shape, o._dtype) for o in outputs]
        self._next = next_functions
        self._needs = needs_input_grad
        plan = _SAVE_PLANS.get((op.name, len(inputs))) or _save_plan(op, len(inputs))
        if plan:
            saved = self._saved = {}
            for key in plan:
                kind, k = key
                saved[key] = SavedTensor(outputs[k], self, k) if kind == "out" else SavedTensor(inputs[k])
            self._had_saved = True
        # the inputs PyTorch's node has edges to, in its order (``next_functions``); all by default
        self._edge_view = tuple(range(len(inputs))) if edge_view is None else edge_view

    @property
    def next_functions(self):
        return tuple(self._next[i] for i in self._edge_view)

    def _rebind_output(self, old, new):
        """After an in-place op the saved output is the mutated tensor itself."""
        for key, s in (self._saved or {}).items():
            if s.holds(old):
                if s.tensor is None:
                    s._ref = weakref.ref(new)   # (hooked: already packed, not packed again)
                else:
                    self._saved[key] = SavedTensor(new, self, s.output_nr)

    def release(self):
        self._saved = None

    def apply(self, grads, retain_graph=True):
        if self._saved is None and self._had_saved:
            raise RuntimeError(FREED_MESSAGE)
        op = self._op
        input_types, needs = self._input_types, self._needs
        n_in, n_out = len(input_types), len(self._output_types)
        ctx = VJPContext(_SavedView(self, "in", n_in), _SavedView(self, "out", n_out), self._attrs, needs, input_types)
        name = ctx.node_name = type(self).__name__
        if len(grads) < n_out or (grads[0] is None if n_out == 1 else any([g is None for g in grads])):
            grads = self._fill_missing(grads)        # (not `None in`: == on tensors)
        if _autocast._state.active:   # (backward ops run in their forward ops' dtypes: no autocast)
            with _autocast.no_casts():
                result = (op.vjp or vjp_rule(op))(ctx, grads)
        else:
            result = (op.vjp or vjp_rule(op))(ctx, grads)
        if _TAKES_INPUT and name in _TAKES_INPUT and grad_mode._state.enabled:
            result = self._tied_to_inputs(result)
        out = [None] * n_in
        for i in range(min(n_in, len(result))):
            g = result[i]
            if g is None or not needs[i]:
                continue
            want = input_types[i]
            shape = g.shape
            if shape != want.shape and tuple(shape) != tuple(want.shape):   # (an eager Size is a tuple: one compare)
                raise RuntimeError(f"Function {self.name()} returned an invalid gradient at index {i} - got "
                                   f"[{', '.join(map(str, g.shape))}] but expected shape compatible with "
                                   f"[{', '.join(map(str, want.shape))}]")
            if g.dtype is not want.dtype and want.dtype.is_floating_point:
                g = g.to(want.dtype)
            out[i] = g
        return out

    def _tied_to_inputs(self, result) -> list:
        """Each input gradient tied to its input (``_InputTie``): PyTorch's backward of this op takes
        the input (``_TAKES_INPUT``), so under create_graph=True the gradient requires grad."""
        kind = _TAKES_INPUT[type(self).__name__]
        tied = []
        for i, g in enumerate(result):
            edge = self._next[i] if i < len(self._next) else (None, 0)
            if g is not None and edge[0] is not None and g.dtype.is_floating_point:
                g = _InputTie.of(type(self).__name__, kind, g, edge, self._input_types[i])
            tied.append(g)
        return tied

    def _fill_missing(self, grads) -> list:
        """Zeros for the differentiable outputs that got no gradient."""
        from ..tensor import zeros_for
        full = []
        for k, t in enumerate(self._output_types):
            g = grads[k] if k < len(grads) else None
            if g is None and k in self._op.differentiable_outputs:
                g = zeros_for(t)
            full.append(g)
        return full


class _InputTie(Node):
    """The grad_fn of an input gradient computed by a backward function that PyTorch writes with
    the forward op's input as an argument (threshold_backward(grad, self, threshold),
    max_pool2d_with_indices_backward(grad, self, ...)): the gradient (same values, same memory)
    depends on the gradient gradc's VJP computed and on that input, with a zero derivative
    for the input, no derivative at all (``kind`` "none"), or an error (``kind``: its type and message).
    So a first-order gradient through relu, the pools, the pads or nll_loss requires grad
    under create_graph=True, as PyTorch's does, and differentiating it again gives PyTorch's
    zeros. Named as PyTorch's node (ThresholdBackwardBackward0, ...)."""
    __module__ = "builtins"

    @classmethod
    def of(cls, forward_name, kind, g, edge, input_type):
        from ..tensor import Tensor
        node_cls = _TIE_CLASSES.get(forward_name)
        if node_cls is None:
            name = ("NotImplemented" if kind not in (None, "none") else
                    forward_name[:-len("0")] + "Backward0")
            node_cls = _TIE_CLASSES[forward_name] = type(name, (cls,), {"__module__": "builtins"})
        node = node_cls()
        node._kind, node._input_type = kind, input_type
        node._output_types = (None,)
        node._next = (g._grad_edge() if g._requires_grad else (None, 0), edge)
        t = Tensor._wrap(g._data)
        t._device = g._device
        t._grad_fn, t._output_nr, t._requires_grad = node, 0, True
        return t

    def apply(self, grads, retain_graph=True):
        from ..tensor import zeros_for
        kind = self._kind
        if kind not in (None, "none"):
            error, message = kind
            raise error(message)
        return [grads[0], None if kind == "none" else zeros_for(self._input_type)]

    def release(self):
        pass


class _FormulaNode(Node):
    """A backward function that PyTorch implements as one op with derivatives of its own
    (tanh_backward(grad, result), _softmax_backward_data(grad, output, ...)), recorded under
    create_graph=True as one node named like PyTorch's, with an edge per argument. gradc
    computes it with table ops; differentiating the node computes them again (an inner graph of
    its own each time: a gradient taken with create_graph=True refers to it) and differentiates
    them down to the arguments, so the values and every higher derivative are those of the ops."""
    __module__ = "builtins"
    _output_types = (None,)

    def apply(self, grads, retain_graph=True):
        if self._args is None:
            raise RuntimeError(FREED_MESSAGE)
        for a, v in zip(self._args, self._versions):     # (saved arguments, as PyTorch's node saves them)
            if a._version_counter.value != v:
                raise version_error(a, v)
        with grad_mode.enable_grad():
            inner = self._fn(*self._args)
        return _inner_grads(inner, grads[0], self._args, self._next)

    def release(self):
        self._args = None


def _inner_grads(inner, grad, args, edges, retain_graph=True) -> list:
    """Gradients of ``args`` through ``inner``, the tensor a formula or composite node computed
    from them, whose graph reaches them by ``edges`` (the node's, taken when it was made: an
    in-place write to an argument moves the argument's own): None where an edge is (None, 0);
    an argument given twice gets its gradient once, and one that the computation only compares
    gets zeros (PyTorch's zeros_like(grad)).  Without ``retain_graph`` the graph between them
    is freed as the pass goes."""
    from .engine import subgraph_grads
    wanted = list(dict.fromkeys(e for e in edges if e[0] is not None))
    if not inner.requires_grad:
        got = [None] * len(wanted)
    else:
        got = subgraph_grads(inner, grad, wanted, grad_mode._state.enabled, retain_graph)
    by_edge = dict(zip(wanted, got))
    result = []
    for a, e in zip(args, edges):
        result.append(_or_zeros(by_edge.pop(e), a) if e in by_edge else None)
    return result


def _or_zeros(g, like):
    from ..tensor import zeros_for
    return g if g is not None else zeros_for(TypeInfo(tuple(like.shape), like.dtype))


_FORMULA_CLASSES: dict = {}


def formula_node(name, fn, *args):
    """``fn(*args)``, recorded (when an argument requires grad) as one ``_FormulaNode`` named
    ``name`` with an edge per argument, as PyTorch records the backward function ``name`` names."""
    if not grad_mode._state.enabled or not any(a.requires_grad for a in args):
        return fn(*args)
    cls = _FORMULA_CLASSES.get(name)
    if cls is None:
        cls = _FORMULA_CLASSES[name] = type(name, (_FormulaNode,), {"__module__": "builtins"})
    node = cls()
    node._fn, node._versions = fn, [a._version_counter.value for a in args]
    with grad_mode.no_grad():
        return _one_node(node, fn(*args), args)


def _one_node(node, inner, args):
    """A new tensor holding ``inner``'s values, whose grad_fn is ``node``, with an edge per
    argument; ``node`` keeps ``inner`` (and its graph, if any)."""
    from ..tensor import Tensor
    data = inner._data
    if inner._base is not None:      # (a view of a piece: the result gets storage of its own)
        with grad_mode.no_grad():
            data = inner.clone()._data
    node._inner, node._args = inner, list(args)
    node._next = tuple(a._grad_edge() if a is not None and a.requires_grad else (None, 0) for a in args)
    out = Tensor._wrap(data)
    out._device = inner._device
    out._grad_fn, out._output_nr, out._requires_grad = node, 0, True
    return out


def _not_implemented(op):
    return RuntimeError, f"derivative for aten::{op} is not implemented"


# grad_fn names of the ops whose PyTorch backward takes the op's input (derivatives.yaml), with
# the derivative of that backward with respect to the input: None (zeros), "none" (none: an
# unused input) or the error PyTorch raises (its type and message)
_TAKES_INPUT = {
    **dict.fromkeys(["ThresholdBackward0", "HardtanhBackward0", "LeakyReluBackward0", "LeakyReluBackward1",
                     "RreluWithNoiseBackward0", "RreluWithNoiseBackward1", "SoftshrinkBackward0", "HardshrinkBackward0",
                     "MaxPool2DWithIndicesBackward0", "MaxPool3DWithIndicesBackward0", "AvgPool2DBackward0",
                     "AvgPool3DBackward0", "AdaptiveAvgPool2DBackward0", "AdaptiveAvgPool3DBackward0",
                     "AdaptiveMaxPool2DBackward0", "AdaptiveMaxPool3DBackward0", "ReflectionPad1DBackward0",
                     "ReflectionPad2DBackward0", "ReflectionPad3DBackward0", "ReplicationPad1DBackward0",
                     "ReplicationPad2DBackward0", "ReplicationPad3DBackward0", "NllLossBackward0",
                     "NllLoss2DBackward0", "PreluKernelBackward0"]),
    **dict.fromkeys(["GridSampler2DBackward0", "GridSampler3DBackward0", "ConvolutionBackward0",
                     "NativeBatchNormBackward0"], "none"),
    "HardsigmoidBackward0": _not_implemented("hardsigmoid_backward"),
    "MultiMarginLossBackward0": _not_implemented("multi_margin_loss_backward"),
    "MultilabelMarginLossBackward0": _not_implemented("multilabel_margin_loss_backward"),
    "PdistBackward0": (NotImplementedError, "the derivative for '_pdist_backward' is not implemented."),
    "CdistBackward0": (NotImplementedError, "the derivative for '_cdist_backward' is not implemented."),
}
_TIE_CLASSES: dict = {}


class AccumulateGrad(Node):
    """The sink node of a leaf tensor that requires grad."""
    __module__ = "builtins"   # printed like PyTorch's C++ node

    def __init__(self, variable):
        super().__init__()
        self.variable = variable

    def apply(self, grads, retain_graph=True):
        return []


def grad_fn_named(name, edges=None):
    """Decorator for a composition (a PyTorch function spelled with several table ops): its result's
    grad_fn shows PyTorch's name (``NllLossBackward0`` for cross_entropy) instead of its last piece's.
    ``name`` is a string or a function of the call's arguments giving one (None: keep the piece's).
    Only the last node is renamed, and only if the call made it (an argument returned as it is
    keeps its own); its ``next_functions`` are still the pieces', not PyTorch's. With ``edges``, a
    function of the call's arguments giving the tensors PyTorch's node has an edge to (in its
    order, None for an absent optional one; None for the whole: not so recorded), the call is
    recorded as that one node instead (``_CompositeNode``), so ``next_functions`` are PyTorch's too."""
    import functools

    def decorate(fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            start = next(_seq)
            want = name(*args, **kwargs) if callable(name) else name
            tensors = edges(*args, **kwargs) if edges is not None and want and grad_mode._state.enabled else None
            trace = dispatch.capturing[-1] if dispatch.capturing and want in _TAKES_INPUT else None
            since = len(trace.func.body.ops) if trace is not None else 0
            out = fn(*args, **kwargs) if tensors is None else _composite_call(want, tensors, fn, args, kwargs)
            if trace is not None:       # (traced by @gradc.compile: tell its create_graph backward)
                trace.note_takes_input(out, want, since)
            if want:
                for t in (out if isinstance(out, (tuple, list)) else (out,)):
                    node = getattr(t, "_grad_fn", None)
                    if isinstance(node, OpNode) and node._seq > start:
                        node.__class__ = node_class(want)
            return out
        return wrapper
    return decorate


class _CompositeNode(Node):
    """A PyTorch function that gradc composes of table ops, shown as PyTorch's one node
    (MseLossBackward0 with ``next_functions`` to input and target). The engine passes the
    gradient on to the pieces' graph (``_next`` is the one edge to the last piece's node), which
    leads to the arguments, so a backward costs what the pieces' costs.

    A hook registered on the node (``register_hook``) sees, and may replace, the gradient of
    each argument, as PyTorch's does: from then on the node computes them itself through the
    pieces' graph (``_inner_grads``) and passes them along its edges to the arguments."""
    __module__ = "builtins"
    _separate = False

    @property
    def next_functions(self):
        return self._edges

    def register_hook(self, fn):
        if not self._separate:
            from .engine import after_pass

            def separate():          # (a running pass routes along the edges it started with)
                self._next, self._separate = self._edges, True
            after_pass(separate)
        return super().register_hook(fn)

    def apply(self, grads, retain_graph=True):
        if not self._separate:
            return [grads[0]]
        if self._arguments is None:
            raise RuntimeError(FREED_MESSAGE)
        return _inner_grads(self._inner, grads[0], self._arguments, self._edges, retain_graph)

    def release(self):
        self._arguments = None     # (the pieces' nodes free what they saved as the pass reaches them)


_COMPOSITE_CLASSES: dict = {}


def composite_class(name):
    """The ``_CompositeNode`` subclass named ``name``."""
    cls = _COMPOSITE_CLASSES.get(name)
    if cls is None:
        cls = _COMPOSITE_CLASSES[name] = type(name, (_CompositeNode,), {"__module__": "builtins"})
    return cls


def _composite_call(name, tensors, fn, args, kwargs):
    """``fn(*args, **kwargs)``, shown as one ``_CompositeNode`` named ``name`` with an edge per
    tensor of ``tensors`` when an eager one requires grad and the result is a new tensor of the
    pieces'; else as it is."""
    from ..ops.dispatch import capturing
    from ..tensor import Tensor
    inner = fn(*args, **kwargs)
    if capturing or not all(t is None or isinstance(t, Tensor) for t in tensors) or \
            not any(t is not None and t.requires_grad for t in tensors):
        return inner       # (while @gradc.compile traces, eager ops on arguments are recorded)
    root = inner._grad_fn if isinstance(inner, Tensor) else None
    if root is None or any(inner is t for t in tensors):
        return inner
    if name in _TAKES_INPUT and isinstance(root, OpNode):
        root.__class__ = node_class(name)     # (its backward ties the gradient to the input, as PyTorch's)
    node = composite_class(name)()
    node._edges = tuple(t._grad_edge() if t is not None and t.requires_grad else (None, 0) for t in tensors)
    node._arguments = tensors
    node._output_types = (TypeInfo(tuple(inner.shape), inner.dtype),)
    return _one_node(node, inner, (inner,))
