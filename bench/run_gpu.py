"""GPU benchmark: W1-W5 forward+backward on CUDA, gradc compiled vs eager vs PyTorch.

    python bench/run_gpu.py [--repeat 20] [--only W1,W5] [--no-torch-compile] [--scale 1.0]

The GPU counterpart of bench/run_cpu.py, on the same workloads (bench/workloads.py).
For every workload it prints a table of median milliseconds per forward+backward
(microseconds for W5) of gradc compiled, gradc eager, torch eager and torch.compile,
all on the CUDA device (the torch rows only when PyTorch with CUDA is installed), the
ratio of every peer's time to gradc compiled's (>1 means gradc is faster), gradc's
first-call compile time and, for the bandwidth-bound workloads, the floor implied by
the device copy bandwidth measured in this same run (the faster of a gradc and a
torch clone of a 64 MiB float32 tensor) next to the bandwidth gradc achieves.
The device is synchronised before and after every timed step.

Needs an NVIDIA GPU and PyCUDA (``pip install 'gradc[cuda]'``); without them it
prints one line ``# no CUDA device: <reason>`` and exits with status 0, so it is safe
to run anywhere. ``--scale F`` shrinks the big workloads (W1-W4) for smoke runs.
With ``GRADC_CUDA_SIMULATOR=1`` the same code runs through gradc's CPU-threads SIMT
simulator: very slow, so use it only with a small ``--scale`` (or ``--only W5``) to
check the script, never for timings.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from workloads import WORKLOADS  # noqa: E402
from run_cpu import gradc_step as _gradc_step, print_table, torch_step as _torch_step  # noqa: E402

import gradc  # noqa: E402

DEVICE = "cuda"


def _gradc_sync():
    gradc.cuda.synchronize()


def median_time(fn, repeat, sync, warmup=2):
    """Median wall time of ``fn``, with ``sync`` (device synchronise) before and after each call."""
    for _ in range(warmup):
        fn()
        sync()
    times = []
    for _ in range(max(1, repeat)):
        sync()
        t0 = time.perf_counter()
        fn()
        sync()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def first_call_time(fn, sync):
    sync()
    t0 = time.perf_counter()
    fn()
    sync()
    return time.perf_counter() - t0


def copy_bandwidth(torch, mib=64):
    """Bytes per second (read + write) of a device-to-device copy: the median time of
    ``y = x.clone()`` on a float32 CUDA tensor, with gradc and (when present) torch;
    the faster one is the yardstick. Returns (bandwidth, which)."""
    n = int(mib * 2 ** 20) // 4
    nbytes = n * 4
    x = gradc.tensor(np.ones(n, np.float32), device=DEVICE)

    def gradc_copy():
        return x.clone()
    results = {"gradc": median_time(gradc_copy, 10, _gradc_sync)}
    if torch is not None:
        xt = torch.ones(n, dtype=torch.float32, device=DEVICE)

        def torch_copy():
            return xt.clone()
        results["torch"] = median_time(torch_copy, 10, torch.cuda.synchronize)
    which = min(results, key=results.get)
    return 2 * nbytes / results[which], which


def scale_inputs(name, inputs, factor):
    """Shrink W1 (1-D input), W2 (batch, input and hidden widths) and W3/W4 (rows of the
    4096-row inputs) by ``factor``; returns (inputs, fraction of the original size kept), the
    fraction scaling floor_bytes."""
    if factor == 1.0 or not name.startswith(("W1", "W2", "W3", "W4")):
        return inputs, 1.0
    if name.startswith("W2"):
        m, d, h = (min(n, max(8, int(n * factor))) for n in (256, 1024, 1024))
        out = dict(inputs, x=inputs["x"][:m, :d].copy(), W1=inputs["W1"][:d, :h].copy(),
                   b1=inputs["b1"][:h].copy(), W2=inputs["W2"][:h].copy(), t=inputs["t"][:m].copy())
        return out, (m * d + d * h) / (256 * 1024 + 1024 * 1024)
    if name.startswith("W1"):
        out, kept = {}, 1.0
        for k, v in inputs.items():
            m = min(len(v), max(1024, int(len(v) * factor)))
            out[k], kept = v[:m].copy(), m / len(v)
        return out, kept
    rows = 4096
    m = min(rows, max(8, int(rows * factor)))
    out = {k: (v[:m].copy() if v.ndim >= 1 and v.shape[0] == rows else v) for k, v in inputs.items()}
    return out, m / rows


def _import_torch_cuda():
    try:
        import torch
    except ImportError:
        return None
    try:
        return torch if torch.cuda.is_available() else None
    except Exception:
        return None


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--only", default="")
    ap.add_argument("--no-torch-compile", action="store_true")
    ap.add_argument("--scale", type=float, default=1.0,
                    help="shrink W1/W3/W4 (and their floor) by this factor for smoke runs")
    args = ap.parse_args(argv)
    if not (args.scale > 0):
        ap.error("--scale must be > 0")

    if not gradc.cuda.is_available():
        print(f"# no CUDA device: {gradc.cuda.unavailable_reason()}")
        return []

    torch = _import_torch_cuda()
    selected = {name: w for name, w in WORKLOADS.items()
                if not args.only or any(name.startswith(o.strip()) for o in args.only.split(",") if o.strip())}
    simulated = os.environ.get("GRADC_CUDA_SIMULATOR", "") not in ("", "0")
    print(f"# device: {gradc.cuda.get_device_name()}" + ("  (GRADC_CUDA_SIMULATOR: CPU simulator, timings meaningless)"
                                          if simulated else ""))
    print(f"# torch on cuda: {'yes, ' + torch.__version__ if torch is not None else 'no'}")
    bw = None
    if any(w[3] for w in selected.values()):
        # the yardstick buffer shrinks with --scale (smoke runs, the simulator); 64 MiB at full scale
        mib = max(1.0, 64 * min(1.0, args.scale))
        bw, which = copy_bandwidth(torch, mib)
        print(f"# device copy bandwidth {bw / 1e9:.1f} GB/s (clone of {mib:.0f} MiB float32; "
              f"best of gradc and torch: {which})")
    if args.scale != 1.0:
        print(f"# --scale {args.scale}: W1-W4 shrunk, the floors of W1/W3/W4 scaled to match")

    rng = np.random.default_rng(0)
    rows = []
    for name, (make_inputs, loss_fn, _numpy_fn, floor_bytes) in WORKLOADS.items():
        if name not in selected:
            continue
        inputs, wrt = make_inputs(rng)
        inputs, kept = scale_inputs(name, inputs, args.scale)
        if floor_bytes:
            floor_bytes = floor_bytes * kept
        unit, scale = ("us", 1e6) if name.startswith("W5") else ("ms", 1e3)
        res = {}
        step = _gradc_step(loss_fn, inputs, wrt, True, DEVICE)
        first = first_call_time(step, _gradc_sync)
        res["gradc compiled"] = median_time(step, args.repeat, _gradc_sync)
        compile_s = max(first - res["gradc compiled"], 0.0)
        step_e = _gradc_step(loss_fn, inputs, wrt, False, DEVICE)
        res["gradc eager"] = median_time(step_e, min(args.repeat, max(3, args.repeat // 4)), _gradc_sync)
        if torch is not None:
            tsync = torch.cuda.synchronize
            res["torch eager"] = median_time(_torch_step(loss_fn, inputs, wrt, False, DEVICE), args.repeat, tsync)
            if not args.no_torch_compile:
                try:
                    s = _torch_step(loss_fn, inputs, wrt, True, DEVICE)
                    tc_first = first_call_time(s, tsync)
                    res["torch.compile"] = median_time(s, args.repeat, tsync)
                    res["torch.compile first call s"] = tc_first
                except Exception as e:  # no Triton / compiler toolchain etc.
                    print(f"# torch.compile unavailable for {name}: {type(e).__name__}: {e}")
        ours = res["gradc compiled"]
        print_table(f"{name} on cuda", unit, scale, res, first, compile_s)
        if floor_bytes and bw:
            floor = floor_bytes / bw
            print(f"bandwidth floor ({floor_bytes / 2 ** 20:.1f} MiB moved at {bw / 1e9:.1f} GB/s): "
                  f"{floor * 1e3:.3f} ms; gradc achieves {floor_bytes / ours / 1e9:.1f} GB/s, "
                  f"at {ours / floor:.2f}x the floor")
        rows.append((name, res))
    return rows


if __name__ == "__main__":
    main()
