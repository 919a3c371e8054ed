"""What eager autograd would do for a traced function, for ``@gradc.compile`` to do the same.

The compiled node of a call runs one backward for the whole function; these analyses of the
traced IR say where eager autograd's graph of the same ops would behave visibly differently:
which inputs each output depends on (``differentiable_reach``, ``output_dependencies``), which
outputs are computed from others (``internal_outputs``) or returned twice (``repeated_outputs``),
which arguments its nodes would save (``saved_by_eager_autograd``: PyTorch's version-counter
errors, and the inputs the partition may save for free, ``partition_free_inputs``), whether they
save anything (``saves_anything``: whether a backward frees them), and where the graph of a
create_graph=True gradient would run through nodes that saved tensors
(``double_backward_reads_saved``). ``replay`` runs the traced function eagerly, recording the
eager graph, for the backwards that need exactly eager autograd's.
"""
from __future__ import annotations

import numpy as np

from .ir.core import Function
from .passes.partition import needed_ops
from .ops import dispatch as _dispatch
from .tensor import Tensor


def differentiable_reach(func: Function, wrt, outputs):
    """(the ``wrt`` arguments that some of the ``outputs`` (positions) depend on through
    differentiable ops, those outputs).  As eagerly, an argument no output depends on gets no
    gradient (None, not zeros), and an output that depends on no such argument does not
    require grad."""
    from .ops.registry import NONDIFF, _TABLE
    deps = {func.args[i]: frozenset([i]) for i in wrt}
    for op in func.body.ops:
        opdef = _TABLE.get(op.name[len("gradc."):]) if op.name.startswith("gradc.") else None
        if opdef is not None and opdef.has(NONDIFF):
            continue
        d = frozenset().union(*[deps.get(v, ()) for i, v in enumerate(op.operands)
                                if opdef is None or opdef.input_is_differentiable(i)])
        if d:
            for r in op.results:
                if r.type.dtype.is_floating_point:
                    deps[r] = d
    outputs = [k for k in outputs if deps.get(func.outputs[k])]
    used = frozenset().union(*[deps[func.outputs[k]] for k in outputs])
    return [i for i in wrt if i in used], outputs


def output_dependencies(func: Function, wrt, n_outputs: int):
    """For each output position, the positions in ``wrt`` of the inputs it depends on through
    differentiable ops (``differentiable_reach`` of that output alone); None when every output
    depends on every input (the common case, nothing to mask)."""
    deps = []
    for k in range(n_outputs):
        used, _ = differentiable_reach(func, wrt, [k])
        deps.append(frozenset(wrt.index(i) for i in used))
    everything = frozenset(range(len(wrt)))
    return None if all(d == everything for d in deps) else deps


def internal_outputs(func: Function, outputs) -> dict:
    """{output position: the other output positions computed from it through differentiable ops},
    for the ``outputs`` that some other one depends on.  Eagerly a hook on such an output sees the
    gradient flowing back from those others too (``CompiledFunctionBackward._replays``)."""
    from .ops.registry import NONDIFF, _TABLE
    found = {}
    for k in outputs:
        reach = {func.outputs[k]}
        for op in func.body.ops:
            opdef = _TABLE.get(op.name[len("gradc."):]) if op.name.startswith("gradc.") else None
            if opdef is not None and opdef.has(NONDIFF):
                continue
            if any(v in reach for i, v in enumerate(op.operands) if opdef is None or opdef.input_is_differentiable(i)):
                reach.update(r for r in op.results if r.type.dtype.is_floating_point)
        others = frozenset(j for j in outputs if j != k and func.outputs[j] in reach
                           and func.outputs[j] is not func.outputs[k])
        if others:
            found[k] = others
    return found


def replay(func: Function, inputs) -> list:
    """Run traced ``func`` eagerly on the tensors ``inputs`` (recording an eager graph): its
    outputs as eager tensors, one object per traced value."""
    from .ops import registry
    env = dict(zip(func.args, inputs))
    for op in func.body.ops:
        if op.name == "func.return":
            break
        args = [env[v] for v in op.operands]
        if args:
            out = _dispatch.apply(op.short_name, *args, **op.attrs)
        else:                   # a constant
            out = Tensor._wrap(np.asarray(registry.get(op.short_name).forward(**op.attrs)))
        for r, t in zip(op.results, out if isinstance(out, (tuple, list)) else (out,)):
            env[r] = t
    return [env[v] for v in func.outputs]


def repeated_outputs(func: Function, n_outputs: int) -> dict:
    """{position: first position} for outputs that are the same traced value as an earlier
    output (the function returned one tensor twice): the call returns one tensor object for
    both, so a hook or ``retain_grad`` on one sees the gradients of every use."""
    first, repeats = {}, {}
    for k, v in enumerate(func.outputs[:n_outputs]):
        if v in first:
            repeats[k] = first[v]
        else:
            first[v] = k
    return repeats


def saved_by_eager_autograd(func: Function) -> frozenset:
    """The argument positions of traced ``func`` whose tensors eager autograd's nodes would save
    (an op whose VJP reads that operand, ``OpDef.saves``, reached directly or through views):
    modifying one of those in place before backward is PyTorch's version-counter error."""
    from .ops.registry import NONDIFF, VIEW, _TABLE
    root = {a: i for i, a in enumerate(func.args)}
    grad = {a for a, attrs in zip(func.args, func.arg_attrs) if attrs.get("gradc.requires_grad")}
    saved = set()
    live = _run_by_backward(func.outputs)
    for op in func.body.ops:
        opdef = _TABLE.get(op.name[len("gradc."):]) if op.name.startswith("gradc.") else None
        if opdef is None or op not in live:
            continue
        if not opdef.has(NONDIFF) and any(v in grad for v in op.operands):
            grad.update(r for r in op.results if r.type.dtype.is_floating_point)
        if opdef.has(VIEW) and op.operands and op.operands[0] in root:
            for r in op.results:
                root[r] = root[op.operands[0]]
            continue
        for s in opdef.saves:
            if not s.startswith("in"):
                continue
            first = int(s[2:].rstrip("+"))
            positions = range(first, len(op.operands)) if s.endswith("+") else [first]
            for k in positions:
                if k < len(op.operands) and op.operands[k] in root and _vjp_reads(opdef.name, op.operands, k, grad):
                    saved.add(root[op.operands[k]])
    return frozenset(saved)


def partition_free_inputs(func: Function) -> list:
    """The argument positions of traced ``func`` that the partition may save at no cost (read
    from the caller's tensor at backward, version-checked): those eager autograd would save and
    the call does not write."""
    written = {pos for pos, _ in func.meta.get("state_writes", ())}
    return sorted(saved_by_eager_autograd(func) - written)


def _run_by_backward(values) -> set:
    """The ops a backward from ``values`` runs eagerly: those the values depend on through
    differentiable ops and operands (a ``no_grad`` block's ops, seen through its ``detach``, and
    the ops that only compute an index or a mask are not)."""
    from .ops.registry import NONDIFF
    need, pending, seen = set(), list(values), set()
    while pending:
        v = pending.pop()
        if v in seen:
            continue
        seen.add(v)
        op = v.owner
        opdef = getattr(op, "opdef", None)
        if not hasattr(op, "operands") or opdef is None or opdef.has(NONDIFF):
            continue
        need.add(op)
        pending.extend(x for i, x in enumerate(op.operands) if opdef.input_is_differentiable(i))
    return need


def outputs_through_freed(func: Function, n_outputs: int) -> frozenset:
    """Positions among the first ``n_outputs`` outputs of traced ``func`` whose backward would
    run an op whose saved tensors a ``gradc.autograd.grad`` without ``retain_graph`` inside the
    function freed (``func.meta["freed"]``, ``ir/traced_grad.py``): eagerly, backward from one
    of those is PyTorch's error (every value computed from such an op requires grad, so a
    differentiable path from the output to it is one the backward takes)."""
    freed = func.meta.get("freed")
    if not freed:
        return frozenset()
    return frozenset(k for k in range(n_outputs) if freed & _run_by_backward([func.outputs[k]]))


def inner_leaf_outputs(func: Function, candidates) -> tuple:
    """(the positions among ``candidates`` whose output is a leaf traced ``func`` made with
    ``requires_grad_()`` (``func.meta["grad_leaves"]``), those computed from one through
    differentiable ops): eagerly both require grad, and the second have a grad_fn."""
    from .passes.autodiff import propagate_active
    leaves = set(func.meta.get("grad_leaves", ()))
    if not leaves:
        return (), ()
    reach = propagate_active(func.body.ops, leaves)
    own = tuple(k for k in candidates if func.outputs[k] in leaves)
    for k in own:
        others = propagate_active(func.body.ops, [func.outputs[k]]) - {func.outputs[k]}
        if any(v in others for v in func.outputs):
            from .ir.errors import TraceError
            raise TraceError(f"@gradc.compile({func.name}): output {k} is a tensor the function made a leaf "
                             "(requires_grad_()) and another output is computed from it: its .grad would miss "
                             "the gradients of that output (the compiled backward differentiates with respect to "
                             f"the arguments only); return a clone() of it instead (defined at {func.loc})")
    return own, tuple(k for k in candidates if func.outputs[k] in reach and k not in own)


def read_arguments(func: Function, values, n_args: int) -> frozenset:
    """Positions of the first ``n_args`` arguments of ``func`` that ``values`` depend on."""
    read = set()
    for op in needed_ops(func, values):
        read.update(op.operands)
    read.update(values)
    return frozenset(i for i, a in enumerate(func.args[:n_args]) if a in read)


def saves_anything(func: Function) -> bool:
    """Whether eager autograd's nodes for traced ``func`` would save any tensor (a differentiable
    op with ``saves`` reached from an argument requiring grad): only then does a backward that
    does not retain the graph make a second one PyTorch's error."""
    from .ops.registry import NONDIFF, _TABLE
    grad = {a for a, attrs in zip(func.args, func.arg_attrs) if attrs.get("gradc.requires_grad")}
    live = _run_by_backward(func.outputs)
    for op in func.body.ops:
        opdef = _TABLE.get(op.name[len("gradc."):]) if op.name.startswith("gradc.") else None
        if opdef is None or opdef.has(NONDIFF) or not any(v in grad for v in op.operands):
            continue
        grad.update(r for r in op.results if r.type.dtype.is_floating_point)
        if opdef.saves and op in live:
            return True
    return False


def double_backward_reads_saved(func: Function, wrt, outputs) -> dict:
    """{position j in ``wrt``: a set of sets of positions in ``wrt``}: the gradient of input j,
    taken eagerly with create_graph=True, has a graph running through a node of ``func`` that
    saves tensors, for each set the inputs that node leads to: a VJP reads a saved value computed
    inside the function that requires grad (not an argument), and that node lies between the
    value and the arguments (exp, saving its own result, is one). Differentiating such a gradient
    with respect to one of those inputs after a first backward that ran (and freed) the node is
    PyTorch's error.  Only the graphs of the ``outputs`` (positions) count: those given a
    gradient in the first backward."""
    from .ops.registry import NONDIFF, _TABLE
    args = set(func.args)
    deps = {func.args[i]: frozenset([n]) for n, i in enumerate(wrt)}
    live = _run_by_backward([func.outputs[k] for k in outputs])
    frees = {}
    for op in func.body.ops:
        opdef = _TABLE.get(op.name[len("gradc."):]) if op.name.startswith("gradc.") else None
        if opdef is None or opdef.has(NONDIFF):
            continue
        flowing = [deps.get(v, frozenset()) for v in op.operands]
        reached = frozenset().union(*flowing)
        if not reached:
            continue
        deps.update((r, reached) for r in op.results if r.type.dtype.is_floating_point)
        if op not in live:
            continue
        for d in _tie_runs_through(op, opdef, func.meta.get("takes_input", {}), args, deps, reached):
            for j in reached:
                frees[j] = frees.get(j, frozenset()) | d
        for token in opdef.saves:
            if token in _COMPARED_ONLY.get(opdef.name, ()):
                continue
            if token.startswith("out"):     # its own result: a gradient reading it runs through this node
                for i, d in enumerate(flowing):
                    if d and _read_for(opdef.name, token, i):
                        for j in d:
                            frees[j] = frees.get(j, frozenset()) | {reached}
                continue
            first = int(token[2:].rstrip("+"))
            for k in (range(first, len(op.operands)) if token.endswith("+") else [first]):
                v = op.operands[k] if k < len(op.operands) else None
                if v is None or v in args or not deps.get(v):
                    continue
                beyond = _saves_on_the_way(v, args, deps)
                for i, d in enumerate(flowing):
                    if beyond and d and _read_for(opdef.name, f"in{k}", i):
                        for j in d:
                            frees[j] = frees.get(j, frozenset()) | beyond
    return frees


def _tie_runs_through(op, opdef, composed, args, deps, reached) -> list:
    """The saving nodes a second backward runs through (with zeros) from the ``_InputTie`` of
    ``op``'s gradient, when eager autograd records one that passes a derivative on (relu's, over
    its own result: relu's node; the others', over the op's inputs: the nodes between those and
    the arguments), as in ``double_backward_reads_saved``'s result."""
    from .autograd.node import _TAKES_INPUT
    name = _tie_name(op, opdef, composed)
    if name is None or _TAKES_INPUT[name] is not None:      # (none passed on, or an error)
        return []
    if opdef.name == "relu":
        return [{reached}]
    return [_saves_on_the_way(v, args, deps) for v in op.operands if v not in args and deps.get(v)]


# saved values a VJP reads only in comparisons (a mask): no graph runs through them
_COMPARED_ONLY = {"relu": ("out0",), "maximum": ("in0", "in1"), "minimum": ("in0", "in1"),
                  "amax": ("in0", "out0"), "amin": ("in0", "out0")}


def _read_for(name, token, i) -> bool:
    """Whether the VJP of op ``name`` reads its saved value ``token`` ("in0", "out0") for operand
    ``i``'s gradient."""
    if name in ("mul", "matmul"):
        return token != f"in{i}"
    if name == "div":
        return token == "in1" or i == 1
    if name == "pow" and token == "out0":
        return i == 1               # a ** b: for b's gradient only
    return True


def _saves_on_the_way(v, args, deps) -> frozenset:
    """For each op that saves tensors between value ``v`` and the arguments (through values
    carrying gradients), the ``wrt`` positions it leads to."""
    pending, seen, found = [v], set(), set()
    while pending:
        v = pending.pop()
        if v in seen or v in args or not deps.get(v):
            continue
        seen.add(v)
        opdef = getattr(v.owner, "opdef", None)
        if opdef is None:
            continue
        if opdef.saves:
            found.add(deps[v])
        pending.extend(v.owner.operands)
    return frozenset(found)


# operands that a product's VJP reads only for the other operands' gradients (a * 3 does not
# save a; a / b reads a only for b's gradient)
_READ_FOR_OTHERS = {"mul": None, "matmul": None, "div": (0,)}


def _vjp_reads(name, operands, k, grad) -> bool:
    """Whether eager autograd's node reads saved operand ``k`` in its backward, given which
    operands carry gradients (``grad``)."""
    if any(v in grad for j, v in enumerate(operands) if j != k):
        return True
    if operands[k] not in grad:
        return False
    only_for_others = _READ_FOR_OTHERS.get(name, ())
    return not (only_for_others is None or k in only_for_others)


def input_tied_gradients(func: Function, wrt) -> dict:
    """{position j in ``wrt``: (grad_fn name, kind)} for the inputs whose first-order gradient
    eagerly runs back through a node whose PyTorch backward takes the op's input
    (``autograd.node._TAKES_INPUT``: threshold, hardtanh, ...; relu's takes its result): under create_graph=True that
    gradient requires grad eagerly (``_InputTie``), where a compiled adjoint computes it through a
    comparison that carries no derivative.  Table ops count by their grad_fn name, compositions
    (hardtanh, the pools, the pads: several table ops) by the name the tracer noted for their
    results (``func.meta["takes_input"]``)."""
    from .autograd.node import _TAKES_INPUT
    from .ops.registry import NONDIFF, PIECEWISE_CONSTANT, _TABLE
    deps = {func.args[i]: frozenset([n]) for n, i in enumerate(wrt)}
    live = _run_by_backward(func.outputs)      # (not an op that only computes an index: argmax's input)
    composed = func.meta.get("takes_input", {})      # results of compositions so named (hardtanh, pools, pads)
    tied = {}
    for op in func.body.ops:
        opdef = _TABLE.get(op.name[len("gradc."):]) if op.name.startswith("gradc.") else None
        if opdef is None or opdef.has(NONDIFF) or opdef.has(PIECEWISE_CONSTANT):   # (no gradient reaches back)
            continue
        reached = frozenset().union(*[deps.get(v, frozenset()) for v in op.operands])
        if not reached:
            continue
        deps.update((r, reached) for r in op.results if r.type.dtype.is_floating_point)
        name = _tie_name(op, opdef, composed)
        if op in live and name is not None:
            for j in reached:
                tied.setdefault(j, (name, _TAKES_INPUT[name]))
    return tied


def _tie_name(op, opdef, composed):
    """The name of eager autograd's node for ``op`` when PyTorch's backward of it takes the input
    (``autograd.node._TAKES_INPUT``; ``composed``: the names the tracer noted for compositions'
    results), else None.  relu's is threshold_backward(grad, result, 0), its node's own result."""
    from .autograd.node import _TAKES_INPUT
    name = next((composed[r] for r in op.results if r in composed), None) or opdef.grad_fn_name(op.attrs)
    if name == "ReluBackward0":
        name = "ThresholdBackward0"
    return name if name in _TAKES_INPUT else None
