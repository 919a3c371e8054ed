"""``torch.autograd.forward_ad``: dual tensors for forward-mode AD.

    with forward_ad.dual_level():
        inp = forward_ad.make_dual(x, v)
        out = f(inp)
        y, jvp = forward_ad.unpack_dual(out)

How gradc does it: gradc has no forward-mode rules; ``make_dual`` returns a fresh tensor that
requires grad (a view of ``x`` when ``x`` requires grad, so reverse mode through it still works,
otherwise a detached leaf) and records its tangent. Ops on it build the ordinary backward graph.
``unpack_dual(out)`` then computes ``out``'s tangent with the double-backward trick (the same as
``autograd.functional.jvp``): with ``u`` a zero cotangent that requires grad, ``g_i = u^T J_i`` is
taken with respect to every live dual tensor of the level (one backward with ``create_graph``),
and the tangent is the derivative of ``sum_i g_i . v_i`` with respect to ``u`` (a second
backward).

Cost: every ``unpack_dual`` of a tensor that is not itself a dual runs those two backward passes
over the graph between the duals and the tensor (PyTorch computes tangents alongside the forward,
at about the cost of a second forward). Unpacking many intermediate tensors of one long
computation is therefore quadratic; unpack the outputs you need.

Differences from PyTorch: a dual tensor reports ``requires_grad=True`` even when its primal does
not; tangents follow only recorded ops, so ops run under ``no_grad`` (or on ``.detach()``ed values,
or through ``.data``) lose the tangent, where PyTorch keeps it; the tangent of a result has the
result's dtype; ``primal`` is detached when the result depends on no tensor that requires grad
besides the duals (otherwise it keeps its backward graph, as PyTorch's does); only one level, as in
PyTorch.
"""
from __future__ import annotations

import weakref
from typing import NamedTuple, Optional

from ..tensor import Tensor
from . import grad_mode

__all__ = ["UnpackedDualTensor", "enter_dual_level", "exit_dual_level", "make_dual", "unpack_dual", "dual_level"]

_current_level = -1
_duals: list = []          # weakrefs to the dual tensors of the current level


def enter_dual_level():
    """Enter a new forward grad level (only one is supported, as in PyTorch)."""
    global _current_level
    if _current_level >= 0:
        raise RuntimeError("Nested forward mode AD is not supported at the moment")
    _current_level += 1
    return _current_level


def exit_dual_level(*, level=None):
    """Exit the forward grad level: the tangents of its dual tensors are dropped."""
    global _current_level
    if level is None:
        level = _current_level
    if level != _current_level:
        raise RuntimeError("Trying to exit a forward AD level that was not the last one that was created. This is "
                           "not supported.")
    if level < 0:
        raise RuntimeError("Dual level must be a positive number.")
    for ref in _duals:
        t = ref()
        if t is not None:
            t.__dict__.pop("_fw_tangent", None)
    _duals.clear()
    _current_level = level - 1


def make_dual(tensor, tangent, *, level=None):
    """A tensor with ``tensor``'s values whose tangent is ``tangent``."""
    if level is None:
        level = _current_level
    if level < 0:
        raise RuntimeError("Trying to create a dual Tensor for forward AD but no level exists, make sure to "
                           "enter_dual_level() first.")
    if not tensor.is_floating_point():
        raise ValueError(f"Expected primal to be floating point or complex, but got: {tensor.dtype}")
    if not isinstance(tangent, Tensor) or not tangent.is_floating_point():
        raise ValueError(f"Expected tangent to be floating point or complex, but got: "
                         f"{getattr(tangent, 'dtype', type(tangent).__name__)}")
    if tuple(tangent.shape) != tuple(tensor.shape):
        raise RuntimeError("Trying to set a forward gradient that has a different size than that of the original "
                           f"Tensor, this is not supported. Tensor is of size [{', '.join(map(str, tensor.shape))}] "
                           f"while the given forward gradient is of size [{', '.join(map(str, tangent.shape))}].")
    with grad_mode.enable_grad():
        if tensor.requires_grad:
            dual = tensor.view_as(tensor)
        else:
            dual = tensor.detach().requires_grad_()
            dual._fw_leaf = True
    dual._fw_tangent = tangent
    _duals.append(weakref.ref(dual))
    return dual


class UnpackedDualTensor(NamedTuple):
    """``unpack_dual``'s result: the primal and the tangent (None without one)."""
    primal: Tensor
    tangent: Optional[Tensor]


def _live_duals():
    live = [(t, t.__dict__.get("_fw_tangent")) for t in (ref() for ref in _duals) if t is not None]
    live = [(t, v) for t, v in live if v is not None]
    _duals[:] = [weakref.ref(t) for t, _ in live]
    return live


def _other_grad_leaves(tensor) -> bool:
    """Whether ``tensor``'s graph reaches a leaf that requires grad other than a dual's own."""
    from .node import AccumulateGrad
    seen, stack = set(), [tensor._grad_edge()[0]]
    while stack:
        n = stack.pop()
        if n is None or n in seen:
            continue
        seen.add(n)
        if isinstance(n, AccumulateGrad) and not n.variable.__dict__.get("_fw_leaf", False):
            return True
        stack.extend(nxt for nxt, _ in n._next)
    return False


def _tangent(tensor, duals):
    """J v for ``tensor`` and the duals it depends on, by the double-backward trick; None if none."""
    from ..factories import zeros_like
    from . import grad
    with grad_mode.enable_grad():
        u = zeros_like(tensor, requires_grad=True)
        gs = grad((tensor,), tuple(d for d, _ in duals), (u,), create_graph=True, allow_unused=True)
    kept = [(g, v) for g, (_, v) in zip(gs, duals) if g is not None]
    if not kept:
        return None
    linked = [(g, v) for g, v in kept if g.requires_grad]
    if not linked:
        return zeros_like(tensor)
    with grad_mode.no_grad():
        out = grad(tuple(g for g, _ in linked), (u,), tuple(v.to(g.dtype) for g, v in linked), allow_unused=True)[0]
    return zeros_like(tensor) if out is None else out.detach()


def unpack_dual(tensor, *, level=None):
    """``(primal, tangent)`` of ``tensor``: its values and its tangent at the level (None if it
    does not depend on a dual tensor). One double backward per call (see the module docstring)."""
    if level is None:
        level = _current_level
    if level < 0 or level != _current_level or not isinstance(tensor, Tensor):
        return UnpackedDualTensor(tensor, None)
    own = tensor.__dict__.get("_fw_tangent")
    if own is not None:
        primal = tensor.detach() if tensor.__dict__.get("_fw_leaf") else tensor.view_as(tensor)
        return UnpackedDualTensor(primal, own)
    if not tensor.requires_grad or not tensor.is_floating_point():
        return UnpackedDualTensor(tensor.view_as(tensor), None)
    duals = _live_duals()
    tangent = _tangent(tensor, duals) if duals else None
    if tangent is None:
        return UnpackedDualTensor(tensor.view_as(tensor), None)
    primal = tensor.view_as(tensor) if _other_grad_leaves(tensor) else tensor.detach()
    return UnpackedDualTensor(primal, tangent)


class dual_level:
    """Context manager for forward AD: enters a dual level and exits it (dropping the tangents)."""

    def __enter__(self):
        return enter_dual_level()

    def __exit__(self, *exc):
        exit_dual_level()

    def __call__(self, fn):
        import functools

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self:
                return fn(*args, **kwargs)
        return wrapper
