"""``gradc explain-memory``: which buffers a compiled function saves for backward, and its peaks.

This module owns the report. It partitions the adjoint (``stages.Stages.adjoint``)
with both policies, save-all and min-memory, as ``@gradc.compile`` would, and
matches each policy's residuals back to values of the adjoint by structure
(the op, its attributes and its operands, recursively: the partition copies ops,
so value identity is lost). Every value either policy saves is one row:
its SSA name in ``gradc dump-ir --stage adjoint``, op, shape, dtype, bytes, source
line (the IR location) and what the chosen policy does with it: ``saved``,
``saved (input)`` (a primal input, held by the caller anyway: no extra bytes),
``saved (copy of input)`` (an input eager autograd would not save, which the caller may
change in place before backward: copied at each call, its bytes counted), or ``recomputed`` (backward recomputes it from other residuals).

The peaks come from ``passes.plan_buffers.plan_partition`` on the fused forward
and backward functions (what the executor runs), with and without retain_graph.
"""
from __future__ import annotations

from dataclasses import dataclass

from .ir.core import RETURN, Function
from .ir.printer import Namer
from .stages import Stages, StageError

POLICIES = ("save-all", "min-memory")


@dataclass
class Row:
    name: str
    op: str
    shape: tuple
    dtype: str
    nbytes: int
    source: str
    status: str                # for the chosen policy: saved / saved (input) / recomputed

    def as_dict(self) -> dict:
        return dict(name=self.name, op=self.op, shape=list(self.shape), dtype=self.dtype, bytes=self.nbytes,
                    source=self.source, status=self.status)


@dataclass
class PolicyMemory:
    policy: str
    saved_bytes: int           # residual bytes beyond the caller's inputs
    n_residuals: int
    forward_peak: int
    backward_peak: int         # includes the residuals it reads
    after_backward: int        # held after backward (0: residuals freed)
    after_backward_retained: int   # held after backward with retain_graph=True

    def as_dict(self) -> dict:
        return dict(self.__dict__)


@dataclass
class MemoryReport:
    function: str
    policy: str
    rows: list
    policies: dict             # policy -> PolicyMemory

    def as_dict(self) -> dict:
        return dict(function=self.function, policy=self.policy, buffers=[r.as_dict() for r in self.rows],
                    policies={k: v.as_dict() for k, v in self.policies.items()})


# ---- structural matching ------------------------------------------------------------------------
def _keys(func: Function, n_args: int) -> dict:
    """value -> structural key (argument index, or op name + attrs + operand keys)."""
    keys = {a: ("arg", i) for i, a in enumerate(func.args[:n_args])}
    for op in func.body.ops:
        if op.name == RETURN:
            continue
        attrs = repr(sorted(op.attrs.items()))
        operands = tuple(keys.get(v, ("?", id(v))) for v in op.operands)
        for i, r in enumerate(op.results):
            keys[r] = (op.name, attrs, operands, i)
    return keys


def _residuals(adjoint: Function, policy: str, free_inputs=None):
    """(joint values saved by ``policy``, fused Partition); ``free_inputs`` as the partition's."""
    from .ir.clone import clone_function
    from .passes.autodiff import NUM_COTANGENTS, NUM_OUTPUTS
    from .passes.fuse import fuse
    from .passes.partition import partition
    n_primal = len(adjoint.args) - adjoint.attrs[NUM_COTANGENTS]
    part = partition(clone_function(adjoint), policy, free_inputs=free_inputs)
    by_key = {k: v for v, k in _keys(adjoint, n_primal).items()}
    fkeys = _keys(part.forward, n_primal)
    saved = [by_key.get(fkeys.get(v)) for v in part.forward.outputs[part.forward.attrs[NUM_OUTPUTS]:]]
    fuse(part.forward)
    fuse(part.backward)
    return saved, part


def explain(stages: Stages, policy: str | None = None) -> MemoryReport:
    from .passes.plan_buffers import plan_partition
    policy = policy or stages.memory
    if stages.adjoint is None:
        raise StageError("nothing is saved for backward: mark an argument :grad (e.g. --arg x=f32[2,2]:grad)")
    joint = stages.adjoint
    results, memories = {}, {}
    free = None if stages.free_inputs is None else {joint.args[i] for i in stages.free_inputs}
    for p in POLICIES:
        saved, part = _residuals(joint, p, stages.free_inputs)
        results[p] = saved
        plain, kept = plan_partition(part), plan_partition(part, retain_graph=True)
        memories[p] = PolicyMemory(p, plain.saved_bytes, len(saved), plain.forward_peak, plain.backward_peak,
                                   plain.after_backward, kept.after_backward)
    chosen = set(v for v in results[policy] if v is not None)
    union = set(v for p in POLICIES for v in results[p] if v is not None)
    namer = Namer(joint)
    position = {a: i for i, a in enumerate(joint.args)}
    for op in joint.body.ops:
        for r in op.results:
            position[r] = len(position)
    rows = []
    for v in sorted(union, key=lambda v: position.get(v, 1 << 30)):
        is_arg = v in joint.args
        op = None if is_arg else v.owner
        if is_arg:
            status = "not needed" if v not in chosen else "saved (input)" if free is None or v in free \
                else "saved (copy of input)"
            source = f"{joint.loc} (argument)" if joint.loc else "argument"
        else:
            status = "saved" if v in chosen else "recomputed"
            source = op.loc or "?"
        rows.append(Row(namer[v], "argument" if is_arg else op.name, tuple(v.type.shape), v.type.dtype.ir_name,
                        v.type.nbytes, source, status))
    return MemoryReport(stages.name, policy, rows, memories)


# ---- text ---------------------------------------------------------------------------------------
def fmt_bytes(n: int) -> str:
    if n < 1024:
        return f"{n} B"
    for unit in ("KiB", "MiB", "GiB"):
        n /= 1024
        if n < 1024 or unit == "GiB":
            return f"{n:.1f} {unit}"
    return f"{n} B"   # pragma: no cover


def _table(header, rows, right=()) -> list[str]:
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows)]
    out = []
    for r in [header] + rows:
        cells = [str(c).rjust(w) if i in right else str(c).ljust(w) for i, (c, w) in enumerate(zip(r, widths))]
        out.append("  ".join(cells).rstrip())
    out.insert(1, "  ".join("-" * w for w in widths))
    return out


def format_report(rep: MemoryReport) -> str:
    lines = [f"saved-for-backward buffers of @{rep.function} (policy {rep.policy}; names as in "
             "`gradc dump-ir --stage adjoint`):", ""]
    if rep.rows:
        body = [[r.name, r.op, "[" + ", ".join(map(str, r.shape)) + "]", r.dtype, str(r.nbytes), r.source, r.status]
                for r in rep.rows]
        lines += _table(["value", "op", "shape", "dtype", "bytes", "source", rep.policy], body, right=(4,))
    else:
        lines.append("  (none: backward needs no forward values)")
    lines += ["", "memory per policy (plan-buffers over the fused forward and backward):", ""]
    order = [rep.policy] + [p for p in POLICIES if p != rep.policy]
    pm = [rep.policies[p] for p in order]
    rows = [["saved for backward"] + [fmt_bytes(m.saved_bytes) for m in pm],
            ["residual tensors"] + [str(m.n_residuals) for m in pm],
            ["forward peak"] + [fmt_bytes(m.forward_peak) for m in pm],
            ["backward peak (incl. saved)"] + [fmt_bytes(m.backward_peak) for m in pm],
            ["held after backward"] + [fmt_bytes(m.after_backward) for m in pm],
            ["  with retain_graph=True"] + [fmt_bytes(m.after_backward_retained) for m in pm]]
    lines += _table([""] + [p + (" (chosen)" if p == rep.policy else "") for p in order], rows,
                    right=tuple(range(1, len(order) + 1)))
    return "\n".join(lines) + "\n"
