"""More nn layers and losses (instance norm, bilinear, LP pooling, channel dropout, padding
modules, in-place activations, margin and NLL losses, recurrent cells, parameter containers,
max unpooling) against PyTorch: values and gradients in float64, grad_fn names, reprs,
state_dict keys and errors."""
import warnings

import numpy as np
import pytest

import gradc
import gradc.nn.functional as F

torch = pytest.importorskip("torch")
TF = torch.nn.functional


def _rng(seed=0):
    return np.random.default_rng(seed)


def _pair(*arrays):
    """(gradc leaves, torch leaves) made from the same float64 arrays (integer arrays: no grad)."""
    g, t = [], []
    for a in arrays:
        a = np.asarray(a)
        grad = a.dtype.kind == "f"
        g.append(gradc.tensor(a, requires_grad=grad))
        t.append(torch.tensor(a, requires_grad=grad))
    return g, t


def _name(y):
    return type(y.grad_fn).__name__ if y.grad_fn is not None else None


def _compare(fg, ft, *arrays, name=True, rtol=1e-7, atol=1e-9):
    """fg(*gradc leaves) and ft(*torch leaves): same values, same grad_fn name (``name``), same
    gradients of sum(out * w) for a fixed random w."""
    g, t = _pair(*arrays)
    yg, yt = fg(*g), ft(*t)
    np.testing.assert_allclose(yg.detach().numpy(), yt.detach().numpy(), rtol=rtol, atol=atol)
    if name:
        assert _name(yg) == _name(yt)
    w = _rng(99).standard_normal(tuple(yt.shape))
    (yg * gradc.tensor(w)).sum().backward()
    (yt * torch.tensor(w)).sum().backward()
    for a, b in zip(g, t):
        if b.requires_grad:
            np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=rtol, atol=atol)
    return yg, yt


def _copy_params(gm, tm):
    with torch.no_grad():
        for (gn, gp), (tn, tp) in zip(gm.named_parameters(), tm.named_parameters()):
            assert gn == tn and tuple(gp.shape) == tuple(tp.shape)
            tp.copy_(torch.tensor(gp.detach().numpy()))


def _same_error(fg, ft, exc=Exception):
    with pytest.raises(exc) as eg:
        fg()
    with pytest.raises(exc) as et:
        ft()
    assert type(eg.value) is type(et.value)
    assert str(eg.value) == str(et.value)


# ---- normalisation ------------------------------------------------------------------------------------
@pytest.mark.parametrize("shape", [(2, 3, 5), (2, 3, 4, 5)])
def test_instance_norm_functional(shape):
    r = _rng()
    x, w, b = r.standard_normal(shape), r.standard_normal(3), r.standard_normal(3)
    _compare(lambda x, w, b: F.instance_norm(x, weight=w, bias=b), lambda x, w, b: TF.instance_norm(x, weight=w, bias=b),
             x, w, b)
    _compare(F.instance_norm, TF.instance_norm, x)


@pytest.mark.parametrize("cls,shape", [("InstanceNorm1d", (2, 3, 6)), ("InstanceNorm1d", (3, 6)),
                                       ("InstanceNorm2d", (2, 3, 4, 5)), ("InstanceNorm2d", (3, 4, 5))])
def test_instance_norm_modules_running_stats(cls, shape):
    gm = getattr(gradc.nn, cls)(3, affine=True, track_running_stats=True, dtype=gradc.float64)
    tm = getattr(torch.nn, cls)(3, affine=True, track_running_stats=True, dtype=torch.float64)
    assert repr(gm) == repr(tm)
    assert list(gm.state_dict()) == list(tm.state_dict())
    r = _rng(1)
    with torch.no_grad():
        tm.weight.copy_(torch.tensor(r.standard_normal(3)))
        tm.bias.copy_(torch.tensor(r.standard_normal(3)))
    with gradc.no_grad():
        gm.weight.copy_(gradc.tensor(tm.weight.detach().numpy()))
        gm.bias.copy_(gradc.tensor(tm.bias.detach().numpy()))
    for _ in range(2):
        _compare(gm, tm, r.standard_normal(shape))
    for k in ("running_mean", "running_var"):
        np.testing.assert_allclose(getattr(gm, k).numpy(), getattr(tm, k).numpy(), rtol=1e-10)
    gm.eval()
    tm.eval()
    _compare(gm, tm, r.standard_normal(shape), name=False)
    assert repr(gradc.nn.InstanceNorm1d(4)) == repr(torch.nn.InstanceNorm1d(4))


def test_instance_norm_errors():
    _same_error(lambda: gradc.nn.InstanceNorm2d(3)(gradc.zeros(3, 4)), lambda: torch.nn.InstanceNorm2d(3)(torch.zeros(3, 4)))
    _same_error(lambda: F.instance_norm(gradc.zeros(2, 3, 1)), lambda: TF.instance_norm(torch.zeros(2, 3, 1)))
    _same_error(lambda: gradc.nn.InstanceNorm1d(4, affine=True)(gradc.zeros(2, 3, 5)),
                lambda: torch.nn.InstanceNorm1d(4, affine=True)(torch.zeros(2, 3, 5)))


@pytest.mark.parametrize("shape,size", [((2, 6, 5), 3), ((2, 5, 3, 4), 2), ((1, 4, 3, 2, 2), 4)])
def test_local_response_norm(shape, size):
    x = _rng().standard_normal(shape)
    _compare(lambda x: F.local_response_norm(x, size, alpha=0.3, beta=0.7, k=1.5),
             lambda x: TF.local_response_norm(x, size, alpha=0.3, beta=0.7, k=1.5), x)
    assert repr(gradc.nn.LocalResponseNorm(size)) == repr(torch.nn.LocalResponseNorm(size))
    _same_error(lambda: F.local_response_norm(gradc.zeros(2, 3), 2), lambda: TF.local_response_norm(torch.zeros(2, 3), 2))


# ---- bilinear --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("bias", [True, False])
def test_bilinear(bias):
    gradc.manual_seed(0)
    gm = gradc.nn.Bilinear(4, 5, 3, bias=bias, dtype=gradc.float64)
    tm = torch.nn.Bilinear(4, 5, 3, bias=bias, dtype=torch.float64)
    assert repr(gm) == repr(tm)
    assert list(gm.state_dict()) == list(tm.state_dict())
    bound = 1 / 2
    assert all(float(p.abs().max()) <= bound for p in gm.parameters())
    _copy_params(gm, tm)
    r = _rng()
    _compare(gm, tm, r.standard_normal((2, 6, 4)), r.standard_normal((2, 6, 5)))
    _compare(gm, tm, r.standard_normal(4), r.standard_normal(5))
    _same_error(lambda: gm(gradc.zeros(2, 3, dtype=gradc.float64), gradc.zeros(2, 5, dtype=gradc.float64)),
                lambda: tm(torch.zeros(2, 3, dtype=torch.float64), torch.zeros(2, 5, dtype=torch.float64)))


# ---- pooling -----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("p", [1.0, 2.0, 3.0, float("inf")])
def test_lp_pool(p):
    r = _rng()
    x1, x2 = np.abs(r.standard_normal((2, 3, 9))) + 0.1, np.abs(r.standard_normal((2, 3, 6, 7))) + 0.1
    _compare(lambda x: F.lp_pool1d(x, p, 3), lambda x: TF.lp_pool1d(x, p, 3), x1, name=p != float("inf"))
    _compare(lambda x: F.lp_pool1d(x, p, 3, 2, True), lambda x: TF.lp_pool1d(x, p, 3, 2, True), x1,
             name=p != float("inf"))
    _compare(lambda x: F.lp_pool2d(x, p, (2, 3), 1), lambda x: TF.lp_pool2d(x, p, (2, 3), 1), x2,
             name=p != float("inf"))
    for gm, tm in ((gradc.nn.LPPool1d(p, 3), torch.nn.LPPool1d(p, 3)),
                   (gradc.nn.LPPool2d(p, 2, stride=(1, 2)), torch.nn.LPPool2d(p, 2, stride=(1, 2)))):
        assert repr(gm) == repr(tm)
        _compare(gm, tm, x1 if "1d" in repr(gm) else x2, name=False)


@pytest.mark.parametrize("kernel,stride,padding", [(2, None, 0), (3, 2, 1), ((2, 3), (2, 2), (1, 0))])
def test_max_unpool2d(kernel, stride, padding):
    x = _rng().standard_normal((2, 3, 7, 8))
    g, t = _pair(x)
    vg, ig = F.max_pool2d(g[0], kernel, stride, padding, return_indices=True)
    vt, it = TF.max_pool2d(t[0], kernel, stride, padding, return_indices=True)
    np.testing.assert_array_equal(ig.numpy(), it.numpy())
    if kernel == 2:              # the default output size (6, 8) holds every index
        _compare(lambda v: F.max_unpool2d(v, ig, kernel, stride, padding),
                 lambda v: TF.max_unpool2d(v, it, kernel, stride, padding), vt.detach().numpy())
    _compare(lambda v: F.max_unpool2d(v, ig, kernel, stride, padding, output_size=(7, 8)),
             lambda v: TF.max_unpool2d(v, it, kernel, stride, padding, output_size=(7, 8)), vt.detach().numpy())
    gm, tm = gradc.nn.MaxUnpool2d(kernel, stride, padding), torch.nn.MaxUnpool2d(kernel, stride, padding)
    assert repr(gm) == repr(tm)
    _compare(lambda v: gm(v, ig, (7, 8)), lambda v: tm(v, it, (7, 8)), vt.detach().numpy())


@pytest.mark.parametrize("p", [1.0, 2.0, float("inf")])
def test_lp_pool3d(p):
    x = np.abs(_rng().standard_normal((2, 2, 5, 4, 6))) + 0.1
    _compare(lambda v: F.lp_pool3d(v, p, 2), lambda v: TF.lp_pool3d(v, p, 2), x, name=p != float("inf"))
    _compare(lambda v: F.lp_pool3d(v, p, (2, 1, 3), (1, 2, 2), True),
             lambda v: TF.lp_pool3d(v, p, (2, 1, 3), (1, 2, 2), True), x, name=p != float("inf"))
    gm, tm = gradc.nn.LPPool3d(p, (2, 2, 3), stride=1), torch.nn.LPPool3d(p, (2, 2, 3), stride=1)
    assert repr(gm) == repr(tm)
    _compare(gm, tm, x, name=False)


@pytest.mark.parametrize("kernel,stride,padding", [(2, None, 0), ((2, 3, 2), (2, 2, 1), (1, 0, 1))])
def test_max_unpool3d(kernel, stride, padding):
    x = _rng().standard_normal((2, 2, 5, 6, 4))
    g, t = _pair(x)
    vg, ig = F.max_pool3d(g[0], kernel, stride, padding, return_indices=True)
    vt, it = TF.max_pool3d(t[0], kernel, stride, padding, return_indices=True)
    np.testing.assert_array_equal(ig.numpy(), it.numpy())
    _compare(lambda v: F.max_unpool3d(v, ig, kernel, stride, padding, output_size=(5, 6, 4)),
             lambda v: TF.max_unpool3d(v, it, kernel, stride, padding, output_size=(5, 6, 4)), vt.detach().numpy())
    gm, tm = gradc.nn.MaxUnpool3d(kernel, stride, padding), torch.nn.MaxUnpool3d(kernel, stride, padding)
    assert repr(gm) == repr(tm)
    _compare(lambda v: gm(v[0], ig[0], (5, 6, 4)), lambda v: tm(v[0], it[0], (5, 6, 4)), vt.detach().numpy())
    _same_error(lambda: F.max_unpool3d(vg[0, 0], ig[0, 0], kernel), lambda: TF.max_unpool3d(vt[0, 0], it[0, 0], kernel))
    bad_g, bad_t = ig.clone(), it.clone()          # (one bad index: PyTorch's loop order picks which it reports)
    bad_g[1, 0, 0, 0, 0], bad_t[1, 0, 0, 0, 0] = 120, 120
    _same_error(lambda: F.max_unpool3d(vg, bad_g, kernel, stride, padding, (5, 6, 4)),
                lambda: TF.max_unpool3d(vt, bad_t, kernel, stride, padding, (5, 6, 4)))


def test_max_unpool1d_and_with_indices_aliases():
    x = _rng().standard_normal((2, 3, 9))
    g, t = _pair(x)
    vg, ig = F.max_pool1d_with_indices(g[0], 3, 2)
    vt, it = TF.max_pool1d_with_indices(t[0], 3, 2)
    np.testing.assert_array_equal(ig.numpy(), it.numpy())
    _compare(lambda v: F.max_unpool1d(v, ig, 3, 2), lambda v: TF.max_unpool1d(v, it, 3, 2), vt.detach().numpy())
    _compare(lambda v: F.max_unpool1d(v, ig[0], 3, 2), lambda v: TF.max_unpool1d(v, it[0], 3, 2),
             vt.detach().numpy()[0])
    assert repr(gradc.nn.MaxUnpool1d(2)) == repr(torch.nn.MaxUnpool1d(2))
    x2 = _rng(1).standard_normal((2, 3, 6, 7))
    g, t = _pair(x2)
    for fg, ft, args in ((F.max_pool2d_with_indices, TF.max_pool2d_with_indices, (2,)),
                         (F.adaptive_max_pool2d_with_indices, TF.adaptive_max_pool2d_with_indices, ((3, 2),)),
                         (F.adaptive_max_pool1d_with_indices, TF.adaptive_max_pool1d_with_indices, (4,))):
        (a, ia), (b, ib) = fg(g[0][0] if fg is F.adaptive_max_pool1d_with_indices else g[0], *args), \
            ft(t[0][0] if ft is TF.adaptive_max_pool1d_with_indices else t[0], *args)
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy())
        np.testing.assert_array_equal(ia.numpy(), ib.numpy())
    _same_error(lambda: F.max_unpool2d(g[0], g[0].long(), 2), lambda: TF.max_unpool2d(t[0], t[0].long(), 2))


# ---- dropout family ------------------------------------------------------------------------------------
@pytest.mark.parametrize("fn,shape", [("dropout1d", (4, 6, 5)), ("dropout1d", (6, 5)), ("dropout2d", (4, 6, 3, 3)),
                                      ("dropout3d", (3, 6, 2, 2, 2)), ("dropout3d", (6, 2, 2, 2))])
def test_channel_dropout(fn, shape):
    x = gradc.tensor(_rng().standard_normal(shape) + 5, requires_grad=True)
    y = getattr(F, fn)(x, 0.5)
    batched = len(shape) > (2 if fn == "dropout1d" else 4 if fn == "dropout3d" else 3)
    per_channel = (y.detach().numpy() / x.detach().numpy()).reshape(shape[:2 if batched else 1] + (-1,))
    # each channel is all zero or all scaled by 2
    assert np.all(np.isclose(per_channel, 0) | np.isclose(per_channel, 2))
    assert np.all(np.ptp(per_channel, axis=-1) < 1e-12)
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), y.detach().numpy() / x.detach().numpy())
    assert getattr(F, fn)(x, 0.5, training=False) is x
    m = getattr(gradc.nn, fn.capitalize().replace("d", "D", 0))(0.3)
    assert repr(m) == repr(getattr(torch.nn, type(m).__name__)(0.3))
    assert m.eval()(x) is x


def test_dropout_errors_and_warnings():
    _same_error(lambda: F.dropout1d(gradc.zeros(2, 3, 4, 5)), lambda: TF.dropout1d(torch.zeros(2, 3, 4, 5)))
    _same_error(lambda: F.dropout2d(gradc.zeros(2, 3, 4), 1.5), lambda: TF.dropout2d(torch.zeros(2, 3, 4), 1.5))
    with warnings.catch_warnings(record=True) as wg:
        warnings.simplefilter("always")
        F.dropout2d(gradc.ones(2, 3, 4))
    with warnings.catch_warnings(record=True) as wt:
        warnings.simplefilter("always")
        TF.dropout2d(torch.ones(2, 3, 4))
    assert [str(w.message) for w in wg] == [str(w.message) for w in wt]


@pytest.mark.parametrize("fn", ["alpha_dropout", "feature_alpha_dropout"])
def test_alpha_dropout(fn):
    x = gradc.tensor(_rng().standard_normal((8, 6, 5)), requires_grad=True)
    assert getattr(F, fn)(x, 0.5) is x                      # training=False by default
    p, alpha = 0.4, 1.7580993408473766
    a = 1 / np.sqrt((alpha ** 2 * p + 1) * (1 - p))
    y = getattr(F, fn)(x, p, training=True)
    assert _name(y) == "AddBackward0"
    xv, yv = x.detach().numpy(), y.detach().numpy()
    kept = np.isclose(yv, a * xv + alpha * a * p)
    dropped = np.isclose(yv, -alpha * a + alpha * a * p)
    assert np.all(kept | dropped) and kept.any() and dropped.any()
    if fn == "feature_alpha_dropout":
        assert np.all(kept.all(-1) | dropped.all(-1))
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.where(kept, a, 0.0))
    m = getattr(gradc.nn, "AlphaDropout" if fn == "alpha_dropout" else "FeatureAlphaDropout")(0.2)
    assert repr(m) == repr(getattr(torch.nn, type(m).__name__)(0.2))
    assert m.eval()(x) is x


# ---- shuffles, distances, small modules -------------------------------------------------------------------
def test_channel_shuffle_pdist_cosine_softmax2d_unflatten():
    r = _rng()
    _compare(lambda x: F.channel_shuffle(x, 3), lambda x: TF.channel_shuffle(x, 3), r.standard_normal((2, 6, 4)))
    assert repr(gradc.nn.ChannelShuffle(2)) == repr(torch.nn.ChannelShuffle(2))
    _compare(gradc.nn.ChannelShuffle(2), torch.nn.ChannelShuffle(2), r.standard_normal((2, 4, 3, 3)))
    _same_error(lambda: F.channel_shuffle(gradc.zeros(2, 5, 3), 2), lambda: TF.channel_shuffle(torch.zeros(2, 5, 3), 2))
    for p in (1.0, 2.0, 3.0):
        _compare(lambda x: F.pdist(x, p), lambda x: TF.pdist(x, p), r.standard_normal((5, 4)))
    _same_error(lambda: F.pdist(gradc.zeros(2, 3, 4)), lambda: TF.pdist(torch.zeros(2, 3, 4)))
    a, b = r.standard_normal((3, 5, 4)), r.standard_normal((3, 5, 4))
    _compare(gradc.nn.CosineSimilarity(), torch.nn.CosineSimilarity(), a, b, name=False)
    _compare(gradc.nn.CosineSimilarity(dim=-1), torch.nn.CosineSimilarity(dim=-1), a, b, name=False)
    assert repr(gradc.nn.CosineSimilarity()) == repr(torch.nn.CosineSimilarity())
    assert repr(gradc.nn.PairwiseDistance()) == repr(torch.nn.PairwiseDistance())
    _compare(gradc.nn.Softmax2d(), torch.nn.Softmax2d(), r.standard_normal((2, 3, 4, 5)))
    _compare(gradc.nn.Softmax2d(), torch.nn.Softmax2d(), r.standard_normal((3, 4, 5)))
    assert repr(gradc.nn.Softmax2d()) == repr(torch.nn.Softmax2d())
    _same_error(lambda: gradc.nn.Softmax2d()(gradc.zeros(2, 3)), lambda: torch.nn.Softmax2d()(torch.zeros(2, 3)))
    gm, tm = gradc.nn.Unflatten(1, (2, 3)), torch.nn.Unflatten(1, (2, 3))
    assert repr(gm) == repr(tm)
    _compare(gm, tm, r.standard_normal((4, 6, 2)))


@pytest.mark.parametrize("name,args,shape", [
    ("ZeroPad1d", (2,), (2, 3, 5)), ("ZeroPad2d", ((1, 0, 2, 1),), (2, 3, 4, 5)), ("ZeroPad3d", (1,), (1, 2, 3, 3, 3)),
    ("ConstantPad1d", ((1, 2), 3.5), (3, 5)), ("ConstantPad2d", (1, -1.0), (2, 3, 4, 5)),
    ("ConstantPad3d", ((1, 0, 0, 1, 2, 0), 0.5), (2, 2, 3, 3)),
    ("ReflectionPad1d", (2,), (2, 3, 5)), ("ReflectionPad2d", ((1, 2, 0, 3),), (2, 3, 4, 5)),
    ("ReplicationPad1d", ((3, 1),), (2, 3, 5)), ("ReplicationPad2d", (2,), (3, 4, 5)),
    ("CircularPad1d", (2,), (2, 3, 5)), ("CircularPad2d", ((1, 2, 2, 1),), (2, 3, 4, 5)),
    ("ReflectionPad3d", (1,), (1, 2, 3, 3, 4)), ("ReflectionPad3d", ((1, 0, 2, 1, 0, 2),), (2, 3, 4, 5)),
    ("ReplicationPad3d", (2,), (1, 2, 3, 3, 4)), ("ReplicationPad3d", ((0, 1, 3, 1, 2, 0),), (2, 3, 4, 5)),
    ("CircularPad3d", (1,), (1, 2, 3, 3, 4)), ("CircularPad3d", ((1, 2, 0, 1, 2, 1),), (2, 3, 4, 5)),
])
def test_padding_modules(name, args, shape):
    gm, tm = getattr(gradc.nn, name)(*args), getattr(torch.nn, name)(*args)
    assert repr(gm) == repr(tm)
    _compare(gm, tm, _rng().standard_normal(shape), name="Circular" not in name)


def test_circular_pad_dims_error():
    _same_error(lambda: gradc.nn.CircularPad2d(1)(gradc.zeros(3, 4)), lambda: torch.nn.CircularPad2d(1)(torch.zeros(3, 4)))


# ---- activations ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("fn,args", [("relu_", ()), ("elu_", (0.7,)), ("leaky_relu_", (0.2,)), ("hardtanh_", (-0.5, 0.8)),
                                     ("threshold_", (0.1, -2.0)), ("selu_", ()), ("celu_", (1.3,)),
                                     ("rrelu_", (0.1, 0.3))])
def test_inplace_activations(fn, args):
    x = _rng().standard_normal((4, 5))
    g, t = _pair(x)
    yg, yt = g[0] * 1, t[0] * 1
    og, ot = getattr(F, fn)(yg, *args), getattr(TF, fn)(yt, *args)
    assert og is yg and ot is yt
    np.testing.assert_allclose(yg.detach().numpy(), yt.detach().numpy(), rtol=1e-7)   # (celu: PyTorch's 1/alpha
    assert _name(yg) == _name(yt)                                                     # is a float32)
    w = _rng(3).standard_normal((4, 5))
    (yg * gradc.tensor(w)).sum().backward()
    (yt * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(g[0].grad.numpy(), t[0].grad.numpy(), rtol=1e-7)
    base = fn[:-1]
    zg, zt = g[0].detach() * 1, t[0].detach() * 1
    assert getattr(F, base)(zg, *args, inplace=True) is zg
    getattr(TF, base)(zt, *args, inplace=True)
    np.testing.assert_allclose(zg.numpy(), zt.numpy(), rtol=1e-7)


def test_rrelu():
    x = _rng().standard_normal((6, 7))
    _compare(lambda x: F.rrelu(x), lambda x: TF.rrelu(x), x)
    _compare(lambda x: F.rrelu(x, 0.2, 0.4), lambda x: TF.rrelu(x, 0.2, 0.4), x)
    gm, tm = gradc.nn.RReLU(0.1, 0.3), torch.nn.RReLU(0.1, 0.3)
    assert repr(gm) == repr(tm) and repr(gradc.nn.RReLU(inplace=True)) == repr(torch.nn.RReLU(inplace=True))
    _compare(gm.eval(), tm.eval(), x)
    xg = gradc.tensor(x, requires_grad=True)
    y = gm.train()(xg)
    slope = y.detach().numpy() / x
    neg = x <= 0
    assert np.all(slope[~neg] == 1) and np.all((slope[neg] >= 0.1) & (slope[neg] <= 0.3))
    assert len(np.unique(slope[neg])) > 1
    y.sum().backward()
    np.testing.assert_allclose(xg.grad.numpy(), slope)
    assert _name(y) == "RreluWithNoiseBackward0"


@pytest.mark.parametrize("hard", [False, True])
def test_gumbel_softmax(hard):
    x = gradc.tensor(_rng().standard_normal((5, 4)), requires_grad=True)
    gradc.manual_seed(3)
    y = F.gumbel_softmax(x, tau=0.5, hard=hard)
    assert _name(y) == ("AddBackward0" if hard else "SoftmaxBackward0")
    yv = y.detach().numpy()
    np.testing.assert_allclose(yv.sum(-1), 1.0)
    if hard:
        assert set(np.unique(yv)) <= {0.0, 1.0}
    gradc.manual_seed(3)
    soft = F.gumbel_softmax(x, tau=0.5)          # the same draws: the hard sample's argmax, its gradient
    if hard:
        np.testing.assert_array_equal(yv.argmax(-1), soft.detach().numpy().argmax(-1))
    w = gradc.tensor(_rng(1).standard_normal((5, 4)))
    (y * w).sum().backward()
    g1 = x.grad.numpy().copy()
    x.grad = None
    (soft * w).sum().backward()
    np.testing.assert_allclose(g1, x.grad.numpy(), rtol=1e-12)
    gradc.manual_seed(4)
    assert not np.allclose(F.gumbel_softmax(x).detach().numpy(), soft.detach().numpy())


# ---- losses ---------------------------------------------------------------------------------------------------
RED = ["none", "mean", "sum"]


@pytest.mark.parametrize("reduction", RED)
def test_hinge_soft_margin_multilabel_soft_margin(reduction):
    r = _rng()
    x = r.standard_normal((4, 5))
    y = np.where(r.random((4, 5)) > 0.5, 1.0, -1.0)
    y[0, 0] = 0.0            # neither 1 nor -1: both of hinge's terms count, as PyTorch's
    _compare(lambda a: F.hinge_embedding_loss(a, gradc.tensor(y), 0.7, reduction=reduction),
             lambda a: TF.hinge_embedding_loss(a, torch.tensor(y), 0.7, reduction=reduction), x, name=False)
    gm, tm = gradc.nn.HingeEmbeddingLoss(0.5, reduction=reduction), torch.nn.HingeEmbeddingLoss(0.5, reduction=reduction)
    assert repr(gm) == repr(tm)
    _compare(lambda a: gm(a, gradc.tensor(y)), lambda a: tm(a, torch.tensor(y)), x, name=False)
    _compare(lambda a: F.soft_margin_loss(a, gradc.tensor(y), reduction=reduction),
             lambda a: TF.soft_margin_loss(a, torch.tensor(y), reduction=reduction), x)
    _compare(lambda a: gradc.nn.SoftMarginLoss(reduction=reduction)(a, gradc.tensor(y)),
             lambda a: torch.nn.SoftMarginLoss(reduction=reduction)(a, torch.tensor(y)), x)
    t01, w = (y > 0).astype(float), r.random(5)
    _compare(lambda a: F.multilabel_soft_margin_loss(a, gradc.tensor(t01), reduction=reduction),
             lambda a: TF.multilabel_soft_margin_loss(a, torch.tensor(t01), reduction=reduction), x, name=False)
    gm = gradc.nn.MultiLabelSoftMarginLoss(gradc.tensor(w), reduction=reduction)
    tm = torch.nn.MultiLabelSoftMarginLoss(torch.tensor(w), reduction=reduction)
    assert list(gm.state_dict()) == list(tm.state_dict())
    _compare(lambda a: gm(a, gradc.tensor(t01)), lambda a: tm(a, torch.tensor(t01)), x, name=False)


@pytest.mark.parametrize("reduction", RED)
def test_cosine_embedding_loss(reduction):
    r = _rng()
    a, b = r.standard_normal((4, 6)), r.standard_normal((4, 6))
    y = np.array([1.0, -1.0, -1.0, 1.0])
    _compare(lambda a, b: F.cosine_embedding_loss(a, b, gradc.tensor(y), 0.1, reduction=reduction),
             lambda a, b: TF.cosine_embedding_loss(a, b, torch.tensor(y), 0.1, reduction=reduction), a, b, name=False)
    gm, tm = gradc.nn.CosineEmbeddingLoss(-0.2, reduction=reduction), torch.nn.CosineEmbeddingLoss(-0.2, reduction=reduction)
    _compare(lambda a, b: gm(a, b, gradc.tensor(y)), lambda a, b: tm(a, b, torch.tensor(y)), a, b, name=False)
    _compare(lambda a, b: gm(a, b, gradc.tensor(-1.0)), lambda a, b: tm(a, b, torch.tensor(-1.0)), a[0], b[0],
             name=False)


@pytest.mark.parametrize("p,margin,weighted", [(1, 1.0, False), (2, 0.5, False), (1, 1.5, True), (2, 1.0, True)])
@pytest.mark.parametrize("reduction", RED)
def test_multi_margin_loss(p, margin, weighted, reduction):
    r = _rng()
    x, y = r.standard_normal((6, 5)), r.integers(0, 5, 6)
    w = r.random(5) if weighted else None
    kw = dict(p=p, margin=margin, reduction=reduction)
    _compare(lambda a: F.multi_margin_loss(a, gradc.tensor(y), weight=None if w is None else gradc.tensor(w), **kw),
             lambda a: TF.multi_margin_loss(a, torch.tensor(y), weight=None if w is None else torch.tensor(w), **kw), x,
             name=reduction != "none")
    gm = gradc.nn.MultiMarginLoss(weight=None if w is None else gradc.tensor(w), **kw)
    tm = torch.nn.MultiMarginLoss(weight=None if w is None else torch.tensor(w), **kw)
    assert repr(gm) == repr(tm) and list(gm.state_dict()) == list(tm.state_dict())
    _compare(lambda a: gm(a, gradc.tensor(y)), lambda a: tm(a, torch.tensor(y)), x, name=False)
    _compare(lambda a: gm(a, gradc.tensor(y[0])), lambda a: tm(a, torch.tensor(y[0])), x[0], name=False)


def test_multi_margin_loss_errors():
    _same_error(lambda: F.multi_margin_loss(gradc.zeros(2, 3), gradc.tensor([0, 1]), p=3),
                lambda: TF.multi_margin_loss(torch.zeros(2, 3), torch.tensor([0, 1]), p=3))
    _same_error(lambda: F.multi_margin_loss(gradc.zeros(2, 3), gradc.tensor([0, 1]), reduction="bad"),
                lambda: TF.multi_margin_loss(torch.zeros(2, 3), torch.tensor([0, 1]), reduction="bad"))


@pytest.mark.parametrize("reduction", RED)
def test_multilabel_margin_loss(reduction):
    x = _rng().standard_normal((4, 5))
    y = np.array([[3, 0, -1, 1, 1], [0, 1, 2, 3, 4], [-1, 2, 0, 0, 0], [4, -1, 0, 0, 0]])
    _compare(lambda a: F.multilabel_margin_loss(a, gradc.tensor(y), reduction=reduction),
             lambda a: TF.multilabel_margin_loss(a, torch.tensor(y), reduction=reduction), x,
             name=reduction != "none")
    _compare(lambda a: gradc.nn.MultiLabelMarginLoss(reduction=reduction)(a, gradc.tensor(y[0])),
             lambda a: torch.nn.MultiLabelMarginLoss(reduction=reduction)(a, torch.tensor(y[0])), x[0], name=False)


@pytest.mark.parametrize("log_input,full", [(True, False), (False, False), (True, True), (False, True)])
@pytest.mark.parametrize("reduction", RED)
def test_poisson_nll_loss(log_input, full, reduction):
    r = _rng()
    x = r.standard_normal((4, 5)) if log_input else r.random((4, 5)) + 0.1
    t = r.poisson(2.0, (4, 5)).astype(float)
    _compare(lambda a: F.poisson_nll_loss(a, gradc.tensor(t), log_input, full, reduction=reduction),
             lambda a: TF.poisson_nll_loss(a, torch.tensor(t), log_input, full, reduction=reduction), x, name=False)
    gm = gradc.nn.PoissonNLLLoss(log_input, full, eps=1e-3, reduction=reduction)
    tm = torch.nn.PoissonNLLLoss(log_input, full, eps=1e-3, reduction=reduction)
    assert repr(gm) == repr(tm)
    _compare(lambda a: gm(a, gradc.tensor(t)), lambda a: tm(a, torch.tensor(t)), x, name=False)


@pytest.mark.parametrize("var_shape", [(4, 5), (4, 1), (4,), (1, 5)])
@pytest.mark.parametrize("full", [False, True])
@pytest.mark.parametrize("reduction", RED)
def test_gaussian_nll_loss(var_shape, full, reduction):
    r = _rng()
    x, t = r.standard_normal((4, 5)), r.standard_normal((4, 5))
    v = r.random(var_shape) + 0.05
    v.flat[0] = 1e-9                 # clamped to eps, the gradient passing as if not
    _compare(lambda a, b, v: F.gaussian_nll_loss(a, b, v, full, 1e-3, reduction),
             lambda a, b, v: TF.gaussian_nll_loss(a, b, v, full, 1e-3, reduction), x, t, v, name=False)
    gm, tm = gradc.nn.GaussianNLLLoss(full=full, reduction=reduction), torch.nn.GaussianNLLLoss(full=full, reduction=reduction)
    assert repr(gm) == repr(tm)
    _compare(gm, tm, x, t, v, name=False)


def test_gaussian_nll_loss_errors():
    _same_error(lambda: F.gaussian_nll_loss(gradc.zeros(4, 5), gradc.zeros(4, 5), gradc.ones(3, 2)),
                lambda: TF.gaussian_nll_loss(torch.zeros(4, 5), torch.zeros(4, 5), torch.ones(3, 2)))
    _same_error(lambda: F.gaussian_nll_loss(gradc.zeros(4, 5), gradc.zeros(4, 5), -gradc.ones(4, 5)),
                lambda: TF.gaussian_nll_loss(torch.zeros(4, 5), torch.zeros(4, 5), -torch.ones(4, 5)))


@pytest.mark.parametrize("swap", [False, True])
@pytest.mark.parametrize("reduction", RED)
def test_triplet_margin_with_distance_loss(swap, reduction):
    r = _rng()
    a, p, n = (r.standard_normal((5, 4)) for _ in range(3))
    _compare(lambda a, p, n: F.triplet_margin_with_distance_loss(a, p, n, swap=swap, reduction=reduction),
             lambda a, p, n: TF.triplet_margin_with_distance_loss(a, p, n, swap=swap, reduction=reduction), a, p, n,
             name=False)
    gm = gradc.nn.TripletMarginWithDistanceLoss(distance_function=lambda u, v: 1 - F.cosine_similarity(u, v),
                                                margin=0.5, swap=swap, reduction=reduction)
    tm = torch.nn.TripletMarginWithDistanceLoss(distance_function=lambda u, v: 1 - TF.cosine_similarity(u, v),
                                                margin=0.5, swap=swap, reduction=reduction)
    _compare(gm, tm, a, p, n, name=False)
    assert repr(gradc.nn.TripletMarginWithDistanceLoss()) == repr(torch.nn.TripletMarginWithDistanceLoss())


# ---- recurrent cells -------------------------------------------------------------------------------------------
@pytest.mark.parametrize("cls,kw", [("RNNCell", {}), ("RNNCell", dict(nonlinearity="relu", bias=False)),
                                    ("LSTMCell", {}), ("LSTMCell", dict(bias=False)), ("GRUCell", {})])
def test_recurrent_cells(cls, kw):
    gradc.manual_seed(0)
    gm = getattr(gradc.nn, cls)(5, 4, dtype=gradc.float64, **kw)
    tm = getattr(torch.nn, cls)(5, 4, dtype=torch.float64, **kw)
    assert repr(gm) == repr(tm)
    assert [(n, tuple(p.shape)) for n, p in gm.named_parameters()] == \
        [(n, tuple(p.shape)) for n, p in tm.named_parameters()]
    assert list(gm.state_dict()) == list(tm.state_dict())
    assert all(float(p.abs().max()) <= 0.5 for p in gm.parameters())
    _copy_params(gm, tm)
    r = _rng()
    lstm = cls == "LSTMCell"
    first = (lambda o: o[0]) if lstm else (lambda o: o)
    _compare(lambda x: first(gm(x)), lambda x: first(tm(x)), r.standard_normal((3, 5)))
    _compare(lambda x: first(gm(x)), lambda x: first(tm(x)), r.standard_normal(5))
    if lstm:
        _compare(lambda x, h, c: gm(x, (h, c))[1], lambda x, h, c: tm(x, (h, c))[1],
                 r.standard_normal((3, 5)), r.standard_normal((3, 4)), r.standard_normal((3, 4)))
        _compare(lambda x, h, c: gm(x, (h, c))[0], lambda x, h, c: tm(x, (h, c))[0],
                 r.standard_normal(5), r.standard_normal(4), r.standard_normal(4))
    else:
        _compare(lambda x, h: gm(x, h), lambda x, h: tm(x, h), r.standard_normal((3, 5)), r.standard_normal((3, 4)))
        _compare(lambda x, h: gm(x, h), lambda x, h: tm(x, h), r.standard_normal(5), r.standard_normal(4))
    _same_error(lambda: gm(gradc.zeros(2, 3, 5, dtype=gradc.float64)),
                lambda: tm(torch.zeros(2, 3, 5, dtype=torch.float64)))


# ---- containers ---------------------------------------------------------------------------------------------------
def test_parameter_list_and_dict():
    g = gradc.nn.Module()
    g.pl = gradc.nn.ParameterList([gradc.nn.Parameter(gradc.zeros(3, 4)), gradc.zeros(5, dtype=gradc.float64)])
    g.pd = gradc.nn.ParameterDict({"a": gradc.nn.Parameter(gradc.zeros(3)), "b": gradc.zeros(2, 2)})
    t = torch.nn.Module()
    t.pl = torch.nn.ParameterList([torch.nn.Parameter(torch.zeros(3, 4)), torch.zeros(5, dtype=torch.float64)])
    t.pd = torch.nn.ParameterDict({"a": torch.nn.Parameter(torch.zeros(3)), "b": torch.zeros(2, 2)})
    assert repr(g) == repr(t)
    assert repr(g.pl) == repr(t.pl) and repr(g.pd) == repr(t.pd)
    assert list(g.state_dict()) == list(t.state_dict()) == ["pl.0", "pl.1", "pd.a", "pd.b"]
    assert [n for n, _ in g.named_parameters()] == [n for n, _ in t.named_parameters()]
    assert isinstance(g.pl[1], gradc.nn.Parameter) and g.pl[1].requires_grad
    g.pl.append(gradc.ones(2))
    g.pd["c"] = gradc.ones(1)
    assert len(g.pl) == 3 and list(g.pd) == ["a", "b", "c"] and len(list(g.parameters())) == 6
    assert g.pl[-1] is list(g.pl)[2]
    del g.pd["a"]
    assert list(g.pd.keys()) == ["b", "c"] and "pd.a" not in g.state_dict()
    assert repr(gradc.nn.ParameterList()) == repr(torch.nn.ParameterList())
    assert repr(gradc.nn.ParameterDict()) == repr(torch.nn.ParameterDict())
    opt = gradc.optim.SGD(g.parameters(), lr=1.0)
    (g.pl[0].sum() + g.pd["b"].sum() * 2).backward()
    opt.step()
    np.testing.assert_allclose(g.pd["b"].detach().numpy(), -2.0)


def test_lazy_linear():
    gm, tm = gradc.nn.LazyLinear(4), torch.nn.LazyLinear(4)
    assert repr(gm) == repr(tm)
    x = _rng().standard_normal((2, 3)).astype(np.float32)
    w_before = gm.weight
    y = gm(gradc.tensor(x))
    tm(torch.tensor(x))
    assert repr(gm) == repr(tm) and type(gm).__name__ == "Linear" and gm.weight is w_before
    assert tuple(gm.weight.shape) == (4, 3) and tuple(y.shape) == (2, 4)
    assert float(gm.weight.abs().max()) <= 1 / np.sqrt(3)
    _copy_params(gm, tm)
    np.testing.assert_allclose(gm(gradc.tensor(x)).detach().numpy(), tm(torch.tensor(x)).detach().numpy(), rtol=1e-6)


# ---- compiled vs eager -----------------------------------------------------------------------------------------------
def test_compiled_vs_eager(compiled_vs_eager):
    r = _rng()
    w = r.standard_normal((3, 4, 5))
    y = r.integers(0, 5, 6)
    m = gradc.tensor(r.standard_normal((2, 3, 5)))
    compiled_vs_eager(lambda x: F.instance_norm(x).pow(2).mul(m).sum(), r.standard_normal((2, 3, 5)))
    compiled_vs_eager(lambda a, b, w: F.bilinear(a, b, w).tanh().sum(), r.standard_normal((2, 4)),
                      r.standard_normal((2, 5)), w)
    compiled_vs_eager(lambda x: F.multi_margin_loss(x, gradc.tensor(y), p=2), r.standard_normal((6, 5)))
    compiled_vs_eager(lambda x: F.local_response_norm(x, 3).sum() + F.lp_pool1d(x.abs() + 0.1, 2, 2).sum(),
                      r.standard_normal((2, 4, 6)))
    compiled_vs_eager(lambda x, v: F.gaussian_nll_loss(x, x.detach() * 0.5, v), r.standard_normal((4, 3)),
                      r.random((4, 1)) + 0.1)
    cell = gradc.nn.GRUCell(3, 4, dtype=gradc.float64)
    compiled_vs_eager(lambda x: cell(x).sum(), r.standard_normal((2, 3)))


@pytest.mark.parametrize("call", [
    lambda M, Fn: Fn.bilinear(M.zeros(2, 3), M.zeros(3, 4), M.zeros(5, 3, 4)),
    lambda M, Fn: Fn.bilinear(M.zeros(2, 3), M.zeros(2, 5), M.zeros(5, 3, 4)),
    lambda M, Fn: Fn.multi_margin_loss(M.zeros(2, 3), M.tensor([0, 1, 2])),
    lambda M, Fn: Fn.multilabel_margin_loss(M.zeros(2, 3), M.zeros(2, 4).long()),
    lambda M, Fn: Fn.cosine_embedding_loss(M.zeros(2, 3), M.zeros(2, 3), M.ones(2, 1)),
    lambda M, Fn: Fn.cosine_embedding_loss(M.zeros(2, 3, 1), M.zeros(2, 3, 1), M.ones(2)),
    lambda M, Fn: M.nn.RNNCell(3, 4)(M.zeros(2, 3), M.zeros(3, 4)),
    lambda M, Fn: M.nn.RNNCell(3, 4, nonlinearity="sig")(M.zeros(2, 3)),
    lambda M, Fn: M.nn.LSTMCell(3, 4)(M.zeros(2, 3), (M.zeros(4), M.zeros(4))),
    lambda M, Fn: M.nn.GRUCell(3, 4)(M.zeros(3), M.zeros(1, 4)),
    lambda M, Fn: M.nn.GRUCell(3, 4)(M.zeros(2, 5)),
    lambda M, Fn: Fn.triplet_margin_with_distance_loss(M.zeros(2, 3), M.zeros(2, 3), M.zeros(2, 3), margin=0),
    lambda M, Fn: M.nn.TripletMarginWithDistanceLoss(margin=-1.0),
    lambda M, Fn: Fn.channel_shuffle(M.zeros(2, 4), 2),
    lambda M, Fn: Fn.max_unpool1d(M.zeros(1, 1, 2, 2), M.zeros(1, 1, 2, 2).long(), 2),
    lambda M, Fn: Fn.max_unpool2d(M.zeros(1, 1, 2, 2), M.zeros(1, 1, 2, 2).int(), 2),
    lambda M, Fn: Fn.max_unpool2d(M.zeros(1, 1, 2, 2), M.zeros(1, 1, 2, 2).long(), 2, output_size=(9, 9)),
    lambda M, Fn: Fn.gaussian_nll_loss(M.zeros(2, 3), M.zeros(2, 3), M.ones(2, 3), reduction="x"),
    lambda M, Fn: Fn.poisson_nll_loss(M.zeros(2, 3), M.zeros(2, 3), reduction="x"),
    lambda M, Fn: Fn.instance_norm(M.zeros(2, 3, 4), use_input_stats=False),
    lambda M, Fn: Fn.elu_(M.zeros(2, requires_grad=True)),
    lambda M, Fn: M.nn.MultiMarginLoss(p=3),
    lambda M, Fn: Fn.gumbel_softmax(M.zeros(2, 3).long()),
])
def test_errors_match_pytorch(call):
    _same_error(lambda: call(gradc, F), lambda: call(torch, TF))


def test_rrelu_inplace_training():
    x = gradc.tensor(_rng().standard_normal((5, 6)), requires_grad=True)
    y = x * 1
    F.rrelu_(y, 0.1, 0.3, training=True)
    assert _name(y) == "RreluWithNoiseBackward1"
    xv = x.detach().numpy()
    slope = y.detach().numpy() / xv
    assert np.all(slope[xv > 0] == 1) and np.all((slope[xv <= 0] >= 0.1) & (slope[xv <= 0] <= 0.3))
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), slope)


@pytest.mark.parametrize("f", [
    lambda x: (F.dropout2d(x, 0.4) * x).sum(),
    lambda x: F.alpha_dropout(x, 0.3, True).pow(2).sum(),
    lambda x: (F.gumbel_softmax(x, 0.7, hard=True) * x).sum() + (F.gumbel_softmax(x) * x).sum(),
    lambda x: F.rrelu(x, training=True).pow(2).sum(),
])
def test_random_layers_compiled_draw_eager_numbers(f):
    x = gradc.tensor(_rng().standard_normal((3, 4, 2, 2)), requires_grad=True)
    compiled = gradc.compile(f)
    gradc.manual_seed(5)
    a = compiled(x)
    a.backward()
    ga, x.grad = x.grad.numpy().copy(), None
    gradc.manual_seed(5)
    b = f(x)
    b.backward()
    np.testing.assert_allclose(a.item(), b.item(), rtol=1e-12)
    np.testing.assert_allclose(ga, x.grad.numpy(), rtol=1e-12, atol=1e-14)


# ---- EmbeddingBag, InstanceNorm3d, ConvTranspose output_size, parametrize.cached -------------------
W = _rng(5).standard_normal((6, 3))
BAGS = [
    ("m.tensor([1, 2, 4, 5, 4, 3, 2, 0])", "m.tensor([0, 2, 2, 5])", {}),
    ("m.tensor([1, 2, 4, 5, 4, 3, 2, 0])", "m.tensor([0, 2, 2, 5])", {"mode": "sum"}),
    ("m.tensor([1, 2, 4, 5, 4, 3, 2, 0])", "m.tensor([0, 2, 2, 5])", {"mode": "max"}),
    ("m.tensor([1, 2, 4, 5, 4, 3, 2, 0])", "m.tensor([0, 2, 2, 5])", {"mode": "max", "padding_idx": 4}),
    ("m.tensor([1, 2, 4, 5, 4, 3, 2, 0])", "m.tensor([0, 2, 2, 5])", {"mode": "mean", "padding_idx": 2}),
    ("m.tensor([1, 2, 4, 5, 4, 3, 2, 0])", "m.tensor([0, 2, 2, 8])", {"include_last_offset": True}),
    # (a last offset short of the input's end: PyTorch's last bag runs to the end)
    ("m.tensor([1, 2, 4, 5, 4, 3, 2, 0])", "m.tensor([0, 2, 2, 5])", {"include_last_offset": True}),
    ("m.tensor([1, 2, 4, 5, 4, 3, 2, 0])", "m.tensor([0, 3])", {"include_last_offset": True, "mode": "max"}),
    ("m.tensor([1, 2, 4, 5, 4, 3, 2, 0])", "m.tensor([0, 3, 5])", {"mode": "sum", "per_sample_weights": "psw"}),
    ("m.tensor([[1, 2, 4], [5, 4, 4]])", None, {}),
    ("m.tensor([[1, 2, 4], [5, 4, 4]])", None, {"mode": "max"}),
    ("m.tensor([[1, 2, 4], [5, 4, 4]])", None, {"mode": "sum", "padding_idx": -2}),
    ("m.tensor([[1, 1], [1, 1]])", None, {"mode": "mean", "padding_idx": 1}),
    ("m.tensor([1, 2, 3], dtype=m.int32)", "m.tensor([0, 1], dtype=m.int32)", {"mode": "sum"}),
]


@pytest.mark.parametrize("inp,offsets,kw", BAGS, ids=[f"{i}-{o}-{k}" for i, o, k in BAGS])
def test_embedding_bag_matches_pytorch(inp, offsets, kw):
    out = []
    for m, f in ((torch, TF), (gradc, F)):
        w = m.tensor(W, requires_grad=True)
        x = eval(inp, {"m": m})
        kw2 = dict(kw)
        if kw2.get("per_sample_weights") == "psw":
            kw2["per_sample_weights"] = m.tensor(np.linspace(0.5, 2, x.numel()), requires_grad=True)
        y = f.embedding_bag(x, w, None if offsets is None else eval(offsets, {"m": m}), **kw2)
        (y * m.tensor(np.cos(np.arange(y.numel())).reshape(tuple(y.shape)))).sum().backward()
        psw = kw2.get("per_sample_weights")
        out.append((y.detach().numpy(), w.grad.numpy(), None if psw is None else psw.grad.numpy(),
                    type(y.grad_fn).__name__))
    (wy, wg, wp, wn), (hy, hg, hp, hn) = out
    np.testing.assert_allclose(hy, wy, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(hg, wg, rtol=1e-12, atol=1e-12)
    if wp is not None:
        np.testing.assert_allclose(hp, wp, rtol=1e-12, atol=1e-12)
    assert hn == wn


def test_embedding_bag_module_repr_and_forward():
    for kw in ({}, {"mode": "max", "padding_idx": 1}, {"max_norm": 1.0, "include_last_offset": True},
               {"mode": "sum", "norm_type": 1.0, "scale_grad_by_freq": True, "padding_idx": -1}):
        gm, tm = gradc.nn.EmbeddingBag(5, 3, **kw), torch.nn.EmbeddingBag(5, 3, **kw)
        assert repr(gm) == repr(tm)
        assert gm.padding_idx == tm.padding_idx
        if "padding_idx" in kw:
            assert not gm.weight.detach().numpy()[gm.padding_idx].any()
    gm = gradc.nn.EmbeddingBag(5, 3, mode="sum", _weight=gradc.tensor(W[:5]))
    tm = torch.nn.EmbeddingBag(5, 3, mode="sum", _weight=torch.tensor(W[:5]))
    args = ([1, 2, 4, 3], [0, 1])
    np.testing.assert_allclose(gm(*map(gradc.tensor, args)).detach().numpy(),
                               tm(*map(torch.tensor, args)).detach().numpy())
    assert list(gm.state_dict()) == list(tm.state_dict())


BAG_ERRORS = [
    "f.embedding_bag(m.tensor([[1, 2], [3, 4]]), w, m.tensor([0, 1]))", "f.embedding_bag(m.tensor([1, 2, 3]), w)",
    "f.embedding_bag(m.tensor([1, 2, 3]), w, m.tensor([[0]]))",
    "f.embedding_bag(m.tensor([1, 2, 3]), w, m.tensor([0, 1]), mode='max', per_sample_weights=m.ones(3))",
    "f.embedding_bag(m.tensor([1, 2, 3]), w, m.tensor([0, 1]), mode='foo')",
    "f.embedding_bag(m.tensor([1, 2, 3]), w, m.tensor([0, 1]), per_sample_weights=m.ones(2), mode='sum')",
    "f.embedding_bag(m.tensor([1, 2, 9]), w, m.tensor([0, 1]))",
    "f.embedding_bag(m.tensor([1., 2]), w, m.tensor([0, 1]))",
    "f.embedding_bag(m.tensor([1, 2, 3]), w, m.tensor([1, 2]))",
    "f.embedding_bag(m.tensor([1, 2, 3]), w, m.tensor([0, 5]))",
    "f.embedding_bag(m.tensor([[1, 2], [3, 4]]), w, padding_idx=9)",
]


@pytest.mark.parametrize("expr", BAG_ERRORS)
def test_embedding_bag_errors_match_pytorch(expr):
    got = []
    for m, f in ((torch, TF), (gradc, F)):
        with pytest.raises(Exception) as e:
            eval(expr, {"m": m, "f": f, "w": m.tensor(W)})
        got.append((type(e.value).__name__, str(e.value)))
    assert got[1] == got[0]


def test_instance_norm_3d_matches_pytorch():
    x = _rng(2).standard_normal((2, 3, 2, 3, 4))
    for kw in ({}, {"affine": True}, {"track_running_stats": True}):
        gm, tm = gradc.nn.InstanceNorm3d(3, **kw).double(), torch.nn.InstanceNorm3d(3, **kw).double()
        assert repr(gm) == repr(tm)
        for inp in (x, x[0]):
            (gx,), (tx,) = _pair(inp)
            gy, ty = gm(gx), tm(tx)
            np.testing.assert_allclose(gy.detach().numpy(), ty.detach().numpy(), rtol=1e-10, atol=1e-10)
            gy.pow(3).sum().backward()
            ty.pow(3).sum().backward()
            np.testing.assert_allclose(gx.grad.numpy(), tx.grad.numpy(), rtol=1e-8, atol=1e-10)
    with pytest.raises(ValueError, match=r"expected 4D or 5D input \(got 3D input\)"):
        gradc.nn.InstanceNorm3d(3)(gradc.zeros(3, 2, 2))


CONVT = [("ConvTranspose1d", (2, 3, 5), dict(kernel_size=3, stride=2, padding=1), [10]),
         ("ConvTranspose1d", (3, 5), dict(kernel_size=3, stride=3), (3, 15)),
         ("ConvTranspose2d", (1, 3, 4, 5), dict(kernel_size=3, stride=2, padding=1), [8, 10]),
         ("ConvTranspose2d", (1, 3, 4, 5), dict(kernel_size=(3, 2), stride=(2, 3), dilation=2), [1, 4, 11, 15]),
         ("ConvTranspose3d", (1, 3, 2, 3, 2), dict(kernel_size=2, stride=2), (5, 6, 4))]


@pytest.mark.parametrize("name,shape,kw,size", CONVT, ids=[c[0] + str(c[3]) for c in CONVT])
def test_conv_transpose_output_size_matches_pytorch(name, shape, kw, size):
    x = _rng(3).standard_normal(shape)
    torch.manual_seed(0)
    tm = getattr(torch.nn, name)(3, 4, **kw).double()
    gm = getattr(gradc.nn, name)(3, 4, **kw).double()
    gm.load_state_dict({k: gradc.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
    (gx,), (tx,) = _pair(x)
    gy, ty = gm(gx, output_size=size), tm(tx, output_size=size)
    assert tuple(gy.shape) == tuple(ty.shape)
    np.testing.assert_allclose(gy.detach().numpy(), ty.detach().numpy(), rtol=1e-10, atol=1e-12)
    gy.sum().backward()
    ty.sum().backward()
    np.testing.assert_allclose(gx.grad.numpy(), tx.grad.numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("size", [[13], [9, 9], [7], (1, 3, 20)])
def test_conv_transpose_output_size_errors_match_pytorch(size):
    got = []
    for m in (torch, gradc):
        conv = m.nn.ConvTranspose1d(3, 4, kernel_size=3, stride=2)
        with pytest.raises(ValueError) as e:
            conv(m.zeros(1, 3, 4), output_size=size)
        got.append(str(e.value))
    assert got[1] == got[0]


def test_parametrize_cached_computes_once():
    from gradc.nn.utils import parametrize

    calls = []

    class Double(gradc.nn.Module):
        def forward(self, x):
            calls.append(1)
            return x * 2

    lin = gradc.nn.Linear(3, 2)
    original = lin.weight
    parametrize.register_parametrization(lin, "weight", Double())
    assert len(calls) == 1 and lin.parametrizations.weight.original is original    # (PyTorch's check call)
    a = lin.weight
    with parametrize.cached():
        b, c = lin.weight, lin.weight
        with parametrize.cached():
            d = lin.weight
        e = lin.weight
    f = lin.weight
    assert b is c is d is e and a is not b and f is not b
    assert len(calls) == 4
    with parametrize.cached():
        y = lin(gradc.ones(4, 3)) + lin(gradc.ones(4, 3))
    assert len(calls) == 5
    y.sum().backward()
    np.testing.assert_allclose(lin.parametrizations.weight.original.grad.numpy(), np.full((2, 3), 16.0))


# ---- nn.Buffer, NLLLoss2d, Container, RNNBase / RNNCellBase -----------------------------------------------------
def _buffer_story(m):
    """Buffers assigned as attributes: registered, persistent or not, replaced by plain tensors."""
    module = m.nn.Module()
    module.a = m.nn.Buffer(m.ones(2))
    module.b = m.nn.Buffer(m.zeros(1), persistent=False)
    module.c = m.ones(3)                                   # a plain tensor: no buffer
    module.b = m.full((2,), 5.0)                           # a tensor into a buffer's name: keeps its persistence
    module.d = m.nn.Buffer(m.ones(1, requires_grad=True) * 2)
    module.a = m.nn.Buffer(m.zeros(4), persistent=False)  # a Buffer brings its own
    x = m.ones(2, requires_grad=True)
    buf = m.nn.Buffer(x)
    out = (list(module.state_dict()), [n for n, _ in module.named_buffers()], module.b.tolist(),
           isinstance(module.a, m.nn.Buffer), isinstance(module.c, m.nn.Buffer), type(buf) is m.Tensor,
           buf.requires_grad, buf.is_leaf, buf.persistent, m.nn.Buffer().shape, module.d.requires_grad,
           module.d.grad_fn)
    try:
        module.b = 3
    except TypeError as e:
        out += (str(e),)
    return out


def test_buffer_registers_module_state_as_pytorchs():
    assert _buffer_story(gradc) == _buffer_story(torch)


def test_nll_loss_2d_container_and_recurrent_bases():
    x, target = _rng().standard_normal((2, 3, 4, 5)), _rng().integers(0, 3, (2, 4, 5))
    for m in (gradc, torch):
        with pytest.warns(FutureWarning, match="`NLLLoss2d` has been deprecated") as caught:
            m.nn.NLLLoss2d()
        assert caught[0].filename == __file__
        with pytest.warns(FutureWarning, match="`nn.Container` is deprecated") as caught:
            m.nn.Container()
        assert caught[0].filename == __file__
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        _compare(lambda v: gradc.nn.NLLLoss2d()(v, gradc.tensor(target)),
                 lambda v: torch.nn.NLLLoss2d()(v, torch.tensor(target)), x)
        assert isinstance(gradc.nn.NLLLoss2d(), gradc.nn.NLLLoss) and repr(gradc.nn.NLLLoss2d()) == "NLLLoss2d()"
        gc = gradc.nn.Container(fc=gradc.nn.Linear(2, 3), act=gradc.nn.ReLU())
        tc = torch.nn.Container(fc=torch.nn.Linear(2, 3), act=torch.nn.ReLU())
    assert repr(gc) == repr(tc) and list(gc.state_dict()) == list(tc.state_dict())
    for mode in ("RNN_TANH", "RNN_RELU", "LSTM", "GRU"):
        gm = gradc.nn.RNNBase(mode, 3, 4, 2, batch_first=True, dtype=gradc.float64)
        tm = torch.nn.RNNBase(mode, 3, 4, 2, batch_first=True, dtype=torch.float64)
        assert repr(gm) == repr(tm) and gm.mode == tm.mode and isinstance(gm, gradc.nn.RNNBase)
        _copy_params(gm, tm)       # (the same parameters; PyTorch's RNNBase has no forward, gradc's runs the mode)
    _same_error(lambda: gradc.nn.RNNBase("FOO", 3, 4), lambda: torch.nn.RNNBase("FOO", 3, 4))
    for cls in ("LSTM", "GRU", "RNN"):
        assert isinstance(getattr(gradc.nn, cls)(2, 3), gradc.nn.RNNBase)
        assert isinstance(getattr(gradc.nn, cls + "Cell")(2, 3), gradc.nn.RNNCellBase)
    gcell, tcell = gradc.nn.RNNCellBase(2, 3, True, 2), torch.nn.RNNCellBase(2, 3, True, 2)
    assert repr(gcell) == repr(tcell)
    assert [(n, tuple(p.shape)) for n, p in gcell.named_parameters()] == [
        (n, tuple(p.shape)) for n, p in tcell.named_parameters()]


LAZY = [("LazyLinear", (3,), {}, (2, 5)), ("LazyLinear", (4,), {"bias": False}, (2, 3, 6)),
        ("LazyConv1d", (4, 3), {"padding": 1}, (2, 3, 7)), ("LazyConv1d", (4, 2), {}, (3, 6)),
        ("LazyConv2d", (4, 3), {"groups": 2, "stride": 2}, (1, 2, 6, 5)), ("LazyConv3d", (2, 1), {}, (1, 3, 2, 3, 2)),
        ("LazyConvTranspose1d", (2, 3), {}, (1, 4, 5)), ("LazyConvTranspose2d", (3, 2), {"stride": 2}, (2, 2, 3, 3)),
        ("LazyConvTranspose3d", (2, 2), {"bias": False}, (1, 3, 2, 2, 2)),
        ("LazyBatchNorm1d", (), {}, (4, 3)), ("LazyBatchNorm2d", (), {"momentum": None}, (2, 3, 2, 2)),
        ("LazyBatchNorm3d", (), {"affine": False}, (2, 2, 2, 2, 2)),
        ("LazyInstanceNorm1d", (), {"affine": True}, (2, 3, 4)),
        ("LazyInstanceNorm2d", (), {"affine": True, "track_running_stats": True}, (2, 3, 4, 4)),
        ("LazyInstanceNorm3d", (), {}, (1, 2, 3, 3, 3)),
        ("LazyInstanceNorm1d", (), {"affine": False, "track_running_stats": False}, (2, 3, 4))]


def _lazy_state(module):
    return [(k, repr(v) if gradc.nn.parameter.is_lazy(v) or torch.nn.parameter.is_lazy(v) else tuple(v.shape))
            for k, v in module.state_dict().items()]


@pytest.mark.parametrize("name,args,kwargs,shape", LAZY)
def test_lazy_modules_materialise_at_the_first_call(name, args, kwargs, shape):
    gm = getattr(gradc.nn, name)(*args, dtype=gradc.float64, **kwargs)
    tm = getattr(torch.nn, name)(*args, dtype=torch.float64, **kwargs)
    assert repr(gm) == repr(tm) and _lazy_state(gm) == _lazy_state(tm)
    assert gm.has_uninitialized_params() == tm.has_uninitialized_params()
    before = {n: p for n, p in gm.named_parameters()}
    assert all(type(p).__name__ == "UninitializedParameter" for p in before.values())
    x = _rng().standard_normal(shape)
    yg, yt = gm(gradc.tensor(x)), tm(torch.tensor(x))
    assert type(gm).__name__ == type(tm).__name__ == name[4:] and repr(gm) == repr(tm)
    assert tuple(yg.shape) == tuple(yt.shape) and yg.dtype is gradc.float64
    assert _lazy_state(gm) == _lazy_state(tm)
    assert all(p is before[n] and type(p) is gradc.nn.Parameter for n, p in gm.named_parameters())
    _copy_params(gm, tm)
    _compare(gm, tm, x, name=False)


def test_lazy_parameters_refuse_their_shape_and_load_a_state_dict():
    for m in (gradc, torch):
        with pytest.raises(RuntimeError) as e:
            m.nn.LazyLinear(2).weight.shape
        assert "Can't access the shape of an uninitialized parameter or buffer" in str(e.value)
        p = m.nn.parameter.UninitializedParameter()
        assert repr(p) == "<UninitializedParameter>" and p.requires_grad and m.nn.parameter.is_lazy(p)
        p.materialize((2, 3))
        assert type(p) is m.nn.Parameter and tuple(p.shape) == (2, 3) and not m.nn.parameter.is_lazy(p)
        assert repr(m.nn.parameter.UninitializedBuffer()) == "<UninitializedBuffer>"
    src_g, src_t = gradc.nn.Linear(3, 2), torch.nn.Linear(3, 2)
    gm, tm = gradc.nn.LazyLinear(2), torch.nn.LazyLinear(2)
    assert repr(gm.load_state_dict(src_g.state_dict())) == repr(tm.load_state_dict(src_t.state_dict()))
    assert gradc.equal(gm.weight, src_g.weight) and type(gm).__name__ == "LazyLinear"
    gm(gradc.ones(1, 3))
    assert repr(gm) == "Linear(in_features=3, out_features=2, bias=True)"
    gb, tb = gradc.nn.LazyBatchNorm1d(), torch.nn.LazyBatchNorm1d()
    gb.load_state_dict(gradc.nn.BatchNorm1d(3).state_dict())
    tb.load_state_dict(torch.nn.BatchNorm1d(3).state_dict())
    gb(gradc.ones(2, 3)), tb(torch.ones(2, 3))
    assert repr(gb) == repr(tb) and _lazy_state(gb) == _lazy_state(tb)
    _same_error(lambda: gradc.nn.LazyLinear(2).load_state_dict({"weight": gradc.ones(2, 3)}),
                lambda: torch.nn.LazyLinear(2).load_state_dict({"weight": torch.ones(2, 3)}))


def _lazy_copied_and_converted(m):
    import copy
    lazy = m.nn.LazyConv2d(2, 3).double()
    twin = copy.deepcopy(lazy)
    out = [repr(twin.weight), type(twin).__name__, twin.weight.dtype]
    twin(m.ones(1, 3, 5, 5, dtype=m.float64))
    return out + [repr(twin), twin.weight.dtype, tuple(twin.weight.shape), repr(lazy.weight)]


def test_lazy_modules_deep_copy_and_convert_before_the_first_call():
    assert [str(v) for v in _lazy_copied_and_converted(gradc)] == [str(v) for v in _lazy_copied_and_converted(torch)]


def test_an_optimizer_made_before_the_first_call_trains_the_materialised_parameters():
    model = gradc.nn.Sequential(gradc.nn.LazyLinear(4), gradc.nn.ReLU(), gradc.nn.LazyLinear(1))
    opt = gradc.optim.SGD(model.parameters(), lr=0.1)
    x = gradc.randn(8, 3)
    loss = model(x).pow(2).mean()
    loss.backward()
    before = model[0].weight.detach().clone()
    opt.step()
    assert tuple(model[0].weight.shape) == (4, 3) and not gradc.equal(before, model[0].weight)


# ---- fractional max pooling ---------------------------------------------------------------------------------------
FRACTIONAL = [(2, (2, 3, 9, 11), (2, 3), {"output_size": (5, 4)}), (2, (3, 8, 7), 3, {"output_size": 4}),
              (2, (1, 2, 10, 10), 2, {"output_ratio": (0.5, 0.7)}), (2, (2, 2, 5, 6), (1, 2), {"output_size": (5, 1)}),
              (3, (2, 2, 7, 8, 9), (2, 3, 2), {"output_size": (3, 4, 5)}), (3, (2, 6, 5, 7), 2, {"output_size": (3, 2, 4)}),
              (3, (1, 1, 6, 6, 6), 2, {"output_ratio": (0.5, 0.5, 0.6)})]


@pytest.mark.parametrize("nd,shape,kernel,size", FRACTIONAL)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_fractional_max_pool_takes_pytorchs_windows_for_the_same_samples(nd, shape, kernel, size, dtype):
    r = _rng(nd)
    x = r.standard_normal(shape).astype(dtype)
    samples = r.random((shape[0] if len(shape) == nd + 2 else 1, shape[-nd - 1], nd)).astype(dtype)
    fg, ft = getattr(F, f"fractional_max_pool{nd}d"), getattr(TF, f"fractional_max_pool{nd}d")
    (vg, ig), (vt, it) = (
        fn(m.tensor(x), kernel, **size, return_indices=True, _random_samples=m.tensor(samples))
        for fn, m in ((fg, gradc), (ft, torch)))
    np.testing.assert_array_equal(vg.numpy(), vt.numpy())
    np.testing.assert_array_equal(ig.numpy(), it.numpy())
    if dtype == "float64":
        _compare(lambda v: fg(v, kernel, **size, _random_samples=gradc.tensor(samples)),
                 lambda v: ft(v, kernel, **size, _random_samples=torch.tensor(samples)), x)
        gm = getattr(gradc.nn, f"FractionalMaxPool{nd}d")(kernel, **size, _random_samples=gradc.tensor(samples))
        tm = getattr(torch.nn, f"FractionalMaxPool{nd}d")(kernel, **size, _random_samples=torch.tensor(samples))
        assert repr(gm) == repr(tm) and list(gm.state_dict()) == list(tm.state_dict())
        _compare(gm, tm, x)


def test_fractional_max_pool_draws_windows_and_checks_as_pytorch():
    x = gradc.randn(2, 3, 9, 9)
    values, indices = F.fractional_max_pool2d(x, 3, output_size=4, return_indices=True)
    assert values.shape == (2, 3, 4, 4) and indices.dtype is gradc.int64
    np.testing.assert_array_equal(x.flatten(-2).gather(-1, indices.flatten(-2)).reshape(2, 3, 4, 4).numpy(),
                                  values.numpy())
    assert repr(gradc.nn.FractionalMaxPool3d(2, output_ratio=0.5)) == "FractionalMaxPool3d()"
    for call in [
        lambda m: m.nn.functional.fractional_max_pool2d(m.ones(1, 2, 6, 6), 3, (5, 5)),
        lambda m: m.nn.functional.fractional_max_pool2d(m.ones(1, 2, 6, 6), 3, (4, 5)),
        lambda m: m.nn.functional.fractional_max_pool2d(m.ones(1, 2, 6, 6), 3),
        lambda m: m.nn.functional.fractional_max_pool3d(m.ones(1, 2, 4, 4, 4), 2, (4, 2, 2)),
        lambda m: m.nn.functional.fractional_max_pool3d(m.ones(1, 2, 4, 4, 4), 2, (2, 2, 4)),
        lambda m: m.nn.functional.fractional_max_pool2d(m.ones(1, 2, 6, 6), 2, 3, _random_samples=m.rand(1, 3, 2)),
        lambda m: m.nn.functional.fractional_max_pool2d(m.ones(1, 2, 6, 6), 2, 3,
                                                        _random_samples=m.rand(1, 2, 2, dtype=m.float64)),
        lambda m: m.nn.FractionalMaxPool2d(2, output_ratio=1.5),
        lambda m: m.nn.FractionalMaxPool2d(2),
        lambda m: m.nn.FractionalMaxPool2d(2, output_size=3, output_ratio=0.5),
    ]:
        _same_error(lambda: call(gradc), lambda: call(torch))
