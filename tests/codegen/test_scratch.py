"""Row kernels keep an expensive value computed by a reduction pass in the store pass's
output (``scratch_plan``) instead of computing it again; results stay exact."""
import numpy as np

from gradc.codegen.kernel_ir import Index, KernelBuilder
from gradc.codegen.llvm_common import scratch_plan
from gradc.codegen.runtime_cpu import compile_kernel


def _softmax_grad_kernel(m, n, transposed_out=False):
    kb = KernelBuilder("smg", (m, n))
    x = kb.load(kb.input("x", "f32", (m, n)))
    mx = kb.reduce("max", x, (1,))
    e = kb.op("exp", kb.op("sub", x, mx))
    s = kb.reduce("sum", e, (1,))
    y = kb.op("sub", kb.op("div", e, s), kb.op("mul", x, 0.5))
    out = kb.output("y", "f32", (n, m) if transposed_out else (m, n))
    kb.store(out, y, index=Index((1, m)) if transposed_out else None)
    kb.store(kb.output("s", "f32", (m, 1)), s)
    return kb.build(), e


def _want(x):
    x64 = x.astype(np.float64)
    e = np.exp(x64 - x64.max(1, keepdims=True))
    s = e.sum(1, keepdims=True)
    return e / s - x64 * 0.5, s


def test_exp_is_kept_in_the_output_and_results_match():
    k, e = _softmax_grad_kernel(64, 300)
    plan = scratch_plan(k)
    assert list(plan) == [e.id] and plan[e.id].buffer.name == "y"
    x = np.random.default_rng(0).standard_normal((64, 300)).astype(np.float32) * 4
    y, s = np.empty((64, 300), np.float32), np.empty((64, 1), np.float32)
    compile_kernel(k)(x, y, s)
    want_y, want_s = _want(x)
    np.testing.assert_allclose(y, want_y, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(s, want_s, rtol=1e-5)


def test_no_scratch_through_an_output_that_is_not_row_major():
    k, _ = _softmax_grad_kernel(32, 40, transposed_out=True)
    assert scratch_plan(k) == {}
    x = np.random.default_rng(1).standard_normal((32, 40)).astype(np.float32)
    y, s = np.empty((40, 32), np.float32), np.empty((32, 1), np.float32)
    compile_kernel(k)(x, y, s)
    np.testing.assert_allclose(y.T, _want(x)[0], rtol=1e-5, atol=1e-6)


# -- which pass runs each store, and cheap values kept for the store pass -------------------------
from gradc.codegen.llvm_common import store_stages  # noqa: E402

from .helpers import assert_kernel_matches, buffers  # noqa: E402
from .programs import layernorm_grad  # noqa: E402


def _stage_names(k):
    return [sorted(s.buffer.name for s in stage) for stage in store_stages(k)]


def test_column_sums_run_in_the_pass_that_computes_their_operands():
    """layernorm's backward: dw needs xhat (after the variance pass), which the pass computing
    the row sums of gw*xhat computes too: dw accumulates there, not in the dx pass; db reads
    no reduction and runs in the first pass."""
    k = layernorm_grad("f32", n=9, m=300)
    stages = _stage_names(k)
    assert stages[-1] == ["dx"]
    assert stages[:3] == [["db"], [], ["dw"]]
    rng = np.random.default_rng(0)
    assert_kernel_matches(k, buffers(k, rng))


def test_a_store_stays_in_the_store_pass_when_moving_it_costs_more_work():
    """``a`` needs only the max (phase 0), but the exp-sum pass does not compute tanh(2x);
    the store pass computes it for ``b`` anyway, so ``a`` stays there."""
    m, n = 6, 200
    kb = KernelBuilder("k", (m, n))
    x = kb.load(kb.input("x", "f32", (m, n)))
    mx = kb.reduce("max", x, (1,))
    s = kb.reduce("sum", kb.op("exp", kb.op("sub", x, mx)), (1,))
    t = kb.op("tanh", kb.op("mul", x, 2.0))
    kb.store(kb.output("a", "f32", (m, n)), kb.op("mul", t, mx))
    kb.store(kb.output("b", "f32", (m, n)), kb.op("div", t, s))
    k = kb.build()
    assert _stage_names(k) == [[], [], ["a", "b"]]
    assert_kernel_matches(k, buffers(k, np.random.default_rng(1)))


def test_a_store_moves_to_an_earlier_pass_when_that_pass_computes_its_value():
    m, n = 5, 130
    kb = KernelBuilder("k", (m, n))
    x = kb.load(kb.input("x", "f32", (m, n)))
    mx = kb.reduce("max", x, (1,))
    e = kb.op("exp", kb.op("sub", x, mx))
    s = kb.reduce("sum", e, (1,))
    kb.store(kb.output("e", "f32", (m, n)), e)
    kb.store(kb.output("p", "f32", (m, n)), kb.op("div", kb.op("mul", x, x), s))
    k = kb.build()
    assert _stage_names(k) == [[], ["e"], ["p"]]
    assert_kernel_matches(k, buffers(k, np.random.default_rng(2)))


def test_a_cheap_chain_is_kept_when_it_saves_the_store_pass_enough_work():
    """dx = (g*w - a - xhat*b) * rstd: of the values earlier passes compute, keeping
    xhat = (x - mean) * rstd saves the store pass two ops (g*w would save one)."""
    k = layernorm_grad("f32", n=7, m=260)
    plan = scratch_plan(k)
    assert len(plan) == 1
    (vid, store), = plan.items()
    assert store.buffer.name == "dx"
    assert k.defs()[vid].op == "mul"
    assert_kernel_matches(k, buffers(k, np.random.default_rng(3)))
    k64 = layernorm_grad("f64", n=7, m=260)
    assert_kernel_matches(k64, buffers(k64, np.random.default_rng(4)))


def test_nothing_is_kept_for_a_single_op():
    """(x - mean) / std: the store pass would save one subtraction, less than a store and a load."""
    m, n = 4, 100
    kb = KernelBuilder("k", (m, n))
    x = kb.load(kb.input("x", "f32", (m, n)))
    xc = kb.op("sub", x, kb.reduce("mean", x, (1,)))
    var = kb.reduce("mean", kb.op("mul", xc, xc), (1,))
    kb.store(kb.output("y", "f32", (m, n)), kb.op("div", xc, kb.op("sqrt", var)))
    k = kb.build()
    assert scratch_plan(k) == {}
    assert_kernel_matches(k, buffers(k, np.random.default_rng(5)))
