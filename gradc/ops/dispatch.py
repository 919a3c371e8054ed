"""Dispatch: route an op application to eager execution or to the IR tracer.

Whatever tensor-like class appears among the inputs decides: eager ``Tensor``
computes with the op's NumPy reference and records a backward node; a tracer
proxy records an IR op. The class implements ``_apply(op, inputs, attrs, node_name)``.
"""
from __future__ import annotations

import threading

from . import registry


class TensorLikeMeta:
    """Marker base: classes that can receive an op application."""
    _dispatch_priority = 0

    @classmethod
    def _apply(cls, op, inputs, attrs, node_name=None):  # pragma: no cover - interface
        raise NotImplementedError


class GradFnName(str):
    """An eager grad_fn name that also says which inputs PyTorch's node lists in ``next_functions``.

    PyTorch's nodes have one edge per differentiable Tensor argument of the ATen op, in that op's
    argument order: ``x ** 2`` (pow(Tensor, Scalar)) has one edge, ``2 * x`` (x.__rmul__(2), a
    mul(x, wrapped 2)) has (x, None). gradc applies table ops whose inputs may be ordered or
    wrapped differently, so a spelling can pass ``edges``: the input indices, in PyTorch's order.
    It is a ``str``, so code that only wants the name (tracer proxies) is unaffected.
    """
    edges: tuple | None = None


def grad_fn_name(name: str, edges=None) -> GradFnName:
    n = GradFnName(name)
    n.edges = None if edges is None else tuple(edges)
    return n


# The traces of ``@gradc.compile`` being recorded (innermost last).  While one is, an eager op on
# a tensor from outside the function (one that requires grad, such as a module's parameter, or
# whose storage existed before the trace, such as a buffer, both reached through a closure) is
# recorded in it too, with its eager inputs captured as function arguments, rather than computed
# once while tracing: the compiled function then sees their current values at every call, and
# the parameters' gradients.  Eager ops on tensors the function itself made stay eager.
# Per thread: a thread that traces records only its own ops (another thread's compiled calls and
# eager ops, meanwhile, run as they would; with one list for all threads they were recorded in the
# tracing thread's function).
class _ThreadStack(threading.local):
    """A list per thread: ``append``, ``pop``, ``[-1]``, truth and ``len`` act on this thread's."""

    def __init__(self):
        self.items: list = []

    def append(self, item) -> None:
        self.items.append(item)

    def pop(self):
        return self.items.pop()

    def __getitem__(self, i):
        return self.items[i]

    def __len__(self) -> int:
        return len(self.items)

    def __iter__(self):
        return iter(self.items)


capturing = _ThreadStack()


def _outside(x) -> bool:
    return x.requires_grad or not x._version_counter.internal


def apply(name: str, *inputs, _name: str | None = None, **attrs):
    """Apply table op ``name`` to tensor-like ``inputs`` with ``attrs``.

    ``_name`` overrides the eager grad_fn name (PyTorch names some composite
    spellings differently, e.g. squeeze is a reshape named SqueezeBackward0).
    """
    op = registry._TABLE.get(name) or registry.get(name)
    owner = None
    for x in inputs:
        if isinstance(x, TensorLikeMeta):
            if owner is None or type(x)._dispatch_priority > owner._dispatch_priority:
                owner = type(x)
    if owner is None:
        raise TypeError(f"gradc.{name}: expected at least one tensor input, got "
                        + ", ".join(type(x).__name__ for x in inputs))
    if capturing.items and owner._dispatch_priority == 1 and any(
            isinstance(x, TensorLikeMeta) and (_outside(x) or id(x) in capturing[-1].rewritten) for x in inputs):
        return capturing[-1].apply_captured(op, list(inputs), attrs, _name)
    return owner._apply(op, list(inputs), attrs, _name)


def apply_same_class(name: str, inputs: list, attrs: dict, node_name: str | None = None):
    """``apply(name, *inputs, _name=node_name, **attrs)`` for tensor-like ``inputs`` all of one
    class (a binary op's two tensors): that class owns the call, with no search for the owner.
    ``inputs`` and ``attrs`` must be new objects (the call's node keeps them)."""
    cls = type(inputs[0])
    if capturing.items and cls._dispatch_priority == 1:
        return apply(name, *inputs, _name=node_name, **attrs)
    return cls._apply(registry._TABLE.get(name) or registry.get(name), inputs, attrs, node_name)
