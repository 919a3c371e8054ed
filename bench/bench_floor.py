"""The largest kernel of W1, W3 and W4, timed back to back with a 16 MiB copy kernel.

Run: ``python bench/bench_floor.py [--rounds 3]``.  On a shared machine the bandwidth drifts
within minutes, so ``run_cpu.py``'s floor (one bandwidth measurement at the start) can be
far from the conditions a row was timed in.  Here each round times the copy kernel and then
each workload's largest compiled kernel on its own (random inputs, both cores as in a
step), and prints each as a multiple of the copy: how far the kernel is from moving its
32 MiB (read 16 MiB, write 16 MiB) at the speed this machine copies right now.
"""
import argparse

import numpy as np
from run_cpu import median_time
from workloads import WORKLOADS

import gradc
from gradc.codegen import runtime_cpu
from gradc.codegen.kernel_ir import KernelBuilder
from gradc.codegen.split_reduce import split_reduction

NAMES = ("W1 chain", "W3 softmax-xent", "W4 layernorm")


def copy_kernel(n=1 << 22):
    kb = KernelBuilder("floor_copy", (n,))
    kb.store(kb.output("dst", "f32", (n,)), kb.load(kb.input("src", "f32", (n,))))
    ck = runtime_cpu.compile_kernel(kb.build())
    src, dst = np.ones(n, np.float32), np.empty(n, np.float32)
    return lambda: ck(src, dst, check=False)


def largest_kernel(name):
    """A callable running the workload's largest kernel as the compiled step does (split form
    where the backend splits it), on random buffers allocated once."""
    make_inputs, loss_fn, _, _ = WORKLOADS[name]
    inputs, wrt = make_inputs(np.random.default_rng(0))
    fn = gradc.compile(loss_fn)
    fn(**{k: gradc.tensor(v, requires_grad=k in wrt) for k, v in inputs.items()})
    spec = next(iter(fn._cache.values()))
    kernel = max(spec.backend.kernels, key=lambda k: k.numel)
    split = split_reduction(kernel)
    kernel = split[0] if split else kernel
    ck = runtime_cpu.compile_kernel(kernel)
    rng = np.random.default_rng(1)
    arrays = runtime_cpu.empty_buffers(kernel)
    for a, p in zip(arrays, kernel.params):
        if a.dtype.kind == "f":
            a[...] = rng.standard_normal(a.shape)
        elif a.dtype.kind == "i":        # labels: valid column indices
            a[...] = rng.integers(0, 1024, a.shape)
    return lambda: ck(*arrays, check=False)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=30)
    args = ap.parse_args()
    copy = copy_kernel()
    kernels = {name: largest_kernel(name) for name in NAMES}
    for r in range(args.rounds):
        t_copy = median_time(copy, args.repeat, warmup=2)
        cells = [f"copy 16 MiB {t_copy * 1e3:.3f} ms"]
        for name, run in kernels.items():
            t = median_time(run, args.repeat, warmup=2)
            cells.append(f"{name.split()[0]} {t * 1e3:.3f} ms ({t / t_copy:.2f}x)")
        print(f"round {r + 1}: " + "  ".join(cells))


if __name__ == "__main__":
    main()
