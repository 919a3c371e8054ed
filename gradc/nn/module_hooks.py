"""Module backward hooks: ``register_full_backward_hook`` and ``register_full_backward_pre_hook``.

As PyTorch does it, a module with such hooks passes its tensor arguments and its tensor results
through an identity autograd Function (``BackwardHookFunction``, whose node is
``BackwardHookFunctionBackward``).  The node on the results sees the gradients of the results
(``grad_output``): the pre-hooks run there and may replace them.  The node on the arguments sees
the gradients of the arguments (``grad_input``): the hooks run there with both and may replace
``grad_input``.  Positions that are not tensors get None.  When no argument requires grad, the
hooks run at the results' node with ``grad_input`` all None.
"""
from __future__ import annotations

from ..autograd.function import Function
from ..tensor import Tensor


class BackwardHookFunction(Function):
    """Identity on its tensor arguments; the node that module backward hooks hang on."""

    @staticmethod
    def forward(ctx, *args):
        ctx.mark_non_differentiable(*[a for a in args if not a.requires_grad])
        return args

    @staticmethod
    def backward(ctx, *grads):
        return grads


def _with_none(positions, values, size) -> tuple:
    """A tuple of ``size`` with ``values`` at ``positions`` and None elsewhere."""
    out = [None] * size
    for i, v in zip(positions, values):
        out[i] = v
    return tuple(out)


class ModuleBackwardHook:
    """One forward call's backward hooks of ``module`` (its ``hooks`` and ``pre_hooks``)."""

    def __init__(self, module, hooks, pre_hooks):
        self.module, self.hooks, self.pre_hooks = module, list(hooks), list(pre_hooks)
        self.grad_outputs = None
        self.n_inputs = self.n_outputs = 0
        self.input_positions = self.output_positions = None

    def _through_identity(self, values, on_node):
        """``values`` (a tuple) with its tensors passed through ``BackwardHookFunction`` when one
        requires grad and grad mode is on (``on_node`` gets the identity's node), and the
        positions of the tensors (None when nothing was passed through)."""
        from ..autograd import grad_mode
        positions = [i for i, v in enumerate(values) if isinstance(v, Tensor)]
        tensors = [values[i] for i in positions]
        if not (grad_mode.is_grad_enabled() and any(t.requires_grad for t in tensors)):
            return values, None
        new = BackwardHookFunction.apply(*tensors)
        node = next(t.grad_fn for t in new if t.grad_fn is not None)
        on_node(node)
        out = list(values)
        for i, t in zip(positions, new):
            out[i] = t
        return tuple(out), positions

    def setup_inputs(self, args: tuple) -> tuple:
        self.n_inputs = len(args)
        args, self.input_positions = self._through_identity(args, lambda node: node.register_hook(self._on_inputs))
        return args

    def setup_outputs(self, result):
        single = not isinstance(result, tuple)
        values = (result,) if single else result
        self.n_outputs = len(values)
        values, self.output_positions = self._through_identity(
            values, lambda node: node.register_hook(self._on_outputs))
        return values[0] if single else values

    def _on_outputs(self, grad_inputs, grad_outputs):
        """The results' identity node: the gradients of the results arrive (its grad_outputs)."""
        self.grad_outputs = _with_none(self.output_positions, grad_outputs, self.n_outputs)
        for hook in self.pre_hooks:
            new = hook(self.module, self.grad_outputs)
            if new is None:
                continue
            new = new if isinstance(new, tuple) else (new,)
            if len(new) != len(self.grad_outputs):
                raise RuntimeError(f"Backward pre hook returned an invalid number of grad_output, got {len(new)}, "
                                   f"but expected {len(self.grad_outputs)}")
            self.grad_outputs = new
        result = tuple(self.grad_outputs[i] for i in self.output_positions)
        if self.input_positions is None:        # no argument requires grad: the hooks run here
            none = (None,) * self.n_inputs
            for hook in self.hooks:
                res = hook(self.module, none, self.grad_outputs)
                if res is not None and not (isinstance(res, tuple) and all(r is None for r in res)):
                    raise RuntimeError("Backward hook for Modules where no input requires gradient should always "
                                       "return None or None for all gradients.")
            self.grad_outputs = None
        return result

    def _on_inputs(self, grad_inputs, grad_outputs):
        """The arguments' identity node: the gradients of the arguments arrive."""
        if self.grad_outputs is None:     # (a gradient reached the arguments without passing the results)
            return None
        res = _with_none(self.input_positions, grad_inputs, self.n_inputs)
        for hook in self.hooks:
            new = hook(self.module, res, self.grad_outputs)
            if new is None:
                continue
            if len(new) != len(res):
                raise RuntimeError(f"Backward hook returned an invalid number of grad_input, got {len(new)}, but "
                                   f"expected {len(res)}")
            res = new
        self.grad_outputs = None
        return tuple(res[i] for i in self.input_positions)
