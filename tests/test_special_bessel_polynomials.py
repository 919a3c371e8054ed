"""torch.special's Bessel and Airy functions (``ops/bessel.py``) and orthogonal polynomials
(``ops/polynomials.py``): PyTorch's values in float64 and float32 over wide grids and at zeros,
infinities and NaN, its result dtypes, its missing gradients (no grad_fn, results that never
require grad) and its dtype errors."""
from __future__ import annotations

import math

import numpy as np
import pytest

import gradc
from gradc.ops.bessel import FUNCTIONS as BESSEL
from gradc.ops.polynomials import POLYNOMIALS

torch = pytest.importorskip("torch")

EDGES = [0.0, -0.0, 1e-7, -1e-7, 1e-300, 1.0, -1.0, 2.0, 2.09, -2.09, 5.0, -5.0, 8.0, -8.0, 8.32, 103.0, 104.0,
         700.0, 1e5, math.nan, math.inf, -math.inf]
DEGREES = [-3.0, -1.0, 0.0, 1.0, 2.0, 3.0, 4.7, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 15.0, 40.0, 129.0, 200.0, 513.0,
           math.nan, math.inf]


def bessel_grid(dtype):
    rng = np.random.default_rng(3)
    return np.concatenate([rng.uniform(-12, 12, 300), rng.uniform(-200, 200, 100), EDGES]).astype(dtype)


def polynomial_grid(dtype):
    rng = np.random.default_rng(5)
    x = np.concatenate([rng.uniform(-1.5, 1.5, 30), [-1, 1, 0, 0.5, 1e-20, -1e-20, 0.9999999, 1 - 2 ** -52, 2, -2,
                                                      math.nan, math.inf, -math.inf]])
    return x.astype(dtype)[:, None], np.asarray(DEGREES, dtype=dtype)[None, :]


def assert_matches(mine, theirs, rtol, atol):
    """Same dtype, same NaN and infinity pattern, values within ``rtol``/``atol`` of PyTorch's."""
    mine, theirs = mine.numpy(), theirs.numpy()
    assert mine.dtype == theirs.dtype
    np.testing.assert_array_equal(np.isnan(mine), np.isnan(theirs))
    finite = np.isfinite(theirs)
    np.testing.assert_array_equal(mine[~finite & ~np.isnan(theirs)], theirs[~finite & ~np.isnan(theirs)])
    np.testing.assert_allclose(mine[finite], theirs[finite], rtol=rtol, atol=atol)


# ---- Bessel and Airy functions ----------------------------------------------------------------------
@pytest.mark.parametrize("name", sorted(BESSEL))
@pytest.mark.parametrize("dtype, rtol, atol", [(np.float64, 2e-14, 1e-300), (np.float32, 4e-6, 1e-37)])
def test_bessel_values_match_torch(name, dtype, rtol, atol):
    x = bessel_grid(dtype)
    # values near a zero of J or Y cancel: compare those against the function's scale instead
    scale = 4e-15 if dtype == np.float64 else 1e-6
    ours = getattr(gradc.special, name)(gradc.tensor(x))
    theirs = getattr(torch.special, name)(torch.tensor(x))
    assert_matches(ours, theirs, rtol, atol if name.startswith(("modified", "scaled", "spherical")) else scale)


@pytest.mark.parametrize("name", sorted(BESSEL))
def test_bessel_dtypes_and_no_gradient(name):
    ours, theirs = getattr(gradc.special, name), getattr(torch.special, name)
    assert str(ours(gradc.tensor([1, 2])).dtype) == str(theirs(torch.tensor([1, 2])).dtype) == "torch.float32"
    x = gradc.tensor([0.5, 1.5], dtype=gradc.float64, requires_grad=True)
    y = ours(x)
    assert y.dtype == gradc.float64 and not y.requires_grad and y.grad_fn is None
    with pytest.raises(RuntimeError, match="element 0 of tensors does not require grad and does not have a grad_fn"):
        y.sum().backward()
    with pytest.raises(NotImplementedError) as expected:
        theirs(torch.ones(2, dtype=torch.float16))
    with pytest.raises(NotImplementedError) as got:
        ours(gradc.ones(2, dtype=gradc.float16))
    assert str(got.value) == str(expected.value)


def test_bessel_known_values():
    x = gradc.tensor([0.0, 1.0], dtype=gradc.float64)
    assert gradc.special.bessel_j0(x).tolist() == pytest.approx([1.0, 0.7651976865579666], rel=1e-15)
    assert gradc.special.modified_bessel_i0(x).tolist() == pytest.approx([1.0, 1.2660658777520082], rel=1e-15)
    assert gradc.special.modified_bessel_k0(x[1:]).item() == pytest.approx(0.42102443824070834, rel=1e-15)
    assert gradc.special.airy_ai(x).tolist() == pytest.approx([0.3550280538878172, 0.13529241631288141], rel=1e-15)
    assert gradc.special.spherical_bessel_j0(x[1:]).item() == pytest.approx(math.sin(1.0), rel=1e-15)


# ---- orthogonal polynomials -------------------------------------------------------------------------
@pytest.mark.parametrize("name", sorted(POLYNOMIALS))
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_polynomial_values_match_torch(name, dtype):
    """Within a few rounding errors per recurrence step (the recurrences and cos(n acos x)
    amplify rounding by up to the degree)."""
    x, n = polynomial_grid(dtype)
    ours = getattr(gradc.special, name)(gradc.tensor(x), gradc.tensor(n)).numpy()
    theirs = getattr(torch.special, name)(torch.tensor(x), torch.tensor(n)).numpy()
    assert ours.dtype == theirs.dtype
    np.testing.assert_array_equal(np.isnan(ours), np.isnan(theirs))
    finite = np.isfinite(theirs)
    np.testing.assert_array_equal(ours[~finite], theirs[~finite])
    degree = np.broadcast_to(np.nan_to_num(np.abs(n), posinf=0.0) + 1, theirs.shape)
    err = np.abs(ours[finite].astype(np.float64) - theirs[finite])
    bound = (32 * np.finfo(dtype).eps * degree * np.maximum(1.0, np.abs(theirs)))[finite]
    assert (err <= bound).all(), np.max(err / bound)


def test_polynomial_known_values():
    x = gradc.tensor([0.5, 2.0, 1.0, -1.0], dtype=gradc.float64)
    assert gradc.special.chebyshev_polynomial_t(x, 3).tolist() == pytest.approx([-1.0, 26.0, 1.0, -1.0])
    assert gradc.special.chebyshev_polynomial_u(x, 2).tolist() == pytest.approx([0.0, 15.0, 3.0, 3.0])
    assert gradc.special.hermite_polynomial_h(x, 2).tolist() == pytest.approx([-1.0, 14.0, 2.0, 2.0])
    assert gradc.special.hermite_polynomial_he(x, 2).tolist() == pytest.approx([-0.75, 3.0, 0.0, 0.0])
    assert gradc.special.legendre_polynomial_p(x, 2).tolist() == pytest.approx([-0.125, 5.5, 1.0, 1.0])
    assert gradc.special.laguerre_polynomial_l(x, 1).tolist() == pytest.approx([0.5, -1.0, 0.0, 2.0])
    assert gradc.special.shifted_chebyshev_polynomial_t(x, 2).tolist() == pytest.approx([-1.0, 17.0, 1.0, 17.0])


@pytest.mark.parametrize("name", sorted(POLYNOMIALS))
def test_polynomial_operands_dtypes_and_no_gradient(name):
    ours, theirs = getattr(gradc.special, name), getattr(torch.special, name)
    cases = [
        (lambda m: m.tensor([0.25, 1.5], dtype=m.float64), lambda m: 3),
        (lambda m: 0.5, lambda m: m.tensor([1, 2, 5])),
        (lambda m: m.tensor([1, 2]), lambda m: m.tensor([2, 3])),
        (lambda m: m.tensor([0.25, 0.75]), lambda m: m.tensor([4.0], dtype=m.float64)),
    ]
    for x, n in cases:
        mine, ref = ours(x(gradc), n(gradc)), theirs(x(torch), n(torch))
        assert str(mine.dtype) == str(ref.dtype)
        np.testing.assert_allclose(mine.numpy(), ref.numpy(), rtol=1e-6)
    x = gradc.tensor([0.5, 1.5], dtype=gradc.float64, requires_grad=True)
    n = gradc.tensor([2.0, 3.0], dtype=gradc.float64, requires_grad=True)
    y = ours(x, n)
    assert not y.requires_grad and y.grad_fn is None
    with pytest.raises(RuntimeError, match="element 0 of tensors does not require grad"):
        y.sum().backward()
    with pytest.raises(NotImplementedError) as expected:
        theirs(torch.ones(2, dtype=torch.float16), 2)
    with pytest.raises(NotImplementedError) as got:
        ours(gradc.ones(2, dtype=gradc.float16), 2)
    assert str(got.value) == str(expected.value)


def test_under_compile():
    @gradc.compile
    def f(x, n):
        return gradc.special.bessel_j1(x) * 2 + gradc.special.legendre_polynomial_p(x, n)

    x = gradc.tensor(np.linspace(-3, 3, 7))
    n = gradc.tensor(np.arange(7.0))
    expected = torch.special.bessel_j1(torch.tensor(x.numpy())) * 2 + \
        torch.special.legendre_polynomial_p(torch.tensor(x.numpy()), torch.tensor(n.numpy()))
    np.testing.assert_allclose(f(x, n).numpy(), expected.numpy(), rtol=1e-13)
