"""CPU backend: kernel IR -> LLVM IR -> optimized machine code for the host.

Every kernel becomes ``void @name(ptr %args, i64 %start, i64 %end)``: ``args`` is an array of
buffer pointers in ``kernel.params`` order, shapes are baked in as constants, and the
function runs the outermost outer (non-reduced) axis over ``[start, end)`` so the runtime
can split it across threads.  Loops come from the kernel's axes after ``coalesce``; the
body is the shared lowering in ``llvm_common``.

Optimization: the new pass manager at speed level 3 with loop and SLP vectorization (as
numba does), for the host CPU name and features.  ``llvm.initialize()`` is never called
(it raises in llvmlite 0.50).

Row-reduction loops (what makes them fast; measured on the 2-core AVX-512 host, f32
[4096, 1024], reduce axis 1, medians of 7x20 calls, noisy shared machine):

* f32 sums in blocks of ``SUM_BLOCK`` (1024) elements summed in f32 (16-lane vectors x 4
  interleaved partial sums), each block's sum added to an f64 total.  Before, every element
  was widened to f64: 8-lane vectors for the whole loop body, exp included.  Accuracy: 4M x
  0.1f sums to within 1 ulp (sequential f32: 4% off); random data within 2 eps x sum|x|.
* loads that do not vary over a loop's axis are emitted before the loop (``preload``): LLVM
  cannot hoist them past the loop's stores (the buffers may alias as far as it knows), so a
  per-row i64 label load stayed in the store loop, which then vectorized at i64 width
  (8 lanes) behind runtime alias checks.
* ``x / c`` with ``c`` invariant in the innermost loop is ``x * (1/c)`` (``BodyEmitter.loop_special``).

    kernel                       before    after   (python /tmp/t_k.py-style KernelBuilder kernels)
    sum(x)                       0.37 ms   0.36-0.40 ms
    max(x)                       0.39-0.41 0.37-0.40
    sum(exp(x))                  1.9-2.2   0.91-1.01
    max; sum(exp(x - max))       2.3-2.6   1.39-1.41
    xent fwd (max; sum exp, where-masked sum)   2.6-3.0   1.7-2.0
    exp elementwise (unchanged)  0.96-1.40 1.38

``bench/run_cpu.py --repeat 10 --only W1,W3,W4 --no-torch-compile`` (gradc compiled, ms;
three runs each, alternating): W1 1.03/1.03/0.92 -> 1.19/0.96/1.06 (unchanged, noise);
W3 6.28/8.13/6.60 -> 3.67/3.27/2.75; W4 7.32/7.62/6.66 -> 5.86/5.32/4.24.

Tried, no help: comparing ``index == label`` as i32 (InstCombine widens it back to i64).
Non-temporal (``!nontemporal``) stores for outputs of 8 MiB or more: the loop vectorizer does
not widen them without a known 64-byte alignment, so the loops became scalar (W3 3 -> 19 ms).

Column reductions (``emit_lanes``) run LANES columns at once with f32 block sums, and a kernel
reducing its leading axis is split into slices over both cores (``split_reduce.py``): W4's
dgamma/dbeta kernel 2.0 ms -> 0.9 ms.  Softmax-like row kernels keep ``exp`` in the output
between passes (``llvm_common.scratch_plan``): W3's kernel 3.8-4.2 ms -> 2.3-2.8 ms.
Inputs in memory that numpy got from the heap (``randn().astype(f32)``) ran the W3 kernel
2x slower than a ``.copy()`` of the same data (not alignment: 4K-offset sweeps were flat);
benchmark with fresh arrays.

The row kernels are bound by vector arithmetic (about one 16-lane op per cycle per core
here; a chain of independent adds and multiplies in L1 runs at 2.1-2.8 G vector ops/s), so
what counts is ops per element.  Fifth session, single thread, 64 rows in L2, in-process
A/B (ns per element): W4's kernel 1.03-1.05 -> 0.87 with its column sums in the pass that
computes their operands and the dx pass reading dL/dxhat kept by that pass
(``llvm_common.store_stages``/``scratch_plan``), plus fma contraction; W3's 1.0-1.1 ->
0.83 with the picked logit read at its label and the one-hot gradient added after the
store loop (``llvm_common.gathered``/``one_hot_addend``) and an exp that passes NaN through
its clamps (softmax rows: 79 -> 71 us f32, 155 -> 136 us f64).

Software prefetch of the rows two outer points ahead (a 4 KiB row is one page, where the
hardware prefetchers stop), in the arithmetic-heavy pass only, one prefetch per vector
(``row_prefetch``): W3's kernel 0.54-0.57 -> 0.47 ms, W4's 0.46-0.47 -> 0.43-0.44 (both
cores, in-process A/B, sixteenth session).  An earlier try prefetched in every pass and
lost 25% on W3.
"""
from __future__ import annotations

import functools
import glob
import os
import re
import threading
from collections import ChainMap
from dataclasses import dataclass

import llvmlite.binding as llvm
from llvmlite import ir

from . import llvm_math
from .kernel_ir import Kernel, Store, coalesce, np_dtype
from .llvm_common import (offset_index, reduced_loops, LL, BodyEmitter, Env, LowerCtx, acc_dtype, block_sum, combine, emit_point,
                          one_hot_addend, pass_plan, scratch_plan, store_stages, stored_values, for_range,
                          identity, reduction_phases, split_stores, store_fence, streaming_stores, RowWork, I64)
from . import row_prefetch
from .row_prefetch import prefetch_plan

PTR = ir.PointerType()
_init_lock = threading.Lock()
_initialized = False
_tm = None


def init_native():
    global _initialized
    with _init_lock:
        if not _initialized:
            llvm.initialize_native_target()
            llvm.initialize_native_asmprinter()
            _initialized = True


def new_target_machine():
    """A fresh host target machine: host triple, CPU name and features, opt level 3.

    An MCJIT engine takes ownership of (and frees) the machine it is created with, so every
    engine gets its own; ``host_target_machine`` is the shared one for optimizing/emitting."""
    init_native()
    target = llvm.Target.from_triple(llvm.get_process_triple())
    return target.create_target_machine(cpu=llvm.get_host_cpu_name(), features=host_features(),
                                        opt=3, reloc="default", codemodel="jitdefault")


def host_target_machine():
    """The shared host target machine (never handed to an engine)."""
    global _tm
    if _tm is None:
        _tm = new_target_machine()
    return _tm


@functools.cache
def host_features() -> str:
    """Host CPU features; with AVX-512, also let the vectorizer use 512-bit vectors (Intel CPUs
    are tuned to prefer 256-bit; zmm measured 1.6x faster for the exp kernel here)."""
    init_native()
    feats = llvm.get_host_cpu_features()
    flat = feats.flatten()
    if feats.get("avx512f"):
        flat += ",-prefer-256-bit"
    return flat


@functools.cache
def host_has(feature: str) -> bool:
    """Whether the host CPU has ``feature`` (LLVM's name: "avx512vl", "fma", ...)."""
    init_native()
    return bool(llvm.get_host_cpu_features().get(feature))


@functools.cache
def vector_bits() -> int:
    """The widest vectors the loop vectorizer uses here: 512 bits with AVX-512 (see
    ``host_features``), 256 with AVX, else 128."""
    init_native()
    feats = llvm.get_host_cpu_features()
    return 512 if feats.get("avx512f") else 256 if feats.get("avx") else 128


def target_signature() -> str:
    """Triple + CPU + features: part of every cache key."""
    return f"{llvm.get_process_triple()}|{llvm.get_host_cpu_name()}|{host_features()}"


def symbol(name: str) -> str:
    s = re.sub(r"[^A-Za-z0-9_]", "_", name)
    return s if s and not s[0].isdigit() else "k_" + s


SPEED_LEVEL = 3     # LLVM's pipeline level for every CPU kernel (issue 5)


_llc: list = []


def last_level_cache_bytes() -> int:
    """The host's largest data cache in bytes (Linux sysfs, else ``sysconf``; ``GRADC_LLC_BYTES``
    overrides), 0 when unknown."""
    if not _llc:
        size = int(os.environ.get("GRADC_LLC_BYTES", "0") or 0)
        if not size:
            units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
            for d in glob.glob("/sys/devices/system/cpu/cpu0/cache/index*"):
                try:
                    with open(os.path.join(d, "type")) as f:
                        kind = f.read().strip()
                    with open(os.path.join(d, "size")) as f:
                        text = f.read().strip()
                except OSError:
                    continue
                if kind in ("Data", "Unified") and text:
                    n = int(text[:-1]) * units[text[-1]] if text[-1] in units else int(text)
                    size = max(size, n)
        if not size:
            try:
                size = max(0, os.sysconf("SC_LEVEL3_CACHE_SIZE"))
            except (ValueError, OSError, AttributeError):
                size = 0
        _llc.append(size)
    return _llc[0]


def fits_in_last_level_cache(k: Kernel) -> bool:
    """Whether all of a kernel's buffers together take at most half of the last-level cache:
    then its outputs are stored normally, not streamed (``llvm_common.streaming_stores``),
    since a later kernel or call reads them from the cache.  W4's step (32 MiB of x and dx):
    1.08 ms with dx streamed, 0.93-0.98 without, on an Intel Xeon guest with a 480 MiB L3;
    streaming won on an AMD EPYC guest with a 32 MiB L3 (0.97-1.12 against 1.32-1.71)."""
    llc = last_level_cache_bytes()
    total = sum(p.numel * np_dtype(p.dtype).itemsize for p in k.params)
    return bool(llc) and total <= llc // 2


@dataclass
class CpuKernelInfo:
    """What the runtime needs besides the machine code."""
    name: str            # symbol
    params: tuple        # kernel.params (args array order)
    parallel_extent: int  # the [start, end) range the function accepts
    work: int            # iteration-space points (threading heuristic)
    parallel_ok: bool = True   # False when splitting [start, end) measured slower
    speed_level: int = SPEED_LEVEL   # LLVM pipeline level
    lane_loops: bool = False   # column reductions as lane loops (LLVM takes longest on these)


def lower_kernel(kernel: Kernel, module: ir.Module | None = None, math_mode: str = "ir"):
    """Add ``kernel`` to ``module`` (a new one by default); returns (module, CpuKernelInfo)."""
    k = coalesce(kernel)
    if module is None:
        module = ir.Module(name=symbol(kernel.name))
        init_native()
        module.triple = llvm.get_process_triple()
    name = symbol(kernel.name)
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [PTR, I64, I64]), name)
    fn.attributes.add("nounwind")
    args, start, end = fn.args
    entry = fn.append_basic_block("entry")
    ab = ir.IRBuilder(entry)
    b = ir.IRBuilder(fn.append_basic_block("body"))
    ptrs = {}
    for i, p in enumerate(k.params):
        slot = b.gep(args, [ir.Constant(I64, i)], inbounds=True, source_etype=PTR)
        ptrs[p.name] = b.load(slot, typ=PTR, align=8, name=f"p_{symbol(p.name)}")
    ctx = LowerCtx(b, "cpu", math_mode, alloca_builder=ab)
    em = BodyEmitter(ctx, k, ptrs)
    outer, red = k.outer_axes, k.reduce_axes

    loop_reduced = reduced_loops(b, k.space, red)

    def blocked_loops(block_size):
        def loop_blocked(env, body, begin, end, depth=0):
            """``loop_reduced`` with the innermost reduced axis in blocks of ``block_size``: a
            constant-trip-count inner loop per block, then a remainder block."""
            if not red:
                begin()
                body(env.child())
                end()
                return
            ax = red[depth]
            if depth < len(red) - 1:
                for_range(b, 0, k.space[ax], lambda i: loop_blocked(env.child({ax: i}), body, begin, end,
                                                                     depth + 1), name=f"r{ax}")
                return
            n = k.space[ax]

            def block(base, size):
                begin()
                if base is None:
                    for_range(b, 0, size, lambda i: body(env.child({ax: i})), name=f"r{ax}")
                else:
                    for_range(b, 0, size, lambda i: body(env.child({ax: offset_index(b, base, i)})),
                              name=f"r{ax}")
                end()
            nfull, rest = divmod(n, block_size)
            if n <= block_size:
                block(None, n)
                return
            for_range(b, 0, nfull, lambda jb: block(b.mul(jb, ir.Constant(I64, block_size), flags=("nsw",)),
                                                    block_size), name=f"r{ax}b")
            if rest:
                block(ir.Constant(I64, nfull * block_size), rest)
        return loop_blocked if BLOCKED_SUMS else None
    loop_blocked = blocked_loops(SUM_BLOCK)

    # Reductions whose innermost axis is an outer axis (column sums): run LANES neighbouring
    # outer points together so the inner loop is unit-stride over them.
    lanes_axis = lanes_axis_of(k)
    streaming, prefetch = memory_traffic_plan(k)
    # accumulations: their stored elements are set to 0 before the loop over their first axis
    acc_stores = {ax: [] for ax in outer}
    for s in k.body:
        r = em.accumulating.get(s.value.id) if isinstance(s, Store) else None
        if r is not None:
            acc_stores[min(r.axes)].append(s)

    def outer_loops(env, depth):
        if depth == len(outer):
            if k.reductions:
                env.inner = None      # the loops that matter are emit_point's own
            emit_point(em, env, loop_reduced, loop_blocked=loop_blocked, preload=True, scratch=True,
                       fixups=True, streaming=streaming, prefetch=prefetch)
            return
        ax = outer[depth]
        for s in acc_stores[ax]:
            em.init_accumulation(s, env)
        lo, hi = (start, end) if depth == 0 else (0, k.space[ax])
        if ax == lanes_axis:
            hi = hi if isinstance(hi, ir.Value) else ir.Constant(I64, hi)

            def block(j0):
                rem = b.sub(hi, j0)
                jn = b.select(b.icmp_signed("<", rem, ir.Constant(I64, LANES)), rem, ir.Constant(I64, LANES))
                emit_lanes(em, Env(dict(env.idx), ChainMap(), ax), ax, j0, jn, loop_reduced,
                           blocked_loops(LANE_SUM_BLOCK))
            for_range(b, lo, hi, block, step=LANES, name=f"o{ax}b")
            return
        if depth == len(outer) - 1 and not k.reductions:
            em.preload(env, {ax})     # loads invariant in the innermost loop: before it
        for_range(b, lo, hi, lambda i: outer_loops(env.child({ax: i}), depth + 1), name=f"o{ax}")

    if any(k.space[a] == 0 for a in outer):
        pass  # nothing to do
    elif outer:
        outer_loops(Env({}, ChainMap()), 0)
    else:
        then = fn.append_basic_block("once")
        done = fn.append_basic_block("done")
        b.cbranch(b.icmp_signed("<", start, end), then, done)
        b.position_at_end(then)
        outer_loops(Env({}, ChainMap()), 0)
        b.branch(done)
        b.position_at_end(done)
    if streaming:
        store_fence(module, b)
    b.ret_void()
    ab.branch(fn.blocks[1])
    extent = k.space[outer[0]] if outer else 1
    # Splitting the lanes axis halves every row each thread streams: 1.6x slower than one
    # thread for a 4096x1024 column sum here, so those kernels stay on one thread.
    par_ok = not (lanes_axis is not None and len(outer) == 1)
    # an accumulation over the [start, end) axis: calls on parts of it would share its elements
    par_ok = par_ok and not (outer and acc_stores[outer[0]])
    return module, CpuKernelInfo(name, tuple(kernel.params), extent, max(kernel.numel, 1), par_ok,
                                 lane_loops=lanes_axis is not None)


def memory_traffic_plan(k: Kernel):
    """(outputs stored non-temporally, ``RowPrefetch`` or None) of a coalesced row kernel: both
    only on x86 and where the kernel's buffers do not fit in half the last-level cache."""
    x86 = llvm.get_process_triple().startswith(("x86_64", "i686", "i386"))
    if not (k.reductions and x86) or fits_in_last_level_cache(k):
        return frozenset(), None
    passes = pass_plan(k)
    kept = scratch_plan(k, passes)
    streaming = streaming_stores(k, kept, passes)
    return streaming, prefetch_plan(k, passes, kept, streaming)


def lanes_axis_of(k: Kernel):
    """The outer axis whose points ``emit_lanes`` runs together (column reductions), or None."""
    outer = k.outer_axes
    return outer[-1] if (k.reductions and outer and outer[-1] == len(k.space) - 1 and not k.accumulations
                         and k.space[outer[-1]] >= 8 and k.numel >= LANES_MIN_POINTS) else None


def describe_schedule(kernel: Kernel) -> list:
    """The CPU loop schedule of a kernel, as lines of text (``gradc dump-ir --stage kernels``):
    the passes over the reduced axes per outer point, what each reduces and stores, the values
    kept between passes, one-hot sums read at their label and addends added after a pass."""
    k = coalesce(kernel)
    if not k.reduce_axes or not k.reductions:
        return ["cpu: one loop nest over the space" + (", accumulating" if k.accumulations else "")]
    if lanes_axis_of(k) is not None:
        return [f"cpu: column reductions, {LANES} neighbouring outer points per pass over the reduced axes"]
    passes = pass_plan(k)
    plan = scratch_plan(k, passes)
    acc = {r.result.id for r in k.accumulations}
    streaming, prefetch = memory_traffic_plan(k)
    n_pass = sum(1 for _, looped, stores in passes if looped or stores)
    lines = [f"cpu: {n_pass} pass{'es' if n_pass != 1 else ''} over the reduced axes per outer point"]
    kept: dict = {}
    number = 0
    for j, (picked, looped, stores) in enumerate(passes):
        if picked:
            lines.append("  read at the label: " + ", ".join(f"%{r.result.id}" for r, _ in picked)
                         + " (one-hot sums)")
        if looped or stores:
            number += 1
            text = _pass_text(looped, stores, acc, plan, kept, k, streaming)
            if prefetch is not None and prefetch.pass_index == j:
                text += (f"; prefetch the rows {prefetch.distance} points ahead of "
                         + ", ".join(f"%{buf.name}" for buf, _, _ in prefetch.targets))
            lines.append(f"  pass {number}: " + text)
    outer, _ = split_stores(k)
    if outer:
        lines.append("  per point: store " + " ".join(f"%{s.buffer.name}" for s in outer))
    return lines


def _pass_text(reds, stores, acc, plan, kept, k, streaming=frozenset()) -> str:
    parts = []
    if kept:
        parts.append("read back " + ", ".join(f"%{v} from %{st.buffer.name}" for v, st in kept.items()))
    if reds:
        parts.append("reduce " + ", ".join(f"%{r.result.id}" for r in reds))
    if stores:
        names = []
        for s in stores:
            extra = " (accumulated)" if s.value.id in acc else ""
            if one_hot_addend(k, s) is not None:
                extra = " (its one-hot addend added at the label after the pass)"
            if s.buffer.name in streaming:
                extra = " (non-temporal)"
            names.append(f"%{s.buffer.name}{extra}")
        parts.append("store " + ", ".join(names))
    values = stored_values(k)
    cone = RowWork(k).cone([r.operand for r in reds] + [values[id(s)] for s in stores])
    new = {v: st for v, st in plan.items() if v not in kept and v in cone}
    if new:
        parts.append("keep " + ", ".join(f"%{v} in %{st.buffer.name}" for v, st in new.items()))
        kept.update(new)
    return "; ".join(parts)


LANES = 1024
# smaller column reductions keep one strided loop per point: the lane loops are several times
# more code for LLVM to optimise (compile time), and such kernels take microseconds either way
LANES_MIN_POINTS = 1 << 15
# f32 sums: elements per block summed in f32 (the vectorizer keeps VF x interleave partial
# sums of it) before the block's total is added to the f64 accumulator.  1024 rather than
# 512: W3's and W4's row kernels ran 3-5% faster (one block epilogue per 1024-wide row).
SUM_BLOCK = 1024
# column sums: rows per block that each lane sums in f32 before adding to its f64 total
LANE_SUM_BLOCK = 64
BLOCKED_SUMS = True


def emit_lanes(em: BodyEmitter, env: Env, ax: int, j0, jn, loop_reduced, loop_blocked=None):
    """``emit_point`` for the outer points ``j0 <= i_ax < j0 + jn`` at once: accumulators are
    LANES-element stack arrays and every loop over the reduced axes has an inner unit-stride
    loop over the lanes (vectorizable), instead of one strided reduction per point.  With
    ``loop_blocked``, f32 sums accumulate each block of rows in f32 lane arrays (full-width
    vectors, no conversions) and add them to the f64 lane totals after the block."""
    ctx, k = em.ctx, em.k
    b = ctx.b
    done: dict = {}     # reduce result id -> (array, acc dtype)

    def lane_loop(env2, body):
        for_range(b, 0, jn, lambda j: body(j, env2.child({ax: offset_index(b, j0, j)})), name="lane")

    def bind(jenv, j):
        for rid, (arr, adt, rdt) in done.items():
            v = b.load(b.gep(arr, [j]), typ=LL[adt])
            jenv.cache[rid] = b.fptrunc(v, LL[rdt]) if adt != rdt else v

    phases, _ = reduction_phases(k)
    stages = store_stages(k)
    for j, group in enumerate(phases):
        slots = []
        for r in group:
            adt = acc_dtype(r.kind, r.result.dtype)
            local = None
            if loop_blocked is not None and block_sum(r.kind, r.result.dtype):
                local = ctx.alloca(LL[r.result.dtype], LANES)
            slots.append((r, adt, ctx.alloca(LL[adt], LANES), local))

        def init(j, jenv, slots=slots):
            for r, adt, arr, local in slots:
                b.store(identity(r.kind, adt), b.gep(arr, [j]))
        lane_loop(env, init)

        def accumulate(renv, slots=slots, stores=stages[j]):
            def lane(j, jenv):
                bind(jenv, j)
                for s in stores:
                    em.store(s, jenv)
                for r, adt, arr, local in slots:
                    x = em.value(r.operand, jenv)
                    if local is not None:
                        dt = r.result.dtype
                        p = b.gep(local, [j])
                        b.store(combine(ctx, r.kind, dt, b.load(p, typ=LL[dt]), x), p)
                        continue
                    if adt != r.result.dtype:
                        x = b.fpext(x, LL[adt])
                    p = b.gep(arr, [j])
                    b.store(combine(ctx, r.kind, adt, b.load(p, typ=LL[adt]), x), p)
            lane_loop(renv, lane)
        blocked = [sl for sl in slots if sl[3] is not None]
        if blocked:
            def begin(blocked=blocked):
                def lane(j, jenv):
                    for r, adt, arr, local in blocked:
                        b.store(identity(r.kind, r.result.dtype), b.gep(local, [j]))
                lane_loop(env, lane)

            def end(blocked=blocked):
                def lane(j, jenv):
                    for r, adt, arr, local in blocked:
                        part = b.load(b.gep(local, [j]), typ=LL[r.result.dtype])
                        if adt != r.result.dtype:
                            part = b.fpext(part, LL[adt])
                        p = b.gep(arr, [j])
                        b.store(combine(ctx, r.kind, adt, b.load(p, typ=LL[adt]), part), p)
                lane_loop(env, lane)
            loop_blocked(env, accumulate, begin, end)
        else:
            loop_reduced(env, accumulate)
        for r, adt, arr, local in slots:
            done[r.result.id] = (arr, adt, r.result.dtype)
    outer, _ = split_stores(k)
    inner = stages[-1]

    def stores(which):
        def lane(j, jenv):
            bind(jenv, j)
            for s in which:
                em.store(s, jenv)
        return lane
    if outer:
        lane_loop(env, stores(outer))
    if inner:
        loop_reduced(env, lambda renv: lane_loop(renv, stores(inner)))


# The vectorizer's interleaving (several vector accumulators per loop) stays on; LLVM's loop
# unroller is off.  Measured here with `bench/run_cpu.py --passes 3`, cold cache: with the
# unroller W3's kernel compiled to a 27 KiB object in 113 ms (5 KiB in 51 ms without), W3's
# first call took 0.21-0.25 s (0.09-0.12 s without) and W4's 0.15-0.24 s (0.10-0.14 s);
# the kernels ran no faster with it (W3 2.1-2.6 ms against 1.8-1.9, W4 2.3-3.6 against
# 2.6-2.9: the noise of this machine).  Without the unroller, speed level 3 costs no more
# compile time than level 2 on the column-sum kernels, so every kernel gets level 3.
LOOP_UNROLLING = False
LOOP_INTERLEAVING = True


def pipeline_signature() -> str:
    """The optimisation flags that change the emitted code (part of the disk cache key)."""
    return f"unroll={int(LOOP_UNROLLING)},interleave={int(LOOP_INTERLEAVING)}"


def optimize(mod: llvm.ModuleRef, tm=None, speed_level: int = 3) -> llvm.ModuleRef:
    """Run the speed-level-3 pipeline with loop + SLP vectorization for the host target
    (``LOOP_UNROLLING`` says why the unroller is off)."""
    tm = tm or host_target_machine()
    pto = llvm.create_pipeline_tuning_options(speed_level=speed_level)
    pto.loop_vectorization = True
    pto.slp_vectorization = True
    pto.loop_unrolling = LOOP_UNROLLING
    pto.loop_interleaving = LOOP_INTERLEAVING
    pb = llvm.create_pass_builder(tm, pto)
    pm = pb.getModulePassManager()
    pm.run(mod, pb)
    _inline_vector_variants(mod, pb)
    return mod


def _inline_vector_variants(mod: llvm.ModuleRef, pb) -> None:
    """Inlines the vector variants of ``llvm_math``'s sin/cos/tan and ``row_prefetch``'s
    prefetches, which the loop vectorizer calls (after the pipeline's inliner ran), into the
    vectorized loops, and the scalar prefetches (declared until now) where a loop stayed
    scalar; then drops them (external until now, so that the pipeline kept them)."""
    variants = [fn for fn in mod.functions if llvm_math.VECTOR_VARIANT.fullmatch(fn.name)]
    if not variants:
        return
    for late in (row_prefetch.scalar_definitions(mod), llvm_math.scalar_definitions(mod)):
        if late:        # declared while the pipeline ran; defined (always inlined) now
            names = {fn.name for fn in mod.functions if fn.is_declaration}
            defs = llvm.parse_assembly(late)
            defs.triple, defs.data_layout = mod.triple, mod.data_layout
            mod.link_in(defs)
            variants += [fn for fn in mod.functions if fn.name in names and not fn.is_declaration]
    prefetching = any(fn.name.startswith("gradc.prefetch_") for fn in variants)
    pm = llvm.create_new_module_pass_manager()
    pm.add_always_inliner_pass()
    pm.add_instruction_combine_pass()
    if prefetching:     # the prefetches' lane-0 addresses: a widened index, extracted, becomes the scalar one
        pm.add_new_gvn_pass()
        pm.add_instruction_combine_pass()
    pm.add_simplify_cfg_pass()
    pm.run(mod, pb)
    for fn in variants:
        fn.linkage = llvm.Linkage.internal
    pm = llvm.create_new_module_pass_manager()
    pm.add_global_dead_code_eliminate_pass()
    pm.run(mod, pb)


def compile_ir(llvm_ir: str, tm=None, speed_level: int = 3) -> llvm.ModuleRef:
    """Parse, verify and optimize textual LLVM IR for the host."""
    init_native()
    tm = tm or host_target_machine()
    mod = llvm.parse_assembly(llvm_ir)
    mod.verify()
    mod.triple = tm.triple
    mod.data_layout = str(tm.target_data)
    return optimize(mod, tm, speed_level)


def emit_assembly(kernel: Kernel, math_mode: str = "ir") -> str:
    """Host assembly of a kernel (for inspection and the vectorization test)."""
    module, _ = lower_kernel(kernel, math_mode=math_mode)
    tm = host_target_machine()
    return tm.emit_assembly(compile_ir(str(module), tm))


def emit_llvm(kernel: Kernel, optimized: bool = False, math_mode: str = "ir") -> str:
    module, _ = lower_kernel(kernel, math_mode=math_mode)
    return str(compile_ir(str(module))) if optimized else str(module)
