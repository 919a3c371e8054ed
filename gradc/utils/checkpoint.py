"""``torch.utils.checkpoint``: activation checkpointing.

``checkpoint(function, *args, use_reentrant=..., preserve_rng_state=True, **kwargs)`` runs
``function`` without keeping the tensors its backward needs and recomputes them in the backward
pass, with the RNG state of the forward restored for the recomputation (dropout draws the same
masks) and the surrounding state put back afterwards. Both of PyTorch's variants:

* ``use_reentrant=True`` (PyTorch's default, with its warning when ``use_reentrant`` is not given):
  ``CheckpointFunction``, an ``autograd.Function`` whose forward runs ``function`` under
  ``no_grad`` and whose backward reruns it with grad enabled on detached inputs and calls
  ``autograd.backward`` on the recomputed outputs (parameters used inside get their gradients
  from that inner backward). As in PyTorch: no keyword arguments, it refuses ``autograd.grad`` and
  ``backward(inputs=...)``, and if no input requires grad the outputs do not either (with the
  "None of the inputs have requires_grad=True" warning).
* ``use_reentrant=False``: the forward records the ordinary graph, but under saved-tensor hooks
  (``autograd.graph.saved_tensors_hooks``) that keep only a placeholder for every saved tensor;
  the first unpack in backward reruns ``function`` (stopping as soon as every saved tensor is
  recomputed, PyTorch's early stop) and hands out the recomputed tensors, checking that as many
  were saved and with the same shapes, dtypes and devices (``CheckpointError`` otherwise). This
  supports keyword arguments, ``autograd.grad``, hooks on tensors inside the function, nested
  checkpoints and non-tensor outputs.

Not supported: ``context_fn`` other than the default and ``debug=True`` (ValueError), autocast
state (gradc has no autocast).
"""
from __future__ import annotations


from .._warnings import warn_at_user_code
from ..autograd import grad_mode
from ..autograd.function import Function
from ..autograd.graph import saved_tensors_hooks
from .. import random_state

__all__ = ["checkpoint", "checkpoint_sequential", "CheckpointError", "CheckpointFunction", "detach_variable",
           "check_backward_validity", "noop_context_fn"]


class CheckpointError(RuntimeError):
    pass


def noop_context_fn():
    import contextlib
    return contextlib.nullcontext(), contextlib.nullcontext()


def detach_variable(inputs):
    from ..tensor import Tensor
    if not isinstance(inputs, tuple):
        raise RuntimeError(f"Only tuple of tensors is supported. Got Unsupported input type: {type(inputs).__name__}")
    out = []
    for inp in inputs:
        if not isinstance(inp, Tensor):
            out.append(inp)
            continue
        x = inp.detach()
        x.requires_grad = inp.requires_grad
        out.append(x)
    return tuple(out)


def check_backward_validity(inputs) -> None:
    from ..tensor import Tensor
    if not any(inp.requires_grad for inp in inputs if isinstance(inp, Tensor)):
        warn_at_user_code("None of the inputs have requires_grad=True. Gradients will be None")


class _fork_rng:
    """Run a block with the forward's RNG state and put the current one back afterwards."""

    def __init__(self, state):
        self.state = state

    def __enter__(self):
        if self.state is not None:
            self.outer = random_state.get_rng_state()
            random_state.set_rng_state(self.state)

    def __exit__(self, *exc):
        if self.state is not None:
            random_state.set_rng_state(self.outer)


# ---- use_reentrant=True ---------------------------------------------------------------------
class CheckpointFunction(Function):
    @staticmethod
    def forward(ctx, run_function, preserve_rng_state, *args):
        from ..tensor import Tensor
        check_backward_validity(args)
        ctx.run_function = run_function
        ctx.preserve_rng_state = preserve_rng_state
        ctx.fwd_cpu_state = random_state.get_rng_state() if preserve_rng_state else None
        ctx.inputs = []
        ctx.tensor_indices = []
        tensor_inputs = []
        for i, arg in enumerate(args):
            if isinstance(arg, Tensor):
                tensor_inputs.append(arg)
                ctx.tensor_indices.append(i)
                ctx.inputs.append(None)
            else:
                ctx.inputs.append(arg)
        ctx.save_for_backward(*tensor_inputs)
        with grad_mode.no_grad():
            outputs = run_function(*args)
        return outputs

    @staticmethod
    def backward(ctx, *args):
        from ..autograd import backward
        from ..autograd.engine import _is_checkpoint_valid
        from ..tensor import Tensor
        if not _is_checkpoint_valid():
            raise RuntimeError(
                "When use_reentrant=True, torch.utils.checkpoint is incompatible with .grad() or passing an "
                "`inputs` parameter to .backward(). To resolve this error, you can either set use_reentrant=False, "
                "or call .backward() without passing the `inputs` argument.")
        inputs = list(ctx.inputs)
        tensors = ctx.saved_tensors
        for i, idx in enumerate(ctx.tensor_indices):
            inputs[idx] = tensors[i]
        with _fork_rng(ctx.fwd_cpu_state):
            detached_inputs = detach_variable(tuple(inputs))
            with grad_mode.enable_grad():
                outputs = ctx.run_function(*detached_inputs)
        if isinstance(outputs, Tensor):
            outputs = (outputs,)
        outputs_with_grad, args_with_grad = [], []
        for i in range(len(outputs)):
            if isinstance(outputs[i], Tensor) and outputs[i].requires_grad:
                outputs_with_grad.append(outputs[i])
                args_with_grad.append(args[i])
        if not outputs_with_grad:
            raise RuntimeError("none of output has requires_grad=True, this checkpoint() is not necessary")
        backward(outputs_with_grad, args_with_grad)
        grads = tuple(inp._grad if isinstance(inp, Tensor) else None for inp in detached_inputs)
        return (None, None) + grads


# ---- use_reentrant=False --------------------------------------------------------------------
class _StopRecomputation(Exception):
    pass


def _metadata(t):
    return {"shape": t.shape, "dtype": t.dtype, "device": t.device}


_DEBUG_TIP = """
Tip: To see a more detailed error message, either pass `debug=True` to
`torch.utils.checkpoint.checkpoint(...)` or wrap the code block
with `with torch.utils.checkpoint.set_checkpoint_debug_enabled(True):` to
enable checkpoint-debug mode globally.
"""


class _Frame:
    """One non-reentrant checkpoint call: the placeholders of its saved tensors and the rerun
    that refills them."""

    def __init__(self, function, args, kwargs, rng_state, check, early_stop):
        from ..autograd.node import SavedTensor
        from ..tensor import Tensor
        # the inputs are saved (version-checked, and through any enclosing saved-tensor hooks: an
        # enclosing checkpoint recomputes them), as PyTorch's frame.save_inputs
        self.function, self.kwargs = function, kwargs
        self.args = [SavedTensor(a) if isinstance(a, Tensor) else a for a in args]
        self.rng_state, self.check, self.early_stop = rng_state, check, early_stop
        self.metadata = []            # per saved tensor, in saving order
        self.recomputed = {}          # index -> recomputed tensor, each handed out once

    def pack(self, t):
        self.metadata.append(_metadata(t) if self.check else None)
        return len(self.metadata) - 1

    def unpack(self, index):
        if index not in self.recomputed:
            self._recompute()
        return self.recomputed.pop(index)

    def _recompute(self):
        from ..autograd.node import SavedTensor
        n = len(self.metadata)
        got = []

        def pack(t):
            got.append(t.detach())
            if self.early_stop and len(got) == n:
                raise _StopRecomputation
            return None

        def unpack(_):
            raise CheckpointError("torch.utils.checkpoint: unpacking a tensor saved during recomputation")

        try:
            with _fork_rng(self.rng_state), grad_mode.enable_grad(), saved_tensors_hooks(pack, unpack):
                self.function(*[a.unpack() if isinstance(a, SavedTensor) else a for a in self.args],
                              **self.kwargs)
        except _StopRecomputation:
            pass
        if len(got) != n:
            raise CheckpointError(
                "torch.utils.checkpoint: A different number of tensors was saved during the original forward and "
                f"recomputation.\nNumber of tensors saved during forward: {n}\nNumber of tensors saved during "
                f"recomputation: {len(got)}.\n{_DEBUG_TIP}")
        if self.check:
            bad = [(i, m, _metadata(t)) for i, (m, t) in enumerate(zip(self.metadata, got)) if m != _metadata(t)]
            if bad:
                detail = "".join(f"tensor at position {i}:\nsaved metadata: {m}\nrecomputed metadata: {r}\n"
                                 for i, m, r in bad)
                raise CheckpointError("torch.utils.checkpoint: Recomputed values for the following tensors have "
                                      f"different metadata than during the forward pass.\n{detail}.\n{_DEBUG_TIP}")
        self.recomputed = dict(enumerate(got))


def _checkpoint_without_reentrant(function, preserve, determinism_check, early_stop, args, kwargs):
    if determinism_check not in ("default", "none"):
        raise ValueError(f"determinism_check should be one of ['default', 'none'], but got {determinism_check}")
    if not grad_mode.is_grad_enabled():
        return function(*args, **kwargs)
    frame = _Frame(function, args, kwargs, random_state.get_rng_state() if preserve else None,
                   determinism_check == "default", early_stop)
    with saved_tensors_hooks(frame.pack, frame.unpack):
        return function(*args, **kwargs)


def checkpoint(function, *args, use_reentrant=None, context_fn=noop_context_fn, determinism_check="default",
               debug=False, early_stop=True, **kwargs):
    """Run ``function(*args, **kwargs)`` without saving its intermediate tensors; they are
    recomputed in the backward pass."""
    if use_reentrant is None:
        warn_at_user_code(
            "torch.utils.checkpoint: the use_reentrant parameter should be passed explicitly. Starting in PyTorch "
            "2.9, calling checkpoint without use_reentrant will raise an exception. use_reentrant=False is "
            "recommended, but if you need to preserve the current default behavior, you can pass "
            "use_reentrant=True. Refer to docs for more details on the differences between the two variants.")
        use_reentrant = True
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs and use_reentrant:
        raise ValueError("Unexpected keyword arguments: " + ",".join(arg for arg in kwargs))
    if use_reentrant:
        if context_fn is not noop_context_fn or debug is not False:
            raise ValueError("Passing `context_fn` or `debug` is only supported when use_reentrant=False.")
        return CheckpointFunction.apply(function, preserve, *args)
    if context_fn is not noop_context_fn or debug:
        raise ValueError("gradc: checkpoint's context_fn and debug=True are not supported")
    return _checkpoint_without_reentrant(function, preserve, determinism_check, early_stop, args, kwargs)


def checkpoint_sequential(functions, segments, input, use_reentrant=None, **kwargs):
    """Run the modules or functions ``functions`` in order, in ``segments`` chunks of which all
    but the last are checkpointed."""
    from ..nn import Sequential
    if use_reentrant is None:
        warn_at_user_code(
            "torch.utils.checkpoint.checkpoint_sequential: the use_reentrant parameter should be passed "
            "explicitly. In version 2.9 we will raise an exception if use_reentrant is not passed. "
            "use_reentrant=False is recommended, but if you need to preserve the current default behavior, you "
            "can pass use_reentrant=True. Refer to docs for more details on the differences between the two "
            "variants.")
        use_reentrant = True
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs:
        raise ValueError("Unexpected keyword arguments: " + ",".join(arg for arg in kwargs))

    def run_function(start, end, functions):
        def forward(input):
            for j in range(start, end + 1):
                input = functions[j](input)
            return input
        return forward

    if isinstance(functions, Sequential):
        functions = list(functions.children())
    segment_size = len(functions) // segments
    end = -1
    for start in range(0, segment_size * (segments - 1), segment_size):
        end = start + segment_size - 1
        input = checkpoint(run_function(start, end, functions), input, use_reentrant=use_reentrant,
                           preserve_rng_state=preserve)
    return run_function(end + 1, len(functions) - 1, functions)(input)
