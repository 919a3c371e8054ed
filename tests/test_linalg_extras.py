"""torch.linalg's LU family (lu_factor[_ex], lu, lu_solve), the _ex variants (inv_ex, cholesky_ex,
solve_ex), lstsq, tensorinv, tensorsolve, vander and householder_product: values, float64
gradients (and second derivatives), return types and reprs, and errors against PyTorch."""
from __future__ import annotations

import numpy as np
import pytest

import gradc
from gradc.autograd import gradcheck, gradgradcheck

torch = pytest.importorskip("torch")

_R = np.random.default_rng(11)
ARRAYS = dict(a=_R.standard_normal((2, 3, 3)), t=_R.standard_normal((2, 5, 3)), w=_R.standard_normal((2, 3, 5)),
              b=_R.standard_normal((2, 3, 2)), c=_R.standard_normal((5, 2)), v=_R.standard_normal(3),
              s=_R.standard_normal((4, 4)), tau=_R.uniform(0.5, 1.5, (2, 3)),
              q=_R.standard_normal((2, 3, 6)) + np.eye(6).reshape(2, 3, 6) * 3, r=_R.standard_normal((2, 3)))

EXPRS = [
    "m.linalg.lu_factor(a).LU", "m.linalg.lu_factor(t).LU", "m.linalg.lu_factor(w).LU", "m.linalg.lu_factor(s).LU",
    "m.linalg.lu_factor_ex(a).LU * 2",
    "m.linalg.lu(a).L", "m.linalg.lu(a).U", "(lambda r: r.L @ r.U)(m.linalg.lu(t))", "m.linalg.lu(t).L",
    "m.linalg.lu(t).U", "m.linalg.lu(w).L", "m.linalg.lu(w).U", "m.linalg.lu(w).P @ m.linalg.lu(w).L",
    "m.linalg.lu_solve(*m.linalg.lu_factor(a), b)", "m.linalg.lu_solve(*m.linalg.lu_factor(a), b, adjoint=True)",
    "m.linalg.lu_solve(*m.linalg.lu_factor(a), b.mT, left=False)",
    "m.linalg.lu_solve(*m.linalg.lu_factor(a), b.mT, left=False, adjoint=True)",
    "m.linalg.lu_solve(m.linalg.lu_factor(a).LU.detach(), m.linalg.lu_factor(a).pivots, b)",
    "m.linalg.inv_ex(a).inverse", "m.linalg.cholesky_ex(a @ a.mT + 0.1).L",
    "m.linalg.cholesky_ex(a @ a.mT + 0.1, upper=True).L", "m.linalg.solve_ex(a, b).result",
    "m.linalg.solve_ex(a, b.mT, left=False).result",
    "m.linalg.lstsq(t, t[..., :2] + 1).solution", "m.linalg.lstsq(t, t[..., :2] + 1, driver='gelsd').residuals",
    "m.linalg.lstsq(w, b).solution", "m.linalg.lstsq(t, t[..., 0] * 2, driver='gelss').solution",
    "m.linalg.lstsq(t, t[..., 0] * 2, driver='gels').residuals",
    "m.linalg.lstsq(a, b, driver='gelsd').singular_values",
    "m.linalg.tensorinv(q.reshape(6, 2, 3), ind=1)", "m.linalg.tensorinv(q.reshape(2, 3, 3, 2))",
    "m.linalg.tensorsolve(q.reshape(2, 3, 6), r)",
    "m.linalg.tensorsolve(q.reshape(2, 3, 6).permute(2, 0, 1), r, dims=(0,))",
    "m.linalg.vander(v)", "m.linalg.vander(a, N=4)",
    "m.linalg.householder_product(t, tau)", "m.linalg.householder_product(t, tau[:, :2])",
    "m.linalg.householder_product(a, tau)",
]


def _run(m, expr):
    ts = {n: m.tensor(x, requires_grad=True) for n, x in ARRAYS.items()}
    y = eval(expr, {"m": m, **ts})
    w = m.tensor(np.cos(np.arange(y.numel())).reshape(tuple(y.shape)) + 1.5)
    if y.requires_grad:
        (y * w).sum().backward()
    grads = [np.zeros(1) if t.grad is None else t.grad.numpy() for t in ts.values()]
    name = None if y.grad_fn is None else type(y.grad_fn).__name__
    return [y.detach().numpy()] + grads, name, str(y.dtype)


@pytest.mark.parametrize("expr", EXPRS)
def test_values_gradients_and_nodes_match_pytorch(expr):
    (want, wname, wdt), (have, hname, hdt) = _run(torch, expr), _run(gradc, expr)
    assert hname == wname and hdt == wdt
    for w, h in zip(want, have, strict=True):
        assert h.shape == w.shape
        np.testing.assert_allclose(h, w, rtol=1e-7, atol=1e-9)


def _both(expr, **arrays):
    out = []
    for m in (torch, gradc):
        ts = {n: m.tensor(x) for n, x in arrays.items()}
        out.append(eval(expr, {"m": m, **ts}))
    return out


SINGULAR = np.array([[1.0, 2, 3], [2, 4, 6], [1, 1, 1]])


@pytest.mark.parametrize("expr", ["m.linalg.lu_factor_ex(x)", "m.linalg.lu_factor(x + m.eye(3, dtype=x.dtype))",
                                  "m.linalg.lu(x)", "m.linalg.lu(x[:2])", "m.linalg.lu(x[:, :2])",
                                  "m.linalg.inv_ex(x)", "m.linalg.inv_ex(x + m.eye(3, dtype=x.dtype))",
                                  "m.linalg.cholesky_ex(x)", "m.linalg.cholesky_ex(x, upper=True)",
                                  "m.linalg.cholesky_ex(x @ x.mT + m.eye(3, dtype=x.dtype))",
                                  "m.linalg.solve_ex(x, x)", "m.linalg.solve_ex(x + m.eye(3, dtype=x.dtype), x)",
                                  "m.linalg.lstsq(x, x[:, :2])", "m.linalg.lstsq(x, x[:, :2], driver='gelsd').rank",
                                  "m.linalg.lstsq(x[:2], x[:2], driver='gels')",
                                  "m.linalg.lstsq(x.float() + m.eye(3), x[:, 0].float(), driver='gelss')",
                                  "m.linalg.lu_factor_ex(m.stack([x, x.mT, m.eye(3, dtype=x.dtype)])).info",
                                  "m.linalg.lu_factor(x.float() + m.eye(3))",
                                  "m.linalg.lstsq(x[:, :2] + 1, x[:, 0], driver='gels')"])
def test_reprs_match_pytorch(expr):
    want, have = _both(expr, x=SINGULAR)
    if "lstsq" in expr and "rank" not in expr and "x[:2], x[:2]" not in expr:   # (gels: rank-deficient)
        np.testing.assert_allclose(have.solution.numpy(), want.solution.numpy(), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(have.residuals.numpy(), want.residuals.numpy(), rtol=1e-5, atol=1e-6)
        assert repr(have.rank) == repr(want.rank) and type(have).__name__ == type(want).__name__
        want, have = want.singular_values, have.singular_values
    elif "lstsq" in expr and "rank" not in expr:
        want, have = want[1:], have[1:]
    assert repr(have) == repr(want)


def test_pivots_match_lapack_on_random_and_tied_matrices():
    rng = np.random.default_rng(3)
    cases = [rng.standard_normal((4, 5, 5)), rng.standard_normal((3, 7, 4)), rng.standard_normal((2, 4, 7)),
             rng.integers(-2, 3, (6, 5, 5)).astype(np.float64), np.zeros((3, 3)), np.ones((4, 4))]
    for a in cases:
        w = torch.linalg.lu_factor_ex(torch.tensor(a))
        h = gradc.linalg.lu_factor_ex(gradc.tensor(a))
        np.testing.assert_array_equal(h.pivots.numpy(), w.pivots.numpy())
        np.testing.assert_array_equal(h.info.numpy(), w.info.numpy())
        np.testing.assert_allclose(h.LU.numpy(), w.LU.numpy(), rtol=1e-12, atol=1e-12)
        assert h.pivots.dtype is gradc.int32


GRAD_CASES = [
    ("lambda a: gradc.linalg.lu_factor(a).LU", (2, 3, 3)),
    ("lambda a: gradc.linalg.lu_factor(a).LU", (4, 2)),
    ("lambda a: gradc.linalg.lu_factor(a).LU", (2, 4)),
    ("lambda a: (lambda r: r.L * 2 + r.U.sum(-1, keepdim=True))(gradc.linalg.lu(a))", (3, 3)),
    ("lambda a: (lambda r: r.L.sum(-1) + r.U.sum(-2)[..., :1])(gradc.linalg.lu(a))", (2, 4, 3)),
    ("lambda a: (lambda r: r.L.sum(-1, keepdim=True) + r.U)(gradc.linalg.lu(a))", (3, 4)),
    ("lambda a: gradc.linalg.lu(a).U", (3, 4)),
    ("lambda a: gradc.linalg.lu(a).L", (4, 3)),
    ("lambda a, b: gradc.linalg.lu_solve(*gradc.linalg.lu_factor(a), b)", (3, 3), (3, 2)),
    ("lambda a, b: gradc.linalg.lu_solve(*gradc.linalg.lu_factor(a), b, adjoint=True, left=False)", (3, 3), (2, 3)),
    ("lambda a, b: gradc.linalg.lstsq(a, b).solution", (5, 3), (5, 2)),
    ("lambda a, b: gradc.linalg.lstsq(a, b, driver='gelsd').residuals", (5, 3), (5, 2)),
    ("lambda a, b: gradc.linalg.lstsq(a, b).solution", (2, 4), (2, 2)),
    ("lambda a, t: gradc.linalg.householder_product(a, t)", (4, 3), (2,)),
    ("lambda a: gradc.linalg.inv_ex(a).inverse", (3, 3)),
    ("lambda a: gradc.linalg.tensorinv(a.reshape(2, 2, 4), ind=2)", (4, 4)),
    ("lambda a, b: gradc.linalg.tensorsolve(a.reshape(2, 2, 4), b)", (4, 4), (2, 2)),
    ("lambda x: gradc.linalg.vander(x, N=4)", (3,)),
]


@pytest.mark.parametrize("case", GRAD_CASES, ids=[c[0][10:] + str(c[1:]) for c in GRAD_CASES])
def test_gradcheck_and_gradgradcheck(case):
    fn, shapes = eval(case[0], {"gradc": gradc}), case[1:]
    rng = np.random.default_rng(len(case[0]) + sum(map(len, shapes)))
    inputs = []
    for s in shapes:
        x = rng.standard_normal(s)
        if len(s) >= 2 and s[-1] == s[-2]:
            x = x + 2 * np.eye(s[-1])
        inputs.append(gradc.tensor(x, requires_grad=True))
    assert gradcheck(fn, inputs, eps=1e-6, atol=1e-5, rtol=1e-3)
    assert gradgradcheck(fn, inputs, eps=1e-6, atol=1e-5, rtol=1e-3)


ERRORS = [
    "m.linalg.lu_factor(x)", "m.linalg.lu_factor(m.stack([m.eye(3, dtype=x.dtype), x]))",
    "m.linalg.lu_factor(x, pivot=False)", "m.linalg.lu(x, pivot=False)", "m.linalg.lu_factor(x[0])",
    "m.linalg.lu(x[0])",
    "m.linalg.lu_factor(x.int())", "m.linalg.lu(x.int())",
    "m.linalg.lu_factor_ex(x, check_errors=True)", "m.linalg.inv_ex(x, check_errors=True)",
    "m.linalg.cholesky_ex(x, check_errors=True)",
    "m.linalg.cholesky_ex(m.stack([m.eye(3, dtype=x.dtype), x]), check_errors=True)",
    "m.linalg.solve_ex(x, x, check_errors=True)",
    "m.linalg.lu_solve(x, m.ones(3, dtype=m.int32), x[:2])", "m.linalg.lu_solve(x[:2], m.ones(2, dtype=m.int32), x)",
    "m.linalg.lu_solve(x, m.ones(3, dtype=m.int64), x)", "m.linalg.lu_solve(x, m.ones(3, dtype=m.int32), x[0])",
    "m.linalg.lstsq(x[0], x[0])", "m.linalg.lstsq(x, x[None])", "m.linalg.lstsq(x, x[:2])",
    "m.linalg.lstsq(x, x, driver='foo')", "m.linalg.lstsq(x.float(), x)",
    "m.linalg.tensorinv(x.reshape(3, 3, 1), ind=0)", "m.linalg.tensorinv(x.reshape(9, 1), ind=1)",
    "m.linalg.tensorinv(x.reshape(3, 3, 1, 1) * 0)", "m.linalg.tensorsolve(x.reshape(3, 3), x[0, :2])",
    "m.linalg.tensorsolve(x * 0, x[0])",
    "m.linalg.vander(x[0] > 0)", "m.linalg.vander(x[0], N=1)", "m.linalg.vander(x[0, 0])",
    "m.linalg.householder_product(x[0], x[0, :1])", "m.linalg.householder_product(x[:2], x[0, :1])",
    "m.linalg.householder_product(x[:, :2], x[0])", "m.linalg.householder_product(x[None], x[0, :1])",
    "m.linalg.householder_product(x, x[0, :1].float())",
]


@pytest.mark.parametrize("expr", ERRORS)
def test_errors_match_pytorch(expr):
    msgs = []
    for m in (torch, gradc):
        with pytest.raises(RuntimeError) as e:
            eval(expr, {"m": m, "x": m.tensor(SINGULAR)})
        msgs.append((str(e.value), isinstance(e.value, m.linalg.LinAlgError)))
    assert msgs[1] == msgs[0]


def test_failed_factorizations_keep_lapack_values():
    """Where a factorization fails the _ex results are PyTorch's inf / nan / partial factors."""
    for expr in ("m.linalg.inv_ex(x).inverse", "m.linalg.cholesky_ex(x).L", "m.linalg.solve_ex(x, x[:, :1]).result"):
        want, have = _both(expr, x=SINGULAR)
        np.testing.assert_array_equal(have.numpy(), want.numpy())
