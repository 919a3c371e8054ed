"""Special functions (``ops/special.py``, ``gradc/special.py``): values at known points and
identities (no PyTorch needed), PyTorch's values over wide ranges and at poles, infinities and
NaN in float64 and float32, their errors, and the same results under ``@gradc.compile``,
second derivatives included. Gradients against finite differences are in
``test_gradcheck_ops.py``, against PyTorch's in ``test_torch_parity.py``."""
from __future__ import annotations

import math

import numpy as np
import pytest

import gradc
from gradc.ir.tracer import TraceError

EULER_GAMMA = 0.5772156649015329
EDGES = [0.0, -0.0, 1.0, 2.0, -1.0, -2.0, -2.5, 0.5, -0.5, 1e-5, -1e-5, 10.0, 26.0, 27.0, 100.0, 171.7, 700.0,
         720.0, 1e10, math.inf, -math.inf, math.nan]


def t64(values, requires_grad=False):
    return gradc.tensor(np.asarray(values, dtype=np.float64), requires_grad=requires_grad)


def wide_grid():
    rng = np.random.default_rng(7)
    return np.concatenate([rng.uniform(-30, 30, 400), rng.uniform(-3, 3, 400), EDGES])


# ---- known values and identities ------------------------------------------------------------------
def test_known_values():
    n = np.arange(1, 12, dtype=np.float64)
    np.testing.assert_allclose(gradc.lgamma(t64(n)).numpy(), [math.log(math.factorial(k - 1)) for k in range(1, 12)],
                               rtol=1e-14, atol=1e-15)
    assert gradc.digamma(t64([1.0])).item() == pytest.approx(-EULER_GAMMA, rel=1e-15)
    assert gradc.polygamma(1, t64([1.0])).item() == pytest.approx(math.pi ** 2 / 6, rel=1e-15)
    assert gradc.polygamma(2, t64([1.0])).item() == pytest.approx(-2 * 1.2020569031595942, rel=1e-14)
    assert gradc.special.zeta(2.0, t64([1.0])).item() == pytest.approx(math.pi ** 2 / 6, rel=1e-15)
    assert gradc.special.zeta(4.0, t64([1.0])).item() == pytest.approx(math.pi ** 4 / 90, rel=1e-15)
    assert gradc.i0(t64([0.0])).item() == 1.0 and gradc.special.i1(t64([0.0])).item() == 0.0
    assert gradc.special.ndtri(t64([0.975])).item() == pytest.approx(1.959963984540054, rel=1e-14)
    assert gradc.special.entr(t64([0.5])).item() == pytest.approx(0.5 * math.log(2), rel=1e-15)


def test_identities_over_a_range():
    x = t64(np.linspace(0.1, 40, 300))
    # lgamma(x + 1) = lgamma(x) + log(x); digamma(x + 1) = digamma(x) + 1/x
    np.testing.assert_allclose((gradc.lgamma(x + 1) - gradc.lgamma(x)).numpy(), np.log(x.numpy()), rtol=1e-11, atol=1e-13)
    np.testing.assert_allclose((gradc.digamma(x + 1) - gradc.digamma(x)).numpy(), 1 / x.numpy(), rtol=1e-12)
    # reflection: digamma(1 - x) - digamma(x) = pi cot(pi x)
    y = t64(np.linspace(-4.95, 4.95, 100))        # no integers
    np.testing.assert_allclose((gradc.digamma(1 - y) - gradc.digamma(y)).numpy(), math.pi / np.tan(math.pi * y.numpy()),
                               rtol=1e-10, atol=1e-10)
    # polygamma(n, x) = (-1)^(n+1) n! zeta(n + 1, x)
    for n in (1, 2, 3, 5):
        np.testing.assert_allclose(gradc.polygamma(n, x).numpy(),
                                   (-1) ** (n + 1) * math.factorial(n) * gradc.special.zeta(float(n + 1), x).numpy(),
                                   rtol=1e-12)
    # erfcx(x) = exp(x^2) erfc(x) where both are representable; ndtri inverts ndtr, also deep in the tail
    z = t64(np.linspace(-5, 20, 101))
    np.testing.assert_allclose(gradc.special.erfcx(z).numpy(), np.exp(z.numpy() ** 2) * gradc.erfc(z).numpy(), rtol=1e-12)
    p = t64(10.0 ** -np.linspace(0.5, 300, 60))
    np.testing.assert_allclose(gradc.special.log_ndtr(gradc.special.ndtri(p)).numpy(), np.log(p.numpy()), rtol=1e-12)
    # i0e and i1e are i0 and i1 scaled by exp(-|x|), i1 is odd
    w = t64(np.linspace(-40, 40, 81))
    np.testing.assert_allclose(gradc.special.i0e(w).numpy(), gradc.i0(w).numpy() * np.exp(-np.abs(w.numpy())), rtol=1e-13)
    np.testing.assert_allclose(gradc.special.i1(-w).numpy(), -gradc.special.i1(w).numpy(), rtol=0)


def test_mvlgamma_is_the_sum_of_shifted_lgammas():
    x = t64([2.5, 3.0, 7.25])
    expected = sum(gradc.lgamma(x - j / 2).numpy() for j in range(4)) + 3 * math.log(math.pi)
    np.testing.assert_allclose(gradc.mvlgamma(x, 4).numpy(), expected, rtol=1e-14)
    assert type(gradc.mvlgamma(t64([3.0], True), 2).grad_fn).__name__ == "MvlgammaBackward0"


def test_integer_inputs_become_the_default_float():
    assert gradc.lgamma(gradc.tensor([3, 4])).dtype is gradc.float32
    assert gradc.special.i0e(gradc.tensor([1])).dtype is gradc.float32
    assert gradc.special.zeta(2, gradc.tensor([1, 2])).dtype is gradc.float32
    assert gradc.special.xlog1py(gradc.tensor([1]), 0.5).dtype is gradc.float32


def test_errors():
    x = t64([1.5], requires_grad=True)
    with pytest.raises(RuntimeError, match=r"polygamma\(n, x\) does not support negative n\."):
        gradc.polygamma(-1, x)
    with pytest.raises(TypeError, match="must be int"):
        gradc.polygamma(1.5, x)
    with pytest.raises(RuntimeError, match="p has to be greater than or equal to 1"):
        gradc.mvlgamma(x, 0)
    s = t64([3.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="the derivative for 'zeta' is not implemented"):
        gradc.special.zeta(s, x).backward()


def test_in_place_forms_check_like_the_others():
    leaf = t64([1.5], requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        leaf.lgamma_()
    ints = gradc.tensor([1, 2])
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired output type Long"):
        ints.erfc_()
    y = t64([0.5, 2.0])
    version = y._version
    assert y.digamma_() is y and y._version == version + 1


# ---- against PyTorch -----------------------------------------------------------------------------
UNARY = {
    "erfc": lambda m, x: m.erfc(x),
    "erfcx": lambda m, x: m.special.erfcx(x),
    "lgamma": lambda m, x: m.lgamma(x),
    "digamma": lambda m, x: m.digamma(x),
    "polygamma1": lambda m, x: m.polygamma(1, x),
    "polygamma2": lambda m, x: m.polygamma(2, x),
    "polygamma4": lambda m, x: m.special.polygamma(4, x),
    "entr": lambda m, x: m.special.entr(x),
    "log_ndtr": lambda m, x: m.special.log_ndtr(x),
    "ndtr": lambda m, x: m.special.ndtr(x),
    "i0": lambda m, x: m.special.i0(x),
    "i0e": lambda m, x: m.special.i0e(x),
    "i1": lambda m, x: m.special.i1(x),
    "i1e": lambda m, x: m.special.i1e(x),
}


@pytest.mark.parametrize("name", sorted(UNARY))
def test_values_match_pytorch_in_float64_and_float32(name):
    torch = pytest.importorskip("torch")
    x = wide_grid()
    fn = UNARY[name]
    rtol = 1e-11
    if name == "polygamma1":
        # PyTorch's trigamma (six recurrence steps, four series terms) is off by up to about 5e-10
        # relative, and is finite (about 1e32) at the negative integers, where gradc's is inf
        x = x[~((x < 0) & (x == np.trunc(x)))]
        rtol = 1e-9
    ours = fn(gradc, t64(x)).numpy()
    theirs = fn(torch, torch.tensor(x)).numpy()
    np.testing.assert_allclose(ours, theirs, rtol=rtol, atol=1e-14, equal_nan=True)
    x32 = x.astype(np.float32)
    ours32 = fn(gradc, gradc.tensor(x32)).numpy()
    theirs32 = fn(torch, torch.tensor(x32)).numpy()
    assert ours32.dtype == np.float32
    # PyTorch computes in float32 (its poles and overflows move with the rounding, and next to a
    # pole of lgamma/digamma/polygamma its float32 sin(pi x) is off by a percent), gradc in float64
    with np.errstate(invalid="ignore"):
        near_pole = (x32 <= 0.5) & (np.abs(x32 - np.round(x32)) < 0.02)
    finite = np.isfinite(theirs32) & np.isfinite(ours32) & (np.abs(theirs32) < 1e30) & ~near_pole
    np.testing.assert_allclose(ours32[finite], theirs32[finite], rtol=2e-4, atol=1e-6)


def test_ndtri_and_zeta_match_pytorch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(3)
    p = np.concatenate([rng.uniform(0, 1, 500), 10.0 ** -rng.uniform(0, 320, 200), 1 - 10.0 ** -rng.uniform(0, 16, 100),
                        [0.0, 1.0, -0.1, 1.1, math.nan, 0.5, 5e-324]])
    np.testing.assert_allclose(gradc.special.ndtri(t64(p)).numpy(), torch.special.ndtri(torch.tensor(p)).numpy(),
                               rtol=1e-13, equal_nan=True)
    s = np.concatenate([rng.uniform(0.5, 6, 300), rng.integers(1, 8, 300).astype(float)])
    q = np.concatenate([rng.uniform(-4, 12, 300), rng.uniform(-4, 12, 300)])
    q[::7] = np.round(q[::7])          # the poles at non-positive integers
    np.testing.assert_allclose(gradc.special.zeta(t64(s), t64(q)).numpy(),
                               torch.special.zeta(torch.tensor(s), torch.tensor(q)).numpy(), rtol=1e-12, equal_nan=True)


def test_xlog1py_matches_pytorch_at_zero_and_nan():
    torch = pytest.importorskip("torch")
    x = np.array([0.0, 0.0, 0.0, 1.0, -2.0, 3.0])
    y = np.array([-1.0, math.nan, 2.0, -1.0, 0.5, math.nan])
    np.testing.assert_array_equal(gradc.special.xlog1py(t64(x), t64(y)).numpy(),
                                  torch.special.xlog1py(torch.tensor(x), torch.tensor(y)).numpy())


def test_gradients_at_poles_and_edges_match_pytorch():
    torch = pytest.importorskip("torch")
    x = np.array([0.0, 0.5, 2.0, -0.5, 30.0])
    for name in ("entr", "i1", "i1e", "i0e", "erfcx", "log_ndtr"):
        grads = []
        for m in (gradc, torch):
            leaf = m.tensor(x, requires_grad=True)
            UNARY[name](m, leaf).sum().backward()
            grads.append(np.asarray(leaf.grad.numpy()))
        np.testing.assert_allclose(grads[0], grads[1], rtol=1e-12, atol=1e-15, equal_nan=True, err_msg=name)


# ---- under @gradc.compile ---------------------------------------------------------------------------
def test_compiled_equals_eager(compiled_vs_eager):
    rng = np.random.default_rng(0)

    def loss(x, y):
        sp = gradc.special
        return (x.lgamma() + gradc.digamma(x) * y + gradc.polygamma(2, x) + gradc.erfc(y) + gradc.i0(y)
                + sp.log_ndtr(y * 3) + sp.xlog1py(y, x) + sp.i1e(y) + sp.zeta(3.0, x)).sum()

    compiled_vs_eager(loss, rng.uniform(0.5, 3, (3, 4)), rng.standard_normal((3, 4)), rtol=1e-12)


def test_compiled_second_derivative_of_lgamma():
    """create_graph=True through the compiled node: the adjoint (digamma) is compiled and
    differentiated again (polygamma(1))."""
    x = t64([0.7, 1.5, 4.0, -0.5], requires_grad=True)
    loss = gradc.compile(lambda x: x.lgamma().sum())(x)
    (g,) = gradc.autograd.grad(loss, [x], create_graph=True)
    np.testing.assert_allclose(g.detach().numpy(), gradc.digamma(x).detach().numpy(), rtol=1e-14)
    (h,) = gradc.autograd.grad(g.sum(), [x])
    np.testing.assert_allclose(h.numpy(), gradc.polygamma(1, x).detach().numpy(), rtol=1e-14)


def test_autograd_grad_inside_a_compiled_function_differentiates_the_trace():
    """gradc.autograd.grad in a compiled function emits the adjoint ops (ir/traced_grad.py): the
    gradient of lgamma is digamma, its own gradient (create_graph=True) polygamma(1, x);
    backward() inside one stays a TraceError."""
    x = t64([1.5, 2.5], requires_grad=True)

    def inner_grad(x):
        return gradc.autograd.grad(x.lgamma().sum(), [x], create_graph=True)[0]

    def inner_backward(x):
        y = x.lgamma().sum()
        y.backward()
        return y

    g = gradc.compile(inner_grad)(x)
    np.testing.assert_allclose(g.detach().numpy(), gradc.digamma(x).detach().numpy(), rtol=1e-14)
    g.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), gradc.polygamma(1, x).detach().numpy(), rtol=1e-14)
    with pytest.raises(TraceError, match="Tensor.backward inside a @gradc.compile"):
        gradc.compile(inner_backward)(x)
