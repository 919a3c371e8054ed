"""Software prefetch of the rows a CPU row kernel works on next.

A row kernel (reductions over its inner axes) makes several passes over each row, the first
from memory and the others from L1.  While it computes, in its arithmetic-heavy pass, nothing
asks memory for the next rows: a 4 KiB row is a page, where the hardware prefetchers stop.
So that pass prefetches, one cache line per vector of the vectorized loop, the same elements
``PREFETCH_ROWS_AHEAD`` outer points ahead of every buffer the kernel reads or writes along its
rows (``prefetchw`` for the outputs it stores normally; its non-temporal outputs skip the
cache).  Memory then streams during the arithmetic instead of between it.

How: ``llvm.prefetch`` in a loop keeps LLVM's loop vectorizer from vectorizing it, so the
loop body calls ``gradc.prefetch_<read|write>_b<bytes>`` instead, a function that names a
vector variant (``vector-function-abi-variant``, as ``llvm_math``'s sin/cos do) whose pointer
is ``linear``: the vectorizer calls the variant with lane 0's address, once per vector, and
``llvm_cpu.optimize`` inlines it after vectorization: one ``prefetcht0`` per 16 f32 (or 8 f64)
elements, one cache line, on AVX-512.  The scalar function is only declared while the
pipeline runs (a definition would be inlined before the vectorizer, or its calls dropped as
dead), and defined and inlined afterwards (``scalar_definitions``): a loop that stays
scalar prefetches once per element, without a call.

Measured on the 2-core AMD EPYC guest (both cores, in-process interleaved A/B, medians):
W3's softmax cross-entropy kernel (f32 [4096, 1024], its exp pass prefetching logits and
gradient rows) 0.54-0.57 -> 0.47 ms; W4's layer-norm kernel (its dx pass prefetching x;
dx is streamed) 0.46-0.47 -> 0.43-0.44 ms.  Prefetching in W4's other passes gained less
(0.45-0.46).  LLVM compile time of such a kernel: +8 ms (W3's 23 -> 31 ms).
"""
from __future__ import annotations

import math
import re

from llvmlite import ir

from .kernel_ir import Kernel, Load, Store

# Outer points ahead; 0 turns prefetching off.  A hand-written C version of W3's kernel
# (OpenMP, both cores): 0.51-0.53 ms without, 0.44-0.45 ms prefetching 2 or 3 rows ahead in
# its exp pass, 0.48 ms 8 rows ahead; prefetching in the max pass (0.84 ms) or in the store
# pass (0.53), or a burst of all of a row's prefetches before a pass (0.56-0.73), did not help.
PREFETCH_ROWS_AHEAD = 2
# Only rows (of the buffers prefetched, together) that fit the L1 a few times over: a longer
# row streams through the hardware prefetchers within itself.
PREFETCH_MAX_ROW_BYTES = 16 * 1024

PTR = ir.PointerType()
VOID = ir.VoidType()
I32 = ir.IntType(32)
I64 = ir.IntType(64)


class RowPrefetch:
    """What a kernel prefetches: in the loop of pass ``pass_index`` of its ``pass_plan``, each
    ``(buffer, index, write)`` target's element ``distance`` steps of ``axis`` ahead."""

    def __init__(self, pass_index: int, targets: list, axis: int, distance: int):
        self.pass_index, self.targets, self.axis, self.distance = pass_index, targets, axis, distance

    def wrap(self, em, body):
        """``body`` (a loop body over the reduced axes) followed by this plan's prefetches: of
        the elements at outer index ``i + distance`` (the last one near the end).  Each address
        is the loop's index added to a row pointer that does not vary in the loop: the
        vectorizer then passes its first lane's value, where an index sum it would widen (and
        take lane 0 of: 11 more instructions per 64 elements in W3's kernel)."""
        from .llvm_common import ALIGN, MEM          # llvm_common imports this module
        b = em.ctx.b
        module = em.ctx.module
        last = ir.Constant(I64, em.k.space[self.axis] - 1)
        inner = em.k.reduce_axes[-1]

        def wrapped(ienv):
            body(ienv)
            ahead = b.add(ienv.idx[self.axis], ir.Constant(I64, self.distance), flags=("nsw",))
            ahead = b.select(b.icmp_signed("<", ahead, last), ahead, last)
            row_env = ienv.child({self.axis: ahead, inner: ir.Constant(I64, 0)})
            i = ienv.idx[inner]
            for buf, index, write in self.targets:
                row = em.address(buf, index, row_env)
                step = index.strides[inner]
                off = i if step == 1 else b.mul(i, ir.Constant(I64, step), flags=("nsw",))
                ptr = b.gep(row, [off], inbounds=True, source_etype=MEM[buf.dtype])
                b.call(prefetch_function(module, write, ALIGN[buf.dtype]), [ptr])
        return wrapped


def prefetch_plan(kernel: Kernel, passes: list, kept: dict, streaming=frozenset()):
    """The ``RowPrefetch`` for a row kernel (``passes``: its ``pass_plan``; ``kept``: its
    ``scratch_plan``; ``streaming``: the outputs it stores non-temporally), or None: no outer
    axis, nothing that varies along both the outer and the reduced axes, or rows too long."""
    from .llvm_common import ALIGN
    if PREFETCH_ROWS_AHEAD <= 0 or not kernel.outer_axes or not kernel.reduce_axes:
        return None
    axis = kernel.outer_axes[-1]
    red = set(kernel.reduce_axes)
    targets, seen = [], set()
    for s in kernel.body:
        if not isinstance(s, (Load, Store)) or s.buffer.name in seen or s.buffer.name in streaming:
            continue
        if not s.index.strides[axis] or not any(s.index.strides[a] for a in red):
            continue
        seen.add(s.buffer.name)
        targets.append((s.buffer, s.index, isinstance(s, Store)))
    row = math.prod(kernel.space[a] for a in red)
    if not targets or sum(row * ALIGN[buf.dtype] for buf, _, _ in targets) > PREFETCH_MAX_ROW_BYTES:
        return None
    return RowPrefetch(heaviest_pass(kernel, passes, kept), targets, axis, PREFETCH_ROWS_AHEAD)


def heaviest_pass(kernel: Kernel, passes: list, kept: dict) -> int:
    """Index in ``passes`` of the pass with the most arithmetic per element (``RowWork``; the
    store pass reads back the ``kept`` values), the first of equals."""
    from .llvm_common import RowWork, stored_values
    work = RowWork(kernel)
    values = stored_values(kernel)
    costs = []
    for j, (_, looped, stores) in enumerate(passes):
        roots = [r.operand for r in looped] + [values[id(s)] for s in stores]
        known = frozenset(kept) if j == len(passes) - 1 else frozenset()
        costs.append(work.cost(work.cone(roots, known)) if roots else -1)
    return costs.index(max(costs))


def prefetch_function(module: ir.Module, write: bool, item_bytes: int) -> ir.Function:
    """The module's ``gradc.prefetch_<read|write>_b<item_bytes>(ptr)`` (the pointer to an element
    of ``item_bytes`` bytes), declared, and its vector variant: the vectorizer passes it the
    pointer of lane 0 (a ``linear`` parameter, step ``item_bytes``)."""
    kind = "write" if write else "read"
    name = f"gradc.prefetch_{kind}_b{item_bytes}"
    fn = module.globals.get(name)
    if fn is not None:
        return fn
    from .llvm_common import intrinsic        # llvm_common imports this module
    from .llvm_cpu import vector_bits
    from .llvm_math import _Attributes
    intr = intrinsic(module, "llvm.prefetch.p0", VOID, [PTR, I32, I32, I32])
    variant = ir.Function(module, ir.FunctionType(VOID, [PTR]), f"{name}.ptr.v")   # external until vectorized
    bb = ir.IRBuilder(variant.append_basic_block("entry"))
    bb.call(intr, [variant.args[0], ir.Constant(I32, int(write)), ir.Constant(I32, 3), ir.Constant(I32, 1)])
    bb.ret_void()
    variant.attributes.add("alwaysinline")
    variant.attributes.add("nounwind")
    fn = ir.Function(module, ir.FunctionType(VOID, [PTR]), name)
    widths, lanes = [], vector_bits() // 8 // item_bytes
    while lanes >= 2:
        widths.append(f"_ZGV_LLVM_N{lanes}l{item_bytes}_{name}({variant.name})")
        lanes //= 2
    # A declaration until the pipeline ran (``scalar_definitions``): a definition's calls would
    # be inlined (a prefetch in the loop: not vectorized) or, with the ``willreturn`` that
    # LLVM infers for it, dropped as dead.  readnone: the vectorizer orders no memory access
    # around it (a prefetch changes no value).
    fn.attributes = _Attributes(["nounwind", "readnone", f'"vector-function-abi-variant"="{",".join(widths)}"'])
    return fn


_SCALAR = re.compile(r"gradc\.prefetch_(read|write)_b\d+")


def scalar_definitions(mod) -> str:
    """LLVM IR text defining (always inlined) the scalar prefetch functions that the optimized
    module ``mod`` (an llvmlite binding module) still declares: called where a loop stayed
    scalar; empty when there are none."""
    names = [fn.name for fn in mod.functions if fn.is_declaration and _SCALAR.fullmatch(fn.name)]
    if not names:
        return ""
    lines = ["declare void @llvm.prefetch.p0(ptr, i32, i32, i32)"]
    for name in names:
        write = int(_SCALAR.fullmatch(name).group(1) == "write")
        lines.append(f'define void @"{name}"(ptr %p) alwaysinline nounwind {{\n'
                     f"  call void @llvm.prefetch.p0(ptr %p, i32 {write}, i32 3, i32 1)\n  ret void\n}}")
    return "\n".join(lines) + "\n"
