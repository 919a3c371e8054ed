"""autograd.functional (vjp, jvp, jacobian, hessian, vhp, hvp): values, shapes, tuple structure,
requires_grad of the results and error messages as PyTorch's; a Hessian against finite differences."""
from __future__ import annotations

import numpy as np
import pytest

import gradc

X = [[0.3, -1.2, 0.7], [1.5, 0.2, -0.4]]
Y = [0.5, -0.25, 2.0]


def _problems(m):
    x = m.tensor(X, dtype=m.float64)
    y = m.tensor(Y, dtype=m.float64)
    ones = lambda *shape: m.ones(*shape, dtype=m.float64)  # noqa: E731

    def f(a): return (a.exp() * a.sin()).sum(1)
    def g(a, b): return (a * b).tanh(), (a @ b).sum() * b
    def s(a): return (a ** 3).sum() + a.prod()
    def s2(a, b): return (a.sin() * b).sum() + (b ** 2).sum()
    F = m.autograd.functional
    return {
        "jacobian": lambda: F.jacobian(f, x),
        "jacobian tuple": lambda: F.jacobian(g, (x, y)),
        "jacobian vectorize": lambda: F.jacobian(f, x, vectorize=True),
        "jacobian forward": lambda: F.jacobian(f, x, strategy="forward-mode", vectorize=True),
        "jacobian forward tuple": lambda: F.jacobian(g, (x, y), strategy="forward-mode", vectorize=True),
        "jacobian create_graph": lambda: F.jacobian(f, x, create_graph=True),
        "jacobian unused input": lambda: F.jacobian(lambda a, b: a.sum() * 2, (x, y)),
        "hessian": lambda: F.hessian(s, y),
        "hessian tuple": lambda: F.hessian(s2, (y, y * 2)),
        "vjp": lambda: F.vjp(f, x, ones(2)),
        "vjp tuple": lambda: F.vjp(g, (x, y), (ones(2, 3), ones(3))),
        "vjp independent": lambda: F.vjp(lambda a: a.sum() * 0 + 3.0 * y.sum(), x),
        "jvp": lambda: F.jvp(f, x, ones(2, 3)),
        "jvp tuple": lambda: F.jvp(g, (x, y), (ones(2, 3), y)),
        "vhp": lambda: F.vhp(s, y, y),
        "hvp": lambda: F.hvp(s, y, y),
        "hvp tuple": lambda: F.hvp(s2, (y, y * 2), (y, y)),
        # errors
        "vjp v None": lambda: F.vjp(f, x),
        "jvp v None": lambda: F.jvp(f, x),
        "vjp v size": lambda: F.vjp(f, x, m.ones(3)),
        "vjp list input": lambda: F.vjp(f, [x]),
        "vjp float input": lambda: F.vjp(f, 3.0),
        "hessian vector output": lambda: F.hessian(f, x),
        "strict unused input": lambda: F.jacobian(lambda a, b: a.sum() * 2, (x, y), strict=True),
        "strict detached output": lambda: F.vjp(lambda a: a.detach().sum(), x, strict=True),
        "forward without vectorize": lambda: F.jacobian(f, x, strategy="forward-mode"),
        "unknown strategy": lambda: F.jacobian(f, x, strategy="sideways"),
        "jvp v tuple length": lambda: F.jvp(g, (x, y), (x,)),
        "hvp v size": lambda: F.hvp(s, y, x),
        "strict linear hessian": lambda: F.hessian(lambda a: (a * 2).sum(), y, strict=True),
    }


def _describe(result):
    """Structure (tuple/list nesting), shapes, requires_grad and values of a result or an error."""
    if isinstance(result, tuple):
        return ("tuple", [_describe(r) for r in result])
    if isinstance(result, list):
        return ("list", [_describe(r) for r in result])
    return (tuple(result.shape), result.requires_grad, result.detach().numpy().round(10).tolist())


def _outcome(m, name):
    try:
        return _describe(_problems(m)[name]())
    except Exception as e:  # noqa: BLE001
        return (type(e).__name__, str(e))


@pytest.mark.parametrize("name", list(_problems(gradc)))
def test_matches_pytorch(name):
    torch = pytest.importorskip("torch")
    assert _outcome(gradc, name) == _outcome(torch, name)


def test_create_graph_results_differentiate_again():
    y = gradc.tensor(Y, dtype=gradc.float64, requires_grad=True)
    out, grad = gradc.autograd.functional.vjp(lambda a: (a ** 2).sum(), y, create_graph=True)
    assert out.requires_grad and grad.requires_grad
    grad.sum().backward()
    np.testing.assert_allclose(y.grad.numpy(), [2.0, 2.0, 2.0])


def test_hessian_against_finite_differences():
    def loss(a):
        return (a.sin() * a.roll(1, 0)).sum() + (a ** 4).sum() / 4
    a0 = np.array([0.3, -0.8, 1.1, 0.25])
    h = gradc.autograd.functional.hessian(loss, gradc.tensor(a0, dtype=gradc.float64)).numpy()

    def grad_at(a):
        t = gradc.tensor(a, dtype=gradc.float64, requires_grad=True)
        loss(t).backward()
        return t.grad.numpy()
    eps = 1e-6
    numeric = np.stack([(grad_at(a0 + eps * e) - grad_at(a0 - eps * e)) / (2 * eps) for e in np.eye(4)], 1)
    np.testing.assert_allclose(h, numeric, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(h, h.T, rtol=1e-12)
    v = np.array([1.0, -2.0, 0.5, 3.0])
    _, hv = gradc.autograd.functional.hvp(loss, gradc.tensor(a0, dtype=gradc.float64), gradc.tensor(v))
    np.testing.assert_allclose(hv.numpy(), h @ v, rtol=1e-12)


def test_inputs_are_not_modified():
    x = gradc.tensor(Y, dtype=gradc.float64)
    gradc.autograd.functional.jacobian(lambda a: a * 2, x)
    assert not x.requires_grad and x.grad is None and x.grad_fn is None
