"""plan-buffers: liveness over the linear schedule and an arena memory plan.

Every top-level op of a function is one step of the schedule. Each result that
needs memory gets a buffer; views (reshape, permute, expand) and the trivial
forwarding of an argument alias their source instead, extending its lifetime.
A buffer is live from its defining step to its last use (a read inside a ``gradc.fused``
body counts as a use at the fused op's step); it is dead right after,
and its bytes can be reused. Function arguments belong to the caller and are never
written; results returned by the function escape (live to the end, never reused).

``plan_function`` gives a ``MemoryPlan``: per-buffer size, lifetime and arena
offset (greedy best-fit, largest first, as tinygrad's memory planner does), and
the peak bytes live at once. ``plan_partition`` models PyTorch's freeing across
forward and backward: residuals stay alive from forward until backward has run,
then are freed — unless ``retain_graph`` keeps them.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..ir.core import RETURN, Function, Operation
from ..ops.registry import VIEW

ATTR_PEAK = "gradc.peak_bytes"
ATTR_ARENA = "gradc.arena_bytes"
ATTR_BUFFERS = "gradc.buffers"


@dataclass
class Buffer:
    value: object            # the IR value that owns the memory
    size: int
    first: int               # defining step
    last: int                # last step that reads it (or end of schedule if it escapes)
    escapes: bool = False    # returned to the caller: never reused
    offset: int = -1
    aliases: list = field(default_factory=list)   # views of this buffer

    @property
    def name(self) -> str:
        return getattr(self.value, "name_hint", None) or ""


@dataclass
class MemoryPlan:
    buffers: list
    steps: int
    peak_bytes: int          # most bytes live at one step (arena + escaping results)
    arena_bytes: int         # size of the reusable arena after offset assignment

    def live_bytes_at(self, step: int) -> int:
        return sum(b.size for b in self.buffers if b.first <= step <= b.last)

    def table(self) -> list[dict]:
        return [dict(value=str(b.value.type), size=b.size, first=b.first, last=b.last, offset=b.offset,
                     escapes=b.escapes) for b in self.buffers]


def _reads(op: Operation):
    """The values ``op`` reads: its operands and those of the ops nested in its regions (a
    fused body may read an enclosing value directly; that read happens at ``op``'s step)."""
    for inner in op.walk():
        yield from inner.operands


def _is_alias(op: Operation) -> bool:
    d = op.opdef
    return d is not None and d.has(VIEW)


def plan_function(func: Function, *, keep_alive=()) -> MemoryPlan:
    """Liveness and offsets for ``func``; ``keep_alive`` values live to the end and escape."""
    ops = [op for op in func.body.ops if op.name != RETURN]
    end = len(ops)
    root: dict = {}           # value -> owning buffer (None for function arguments)
    buffers: list[Buffer] = []
    for a in func.args:
        root[a] = None
    for step, op in enumerate(ops):
        for r in op.results:
            if _is_alias(op) and op.operands:
                src = root.get(op.operands[0])
                root[r] = src
                if src is not None:
                    src.aliases.append(r)
                continue
            b = Buffer(r, r.type.nbytes, step, step)
            buffers.append(b)
            root[r] = b
        for v in _reads(op):
            b = root.get(v)
            if b is not None:
                b.last = max(b.last, step)
    escaping = list(func.outputs) + list(keep_alive)
    for v in escaping:
        b = root.get(v)
        if b is not None:
            b.escapes = True
            b.last = end
    _assign_offsets([b for b in buffers if not b.escapes])
    arena = max((b.offset + b.size for b in buffers if not b.escapes), default=0)
    peak = max((sum(b.size for b in buffers if b.first <= s <= b.last) for s in range(end + 1)), default=0)
    plan = MemoryPlan(buffers, end, peak, arena)
    return plan


def _assign_offsets(buffers) -> None:
    """Greedy: largest first, lowest offset that overlaps no live-range-conflicting buffer."""
    placed: list[Buffer] = []
    for b in sorted(buffers, key=lambda b: (-b.size, b.first)):
        conflicts = sorted((p for p in placed if not (p.last < b.first or b.last < p.first)),
                           key=lambda p: p.offset)
        offset = 0
        for p in conflicts:
            if offset + b.size <= p.offset:
                break
            offset = max(offset, p.offset + p.size)
        b.offset = offset
        placed.append(b)


@dataclass
class PartitionMemory:
    forward: MemoryPlan
    backward: MemoryPlan
    saved_bytes: int          # residuals kept between forward and backward (not counting caller inputs)
    forward_peak: int
    backward_peak: int        # includes the residuals being read
    after_backward: int       # bytes still held after backward (residuals if retain_graph)

    def summary(self) -> dict:
        return dict(forward_peak=self.forward_peak, backward_peak=self.backward_peak,
                    saved_bytes=self.saved_bytes, after_backward=self.after_backward)


def plan_partition(part, *, retain_graph: bool = False) -> PartitionMemory:
    """Memory of forward then backward, with residuals freed after backward unless retained."""
    fwd = plan_function(part.forward)
    bwd = plan_function(part.backward)
    saved = part.saved_bytes
    return PartitionMemory(fwd, bwd, saved, fwd.peak_bytes, saved + bwd.peak_bytes,
                           saved if retain_graph else 0)


def annotate(func: Function) -> MemoryPlan:
    """Record the plan on the function's attributes (what the pass shows in IR text)."""
    plan = plan_function(func)
    func.attrs[ATTR_PEAK] = plan.peak_bytes
    func.attrs[ATTR_ARENA] = plan.arena_bytes
    func.attrs[ATTR_BUFFERS] = [[b.first, b.last, b.offset, b.size] for b in plan.buffers]
    return plan


from .manager import Pass, register_pass  # noqa: E402


@register_pass
class PlanBuffersPass(Pass):
    """Annotate each function with its memory plan (peak, arena size, buffer lifetimes)."""
    name = "plan-buffers"
    summary = "liveness over the schedule and arena offsets: gradc.peak_bytes, gradc.buffers"

    def run(self, func) -> bool:
        before = dict(func.attrs)
        annotate(func)
        return func.attrs != before
