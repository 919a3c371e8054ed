"""gradc.autograd: backward(), grad(), Function, gradcheck, grad mode."""
from __future__ import annotations

import operator

import numpy as np

from .._warnings import warn_at_user_code
from . import forward_ad, functional, graph
from .anomaly_mode import detect_anomaly, is_anomaly_check_nan_enabled, is_anomaly_enabled, set_detect_anomaly
from .engine import run_backward
# (forward_ad, imported above, loads gradc.tensor: these are complete by now)
from ..tensor import Tensor
from ..tensor_api import is_tensor_like
from .function import Function
from .grad_mode import enable_grad, inference_mode, no_grad, set_grad_enabled
from .grad_mode import grad_mode_setting as is_grad_enabled     # (the setting; recording: grad_mode's)
from .gradcheck import gradcheck, gradgradcheck
from .node import AccumulateGrad, Node

__all__ = ["backward", "grad", "Function", "Variable", "profiler", "gradcheck", "gradgradcheck", "no_grad", "enable_grad", "inference_mode",
           "set_grad_enabled", "is_grad_enabled", "functional", "graph", "forward_ad", "Node", "AccumulateGrad",
           "detect_anomaly", "set_detect_anomaly"]


def _tensors_tuple(x):
    """``outputs``/``tensors`` as PyTorch reads them: one tensor, or any iterable of them."""
    return (x,) if is_tensor_like(x) else tuple(x)


def _inputs_tuple(inputs, caller: str):
    """``inputs`` as PyTorch reads them: one tensor, a dict (its values), or any other iterable."""
    from collections.abc import Mapping
    if is_tensor_like(inputs):
        return (inputs,)
    if type(inputs) is dict:
        return tuple(inputs.values())
    if isinstance(inputs, Mapping):
        raise TypeError(f"`inputs` argument to `{caller}()` must be a dict, not {type(inputs).__name__}. "
                        "Other Mapping types are not supported.")
    return tuple(inputs)


def _grads_tuple(grads, length: int):
    """PyTorch's _tensor_or_tensors_to_tuple: None for each output, one tensor, or an iterable."""
    if grads is None:
        return (None,) * length
    return (grads,) if is_tensor_like(grads) else tuple(grads)


def _flag(value) -> bool:
    """A flag the engine parses as PyTorch's does (a bool or an int from 0 to 255; anything else,
    None included, is a TypeError)."""
    if value is True or value is False:
        return value
    try:
        n = operator.index(value)
    except TypeError:
        raise TypeError(f"'{type(value).__name__}' object cannot be interpreted as an integer") from None
    if not 0 <= n <= 255:        # (an unsigned byte)
        raise OverflowError(f"unsigned byte integer is {'less than minimum' if n < 0 else 'greater than maximum'}")
    return bool(n)


_ONES = {np.dtype(d): np.ones((), d) for d in ("float16", "float32", "float64")}


def _make_grads(outputs, grads, traced=False):
    """PyTorch's _make_grads: the given gradient of each output (checked), ones for a scalar
    output that requires grad and has none, None for one that does not require grad. Pairs
    past the shorter sequence are dropped, as PyTorch's zip does (the engine then reports the
    count mismatch). ``traced``: for ``grad`` of traced outputs (``ir/traced_grad.py``)."""
    out = []
    for i, (o, g) in enumerate(zip(outputs, grads)):
        if not is_tensor_like(o):
            raise AssertionError("Expected output to be a torch.Tensor")
        if not isinstance(o, Tensor) and not traced:       # a traced tensor: its own error (TraceError)
            o._grad_edge()
        if is_tensor_like(g):
            if tuple(g.shape) != tuple(o.shape):
                raise RuntimeError(f"Mismatch in shape: grad_output[{i}] has a shape of {g.shape!r} and "
                                   f"output[{i}] has a shape of {o.shape!r}.")
            if g.dtype is not o.dtype:
                g = g.to(o.dtype)
        elif g is not None:
            raise TypeError(f"gradients can be either Tensors or None, but got {type(g).__name__}")
        elif o.requires_grad:
            if o.numel() != 1:
                raise RuntimeError("grad can be implicitly created only for scalar outputs")
            if not o.dtype.is_floating_point:
                raise RuntimeError(f"grad can be implicitly created only for real scalar outputs but got "
                                   f"{o.dtype}")
            if not isinstance(o, Tensor):
                g = o._wrap(o._constant(np.ones(tuple(o.shape), o.dtype.np)))
                out.append(g)
                continue
            g = Tensor._wrap(_ONES[o._data.dtype].copy() if o._data.ndim == 0 and o._data.dtype in _ONES
                             else np.ones(o._data.shape, dtype=o._data.dtype))
            if o._device.type != "cpu":
                g = g._to_device(o._device)
        out.append(g)
    return out


def _roots(outputs, grads=None, traced=False):
    """The engine's checks of the outputs (and their gradients' count) and their grad edges
    (``traced``: the traced outputs themselves, for ``ir/traced_grad.py``)."""
    if grads is not None and len(grads) != len(outputs):
        raise RuntimeError(f"got {len(outputs)} tensors and {len(grads)} gradients")
    roots = []
    for i, o in enumerate(outputs):
        edge = None if not o.requires_grad else (o, 0) if traced else o._grad_edge()
        if edge is None or edge[0] is None:      # (a view made in no_grad mode: no edge of its own)
            raise RuntimeError(f"element {i} of tensors does not require grad and does not have a grad_fn")
        roots.append(edge)
    return roots


def _check_inputs(inputs) -> None:
    for t in inputs:
        if not is_tensor_like(t):
            raise RuntimeError(f"all inputs have to be Tensors or GradientEdges, but got {type(t).__name__}")
        if not t.requires_grad:
            raise RuntimeError("One of the differentiated Tensors does not require grad")


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, inputs=None):
    """Accumulate gradients of ``tensors`` into the leaves (``Tensor.backward``)."""
    if inputs is not None:
        inputs = _inputs_tuple(inputs, "backward")
        if not inputs:
            raise RuntimeError("`inputs` argument to `backward()` cannot be empty.")
    tensors = _tensors_tuple(tensors)
    root_grads = _make_grads(tensors, _grads_tuple(grad_tensors, len(tensors)))
    if retain_graph is None:
        retain_graph = create_graph
    retain_graph, create_graph = _flag(retain_graph), _flag(create_graph)
    roots = _roots(tensors, root_grads)
    if inputs is not None:
        _check_inputs(inputs)
        result = grad(tensors, inputs, root_grads, retain_graph=retain_graph, create_graph=create_graph,
                      allow_unused=True)
        for t, g in zip(inputs, result):
            if g is not None:
                if t._grad is None:
                    t._grad = g if create_graph else g.detach()
                else:
                    t._grad = t._grad + g
        return
    if create_graph:
        _warn_create_graph_cycle()
    run_backward(roots, root_grads, retain_graph=retain_graph, create_graph=create_graph)


_CYCLE_WARNED = False
CREATE_GRAPH_CYCLE_WARNING = (
    "Using backward() with create_graph=True will create a reference cycle between the parameter and its gradient "
    "which can cause a memory leak. We recommend using autograd.grad when creating the graph to avoid this. If you "
    "have to use this function, make sure to reset the .grad fields of your parameters to None after use to break "
    "the cycle and avoid the leak. (Triggered internally at /__w/pytorch/pytorch/torch/csrc/autograd/engine.cpp:1307.)")


def _warn_create_graph_cycle():
    """PyTorch warns once per process (TORCH_WARN_ONCE) when backward() builds a graph."""
    global _CYCLE_WARNED
    if not _CYCLE_WARNED:
        _CYCLE_WARNED = True
        warn_at_user_code(CREATE_GRAPH_CYCLE_WARNING, UserWarning)


def _is_checkpoint_valid() -> bool:
    from .engine import _is_checkpoint_valid as valid
    return valid()


def _batched_grad(outputs, inputs, grads, retain_graph, create_graph, allow_unused, materialize_grads):
    """``is_grads_batched``: the first dim of every grad_output is a batch of cotangents; one
    backward per batch element (PyTorch vmaps it), the results stacked."""
    from ..tensor_api import stack
    batch = None
    for i, (o, g) in enumerate(zip(outputs, grads)):
        if g is None:
            continue
        if tuple(g.shape[1:]) != tuple(o.shape) or g.dim() == 0:
            raise RuntimeError(
                "If `is_grads_batched=True`, we interpret the first dimension of each grad_output as the batch "
                "dimension. The sizes of the remaining dimensions are expected to match the shape of corresponding "
                f"output, but a mismatch was detected: grad_output[{i}] has a shape of {g.shape[1:]!r} and output[{i}] "
                f"has a shape of {o.shape!r}. If you only want some tensors in `grad_output` to be considered "
                "batched, consider using vmap.")
        batch = g.shape[0] if batch is None else batch
    if batch is None:
        return grad(outputs, inputs, None, retain_graph, create_graph, allow_unused=allow_unused,
                    materialize_grads=materialize_grads)
    if retain_graph is None:
        retain_graph = create_graph
    rows = [grad(outputs, inputs, tuple(None if g is None else g[b] for g in grads),
                 retain_graph=retain_graph if b == batch - 1 else True, create_graph=create_graph,
                 allow_unused=allow_unused, materialize_grads=materialize_grads) for b in range(batch)]
    return tuple(None if any(r[k] is None for r in rows) else stack([r[k] for r in rows], 0)
                 for k in range(len(inputs)))


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False, only_inputs=True,
         allow_unused=None, is_grads_batched=False, materialize_grads=False):
    """Gradients of ``outputs`` with respect to ``inputs``, returned rather than accumulated (a
    dict with the same keys when ``inputs`` is a dict). Arguments are checked in PyTorch's order,
    with its errors."""
    if materialize_grads and allow_unused is False:
        raise ValueError("Expected allow_unused to be True or not passed when materialize_grads=True, "
                         "but got: allow_unused=False.")
    if allow_unused is None:
        allow_unused = materialize_grads
    outputs = _tensors_tuple(outputs)
    keys = tuple(inputs.keys()) if type(inputs) is dict else None
    inputs = _inputs_tuple(inputs, "grad")
    if not inputs:
        raise RuntimeError("`inputs` argument to `grad()` cannot be empty.")
    if not only_inputs:
        warn_at_user_code("only_inputs argument is deprecated and is ignored now (defaults to True). To accumulate "
                          "gradient for other parts of the graph, please use torch.autograd.backward.", FutureWarning)
    grads = _grads_tuple(grad_outputs, len(outputs))
    if is_grads_batched:
        result = _batched_grad(outputs, inputs, grads, retain_graph, create_graph, allow_unused, materialize_grads)
    else:
        result = _grad(outputs, inputs, grads, retain_graph, create_graph, allow_unused, materialize_grads)
    return result if keys is None else dict(zip(keys, result))


def _grad(outputs, inputs, grads, retain_graph, create_graph, allow_unused, materialize_grads):
    from ..ir.traced_grad import is_traced, traced_grad, traced_zeros
    traced = is_traced(outputs + inputs)     # inside @gradc.compile: the adjoint ops join the trace
    root_grads = _make_grads(outputs, grads, traced)
    if retain_graph is None:
        retain_graph = create_graph
    retain_graph, create_graph, allow_unused = _flag(retain_graph), _flag(create_graph), _flag(allow_unused)
    roots = _roots(outputs, root_grads, traced)
    _check_inputs(inputs)
    if traced:
        found = traced_grad(outputs, inputs, root_grads, retain_graph, create_graph)
    else:
        capture = [t._grad_edge() for t in inputs]
        captured = run_backward(roots, root_grads, retain_graph=retain_graph, create_graph=create_graph,
                                capture=capture)
        found = [captured.get(edge) for edge in capture]
    result = []
    for i, (t, g) in enumerate(zip(inputs, found)):
        if g is None:
            if materialize_grads and traced:
                g = traced_zeros(outputs + inputs, t)
            elif materialize_grads:
                from ..tensor import zeros_for
                from ..ops.registry import TypeInfo
                g = zeros_for(TypeInfo(tuple(t.shape), t.dtype))
            elif not allow_unused:
                raise RuntimeError(f"The differentiated Tensor at index {i} appears to not have been used in the "
                                   "graph. Set allow_unused=True if this is the desired behavior.")
        elif not create_graph:
            g = g.detach()
        result.append(g)
    return tuple(result)


from .variable import Variable  # noqa: E402  (uses _flag, defined above)
from . import profiler  # noqa: E402,F401
