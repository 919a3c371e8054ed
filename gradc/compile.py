"""@gradc.compile: trace, differentiate, partition, fuse and run natively,
joined to the eager autograd graph.

A ``CompiledFunction`` specialises on every tensor argument's shape, dtype,
device and requires_grad, on grad mode, the default float dtype and the values of non-tensor
arguments. Each specialisation holds a forward executor and, when some input
requires grad, either a backward executor (``backward="separate"``: the joint
function partitioned by the ``memory`` policy) or, for a function returning one
scalar (``backward="auto"``), a forward that also computes the gradients for a
cotangent of 1, which backward scales. Calling it returns eager tensors whose
``grad_fn`` is a ``CompiledFunctionBackward`` node leading to the inputs' nodes,
so compiled and eager code mix in one ``backward()``. Residuals are freed after
backward unless ``retain_graph``; inputs saved for backward are version-checked;
``create_graph=True`` compiles the adjoint (autodiff run on the joint function)
so double backward works. The executors run on the CPU backend (LLVM) or, for
tensors on ``cuda``, the CUDA backend (PTX kernels through ``cuda_driver``); the
default ``target="auto"`` follows the arguments' device.

State the function reaches outside its arguments is guarded or followed at every call:
captured tensors are implicit arguments found again through their access paths
(``capture_paths``); Python scalars in the closure cells and globals the code names are
compared (``capture_paths.scalar_guards``); the ``training`` flag of every module called in the trace is guarded
(each mode keeps its specialisation, up to ``MAX_VARIANTS`` per key); in-place writes into
the arguments and the tensors from outside the function (a BatchNorm's running statistics)
become extra outputs of the forward, written back after each call, bumping the tensors'
versions as eager code would.
"""
from __future__ import annotations

import contextlib
import inspect
import logging
import operator
import time
import types
from weakref import ref as _weakref
from dataclasses import dataclass

import numpy as np

from ._warnings import warn_at_user_code
from . import autocast_state, capture_paths, dtypes
from .autograd import anomaly_mode as _anomaly
from .autograd import grad_mode
from .autograd.node import FREED_MESSAGE, AccumulateGrad, Node, _InputTie, version_error
from .autograd.node import _seq as _node_seq
from .ir.clone import clone_function
from .ir.core import Function
from .ir.pytree import leaf_tree, unflatten_output
from .ops import dispatch as _dispatch
from .ops.registry import RANDOM
from .codegen.cuda_driver import DeviceArray
from .held_output import held_stdout
from .eager_graph import (differentiable_reach, double_backward_reads_saved, inner_leaf_outputs, input_tied_gradients,
                          internal_outputs, output_dependencies, outputs_through_freed, partition_free_inputs,
                          read_arguments, repeated_outputs, replay, saved_by_eager_autograd, saves_anything)
from .tensor import CPU, Tensor, before_write
from .tensor import inference_seen as _inference_seen

log = logging.getLogger("gradc.compile")
_GONE = "<no attribute>"   # how explain() shows an attribute a module no longer has
MAX_VARIANTS = 8        # specialisations kept per guard key that differ in captured state or module modes
RECOMPILE_WARNING = 16  # compiles of one function after which it warns (a value changing every call)

TARGETS = ("auto", "cpu", "cuda", "interp")
# after autodiff (or on a forward-only function), before partition and fuse
OPTIMIZE_PIPELINE = "decompose,canonicalize,cse,dce"


@dataclass(frozen=True)
class _ArgKey:
    shape: tuple
    dtype: str
    device: str
    requires_grad: bool


def _wrap(a, device):
    """An eager tensor owning executor output ``a`` (executors return NumPy or device arrays)."""
    t = Tensor._wrap(a)
    if device is not CPU:
        t._device = device
    return t


def _backend(target: str):
    if target == "interp":
        return None
    if target == "cpu":
        from .codegen.backend_cpu import CPUBackend
        return CPUBackend()
    if target == "cuda":
        from .codegen.backend_cuda import CudaBackend
        from .cuda import require_cuda
        return CudaBackend(require_cuda())
    raise ValueError(f"gradc.compile: unknown target '{target}' (expected one of {', '.join(TARGETS)})")


def optimize(func: Function) -> Function:
    from .passes.pipeline import run_pipeline
    run_pipeline(func, OPTIMIZE_PIPELINE)
    return func


class _Specialization:
    """Everything compiled for one guard key."""
    guarded = False     # captured tensors, constants or module modes to check at each call
    unread_inputs = frozenset()   # inputs nothing reads (a BatchNorm's running statistics, written only)
    n_state_outputs = 0  # the forward's last outputs: the new values of the tensors it writes in place,
    state_slots = ()     # and for each, the argument position (user tensors, then captured) it writes
    arg_writes = ()      # the positions among them of the user's tensor arguments
    view_writes = frozenset()   # those of them written through a view (the leaf error names the view)
    view_outputs = {}    # outputs that are views of arguments: replayed on the caller's tensors
    grad_writes = ()     # (position, output) of each written argument whose new value carries gradients
    copied_inputs = frozenset()   # inputs saved for backward as a copy taken at the call
    aliased_residuals = frozenset()   # residuals that may share an argument's memory, in a call that writes some
    watched = ()                  # inputs a backward may read again that eager autograd does not save
    grad_reads = frozenset()      # inputs the gradients are computed from (create_graph=True reads them)
    tied_inputs = None            # eager_graph.input_tied_gradients, worked out at the first create_graph
    _frees_cache = None          # outputs given a gradient -> double_backward_reads_saved
    output_deps = None   # per output position, the positions in ``wrt`` it depends on (None: all)
    repeats = {}         # output position -> an earlier position returning the same tensor
    half_outputs = ()    # output positions of emulated float16 values (autocast), returned as float16
    graph_outputs = ()   # output positions whose tensors get the node as grad_fn
    internal_outputs = {}  # output position -> the other outputs computed from it (differentiably)
    requires_grad_args = ()  # argument positions the function calls requires_grad_() on (set at each call)
    freed_outputs = frozenset()  # outputs whose backward runs ops an autograd.grad inside freed
    leaf_outputs = ()        # outputs that are leaves the function made (x.detach().requires_grad_())
    leaf_graph_outputs = ()  # other outputs computed from those only: _InnerLeavesBackward

    def __init__(self, func: Function, wrt, memory: str, backend, n_outputs: int, backward: str = "auto",
                 written=frozenset()):
        from .executor import Executor
        from .passes.autodiff import differentiate
        from .passes.fuse import fuse
        from .passes.partition import partition
        from .passes.precompute import is_scalar_loss, with_unit_cotangent
        t0 = time.perf_counter()
        self.traced = func
        self.wrt = list(wrt)
        self.n_outputs = n_outputs
        self.backend = backend
        self.memory = memory
        # a function that draws random numbers (dropout) keeps its draws for backward: it is never
        # run again for a retained graph's second backward, as the precomputed form would be
        self.random = any(op.has_trait(RANDOM) for op in func.body.ops)
        # ... nor is one that writes into its arguments (state_writes): a rerun would read the
        # written values; the separate backward keeps a copy of a written input it reads
        self.written = frozenset(written)
        self.unchecked_inputs = self.written     # not version-checked: written by the call itself
        # (its backward holds a copy of what it read), or read by nothing (set below)
        self.eager_saved = saved_by_eager_autograd(func)
        self.eager_saved_outputs = outputs_saved_by_eager_autograd(func, n_outputs - len(written))
        self.eager_saves = saves_anything(func)
        self.precompute = (bool(self.wrt) and backward != "separate" and not self.random
                           and not self.written and is_scalar_loss(func))
        self.saved_inputs = {}     # residual index -> input index, for residuals that are inputs
        if backward == "precompute" and self.wrt and not self.precompute:
            raise ValueError(f"@gradc.compile(backward='precompute'): {func.name} must return one 0-d "
                             "floating point tensor" + (" and draw no random numbers" if self.random else ""))
        joint = optimize(differentiate(func, self.wrt)) if self.wrt else None
        if self.precompute and _raises_in_backward(joint):
            self.precompute = False     # (the gradient's error comes at backward, as eagerly)
        if self.precompute:
            # One pass computes the loss and its gradients for a cotangent of 1; backward
            # scales them by the real cotangent (a scalar: the gradient is linear in it).
            self.joint = joint
            self.unread_inputs = _unread_arguments(joint, len(func.args))
            self.unchecked_inputs = self.unread_inputs | self.written
            self.grad_reads = read_arguments(joint, joint.outputs[n_outputs:], len(func.args))
            fwd = optimize(with_unit_cotangent(joint))
            fuse(fwd)
            self.precomputed = fwd
            self.forward = Executor(fwd, backend)
            fwd_func, grads_func, grads = fwd, fwd, fwd.outputs[n_outputs:]
        elif self.wrt:
            self.joint = joint
            self.unread_inputs = _unread_arguments(joint, len(func.args))
            self.unchecked_inputs = self.unread_inputs | self.written
            self.grad_reads = read_arguments(joint, joint.outputs[n_outputs:], len(func.args))
            # the inputs it may read at backward, version-checked as eager autograd checks them; it
            # saves a copy of any other input it needs (the caller may change one in place, legally)
            self.partition = partition(joint, memory, free_inputs=partition_free_inputs(func))
            fuse(self.partition.forward)
            fuse(self.partition.backward)
            self.forward = Executor(self.partition.forward, backend)
            self.backward = Executor(self.partition.backward, backend)
            self.saved_inputs = {k: self._primal_index(k) for k in self.partition.saved_input_indices}
            self.copied_inputs = frozenset(i for i in self.saved_inputs.values()
                                           if i not in self.eager_saved or i in self.written)
            if self.written:    # (an argument returned as a residual, ``detach(x)`` simplified: written after)
                residuals = self.partition.forward.outputs[n_outputs:]
                self.aliased_residuals = frozenset(_maybe_aliasing(self.partition.forward, residuals)
                                                   - set(self.saved_inputs))
            fwd_func, grads_func = self.partition.forward, self.partition.backward
            grads = grads_func.outputs
        else:
            fwd = optimize(_without_detach(clone_function(func)))
            fuse(fwd)
            self.forward_only = fwd
            self.forward = Executor(fwd, backend)
            fwd_func = fwd
        if self.wrt:    # (a create_graph backward or an eager replay reads them: copied before a write)
            self.watched = tuple(k for k in range(len(func.args))
                                 if k not in self.eager_saved and k not in self.unchecked_inputs)
        self.copy_outputs = _maybe_aliasing(fwd_func, fwd_func.outputs[:n_outputs])
        self.out_types = [v.type if v.type.dtype.is_floating_point else None
                          for v in fwd_func.outputs[:n_outputs]]
        self.float_outputs = [k for k, t in enumerate(self.out_types) if t is not None]   # get a grad_fn
        if self.wrt:
            aliasing = _maybe_aliasing(grads_func, grads)
            self.fresh_grads = [k not in aliasing and grads.count(v) == 1 for k, v in enumerate(grads)]
        self._grad_fn_compiled = None
        self.compile_seconds = time.perf_counter() - t0

    def double_backward_frees(self, given) -> dict:
        """``double_backward_reads_saved`` for a first backward that gave gradients to the
        outputs ``given`` (eagerly only their graphs run), cached."""
        if self._frees_cache is None:
            self._frees_cache = {}
        key = frozenset(given)
        if key not in self._frees_cache:
            self._frees_cache[key] = double_backward_reads_saved(self.traced, self.wrt, sorted(key))
        return self._frees_cache[key]

    def _primal_index(self, residual_k: int) -> int:
        v = self.partition.forward.outputs[self.n_outputs + residual_k]
        return self.partition.forward.args.index(v)

    def grad_function(self):
        """A CompiledFunction for (primals..., cotangents...) -> grads, for create_graph=True."""
        if self._grad_fn_compiled is None:
            g = clone_function(self.joint, self.traced.name + "_grad")
            outs = g.outputs
            g.set_outputs(outs[self.n_outputs:])
            for key in list(g.attrs):
                g.attrs.pop(key)
            self._grad_fn_compiled = CompiledFunction.from_ir(g, memory=self.memory, backend=self.backend)
        return self._grad_fn_compiled


def _check_argument_writes(name, spec, tensors):
    """Eager autograd's errors for the in-place writes a call makes into its arguments (checked
    per call: whether an argument is a leaf is no part of the guard key)."""
    enabled = grad_mode._state.enabled
    carrying = {pos for pos, _ in spec.grad_writes}
    for pos in spec.arg_writes:
        t = tensors[pos]
        for j, other in enumerate(tensors):
            if j != pos and isinstance(t._data, np.ndarray) and isinstance(other._data, np.ndarray) \
                    and np.may_share_memory(t._data, other._data):
                raise RuntimeError(f"@gradc.compile({name}): argument {pos}, which the function writes in place, "
                                   f"shares memory with argument {j}; compiled code reads each argument as it was "
                                   "at the call, so the write would not be seen through the other: pass separate "
                                   "tensors (clone() one)")
        if enabled and t._requires_grad and t._grad_fn is None:
            raise RuntimeError(("a view of a leaf Variable" if pos in spec.view_writes else "a leaf Variable")
                               + " that requires grad is being used in an in-place operation.")
        if enabled and pos in carrying and t._base is not None:
            raise RuntimeError(f"@gradc.compile({name}): an in-place write into argument {pos}, a view of another "
                               "tensor, with a value that requires grad is not supported (eager autograd would "
                               "rewrite the base tensor's history); pass the base tensor, or clone() the view")


def _check_no_inference_saved(spec, tensors):
    """PyTorch's error for an inference tensor that eager autograd would save for backward."""
    for i in spec.eager_saved:
        if tensors[i]._version_counter.inference:
            from .tensor import INFERENCE_SAVE_ERROR
            raise RuntimeError(INFERENCE_SAVE_ERROR)


def outputs_saved_by_eager_autograd(func: Function, n_outputs: int) -> dict:
    """``{output position: (grad_fn name, result index)}`` for the outputs of traced ``func``
    (of its first ``n_outputs``) that eager autograd's node would save as its own result
    (``OpDef.saves`` "outK": exp, sigmoid, tanh, ...) because some operand carries a gradient:
    modifying one of those in place before backward is PyTorch's version-counter error,
    naming that node ("output 0 of Exp")."""
    from .ops.registry import NONDIFF
    grad = {a for a, attrs in zip(func.args, func.arg_attrs) if attrs.get("gradc.requires_grad")}
    saved = {}
    for op in func.body.ops:
        opdef = op.opdef if op.name.startswith("gradc.") else None
        if opdef is None or opdef.has(NONDIFF) or not any(v in grad for v in op.operands):
            continue
        grad.update(r for r in op.results if r.type.dtype.is_floating_point)
        for k, r in enumerate(op.results):
            if f"out{k}" in opdef.saves:
                saved[r] = (opdef.grad_fn_name(op.attrs), k)
    return {k: saved[v] for k, v in enumerate(func.outputs[:n_outputs]) if v in saved}


class _SavedOutput:
    """What a compiled call's node keeps of an output that eager autograd would have saved: its
    version counter and the version it had, and enough to word PyTorch's error (no reference
    to the tensor, which refers to the node)."""
    __slots__ = ("dtype", "shape", "_version_counter", "version", "node_name", "output_nr")

    def __init__(self, t, node_name, output_nr):
        self.dtype, self.shape, self._version_counter = t._dtype, t.shape, t._version_counter
        self.version, self.node_name, self.output_nr = t._version_counter.value, node_name, output_nr

    def name(self):         # (as a node, for version_error's label)
        return self.node_name

    def check(self):
        if self._version_counter.value != self.version:
            raise version_error(self, self.version, output_of=self, output_nr=self.output_nr)


def _unreached_as_none(spec, grads, inputs_grads):
    """``inputs_grads`` with None for the inputs that no output given a gradient depends on
    (``spec.output_deps``): as eagerly, such a leaf gets no ``.grad`` (not zeros) and
    ``autograd.grad`` finds it unused."""
    deps = spec.output_deps
    if deps is None:
        return inputs_grads
    reached = set()
    for k, g in enumerate(grads):
        if g is not None and k < len(deps):
            reached |= deps[k]
    if len(reached) == len(inputs_grads):
        return inputs_grads
    return [g if j in reached else None for j, g in enumerate(inputs_grads)]


def _note_given(active: set, cotangents) -> None:
    """Record which outputs of a gradient function's node are given a gradient in this pass."""
    active.clear()
    active.update(j for j, c in enumerate(cotangents) if c is not None)


class _FreedGuard(Node):
    """On the edge from a compiled gradient function's node to input ``i`` of the original call:
    where eagerly a second backward would run (and, not retaining the graph, free) nodes of the
    original graph that hold saved tensors, it raises PyTorch's error once the original node was
    freed, and frees it after a pass that does not retain the graph. It runs in the original
    node's place in the engine's order and passes the gradient on unchanged."""
    __module__ = "builtins"

    def __init__(self, owner, frees, i, active, ran, edge):
        super().__init__()
        self._seq = owner._seq + 0.5     # (just before the owner: a pass running both frees it after)
        self._owner, self._frees, self._i, self._active, self._ran = owner, frees, i, active, ran
        self._next = (edge,)
        self._output_types = [None]
        self._touched = False

    def apply(self, grads, retain_graph=True):
        nodes = [d for j in self._active for d in self._frees.get(j, ()) if self._i in d]
        if nodes and self._owner._residuals is None and any(d & self._ran for d in nodes):
            raise RuntimeError(FREED_MESSAGE)
        self._touched = bool(nodes)
        return [grads[0]]

    def release(self):
        if self._touched:
            from .autograd.engine import after_pass
            after_pass(self._owner.release)


class _InnerLeavesBackward(Node):
    """grad_fn of a compiled function's outputs computed only from tensors the function made
    leaves (``x.detach().requires_grad_()``): eagerly they require grad and a backward from them
    accumulates into those leaves, which the caller never sees, so this node passes nothing on
    (but raises PyTorch's error where an ``autograd.grad`` inside freed their graph)."""
    __module__ = "builtins"

    def __init__(self, n_outputs, freed):
        super().__init__()
        self._output_types = [None] * n_outputs
        self._freed = freed

    def apply(self, grads, retain_graph=True):
        if any(grads[k] is not None for k in self._freed):
            raise RuntimeError(FREED_MESSAGE)
        return []

    def release(self):
        pass


_InnerLeavesBackward.__name__ = _InnerLeavesBackward.__qualname__ = "CompiledFunctionBackward"


class CompiledFunctionBackward(Node):
    """grad_fn of a compiled function's outputs: runs the compiled backward."""
    __module__ = "builtins"   # printed <CompiledFunctionBackward object at 0x...> like PyTorch's nodes
    _single_node_ok = True    # the engine may run a hook-free graph of just this node directly
    _replayed = None          # (outputs, hooks moved) of an eager replay: _replayed_gradients
    _kept = None              # {input position: its value at the call}, taken before an in-place write

    def __init__(self, spec: _Specialization, inputs, residuals, next_functions, out_types):
        self._seq = next(_node_seq)     # (Node.__init__, inlined: one node per compiled call)
        if _anomaly._state.enabled:
            self._anomaly_stack = _anomaly.forward_stack()
        self._spec = spec
        self._inputs = inputs          # saved inputs, with the versions they had (checked by _unpack)
        self._versions = [t._version_counter.value for t in inputs]
        self._unread = spec.unchecked_inputs   # never version-checked
        self._residuals = residuals
        self._next = next_functions
        self._output_types = out_types
        self._device = inputs[0]._device if inputs else CPU
        self._unit_ok = spec.precompute   # run_unit_backward may call apply_unit
        self._saved_outputs = ()          # _SavedOutput of each output eager autograd would have saved
        # Ask to be told (``tensor.before_write``) before an input ``spec.watched`` changes in
        # place: eager autograd did not save it (it saved what it computed from it), so changing
        # it is legal, yet a create_graph=True backward or an eager replay reads it again.
        # (Inline, not a method: it runs at every call.)
        if spec.watched:
            ref = _weakref(self)
            for k in spec.watched:
                counter = inputs[k]._version_counter
                refs = counter.watchers
                if refs is None:
                    counter.watchers = [ref]
                    continue
                if refs and refs[-1]() is None:    # (the last call's node is gone, as in a training loop)
                    refs[-1] = ref
                    continue
                n = len(refs)
                if n >= 8 and not n & (n - 1):      # (now and then: forget the nodes gone)
                    refs[:] = [r for r in refs if r() is not None]
                refs.append(ref)

    def _input_written(self, counter):
        """An input this node watches (``__init__``) is about to change in place: keep its value at the call (a
        copy standing for it in the graph, as the tensor did at the call), unless no backward
        can read it any more."""
        if self._residuals is None or self._replayed is not None:
            return
        for k in self._spec.watched:
            t = self._inputs[k]
            if t._version_counter is counter and counter.value == self._versions[k]:
                if self._kept is None:
                    self._kept = {}
                self._kept[k] = self._copy_of_input(k)

    def _copy_of_input(self, k):
        """A copy of input ``k`` with its place in the graph at the call (its edge: the gradients
        computed from the copy flow where they would have from the input then)."""
        t = self._inputs[k]
        c = _wrap(_snapshot(t._data), self._device)
        c._dtype = t._dtype
        spec = self._spec
        if k in spec.wrt:
            edge = self._next[spec.wrt.index(k)]
            if isinstance(edge[0], AccumulateGrad):
                c._leaf_edge, c._requires_grad = edge, True
            elif edge[0] is not None:
                c._grad_fn, c._output_nr, c._requires_grad = edge[0], edge[1], True
        return c

    def _unpack(self, only=None):
        """The saved inputs, after PyTorch's check that none was modified in place since (of
        the positions ``only``, when given), nor an output eager autograd would have saved; an
        input eager autograd did not save is, once changed, the copy kept of it (``_watch``)."""
        for saved in self._saved_outputs:
            saved.check()
        inputs = self._inputs
        if self._kept or [t._version_counter.value for t in inputs] != self._versions:
            # (a kept copy: the input changed since the call, perhaps through ``.data``, which
            # counts no version of the tensor's own)
            unread, kept = self._unread, self._kept or {}
            inputs = list(inputs)
            for k, (t, v) in enumerate(zip(self._inputs, self._versions)):
                if k in unread or (only is not None and k not in only):
                    continue
                if k in kept:
                    inputs[k] = kept[k]
                elif t._version_counter.value != v:
                    raise version_error(t, v)
        return inputs

    def release(self):
        if self._spec.eager_saves:          # (eagerly, nodes that save nothing free nothing)
            self._residuals = self._kept = None

    def apply_unit(self, retain_graph=True):
        """(gradients, whether each is fresh) for a cotangent of 1, computed by the forward: the
        engine hands a fresh one to its leaf as ``.grad``."""
        if self._residuals is None or self._spec.freed_outputs:
            raise RuntimeError(FREED_MESSAGE)
        arrays = self._precomputed_arrays(retain_graph)
        if self._device is CPU:
            return Tensor._wrap_all(arrays), self._spec.fresh_grads
        return [_wrap(a, self._device) for a in arrays], self._spec.fresh_grads

    def _check_release_on_double_backward(self, given, grads):
        """Eagerly, the graph of a create_graph=True gradient may run through nodes of this
        function's graph that hold saved tensors (``double_backward_frees``): differentiating it
        after a backward freed them (``retain_graph=False``) is PyTorch's error, and a second
        backward that does not retain its graph frees them. The compiled gradient's graph
        reaches the inputs directly: a ``_FreedGuard`` on each such edge of its node stands for
        this node there."""
        spec = self._spec
        ran = self._ran_now()
        frees = spec.double_backward_frees(given)
        guarded = set().union(*(d for ds in frees.values() for d in ds))
        if not guarded:
            return
        nodes = {id(g.grad_fn): g.grad_fn for j, g in enumerate(grads)     # (the gradient function's node)
                 if g is not None and type(g.grad_fn) is CompiledFunctionBackward and g._output_nr == j}
        for node in nodes.values():
            active = set()
            node.register_prehook(lambda cotangents, active=active: _note_given(active, cotangents))
            edges = list(node._next)
            for i in guarded:
                e = node._spec.wrt.index(spec.wrt[i]) if spec.wrt[i] in node._spec.wrt else None
                if e is not None and edges[e][0] is not None:
                    edges[e] = (_FreedGuard(self, frees, i, active, ran, edges[e]), 0)
            node._next = tuple(edges)

    def _ran_now(self) -> set:
        """The input positions this backward runs toward: only the nodes on the way to the
        inputs it needs run (and are freed)."""
        from .autograd.engine import gradient_needed
        return {i for i, (n, _) in enumerate(self._next) if n is not None and gradient_needed(n)}

    def _replays(self, grads) -> bool:
        """Whether this backward replays the function eagerly (and runs its outputs' hooks
        itself): an output with a hook or ``retain_grad`` is used inside the function to compute
        another output given a gradient ``grads`` ({output_nr: gradient}). Eagerly that hook
        sees the sum of both gradients; the compiled backward has no place to run it between.
        Under create_graph=True any output hook counts: the graph of an eager gradient runs
        through the outputs a VJP saved (sigmoid's, exp's), and a second backward runs their
        hooks again; so does an output given no gradient: eagerly its part of the graph does not
        run, while the compiled gradient function, given zeros for it, would make the gradients
        depend on the inputs it reads."""
        if self._replayed is not None:
            return True         # replayed before: that graph stands for this node
        if grad_mode.is_grad_enabled() and any(grads.get(k) is None for k in self._spec.graph_outputs):
            return True         # create_graph=True with an output given no gradient (below)
        if not (self._tensor_pre_hooks or self._retains_grad):
            return False
        if grad_mode.is_grad_enabled():
            return True         # create_graph=True: the gradient's own graph runs through the hooked outputs
        internal = self._spec.internal_outputs
        if not internal:
            return False
        for k in set(self._tensor_pre_hooks) | set(self._retains_grad):
            if any(grads.get(j) is not None for j in internal.get(k, ())):
                return True
        return False

    def _replayed_gradients(self, grads, retain_graph):
        """The gradients of the ``wrt`` inputs, from an eager replay of the traced function on
        the saved inputs, with this node's output hooks and retained grads moved onto the
        replayed outputs: PyTorch's order and values where hooks see internal gradients. The
        replayed graph then stands for this node: its edges lead to the replayed outputs, so
        later backwards run that graph in their own pass, freed or not as eager autograd's."""
        from .autograd import grad as autograd_grad
        from .autograd.engine import after_pass, gradient_needed
        spec = self._spec
        if spec.random or spec.written:
            raise RuntimeError(f"@gradc.compile({spec.traced.name}): this backward needs an eager replay of the "
                               "function (a hook or retain_grad on an output it also uses, or create_graph=True "
                               "with hooks or an output given no gradient), not supported for a function that "
                               + ("draws random numbers" if spec.random else "writes into tensors in place"))
        inputs = self._unpack()     # the replay reads every input as at the call (or its copy kept)
        with grad_mode.enable_grad():
            wrt = set(spec.wrt)
            # (views of the inputs: the gradients are captured there, and connect to the inputs)
            starts = [t.view(tuple(t.shape)) if i in wrt else t.detach() for i, t in enumerate(inputs)]
            outs = replay(spec.traced, starts)
        moved = set()
        self._move_hooks(outs, moved)
        after_pass(lambda: self._stand_in(outs, moved))
        # only toward the inputs this pass needs (eagerly no other node runs: no hook either)
        needed = [j for j, (n, _) in enumerate(self._next) if n is not None and gradient_needed(n)]
        pairs = [(outs[k], g) for k, g in enumerate(grads) if g is not None and outs[k].requires_grad]
        result = [None] * len(spec.wrt)
        if needed and pairs:
            got = autograd_grad([o for o, _ in pairs], [starts[spec.wrt[j]] for j in needed], [g for _, g in pairs],
                                allow_unused=True, create_graph=grad_mode.is_grad_enabled(), retain_graph=retain_graph)
            for j, g in zip(needed, got):
                result[j] = g
        return result

    def _stand_in(self, outs, moved):
        """From now on pass gradients on to the replayed outputs ``outs`` (``_replayed_gradients``)."""
        self._replayed = (outs, moved)
        self._next = tuple(o._grad_edge() if o.requires_grad else (None, 0) for o in outs[:len(self._output_types)])
        self._single_node_ok = self._unit_ok = False

    def _move_hooks(self, outs, moved):
        """Register this node's output hooks and retained grads not moved yet on the replayed
        outputs ``outs`` (each runs only while still registered here)."""
        from .autograd.engine import store_retained
        for k, hooks in self._tensor_pre_hooks.items():
            for hid, fn in hooks.items():
                if (k, hid) not in moved:
                    moved.add((k, hid))
                    outs[k].register_hook(lambda g, k=k, hid=hid, fn=fn:
                                          fn(g) if hid in self._tensor_pre_hooks.get(k, {}) else None)
        for k, ref in self._retains_grad.items():
            t = ref()
            if t is not None and (k, "retain") not in moved:
                moved.add((k, "retain"))
                outs[k].register_hook(lambda g, t=t: store_retained(t, g))

    def apply(self, grads, retain_graph=True):
        if self._replayed is not None:      # its edges lead to the replayed outputs: pass the gradients on
            outs, moved = self._replayed
            self._move_hooks(outs, moved)
            return list(grads[:len(self._next)])
        if self._residuals is None or any(grads[k] is not None for k in self._spec.freed_outputs):
            raise RuntimeError(FREED_MESSAGE)
        spec = self._spec
        if (self._tensor_pre_hooks or self._retains_grad or grad_mode._state.enabled or self._replayed) and \
                self._replays({k: g for k, g in enumerate(grads) if g is not None}):
            return _unreached_as_none(spec, grads, self._replayed_gradients(grads, retain_graph))
        cts = []
        for g, t in zip(grads, self._output_types):
            if t is None:
                continue
            cts.append(g if g is not None else
                       Tensor(np.zeros(t.shape, dtype=t.dtype.np))._to_device(self._device))
        given = [k for k, g in enumerate(grads) if g is not None]
        return _unreached_as_none(spec, grads, self._gradients(spec, cts, retain_graph, given))

    def _gradients(self, spec, cts, retain_graph, given):
        """The gradients of every ``wrt`` input for the cotangents ``cts`` (one per float output)."""
        if grad_mode.is_grad_enabled():   # create_graph=True: differentiate the adjoint too
            if spec.random:
                raise RuntimeError(f"backward(create_graph=True) through @gradc.compile({spec.traced.name}), which "
                                   "draws random numbers (dropout), is not supported: the differentiated backward "
                                   "would draw new ones; compute higher derivatives eagerly or without dropout")
            if spec.written & spec.grad_reads:     # (a written input the gradients do not read is no matter)
                raise RuntimeError(f"backward(create_graph=True) through @gradc.compile({spec.traced.name}), which "
                                   "writes into tensors in place (running statistics, an argument), is not "
                                   "supported: the differentiated backward would read the written values")
            # (the differentiated backward reads the inputs it computes the gradients from: one
            # changed in place since the call is the copy kept of it, ``_input_written``)
            inputs = self._unpack(spec.eager_saved | spec.grad_reads)
            grads = list(spec.grad_function()(*inputs, *cts))
            self._check_release_on_double_backward(given, grads)
            return self._tied_to_inputs(spec, grads, given)
        if spec.precompute:
            return self._scaled_precomputed(cts[0], retain_graph)
        inputs = self._unpack(spec.eager_saved)     # the errors eager autograd would raise
        residuals = list(self._residuals)
        for k, i in spec.saved_inputs.items():
            if i not in spec.copied_inputs:    # (the others' residual is a copy taken at the call)
                residuals[k] = inputs[i]._data
        arrays = spec.backward.run(residuals + [c._data for c in cts])
        grads = []
        for a, fresh in zip(arrays, spec.fresh_grads):
            t = _wrap(a, self._device)
            t._fresh = fresh     # nobody else holds this array: AccumulateGrad may keep it
            grads.append(t)
        return grads

    def _tied_to_inputs(self, spec, grads, given):
        """create_graph=True: a gradient that eagerly runs back through relu, threshold, ... (whose
        PyTorch backward takes the op's input) requires grad and reaches the input, tied to it as
        eagerly (``_InputTie``, with its derivative: zeros, none or PyTorch's error); the compiled
        adjoint computes it through a comparison, which carries none (``input_tied_gradients``:
        table ops so named, and compositions such as hardtanh, the pools and the pads)."""
        if spec.tied_inputs is None:
            spec.tied_inputs = input_tied_gradients(spec.traced, spec.wrt)
        frees = spec.double_backward_frees(given) if spec.tied_inputs else {}
        for j, (name, kind) in spec.tied_inputs.items():
            g = grads[j] if j < len(grads) else None
            edge = self._next[j] if j < len(self._next) else (None, 0)
            if g is not None and edge[0] is not None and g.dtype.is_floating_point:
                if any(j in d for d in frees.get(j, ())):     # (eagerly the tie runs through saving nodes)
                    edge = (_FreedGuard(self, frees, j, {j}, self._ran_now(), edge), 0)
                grads[j] = _InputTie.of(name, kind, g, edge, g)
        return grads

    def _precomputed_arrays(self, retain_graph):
        """The gradient arrays the forward computed for a cotangent of 1, with no version check:
        they were computed from the inputs' values at the call, so an input modified since does
        not change them; only the inputs that eager autograd would have saved are checked
        (``eager_saved``: PyTorch's exp, for one, saves its result, not its input).  They are
        handed over (AccumulateGrad may keep them); a backward that retains the graph gets
        copies, the node keeping the arrays for the next one.  (After a backward that handed
        them over without freeing the node, which saves nothing eagerly, they are recomputed
        from the inputs, which must then be unmodified where the gradients read them.)"""
        arrays = self._residuals
        if arrays[0] is not None:
            self._unpack(self._spec.eager_saved)     # the errors eager autograd would raise
        else:                       # handed over before: recomputed from the inputs it reads
            inputs = self._unpack(self._spec.eager_saved | self._spec.grad_reads)
            arrays = self._spec.forward.run([t._data for t in inputs])[self._spec.n_outputs:]
        if retain_graph:
            self._residuals = arrays
            return [_snapshot(a) for a in arrays]
        self._residuals = [None] * len(arrays)
        return arrays

    def _scaled_precomputed(self, ct, retain_graph):
        """Gradients computed by the forward for a cotangent of 1, times ``ct``."""
        arrays = self._precomputed_arrays(retain_graph)
        scale = ct.item()
        grads = []
        on_cpu = self._device is CPU
        for a, fresh in zip(arrays, self._spec.fresh_grads):
            t = Tensor._wrap(a) if on_cpu else _wrap(a, self._device)
            if scale != 1.0:
                if fresh and isinstance(a, np.ndarray):
                    np.multiply(a, scale, out=a)     # nobody else holds it: scale in place
                else:
                    t, fresh = t * scale, True
            t._fresh = fresh
            grads.append(t)
        return grads


_EMPTY = inspect.Parameter.empty


def _plain_parameters(signature):
    """[(name, default)] when every parameter is positional-or-keyword, else None."""
    if signature is None:
        return None
    params = list(signature.parameters.values())
    if any(p.kind is not inspect.Parameter.POSITIONAL_OR_KEYWORD for p in params):
        return None
    return [(p.name, p.default) for p in params]


class CompiledFunction:
    """The callable returned by ``gradc.compile``."""

    def __init__(self, fn, *, target="auto", memory="min-memory", fallback=False, name=None, backward="auto"):
        self.fn = fn
        self.target = target
        self.memory = memory
        self.backward = backward
        self.fallback = fallback
        self.__name__ = name or getattr(fn, "__name__", "compiled")
        self.__doc__ = getattr(fn, "__doc__", None)
        self._cache: dict = {}
        self._variants: dict = {}       # key -> the specialisations with guards beyond the key, newest last
        self._rebound: set = set()      # access paths of small tensors seen rebound: lifted, not constants
        self._eager_keys: set = set()   # (fallback=True) the guard keys whose trace failed: run eagerly
        self._compiles = 0
        self._last_key = None
        self._hit = None                # (spec, grad mode, default dtype, arguments' keys): ``_lookup``
        self.log: list[str] = []
        self._ir = None
        self._backend = None
        try:
            self._signature = inspect.signature(fn) if fn is not None else None
        except (TypeError, ValueError):
            self._signature = None
        self._params = list(self._signature.parameters) if self._signature is not None else []
        self._by_name = _plain_parameters(self._signature)
        # keyword-only parameters travel at the end of the positional arguments (_positional, _call)
        self._kwonly = tuple(n for n, p in self._signature.parameters.items()
                             if p.kind is p.KEYWORD_ONLY) if self._signature is not None else ()

    def __get__(self, obj, objtype=None):
        """A compiled method (``@gradc.compile`` on a ``def`` in a class, as on ``forward``) binds
        like the function it wraps: the instance is its first, non-tensor, argument (a
        specialisation per instance, guarded by identity)."""
        return self if obj is None else types.MethodType(self, obj)

    @classmethod
    def from_ir(cls, func: Function, *, memory="min-memory", backend=None):
        self = cls(None, memory=memory, name=func.name)
        self._ir = func
        self._backend = backend
        self._params = [a.name_hint or f"arg{i}" for i, a in enumerate(func.args)]
        return self

    # ---- guards ----------------------------------------------------------------------------
    def _key(self, args):
        """(the guard key of a call, its tensor arguments)."""
        keys = []
        for a in args:          # (a plain loop: on Python 3.11 a comprehension is a function call)
            if isinstance(a, Tensor):
                keys.append((a._data.shape, a._dtype.name, a._device._key, a._requires_grad))
            else:
                break
        else:                   # tensors only: the common call
            return (tuple(keys), (), grad_mode._state.enabled, dtypes.default_float,
                    autocast_state.guard_key() if autocast_state.ever_active[0] else None), args
        keys, statics, tensors = [], [], []
        for a in args:
            if isinstance(a, Tensor):
                keys.append((a._data.shape, a._dtype.name, a._device._key, a._requires_grad))
                tensors.append(a)
            else:
                statics.append(_static_key(a))
        key = (tuple(keys), tuple(statics), grad_mode._state.enabled, dtypes.default_float,
               autocast_state.guard_key() if autocast_state.ever_active[0] else None)
        return key, tensors

    def _why(self, key) -> str:
        if self._last_key is None:
            return "first call"
        old_t, old_s, old_g, old_d, old_a = self._last_key
        new_t, new_s, new_g, new_d, new_a = key
        if old_g != new_g:
            return f"grad mode changed from {old_g} to {new_g}"
        if old_a != new_a:
            return f"autocast changed from {old_a or 'off'} to {new_a or 'off'}"
        if old_d is not new_d:
            return f"default dtype changed from {old_d} to {new_d}"
        if len(old_t) != len(new_t):
            return f"number of tensor arguments changed from {len(old_t)} to {len(new_t)}"
        for i, (a, b) in enumerate(zip(old_t, new_t)):
            a, b = _ArgKey(a[0], a[1], str(a[2]), a[3]), _ArgKey(b[0], b[1], str(b[2]), b[3])
            if a != b:
                name = self._params[i] if i < len(self._params) else f"arg{i}"
                fields = [f for f in ("shape", "dtype", "device", "requires_grad") if getattr(a, f) != getattr(b, f)]
                f = fields[0]
                return (f"argument {i} ({name}): {f} changed from {_fmt(getattr(a, f))} to "
                        f"{_fmt(getattr(b, f))}")
        return f"non-tensor arguments changed from {old_s} to {new_s}"

    def explain(self) -> str:
        """Why each specialisation was compiled (one line per compile)."""
        return "\n".join(self.log) if self.log else f"{self.__name__}: not compiled yet"

    # ---- compile ---------------------------------------------------------------------------
    def _trace(self, args, key):
        from .ir.tracer import ArgSpec, _definition_location, trace
        if self._ir is not None:
            f = clone_function(self._ir)
            # (every input is an argument: what the trace of the function it was made from
            # captured, wrote or guarded is no part of it: a create_graph gradient function's
            # joint was cloned with the user's function's meta, its captured tensors arguments now)
            f.meta = {}
            for i, k in enumerate(key[0]):
                f.arg_attrs[i] = {"gradc.requires_grad": True} if k[3] else {}
            return f, len(f.outputs), leaf_tree(len(f.outputs))
        tensor_pos = [i for i, a in enumerate(args) if isinstance(a, Tensor)]
        specs = []
        for n, i in enumerate(tensor_pos):
            a = args[i]
            name = self._params[i] if i < len(self._params) else f"arg{i}"
            # (under no_grad too: the tracer detaches what the function computes outside an
            # enable_grad block, and what one computes requires grad, as eagerly)
            specs.append(ArgSpec(name, tuple(a.shape), a.dtype, a.requires_grad))
        def flat(*tensor_args):
            full = list(args)
            for i, t in zip(tensor_pos, tensor_args):
                full[i] = t
            return self._call(full)

        lift = frozenset(id(t) for t in (capture_paths.resolve(self.fn, p, args) for p in self._rebound)
                         if t is not None)
        func = trace(flat, specs, name=self.__name__, lift_captured=True, lift_ids=lift, source=self.fn)
        func.loc = _definition_location(self.fn) or func.loc     # the user's def, not this wrapper
        return func, len(func.outputs), func.meta["output_structure"]

    def _build(self, args, key):
        t0 = time.perf_counter()
        func, n_out, tree = self._trace(args, key)
        captured = list(func.meta.get("captured", ()))
        made_leaves = list(func.meta.get("requires_grad_args", ()))      # (x.requires_grad_() in the function)
        wrt = [i for i, k in enumerate(key[0]) if k[3] or i in made_leaves]   # (pruned below: what the outputs need)
        wrt += [len(key[0]) + j for j, t in enumerate(captured) if t.requires_grad and key[2]]
        devices = {str(t.device) for t in list(args) + captured if isinstance(t, Tensor)}
        target = self.target
        if target == "auto":
            target = "cuda" if any(d.startswith("cuda") for d in devices) else "cpu"
        wrong = sorted(d for d in devices if not d.startswith(target)) if target in ("cpu", "cuda") else []
        if wrong:
            raise RuntimeError(f"@gradc.compile({self.__name__}): target {target} got a tensor on {wrong[0]}"
                               + (" (all tensor arguments must be on one device)" if self.target == "auto" else ""))
        backend = self._backend if self._ir is not None else _backend(target)
        writes = func.meta.get("state_writes", ())       # (the trace returns their new values last)
        n_user, n_args = n_out - len(writes), len(key[0])
        # the user's outputs, and the new values of written arguments: those carry gradients too
        # (h.mul_(2) on a non-leaf argument, buf.add_(x * 2)); a captured tensor's do not
        view_outputs = _view_outputs(func, n_user)     # (eager views of the arguments: no part of the node)
        candidates = [k for k in range(n_user) if k not in view_outputs] + \
            [n_user + j for j, (pos, _) in enumerate(writes) if pos < n_args]
        wrt, grad_outputs = differentiable_reach(func, wrt, candidates)
        spec = _Specialization(func, wrt, self.memory, backend, n_out, self.backward,
                               written=[pos for pos, _ in writes])
        spec.n_state_outputs = len(writes)
        spec.requires_grad_args = made_leaves
        spec.freed_outputs = outputs_through_freed(func, n_user)
        spec.view_outputs = view_outputs
        spec.float_outputs = [k for k in grad_outputs if k < n_user and k not in spec.view_outputs]
        spec.state_slots = [pos for pos, _ in writes]
        spec.arg_writes = [pos for pos, _ in writes if pos < n_args]
        spec.view_writes = frozenset(func.meta.get("view_written", ()))
        spec.grad_writes = [(spec.state_slots[k - n_user], k) for k in grad_outputs if k >= n_user]
        spec.output_deps = output_dependencies(func, spec.wrt, n_out)
        spec.repeats = repeated_outputs(func, n_user)
        spec.internal_outputs = internal_outputs(func, spec.float_outputs)
        spec.graph_outputs = [k for k in spec.float_outputs if k not in spec.repeats]   # get this node as grad_fn
        spec.leaf_outputs, spec.leaf_graph_outputs = inner_leaf_outputs(
            func, [k for k in range(n_user) if k not in spec.float_outputs])
        spec.captured = captured
        spec.objects = [a for a in args if not isinstance(a, (Tensor, int, float, bool, str, type(None)))]
        spec.captured_keys = [_captured_key(t) for t in captured]
        spec.constants = list(func.meta.get("constants", ()))
        spec.modules = [(m, _scalar_getter(scalars), _scalar_values(scalars))
                        for m, scalars in func.meta.get("modules", ())]
        spec.scalars = capture_paths.scalar_guards(self.fn) if self.fn is not None else []
        spec.module_configs = [(m, guards) for m, _ in func.meta.get("modules", ())
                               for guards in [capture_paths.module_config_guards(m)] if guards]
        spec.guarded = bool(captured or spec.constants or spec.modules or spec.scalars or spec.module_configs)
        # where each captured tensor was found, to read the one there now at every call
        spec.captured_paths = capture_paths.find_paths(self.fn, captured, Tensor, args) if self.fn is not None else []
        spec.constant_paths = (capture_paths.find_paths(self.fn, [t for t, _ in spec.constants], Tensor, args)
                               if self.fn is not None else [])
        spec.tree = tree
        spec.half_outputs = func.meta.get("half_outputs", ())
        spec.device = next((t.device for t in args if isinstance(t, Tensor)), CPU)
        spec.single = tree == ("leaf", 0)
        spec.plain_tuple = tree == leaf_tree(n_user)
        spec.post_outputs = bool(spec.view_outputs or spec.leaf_outputs or spec.leaf_graph_outputs or spec.repeats
                                 or spec.half_outputs)
        spec.total_seconds = time.perf_counter() - t0
        return spec

    def _lookup(self, args, kwargs):
        """(specialisation, tensor arguments, captured tensors) of a call, compiled if need be;
        (None, the function's eager result, None) when ``fallback=True`` ran it eagerly."""
        if kwargs or self._kwonly:    # keyword arguments (and defaults) become positional, as the trace sees them
            args = self._positional(args, kwargs)
        key, tensors = self._key(args)
        spec = self._cache.get(key)
        captured = None
        stale = None
        if spec is not None and spec.guarded:
            captured = self._current_captured(spec, args)
            stale = self._stale_capture(spec, captured, args)
            if stale is not None:       # another specialisation of this key may fit (model.train()/eval())
                spec = None
                for other in self._variants.get(key, ()):
                    now = self._current_captured(other, args)
                    if self._stale_capture(other, now, args) is None:
                        spec, captured, stale = other, now, None
                        self._cache[key] = other
                        break
        if spec is None:
            falls_back = self.fallback and self.fn is not None
            if falls_back and key in self._eager_keys:
                return None, self._call(args), None   # (its trace failed before: no trace, the function runs once)
            reason = stale or self._why(key)
            try:
                # (with fallback, what the trace prints is held back: dropped if it fails, as the
                # eager run prints it again; other side effects of the failed trace do happen twice)
                with held_stdout() if falls_back else contextlib.nullcontext():
                    spec = self._build(args, key)
            except Exception as e:
                self.log.append(f"could not compile {self.__name__} ({reason}): {type(e).__name__}: {e}")
                if falls_back:
                    out = self._call(args)     # (code that fails eagerly too raises its eager error, no warning)
                    self._eager_keys.add(key)
                    warn_at_user_code(f"@gradc.compile({self.__name__}) fell back to eager mode: {e}", UserWarning)
                    return None, out, None
                raise
            self._cache[key] = spec
            if spec.guarded:
                variants = self._variants.setdefault(key, [])
                variants.append(spec)
                del variants[:-MAX_VARIANTS]
            captured = spec.captured
            msg = f"compiled {self.__name__} ({reason}) in {spec.total_seconds * 1e3:.1f} ms"
            self.log.append(msg)
            log.info(msg)
            self._compiles += 1
            if self._compiles == RECOMPILE_WARNING:
                warn_at_user_code(f"@gradc.compile({self.__name__}) has compiled {self._compiles} times (the last "
                                  f"because {reason}); a value that changes at every call (a Python number the "
                                  "function reads, a tensor's shape) makes every call compile: pass it as a tensor "
                                  "argument; fn.explain() lists the reasons", UserWarning)
        self._last_key = key
        self._hit = None
        if tensors is args and not spec.guarded and not self._kwonly and key[4] is None:
            # only the key guards it (all arguments tensors): the next call with the same key
            # finds it by comparing its arguments with these (``_same_arguments``)
            self._hit = (spec, key[2], key[3], tuple([(a._data.shape, a._dtype, a._device, a._requires_grad)
                                                       for a in args]))
        return spec, tensors, captured

    def __call__(self, *args, **kwargs):
        if _dispatch.capturing.items and self.fn is not None:
            # called while another compiled function is traced: its Python runs inline, so its
            # ops join the caller's IR (and are fused and differentiated with them)
            return self.fn(*args, **kwargs)
        hit = self._hit
        if (hit is not None and not kwargs and grad_mode._state.enabled is hit[1] and dtypes.default_float is hit[2]
                and not autocast_state.ever_active[0] and _same_arguments(args, hit[3])):
            spec, tensors, captured = hit[0], args, None     # the last call's key: none to build and hash
        else:
            spec, tensors, captured = self._lookup(args, kwargs)
            if spec is None:
                return tensors      # (fallback=True, a trace that failed: the function's eager result)
        if captured:
            tensors = [*tensors, *captured]
        if spec.arg_writes:
            _check_argument_writes(self.__name__, spec, tensors)
        if spec.requires_grad_args:
            for pos in spec.requires_grad_args:       # x.requires_grad_() in the function: the caller's x
                tensors[pos].requires_grad_()
        if _inference_seen[0] and spec.wrt and spec.eager_saved and grad_mode._state.enabled:
            _check_no_inference_saved(spec, tensors)
        arrays = [t._data for t in tensors]
        results = spec.forward.run(arrays)
        n = spec.n_outputs
        outs = _own(results[:n], arrays, spec.copy_outputs) if spec.copy_outputs else results[:n]
        state_values = None
        if spec.n_state_outputs:
            m = n - spec.n_state_outputs
            state_values, outs = outs[m:], outs[:m]
        dev = spec.device
        result = Tensor._wrap_all(outs) if dev is CPU else [_wrap(a, dev) for a in outs]
        if spec.wrt:
            residuals = list(results[n:])
            for k, i in spec.saved_inputs.items():   # read from the (version-checked) input at backward
                residuals[k] = None if i not in spec.copied_inputs else _snapshot(arrays[i])
            if spec.aliased_residuals:     # (before the writes below change the arguments' arrays)
                residuals = _own(residuals, [arrays[i] for i in spec.written], spec.aliased_residuals)
            edges = _grad_edges(tensors, spec.wrt)
            node = CompiledFunctionBackward(spec, tensors, residuals, edges, spec.out_types)
            for k in spec.float_outputs:
                t = result[k]
                t._grad_fn, t._output_nr, t._requires_grad = node, k, True
            if spec.eager_saved_outputs:
                node._saved_outputs = [_SavedOutput(result[k], name, nr)
                                       for k, (name, nr) in spec.eager_saved_outputs.items()
                                       if k in spec.float_outputs]
        if spec.post_outputs:
            _post_outputs(spec, tensors, result)
        if state_values is not None:      # after the node took the versions, as eager code's order
            _write_state(spec, tensors, state_values)
            if spec.wrt:
                for pos, k in spec.grad_writes:     # a written argument's new value comes from the node
                    t = tensors[pos]
                    t._grad_fn, t._output_nr, t._requires_grad = node, k, True
        if spec.single:
            return result[0]
        return tuple(result) if spec.plain_tuple else unflatten_output(spec.tree, result)

    def _current_captured(self, spec, args=()) -> list:
        """The captured tensors this call reads: what each one's access path (``capture_paths``)
        leads to now, so ``model.weight = Parameter(...)`` or a new ``p.grad`` is seen (None where
        the path no longer leads to a tensor: a recompile); a tensor no path reached is the one
        captured at trace time."""
        current = list(spec.captured)
        for j, path in enumerate(spec.captured_paths):
            if path is not None:
                t = capture_paths.resolve(self.fn, path, args)
                current[j] = t if isinstance(t, Tensor) else None    # None: gone (p.grad = None)
        return current

    def _stale_capture(self, spec, captured, args=()) -> str | None:
        """Why a specialisation's captured tensors no longer fit it, or None: a lifted one changed
        shape, dtype, device or requires_grad (or was rebound to one that differs so); a one-element one
        baked in as a constant was modified or rebound."""
        for j, (t, old) in enumerate(zip(captured, spec.captured_keys)):
            if t is None:
                where = _path_text(spec.captured_paths[j])
                return f"captured tensor {j} ({where}) is no longer a tensor"
            if t._data.shape == old[0] and t._dtype is old[1] and t._device == old[2] and t._requires_grad == old[3]:
                continue
            for field, a, b in zip(("shape", "dtype", "device", "requires_grad"), _shown_key(old),
                                   _shown_key(_captured_key(t))):
                if a != b:
                    where = _path_text(spec.captured_paths[j])
                    return (f"captured tensor {j}{f' ({where})' if where else ''}: {field} changed from "
                            f"{_fmt(a)} to {_fmt(b)}")
        for (t, version), path in zip(spec.constants, spec.constant_paths):
            if path is not None:
                now = capture_paths.resolve(self.fn, path, args)
                if isinstance(now, Tensor) and now is not t:
                    self._rebound.add(path)     # the next trace makes it an argument (p.grad each step)
                    return (f"a captured one-element tensor (compiled in as a constant) was rebound: "
                            f"{_path_text(path)} is another tensor")
            if t._version_counter.value != version:
                return "a captured one-element tensor (compiled in as a constant) was modified in place"
        for path, value in spec.scalars:
            now = capture_paths.resolve(self.fn, path)
            if type(now) is not type(value) or (now != value and value == value):   # (nan stays nan)
                return f"{_path_text(path)} changed from {value!r} to {now!r}"
        for m, getter, values in spec.modules:
            try:
                same = getter(m.__dict__) == values
            except KeyError:
                same = False
            if not same:
                where = _path_text(capture_paths.find_paths(self.fn, [m], Tensor)[0]) if self.fn is not None else ""
                old, new = dict(zip(getter.names, values if len(getter.names) > 1 else (values,))), m.__dict__
                name = next((k for k in getter.names if new.get(k, _GONE) != old[k]), "?")
                return (f"{where or type(m).__name__}.{name} changed from {old.get(name, _GONE)!r} to "
                        f"{new.get(name, _GONE)!r}")
        for m, guards in spec.module_configs:
            for path, value in guards:
                now = capture_paths.resolve(m, path)
                if type(now) is not type(value) or (now != value and value == value):
                    where = _path_text(capture_paths.find_paths(self.fn, [m], Tensor)[0]) if self.fn is not None else ""
                    return f"{where or type(m).__name__}{_path_text(path)} changed from {value!r} to {now!r}"
        return None

    def _positional(self, args, kwargs) -> tuple:
        """``args`` and ``kwargs`` as the positional arguments of the function, defaults filled
        in.  Plain parameters (no ``*args``, ``**kwargs``, keyword-only) take a fast path; the
        rest, and every mistake, go through ``inspect`` (for its error messages).  Binding with
        ``inspect`` on every call cost about 35 us, twice a whole W5 step."""
        plain = self._by_name
        if plain is not None and len(args) <= len(plain):
            rest = plain[len(args):]
            if (len(kwargs) == sum(name in kwargs for name, _ in rest)
                    and all(name in kwargs or default is not _EMPTY for name, default in rest)):
                return tuple(args) + tuple(kwargs[name] if name in kwargs else default for name, default in rest)
        if self._signature is None:
            raise TypeError(f"@gradc.compile({self.__name__}): keyword arguments need a Python function")
        try:
            bound = self._signature.bind(*args, **kwargs)
        except TypeError as e:
            raise TypeError(f"@gradc.compile({self.__name__}): {e}") from None
        bound.apply_defaults()
        if set(bound.kwargs) - set(self._kwonly):
            raise TypeError(f"@gradc.compile({self.__name__}): **kwargs are not supported; name the keyword "
                            "arguments in the function's signature")
        return bound.args + tuple(bound.kwargs[name] for name in self._kwonly)

    def _call(self, args):
        """Call the Python function with the positional arguments of ``_positional``."""
        if not self._kwonly:
            return self.fn(*args)
        n = len(args) - len(self._kwonly)
        return self.fn(*args[:n], **dict(zip(self._kwonly, args[n:])))

    def ir(self):
        """The most recent specialisation: its ``traced`` and ``joint`` functions, and either
        ``precomputed`` (scalar losses, backward="auto") or ``partition.forward``/``backward``,
        or ``forward_only``; ``backend.kernels`` holds the compiled kernels."""
        spec = self._cache.get(self._last_key)
        if spec is None:
            raise RuntimeError(f"{self.__name__} has not been called yet")
        return spec


def _without_detach(func: Function) -> Function:
    """``func`` with its ``detach`` ops removed (their uses read the operand): in a function
    compiled without gradients they only mark no_grad blocks, and would split its kernels."""
    for op in list(func.body.ops):
        if op.name == "gradc.detach":
            op.results[0].replace_all_uses_with(op.operands[0])
            op.erase()
    return func


def _raises_in_backward(joint: Function) -> bool:
    """Whether a gradient of ``joint`` is an error eager backward would raise (``backward_error``):
    it must not be precomputed in the forward."""
    return any(op.name == "gradc.backward_error" for op in joint.body.ops)


def _unread_arguments(joint: Function, n_primals: int) -> frozenset:
    """Positions of the primal arguments the optimized joint function does not read (an
    in-place change to one before backward is no error: PyTorch saves no such tensor)."""
    return frozenset(i for i, a in enumerate(joint.args[:n_primals]) if not a.uses)


def _snapshot(a):
    """A copy of a host or device array (a written input's value, kept for backward)."""
    if isinstance(a, DeviceArray):
        c = a.driver.empty(a.shape, a.dtype)
        a.driver.copy(c, a)
        return c
    return np.array(a, copy=True)


def _write_state(spec, tensors, values) -> None:
    """Carry out a compiled call's in-place writes into its arguments and the tensors from
    outside the function, each a change of its version (as ``t.add_(...)`` eagerly)."""
    for j, a in zip(spec.state_slots, values):
        t = tensors[j]
        if t._version_counter.watchers:
            before_write(t._version_counter)
        if isinstance(t._data, DeviceArray):
            t._data.driver.copy(t._data, a)
        else:
            np.copyto(t._data, a, casting="unsafe")
        t._version_counter.value += 1


class _ScalarGetter:
    """``getter(module.__dict__)``: the values of the named attributes, as ``operator.itemgetter``
    gives them (one value for one name), fast enough to run for every module at every call."""
    __slots__ = ("names", "get")

    def __init__(self, names):
        self.names = names
        self.get = operator.itemgetter(*names) if names else (lambda d: ())

    def __call__(self, d):
        return self.get(d)


def _scalar_getter(scalars) -> _ScalarGetter:
    return _ScalarGetter(tuple(k for k, _ in scalars))


def _scalar_values(scalars):
    values = tuple(v for _, v in scalars)
    return values[0] if len(values) == 1 else values


def _post_outputs(spec, tensors, result) -> None:
    """The outputs a compiled call does not take from its kernels as they are: views of its
    inputs, leaves the function made, repeated outputs, autocast's float16 values."""
    for k, (pos, chain) in spec.view_outputs.items():     # views of inputs, as eagerly
        t = tensors[pos]
        for name, attrs in chain:     # (Tensor.detach: shares the version counter, as eagerly)
            t = t.detach() if name == "detach" else _dispatch.apply(name, t, **attrs)
        result[k] = t
    for k in spec.leaf_outputs:       # (after the views: a.detach().requires_grad_() is one)
        result[k]._requires_grad = True
    if spec.leaf_graph_outputs:
        inner = _InnerLeavesBackward(spec.n_outputs, spec.freed_outputs)
        for k in spec.leaf_graph_outputs:
            t = result[k]
            t._grad_fn, t._output_nr, t._requires_grad = inner, k, True
    for k, first in spec.repeats.items():     # return (y, y): the same tensor twice, as eagerly
        result[k] = result[first]
    for k in spec.half_outputs:       # (float16 emulated in the IR: autocast's outputs, as eagerly)
        result[k] = result[k].to(dtypes.float16)


def _grad_edges(tensors, positions) -> tuple:
    """The gradient edges (``Tensor._grad_edge``) of ``tensors[i]`` for ``i`` in ``positions``: a
    leaf's edge made before is taken without a call (once per argument of every compiled call)."""
    edges = []
    for i in positions:
        t = tensors[i]
        e = t._leaf_edge
        if e is None or t._grad_fn is not None or t._view_of is not None:
            e = t._grad_edge()
        edges.append(e)
    return tuple(edges)


def _same_arguments(args, keys) -> bool:
    """``args`` are tensors with the shapes, dtypes, devices and requires_grad of ``keys`` (as
    ``CompiledFunction._lookup`` took them): the guard key of a call with ``args`` is that call's."""
    if len(args) != len(keys):
        return False
    i = 0
    for a in args:          # (a plain loop: on Python 3.11 zip and a comprehension cost more)
        k = keys[i]
        if not (isinstance(a, Tensor) and a._data.shape == k[0] and a._dtype is k[1] and a._device is k[2]
                and a._requires_grad is k[3]):
            return False
        i += 1
    return True


def _static_key(a):
    """The guard key of a non-tensor argument: a Python scalar by value; a list, tuple or dict by
    its structure and the types of the tensors in it (their values are read through access
    paths at each call, ``capture_paths``); any other object (a module) by identity."""
    if isinstance(a, (int, float, bool, str, type(None))):
        return a
    if isinstance(a, Tensor):
        return ("tensor", a._data.shape, a._dtype.name, str(a._device), a._requires_grad)
    if isinstance(a, (list, tuple)):
        return (type(a).__name__, tuple(_static_key(x) for x in a))
    if isinstance(a, dict):
        return ("dict", tuple((k, _static_key(v)) for k, v in a.items()))
    return ("object", type(a).__qualname__, id(a))


def _path_text(path) -> str:
    """An access path as the user would write it: ``model._modules['0']._parameters['weight']``
    reads ``model[0].weight``."""
    if path is None:
        return ""
    text = ""
    table = False          # the previous step entered a module's _parameters/_buffers/_modules
    for step in path:
        kind = step[0]
        after_table, table = table, kind == "attr" and step[1] in ("_parameters", "_buffers", "_modules")
        if kind == "arg":
            text = f"<argument {step[1]}>"
        elif kind in ("cell", "global"):
            text = step[2] if kind == "cell" else step[1]
        elif kind == "self":
            text = "self"
        elif kind == "self-code":
            text = f"{text or 'self'}.forward: {step[3] if step[1] == 'cell' else step[2]}"
        elif kind == "len":
            text = f"len({text})"
        elif kind == "attr":
            name = "grad" if step[1] == "_grad" else step[1]
            if name not in ("_parameters", "_buffers", "_modules"):
                text = f"{text}[{name}]" if name.isdigit() else f"{text}.{name}"
        else:
            key = step[1]
            if after_table and isinstance(key, str) and key.isidentifier():
                text = f"{text}.{key}"
            else:
                text = f"{text}[{key if isinstance(key, int) or key.isdigit() else repr(key)}]"
    return text


def _captured_key(t) -> tuple:
    return (t._data.shape, t._dtype, t._device, t._requires_grad)


def _shown_key(key) -> tuple:
    shape, dtype, device, requires_grad = key
    return (tuple(shape), dtype.name, str(device), requires_grad)


def _fmt(v):
    if isinstance(v, tuple):
        return "[" + ", ".join(map(str, v)) + "]"
    return str(v)


def _view_outputs(func: Function, n_outputs: int) -> dict:
    """{output position: (argument position, [(op, attrs), ...])} for the outputs that are an
    argument or a chain of views of one (reshape, transpose, expand, basic indexing, detach):
    the call replays the chain on the caller's tensor, so the output is a view of it (writes
    through it reach the input; ``f(x) is x`` for an identity) and its grad_fn is eager's."""
    from .ops.registry import VIEW
    position = {a: i for i, a in enumerate(func.args)}
    traced_no_grad = func.meta.get("view_detaches", ())     # (dropped: the view replayed under no_grad is one)
    found = {}
    for k, v in enumerate(func.outputs[:n_outputs]):
        chain = []
        while v not in position:
            op = v.owner
            if not hasattr(op, "results") or len(op.operands) != 1 or len(op.results) != 1:
                break
            opdef = op.opdef
            if opdef is None or not (opdef.has(VIEW) or op.name == "gradc.detach" or (
                    op.name == "gradc.index" and not any(e[0] == "tensor" for e in op.attrs.get("key", ())))):
                break
            if v not in traced_no_grad:
                chain.append((opdef.name, dict(op.attrs)))
            v = op.operands[0]
        if v in position:
            found[k] = (position[v], chain[::-1])
    return found


def _maybe_aliasing(func: Function, values) -> set:
    """Indices of ``values`` whose memory may be shared with an argument or another value:
    arguments themselves and results of views, indexing and detach (NumPy may return views)."""
    from .ops.registry import VIEW
    out = set()
    for k, v in enumerate(values):
        op = v.owner
        if not hasattr(op, "results") or op.has_trait(VIEW) or op.name in ("gradc.index", "gradc.detach"):
            out.add(k)
    return out


def _own(outs, inputs, candidates):
    """Copy outputs that may alias a caller's input without being one of its views (those are replayed:
    ``_view_outputs``): a computed output is fresh, as eagerly."""
    if not candidates:
        return outs
    fixed = list(outs)
    for k in candidates:
        if isinstance(fixed[k], DeviceArray):      # device buffers may be shared by a reshape
            d = fixed[k]
            fixed[k] = d.driver.empty(d.shape, d.dtype)
            d.driver.copy(fixed[k], d)
            continue
        a = np.asarray(fixed[k])
        if any(np.may_share_memory(a, x) for x in inputs) or not a.flags.writeable:
            fixed[k] = np.array(a, copy=True)
    return fixed


BACKWARD_MODES = ("auto", "precompute", "separate")


# torch.compile's modes: accepted (and checked) for code written for it; gradc has one way to compile
TORCH_COMPILE_MODES = ("default", "lite", "reduce-overhead", "max-autotune-no-cudagraphs", "max-autotune")


def _torch_compile_arguments(backend, mode, options):
    """Check ``torch.compile``'s ``backend``, ``mode`` and ``options`` as PyTorch does; whether
    the function is to run eagerly (``backend="eager"``)."""
    if mode is not None and options is not None:
        raise RuntimeError("Either mode or options can be specified, but both can't be specified at the same time.")
    if mode is not None and mode not in TORCH_COMPILE_MODES:
        raise RuntimeError(f"Unrecognized mode={mode}, should be one of: {', '.join(TORCH_COMPILE_MODES)}")
    if options:
        raise RuntimeError(f"Unexpected optimization option {next(iter(options))}, gradc.compile has none "
                           "(target=, memory=, backward= and fallback= are its own keywords)")
    if backend not in ("inductor", "eager", "gradc"):
        raise RuntimeError(f"Invalid backend: {backend!r}: gradc.compile compiles with its own compiler "
                           "('inductor', the default, or 'gradc'), or runs eagerly ('eager')")
    return backend == "eager"


def compile(fn=None, *, target="auto", memory="min-memory", fallback=False, backward="auto", fullgraph=False,
            dynamic=None, backend="inductor", mode=None, options=None, disable=False, **unknown):
    """``@gradc.compile``, ``gradc.compile(fn)`` or ``@gradc.compile(target="cpu", memory=...)``.

    ``target``: ``auto`` (the default) compiles for the device of the tensor arguments (the
    CPU through LLVM, or ``cuda``: PTX kernels on the GPU); ``cpu`` and ``cuda`` insist on
    that device; ``interp`` runs the optimised IR with the op table's NumPy references.

    ``memory``: the partition policy of the separate forward/backward (``min-memory`` or ``save-all``).
    ``backward``: ``separate`` runs a partitioned forward and a backward kernel schedule;
    ``precompute`` computes the gradients in the forward pass, for a cotangent of 1, and scales
    them by the real cotangent in backward (for functions returning one 0-d float tensor, the
    usual loss: inputs are read once and backward does no work); ``auto`` (the default) uses
    ``precompute`` for such functions and ``separate`` otherwise.
    ``fallback``: a call whose trace fails runs the function eagerly, with a warning, and later
    calls with the same guard key run eagerly without a trace. The failed trace's prints are
    dropped (``held_output``); its other side effects happen again in the eager run.

    ``torch.compile``'s keywords are accepted for code written for it: ``disable=True`` or
    ``backend="eager"`` return the function as it is; ``fullgraph`` and ``dynamic`` change
    nothing (gradc always compiles the whole function, specialised on its input shapes);
    ``mode`` and ``options`` are checked as PyTorch checks them.
    """
    if unknown:
        raise TypeError(f"gradc.compile: unknown option(s) {', '.join(sorted(unknown))}")
    if _torch_compile_arguments(backend, mode, options) or disable:
        return (lambda f: f) if fn is None else fn
    if getattr(fn, "_gradc_disabled", False):        # gradc.compiler.disable
        return fn
    if target not in TARGETS:
        raise ValueError(f"gradc.compile: target must be one of {', '.join(TARGETS)}, got '{target}'")
    from .passes.partition import POLICIES
    if memory not in POLICIES:
        raise ValueError(f"gradc.compile: memory must be one of {', '.join(POLICIES)}, got '{memory}'")
    if backward not in BACKWARD_MODES:
        raise ValueError(f"gradc.compile: backward must be one of {', '.join(BACKWARD_MODES)}, got '{backward}'")
    kw = dict(target=target, memory=memory, fallback=fallback, backward=backward)
    if fn is None:
        return lambda f: compile(f, **kw)
    if not callable(fn):
        raise TypeError(f"gradc.compile: expected a function (or a module) to compile, got {type(fn).__name__}")
    from .nn.modules import Module
    if isinstance(fn, Module):          # as torch.compile: a module that runs the compiled call
        from .nn.optimized_module import OptimizedModule
        return OptimizedModule(fn, CompiledFunction(fn, name=type(fn).__name__, **kw), kw)
    return CompiledFunction(fn, **kw)
