"""User-defined ops: ``gradc.autograd.Function`` with forward/backward staticmethods."""
from __future__ import annotations

from . import grad_mode
from .node import Node, node_class  # noqa: F401


class FunctionCtx:
    def __init__(self):
        self.saved_tensors = ()
        self.needs_input_grad = ()
        self._non_diff = set()

    _packed = None     # the saved tensors as SavedTensors, when saved-tensor hooks were active

    def save_for_backward(self, *tensors):
        self._saved = tensors
        self._versions = [t._version_counter.value if t is not None else None for t in tensors]

    def _pack_saved(self):
        """Put the saved tensors through the saved-tensor hooks (``Function.apply`` calls this once
        the node exists, as PyTorch packs them after ``forward``)."""
        from .node import SavedTensor
        saved = getattr(self, "_saved", ())
        if saved:
            self._packed = [SavedTensor(t) if t is not None else None for t in saved]
            self._saved, self._versions = (), []

    @property
    def saved_tensors(self):
        from .node import FREED_MESSAGE
        if getattr(self, "_freed", False):
            raise RuntimeError(FREED_MESSAGE)
        if self._packed is not None:
            return tuple(s.unpack() if s is not None else None for s in self._packed)
        saved = getattr(self, "_saved", ())
        for t, v in zip(saved, getattr(self, "_versions", ())):
            if t is not None and t._version_counter.value != v:
                from .node import version_error
                raise version_error(t, v)
        return saved

    @saved_tensors.setter
    def saved_tensors(self, value):
        self._saved = value
        self._versions = [None] * len(value)

    def mark_non_differentiable(self, *tensors):
        self._non_diff.update(id(t) for t in tensors)

    def mark_dirty(self, *tensors):
        pass

    def set_materialize_grads(self, value):
        self._materialize = value


class _FunctionNode(Node):
    def __init__(self, fn_cls, ctx, next_functions, n_outputs):
        super().__init__()
        self._fn = fn_cls
        self.ctx = ctx
        self._next = next_functions
        self._output_types = [None] * n_outputs
        self._freed = False

    def name(self):
        return f"{self._fn.__name__}Backward"

    def release(self):
        self.ctx._freed = True
        self.ctx._packed = None

    def apply(self, grads, retain_graph=True):
        from ..tensor import zeros_for
        full = [g if g is not None or t is None else zeros_for(t) for g, t in zip(grads, self._types)]
        result = self._fn.backward(self.ctx, *full)
        if not isinstance(result, tuple):
            result = (result,)
        n = self._nargs
        if len(result) > n and all(g is None for g in result[n:]):
            result = result[:n]
        if len(result) != n:
            raise RuntimeError(f"function {self.name()} returned an incorrect number of gradients "
                               f"(expected {n}, got {len(result)})")
        for i, g in enumerate(result):
            if i not in self._positions and g is not None:
                raise RuntimeError(f"function {self.name()} returned a gradient different than None at position "
                                   f"{i + 1}, but the corresponding forward input was not a Variable")
        return [_as_input_dtype(result[i], dt) for i, dt in zip(self._positions, self._input_dtypes)]


def _as_input_dtype(g, dtype):
    """A gradient in its input's dtype, as PyTorch's engine casts what a backward returns (a float16
    gradient of a float32 input under autocast)."""
    have = getattr(g, "dtype", None)
    if have is None or have is dtype or not dtype.is_floating_point or not have.is_floating_point:
        return g
    return g.to(dtype)


def _refuse_under_compile(cls, args) -> None:
    """Under ``@gradc.compile``, a custom Function whose backward would run (grad mode on, an
    argument that requires grad) is a ``TraceError``: its backward is Python code the compiler
    can neither differentiate nor compile, and differentiating its forward instead would give
    other gradients.  (Without a gradient to compute, its forward is traced as any code.)"""
    from ..ops import dispatch
    from ..tensor import Tensor
    from ..tensor_api import is_tensor_like
    traced = [a for a in args if is_tensor_like(a) and not isinstance(a, Tensor)]
    if not (traced or dispatch.capturing) or not grad_mode.is_grad_enabled():
        return
    if any(is_tensor_like(a) and a.requires_grad for a in args):
        from ..ir.errors import TraceError
        raise TraceError(f"custom autograd.Function {cls.__name__} under @gradc.compile: its backward is Python "
                         "code that the compiler can neither differentiate nor compile; call it outside the compiled "
                         "function, or compile with fallback=True to run the function eagerly")


_BACKWARD_CLASSES: dict = {}


def _backward_class(fn_cls):
    """One node class per Function subclass, named and placed like PyTorch's
    (``<torch.autograd.function.MyFnBackward object at 0x...>``)."""
    cls = _BACKWARD_CLASSES.get(fn_cls)
    if cls is None:
        cls = _BACKWARD_CLASSES[fn_cls] = type(f"{fn_cls.__name__}Backward", (_FunctionNode,),
                                               {"__module__": "torch.autograd.function"})
    return cls


class Function:
    """Subclass with ``forward(ctx, *args)`` and ``backward(ctx, *grads)``; call ``.apply``."""

    @staticmethod
    def forward(ctx, *args, **kwargs):
        raise NotImplementedError("You must implement the forward function for custom autograd.Function.")

    @staticmethod
    def backward(ctx, *grads):
        raise NotImplementedError("You must implement either the backward or vjp method for your custom "
                                  "autograd.Function to use it with backward mode AD.")

    @classmethod
    def apply(cls, *args, **kwargs):
        from ..tensor import Tensor
        from ..ops.registry import TypeInfo
        _refuse_under_compile(cls, args)
        ctx = FunctionCtx()
        tensor_args = [a for a in args if isinstance(a, Tensor)]
        ctx.needs_input_grad = tuple(isinstance(a, Tensor) and a.requires_grad for a in args)
        with grad_mode.no_grad():
            out = cls.forward(ctx, *args, **kwargs)
        outputs = out if isinstance(out, tuple) else (out,)
        if grad_mode.is_grad_enabled() and any(t.requires_grad for t in tensor_args):
            positions = [i for i, a in enumerate(args) if isinstance(a, Tensor)]
            # PyTorch's node has an edge per Tensor argument only
            edges = tuple(args[i]._grad_edge() if args[i].requires_grad else (None, 0) for i in positions)
            node = _backward_class(cls)(cls, ctx, edges, len(outputs))
            node._positions, node._nargs = positions, len(args)
            node._input_dtypes = [args[i].dtype for i in positions]
            node._types = [TypeInfo(tuple(o.shape), o.dtype) if isinstance(o, Tensor) else None for o in outputs]
            from .node import _DEFAULT_HOOKS
            if any(t is not None and t._version_counter.inference for t in getattr(ctx, "_saved", ())):
                from ..tensor import INFERENCE_SAVE_ERROR
                raise RuntimeError(INFERENCE_SAVE_ERROR)
            if _DEFAULT_HOOKS:
                ctx._pack_saved()
            differentiable = [isinstance(o, Tensor) and id(o) not in ctx._non_diff and o.dtype.is_floating_point
                              for o in outputs]
            # an output that is a view may not be written in place (PyTorch's CreationMeta)
            meta = "multi_output" if sum(differentiable) > 1 else "custom_function"
            fixed = []
            for k, o in enumerate(outputs):
                if differentiable[k]:
                    if any(o is a for a in args):
                        with grad_mode.no_grad():
                            o = o[...]   # returning an input: PyTorch returns a view of it with a new grad_fn
                    o._grad_fn, o._output_nr, o._requires_grad = node, k, True
                    if o._base is not None:
                        o._creation_meta, o._view_output_nr = meta, k
                fixed.append(o)
            outputs = tuple(fixed)
        return outputs if isinstance(out, tuple) else outputs[0]
