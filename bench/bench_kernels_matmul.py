"""Matmul on the CPU: BLAS through ctypes vs gradc's generated blocked kernel vs numpy.matmul.

Run: ``python bench/bench_kernels_matmul.py``.  Prints GFLOP/s (best of N runs) per size and
dtype; the numbers in ``gradc/codegen/matmul_cpu.py``'s docstring come from this script.
"""
import sys
import time

import numpy as np

from gradc.codegen import matmul_cpu
from gradc.codegen.kernel_ir import build_matmul


def best_time(fn, reps):
    fn()
    best = float("inf")
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def main(sizes=(64, 128, 256, 512, 1024)):
    print(f"{'size':>6} {'dtype':>5} {'blas':>8} {'generated':>10} {'np.matmul':>10}   GFLOP/s")
    for dt in ("f32", "f64"):
        for n in sizes:
            k = build_matmul(f"mm{n}", (n, n), (n, n), dt)
            a = np.random.rand(n, n).astype(np.float32 if dt == "f32" else np.float64)
            b = np.random.rand(n, n).astype(a.dtype)
            o = np.empty((n, n), a.dtype)
            reps = max(3, min(200, int(2e9 / (2 * n ** 3))))
            res = []
            for mode in ("blas", "generated", "numpy"):
                plan = matmul_cpu.ContractionPlan(k, mode)
                t = best_time(lambda: plan(a, b, o), reps)
                np.testing.assert_allclose(o, a @ b, rtol=1e-3 if dt == "f32" else 1e-10)
                res.append(2 * n ** 3 / t / 1e9)
            print(f"{n:>6} {dt:>5} {res[0]:>8.1f} {res[1]:>10.1f} {res[2]:>10.1f}")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
