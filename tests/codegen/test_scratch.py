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
