"""set_default_dtype/get_default_dtype and the NumPy-style keyword aliases (axis=, keepdims=),
eagerly and under @gradc.compile, against PyTorch where it is installed."""
import numpy as np
import pytest

import gradc


@pytest.fixture
def float64_default():
    gradc.set_default_dtype(gradc.float64)
    yield
    gradc.set_default_dtype(gradc.float32)


def test_default_dtype_changes_factories_scalars_and_printing(float64_default):
    assert gradc.get_default_dtype() is gradc.float64
    assert gradc.tensor([1.0, 2.0]).dtype is gradc.float64
    assert gradc.zeros(2).dtype is gradc.float64 and gradc.randn(2).dtype is gradc.float64
    assert (gradc.arange(3) * 1.5).dtype is gradc.float64
    assert (gradc.tensor(2) / 3).dtype is gradc.float64
    assert gradc.nn.Linear(2, 2).weight.dtype is gradc.float64
    assert repr(gradc.tensor([1.0, 2.0])) == "tensor([1., 2.])"
    assert repr(gradc.tensor([1.0, 2.0], dtype=gradc.float32)) == "tensor([1., 2.], dtype=torch.float32)"
    assert repr(gradc.tensor([], dtype=gradc.float32)) == "tensor([], dtype=torch.float32)"
    assert repr(gradc.tensor([])) == "tensor([])"


def test_default_dtype_restored_and_errors():
    gradc.set_default_dtype(gradc.float64)
    gradc.set_default_dtype(gradc.float32)
    assert gradc.tensor([1.5]).dtype is gradc.float32 and repr(gradc.tensor([1.5])) == "tensor([1.5000])"
    with pytest.raises(TypeError, match="^only floating-point types are supported as the default type$"):
        gradc.set_default_dtype(gradc.int64)
    with pytest.raises(TypeError, match="^invalid dtype object: only floating-point types"):
        gradc.set_default_dtype("float64")
    assert gradc.get_default_dtype() is gradc.float32


def test_compiled_function_recompiles_when_the_default_dtype_changes():
    f = gradc.compile(lambda x: x * 1.5 + gradc.ones(2))
    a = gradc.arange(2)
    assert f(a).dtype is gradc.float32
    gradc.set_default_dtype(gradc.float64)
    try:
        out = f(a)
    finally:
        gradc.set_default_dtype(gradc.float32)
    assert out.dtype is gradc.float64 and out.tolist() == [1.0, 2.5]
    assert "default dtype changed from torch.float32 to torch.float64" in f.explain()
    assert f(a).dtype is gradc.float32


def test_axis_and_keepdims_aliases_eagerly():
    x = gradc.arange(6.0).reshape(2, 3)
    assert x.sum(axis=0, keepdims=True).tolist() == [[3.0, 5.0, 7.0]]
    assert gradc.sum(x, axis=1).tolist() == [3.0, 12.0]
    assert gradc.cat([x, x], axis=1).shape == (2, 6)
    assert gradc.stack([x, x], axis=0).shape == (2, 2, 3)
    assert x.unsqueeze(axis=0).shape == (1, 2, 3)
    assert x.mean(axis=(0, 1)).item() == 2.5
    values, indices = gradc.max(x, axis=1)
    assert values.tolist() == [2.0, 5.0] and indices.tolist() == [2, 2]
    assert x.cumsum(axis=0).tolist() == [[0.0, 1.0, 2.0], [3.0, 5.0, 7.0]]
    assert x.softmax(axis=0).shape == (2, 3)
    with pytest.raises(TypeError, match="multiple values for argument 'dim'"):
        x.sum(dim=0, axis=1)


def test_axis_alias_under_compile_with_gradients():
    w = gradc.randn(3, 4, dtype=gradc.float64, requires_grad=True)
    f = gradc.compile(lambda a: (a * a).sum(axis=1, keepdims=True).mean(axis=0))
    f(w).sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), 2 * w.detach().numpy() / 3, rtol=1e-12)


def test_axis_alias_matches_pytorch():
    torch = pytest.importorskip("torch")
    data = np.random.default_rng(0).standard_normal((3, 4))
    for name, kwargs in [("sum", dict(axis=1, keepdims=True)), ("mean", dict(axis=0)), ("amax", dict(axis=1)),
                         ("logsumexp", dict(axis=1)), ("std", dict(axis=0, keepdims=True)),
                         ("argmax", dict(axis=1)), ("cumsum", dict(axis=1)), ("flip", dict(dims=[0]))]:
        ours = getattr(gradc.tensor(data), name)(**kwargs)
        theirs = getattr(torch.tensor(data), name)(**kwargs)
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-12, err_msg=name)
