"""CPU benchmark: W1-W5 forward+backward, gradc compiled vs eager vs NumPy vs PyTorch.

    python bench/run_cpu.py [--repeat 20] [--only W1,W5] [--no-torch-compile]

Prints a table of median milliseconds per forward+backward (microseconds for W5),
the ratio of every peer's time to gradc compiled's (>1 means gradc is faster), the
first-call compile time, and for the bandwidth-bound workloads the floor implied by the best
streaming copy bandwidth measured so far in the run (at the start, and timed in turn with each
workload's passes; JAX is not compared yet: it is not installed on the reference machine).
"""
from __future__ import annotations

import argparse
import os

# Peers' worker threads must not spin between calls while the next implementation is timed
# (on 2 cores a spinning OpenMP pool halves everyone else's speed); set before torch loads.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from workloads import WORKLOADS  # noqa: E402

import gradc  # noqa: E402


PASSES = 1


def median_time(fn, repeat, warmup=2):
    """The median over ``repeat`` calls (after ``warmup``); with ``--passes N``, the best of N such
    medians."""
    return interleaved_medians({"fn": fn}, {"fn": repeat}, warmup)["fn"]


def _block_median(fn, repeat, warmup):
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def interleaved_medians(fns, repeats, warmup=2):
    """{name: best of ``PASSES`` block medians} for ``{name: fn}``, a block being ``warmup`` calls
    and ``repeats[name]`` timed ones.  The passes take turns: pass 1 of every implementation,
    then pass 2 of every one, and so on.  This machine has slow spells of a few seconds in which
    all code runs 1.3-1.6x slower (W5 measured 11.3 or 16-19 us depending on the spell); with
    one implementation's passes back to back, one spell could spoil all of its passes and none
    of a peer's."""
    best = {}
    for _ in range(PASSES):
        for name, fn in fns.items():
            m = _block_median(fn, repeats[name], warmup)
            best[name] = m if name not in best else min(best[name], m)
    return best


def stream_copies(mib=64):
    """(bytes moved per call, {name: copy}) for a ``mib`` MiB streaming copy: a gradc copy kernel on
    all cores and NumPy's single-threaded copy; the faster one is the bandwidth yardstick."""
    from gradc.codegen.kernel_ir import KernelBuilder
    from gradc.codegen.runtime_cpu import compile_kernel
    n = mib * 2 ** 20 // 4
    src = np.ones(n, np.float32)
    dst = np.empty_like(src)
    kb = KernelBuilder("stream_copy", (n,))
    kb.store(kb.output("dst", "f32", (n,)), kb.load(kb.input("src", "f32", (n,))))
    ck = compile_kernel(kb.build())
    return 2 * src.nbytes, {"copy kernel": lambda: ck(src, dst, check=False), "copy numpy": lambda: np.copyto(dst, src)}


def make_step(make_tensor, fn, inputs, wrt, device=None):
    """One forward+backward of ``fn`` on fresh leaves made by ``make_tensor`` (gradc or torch),
    on ``device`` when given."""
    kw = {} if device is None else {"device": device}
    tensors = {k: make_tensor(v, requires_grad=k in wrt, **kw) for k, v in inputs.items()}
    args = list(tensors.values())
    leaves = [tensors[k] for k in wrt]

    def step():
        for t in leaves:
            t.grad = None
        fn(*args).backward()
    return step


def gradc_step(loss_fn, inputs, wrt, compiled, device=None):
    return make_step(gradc.tensor, gradc.compile(loss_fn) if compiled else loss_fn, inputs, wrt, device)


def torch_step(loss_fn, inputs, wrt, compile_mode, device=None):
    import torch
    return make_step(torch.tensor, torch.compile(loss_fn) if compile_mode else loss_fn, inputs, wrt, device)


def print_table(title, unit, scale, res, first, compile_s):
    """One workload's table: median per implementation and its ratio to gradc compiled, then
    the first-call times (``res`` keys ending in " s" are those, not rows)."""
    ours = res["gradc compiled"]
    print(f"\n## {title}   (median {unit} per forward+backward; ratio = peer / gradc compiled)")
    print(f"{'implementation':<18} {unit:>10} {'ratio':>8}")
    for k, v in res.items():
        if k.endswith(" s"):
            continue
        print(f"{k:<18} {v * scale:>10.3f} {v / ours:>8.2f}x")
    print(f"first call (trace + compile + run) of gradc: {first * 1e3:.1f} ms "
          f"(compile about {compile_s * 1e3:.1f} ms)")
    if "torch.compile first call s" in res:
        print(f"first call of torch.compile: {res['torch.compile first call s'] * 1e3:.0f} ms")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--only", default="")
    ap.add_argument("--no-torch-compile", action="store_true")
    ap.add_argument("--passes", type=int, default=1,
                    help="time every implementation this many times (each a block of --repeat calls) and keep "
                         "each one's best median: on a shared machine a slow spell then spoils no single row")
    args = ap.parse_args(argv)
    global PASSES
    PASSES = max(1, args.passes)
    rng = np.random.default_rng(0)
    moved, copies = stream_copies()
    bw = moved / min(median_time(fn, 10) for fn in copies.values())
    print(f"# machine: {os.cpu_count()} cores; streaming copy bandwidth {bw / 1e9:.1f} GB/s (best of a gradc copy kernel and NumPy)")
    try:
        import torch
        torch.set_num_threads(os.cpu_count())
    except ImportError:
        torch = None
    rows = []
    for name, (make_inputs, loss_fn, numpy_fn, floor_bytes) in WORKLOADS.items():
        if args.only and not any(name.startswith(o) for o in args.only.split(",")):
            continue
        inputs, wrt = make_inputs(rng)
        unit, scale = ("us", 1e6) if name.startswith("W5") else ("ms", 1e3)
        # microsecond steps: 50x the calls per block, so that a block lasts milliseconds and one
        # scheduler hiccup does not decide its median
        repeat = args.repeat * (50 if unit == "us" else 1)
        res, fns, repeats = {}, {}, {}
        step = gradc_step(loss_fn, inputs, wrt, compiled=True)
        t0 = time.perf_counter()
        step()
        first = time.perf_counter() - t0
        fns["gradc compiled"], repeats["gradc compiled"] = step, repeat
        fns["gradc eager"] = gradc_step(loss_fn, inputs, wrt, compiled=False)
        repeats["gradc eager"] = max(3, repeat // 4)
        fns["numpy by hand"], repeats["numpy by hand"] = (lambda: numpy_fn(*inputs.values())), repeat
        if torch is not None:
            fns["torch eager"], repeats["torch eager"] = torch_step(loss_fn, inputs, wrt, False), repeat
            if not args.no_torch_compile:
                try:
                    s = torch_step(loss_fn, inputs, wrt, True)
                    t0 = time.perf_counter()
                    s()
                    res["torch.compile first call s"] = time.perf_counter() - t0
                    fns["torch.compile"], repeats["torch.compile"] = s, repeat
                except Exception as e:  # no compiler toolchain etc.
                    print(f"# torch.compile unavailable for {name}: {type(e).__name__}: {e}")
        if floor_bytes:     # the copy bandwidth, timed in turn with the implementations' passes
            for k, fn in copies.items():
                fns[k], repeats[k] = fn, 10
        times = interleaved_medians(fns, repeats)
        copy_time = min(times.pop(k) for k in copies) if floor_bytes else None
        res = {**times, **res}          # rows first, in the order above; then the first-call times
        compile_s = max(first - res["gradc compiled"], 0.0)
        ours = res["gradc compiled"]
        print_table(name, unit, scale, res, first, compile_s)
        if floor_bytes:
            # the best copy bandwidth of the run so far: between this workload's passes or before
            bw = max(bw, moved / copy_time)
            floor = floor_bytes / bw
            print(f"bandwidth floor ({floor_bytes / 2 ** 20:.0f} MiB moved at {bw / 1e9:.1f} GB/s, the best copy "
                  f"so far; {moved / copy_time / 1e9:.1f} GB/s between this workload's passes): {floor * 1e3:.3f} ms; "
                  f"gradc at {ours / floor:.2f}x the floor")
        rows.append((name, res))
    return rows


if __name__ == "__main__":
    main()
