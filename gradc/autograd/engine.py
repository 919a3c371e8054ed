"""The backward engine: dependency counting and a ready queue over grad_fn nodes.

Follows PyTorch's engine: nodes run when every consumer has sent its gradient,
later-created nodes first; tensor hooks run on the gradient of their tensor;
``retain_grad`` stores it; leaves accumulate into ``.grad``; without
``retain_graph`` each node releases its saved tensors after it runs.
"""
from __future__ import annotations

import heapq

import numpy as np

from ..ops.quiet import quiet
from . import anomaly_mode, grad_mode
from .node import AccumulateGrad, Node, leaf_hooks_seen

_add_quietly = quiet(np.add)      # inf + -inf accumulates to nan without a warning, as in PyTorch


def _add(a, b):
    if a is None:
        return b
    if b is None:
        return a
    return a + b


def _hook_name(fn) -> str:
    return getattr(fn, "__name__", type(fn).__name__)


def _hook_result(fn, grad, new):
    """A hook's replacement ``new`` for gradient ``grad``, checked as PyTorch checks it
    (``check_single_result``): None stays None."""
    from ..tensor_api import is_tensor_like
    if new is None:
        return None
    if grad is None:
        raise RuntimeError("can't replace a None gradient with a non-None value")
    if not is_tensor_like(new):
        raise TypeError(f"expected Variable, but hook returned '{type(new).__name__}'")
    if new.dtype is not grad.dtype or new.device != grad.device:
        def kind(t):
            return ("torch.cuda." + t.dtype.tensor_type) if t.device.type == "cuda" else "torch." + t.dtype.tensor_type
        raise RuntimeError(f"hook '{_hook_name(fn)}' has changed the type of value (was {kind(grad)} got {kind(new)})")
    if tuple(new.shape) != tuple(grad.shape):
        raise RuntimeError(f"hook '{_hook_name(fn)}' has changed the size of value")
    return new


def _hook_results(fn, old, new) -> list:
    """A node hook's replacement tuple ``new`` for the gradients ``old`` (PyTorch's ``check_result``)."""
    if not isinstance(new, tuple):
        raise TypeError(f"expected tuple, but hook returned '{type(new).__name__}'")
    if len(new) != len(old):
        raise RuntimeError(f"hook '{_hook_name(fn)}' has returned an incorrect number of values (got {len(new)}, "
                           f"but expected {len(old)})")
    return [_hook_result(fn, o, n) for o, n in zip(old, new)]


def _run_tensor_hooks(node: Node, nr: int, grad):
    for fn in list(node._tensor_pre_hooks.get(nr, {}).values()):
        new = fn(grad)
        if new is not None:
            grad = _hook_result(fn, grad, new)
    ref = node._retains_grad.get(nr)
    t = ref() if ref is not None else None
    if t is not None and grad is not None:
        store_retained(t, grad)
    return grad


def store_retained(t, grad) -> None:
    """``retain_grad``: ``t.grad`` gets (or adds) the gradient flowing into ``t``."""
    t._grad = grad.detach().clone() if t._grad is None else t._grad + grad
    if not grad_mode.is_grad_enabled():
        t._grad = t._grad.detach()


def _run_leaf_hooks(leaf, grad):
    """A leaf's tensor hooks on its incoming gradient (before it is accumulated or, under
    ``autograd.grad``, returned: PyTorch runs them in both cases)."""
    for fn in list(leaf._hooks.values()):
        new = fn(grad)
        if new is not None:
            grad = _hook_result(fn, grad, new)
    return grad


def _accumulate(node: AccumulateGrad, grad, create_graph: bool):
    if grad is None:          # (no gradient reached the leaf: its hooks do not run)
        return
    leaf = node.variable
    grad = _run_leaf_hooks(leaf, grad)
    if leaf._grad is None:
        if create_graph:
            leaf._grad = grad
        elif grad._fresh and not leaf._hooks and not node._post_hooks:
            grad._fresh = False          # steal a gradient nobody else holds (as PyTorch does)
            leaf._grad = grad
        elif type(grad._data) is np.ndarray and not grad._requires_grad:
            leaf._grad = grad._wrap(grad._data.copy())   # grad.detach().clone(), without two op calls
        else:
            leaf._grad = grad.detach().clone()
    elif create_graph:
        leaf._grad = leaf._grad + grad
    else:
        acc = leaf._grad
        if (not acc._requires_grad and acc._data.shape == grad._data.shape and acc._dtype is grad._dtype
                and isinstance(acc._data, np.ndarray) and isinstance(grad._data, np.ndarray)
                and acc._data.flags.writeable):
            _add_quietly(acc._data, grad._data, out=acc._data)     # grad += new_grad, in place
            acc._version_counter.value += 1
        else:
            with grad_mode.no_grad():
                acc.add_(grad.detach())
    for fn in list(node._post_hooks.values()):
        fn([grad], [])


def _collect(roots, stop=()):
    """Count, for every reachable node, how many edges lead into it (not looking past ``stop``)."""
    deps: dict = {}
    seen = set()
    stack = list(dict.fromkeys(n for n in roots if n is not None))   # a root given twice counts once
    for n in stack:
        seen.add(n)
    while stack:
        n = stack.pop()
        if n in stop:
            continue
        for nxt, _ in n._next:
            if nxt is None:
                continue
            deps[nxt] = deps.get(nxt, 0) + 1
            if nxt not in seen:
                seen.add(nxt)
                stack.append(nxt)
    return deps, seen


def _needed(nodes, targets):
    """Nodes from which some target node can be reached (others need not run)."""
    memo: dict = {}

    def reaches(n):
        if n in memo:
            return memo[n]
        memo[n] = False
        if n in targets:       # (what lies past a target is judged on its own)
            memo[n] = True
            return True
        hit = False
        for nxt, _ in n._next:
            if nxt is not None and reaches(nxt):
                hit = True
        memo[n] = hit
        return hit

    return {n for n in nodes if reaches(n)}


def _lone_node(node, flag: str) -> bool:
    """``node`` is marked ``flag``, has no hooks and feeds only leaves without hooks: its backward
    is the whole graph's, with no schedule to build."""
    if (not getattr(node, flag, False) or node._pre_hooks or node._post_hooks or node._tensor_pre_hooks
            or node._retains_grad):
        return False
    if not leaf_hooks_seen[0]:            # (no leaf has hooks: only the kinds of the nodes to check)
        for leaf_node, _ in node._next:
            if leaf_node is not None and type(leaf_node) is not AccumulateGrad:
                return False
        return True
    for leaf_node, _ in node._next:       # (one loop, no call per edge: run at every compiled step)
        if leaf_node is not None and (type(leaf_node) is not AccumulateGrad or leaf_node.variable._hooks
                                      or leaf_node._post_hooks or leaf_node._pre_hooks):
            return False
    return True


def _apply_to_leaves(node, apply, retain_graph, create_graph) -> None:
    """Run ``apply()`` (the lone node's gradients) and accumulate them into its leaves."""
    prev = grad_mode.is_grad_enabled()
    grad_mode._set(create_graph)
    try:
        outs = apply()
        if not retain_graph:
            node.release()
        _to_plain_leaves(node._next, outs, create_graph)
    finally:
        grad_mode._set(prev)


def _to_plain_leaves(edges, grads, create_graph) -> None:
    """Accumulate ``grads`` into the leaves of ``edges``, which have no hooks (``_lone_node``)."""
    for (leaf_node, _), g in zip(edges, grads):
        if leaf_node is None or g is None:
            continue
        leaf = leaf_node.variable
        if g._fresh and leaf._grad is None and not create_graph:
            g._fresh = False          # nobody else holds the new gradient: it becomes .grad
            leaf._grad = g
        else:
            _accumulate(leaf_node, g, create_graph)


def _run_single_node(root, grad, retain_graph, create_graph) -> bool:
    """Fast path for the common ``loss.backward()`` on a compiled function's output: one node
    (marked ``_single_node_ok``) with no hooks whose inputs are all leaves without hooks. Does
    exactly what the general loop would do for that graph, without building its schedule."""
    node, nr = root
    if not _lone_node(node, "_single_node_ok"):
        return False
    grads = [None] * len(node._output_types)
    grads[nr] = grad
    _apply_to_leaves(node, lambda: node.apply(grads, retain_graph), retain_graph, create_graph)
    return True


def run_unit_backward(node, retain_graph: bool) -> bool:
    """``loss.backward()`` (implicit gradient 1, no create_graph) on the output of a node that
    can take the unit cotangent without a tensor (``_unit_ok``: a compiled scalar loss whose
    gradients the forward already computed). Same conditions and effects as
    ``_run_single_node``; False when they do not hold."""
    if anomaly_mode._state.enabled or not _lone_node(node, "_unit_ok"):
        return False
    grads, fresh = node.apply_unit(retain_graph)   # wraps arrays the forward computed: records nothing, so grad mode can stay
    if not retain_graph:
        node.release()
    for (leaf_node, _), g, g_fresh in zip(node._next, grads, fresh):
        if leaf_node is None or g is None:
            continue
        leaf = leaf_node.variable
        if g_fresh and leaf._grad is None:
            leaf._grad = g            # nobody else holds the new gradient: it becomes .grad
        else:
            g._fresh = g_fresh
            _accumulate(leaf_node, g, False)
    return True


def _run_node(node, grads: dict, retain_graph: bool):
    """One function node's backward: tensor hooks and retained grads on its incoming gradients,
    pre-hooks, its ``apply``, post-hooks; then it frees its saved tensors unless the graph is
    retained. Returns the gradients for its ``next_functions`` edges."""
    if (node._tensor_pre_hooks or node._retains_grad) and not (
            hasattr(node, "_replays") and node._replays(grads)):    # (a node that runs them itself)
        for nr in list(grads):
            grads[nr] = _run_tensor_hooks(node, nr, grads[nr])
    n_out = len(node._output_types)
    if node._pre_hooks:
        for fn in list(node._pre_hooks.values()):
            old = [grads.get(i) for i in range(n_out)]
            new = fn(tuple(old))
            if new is not None:
                grads = dict(enumerate(_hook_results(fn, old, new)))
    if n_out == 1:
        glist = [grads.get(0)]
        missing = glist[0] is None
    else:
        glist = [grads.get(i) for i in range(n_out)]
        missing = all([g is None for g in glist])     # (not list.count: == on tensors is elementwise)
    if missing:
        outs = [None] * len(node._next)
    else:
        outs = node.apply(glist, retain_graph)
        if node._post_hooks:
            for fn in list(node._post_hooks.values()):
                new = fn(tuple(outs), tuple(glist))
                if new is not None:           # (replaces the gradients the node passes on)
                    outs = _hook_results(fn, list(outs), new)
    if not retain_graph:
        node.release()
    return outs


def _run_node_checked(node, grads: dict, retain_graph: bool):
    """``_run_node`` under anomaly detection: a failing node's forward stack is shown, and its
    gradients are checked for NaNs when ``check_nan`` is on."""
    try:
        outs = _run_node(node, grads, retain_graph)
        if anomaly_mode._state.check_nan:
            anomaly_mode.check_nan(node, outs)
    except Exception:
        anomaly_mode.warn_error_in(node)
        raise
    return outs


# One entry per running backward pass: False for autograd.grad (and backward(inputs=...)), under
# which a reentrant checkpoint cannot run its inner backward (torch.autograd._is_checkpoint_valid).
_CHECKPOINT_VALID: list = []


# One entry per running backward pass: under autograd.grad the nodes from which a captured edge
# can be reached (only those gradients are computed), None under backward() (every one is).
_REACHING: list = []


# One list per running backward pass: what to do when it ends (after_pass).
_AFTER_PASS: list = []


def after_pass(fn) -> None:
    """Call ``fn()`` when the running backward pass ends (at once outside one): to free a node
    along with another (it must still run if this pass reaches it), or to change a node's edges
    (the pass routes gradients along the edges it started with)."""
    if _AFTER_PASS:
        _AFTER_PASS[-1].append(fn)
    else:
        fn()


def gradient_needed(node) -> bool:
    """Whether the running backward pass needs the gradient flowing into ``node``."""
    return not _REACHING or _REACHING[-1] is None or node in _REACHING[-1]


def _is_checkpoint_valid() -> bool:
    return not _CHECKPOINT_VALID or _CHECKPOINT_VALID[-1]


def _capture(node, nrs, grads, captured, hooked: bool) -> None:
    """autograd.grad's capture of the gradients flowing into ``node``'s outputs ``nrs``. As in
    PyTorch's engine, a node that does not run afterwards (a leaf's AccumulateGrad, or a
    non-leaf needed for no other input) gets its tensor hooks (and retain_grad) run first and
    the hooked gradient is captured; a node that still runs gets them when it runs, after the
    capture."""
    for nr in nrs:
        g = grads.get(nr)
        if g is not None and hooked:
            if isinstance(node, AccumulateGrad):
                g = _run_leaf_hooks(node.variable, g)
            else:
                g = _run_tensor_hooks(node, nr, g)
        captured[(node, nr)] = _add(captured.get((node, nr)), g)


def run_backward(roots, root_grads, *, retain_graph: bool, create_graph: bool, capture=None, subgraph=False):
    """Propagate ``root_grads`` from the (node, output_nr) ``roots``.

    ``capture``: a list of (node, output_nr) whose incoming gradient is returned instead
    of being accumulated (autograd.grad); then AccumulateGrad nodes do not run.
    ``subgraph``: the graph between the roots and the captured edges only, which is the whole
    graph of what a composite node computed from its arguments (``node._CompositeNode``): the
    captured nodes neither run nor are looked past, and their tensors' hooks do not run.
    """
    anomaly = anomaly_mode._state.enabled
    if capture is None and len(roots) == 1 and not anomaly and \
            _run_single_node(roots[0], root_grads[0], retain_graph, create_graph):
        return {}
    root_nodes = [n for n, _ in roots]
    targets = {n for n, _ in capture} if capture is not None else None
    deps, seen = _collect(root_nodes, targets if subgraph else ())
    captured = {}
    if capture is not None:
        # the nodes that must run: those leading to a captured edge beyond their own inputs
        reaching = _needed(seen, targets)
        needed = {n for n in reaching if any(nxt in reaching for nxt, _ in n._next)}
        captures = {}
        for cn, cnr in dict.fromkeys(capture):       # (an input given twice is captured once)
            captures.setdefault(cn, []).append(cnr)
    buffers: dict = {}
    for (node, nr), g in zip(roots, root_grads):
        buf = buffers.setdefault(node, {})
        buf[nr] = _add(buf.get(nr), g)
    ready = []
    for n in dict.fromkeys(root_nodes):
        if deps.get(n, 0) == 0:
            heapq.heappush(ready, (-n._seq, id(n), n))
    pop, push = heapq.heappop, heapq.heappush
    prev = grad_mode.is_grad_enabled()
    grad_mode._set(create_graph)
    _CHECKPOINT_VALID.append(capture is None)
    _REACHING.append(reaching if capture is not None else None)
    _AFTER_PASS.append([])
    try:
        while ready:
            node = pop(ready)[2]
            grads = buffers.pop(node, None) or {}
            if capture is not None and node in captures:
                if subgraph:        # (the edges a composite node's arguments had: no hooks run here)
                    for nr in captures[node]:
                        captured[(node, nr)] = _add(captured.get((node, nr)), grads.get(nr))
                else:
                    _capture(node, captures[node], grads, captured, hooked=node not in needed)
            if subgraph and node in targets:
                continue
            if capture is not None and node not in needed:
                outs = ()
            elif isinstance(node, AccumulateGrad):
                if capture is None:
                    _accumulate(node, grads.get(0), create_graph)
                outs = ()
            elif anomaly:
                outs = _run_node_checked(node, grads, retain_graph)
            else:
                outs = _run_node(node, grads, retain_graph)
            for (nxt, nr), g in zip(node._next, outs):
                if nxt is None:
                    continue
                if g is not None:
                    buf = buffers.get(nxt)
                    if buf is None:
                        buffers[nxt] = {nr: g}
                    else:
                        buf[nr] = _add(buf.get(nr), g)
                left = deps[nxt] = deps[nxt] - 1
                if left == 0:
                    push(ready, (-nxt._seq, id(nxt), nxt))
            if not outs:
                for nxt, _ in node._next:
                    if nxt is not None:
                        left = deps[nxt] = deps[nxt] - 1
                        if left == 0:
                            push(ready, (-nxt._seq, id(nxt), nxt))
    finally:
        grad_mode._set(prev)
        _CHECKPOINT_VALID.pop()
        _REACHING.pop()
        for fn in _AFTER_PASS.pop():
            fn()
    return captured


def subgraph_grads(root, grad, edges, create_graph: bool, retain_graph: bool = True) -> list:
    """The gradients, for ``grad`` flowing into tensor ``root``, reaching the (node, output_nr)
    ``edges`` of the tensors it was computed from, through the graph between them only
    (``run_backward``'s ``subgraph``), kept unless ``retain_graph`` is false; None for an edge
    that gets nothing."""
    captured = run_backward([root._grad_edge()], [grad], retain_graph=retain_graph, create_graph=create_graph,
                            capture=list(edges), subgraph=True)
    return [captured.get(e) for e in edges]
