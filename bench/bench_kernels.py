"""Generated CPU kernels vs NumPy on typical fused patterns (median microseconds).

Run: ``python bench/bench_kernels.py``.  Each kernel is one generated function (2 threads
when large); NumPy runs the same math op by op.
"""
import numpy as np
from run_cpu import median_time

from gradc.codegen import runtime_cpu
from gradc.codegen.kernel_ir import KernelBuilder


def timeit(fn, repeat=30):
    """Median microseconds over ``repeat`` calls after one warm-up call."""
    return median_time(fn, repeat, warmup=1) * 1e6


def case_add_bcast(n=2048, m=2048):
    kb = KernelBuilder("add_bcast", (n, m))
    x = kb.load(kb.input("x", "f32", (n, m)))
    b = kb.load(kb.input("b", "f32", (m,)))
    kb.store(kb.output("o", "f32", (n, m)), kb.op("relu", kb.op("add", x, b)))
    x_, b_ = np.random.rand(n, m).astype(np.float32), np.random.rand(m).astype(np.float32)
    o = np.empty_like(x_)
    return kb.build(), (x_, b_, o), lambda: np.maximum(x_ + b_, 0, out=o)


def case_softmax(n=2048, m=1024):
    kb = KernelBuilder("softmax", (n, m))
    x = kb.load(kb.input("x", "f32", (n, m)))
    e = kb.op("exp", kb.op("sub", x, kb.reduce("max", x, (1,))))
    kb.store(kb.output("o", "f32", (n, m)), kb.op("div", e, kb.reduce("sum", e, (1,))))
    x_ = np.random.randn(n, m).astype(np.float32)
    o = np.empty_like(x_)

    def ref():
        e = np.exp(x_ - x_.max(1, keepdims=True))
        np.divide(e, e.sum(1, keepdims=True), out=o)
    return kb.build(), (x_, o), ref


def case_colsum(n=4096, m=1024):
    kb = KernelBuilder("colsum", (n, m))
    x = kb.load(kb.input("x", "f32", (n, m)))
    kb.store(kb.output("o", "f32", (m,)), kb.reduce("sum", x, (0,)))
    x_ = np.random.rand(n, m).astype(np.float32)
    o = np.empty(m, np.float32)
    return kb.build(), (x_, o), lambda: np.sum(x_, 0, out=o)


def case_mse(n=1 << 22):
    kb = KernelBuilder("mse", (n,))
    x = kb.load(kb.input("x", "f32", (n,)))
    y = kb.load(kb.input("y", "f32", (n,)))
    d = kb.op("sub", x, y)
    kb.store(kb.output("o", "f32", ()), kb.reduce("mean", kb.op("mul", d, d), (0,)))
    x_, y_ = np.random.rand(n).astype(np.float32), np.random.rand(n).astype(np.float32)
    o = np.empty((), np.float32)
    return kb.build(), (x_, y_, o), lambda: np.mean((x_ - y_) ** 2)


def case_gelu_tanh(n=1 << 22):
    kb = KernelBuilder("gelu", (n,))
    x = kb.load(kb.input("x", "f32", (n,)))
    inner = kb.op("mul", kb.op("add", x, kb.op("mul", kb.op("pow", x, 3.0), 0.044715)), 0.7978845608)
    kb.store(kb.output("o", "f32", (n,)), kb.op("mul", kb.op("mul", x, 0.5), kb.op("add", kb.op("tanh", inner), 1.0)))
    x_ = np.random.randn(n).astype(np.float32)
    o = np.empty_like(x_)
    return kb.build(), (x_, o), lambda: np.multiply(0.5 * x_, 1 + np.tanh(0.7978845608 * (x_ + 0.044715 * x_ ** 3)), out=o)


def main():
    print(f"{'kernel':<12} {'gradc us':>10} {'numpy us':>10} {'speedup':>8}")
    for case in (case_add_bcast, case_softmax, case_colsum, case_mse, case_gelu_tanh):
        k, arrays, ref = case()
        ck = runtime_cpu.compile_kernel(k)
        tg = timeit(lambda: ck(*arrays))
        tn = timeit(ref)
        print(f"{k.name:<12} {tg:>10.1f} {tn:>10.1f} {tn / tg:>8.2f}")


if __name__ == "__main__":
    main()
