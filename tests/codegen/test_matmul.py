"""Matmul-shaped kernels on the CPU: BLAS, generated blocked kernel and numpy.matmul paths."""
import numpy as np
import pytest

from gradc.codegen import matmul_cpu, runtime_cpu
from gradc.codegen.kernel_ir import build_matmul, match_contraction

from .helpers import TOL

NP = {"f32": np.float32, "f64": np.float64}
SHAPES = [((3, 4), (4, 5)), ((1, 1), (1, 1)), ((17, 33), (33, 65)), ((2, 5, 6), (6, 7)),
          ((3, 1, 4, 5), (2, 5, 3)), ((6,), (6, 4)), ((4, 6), (6,)), ((6,), (6,)), ((70, 300), (300, 40))]


@pytest.mark.parametrize("mode", ["blas", "generated", "numpy"])
@pytest.mark.parametrize("dtype", ["f32", "f64"])
@pytest.mark.parametrize("sa,sb", SHAPES)
def test_matmul_modes(mode, dtype, sa, sb):
    rng = np.random.default_rng(len(sa) * 10 + len(sb))
    a = rng.standard_normal(sa).astype(NP[dtype])
    b = rng.standard_normal(sb).astype(NP[dtype])
    k = build_matmul("mm", sa, sb, dtype)
    want = np.matmul(a.astype(np.float64), b.astype(np.float64))
    out = np.empty(want.shape, NP[dtype])
    matmul_cpu.ContractionPlan(k, mode)(a, b, out)
    np.testing.assert_allclose(out, want, **TOL[dtype])


@pytest.mark.parametrize("dtype", ["f32", "f64"])
@pytest.mark.parametrize("ta,tb", [(False, True), (True, False), (True, True)])
def test_transposed_operands(dtype, ta, tb):
    """a.T / b.T given as strided views of their storage: BLAS transposes, no copies."""
    M, N, K = 9, 11, 13
    rng = np.random.default_rng(0)
    a_store = rng.standard_normal((K, M) if ta else (M, K)).astype(NP[dtype])
    b_store = rng.standard_normal((N, K) if tb else (K, N)).astype(NP[dtype])
    a = a_store.T if ta else a_store
    b = b_store.T if tb else b_store
    k = build_matmul("mmT", (M, K), (K, N), dtype, a_strides=(1, M) if ta else None,
                     b_strides=(1, K) if tb else None)
    plan = runtime_cpu.compile_kernel(k)
    assert isinstance(plan, matmul_cpu.ContractionPlan) and plan.blas is not None
    out = np.empty((M, N), NP[dtype])
    plan(a_store, b_store, out)
    np.testing.assert_allclose(out, a.astype(np.float64) @ b, **TOL[dtype])


def test_unblasable_strides_fall_back_to_numpy():
    base = np.random.rand(8, 12)
    a_view = base[::2, ::3]              # (4, 4), element strides (24, 3): no unit stride
    k = build_matmul("odd", (4, 4), (4, 5), "f64", a_strides=(24, 3), a_storage=(8, 12))
    plan = matmul_cpu.ContractionPlan(k)
    assert plan.blas is None
    b = np.random.rand(4, 5)
    out = np.empty((4, 5))
    plan(base, b, out)
    np.testing.assert_allclose(out, a_view @ b)


@pytest.mark.parametrize("mode", ["blas", "generated"])
def test_matmul_with_fused_epilogue(mode):
    """relu(x @ w + bias) as one contraction kernel: BLAS product + generated epilogue."""
    M, N, K = 20, 30, 40

    def epi(kb, acc, axes):
        bias = kb.load(kb.input("bias", "f32", (N,)), index=(0, 1, 0))
        return kb.op("relu", kb.op("add", acc, bias))

    k = build_matmul("linear_relu", (M, K), (K, N), "f32", epilogue=epi)
    c = match_contraction(k)
    assert c is not None
    rng = np.random.default_rng(2)
    x = rng.standard_normal((M, K)).astype(np.float32)
    w = rng.standard_normal((K, N)).astype(np.float32)
    bias = rng.standard_normal(N).astype(np.float32)
    out = np.empty((M, N), np.float32)
    names = [p.name for p in k.params]
    arrays = {"a": x, "b": w, "bias": bias, "out": out}
    plan = matmul_cpu.ContractionPlan(k, mode)
    assert plan.epilogue is not None
    plan(*[arrays[n] for n in names])
    np.testing.assert_allclose(out, np.maximum(x @ w + bias, 0), rtol=1e-4, atol=1e-5)


def test_generic_lowering_of_contraction_matches():
    """The plain loop lowering (no matmul special case) computes the same product."""
    from gradc.codegen import llvm_cpu
    from gradc.codegen.runtime_cpu import CompiledKernel, jit_llvm_ir
    k = build_matmul("naive", (7, 9), (9, 5), "f64")
    module, info = llvm_cpu.lower_kernel(k)
    ee, addrs = jit_llvm_ir(str(module), [info.name])
    ck = CompiledKernel(k, info, ee, addrs[info.name])
    a, b = np.random.rand(7, 9), np.random.rand(9, 5)
    out = np.empty((7, 5))
    ck(a, b, out)
    np.testing.assert_allclose(out, a @ b, rtol=1e-12)
