"""partition: split a joint forward+backward function into forward and backward.

Input: the joint function from ``autodiff`` (args = primals + cotangents, results =
primal outputs + gradients). Output: a module with

    @<name>_forward(primals...)                  -> (outputs..., residuals...)
    @<name>_backward(residuals..., cotangents...) -> (gradients...)

Residuals are the values saved for backward. Policies:

- ``save-all``: everything that does not depend on a cotangent runs in forward;
  every forward value that backward reads is saved.
- ``min-memory`` (the default): a minimum cut over the forward graph chooses the
  set of values to save with the fewest bytes, recomputing cheap ops (elementwise,
  views, broadcasts) in backward; expensive ops (matmul, reductions, indexing)
  are never recomputed. Saving a primal input costs nothing extra (the caller
  holds it anyway), as in PyTorch, where saved inputs add no memory; ``free_inputs``
  can restrict that to some inputs (those eager autograd would save: the caller may
  change the others in place before backward, so saving one means copying it).

Only values that backward actually reads (directly or through recomputed ops)
are residuals. ``partition`` raises ``PartitionError`` (a ``ValueError``) for an
unknown policy or a function that is not a joint function from ``autodiff``
(missing or inconsistent ``gradc.num_outputs``/``gradc.num_cotangents``/``gradc.wrt``).
The ``partition`` pass replaces each joint function by its two halves, leaves
functions it produced itself (``gradc.residuals``) alone, and reports any other
function as an error rather than passing it through unsplit.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..ir.clone import clone_op
from ..ir.core import RETURN, Function, Module
from ..ops.registry import ELEMENTWISE, VIEW
from .autodiff import NUM_COTANGENTS, NUM_OUTPUTS, WRT
from .manager import PassError
from .maxflow import INF, FlowGraph

POLICIES = ("save-all", "min-memory")
DEFAULT_POLICY = "min-memory"
RESIDUALS = "gradc.residuals"


class PartitionError(PassError, ValueError):
    """Bad input to partition: an unknown policy or a function that is not a joint function."""


def check_policy(policy) -> str:
    if policy not in POLICIES:
        raise PartitionError(f"partition: unknown policy '{policy}' (expected one of {', '.join(POLICIES)})")
    return policy


def check_joint(joint: Function) -> None:
    """Raise ``PartitionError`` unless ``joint`` carries a consistent autodiff joint layout."""
    missing = [k for k in (NUM_OUTPUTS, NUM_COTANGENTS, WRT) if k not in joint.attrs]
    if missing:
        raise PartitionError(f"partition: @{joint.name} is not a joint function from autodiff (missing "
                             f"{', '.join(missing)}); run autodiff first")
    n_out, n_ct, wrt = joint.attrs[NUM_OUTPUTS], joint.attrs[NUM_COTANGENTS], joint.attrs[WRT]
    n_primal = len(joint.args) - n_ct if isinstance(n_ct, int) else -1
    ok = (isinstance(n_out, int) and not isinstance(n_out, bool) and isinstance(n_ct, int)
          and not isinstance(n_ct, bool) and isinstance(wrt, list) and 0 <= n_ct <= len(joint.args)
          and 0 <= n_out and n_out + len(wrt) == len(joint.outputs)
          and all(isinstance(i, int) and 0 <= i < n_primal for i in wrt))
    if not ok:
        raise PartitionError(f"partition: @{joint.name} has an inconsistent joint layout ({NUM_OUTPUTS} = "
                             f"{n_out!r}, {NUM_COTANGENTS} = {n_ct!r}, {WRT} = {wrt!r} for "
                             f"{len(joint.args)} arguments and {len(joint.outputs)} results)")


def recomputable(op) -> bool:
    d = op.opdef
    return d is not None and (d.has(ELEMENTWISE) or d.has(VIEW) or op.name in ("gradc.constant", "gradc.sum_to"))


@dataclass
class Partition:
    forward: Function
    backward: Function
    residual_types: list = field(default_factory=list)
    saved_input_indices: list = field(default_factory=list)  # residuals that are primal inputs
    copied_input_indices: list = field(default_factory=list)  # ... of those, the ones not free to save

    @property
    def module(self) -> Module:
        return Module([self.forward, self.backward])

    @property
    def saved_bytes(self) -> int:
        """Bytes kept alive between forward and backward beyond the caller's inputs: an input
        that is not free to save (``free_inputs``) is a copy taken at the call."""
        free = self.saved_input_set - set(self.copied_input_indices)
        return sum(t.nbytes for k, t in enumerate(self.residual_types) if k not in free)

    @property
    def saved_input_set(self) -> set:
        return set(self.saved_input_indices)


def _split_sets(joint: Function):
    n_out = joint.attrs[NUM_OUTPUTS]
    n_ct = joint.attrs[NUM_COTANGENTS]
    n_primal = len(joint.args) - n_ct
    primals = joint.args[:n_primal]
    cotangents = set(joint.args[n_primal:])
    outputs = joint.outputs
    # values that depend on a cotangent can only be computed in backward
    tangent_dep = set(cotangents)
    for op in joint.body.ops:
        if op.name != RETURN and any(v in tangent_dep for v in op.operands):
            tangent_dep.update(op.results)
    return primals, n_out, tangent_dep, outputs


def needed_ops(joint: Function, roots):
    """Ops (in order) needed to compute ``roots``."""
    need = set()
    stack = [v for v in roots]
    seen = set()
    while stack:
        v = stack.pop()
        if v in seen:
            continue
        seen.add(v)
        op = v.owner
        if hasattr(op, "results") and op.name != RETURN:
            need.add(op)
            stack.extend(op.operands)
    return [op for op in joint.body.ops if op in need]


def partition(joint: Function, policy: str = DEFAULT_POLICY, free_inputs=None) -> Partition:
    """Split ``joint``; ``free_inputs`` (positions of primal inputs, None: all) are the inputs
    the min-memory cut may save at no cost."""
    check_policy(policy)
    check_joint(joint)
    primals, n_out, tangent_dep, outputs = _split_sets(joint)
    primal_outputs, grads = outputs[:n_out], outputs[n_out:]
    backward_ops = [op for op in needed_ops(joint, grads) if any(r in tangent_dep for r in op.results)]
    backward_set = set(backward_ops)
    # forward values read by backward ops (or returned directly as gradients)
    needed = []
    for op in backward_ops:
        for v in op.operands:
            if v not in tangent_dep and v not in needed:
                needed.append(v)
    for g in grads:
        if g not in tangent_dep and g not in needed:
            needed.append(g)
    fwd_candidates = [op for op in needed_ops(joint, list(primal_outputs) + needed) if op not in backward_set]

    free = primals if free_inputs is None else [primals[i] for i in free_inputs]
    if policy == "save-all":
        saved = [v for v in needed if not _is_constant(v)]
    else:
        saved = _min_cut(primals, fwd_candidates, needed, set(primal_outputs), free)
    recompute = _recompute_ops(saved, needed)
    # forward: ops needed for outputs and for the saved values (in joint order)
    fwd_ops = [op for op in needed_ops(joint, list(primal_outputs) + saved) if op not in backward_set]

    n_primal = len(primals)
    forward = Function(joint.name.replace("_joint", "") + "_forward", [a.type for a in primals],
                       [a.name_hint for a in primals], arg_attrs=[dict(a) for a in joint.arg_attrs[:n_primal]])
    fmap = dict(zip(primals, forward.args))
    for op in fwd_ops:
        forward.body.append(clone_op(op, fmap))
    forward.set_outputs([fmap[v] for v in primal_outputs] + [fmap[v] for v in saved])
    saved_inputs = [k for k, v in enumerate(saved) if v in primals]
    copied_inputs = [k for k in saved_inputs if saved[k] not in set(free)]
    forward.attrs[NUM_OUTPUTS] = n_out
    forward.attrs[RESIDUALS] = len(saved)

    cts = joint.args[n_primal:]
    names = [_residual_name(v, k) for k, v in enumerate(saved)]
    backward = Function(joint.name.replace("_joint", "") + "_backward",
                        [v.type for v in saved] + [c.type for c in cts], names + [c.name_hint for c in cts])
    bmap = dict(zip(saved, backward.args))
    bmap.update(zip(cts, backward.args[len(saved):]))
    recompute_set = set(recompute)
    for op in joint.body.ops:
        if op in recompute_set or op in backward_set:
            backward.body.append(clone_op(op, bmap))
    backward.set_outputs([bmap[g] for g in grads])
    backward.attrs[RESIDUALS] = len(saved)
    backward.attrs[WRT] = list(joint.attrs[WRT])
    return Partition(forward, backward, [v.type for v in saved], saved_inputs, copied_inputs)


def _is_constant(v) -> bool:
    return getattr(v.owner, "name", None) == "gradc.constant"


def _residual_name(v, k):
    hint = v.name_hint
    return hint if hint else f"saved{k}"


def _recompute_ops(saved, needed):
    """Ops that backward re-executes to rebuild ``needed`` from ``saved``."""
    saved_set = set(saved)
    ops = set()
    stack = [v for v in needed if v not in saved_set]
    seen = set()
    while stack:
        v = stack.pop()
        if v in seen or v in saved_set:
            continue
        seen.add(v)
        op = v.owner
        if not hasattr(op, "results"):
            raise RuntimeError("partition: a needed value is neither saved nor computable")  # primal not saved
        ops.add(op)
        stack.extend(op.operands)
    return ops


def _min_cut(primals, fwd_ops, needed, outputs, free):
    """Choose residuals: a minimum-byte cut separating inputs from what backward needs (the
    ``free`` inputs cost nothing to save)."""
    g = FlowGraph()
    src, sink = ("source",), ("sink",)
    primal_set = set(free)

    def cost(v):
        return 0 if v in primal_set else v.type.nbytes + 1   # +1 prefers fewer tensors on ties

    for a in primals:
        g.add_edge(src, ("in", a), INF)
        g.add_edge(("in", a), ("out", a), cost(a))
    for op in fwd_ops:
        for r in op.results:
            g.add_edge(("in", r), ("out", r), cost(r))
            if not recomputable(op):
                g.add_edge(src, ("in", r), INF)
            for v in op.operands:
                g.add_edge(("out", v), ("in", r), INF)
    for v in needed:
        g.add_edge(("out", v), sink, INF)
    _, reach = g.min_cut(src, sink)
    cut = set()
    candidates = list(primals) + [r for op in fwd_ops for r in op.results]
    for v in candidates:
        if ("in", v) in reach and ("out", v) not in reach:
            cut.add(v)
    # A zero-cost edge (a primal input) is on the source side's boundary whether or not
    # anything needs it: keep only the cut values that rebuilding ``needed`` reads.
    read, stack = set(), list(needed)
    while stack:
        v = stack.pop()
        if v in read:
            continue
        read.add(v)
        if v not in cut and hasattr(v.owner, "operands"):
            stack.extend(v.owner.operands)
    return [v for v in candidates if v in cut and v in read]


from .manager import Pass, register_pass  # noqa: E402


@register_pass
class PartitionPass(Pass):
    """Replace each joint function by its forward and backward functions."""
    name = "partition"
    summary = "split joint functions into forward (outputs + residuals) and backward"

    def __init__(self, policy: str = DEFAULT_POLICY, free_inputs=None):
        self.policy = check_policy(policy)
        # ``free-inputs=0,2`` (or one position, or ``none``): the inputs saved at no cost
        if isinstance(free_inputs, str):
            if free_inputs != "none":
                raise PartitionError(f"partition: free-inputs must be positions or 'none', got '{free_inputs}'")
            free_inputs = []
        self.free_inputs = [free_inputs] if isinstance(free_inputs, int) else free_inputs

    def run_on_module(self, module) -> bool:
        out, changed = [], False
        for f in module.functions:
            if RESIDUALS in f.attrs:     # already a forward or backward half
                out.append(f)
                continue
            p = partition(f, self.policy, self.free_inputs)
            out += [p.forward, p.backward]
            changed = True
        module.functions = out
        return changed
