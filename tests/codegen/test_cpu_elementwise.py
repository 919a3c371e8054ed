"""CPU kernels: elementwise expressions with broadcasting and strided views equal NumPy."""
import numpy as np
import pytest

from gradc.codegen import runtime_cpu
from gradc.codegen.kernel_ir import Index, KernelBuilder

from .helpers import TOL, assert_kernel_matches, buffers

UNARY = ["neg", "exp", "tanh", "sigmoid", "relu", "sin", "cos", "abs", "sign", "floor", "ceil", "round",
         "trunc", "frac"]
SAFE_UNARY = {"log": lambda kb, x: kb.op("log", kb.op("add", kb.op("abs", x), 0.5)),
              "sqrt": lambda kb, x: kb.op("sqrt", kb.op("abs", x)),
              "rsqrt": lambda kb, x: kb.op("rsqrt", kb.op("add", kb.op("abs", x), 0.25))}
BINARY = ["add", "sub", "mul", "maximum", "minimum"]


def random_expr(kb, leaves, rng, depth):
    if depth == 0 or rng.random() < 0.2:
        return leaves[rng.integers(len(leaves))]
    r = rng.random()
    if r < 0.35:
        return kb.op(UNARY[rng.integers(len(UNARY))], random_expr(kb, leaves, rng, depth - 1))
    if r < 0.45:
        name = list(SAFE_UNARY)[rng.integers(len(SAFE_UNARY))]
        return SAFE_UNARY[name](kb, random_expr(kb, leaves, rng, depth - 1))
    a, b = random_expr(kb, leaves, rng, depth - 1), random_expr(kb, leaves, rng, depth - 1)
    if r < 0.8:
        return kb.op(BINARY[rng.integers(len(BINARY))], a, b)
    if r < 0.87:
        return kb.op("div", a, kb.op("add", kb.op("abs", b), 0.5))
    if r < 0.93:
        return kb.op("where", kb.op(["lt", "ge", "eq", "ne"][rng.integers(4)], a, b), a, b)
    return kb.op("clamp", a, min=-0.5, max=0.75)


def random_shape_for(space, rng):
    """A shape that broadcasts to space: some dims 1, some leading dims dropped."""
    lead = rng.integers(0, len(space) + 1)
    return tuple(1 if rng.random() < 0.3 else s for s in space[lead:])


@pytest.mark.parametrize("seed", range(24))
def test_random_elementwise_broadcast(seed):
    rng = np.random.default_rng(seed)
    dtype = ["f32", "f64"][seed % 2]
    rank = int(rng.integers(1, 4))
    space = tuple(int(rng.integers(1, 9)) for _ in range(rank))
    kb = KernelBuilder(f"ew{seed}", space)
    leaves = []
    for i in range(int(rng.integers(1, 4))):
        shape = random_shape_for(space, rng)
        leaves.append(kb.load(kb.input(f"x{i}", dtype, shape)))
    e = random_expr(kb, leaves, rng, 4)
    kb.store(kb.output("out", dtype, space), e)
    k = kb.build()
    arrs = buffers(k, rng)
    got, = assert_kernel_matches(k, arrs)
    assert np.isfinite(got).all()


@pytest.mark.parametrize("dtype", ["f32", "f64"])
def test_transposed_and_broadcast_loads(dtype):
    rng = np.random.default_rng(1)
    M, N = 37, 53
    a = rng.standard_normal((N, M)).astype(dtype.replace("f", "float"))       # read as a.T
    row = rng.standard_normal((N,)).astype(a.dtype)
    col = rng.standard_normal((M, 1)).astype(a.dtype)
    kb = KernelBuilder("tr", (M, N))
    at = kb.load(kb.input("a", dtype, (N, M)), broadcast_from_shape=(M, N), strides=(1, M))
    r = kb.load(kb.input("row", dtype, (N,)))
    c = kb.load(kb.input("col", dtype, (M, 1)))
    kb.store(kb.output("o", dtype, (M, N)), kb.op("add", kb.op("mul", at, r), c))
    k = kb.build()
    assert k.body[0].index.strides == (1, M) and k.body[1].index.strides == (0, 1)
    assert k.body[2].index.strides == (1, 0)
    out = np.empty((M, N), a.dtype)
    runtime_cpu.compile_kernel(k)(a, row, col, out)
    np.testing.assert_allclose(out, a.T * row + col, **TOL[dtype])


def test_offset_view_and_store_strides():
    """Load a sliced view (offset + strides) and store transposed."""
    base = np.arange(60, dtype=np.float64).reshape(6, 10)
    # view base[1:5, 2:8:2] -> shape (4, 3), strides (10, 2), offset 12
    kb = KernelBuilder("view", (4, 3))
    v = kb.load(kb.input("base", "f64", (6, 10)), broadcast_from_shape=(4, 3), strides=(10, 2), offset=12)
    kb.store(kb.output("o", "f64", (3, 4)), kb.op("mul", v, 2.0), index=Index((1, 4), 0))
    out = np.zeros((3, 4))
    runtime_cpu.compile_kernel(kb.build())(base, out)
    np.testing.assert_array_equal(out, (base[1:5, 2:8:2] * 2).T)


def test_axis_index_iota_and_mask():
    kb = KernelBuilder("triu", (5, 7))
    x = kb.load(kb.input("x", "f64", (5, 7)))
    keep = kb.op("ge", kb.index(1), kb.index(0))
    kb.store(kb.output("o", "f64", (5, 7)), kb.op("where", keep, x, 0.0))
    x = np.random.rand(5, 7)
    out = np.empty_like(x)
    runtime_cpu.compile_kernel(kb.build())(x, out)
    np.testing.assert_array_equal(out, np.triu(x))


def test_int_and_bool_ops():
    rng = np.random.default_rng(3)
    n = 101
    kb = KernelBuilder("ints", (n,))
    a = kb.load(kb.input("a", "i64", (n,)))
    b = kb.load(kb.input("b", "i64", (n,)))
    m = kb.load(kb.input("m", "i1", (n,)))
    s = kb.op("add", kb.op("mul", a, b), kb.op("maximum", a, b))
    s = kb.op("sub", s, kb.op("abs", kb.op("sign", a)))
    p = kb.op("pow", a, kb.op("clamp", b, min=0, max=5))
    kb.store(kb.output("s", "i64", (n,)), kb.op("where", m, s, kb.op("neg", p)))
    c = kb.op("logical_and", kb.op("lt", a, b), kb.op("logical_not", m))
    kb.store(kb.output("c", "i1", (n,)), kb.op("logical_or", c, kb.op("eq", a, b)))
    kb.store(kb.output("f", "f32", (n,)), kb.op("cast", kb.op("div", kb.op("cast", a, dtype="f64"),
                                                                kb.op("cast", b, dtype="f64")), dtype="f32"))
    kb.store(kb.output("bi", "i64", (n,)), kb.op("cast", m, dtype="i64"))
    k = kb.build()
    a_, b_ = rng.integers(-4, 5, n), rng.integers(-4, 5, n)
    b_[b_ == 0] = 1
    m_ = rng.random(n) < 0.5
    outs = [np.empty(n, np.int64), np.empty(n, np.bool_), np.empty(n, np.float32), np.empty(n, np.int64)]
    runtime_cpu.compile_kernel(k)(a_, b_, m_, *outs)
    s_ = a_ * b_ + np.maximum(a_, b_) - np.abs(np.sign(a_))
    p_ = a_ ** np.clip(b_, 0, 5)
    np.testing.assert_array_equal(outs[0], np.where(m_, s_, -p_))
    np.testing.assert_array_equal(outs[1], ((a_ < b_) & ~m_) | (a_ == b_))
    np.testing.assert_allclose(outs[2], (a_ / b_).astype(np.float32))
    np.testing.assert_array_equal(outs[3], m_.astype(np.int64))


def test_casts_and_nan_semantics():
    x = np.array([np.nan, -np.inf, -2.5, -0.0, 0.0, 0.3, 1.7, np.inf, 3e9], np.float64)
    n = len(x)
    kb = KernelBuilder("casts", (n,))
    v = kb.load(kb.input("x", "f64", (n,)))
    kb.store(kb.output("b", "i1", (n,)), kb.op("cast", v, dtype="i1"))
    kb.store(kb.output("f", "f32", (n,)), kb.op("cast", v, dtype="f32"))
    kb.store(kb.output("mx", "f64", (n,)), kb.op("maximum", v, 0.5))
    kb.store(kb.output("mn", "f64", (n,)), kb.op("minimum", v, 0.5))
    kb.store(kb.output("r", "f64", (n,)), kb.op("relu", v))
    kb.store(kb.output("c", "f64", (n,)), kb.op("clamp", v, min=-1.0, max=1.0))
    kb.store(kb.output("s", "f64", (n,)), kb.op("sign", v))
    kb.store(kb.output("ne", "i1", (n,)), kb.op("ne", v, v))
    k = kb.build()
    outs = [np.empty(n, bool), np.empty(n, np.float32)] + [np.empty(n) for _ in range(5)] + [np.empty(n, bool)]
    runtime_cpu.compile_kernel(k)(x, *outs)
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(outs[0], x.astype(bool))
        np.testing.assert_array_equal(outs[1], x.astype(np.float32))
        np.testing.assert_array_equal(outs[2], np.maximum(x, 0.5))
        np.testing.assert_array_equal(outs[3], np.minimum(x, 0.5))
        np.testing.assert_array_equal(outs[4], np.maximum(x, 0.0))
        np.testing.assert_array_equal(outs[5], np.clip(x, -1, 1))
        np.testing.assert_array_equal(outs[6], (x > 0) * 1.0 - (x < 0))     # PyTorch's sign: NaN gives 0
        np.testing.assert_array_equal(outs[7], x != x)


@pytest.mark.parametrize("n", [0, 1, 7, 1000, 300_001])
def test_sizes_and_threading(n):
    kb = KernelBuilder("axpy", (n,))
    x = kb.load(kb.input("x", "f32", (n,)))
    y = kb.load(kb.input("y", "f32", (n,)))
    kb.store(kb.output("o", "f32", (n,)), kb.op("add", kb.op("mul", x, 3.0), kb.op("exp", y)))
    ck = runtime_cpu.compile_kernel(kb.build())
    rng = np.random.default_rng(n)
    x_, y_ = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    out = np.zeros(n, np.float32)
    ck(x_, y_, out)
    if n == 300_001:
        assert ck.parallel or runtime_cpu.num_threads() == 1
    np.testing.assert_allclose(out, x_ * 3 + np.exp(y_), rtol=1e-5, atol=1e-6)


def test_buffer_checks():
    kb = KernelBuilder("k", (4,))
    x = kb.load(kb.input("x", "f32", (4,)))
    kb.store(kb.output("o", "f32", (4,)), x)
    ck = runtime_cpu.compile_kernel(kb.build())
    with pytest.raises(TypeError, match="C-contiguous float32"):
        ck(np.zeros(4), np.zeros(4, np.float32))
    with pytest.raises(TypeError, match="takes 2 buffers"):
        ck(np.zeros(4, np.float32))


def test_concurrent_callers_of_parallel_kernels():
    import threading
    n = 400_000
    kb = KernelBuilder("conc", (n,))
    x = kb.load(kb.input("x", "f32", (n,)))
    kb.store(kb.output("o", "f32", (n,)), kb.op("exp", kb.op("mul", x, 0.5)))
    ck = runtime_cpu.compile_kernel(kb.build())
    xs = [np.full(n, i, np.float32) for i in range(4)]
    outs = [np.zeros(n, np.float32) for _ in range(4)]

    def work(i):
        for _ in range(5):
            ck(xs[i], outs[i])
    ts = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    [t.start() for t in ts]
    [t.join() for t in ts]
    for i in range(4):
        np.testing.assert_allclose(outs[i], np.exp(np.float32(i) * 0.5), rtol=1e-6)


@pytest.mark.parametrize("m", [300, 1100])
def test_one_hot_compare_of_loop_index_and_label(m):
    """``index == label`` inside the loop over the index is compared as f32 (loop_special, an
    f32 twin of the loop index; 1100 columns run as blocks of 512 plus a rest): labels out
    of range, negative, or too big for f32 must still match nothing."""
    from gradc.codegen.kernel_ir import KernelBuilder
    from .helpers import assert_kernel_matches
    n = 8
    kb = KernelBuilder("one_hot", (n, m))
    lab = kb.load(kb.input("lab", "i64", (n, 1)))
    x = kb.load(kb.input("x", "f32", (n, m)))
    eq, ne = kb.op("eq", kb.index(1), lab), kb.op("ne", lab, kb.index(1))
    kb.store(kb.output("picked", "f32", (n, 1)), kb.reduce("sum", kb.op("where", eq, x, 0.0), (1,)))
    kb.store(kb.output("others", "i64", (n, 1)), kb.reduce("sum", ne, (1,)))
    kb.store(kb.output("mask", "i1", (n, m)), eq)
    labels = np.array([[0], [m - 1], [m], [-1], [513], [(1 << 24) + 1], [1 << 40], [-(1 << 40)]], np.int64)
    x_ = np.random.default_rng(0).standard_normal((n, m)).astype(np.float32)
    outs = [np.zeros((n, 1), np.float32), np.zeros((n, 1), np.int64), np.zeros((n, m), bool)]
    kernel = kb.build()
    from gradc.codegen.llvm_cpu import emit_llvm
    text = emit_llvm(kernel)
    assert "fcmp oeq float" in text and '%"fi" = phi' in text      # the f32 index twin is tested
    got = assert_kernel_matches(kernel, [labels, x_, *outs])
    assert got[1][:, 0].tolist() == (labels != np.arange(m)).sum(1).tolist()
    assert got[1][:, 0].tolist()[:4] == [m - 1, m - 1, m, m]
