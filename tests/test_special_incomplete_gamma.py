"""The regularized incomplete gamma functions (``ops/incomplete_gamma.py``): torch.igamma/igammac,
their Tensor methods and in-place forms, special.gammainc/gammaincc: PyTorch's values over the
regimes of its kernel (series, continued fraction, Temme's expansion) and at the edges of the
domain, its gradient in x, its missing one in a, its argument and dtype errors.
Gradients against finite differences are in ``test_gradcheck_ops.py``."""
from __future__ import annotations

import math

import numpy as np
import pytest

import gradc

torch = pytest.importorskip("torch")

EDGES = [(0, 0), (0, 2), (1, 0), (25, 24), (25, 30), (250, 251), (250, 300), (np.inf, 1), (np.inf, np.inf),
         (np.nan, 1), (-1, 1), (1, -1), (1e-3, 2), (3, np.nan), (2, np.inf), (0.3, 0.4), (0.3, 0.9), (5, 0.3)]


def operands(dtype):
    rng = np.random.default_rng(11)
    a = np.concatenate([rng.uniform(0, 5, 150), rng.uniform(0, 300, 150), rng.uniform(20, 400, 100),
                        [e[0] for e in EDGES]])
    x = np.concatenate([rng.uniform(0, 6, 150), rng.uniform(0, 300, 150), a[300:400] * rng.uniform(0.8, 1.2, 100),
                        [e[1] for e in EDGES]])
    return a.astype(dtype), x.astype(dtype)


@pytest.mark.parametrize("name", ["igamma", "igammac"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.float16])
def test_values_match_torch(name, dtype):
    """Equal up to the rounding of the terms of the exponent a log x - x - lgamma(a) (lgamma's
    last bit differs between libm's and Python's math), which scales with the largest of them."""
    a, x = operands(dtype)
    ours = getattr(gradc, name)(gradc.tensor(a), gradc.tensor(x)).numpy()
    theirs = getattr(torch, name)(torch.tensor(a), torch.tensor(x)).numpy()
    assert ours.dtype == theirs.dtype
    np.testing.assert_array_equal(np.isnan(ours), np.isnan(theirs))
    ok = ~np.isnan(theirs)
    mine, ref = ours[ok].astype(np.float64), theirs[ok].astype(np.float64)
    a64, x64 = a[ok].astype(np.float64), x[ok].astype(np.float64)
    with np.errstate(all="ignore"):
        terms = [np.abs(a64 * np.log(x64)), np.abs(x64), np.abs([math.lgamma(v) if 0 < v < np.inf else 0.0 for v in a64])]
        scale = np.nan_to_num(np.maximum.reduce([np.ones_like(a64)] + terms), posinf=1.0)
    bound = 16 * np.finfo(dtype).eps * scale * np.abs(ref) + np.finfo(dtype).tiny
    assert (np.abs(mine - ref) <= bound).all(), np.max(np.abs(mine - ref) / bound)


def test_known_values():
    a = gradc.tensor([1.0, 1.0, 0.5], dtype=gradc.float64)
    x = gradc.tensor([1.0, 3.0, 2.0], dtype=gradc.float64)
    np.testing.assert_allclose(gradc.special.gammainc(a, x).numpy(),
                               [1 - np.exp(-1.0), 1 - np.exp(-3.0), 0.9544997361036416], rtol=1e-14)
    np.testing.assert_allclose((gradc.igamma(a, x) + gradc.igammac(a, x)).numpy(), 1.0, rtol=1e-15)


@pytest.mark.parametrize("spelling", ["igamma", "igammac", "gammainc", "gammaincc", "method", "method_c"])
def test_gradient_in_x_and_none_in_a(spelling):
    def call(m, a, x):
        return {"igamma": lambda: m.igamma(a, x), "igammac": lambda: m.igammac(a, x),
                "gammainc": lambda: m.special.gammainc(a, x), "gammaincc": lambda: m.special.gammaincc(a, x),
                "method": lambda: a.igamma(x), "method_c": lambda: a.igammac(x)}[spelling]()

    results = []
    for m in (torch, gradc):
        a = m.tensor([2.0, 3.0, 0.5], dtype=m.float64, requires_grad=True)
        x = m.tensor([[1.5], [2.5]], dtype=m.float64, requires_grad=True)
        y = call(m, a.detach(), x)
        (gx,) = m.autograd.grad(y.sum(), x)
        y2 = call(m, a, x)
        with pytest.raises(NotImplementedError) as error:
            y2.sum().backward()
        results.append((type(y.grad_fn).__name__, gx.detach().numpy(), str(error.value)))
    assert results[0][0] == results[1][0] and results[0][2] == results[1][2]
    np.testing.assert_allclose(results[1][1], results[0][1], rtol=1e-13)


def test_errors_and_dtypes_match_torch():
    cases = [
        lambda m: m.igamma(m.tensor([2.0]), 2),
        lambda m: m.tensor([2.0]).igamma(2.0),
        lambda m: m.special.gammainc(m.tensor([2.0]), 2),
        lambda m: m.special.gammaincc(2, m.tensor([2.0])),
        lambda m: m.tensor([2.0]).igammac_(2),
        lambda m: m.igamma(m.tensor([1, 2]), m.tensor([1, 2])),
        lambda m: m.tensor([1, 2]).igamma_(m.tensor([2.0, 3.0])),
    ]
    for make in cases:
        with pytest.raises(Exception) as expected:
            make(torch)
        with pytest.raises(type(expected.value)) as got:
            make(gradc)
        assert str(got.value) == str(expected.value)
    for make in (lambda m: m.igamma(m.tensor([1.0, 2.0]), m.tensor([1, 2])),
                 lambda m: m.igammac(m.tensor([1.0, 2.0], dtype=m.float16), m.tensor([1.0, 2.0])),
                 lambda m: m.tensor([1.0, 2.0], dtype=m.float64).igamma_(m.tensor([1.0, 3.0]))):
        ours, theirs = make(gradc), make(torch)
        assert str(ours.dtype) == str(theirs.dtype)
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-6)


def test_under_compile():
    @gradc.compile
    def f(a, x):
        return (gradc.special.gammainc(a, x) * x).sum()

    a = gradc.tensor([0.5, 2.0, 30.0], dtype=gradc.float64)
    x = gradc.tensor([0.7, 1.5, 28.0], dtype=gradc.float64, requires_grad=True)
    f(a, x).backward()
    xt = torch.tensor(x.detach().numpy(), requires_grad=True)
    (torch.special.gammainc(torch.tensor(a.numpy()), xt) * xt).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy(), rtol=1e-13)
