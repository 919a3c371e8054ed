"""Executor: runs one IR function on NumPy arrays with a precomputed step list.

Each top-level op becomes one step: ``gradc.fused`` ops run as native kernels
from the backend (or, with the ``interp`` backend, by interpreting their body),
other table ops run their op-table NumPy reference (matmul goes to the BLAS that
NumPy links). Values live in a flat slot list, so a call does no IR walking.

With a backend that ``uses_arena`` (the CPU's), intermediate values that native steps
write and read live in one arena allocated once per executor, at the offsets that
``plan-buffers`` assigns (``_arena_buffers``): a call touches no fresh memory for them
and two values share bytes when their lifetimes do not overlap.
"""
from __future__ import annotations

import functools
import operator
import threading

import numpy as np

from .ir.core import FUSED, RETURN, YIELD, Function, Operation
from .ir.errors import add_location


def _run_region(op: Operation):
    """A callable that interprets a fused op's body with the op table's references."""
    block = op.regions[0].blocks[0]
    body = [o for o in block.ops if o.name != YIELD]
    yield_op = block.ops[-1]

    def run(*arrays):
        env = dict(zip(block.args, arrays))
        for o in body:
            res = o.opdef.forward(*[env[v] for v in o.operands], **o.attrs)
            res = res if isinstance(res, tuple) else (res,)
            for r, a in zip(o.results, res):
                env[r] = a
        return tuple(np.asarray(env[v]) for v in yield_op.operands)
    return run


# ops whose results a backend can write into a given array, and which never return a view of
# an operand (so an arena buffer they read cannot leak out through their result)
_ARENA_OPS = (FUSED, "gradc.matmul")


def _arena_buffers(func: Function):
    """(arena, {value: array}): the values that live in one arena reused by every call, at
    the offsets of the ``plan-buffers`` memory plan. Only values made and read by native
    steps qualify, and none that the function returns; the others are pooled per step."""
    from .passes.plan_buffers import plan_function
    plan = plan_function(func)
    chosen = []
    for b in plan.buffers:
        v = b.value
        if b.escapes or b.offset < 0 or b.aliases or b.size == 0 or v.owner.name not in _ARENA_OPS:
            continue
        if all(user.name in _ARENA_OPS and user.parent is func.body for user, _ in v.uses):
            chosen.append(b)
    if not chosen:
        return None, {}
    from .codegen.host_buffers import empty_aligned
    arena = empty_aligned(max(b.offset + b.size for b in chosen), np.uint8)   # offsets from a line start
    views = {}
    for b in chosen:
        t = b.value.type
        views[b.value] = arena[b.offset:b.offset + b.size].view(t.dtype.np).reshape(t.shape)
    return arena, views


class Executor:
    def __init__(self, func: Function, backend=None):
        self.func = func
        self.backend = backend
        slots: dict = {}
        for a in func.args:
            slots[a] = len(slots)
        self.n_args = len(func.args)
        steps, locs = [], []
        if backend is not None and hasattr(backend, "precompile"):
            backend.precompile([op for op in func.body.ops if op.name == FUSED])
        self.arena, self.arena_values = _arena_buffers(func) if getattr(backend, "uses_arena", False) else (None, {})
        for op in func.body.ops:
            if op.name == RETURN:
                break
            for r in op.results:
                slots[r] = len(slots)
            fn = self._callable(op)
            steps.append((fn, tuple(slots[v] for v in op.operands), tuple(slots[r] for r in op.results)))
            locs.append(op.loc)
        self.steps = steps
        self._locs = locs       # each step's source line, which its errors name
        # one call at a time: the steps' kernels share argument vectors, and the arena is one
        # set of buffers (calls from several threads take turns)
        self._lock = threading.Lock()
        self.n_slots = len(slots)
        self.out_slots = tuple(slots[v] for v in func.outputs)
        if len(steps) == 1 and steps[0][1] == tuple(range(self.n_args)):
            # one kernel reading the arguments in order (a small graph's fused forward):
            # no slot list per call
            fn, _, outs = steps[0]
            pick = [outs.index(i) if i in outs else None for i in self.out_slots]
            lock = self._lock
            if pick == list(range(len(outs))):
                def run_one(arrays):
                    with lock:
                        try:
                            return fn(*arrays)             # a tuple of the outputs
                        except Exception as e:
                            add_location(e, locs[0])
                            raise
                self.run = run_one
            elif len(pick) > 1 and None not in pick:       # the kernel's outputs, reordered
                reorder = operator.itemgetter(*pick)

                def run_one_reordered(arrays):
                    with lock:
                        try:
                            return reorder(fn(*arrays))
                        except Exception as e:
                            add_location(e, locs[0])
                            raise
                self.run = run_one_reordered

    def _callable(self, op: Operation):
        fixed = [self.arena_values.get(r) for r in op.results] if self.arena_values else None
        if op.name == FUSED:
            if self.backend is not None:
                return self.backend.compile_fused(op, fixed) if fixed else self.backend.compile_fused(op)
            return _run_region(op)
        d = op.opdef
        if d is None:
            raise NotImplementedError(f"executor: no implementation for '{op.name}'")
        if self.backend is not None and hasattr(self.backend, "compile_op"):
            native = self.backend.compile_op(op, fixed) if fixed else self.backend.compile_op(op)
            if native is not None:        # the backend's own arrays (NumPy, or device arrays)
                if len(op.results) == 1:
                    return lambda *xs, _f=native: (_f(*xs),)
                return native
        # NumPy references may return NumPy scalars (np.sum of everything): steps yield arrays
        fn = functools.partial(d.forward, **op.attrs) if op.attrs else d.forward
        if len(op.results) == 1:
            return lambda *xs, _f=fn: (np.asarray(_f(*xs)),)
        return lambda *xs, _f=fn: tuple(np.asarray(r) for r in _f(*xs))

    def run(self, arrays):
        """The function's outputs (a sequence of arrays) for its arguments ``arrays``."""
        env = list(arrays) + [None] * (self.n_slots - self.n_args)
        with self._lock:
            for n, (fn, ins, outs) in enumerate(self.steps):
                try:
                    res = fn(*[env[i] for i in ins])
                except Exception as e:    # an index out of bounds, an integer division by zero
                    add_location(e, self._locs[n])
                    raise
                for k, i in enumerate(outs):
                    env[i] = res[k]
        return [env[i] for i in self.out_slots]
