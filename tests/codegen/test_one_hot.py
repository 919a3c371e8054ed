"""One-hot patterns in row kernels: a one-hot sum ``sum_i where(i == label, v(i), 0)`` is read
at the label (``llvm_common.gathered``), and a stored ``a + where(i == label, w, 0)`` stores
``a`` in its loop and adds ``w`` at the label after it (``one_hot_addend``, CPU).  Results must
equal the reference for labels inside the row, outside it, and with the compare either way."""
import numpy as np
import pytest

from gradc.codegen import gpusim
from gradc.codegen.kernel_ir import KernelBuilder, Reduce
from gradc.codegen.llvm_common import gathered, one_hot_addend
from gradc.codegen.llvm_cpu import emit_llvm

from .helpers import TOL, assert_kernel_matches

LABELS = [0, 5, -1, 1 << 40, -(1 << 40), 3, 2, 1]


def _labels(m):
    return np.array([[v if v not in (5,) else m - 1] for v in LABELS] + [[m]], np.int64)


def _xent_kernel(dtype, n, m, label_first=False):
    """Softmax cross-entropy rows: max, sum of exp, the picked (shifted) logit, and the
    gradient ``softmax/n - one_hot/n``."""
    kb = KernelBuilder(f"xent_{dtype}", (n, m))
    lab = kb.load(kb.input("lab", "i64", (n, 1)))
    x = kb.load(kb.input("x", dtype, (n, m)))
    hot = kb.op("eq", lab, kb.index(1)) if label_first else kb.op("eq", kb.index(1), lab)
    mx = kb.reduce("max", x, (1,))
    e = kb.op("exp", kb.op("sub", x, mx))
    s = kb.reduce("sum", e, (1,))
    picked = kb.reduce("sum", kb.op("where", hot, kb.op("sub", x, mx), 0.0), (1,))
    c = kb.constant(-1.0 / n, dtype)
    g = kb.op("add", kb.op("mul", kb.op("div", e, s), 1.0 / n), kb.op("where", hot, c, kb.constant(0.0, dtype)))
    kb.store(kb.output("picked", dtype, (n, 1)), picked)
    kb.store(kb.output("s", dtype, (n, 1)), s)
    kb.store(kb.output("g", dtype, (n, m)), g)
    return kb.build()


@pytest.mark.parametrize("dtype", ["f32", "f64"])
@pytest.mark.parametrize("label_first", [False, True])
def test_cross_entropy_rows_read_the_label_instead_of_comparing(dtype, label_first):
    n, m = 9, 1100
    k = _xent_kernel(dtype, n, m, label_first)
    reds = [s for s in k.body if isinstance(s, Reduce)]
    assert [gathered(k, r) is not None for r in reds] == [False, False, True]
    g_store = next(s for s in k.body if getattr(s, "buffer", None) is not None and s.buffer.name == "g")
    assert one_hot_addend(k, g_store) is not None
    # no compare of the loop index with the label is left (loop_special's f32 index twin)
    text = emit_llvm(k)
    assert '%"fi"' not in text and "fcmp oeq" not in text
    labels = _labels(m)
    x = np.random.default_rng(0).standard_normal((n, m)) * 3
    npdt = {"f32": np.float32, "f64": np.float64}[dtype]
    outs = [np.full((n, 1), 7, npdt), np.full((n, 1), 7, npdt), np.full((n, m), 7, npdt)]
    picked, s, g = assert_kernel_matches(k, [labels, x.astype(npdt), *outs])
    lab = labels[:, 0]
    inside = (lab >= 0) & (lab < m)
    shifted = x - x.max(1, keepdims=True)
    want = np.where(inside, shifted[np.arange(n), np.clip(lab, 0, m - 1)], 0.0)
    np.testing.assert_allclose(picked[:, 0], want, **TOL[dtype])
    rows_with_label = np.flatnonzero(inside)
    p = np.exp(shifted) / np.exp(shifted).sum(1, keepdims=True) / n
    p[rows_with_label, lab[inside]] -= 1.0 / n
    np.testing.assert_allclose(g, p, **TOL[dtype])


def test_a_one_hot_of_a_varying_value_in_a_store_and_a_nan_row():
    """The addend varies along the row (``x * 2`` at the label); a NaN elsewhere in a row stays
    where it is and the label's element still gets its addend."""
    n, m = 4, 70
    kb = KernelBuilder("hot_store", (n, m))
    lab = kb.load(kb.input("lab", "i64", (n, 1)))
    x = kb.load(kb.input("x", "f32", (n, m)))
    mean = kb.reduce("mean", x, (1,))
    hot = kb.op("eq", kb.index(1), lab)
    kb.store(kb.output("y", "f32", (n, m)), kb.op("add", kb.op("where", hot, kb.op("mul", x, 2.0), 0.0),
                                                  kb.op("sub", x, mean)))
    k = kb.build()
    labels = np.array([[3], [69], [70], [-2]], np.int64)
    xs = np.random.default_rng(1).standard_normal((n, m)).astype(np.float32)
    xs[1, 10] = np.nan
    (y,) = assert_kernel_matches(k, [labels, xs, np.zeros((n, m), np.float32)])
    assert np.isnan(y[1]).all()          # the row's mean is NaN
    np.testing.assert_allclose(y[0, 3], xs[0, 3] * 2 + (xs[0, 3] - xs[0].mean()), rtol=1e-5)
    np.testing.assert_allclose(y[2:], xs[2:] - xs[2:].mean(1, keepdims=True), rtol=1e-5, atol=1e-6)


def test_other_selects_are_not_one_hot():
    """``where(i < label, ...)``, a non-zero other branch, or a sum over two axes keep the loop."""
    n, m = 3, 40
    kb = KernelBuilder("not_hot", (n, 2, m))
    lab = kb.load(kb.input("lab", "i64", (n, 1, 1)))
    x = kb.load(kb.input("x", "f32", (n, 2, m)))
    below = kb.reduce("sum", kb.op("where", kb.op("lt", kb.index(2), lab), x, 0.0), (1, 2))
    ones = kb.reduce("sum", kb.op("where", kb.op("eq", kb.index(2), lab), x, 1.0), (1, 2))
    both = kb.reduce("sum", kb.op("where", kb.op("eq", kb.index(2), lab), x, 0.0), (1, 2))
    for name, v in (("below", below), ("ones", ones), ("both", both)):
        kb.store(kb.output(name, "f32", (n, 1, 1)), v)
    k = kb.build()
    assert all(gathered(k, r) is None for r in k.body if isinstance(r, Reduce))
    labels = np.array([[[0]], [[39]], [[40]]], np.int64)
    xs = np.random.default_rng(2).standard_normal((n, 2, m)).astype(np.float32)
    assert_kernel_matches(k, [labels, xs] + [np.zeros((n, 1, 1), np.float32) for _ in range(3)])


def test_gathered_sums_in_the_gpu_simulator():
    n, m = 9, 300
    k = _xent_kernel("f32", n, m)
    labels = _labels(m)
    x = np.random.default_rng(3).standard_normal((n, m)).astype(np.float32)
    arrs = [labels, x, np.zeros((n, 1), np.float32), np.zeros((n, 1), np.float32), np.zeros((n, m), np.float32)]
    want = assert_kernel_matches(k, [a.copy() for a in arrs])
    for block in ((32, 1, 1), (64, 1, 1)):
        sim = [a.copy() for a in arrs]
        gpusim.run(k, sim, block=block)
        for got, w in zip(sim[2:], want):
            np.testing.assert_allclose(got, w, rtol=1e-5, atol=1e-7)


def _random_one_hot_kernel(seed):
    """Row statistics (max, sum of exp, mean), a one-hot sum of a random expression, a one-hot
    addend on a stored expression, and an extra store reading a statistic, over random sizes."""
    rng = np.random.default_rng(seed)
    dtype = ["f32", "f64"][seed % 2]
    m, n = int(rng.integers(1, 7)), int(rng.choice([1, 7, 33, 300, 1100]))
    kb = KernelBuilder(f"hot{seed}", (m, n))
    lab = kb.load(kb.input("lab", "i64", (m, 1)))
    x = kb.load(kb.input("x", dtype, (m, n)))
    hot = kb.op("eq", kb.index(1), lab) if rng.random() < 0.5 else kb.op("eq", lab, kb.index(1))
    zero = kb.constant(0.0, dtype)
    stats = [kb.reduce("max", x, (1,)), kb.reduce("mean", x, (1,))]
    e = kb.op("exp", kb.op("sub", x, stats[0]))
    stats.append(kb.reduce("sum", e, (1,)))
    pick = [x, kb.op("sub", x, stats[0]), kb.op("mul", e, x)][int(rng.integers(3))]
    kb.store(kb.output("picked", dtype, (m, 1)), kb.reduce("sum", kb.op("where", hot, pick, zero), (1,)))
    addend = [kb.constant(-1.5, dtype), x, kb.op("div", stats[1], kb.constant(3.0, dtype))][int(rng.integers(3))]
    base = [kb.op("div", e, stats[2]), kb.op("sub", x, stats[1]), kb.op("mul", x, 2.0)][int(rng.integers(3))]
    terms = [base, kb.op("where", hot, addend, zero)]
    if rng.random() < 0.5:
        terms.reverse()
    kb.store(kb.output("g", dtype, (m, n)), kb.op("add", *terms))
    kb.store(kb.output("s", dtype, (m, 1)), stats[int(rng.integers(3))])
    kernel = kb.build()
    labels = rng.choice([0, n - 1, n, -1, 1 << 40, n // 2], size=(m, 1)).astype(np.int64)
    npdt = {"f32": np.float32, "f64": np.float64}[dtype]
    xs = (rng.standard_normal((m, n)) * 3).astype(npdt)
    if rng.random() < 0.3:
        xs[rng.integers(m), rng.integers(n)] = rng.choice([np.nan, np.inf, -np.inf])
    outs = [np.full((m, 1), 7, npdt), np.full((m, n), 7, npdt), np.full((m, 1), 7, npdt)]
    return kernel, [labels, xs, *outs]


@pytest.mark.parametrize("seed", range(40))
def test_random_one_hot_kernels_match_the_reference(seed):
    kernel, arrays = _random_one_hot_kernel(seed)
    assert sum(gathered(kernel, r) is not None for r in kernel.body if isinstance(r, Reduce)) == 1
    g_store = next(s for s in kernel.body if getattr(s, "buffer", None) is not None and s.buffer.name == "g")
    assert (one_hot_addend(kernel, g_store) is not None) == (kernel.space[1] > 1)   # a unit row: stride 0
    want = assert_kernel_matches(kernel, [a.copy() for a in arrays])
    if seed % 4 == 0:
        sim = [a.copy() for a in arrays]
        gpusim.run(kernel, sim, block=(32, 1, 1))
        for got, w, p in zip(sim[2:], want, kernel.outputs):
            np.testing.assert_allclose(got, w, equal_nan=True, err_msg=f"simulator %{p.name}", **TOL[p.dtype])
