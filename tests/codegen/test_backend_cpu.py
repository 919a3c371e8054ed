"""@gradc.compile on the CPU backend: fused regions become native kernels and match eager mode."""
import numpy as np
import pytest

import gradc


def mlp_loss(x, w, b):
    h = (x @ w + b).relu()
    return (h.softmax(-1) * 2.0 + h.tanh()).mean()


def test_compiled_forward_backward_matches_eager():
    from gradc.codegen.backend_cpu import CPUBackend
    rng = np.random.default_rng(0)
    args = [gradc.tensor(rng.standard_normal(s).astype(np.float32), requires_grad=True)
            for s in ((32, 24), (24, 16), (16,))]
    cf = gradc.compile(mlp_loss)
    y = cf(*args)
    y.backward()
    grads = [a.grad.numpy().copy() for a in args]
    spec = next(iter(cf._cache.values()))
    assert isinstance(spec.backend, CPUBackend) and spec.backend.kernels, "no native kernels were built"
    for a in args:
        a.grad = None
    y2 = mlp_loss(*args)
    y2.backward()
    np.testing.assert_allclose(float(y), float(y2), rtol=1e-5)
    for g, a in zip(grads, args):
        np.testing.assert_allclose(g, a.grad.numpy(), rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("dtype", [gradc.float32, gradc.float64])
def test_matmul_op_goes_native(dtype):
    def f(a, b):
        return a @ b
    a = gradc.randn(5, 7, dtype=dtype)
    b = gradc.randn(7, 3, dtype=dtype)
    np.testing.assert_allclose(gradc.compile(f)(a, b).numpy(), a.numpy() @ b.numpy(), rtol=1e-5)
