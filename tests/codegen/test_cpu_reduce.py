"""CPU kernels: reductions, fused reduction + epilogue (softmax, layernorm, mean of a chain)."""
import numpy as np
import pytest

from gradc.codegen import runtime_cpu
from gradc.codegen.kernel_ir import KernelBuilder

from .helpers import TOL, assert_kernel_matches, buffers

NP = {"f32": np.float32, "f64": np.float64}


@pytest.mark.parametrize("kind", ["sum", "max", "min", "prod", "mean"])
@pytest.mark.parametrize("dtype", ["f32", "f64"])
@pytest.mark.parametrize("space,axes", [((13,), (0,)), ((6, 9), (1,)), ((6, 9), (0,)),
                                        ((3, 4, 5), (0, 2)), ((3, 4, 5), (1, 2)), ((4, 5, 6), (0, 1, 2)),
                                        ((2, 1, 7), (2,))])
def test_reduce_kinds(kind, dtype, space, axes):
    rng = np.random.default_rng(hash((kind, dtype, space, axes)) % 2**32)
    kb = KernelBuilder("red", space)
    x = kb.load(kb.input("x", dtype, space))
    r = kb.reduce(kind, kb.op("mul", x, 1.5) if kind != "prod" else x, axes)
    out_shape = tuple(n for k, n in enumerate(space) if k not in axes)
    kb.store(kb.output("o", dtype, out_shape), r)
    k = kb.build()
    xs = rng.uniform(0.5, 1.5, space).astype(NP[dtype])
    out = np.empty(out_shape, NP[dtype])
    runtime_cpu.compile_kernel(k)(xs, out)
    xx = xs.astype(np.float64) * (1.5 if kind != "prod" else 1)
    ref = {"sum": np.sum, "max": np.max, "min": np.min, "prod": np.prod, "mean": np.mean}[kind](xx, axis=axes)
    np.testing.assert_allclose(out, ref, **TOL[dtype])


def test_f32_sum_is_accurate():
    """Summing 4M float32 values: blocks of f32 vector partial sums added into an f64 total
    keep the result within a couple of float32 ulp; plain sequential f32 accumulation is
    off by about 4% here (so the bound is meaningful)."""
    n = 1 << 22
    x = np.full(n, 0.1, np.float32)
    kb = KernelBuilder("bigsum", (n,))
    r = kb.reduce("sum", kb.load(kb.input("x", "f32", (n,))), (0,))
    kb.store(kb.output("o", "f32", ()), r)
    ck = runtime_cpu.compile_kernel(kb.build())
    out = np.empty((), np.float32)
    ck(x, out)
    exact = np.float64(np.float32(0.1)) * n
    bound = 2 * np.finfo(np.float32).eps
    assert abs(float(out) - exact) <= bound * exact
    sequential = np.cumsum(x, dtype=np.float32)[-1]
    assert abs(float(sequential) - exact) > 1000 * bound * exact
    # random data: error relative to sum(|x|) at float32 rounding level
    rng = np.random.default_rng(0)
    for y in (rng.random(n).astype(np.float32), rng.standard_normal(n).astype(np.float32),
              rng.standard_normal(n + 333).astype(np.float32)[:n]):
        ck(np.ascontiguousarray(y), out)
        y64 = y.astype(np.float64)
        assert abs(float(out) - y64.sum()) <= bound * np.abs(y64).sum()


@pytest.mark.parametrize("n,m", [(3, 511), (3, 512), (2, 513), (2, 1500), (1, 5000)])
def test_f32_blocked_row_sums(n, m):
    """Row sums around and across the f32 block size (full blocks + remainder block)."""
    rng = np.random.default_rng(m)
    kb = KernelBuilder("rowsum", (n, m))
    x = kb.load(kb.input("x", "f32", (n, m)))
    e = kb.op("exp", x)
    kb.store(kb.output("s", "f32", (n,)), kb.reduce("sum", e, (1,)))
    kb.store(kb.output("mx", "f32", (n,)), kb.reduce("max", e, (1,)))
    kb.store(kb.output("p", "f32", (n,)), kb.reduce("mean", x, (1,)))
    xs = rng.standard_normal((n, m)).astype(np.float32)
    s, mx, p = (np.empty(n, np.float32) for _ in range(3))
    runtime_cpu.compile_kernel(kb.build())(xs, s, mx, p)
    x64 = xs.astype(np.float64)
    np.testing.assert_allclose(s, np.exp(x64).sum(1), rtol=1e-6)
    np.testing.assert_allclose(mx, np.exp(x64).max(1), rtol=1e-6)
    np.testing.assert_allclose(p, x64.mean(1), rtol=1e-5, atol=1e-6)


def test_max_propagates_nan_and_handles_empty():
    kb = KernelBuilder("mx", (3, 4))
    r = kb.reduce("max", kb.load(kb.input("x", "f64", (3, 4))), (1,))
    kb.store(kb.output("o", "f64", (3,)), r)
    x = np.arange(12.0).reshape(3, 4)
    x[1, 2] = np.nan
    out = np.empty(3)
    runtime_cpu.compile_kernel(kb.build())(x, out)
    np.testing.assert_array_equal(out, [3, np.nan, 11])
    kb = KernelBuilder("empty", (3, 0))
    r = kb.reduce("sum", kb.load(kb.input("x", "f64", (3, 0))), (1,))
    kb.store(kb.output("o", "f64", (3,)), r)
    out = np.full(3, 7.0)
    runtime_cpu.compile_kernel(kb.build())(np.empty((3, 0)), out)
    np.testing.assert_array_equal(out, 0.0)


def build_softmax(n, m, dtype, log=False):
    kb = KernelBuilder("softmax", (n, m))
    x = kb.load(kb.input("x", dtype, (n, m)))
    mx = kb.reduce("max", x, (1,))
    z = kb.op("sub", x, mx)
    s = kb.reduce("sum", kb.op("exp", z), (1,))
    y = kb.op("sub", z, kb.op("log", s)) if log else kb.op("div", kb.op("exp", z), s)
    kb.store(kb.output("out", dtype, (n, m)), y)
    return kb.build()


@pytest.mark.parametrize("dtype", ["f32", "f64"])
@pytest.mark.parametrize("n,m", [(1, 1), (7, 33), (256, 1000)])
@pytest.mark.parametrize("log", [False, True])
def test_softmax(dtype, n, m, log):
    k = build_softmax(n, m, dtype, log)
    rng = np.random.default_rng(n * m)
    x = (rng.standard_normal((n, m)) * 5).astype(NP[dtype])
    out = np.empty_like(x)
    runtime_cpu.compile_kernel(k)(x, out)
    z = x.astype(np.float64) - x.max(1, keepdims=True)
    ref = z - np.log(np.exp(z).sum(1, keepdims=True)) if log else np.exp(z) / np.exp(z).sum(1, keepdims=True)
    np.testing.assert_allclose(out, ref, **TOL[dtype])


@pytest.mark.parametrize("dtype", ["f32", "f64"])
def test_layernorm_two_outputs(dtype):
    """mean and variance in one pass group, normalised output and per-row rstd stored."""
    n, m = 33, 70
    kb = KernelBuilder("layernorm", (n, m))
    x = kb.load(kb.input("x", dtype, (n, m)))
    w = kb.load(kb.input("w", dtype, (m,)))
    bias = kb.load(kb.input("b", dtype, (m,)))
    mean = kb.reduce("mean", x, (1,))
    xc = kb.op("sub", x, mean)
    var = kb.reduce("mean", kb.op("mul", xc, xc), (1,))
    rstd = kb.op("rsqrt", kb.op("add", var, 1e-5))
    kb.store(kb.output("y", dtype, (n, m)), kb.op("add", kb.op("mul", kb.op("mul", xc, rstd), w), bias))
    kb.store(kb.output("rstd", dtype, (n, 1)), rstd)
    k = kb.build()
    rng = np.random.default_rng(0)
    arrs = buffers(k, rng)
    got = assert_kernel_matches(k, arrs)
    x_, w_, b_ = (a.astype(np.float64) for a in arrs[:3])
    mu = x_.mean(1, keepdims=True)
    v = ((x_ - mu) ** 2).mean(1, keepdims=True)
    np.testing.assert_allclose(got[0], (x_ - mu) / np.sqrt(v + 1e-5) * w_ + b_, **TOL[dtype])


@pytest.mark.parametrize("dtype", ["f32", "f64"])
def test_mean_of_a_chain_full_reduction(dtype):
    """loss = mean((tanh(x*w + b) - y)**2) over everything: one kernel, scalar output."""
    shape = (64, 31)
    kb = KernelBuilder("mse", shape)
    x = kb.load(kb.input("x", dtype, shape))
    w = kb.load(kb.input("w", dtype, (31,)))
    b = kb.load(kb.input("b", dtype, (1,)))
    y = kb.load(kb.input("y", dtype, shape))
    d = kb.op("sub", kb.op("tanh", kb.op("add", kb.op("mul", x, w), b)), y)
    kb.store(kb.output("loss", dtype, ()), kb.reduce("mean", kb.op("pow", d, 2.0), (0, 1)))
    k = kb.build()
    arrs = buffers(k, np.random.default_rng(5))
    got, = assert_kernel_matches(k, arrs)
    x_, w_, b_, y_ = (a.astype(np.float64) for a in arrs[:4])
    np.testing.assert_allclose(got, np.mean((np.tanh(x_ * w_ + b_) - y_) ** 2), **TOL[dtype])


@pytest.mark.parametrize("seed", range(12))
def test_random_fused_reduction_epilogue(seed):
    """Random prologue -> reduce over random axes -> epilogue mixing reduced and full values."""
    rng = np.random.default_rng(100 + seed)
    dtype = ["f32", "f64"][seed % 2]
    rank = int(rng.integers(2, 4))
    space = tuple(int(rng.integers(2, 12)) for _ in range(rank))
    axes = tuple(sorted(rng.choice(rank, size=int(rng.integers(1, rank)), replace=False).tolist()))
    kind = ["sum", "max", "min", "mean"][seed % 4]
    kb = KernelBuilder(f"fre{seed}", space)
    x = kb.load(kb.input("x", dtype, space))
    bshape = tuple(1 if rng.random() < 0.5 else s for s in space)
    bb = kb.load(kb.input("b", dtype, bshape))
    pro = kb.op("tanh", kb.op("add", kb.op("mul", x, 0.7), bb))
    r = kb.reduce(kind, pro, axes)
    epi = kb.op("mul", kb.op("sub", pro, r), kb.op("exp", r))
    kb.store(kb.output("full", dtype, space), epi)
    red_shape = tuple(1 if k in axes else n for k, n in enumerate(space))
    kb.store(kb.output("red", dtype, red_shape), kb.op("sigmoid", r))
    k = kb.build()
    assert_kernel_matches(k, buffers(k, rng))


def test_transposed_reduction_input():
    """Column sums of a transposed view: reduce axis 1 of x.T (strided inner loop)."""
    x = np.random.rand(50, 30)
    kb = KernelBuilder("colsum", (30, 50))
    v = kb.load(kb.input("x", "f64", (50, 30)), broadcast_from_shape=(30, 50), strides=(1, 30))
    kb.store(kb.output("o", "f64", (30,)), kb.reduce("sum", v, (1,)))
    out = np.empty(30)
    runtime_cpu.compile_kernel(kb.build())(x, out)
    np.testing.assert_allclose(out, x.sum(0), rtol=1e-12)


def test_bool_sum_and_int_reductions():
    kb = KernelBuilder("cnt", (4, 6))
    x = kb.load(kb.input("x", "i64", (4, 6)))
    pos = kb.op("gt", x, kb.constant(0, "i64"))
    kb.store(kb.output("n", "i64", (4,)), kb.reduce("sum", pos, (1,)))
    kb.store(kb.output("mx", "i64", (4,)), kb.reduce("max", x, (1,)))
    x_ = np.random.default_rng(0).integers(-9, 9, (4, 6))
    n, mx = np.empty(4, np.int64), np.empty(4, np.int64)
    runtime_cpu.compile_kernel(kb.build())(x_, n, mx)
    np.testing.assert_array_equal(n, (x_ > 0).sum(1))
    np.testing.assert_array_equal(mx, x_.max(1))


def test_large_parallel_softmax():
    k = build_softmax(2048, 512, "f32")
    ck = runtime_cpu.compile_kernel(k)
    assert ck.parallel or runtime_cpu.num_threads() == 1
    x = np.random.default_rng(0).standard_normal((2048, 512)).astype(np.float32)
    out = np.empty_like(x)
    ck(x, out)
    ref = np.exp(x - x.max(1, keepdims=True))
    np.testing.assert_allclose(out, ref / ref.sum(1, keepdims=True), rtol=1e-4, atol=1e-7)


def test_one_hot_mask_compares_exactly():
    """``where(index == label, ...)`` in a row loop is compared as i32 after clamping the
    label: labels out of range (negative, >= extent, beyond 2**32) never match."""
    n, m = 6, 700
    kb = KernelBuilder("onehot", (n, m))
    x = kb.load(kb.input("x", "f32", (n, m)))
    t = kb.load(kb.input("t", "i64", (n, 1)))
    j = kb.index(1)
    z = kb.constant(0.0, "f32")
    picked = kb.reduce("sum", kb.op("where", kb.op("eq", j, t), x, z), (1,))
    below = kb.reduce("sum", kb.op("where", kb.op("lt", j, t), x, z), (1,))
    kb.store(kb.output("picked", "f32", (n,)), picked)
    kb.store(kb.output("below", "f32", (n,)), below)
    kb.store(kb.output("g", "f32", (n, m)), kb.op("where", kb.op("ge", t, j), x, z))
    labels = np.array([0, 699, -1, 700, (1 << 32) + 5, -(1 << 32) + 3], np.int64).reshape(n, 1)
    xs = np.random.default_rng(1).standard_normal((n, m)).astype(np.float32)
    picked_, below_, g = np.empty(n, np.float32), np.empty(n, np.float32), np.empty((n, m), np.float32)
    runtime_cpu.compile_kernel(kb.build())(xs, labels, picked_, below_, g)
    cols = np.arange(m)
    mask = cols[None, :] == labels
    np.testing.assert_allclose(picked_, np.where(mask, xs, 0).sum(1), rtol=1e-6)
    np.testing.assert_allclose(below_, np.where(cols[None, :] < labels, xs, 0).astype(np.float64).sum(1),
                               rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(g, np.where(labels >= cols[None, :], xs, 0))


@pytest.mark.parametrize("dtype", ["f32", "f64"])
def test_division_by_loop_invariant(dtype):
    """``x / c`` with ``c`` invariant in the inner loop becomes ``x * (1/c)`` on the CPU:
    within ~1.5 ulp, and 0, inf and NaN divisors behave like a division."""
    n, m = 5, 300
    kb = KernelBuilder("divinv", (n, m))
    x = kb.load(kb.input("x", dtype, (n, m)))
    c = kb.load(kb.input("c", dtype, (n, 1)))
    s = kb.reduce("sum", kb.op("div", x, c), (1,))
    kb.store(kb.output("s", dtype, (n,)), s)
    kb.store(kb.output("y", dtype, (n, m)), kb.op("div", x, kb.op("add", c, s)))
    xs = np.random.default_rng(2).standard_normal((n, m)).astype(NP[dtype])
    xs[:, 0] = 0.0
    xs[:, 1] = np.inf
    cs = np.array([3.0, 0.0, np.inf, np.nan, -7.5], NP[dtype]).reshape(n, 1)
    s_, y = np.empty(n, NP[dtype]), np.empty((n, m), NP[dtype])
    runtime_cpu.compile_kernel(kb.build())(xs, cs, s_, y)
    with np.errstate(all="ignore"):
        ref_s = (xs / cs).sum(1, dtype=np.float64)
        ref_y = xs / (cs + s_[:, None])
    eps = np.finfo(NP[dtype]).eps
    np.testing.assert_allclose(s_, ref_s, rtol=1e-5 if dtype == "f32" else 1e-12)
    np.testing.assert_allclose(y, ref_y, rtol=2 * eps, atol=0)


def test_elementwise_row_broadcast_i64_load():
    """A per-row i64 value loaded before the inner loop (not in it) and compared with the
    column index: elementwise one-hot."""
    n, m = 7, 40
    kb = KernelBuilder("oh_ew", (n, m))
    t = kb.load(kb.input("t", "i64", (n, 1)))
    w = kb.load(kb.input("w", "f32", (n, 1)))
    kb.store(kb.output("o", "f32", (n, m)),
             kb.op("where", kb.op("eq", kb.index(1), t), w, kb.constant(0.0, "f32")))
    labels = np.array([0, 39, 40, -1, 5, 5, 1 << 40], np.int64).reshape(n, 1)
    ws = np.arange(1, n + 1, dtype=np.float32).reshape(n, 1)
    out = np.empty((n, m), np.float32)
    runtime_cpu.compile_kernel(kb.build())(labels, ws, out)
    np.testing.assert_array_equal(out, np.where(np.arange(m)[None, :] == labels, ws, 0))
