"""gradc.compositions against PyTorch: values, dtypes, shapes and input gradients (their grad_fn
graphs are those of the table ops they are made of), eagerly and under @gradc.compile."""
import warnings

import numpy as np
import pytest

import gradc

torch = pytest.importorskip("torch")

INF, NAN = float("inf"), float("nan")
CASES = [
    ("x.isnan() | m.isinf(x) | ~x.isfinite()", dict(x=[1.0, NAN, INF, -INF, 0.0])),
    ("m.nan_to_num(x)", dict(x=[1.0, NAN, INF, -INF])),
    ("x.nan_to_num(nan=2.0, posinf=9.0, neginf=-9.0) * y", dict(x=[1.0, NAN, INF, -INF], y=[1.0, 2, 3, 4])),
    ("x.any()", dict(x=[0.0, 0.0, 1.0])),
    ("x.all(), m.all(x, dim=0), x.any(1, keepdim=True)", dict(x=[[0.0, 1.0], [2.0, 3.0]])),
    ("m.count_nonzero(x, dim=1)", dict(x=[[0.0, 1.0, 2.0], [0.0, 0.0, 3.0]])),
    ("m.lerp(x, y, 0.3)", dict(x=[1.0, 2.0, -3.0], y=[4.0, -1.0, 0.5])),
    ("x.lerp(y, z)", dict(x=[1.0, 2.0], y=[4.0, -1.0], z=[0.25, 0.75])),
    ("m.logaddexp(x, y)", dict(x=[1.0, -50.0, 700.0, 3.0], y=[2.0, 40.0, 700.0, -INF])),
    ("m.hypot(x, y)", dict(x=[3.0, 1e200, -2.0, 0.5], y=[4.0, 1e200, 0.0, -0.25])),
    ("x.tril()", dict(x=np.arange(12.0).reshape(3, 4) + 1)),
    ("m.triu(x, 1) + x.tril(-1)", dict(x=np.arange(12.0).reshape(3, 4) + 1)),
    ("x.triu(diagonal=-1)", dict(x=np.arange(24.0).reshape(2, 3, 4) + 1)),
    ("x.diagonal()", dict(x=np.arange(12.0).reshape(3, 4))),
    ("x.diagonal(1) + x.diagonal(-1)[:2].sum()", dict(x=np.arange(12.0).reshape(3, 4))),
    ("m.diagonal(x, 0, 1, 2)", dict(x=np.arange(24.0).reshape(2, 3, 4))),
    ("x.trace()", dict(x=np.arange(12.0).reshape(3, 4))),
    ("m.outer(x, y)", dict(x=[1.0, 2.0, 3.0], y=[4.0, 5.0])),
    ("m.addmm(z, x, y, beta=0.5, alpha=2)", dict(z=[[1.0, 2.0]], x=[[1.0, 2.0], [3.0, 4.0]], y=[[5.0, 6.0], [7.0, 8.0]])),
    ("m.var_mean(x, 1)", dict(x=[[1.0, 2.0, 4.0], [3.0, 5.0, 9.0]])),
    ("m.std_mean(x)", dict(x=[[1.0, 2.0, 4.0], [3.0, 5.0, 9.0]])),
    ("x.split(2)", dict(x=np.arange(10.0))),
    ("m.split(x, [1, 2], dim=1)", dict(x=np.arange(6.0).reshape(2, 3))),
    ("x.chunk(3, 1)", dict(x=np.arange(14.0).reshape(2, 7))),
    ("x.unbind(1)", dict(x=np.arange(6.0).reshape(2, 3))),
    ("x.repeat(2, 3)", dict(x=[[1.0, 2.0], [3.0, 4.0]])),
    ("x.repeat(2, 1, 2)", dict(x=[1.0, 2.0, 3.0])),
    ("x.flip(0)", dict(x=np.arange(6.0).reshape(2, 3))),
    ("m.flip(x, (0, 1)) * y", dict(x=np.arange(6.0).reshape(2, 3), y=[1.0, 2.0, 3.0])),
    ("x.roll(1)", dict(x=np.arange(6.0).reshape(2, 3))),
    ("m.roll(x, (1, -2), (0, 1))", dict(x=np.arange(12.0).reshape(3, 4))),
    ("x.diff()", dict(x=[1.0, 4.0, 9.0, 16.0])),
    ("m.diff(x, n=2, dim=0)", dict(x=np.arange(12.0).reshape(4, 3) ** 2)),
    ("m.meshgrid(x, y, indexing='ij')", dict(x=[1.0, 2.0, 3.0], y=[4.0, 5.0])),
    ("m.meshgrid(x, y, indexing='xy')", dict(x=[1.0, 2.0, 3.0], y=[4.0, 5.0])),
]
_R = np.random.default_rng(15)
_X = _R.standard_normal((2, 3, 4))
CASES += [
    ("m.tensordot(x, y)", dict(x=_X, y=_R.standard_normal((3, 4, 5)))),
    ("m.tensordot(x, y, dims=1)", dict(x=_X, y=_R.standard_normal((4, 5)))),
    ("m.tensordot(x, y, dims=([0, 2], [1, 0]))", dict(x=_X, y=_R.standard_normal((4, 2, 3)))),
    ("m.nn.functional.pad(x, (1, 2))", dict(x=_X)),
    ("m.nn.functional.pad(x, (1, 1, 2, 0), value=3.5)", dict(x=_X)),
    ("m.nn.functional.pad(x, (-1, 2, 0, -1))", dict(x=_X)),
    ("m.nn.functional.pad(x, (2, 1), mode='reflect')", dict(x=_X)),
    ("m.nn.functional.pad(x, (1, 2, 1, 1), mode='replicate')", dict(x=_X)),
    ("m.nn.functional.pad(x, (1, 2), mode='circular')", dict(x=_X)),
]
CASES += [
    ("x.repeat_interleave(2)", dict(x=_X[0])),
    ("x.repeat_interleave(3, dim=1) * 1.5", dict(x=_X)),
    ("m.repeat_interleave(x, 2, -1)", dict(x=_X)),
    ("x.repeat_interleave(m.tensor([1, 0, 3]), dim=1)", dict(x=_X)),
    ("x.repeat_interleave(m.tensor([2]), dim=0)", dict(x=_X)),
    ("m.repeat_interleave(x, m.tensor(2))", dict(x=_X[0, 0])),
    ("m.nn.functional.conv1d(x, w)", dict(x=_R.standard_normal((2, 3, 9)), w=_R.standard_normal((4, 3, 3)))),
    ("m.nn.functional.conv1d(x, w, b, stride=2, padding=2, dilation=2)",
     dict(x=_R.standard_normal((2, 3, 9)), w=_R.standard_normal((4, 3, 3)), b=_R.standard_normal(4))),
    ("m.nn.functional.conv1d(x, w, groups=2, padding='same')",
     dict(x=_R.standard_normal((1, 4, 7)), w=_R.standard_normal((6, 2, 4)))),
    ("m.nn.functional.conv1d(x, w, padding=(1,))", dict(x=_R.standard_normal((3, 8)), w=_R.standard_normal((2, 3, 2)))),
]
_V3 = _R.standard_normal((4, 3))
CASES += [       # arrangement.py
    ("m.hstack([x, y])", dict(x=_X[0], y=_X[1])), ("m.hstack([x, y])", dict(x=[1.0, 2.0], y=[3.0])),
    ("m.vstack([x, y])", dict(x=[1.0, 2.0, 3.0], y=_X[0, :, :3])), ("m.dstack([x, y])", dict(x=_X[0], y=_X[1])),
    ("m.column_stack([x, y])", dict(x=[1.0, 2.0], y=[[3.0, 4.0], [5.0, 6.0]])), ("m.atleast_2d(x)", dict(x=[1.0, 2.0])),
    ("m.atleast_3d(x, y)", dict(x=2.5, y=_X[0])), ("x.tile((2,))", dict(x=_X)), ("m.tile(x, (2, 1, 1, 2))", dict(x=_X)),
    ("m.movedim(x, 0, -1)", dict(x=_X)), ("x.moveaxis((0, 1), (2, 0))", dict(x=_X)), ("x.swapdims(0, 2)", dict(x=_X)),
    ("x.unflatten(2, (2, -1))", dict(x=_X)), ("m.tensor_split(x, 3, dim=2)", dict(x=_X)),
    ("x.tensor_split([1, 3], 2)", dict(x=_X)), ("m.rot90(x)", dict(x=_X)), ("x.rot90(2, (1, 2))", dict(x=_X)),
    ("m.rot90(x, -1, (0, 2))", dict(x=_X)), ("m.fliplr(x) + m.flipud(x)", dict(x=_X)), ("m.diag(x)", dict(x=[1.0, 2.0, 3.0])),
    ("m.diag(x, -1)", dict(x=[1.0, 2.0])), ("x.diag(1)", dict(x=_X[0])), ("m.diag_embed(x, 1)", dict(x=_X[0])),
    ("m.kron(x, y)", dict(x=_X[0], y=_X[1, :2])), ("m.eye(3) * x", dict(x=[1.0, 2.0, 3.0])),
    ("m.eye(2, 4, dtype=m.float64) @ x", dict(x=_X[0].T)),
    # arithmetic.py
    ("m.addcmul(x, y, z, value=0.5)", dict(x=_X[0], y=_X[1], z=[1.0, 2.0, 3.0, 4.0])),
    ("x.addcdiv(y, z, value=-2)", dict(x=_X[0], y=_X[1], z=[1.0, 2.0, 3.0, 4.0])),
    ("m.clamp_min(x, 0.1) + x.clamp_max(-0.2)", dict(x=_X)), ("m.logit(x.sigmoid()) + x.sigmoid().logit(eps=0.2)", dict(x=_X)),
    ("m.deg2rad(x) + x.rad2deg()", dict(x=_X)), ("x.sgn() * x", dict(x=[1.0, -2.0, 0.0])),
    ("m.signbit(x)", dict(x=[-0.0, 0.0, -1.0, 2.0])), ("m.nansum(x) + x.nansum(1).sum()", dict(x=[[1.0, NAN], [2.0, 3.0]])),
    ("m.nanmean(x, 1)", dict(x=[[1.0, NAN], [2.0, 3.0]])), ("x.median()", dict(x=_X)),
    ("m.median(x, 1)", dict(x=_X[0])), ("x.median(0, keepdim=True)", dict(x=_X[1])),
    ("m.mv(x, y)", dict(x=_X[0], y=[1.0, -1.0, 2.0, 0.5])), ("m.addmv(z, x, y, beta=0.5, alpha=2)",
                                                             dict(z=[1.0, 2.0, 3.0], x=_X[0], y=[1.0, -1.0, 2.0, 0.5])),
    ("m.baddbmm(z, x, y, alpha=0.5)", dict(z=_R.standard_normal((2, 3, 3)), x=_X, y=np.swapaxes(_X, 1, 2))),
    ("m.addbmm(z, x, y, beta=2)", dict(z=_R.standard_normal((3, 3)), x=_X, y=np.swapaxes(_X, 1, 2))),
    ("m.inner(x, y)", dict(x=_X, y=_X[0])), ("x.inner(y)", dict(x=[1.0, 2.0], y=[3.0, 4.0])),
    ("m.cross(x, y, dim=1)", dict(x=_V3, y=_V3[::-1].copy())), ("x.cross(y, -1)", dict(x=_V3, y=_V3 * 2 + 1)),
    ("m.logspace(0, 2, 5) * x + m.logspace(-1, 1, 5, base=2) ", dict(x=[1.0] * 5)),
    ("x.cummax(0)", dict(x=[1.0, 3.0, 3.0, 2.0, 0.5, 5.0, 5.0])),
    ("m.cummin(x, 1)", dict(x=[[4.0, 1.0, 1.0, 2.0, 0.0], [3.0, 3.0, 5.0, -1.0, -1.0]])),
    ("m.cummax(x, dim=-2).values * 2", dict(x=_R.standard_normal((5, 3)).round(0))),
    ("x.unfold(1, 3, 2)", dict(x=np.arange(14.0).reshape(2, 7))),
    ("x.unfold(0, 2, 1) * x.unfold(0, 2, 1)", dict(x=[1.0, -2.0, 3.0, 0.5])),
    ("x.unfold(-1, 2, 3)", dict(x=_R.standard_normal((2, 3, 8)))),
    # aliases.py
    ("m.absolute(x) + m.multiply(x, y) - m.subtract(x, y, alpha=2) + m.divide(x, y)", dict(x=[1.0, -2.0], y=[3.0, 4.0])),
    ("m.xlogy(x, y)", dict(x=[0.0, 1.0, 2.0, 0.0, -1.5], y=[0.5, 3.0, 0.5, 2.0, 4.0])),
    ("m.sinc(x)", dict(x=[0.0, 0.5, 1.5, -0.25])),
    ("m.fmax(x, y) + m.fmin(x, y) * 2", dict(x=[1.0, NAN, 2.0, 3.0], y=[NAN, 3.0, 1.0, 3.0])),
    ("m.float_power(x, y) + m.logaddexp2(x, y)", dict(x=[1.0, 2.0, 0.5], y=[2.0, -1.0, 3.0])),
    ("m.hsplit(x, 2)", dict(x=np.arange(12.0).reshape(3, 4))), ("m.vsplit(x, [1])", dict(x=np.arange(12.0).reshape(3, 4))),
    ("m.dsplit(x, 2)", dict(x=_R.standard_normal((2, 2, 4)))),
    ("m.block_diag(x, y, z)", dict(x=[[1.0, 2.0]], y=[3.0], z=[[4.0], [5.0]])),
    ("m.cartesian_prod(x, y)", dict(x=[1.0, 2.0], y=[3.0, 4.0, 5.0])),
    ("m.diagflat(x, -1)", dict(x=[[1.0, 2.0], [3.0, 4.0]])),
    ("m.addr(z, x, y, beta=0.5, alpha=2) + m.vdot(x, x) + m.ger(x, y)", dict(z=np.ones((2, 3)), x=[1.0, 2.0], y=[3.0, 4.0, 5.0])),
    ("m.matrix_power(x, 3) + m.matrix_power(x, 0) + m.matrix_power(x, -1)", dict(x=[[2.0, 1.0], [0.5, 3.0]])),
    ("m.take(x, m.tensor([[0, 5], [-1, 2]]))", dict(x=np.arange(6.0).reshape(2, 3))),
    ("m.take_along_dim(x, m.tensor([[0], [2]]), 1) + m.take_along_dim(x, m.tensor([3, 1]))", dict(x=np.arange(6.0).reshape(2, 3))),
    ("m.take_along_dim(x, m.tensor([[0, 1], [2, 2], [4, 0]]), 1)", dict(x=np.arange(15.0).reshape(3, 5))),
    ("m.take_along_dim(x, m.tensor([[[0], [1]]]), 1) * m.take_along_dim(x, m.tensor([[[1]], [[0]], [[1]]]), 1)",
     dict(x=np.arange(6.0).reshape(3, 2, 1))),
    ("m.slice_scatter(x, y, 1, 0, 2) + m.select_scatter(x, y[:, 0], 1, 2)", dict(x=np.ones((2, 3)), y=[[1.0, 2.0], [3.0, 4.0]])),
    ("x.index_copy(0, m.tensor([2, 0]), y)", dict(x=np.ones((3, 2)), y=[[1.0, 2.0], [3.0, 4.0]])),
    ("m.ravel(x.t()) * 2 + m.msort(x).reshape(-1)", dict(x=np.arange(6.0).reshape(2, 3)[::-1].copy())),
    # statistics.py
    ("m.quantile(x, 0.3) + m.quantile(x, m.tensor([0.25, 0.9], dtype=m.float64), dim=1, keepdim=True).sum()",
     dict(x=_R.standard_normal((3, 5)))),
    ("m.nanquantile(x, 0.5, dim=0, interpolation='midpoint')", dict(x=[[1.0, NAN], [3.0, 2.0], [NAN, NAN]])),
    ("m.quantile(x, 0.4, interpolation='nearest') + m.quantile(x, 0.6, interpolation='higher')", dict(x=[1.0, 5.0, 2.0, 8.0])),
    ("x.kthvalue(2, 0)", dict(x=[[3.0, 1.0], [1.0, 2.0], [2.0, 0.0]])),
    ("m.aminmax(x, dim=1)", dict(x=[[3.0, 1.0, 4.0], [1.0, 5.0, 9.0]])),
    ("m.cov(x) + m.cov(x, correction=0) * 2", dict(x=_R.standard_normal((3, 6)))),
    ("m.corrcoef(x)", dict(x=_R.standard_normal((3, 6)))),
    ("m.cdist(x, y) + m.cdist(x, y, p=1) + m.cdist(x, y, p=3)", dict(x=_R.standard_normal((4, 3)), y=_R.standard_normal((2, 3)))),
    ("m.cdist(x, x).sum() + m.dist(x[0], x[1], 2.5)", dict(x=_R.standard_normal((3, 3)))),
    ("m.trapezoid(x) + m.trapezoid(x, y) + m.trapz(x, dx=0.5)", dict(x=[1.0, 2.0, 4.0, 3.0], y=[0.0, 1.0, 3.0, 4.5])),
    ("m.cumulative_trapezoid(x, dim=0)", dict(x=_R.standard_normal((4, 2)))),
    ("m.logcumsumexp(x, 1)", dict(x=[[-1000.0, 0.0, 1000.0, 2.0], [1.0, 2.0, 3.0, 4.0]])),
    ("m.searchsorted(m.tensor([1.0, 3.0, 5.0]), x) + m.bucketize(x, m.tensor([1.0, 3.0]), right=True)",
     dict(x=[3.0, 0.5, 6.0])),
]
EINSUMS = [("ij,jk->ik", (3, 4), (4, 5)), ("bij,bjk->bik", (2, 3, 4), (2, 4, 5)),
           ("bhqd,bhkd->bhqk", (2, 3, 4, 5), (2, 3, 6, 5)), ("i,i->", (4,), (4,)), ("i,j->ij", (3,), (4,)),
           ("ii->i", (3, 3)), ("ii", (3, 3)), ("ij->ji", (2, 3)), ("ij->", (2, 3)),
           ("...ij,...jk->...ik", (2, 3, 4), (4, 5)), ("bi,bi->b", (3, 4), (3, 4)), ("ijk,k->ij", (2, 3, 4), (4,)),
           ("ij,jk,kl->il", (2, 3), (3, 4), (4, 5)), ("i,i", (3,), (3,)), ("bij,bjk->bik", (1, 3, 4), (2, 4, 5)),
           ("ij,ij->ij", (2, 3), (2, 3)), ("iij->j", (3, 3, 2)), ("ab,cd->", (2, 3), (4, 5)),
           ("...,...->...", (2, 3), (3,)), ("i...->...", (2, 3, 4))]
for _eq, *_shapes in EINSUMS:
    _names = "xyz"[:len(_shapes)]
    CASES.append((f"m.einsum('{_eq}', {', '.join(_names)})",
                   {n: _R.standard_normal(s) for n, s in zip(_names, _shapes)}))


def _run(m, expr, arrays):
    ts = {k: m.tensor(np.asarray(v, dtype=np.float64), requires_grad=True) for k, v in arrays.items()}
    out = eval(expr, {"m": m, **ts})
    outs = list(out) if isinstance(out, (tuple, list)) else [out]
    total = sum((o.double() * (k + 1)).sum() for k, o in enumerate(outs) if o.dtype.is_floating_point)
    if isinstance(total, (m.Tensor,)) and total.requires_grad:
        finite = m.where(total.isfinite() if m is gradc else torch.isfinite(total), total, 0.0)
        finite.backward()
    grads = [None if t.grad is None else t.grad.numpy() for t in ts.values()]
    return [o.detach().numpy() for o in outs], grads


@pytest.mark.parametrize("expr,arrays", CASES, ids=[c[0] for c in CASES])
def test_matches_pytorch(expr, arrays):
    t_outs, t_grads = _run(torch, expr, arrays)
    g_outs, g_grads = _run(gradc, expr, arrays)
    assert len(t_outs) == len(g_outs)
    for t, g in zip(t_outs, g_outs):
        assert g.dtype == t.dtype and g.shape == t.shape
        np.testing.assert_allclose(g, t, rtol=1e-12, atol=1e-12)
    for t, g in zip(t_grads, g_grads):
        assert (t is None) == (g is None)
        if t is not None:
            np.testing.assert_allclose(g, t, rtol=1e-12, atol=1e-12)


def test_python_results_and_errors():
    a = gradc.tensor([1.0, 2.0])
    assert gradc.allclose(a, a + 1e-9) and not gradc.allclose(a, a + 1e-3)
    assert gradc.equal(a, a.clone()) and not gradc.equal(a, a[:1])
    with pytest.raises(RuntimeError, match="split_with_sizes expects split_sizes to sum exactly to 2"):
        a.split([1, 2])
    with pytest.raises(RuntimeError, match="tril: input tensor must have at least 2 dimensions"):
        a.tril()
    with pytest.raises(RuntimeError, match=r"einsum\(\): the number of subscripts in the equation \(2\) does not match"):
        gradc.einsum("ij,j->i", a, a)
    with pytest.raises(RuntimeError, match="fewer operands were provided than specified in the equation"):
        gradc.einsum("i,i", a)
    with pytest.raises(RuntimeError, match="output subscript k does not appear"):
        gradc.einsum("ij->k", a.reshape(1, 2))
    with pytest.raises(RuntimeError, match=r"take_along_dim\(\): input and indices should have the same number of "
                                           "dimensions, but got 2 dimensions for input, and 1 dimensions for indices"):
        gradc.take_along_dim(a.reshape(1, 2), gradc.tensor([0]), 1)


def test_repeat_interleave_and_conv1d_errors_and_compile(compiled_vs_eager):
    x = gradc.arange(6.0).reshape(2, 3)
    assert gradc.repeat_interleave(gradc.tensor([1, 2, 0, 3])).tolist() == [0, 1, 1, 3, 3, 3]
    with pytest.raises(RuntimeError, match=r"repeats must have the same size as input along dim, but got "
                                           r"repeats.size\(0\) = 3 and input.size\(0\) = 2"):
        x.repeat_interleave(gradc.tensor([1, 2, 3]), dim=0)
    with pytest.raises(RuntimeError, match="repeats can not be negative"):
        x.repeat_interleave(gradc.tensor([1, -2]), dim=0)
    with pytest.raises(RuntimeError, match="Repeats must be non-negative"):
        x.repeat_interleave(-1)
    with pytest.raises(RuntimeError, match="Expected 2D \\(unbatched\\) or 3D \\(batched\\) input to conv1d"):
        gradc.nn.functional.conv1d(gradc.ones(1, 2, 1, 2), gradc.ones(4, 2, 3))
    with pytest.raises(RuntimeError, match="Kernel size can't be greater than actual input size"):
        gradc.nn.functional.conv1d(gradc.ones(1, 2, 2), gradc.ones(4, 2, 3))
    assert repr(gradc.nn.Conv1d(2, 4, 3, stride=2, dilation=2, groups=2, bias=False)) == (
        "Conv1d(2, 4, kernel_size=(3,), stride=(2,), dilation=(2,), groups=2, bias=False)")
    rng = np.random.default_rng(3)
    counts = gradc.tensor([2, 0, 1, 3])
    compiled_vs_eager(lambda a, w: (gradc.nn.functional.conv1d(a.repeat_interleave(2, dim=2), w, padding=1) ** 2
                                    ).sum() + a.repeat_interleave(counts, dim=1).sum(),
                      rng.standard_normal((2, 4, 5)), rng.standard_normal((3, 4, 3)))
    with pytest.raises(RuntimeError, match="repeat_interleave with tensor repeats under @gradc.compile"):
        gradc.compile(lambda a, r: a.repeat_interleave(r).sum())(gradc.ones(3), gradc.tensor([1, 2, 3]))


def test_compositions_compile(compiled_vs_eager):
    """They trace like any tensor code: the compiled loss and gradient equal eager ones."""
    def f(x, w):
        h = gradc.einsum("ij,jk->ik", x, w).tril() + gradc.outer(x.diagonal(), w.diagonal()).triu(1)
        a, b = h.chunk(2, dim=1)
        return (gradc.logaddexp(a, b.flip(1)) + h.roll(1, 0).diff(dim=0).sum()).sum()
    rng = np.random.default_rng(14)
    compiled_vs_eager(f, rng.standard_normal((4, 4)), rng.standard_normal((4, 4)), rtol=1e-10)


def test_running_extrema_and_windows_edge_cases_errors_and_compile(compiled_vs_eager):
    nan = float("nan")
    for name in ("cummax", "cummin"):
        ours = getattr(gradc.tensor([1.0, 3.0, nan, 2.0, nan, 0.0]), name)(0)
        theirs = getattr(torch.tensor([1.0, 3.0, nan, 2.0, nan, 0.0]), name)(0)
        np.testing.assert_array_equal(ours.values.numpy(), theirs.values.numpy())
        assert ours.indices.tolist() == theirs.indices.tolist()
        assert repr(getattr(gradc.tensor(2.0), name)(0)) == repr(getattr(torch.tensor(2.0), name)(0))
        b = getattr(gradc.tensor([True, False, True]), name)(0)
        tb = getattr(torch.tensor([True, False, True]), name)(0)
        assert b.values.tolist() == tb.values.tolist() and b.indices.tolist() == tb.indices.tolist()
    assert gradc.tensor(3.0).unfold(0, 1, 1).tolist() == [3.0]
    a = gradc.arange(7.0)
    for args, message in [((0, 8, 1), "maximum size for tensor at dimension 0 is 7 but size is 8"),
                          ((0, 2, 0), "step is 0 but must be > 0"), ((0, -1, 1), "size is -1 but must be >= 0")]:
        with pytest.raises(RuntimeError, match=f"^{message}$"):
            a.unfold(*args)
    with pytest.raises(IndexError, match="Dimension out of range"):
        a.unfold(1, 2, 1)
    rng = np.random.default_rng(3)
    compiled_vs_eager(lambda x: (x.cummax(1).values * x.cummin(0).values).sum() + x.unfold(1, 3, 2).exp().sum(),
                      rng.standard_normal((4, 9)))


def test_new_tensors_and_special_match_pytorch():
    for m in (torch, gradc):
        x = m.ones(2, 3, dtype=m.float64, requires_grad=True)
        made = [x.new_zeros(2), x.new_ones((1, 2)), x.new_full((2,), 3), x.new_tensor([1, 2]),
                x.new_tensor([1, 2], dtype=m.int64), x.new_empty(4)]
        if m is torch:
            want = [(str(t.dtype), tuple(t.shape), t.requires_grad) for t in made]
            want_values = [t.numpy() for t in made[:5]]
        else:
            assert [(str(t.dtype), tuple(t.shape), t.requires_grad) for t in made] == want
            for t, w in zip(made[:5], want_values):
                np.testing.assert_array_equal(t.numpy(), w)
    got = []
    for m in (torch, gradc):
        a = m.tensor([0.25, 0.5, 0.9], dtype=m.float64, requires_grad=True)
        y = (m.special.logit(a) + m.special.logit(a, eps=0.3) + m.special.expit(a) + m.special.erf(a)
             + m.special.expm1(a) + m.special.log1p(a) + m.special.exp2(a) + m.special.logsumexp(a, 0)
             + m.special.softmax(a, 0) + m.special.log_softmax(a, 0))
        y.sum().backward()
        got.append((y.detach().numpy(), a.grad.numpy()))
    for t, g in zip(*got):
        np.testing.assert_allclose(g, t, rtol=1e-12)


def test_arrangement_and_arithmetic_errors_and_compile(compiled_vs_eager):
    with pytest.raises(RuntimeError, match="diag\\(\\): Supports 1D or 2D tensors. Got 3D"):
        gradc.diag(gradc.ones(2, 2, 2))
    with pytest.raises(RuntimeError, match="no dimension of size 3 in input"):
        with pytest.warns(UserWarning, match="Using torch.cross without specifying the dim arg is deprecated"):
            gradc.cross(gradc.ones(2, 4), gradc.ones(2, 4))
    with pytest.raises(RuntimeError, match="linalg.cross: inputs dimension 1 must have length 3. Got 2 and 2"):
        gradc.cross(gradc.ones(3, 2), gradc.ones(3, 2), dim=1)
    with pytest.raises(RuntimeError, match="Provided sizes \\[2, 2\\] don't multiply up to the size of dim 1"):
        gradc.ones(2, 3).unflatten(1, (2, 2))
    assert gradc.median(gradc.tensor([[1.0, 3, 2, 4]]), 1).indices.tolist() == [2]
    rng = np.random.default_rng(8)

    def f(x, y):
        z = gradc.movedim(gradc.kron(x, y), 0, 1).tile((1, 2))
        return (gradc.cross(z[:3, :3], z[:3, 3:6], dim=0) ** 2).sum() + x.median() + gradc.addcmul(x, x, x).sum()
    compiled_vs_eager(f, rng.standard_normal((3, 2)), rng.standard_normal((1, 3)))


SCATTERS = [
    ("x.scatter_add(1, i, y)", dict(x=_X[0], y=_X[1, :3, :2]), [[0, 1], [2, 2], [3, 0]]),
    ("m.scatter(x, 1, i, y)", dict(x=_X[0], y=_X[1, :3, :2]), [[0, 1], [2, 3], [3, 0]]),
    ("x.scatter(0, i, 2.5)", dict(x=_X[0]), [[0, 1, 2, 0], [2, 0, 1, 1]]),
    ("x.index_add(0, i, y, alpha=3)", dict(x=_X[0], y=_X[1, :2]), [0, 2]),
    ("m.index_add(x, 1, i, y)", dict(x=_X[0], y=_X[1, :, :3]), [3, 3, 1]),
    ("x.index_fill(1, i, 2.5)", dict(x=_X[0]), [1, 3]),
    ("(x * 1).index_fill_(0, i, -1.0) + (x * 1).masked_fill_(x > 0, 0.5)", dict(x=_X[0]), [2]),
    ("(x * 1).scatter_(1, i, y) + (x * 1).scatter_add_(1, i, y) + (x * 1).index_add_(1, i[0], y)",
     dict(x=_X[0], y=_X[1, :3, :2]), [[0, 1], [2, 3], [3, 0]]),
    ("m.masked_select(x, x > 0.1)", dict(x=_X[0]), [0]),
]


@pytest.mark.parametrize("expr,arrays,index", SCATTERS, ids=[c[0] for c in SCATTERS])
def test_scatter_family_matches_pytorch(expr, arrays, index):
    got = []
    for m in (torch, gradc):
        ts = {k: m.tensor(np.asarray(v), requires_grad=True) for k, v in arrays.items()}
        y = eval(expr, {"m": m, "i": m.tensor(index), **ts})
        (y * m.arange(y.numel(), dtype=m.float64).reshape(y.shape)).sum().backward()
        got.append([y.detach().numpy()] + [t.grad.numpy() for t in ts.values()])
    for want, have in zip(*got, strict=True):
        assert have.shape == want.shape
        np.testing.assert_allclose(have, want, rtol=1e-12, atol=1e-12)


def test_data_dependent_selections_are_eager_only():
    for m in (torch, gradc):
        x = m.tensor([[0, 3, 3], [1, 0, 2]])
        got = [m.nonzero(x), m.nonzero(x, as_tuple=True), m.argwhere(x > 1), x.unique(), m.unique(x, return_inverse=True,
               return_counts=True), m.unique(x, dim=1), m.bincount(x[0], minlength=5), m.bincount(
               x[1], weights=m.tensor([0.5, 1.0, 2.0], dtype=m.float64))]
        if m is torch:
            want = got
    flat = lambda r: [np.asarray(t) for t in (r if isinstance(r, tuple) else (r,))]  # noqa: E731
    for w, g in zip(want, got, strict=True):
        for a, b in zip(flat(w), flat(g), strict=True):
            assert a.dtype == b.dtype
            np.testing.assert_array_equal(a, b)
    with pytest.raises(RuntimeError, match="nonzero under @gradc.compile: its result's shape depends on the tensor's "
                                           "values"):
        gradc.compile(lambda a: gradc.nonzero(a > 0).sum())(gradc.ones(3))
    with pytest.raises(RuntimeError, match="bincount only supports 1-d non-negative integral inputs."):
        gradc.bincount(gradc.tensor([1, -1]))
    idx = [[0, 1], [2, 2], [3, 0]]
    for reduce in ("add", "multiply"):       # PyTorch has no gradient for these
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            want = torch.tensor(_X[0]).scatter(1, torch.tensor(idx), torch.tensor(_X[1, :3, :2]), reduce=reduce)
        have = gradc.tensor(_X[0]).scatter(1, gradc.tensor(idx), gradc.tensor(_X[1, :3, :2]), reduce=reduce)
        np.testing.assert_allclose(have.numpy(), want.numpy(), rtol=1e-12)


def test_more_in_place_methods_match_pytorch():
    """Unary and fused in-place methods (values, gradients, and the version-counter error when
    one overwrites a value a node saved), fill_diagonal_ with wrap, and in-place sampling."""
    got = []
    for m in (torch, gradc):
        x = m.tensor([[1.5, -2.0, 0.25], [4.0, 0.5, -1.0]], dtype=m.float64, requires_grad=True)
        y = x * 1
        y.abs_().sqrt_().add_(1).log_().sigmoid_().tanh_().mul_(3).floor_()
        with pytest.raises(RuntimeError) as err:
            y.sum().backward()
        z = x * 1
        z.clamp_min_(0.1).clamp_max_(2.0).addcmul_(x, x, value=0.5).addcdiv_(x, x + 3, value=2).lerp_(x, 0.25)
        z.mul_(0.5).exp_()
        z.sum().backward()
        a = m.zeros(5, 3)
        a.fill_diagonal_(2.0, wrap=True)
        b = m.zeros(3, 3, 3)
        b.fill_diagonal_(1.0)
        got.append([str(err.value)[:140], y.detach().numpy(), z.detach().numpy(), x.grad.numpy(), a.numpy(), b.numpy()])
    assert got[1][0] == got[0][0]
    for want, have in zip(got[0][1:], got[1][1:], strict=True):
        np.testing.assert_allclose(have, want, rtol=1e-12)
    w = gradc.empty(2000, dtype=gradc.float64).uniform_(-2, 3)
    assert w.min().item() >= -2 and w.max().item() < 3 and abs(w.mean().item() - 0.5) < 0.2
    n = gradc.empty(4000).normal_(1.0, 2.0)
    assert abs(n.mean().item() - 1.0) < 0.2 and abs(n.std().item() - 2.0) < 0.2
    assert set(gradc.empty(100).bernoulli_(0.5).tolist()) <= {0.0, 1.0}
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place operation."):
        gradc.ones(2, requires_grad=True).uniform_()


_L = np.random.default_rng(40)
_SPD = _L.standard_normal((2, 3, 3)) + 3 * np.eye(3)
LINALG = ["m.linalg.inv(a)", "m.linalg.det(a)", "m.linalg.slogdet(a).logabsdet", "m.linalg.slogdet(a).sign * a.sum()",
          "m.linalg.solve(a, b)", "m.linalg.solve(a[0], v)", "m.linalg.solve(a, v)", "m.linalg.solve(a, b[0])",
          "a.inverse()", "a.det()", "a[0].logdet()", "m.linalg.vector_norm(a, 3, dim=(1, 2))", "m.linalg.matrix_norm(a)",
          "m.linalg.norm(a)", "m.linalg.norm(v, 1)"]


@pytest.mark.parametrize("expr", LINALG)
def test_linalg_matches_pytorch(expr):
    arrays = dict(a=_SPD, b=_L.standard_normal((2, 3, 2)), v=_L.standard_normal(3))
    got = []
    for m in (torch, gradc):
        ts = {n: m.tensor(x, requires_grad=True) for n, x in arrays.items()}
        y = eval(expr, {"m": m, **ts})
        (y * m.arange(y.numel(), dtype=m.float64).reshape(y.shape)).sum().backward()
        got.append([y.detach().numpy()] + [np.zeros(1) if t.grad is None else t.grad.numpy() for t in ts.values()])
    for want, have in zip(*got, strict=True):
        assert have.shape == want.shape
        np.testing.assert_allclose(have, want, rtol=1e-9, atol=1e-11)


def test_linalg_second_derivatives_errors_and_compile(compiled_vs_eager):
    from gradc.autograd import gradcheck, gradgradcheck
    a, b = gradc.tensor(_SPD[0], requires_grad=True), gradc.tensor(_SPD[1, :, :2], requires_grad=True)
    assert gradcheck(gradc.linalg.inv, (a,)) and gradgradcheck(gradc.linalg.det, (a,))
    assert gradgradcheck(gradc.linalg.solve, (a, b))
    with pytest.raises(RuntimeError, match="linalg.inv: A must be batches of square matrices, but they are 2 by 3"):
        gradc.linalg.inv(gradc.ones(2, 3))
    with pytest.raises(RuntimeError, match=r"linalg.solve: Incompatible shapes of A and B for the equation AX = B "
                                           r"\(2x2 and 3x1\)"):
        gradc.linalg.solve(gradc.ones(2, 2), gradc.ones(3))
    with pytest.raises(gradc.linalg.LinAlgError, match="linalg.inv: The diagonal element 1 is zero, the inversion "
                                                       "could not be completed because the input matrix is singular"):
        gradc.linalg.inv(gradc.zeros(2, 2))
    compiled_vs_eager(lambda x, y: (gradc.linalg.solve(x, y) ** 2).sum() + gradc.linalg.det(x) + x.inverse().trace(),
                      _SPD[0], _SPD[1, :, :2])


def test_values_without_gradients_match_pytorch():
    """Cases whose PyTorch gradient is not defined or not computable (vander's backward raises a
    version error in PyTorch 2.13; xlogy's at x = y = 0 is NaN)."""
    for expr in ["m.vander(m.tensor([1.0, 2.0, -0.5]))", "m.vander(m.tensor([1, 2, 3]), N=4, increasing=True)",
                 "m.xlogy(m.tensor([0.0, 0.0, 1.0, -2.0]), m.tensor([0.0, NAN, 0.0, 0.0]))", "m.xlogy(2, m.tensor([3.0]))",
                 "m.broadcast_tensors(m.ones(2, 1), m.ones(3))[0].shape", "m.result_type(m.ones(2, dtype=m.int32), 1.0)",
                 "m.is_nonzero(m.tensor([2.0]))", "m.isreal(m.tensor([1.0, NAN]))", "m.isneginf(m.tensor([-INF, 1.0]))"]:
        got = [repr(eval(expr, {"m": m, "NAN": NAN, "INF": INF})) for m in (torch, gradc)]
        assert got[1] == got[0], expr
    for m in (torch, gradc):
        with pytest.raises(RuntimeError, match="Attempting to broadcast a dimension of length 4 at -1"):
            m.broadcast_shapes((2, 1), (1, 3), (5, 2, 4))


def test_statistics_compile(compiled_vs_eager):
    def f(x, y):
        q = gradc.quantile(x, 0.3, dim=1) + gradc.nanquantile(x, 0.7, dim=1)
        return (q.sum() + gradc.cov(x).sum() + gradc.cdist(x, y).sum() + gradc.logcumsumexp(x, 1).sum()
                + gradc.trapezoid(x).sum() + gradc.xlogy(x.abs(), y.abs()[:, :1].t()).sum() + gradc.sinc(x).sum())
    rng = np.random.default_rng(7)
    compiled_vs_eager(f, rng.standard_normal((3, 5)), rng.standard_normal((5, 5)), rtol=1e-9)


def test_diagonal_is_a_view_and_diag_a_copy_as_in_pytorch():
    results = []
    for m in (torch, gradc):
        y = m.arange(9.0).reshape(3, 3) * 1
        d = y.diagonal()
        d.add_(1)
        y.diagonal(1).fill_(-1)
        m.diagonal(y, -1).mul_(10)
        w = m.ones(3, 3, dtype=m.float64, requires_grad=True)
        z = w * 2
        z.diagonal().mul_(5)
        z.sum().backward()
        c = m.diag(y)
        c.add_(100)                                          # a copy: y keeps its values
        b = m.arange(24.0).reshape(2, 3, 4)
        b.diagonal(0, 0, 2).zero_()
        results.append((y.tolist(), d._version, d._base is y, z.grad_fn.name(), w.grad.tolist(),
                        type(c.grad_fn).__name__ if c.grad_fn else None, b.tolist(),
                        type((w * 1).diagonal().grad_fn).__name__, type(m.diag(w).grad_fn).__name__))
    assert results[1] == results[0]
    with pytest.raises(RuntimeError, match="a view of a leaf Variable that requires grad"):
        gradc.ones(3, 3, requires_grad=True).diagonal().add_(1)
    with pytest.raises(RuntimeError, match="^diagonal dimensions cannot be identical 1, 1$"):
        gradc.ones(3, 3).diagonal(0, 1, 1)


def test_writes_through_a_diagonal_under_compile_reach_the_tensor(compiled_vs_eager):
    def f(x):
        y = x * 1
        y.diagonal().add_(x[0, 1])
        return y
    out = gradc.compile(f)(gradc.ones(3, 3))
    assert np.array_equal(out.numpy(), np.ones((3, 3)) + np.eye(3))
    compiled_vs_eager(lambda x: (f(x) ** 2).sum(), np.arange(9.0).reshape(3, 3))
    g = gradc.compile(lambda x: gradc.diag(x).add_(1).sum() + x.diagonal().sum())
    assert g(gradc.arange(9.0).reshape(3, 3)).item() == 27.0


@pytest.mark.parametrize("reduce", ["sum", "prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_reduce_compiled_equals_eager(compiled_vs_eager, reduce, include_self):
    """scatter_reduce has no kernel lowering: a NumPy step between kernels, and its VJP's too."""
    rng = np.random.default_rng(5)
    index = gradc.tensor(rng.integers(0, 3, (5, 4)))
    x, src = rng.permutation(32)[:12].reshape(3, 4) * 0.25, rng.permutation(32)[12:32].reshape(5, 4) * 0.25 + 0.01
    compiled_vs_eager(lambda a, b: (a.scatter_reduce(0, index, b, reduce, include_self=include_self).tanh() ** 2).sum(),
                      x, src, rtol=1e-12)
