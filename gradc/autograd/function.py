"""User-defined ops: ``gradc.autograd.Function`` with forward/backward staticmethods."""
from __future__ import annotations

from . import grad_mode
from .node import Node, node_class  # noqa: F401


class FunctionCtx:
    def __init__(self):
        self.saved_tensors = ()
        self.needs_input_grad = ()
        self._non_diff = set()

    def save_for_backward(self, *tensors):
        self._saved = tensors
        self._versions = [t._version if t is not None else None for t in tensors]

    @property
    def saved_tensors(self):
        from .node import FREED_MESSAGE
        if getattr(self, "_freed", False):
            raise RuntimeError(FREED_MESSAGE)
        saved = getattr(self, "_saved", ())
        for t, v in zip(saved, getattr(self, "_versions", ())):
            if t is not None and t._version != v:
                raise RuntimeError(
                    "one of the variables needed for gradient computation has been modified by an inplace "
                    f"operation: [torch.{t.dtype.tensor_type} [{', '.join(map(str, t.shape))}]] is at version "
                    f"{t._version}; expected version {v} instead. Hint: enable anomaly detection to find the "
                    "operation that failed to compute its gradient, with torch.autograd.set_detect_anomaly(True, check_nan=False).")
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

    def apply(self, grads, retain_graph=True):
        from ..tensor import zeros_for
        from ..ops.registry import TypeInfo
        full = [g if g is not None else zeros_for(t) for g, t in zip(grads, self._types)]
        result = self._fn.backward(self.ctx, *full)
        if not isinstance(result, tuple):
            result = (result,)
        n = len(self._next)
        if len(result) < n:
            raise RuntimeError(f"function {self.name()} returned an incorrect number of gradients "
                               f"(expected {n}, got {len(result)})")
        return list(result[:n])


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
        ctx = FunctionCtx()
        tensor_args = [a for a in args if isinstance(a, Tensor)]
        ctx.needs_input_grad = tuple(isinstance(a, Tensor) and a.requires_grad for a in args)
        with grad_mode.no_grad():
            out = cls.forward(ctx, *args, **kwargs)
        outputs = out if isinstance(out, tuple) else (out,)
        if grad_mode.is_grad_enabled() and any(t.requires_grad for t in tensor_args):
            edges = tuple(a._grad_edge() if isinstance(a, Tensor) and a.requires_grad else (None, 0) for a in args)
            node = type(f"{cls.__name__}Backward", (_FunctionNode,), {})(cls, ctx, edges, len(outputs))
            node._types = [TypeInfo(tuple(o.shape), o.dtype) for o in outputs]
            fixed = []
            for k, o in enumerate(outputs):
                if isinstance(o, Tensor) and id(o) not in ctx._non_diff and o.dtype.is_floating_point:
                    if any(o is a for a in args):
                        o = o.detach()   # returning an input: PyTorch returns a view with a new grad_fn
                    o._grad_fn, o._output_nr, o._requires_grad = node, k, True
                fixed.append(o)
            outputs = tuple(fixed)
        return outputs if isinstance(out, tuple) else outputs[0]
