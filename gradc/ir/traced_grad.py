"""``gradc.autograd.grad`` on traced tensors: symbolic differentiation inside a trace.

Inside a ``@gradc.compile`` function, ``gradc.autograd.grad(outputs, inputs, ...)`` on traced
values (WGAN-GP's gradient penalty, Hessian-vector products, a MAML inner step, a
physics-informed loss) computes nothing: it runs the reverse walk of the ``autodiff`` pass
(``passes.autodiff.backpropagate``, the op table's VJP rules on ``IRTensor``s) over the ops
traced so far, from ``outputs`` back to ``inputs``, and appends the adjoint ops to the trace.
The gradients are ordinary traced values, so later code uses them like any other, a second
``grad`` differentiates them again, and the compiled function's own backward (the autodiff pass
on the whole function) differentiates through them: double backward.

``inputs`` may be arguments that require grad, captured tensors (a module's parameters, lifted
to arguments), traced intermediates that require grad, and leaves made by ``requires_grad_()``
on a traced tensor (``Proxy.requires_grad_``: a ``detach`` the walk stops at, or, on an argument,
the argument itself, whose caller's tensor ``@gradc.compile`` then makes require grad). Semantics are
eager autograd's: with ``create_graph=False`` each gradient is ``detach``ed (it does not require
grad, and no gradient flows through it in the outer backward); with ``create_graph=True`` it
requires grad when it depends on a tensor that requires grad. ``grad_outputs``, ``allow_unused``,
``materialize_grads`` and the argument checks are those of ``gradc.autograd.grad``, with
its errors. Without ``retain_graph`` the ops whose VJP rules ran and that eager autograd's
nodes would save tensors for are freed: a second ``grad`` through one is PyTorch's error, and so
is the compiled function's backward from an output whose graph runs through one
(``func.meta["freed"]``, ``eager_graph.outputs_through_freed``). ``backward()`` inside the
function stays a TraceError.
"""
from __future__ import annotations

from ..autograd.node import FREED_MESSAGE
from ..passes.autodiff import backpropagate, contribute, propagate_active
from .emitter import IRTensor
from .tracer import Proxy


def is_traced(tensors) -> bool:
    """Whether any of ``tensors`` is a traced tensor (a ``Proxy``)."""
    return any(isinstance(t, Proxy) for t in tensors)


def _trace_of(tensors):
    return next(t._trace for t in tensors if isinstance(t, Proxy))


def requires_grad_values(trace) -> set:
    """The values of ``trace`` that require grad: those that depend through differentiable ops
    on an argument that requires grad or on a leaf made by ``requires_grad_()``."""
    func = trace.func
    roots = [a for a, attrs in zip(func.args, func.arg_attrs) if attrs.get("gradc.requires_grad")]
    return propagate_active(func.body.ops, roots + trace.grad_leaves)


def traced_grad(outputs, inputs, root_grads, retain_graph: bool, create_graph: bool) -> list:
    """The gradients of traced ``outputs`` (with cotangents ``root_grads``, checked by
    ``autograd._make_grads``) with respect to ``inputs``, as traced values appended to the trace
    (``autograd.grad`` detaches them unless ``create_graph``); None for an input the walk did not
    reach. Without ``retain_graph`` the ops whose rules ran are freed (``_Trace.freed``)."""
    trace = _trace_of(outputs + inputs)
    builder = trace.builder
    wrt = [trace.operand(t) for t in inputs]
    active = propagate_active(trace.func.body.ops, wrt)
    adjoint: dict = {}
    for o, g in zip(outputs, root_grads):
        value = trace.operand(o)
        if g is not None and value in active:
            contribute(adjoint, value, IRTensor(trace.operand(g), builder))
    ran = []
    stale = trace.saved_versions.stale()      # saved tensors modified in place: eager's error, now

    def run(op):
        if op in trace.freed:
            raise RuntimeError(FREED_MESSAGE)
        if op in stale:
            raise RuntimeError(stale[op])
        ran.append(op)
    backpropagate(list(trace.func.body.ops), active, adjoint, builder, on_vjp=run)
    if not retain_graph:      # (eager nodes that save no tensor run again without error)
        trace.freed.update(op for op in ran if op.opdef.saves)
    requiring = requires_grad_values(trace) if create_graph else set()
    grads = [adjoint.get(v) for v in wrt]
    return [None if g is None else Proxy(g.value, trace, requires_grad=g.value in requiring) for g in grads]


def traced_zeros(tensors, t):
    """A traced zero gradient for input ``t`` of a ``grad`` of ``tensors`` (its outputs and
    inputs, some traced) with ``materialize_grads=True``."""
    trace = _trace_of(tensors)
    return Proxy(trace.builder.constant(0.0, tuple(t.shape), t.dtype), trace)
