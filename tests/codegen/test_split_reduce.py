"""Reductions over the leading axis split into partial slices (so both cores share them) give the same results."""
import numpy as np
import pytest

import gradc
from gradc.codegen.kernel_ir import KernelBuilder
from gradc.codegen.runtime_cpu import compile_kernel
from gradc.codegen.split_reduce import MIN_ELEMENTS, split_reduction


def _kernel(kind, n, with_store=True, derived=False):
    kb = KernelBuilder("k", (n,))
    x = kb.load(kb.input("x", "f32", (n,)))
    y = kb.op("mul", x, 3.0)
    r = kb.reduce(kind, y, (0,))
    kb.store(kb.output("r", "f32", ()), kb.op("log", r) if derived else r)
    if with_store:
        kb.store(kb.output("e", "f32", (n,)), kb.op("add", y, 1.0))
    return kb.build()


@pytest.mark.parametrize("kind", ["sum", "mean", "max", "min"])
def test_split_matches_numpy(kind):
    n = MIN_ELEMENTS * 2
    x = np.random.default_rng(0).standard_normal(n).astype(np.float32)
    k = _kernel(kind, n)
    split = split_reduction(k)
    assert split is not None
    sk, combine = split
    assert sk.space == (64, n // 64) and set(combine) == {"r"}
    partial, e = np.empty(64, np.float32), np.empty(n, np.float32)
    compile_kernel(sk)(x, partial, e)
    got = combine["r"].reduce(partial.astype(np.float64))
    want = {"sum": np.sum, "mean": np.mean, "max": np.max, "min": np.min}[kind](x.astype(np.float64) * 3)
    assert abs(got - want) <= 1e-5 * max(1.0, abs(want))
    np.testing.assert_allclose(e, x * 3 + 1, rtol=1e-6)


def test_split_does_not_apply_where_it_would_be_wrong():
    assert split_reduction(_kernel("sum", MIN_ELEMENTS, derived=True)) is None   # log(sum) is not foldable
    assert split_reduction(_kernel("sum", 1000)) is None                          # too small to bother


def test_compiled_chain_loss_with_split_reduction_matches_eager():
    x = gradc.randn(MIN_ELEMENTS * 2, requires_grad=True)
    xe = x.detach().clone().requires_grad_()
    f = gradc.compile(lambda t: ((t + 2) * (t + 2) * 2).mean())
    loss = f(x)
    loss.backward()
    ((xe + 2) * (xe + 2) * 2).mean().backward()
    assert abs(loss.item() - 10.0) < 0.05 and abs(loss.item() - ((xe.detach() + 2) ** 2 * 2).mean().item()) < 1e-4
    np.testing.assert_allclose(x.grad.numpy(), xe.grad.numpy(), rtol=1e-5, atol=1e-9)


def _column_kernel(m, n, kind):
    """x[m, n] minus a per-row value, reduced over rows (``kind``) and over everything (sum)."""
    kb = KernelBuilder("cols", (m, n))
    x = kb.load(kb.input("x", "f32", (m, n)))
    row = kb.load(kb.input("row", "f32", (m, 1)))
    y = kb.op("sub", x, row)
    r = kb.reduce(kind, y, (0,))
    kb.store(kb.output("r", "f32", (n,)), r)
    return kb.build()


@pytest.mark.parametrize("kind", ["sum", "max"])
def test_column_reduction_is_split_over_row_slices(kind):
    m, n = 4096, 512
    rng = np.random.default_rng(1)
    x = rng.standard_normal((m, n)).astype(np.float32)
    row = rng.standard_normal((m, 1)).astype(np.float32)
    sk, combine = split_reduction(_column_kernel(m, n, kind))
    assert sk.space == (16, m // 16, n) and sk.reduce_axes == (1,)
    partial = np.empty((16, n), np.float32)
    compile_kernel(sk)(x, row, partial)
    got = combine["r"].reduce(partial, axis=0)
    want = {"sum": np.sum, "max": np.max}[kind](x.astype(np.float64) - row, axis=0)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-3)


def test_two_dimensional_full_reduction_is_split():
    m, n = 2048, 1024
    kb = KernelBuilder("all", (m, n))
    x = kb.load(kb.input("x", "f32", (m, n)))
    col = kb.load(kb.input("col", "f32", (n,)))
    kb.store(kb.output("s", "f32", ()), kb.op("div", kb.reduce("sum", kb.op("mul", x, col), (0, 1)), 2.0))
    sk, combine = split_reduction(kb.build())
    assert sk.space == (16, m // 16, n) and sk.reduce_axes == (1, 2)
    rng = np.random.default_rng(2)
    xv, cv = rng.standard_normal((m, n)).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    partial = np.empty((16,), np.float32)
    compile_kernel(sk)(xv, cv, partial)
    want = (xv.astype(np.float64) * cv).sum() / 2
    assert abs(combine["s"].reduce(partial.astype(np.float64)) - want) <= 1e-4 * np.abs(xv * cv).sum()


def test_row_reductions_are_not_split():
    kb = KernelBuilder("rows", (4096, 1024))
    x = kb.load(kb.input("x", "f32", (4096, 1024)))
    kb.store(kb.output("r", "f32", (4096, 1)), kb.reduce("sum", x, (1,)))
    assert split_reduction(kb.build()) is None     # rows already run in parallel
