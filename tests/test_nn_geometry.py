"""Spatial nn features against PyTorch: 3-D convolutions and pools, conv padding modes, bicubic /
trilinear / antialiased interpolation, embedding max_norm and scale_grad_by_freq, grid_sample and
affine_grid.  Values, float64 gradients of every input (weights included), grad_fn names, module
reprs and errors, eagerly (and a compiled-vs-eager check or two)."""
import numpy as np
import pytest

import gradc

torch = pytest.importorskip("torch")

_R = np.random.default_rng(7)


def _a(*shape):
    return _R.standard_normal(shape)


def _run(m, expr, arrays, seed_weights):
    ts = {k: m.tensor(np.asarray(v), dtype=m.float64, requires_grad=True) for k, v in arrays.items()}
    out = eval(expr, {"m": m, "F": m.nn.functional, "nn": m.nn}, dict(ts))
    outs = list(out) if isinstance(out, tuple) else [out]
    loss = None
    for o, w in zip(outs, seed_weights(outs)):
        if o.dtype.is_floating_point and o.requires_grad:
            term = (o * m.tensor(w, dtype=o.dtype)).sum()
            loss = term if loss is None else loss + term
    if loss is not None:
        loss.backward()
    names = [type(o.grad_fn).__name__ if o.grad_fn is not None else None for o in outs]
    grads = [None if t.grad is None else t.grad.numpy() for t in ts.values()]
    return [o.detach().numpy() for o in outs], grads, names


def check(expr, arrays, rtol=1e-9, atol=1e-9, names=True):
    rng = np.random.default_rng(3)
    cache = {}

    def seed_weights(outs):
        if "w" not in cache:
            cache["w"] = [rng.standard_normal(tuple(o.shape)) for o in outs]
        return cache["w"]
    t_outs, t_grads, t_names = _run(torch, expr, arrays, seed_weights)
    g_outs, g_grads, g_names = _run(gradc, expr, arrays, seed_weights)
    assert len(t_outs) == len(g_outs)
    for t, g in zip(t_outs, g_outs):
        assert g.dtype == t.dtype and g.shape == t.shape
        np.testing.assert_allclose(g, t, rtol=rtol, atol=atol)
    for t, g in zip(t_grads, g_grads):
        assert (t is None) == (g is None)
        if t is not None:
            np.testing.assert_allclose(g, t, rtol=rtol, atol=atol)
    if names:
        assert g_names == t_names


def raises_like(fn):
    """fn(m) raises the same exception type and message with torch and gradc."""
    got = []
    for m in (torch, gradc):
        try:
            fn(m)
        except Exception as e:         # noqa: BLE001
            got.append((type(e).__name__, str(e)))
        else:
            got.append(None)
    assert got[0] is not None and got[0] == got[1], got


# ---- 3-D convolution and pooling ------------------------------------------------------------------
X5 = _a(2, 4, 5, 6, 5)
CONV3D = [
    ("F.conv3d(x, w)", dict(x=X5, w=_a(3, 4, 2, 3, 2))),
    ("F.conv3d(x, w, b, stride=(2, 1, 2), padding=(1, 0, 2), dilation=(1, 2, 1))",
     dict(x=X5, w=_a(6, 4, 3, 2, 2), b=_a(6))),
    ("F.conv3d(x, w, b, groups=2, padding='same', dilation=2)", dict(x=X5, w=_a(4, 2, 3, 2, 3), b=_a(4))),
    ("F.conv3d(x, w, padding='valid')", dict(x=X5[0], w=_a(2, 4, 2, 2, 2))),
    ("F.conv_transpose3d(x, w)", dict(x=X5, w=_a(4, 3, 2, 3, 2))),
    ("F.conv_transpose3d(x, w, b, stride=(2, 1, 3), padding=(1, 0, 1), output_padding=(1, 0, 2), groups=2, "
     "dilation=(1, 2, 1))", dict(x=X5, w=_a(4, 2, 3, 2, 2), b=_a(4))),
    ("F.conv_transpose3d(x, w, stride=2, dilation=2, output_padding=1)", dict(x=X5[0], w=_a(4, 1, 2, 2, 2))),
    ("F.conv_transpose2d(x, w, b, stride=2, padding=1)", dict(x=X5[0], w=_a(5, 2, 3, 3), b=_a(2))),
    ("F.conv_transpose1d(x, w, stride=3, padding=1)", dict(x=_a(5, 6), w=_a(5, 2, 3))),
    ("F.conv_transpose1d(x, w, b, stride=2, output_padding=1)", dict(x=_a(2, 5, 6), w=_a(5, 2, 3), b=_a(2))),
    ("F.conv2d(x, w, padding='same')", dict(x=X5[0, 0], w=_a(2, 5, 2, 3))),
    ("F.adaptive_avg_pool2d(x, (3, 4))", dict(x=X5[0])),
    ("F.max_pool3d(x, 2)", dict(x=X5)),
    ("F.max_pool3d(x, (2, 3, 2), stride=(1, 2, 2), padding=(1, 1, 0), dilation=(2, 1, 1), ceil_mode=True)",
     dict(x=X5)),
    ("F.max_pool3d(x, 3, 2, 1, return_indices=True)", dict(x=X5)),
    ("F.max_pool3d(x, 2, ceil_mode=True, return_indices=True)", dict(x=X5[0])),
    ("F.avg_pool3d(x, 2)", dict(x=X5)),
    ("F.avg_pool3d(x, (3, 2, 3), stride=2, padding=1)", dict(x=X5)),
    ("F.avg_pool3d(x, 3, 2, 1, ceil_mode=True, count_include_pad=False)", dict(x=X5)),
    ("F.avg_pool3d(x, 2, 2, 1, ceil_mode=True, divisor_override=3)", dict(x=X5[0])),
    ("F.adaptive_avg_pool3d(x, (2, 4, 3))", dict(x=X5)),
    ("F.adaptive_avg_pool3d(x, (None, 4, 2))", dict(x=X5[0])),
    ("F.adaptive_max_pool3d(x, (3, 4, 2))", dict(x=X5)),
    ("F.adaptive_max_pool3d(x, 2, return_indices=True)", dict(x=X5[0])),
    ("F.adaptive_max_pool2d(x, (3, 4), return_indices=True)", dict(x=X5[0])),
    ("F.max_pool2d(x, 3, 2, 1, return_indices=True)", dict(x=X5[0])),
]


@pytest.mark.parametrize("expr,arrays", CONV3D, ids=[c[0] for c in CONV3D])
def test_conv3d_and_pool3d(expr, arrays):
    check(expr, arrays)


def test_conv3d_and_pool3d_errors():
    x = lambda m: m.zeros(1, 2, 4, 4, 4)           # noqa: E731
    raises_like(lambda m: m.nn.functional.conv3d(m.zeros(2, 4, 4), m.zeros(3, 2, 2, 2, 2)))
    raises_like(lambda m: m.nn.functional.conv2d(m.zeros(2, 4), m.zeros(3, 2, 2, 2)))
    raises_like(lambda m: m.nn.functional.conv3d(x(m), m.zeros(3, 3, 2, 2, 2)))
    raises_like(lambda m: m.nn.functional.conv3d(x(m), m.zeros(3, 2, 5, 2, 2)))
    raises_like(lambda m: m.nn.functional.conv3d(x(m), m.zeros(3, 1, 2, 2, 2), groups=2))
    raises_like(lambda m: m.nn.functional.conv3d(x(m), m.zeros(3, 2, 2, 2, 2), stride=2, padding="same"))
    raises_like(lambda m: m.nn.functional.conv_transpose3d(x(m), m.zeros(2, 3, 2, 2, 2), stride=2,
                                                           output_padding=2))
    raises_like(lambda m: m.nn.functional.max_pool3d(x(m), 2, padding=2))
    raises_like(lambda m: m.nn.functional.max_pool3d(x(m), 5))
    raises_like(lambda m: m.nn.functional.avg_pool3d(x(m), 5))
    raises_like(lambda m: m.nn.functional.avg_pool3d(x(m), 2, divisor_override=0))


def test_3d_modules():
    def build(m):
        m.manual_seed(0)
        return [m.nn.Conv3d(2, 4, 3, padding=1, bias=False), m.nn.Conv3d(2, 4, (2, 3, 1), stride=(1, 2, 1), groups=2),
                m.nn.ConvTranspose3d(2, 4, 3, stride=2, groups=2), m.nn.MaxPool3d(2),
                m.nn.MaxPool3d((2, 1, 2), ceil_mode=True), m.nn.AvgPool3d(2, divisor_override=3),
                m.nn.AvgPool3d(3, 1, 1, count_include_pad=False), m.nn.AdaptiveAvgPool3d((2, None, 3)),
                m.nn.AdaptiveMaxPool3d(2), m.nn.Conv3d(2, 3, 3, padding="valid")]
    mods = {name: build(m) for name, m in (("torch", torch), ("gradc", gradc))}
    assert [repr(a) for a in mods["gradc"]] == [repr(a) for a in mods["torch"]]
    x = _a(1, 2, 5, 6, 4)
    for t_mod, g_mod in zip(mods["torch"], mods["gradc"]):
        for tp, gp in zip(t_mod.parameters(), g_mod.parameters()):
            assert tuple(gp.shape) == tuple(tp.shape)
            with gradc.no_grad():
                gp.copy_(gradc.tensor(tp.detach().numpy()))
        t_out = t_mod(torch.tensor(x, dtype=torch.float32))
        g_out = g_mod(gradc.tensor(x, dtype=gradc.float32))
        np.testing.assert_allclose(g_out.detach().numpy(), t_out.detach().numpy(), rtol=1e-5, atol=1e-5)


def test_conv3d_compiled_vs_eager(compiled_vs_eager):
    F = gradc.nn.functional

    def f(x, w, b):
        y = F.conv3d(x, w, b, stride=(1, 2, 1), padding=1)
        return F.max_pool3d(y, 2, ceil_mode=True).sum() + F.avg_pool3d(y, 2).pow(2).sum()
    compiled_vs_eager(f, _a(1, 2, 4, 5, 4), _a(3, 2, 2, 3, 2), _a(3))


# ---- conv padding_mode ----------------------------------------------------------------------------
@pytest.mark.parametrize("mode", ["zeros", "reflect", "replicate", "circular"])
@pytest.mark.parametrize("nd", [1, 2, 3])
def test_conv_padding_mode(mode, nd):
    kw = dict(padding=1 if nd != 2 else (1, 2), stride=1 if nd != 3 else (1, 2, 1), bias=True)
    if nd == 1:
        kw = dict(padding="same", dilation=2, bias=True)
    mods = {}
    for name, m in (("torch", torch), ("gradc", gradc)):
        cls = getattr(m.nn, f"Conv{nd}d")
        mods[name] = cls(2, 3, 3, padding_mode=mode, dtype=m.float64, **kw)
    assert repr(mods["gradc"]) == repr(mods["torch"])
    with gradc.no_grad():
        for tp, gp in zip(mods["torch"].parameters(), mods["gradc"].parameters()):
            gp.copy_(gradc.tensor(tp.detach().numpy()))
    x = _a(2, 2, *[5, 6, 4][:nd])
    outs, grads = [], []
    for name, m in (("torch", torch), ("gradc", gradc)):
        xt = m.tensor(x, requires_grad=True)
        out = mods[name](xt)
        (out * m.tensor(np.cos(np.arange(out.numel())).reshape(tuple(out.shape)))).sum().backward()
        outs.append(out.detach().numpy())
        grads.append([xt.grad.numpy()] + [p.grad.numpy() for p in mods[name].parameters()])
    np.testing.assert_allclose(outs[1], outs[0], rtol=1e-10, atol=1e-10)
    for g, t in zip(grads[1], grads[0]):
        np.testing.assert_allclose(g, t, rtol=1e-10, atol=1e-10)


def test_conv_module_errors():
    # PyTorch prints a set of the valid values (its order is its .pyc's): compared up to that order
    for m in (torch, gradc):
        with pytest.raises(ValueError, match=r"padding_mode must be one of \{('(zeros|reflect|replicate|circular)'"
                                             r"(, )?){4}\}, but got padding_mode='foo'"):
            m.nn.Conv2d(2, 3, 3, padding_mode="foo")
        with pytest.raises(ValueError, match=r"Invalid padding string 'foo', should be one of \{'(valid|same)', "
                                             r"'(valid|same)'\}"):
            m.nn.Conv2d(2, 3, 3, padding="foo")
    raises_like(lambda m: m.nn.Conv2d(2, 3, 3, padding="same", stride=2))
    raises_like(lambda m: m.nn.Conv3d(3, 4, 3, groups=2))
    raises_like(lambda m: m.nn.ConvTranspose3d(2, 3, 3, padding_mode="reflect"))


# ---- interpolate ----------------------------------------------------------------------------------
X4 = _a(2, 3, 5, 7)
INTERP = [
    ("F.interpolate(x, size=(8, 4), mode='bicubic')", dict(x=X4)),
    ("F.interpolate(x, size=(8, 11), mode='bicubic', align_corners=True)", dict(x=X4)),
    ("F.interpolate(x, scale_factor=1.7, mode='bicubic')", dict(x=X4)),
    ("F.interpolate(x, scale_factor=(0.6, 2.3), mode='bicubic', recompute_scale_factor=True)", dict(x=X4)),
    ("F.interpolate(x, scale_factor=(0.6, 2.3), mode='bilinear')", dict(x=X4)),
    ("F.interpolate(x, size=(1, 1), mode='bicubic', align_corners=True)", dict(x=X4)),
    ("F.interpolate(x, size=(3, 9, 4), mode='trilinear')", dict(x=X5)),
    ("F.interpolate(x, scale_factor=(1.5, 0.5, 2.0), mode='trilinear', align_corners=True)", dict(x=X5)),
    ("F.interpolate(x, scale_factor=1.3, mode='trilinear')", dict(x=X5)),
    ("F.interpolate(x, size=(3, 9, 4), mode='nearest')", dict(x=X5)),
    ("F.interpolate(x, size=(3, 9, 4), mode='nearest-exact')", dict(x=X5)),
    ("F.interpolate(x, size=(3, 4, 2), mode='area')", dict(x=X5)),
    ("F.interpolate(x, size=(3, 4), mode='area')", dict(x=X4)),
    ("F.interpolate(x, scale_factor=2.5, mode='nearest')", dict(x=X4)),
    ("F.interpolate(x, size=(2, 3), mode='bilinear', antialias=True)", dict(x=X4)),
    ("F.interpolate(x, size=(3, 2), mode='bilinear', antialias=True, align_corners=True)", dict(x=X4)),
    ("F.interpolate(x, size=(9, 3), mode='bilinear', antialias=True)", dict(x=X4)),
    ("F.interpolate(x, scale_factor=0.45, mode='bilinear', antialias=True)", dict(x=X4)),
    ("F.interpolate(x, size=(2, 3), mode='bicubic', antialias=True)", dict(x=X4)),
    ("F.interpolate(x, size=(4, 12), mode='bicubic', antialias=True, align_corners=True)", dict(x=X4)),
    ("F.interpolate(x, scale_factor=0.4, mode='bicubic', antialias=True)", dict(x=_a(1, 2, 11, 9))),
    ("F.interpolate(x, size=9, mode='linear')", dict(x=X4[0])),
    ("F.interpolate(x, scale_factor=2, mode='nearest')", dict(x=X4[0])),
    ("F.interpolate(x, size=(4, 9), mode='nearest')", dict(x=X4)),
    ("F.interpolate(x, size=(4, 9), mode='nearest-exact')", dict(x=X4)),
]


@pytest.mark.parametrize("expr,arrays", INTERP, ids=[c[0] for c in INTERP])
def test_interpolate(expr, arrays):
    check(expr, arrays)


def test_interpolate_float32_and_modules():
    x = _a(1, 2, 6, 5)
    for kw in (dict(size=(9, 4), mode="bicubic"), dict(scale_factor=0.5, mode="bilinear", antialias=True),
               dict(scale_factor=2, mode="bicubic", align_corners=True)):
        t = torch.nn.functional.interpolate(torch.tensor(x, dtype=torch.float32), **kw)
        g = gradc.nn.functional.interpolate(gradc.tensor(x, dtype=gradc.float32), **kw)
        assert g.dtype is gradc.float32
        np.testing.assert_allclose(g.numpy(), t.numpy(), rtol=1e-5, atol=1e-5)

    def mods(m):
        return [m.nn.Upsample(scale_factor=2, mode="bicubic"), m.nn.Upsample(size=(3, 4), mode="bilinear",
                                                                           align_corners=True),
                m.nn.Upsample(scale_factor=(1.5, 2), mode="nearest"), m.nn.UpsamplingBilinear2d(scale_factor=2),
                m.nn.UpsamplingNearest2d(size=7), m.nn.Upsample(scale_factor=(2, 1, 0.5), mode="trilinear")]
    tm, gm = mods(torch), mods(gradc)
    assert [repr(a) for a in gm] == [repr(a) for a in tm]
    for a, b in zip(tm, gm):
        xx = x if "tri" not in a.mode else x[None]
        np.testing.assert_allclose(b(gradc.tensor(xx)).numpy(), a(torch.tensor(xx)).numpy(), rtol=1e-12, atol=1e-12)


def test_interpolate_errors():
    x4 = lambda m: m.zeros(1, 2, 4, 4)          # noqa: E731
    raises_like(lambda m: m.nn.functional.interpolate(x4(m), size=3, mode="trilinear"))
    raises_like(lambda m: m.nn.functional.interpolate(x4(m)[0], size=3, mode="bicubic"))
    raises_like(lambda m: m.nn.functional.interpolate(m.zeros(1, 2, 3, 4, 4), size=3, mode="bilinear"))
    raises_like(lambda m: m.nn.functional.interpolate(m.zeros(1, 2, 3, 4, 4), size=3, mode="bilinear",
                                                       antialias=True))
    raises_like(lambda m: m.nn.functional.interpolate(x4(m), size=3, mode="nearest", antialias=True))
    raises_like(lambda m: m.nn.functional.interpolate(x4(m), size=(3, 3), scale_factor=2))
    raises_like(lambda m: m.nn.functional.interpolate(x4(m)))
    raises_like(lambda m: m.nn.functional.interpolate(x4(m), size=3, recompute_scale_factor=True))
    raises_like(lambda m: m.nn.functional.interpolate(x4(m), scale_factor=(2, 2, 2)))
    raises_like(lambda m: m.nn.functional.interpolate(x4(m), size=(2, 2, 2)))
    raises_like(lambda m: m.nn.functional.interpolate(x4(m), size=3, mode="nearest", align_corners=True))


def test_bicubic_compiled_vs_eager(compiled_vs_eager):
    F = gradc.nn.functional

    def f(x):
        y = F.interpolate(x, size=(7, 3), mode="bicubic", align_corners=True)
        return (F.interpolate(y, scale_factor=0.5, mode="bicubic", antialias=True) ** 2).sum() + y.sum()
    compiled_vs_eager(f, _a(1, 2, 5, 6))


# ---- embedding max_norm and scale_grad_by_freq ----------------------------------------------------
@pytest.mark.parametrize("kw", [dict(max_norm=1.0), dict(max_norm=0.5, norm_type=1.0), dict(scale_grad_by_freq=True),
                                dict(max_norm=1.5, scale_grad_by_freq=True, padding_idx=2),
                                dict(scale_grad_by_freq=True, padding_idx=-1)])
def test_embedding_max_norm_and_freq(kw):
    w0 = _a(6, 4) * 1.2
    idx = np.array([[0, 2, 2, 5], [5, 1, 2, 0]])
    res = []
    for m in (torch, gradc):
        w = m.tensor(w0, requires_grad=True)
        out = m.nn.functional.embedding(m.tensor(idx), w, **kw)
        (out * m.tensor(np.sin(np.arange(out.numel())).reshape(tuple(out.shape)))).sum().backward()
        res.append((out.detach().numpy(), w.detach().numpy(), w.grad.numpy(), type(out.grad_fn).__name__,
                    w._version))
    for t, g in zip(res[0][:3], res[1][:3]):
        np.testing.assert_allclose(g, t, rtol=1e-10, atol=1e-12)
    assert res[1][3] == res[0][3]
    assert (res[1][4] > 0) == (res[0][4] > 0)           # renormalised in place: the weight's version moved


def test_embedding_module_max_norm():
    for m in (torch, gradc):
        m.manual_seed(0)
    mods = [m.nn.Embedding(5, 3, padding_idx=1, max_norm=1.0, norm_type=3.0, scale_grad_by_freq=True)
            for m in (torch, gradc)]
    assert repr(mods[1]) == repr(mods[0]) == ("Embedding(5, 3, padding_idx=1, max_norm=1.0, norm_type=3.0, "
                                              "scale_grad_by_freq=True)")
    w = _a(5, 3) * 2
    with torch.no_grad():
        mods[0].weight.copy_(torch.tensor(w, dtype=torch.float32))
    with gradc.no_grad():
        mods[1].weight.copy_(gradc.tensor(w, dtype=gradc.float32))
    idx = [[3, 1, 4, 3]]
    outs = [mod(m.tensor(idx)) for mod, m in zip(mods, (torch, gradc))]
    np.testing.assert_allclose(outs[1].detach().numpy(), outs[0].detach().numpy(), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(mods[1].weight.detach().numpy(), mods[0].weight.detach().numpy(), rtol=1e-6, atol=1e-6)

    @gradc.compile
    def f(w, i):
        return gradc.nn.functional.embedding(i, w, max_norm=1.0).sum()
    with pytest.raises(RuntimeError, match="max_norm under @gradc.compile"):
        f(gradc.tensor(w, requires_grad=True), gradc.tensor(idx))


def test_embedding_freq_compiled_vs_eager(compiled_vs_eager):
    idx = gradc.tensor([[1, 3, 3], [0, 3, 1]])
    compiled_vs_eager(lambda w: (gradc.nn.functional.embedding(idx, w, scale_grad_by_freq=True) ** 2).sum(),
                      _a(4, 3))


# ---- grid_sample and affine_grid ------------------------------------------------------------------
_G = _R.uniform(-1.3, 1.3, (2, 4, 5, 2))         # some points outside [-1, 1]
GRID = [(f"F.grid_sample(x, g, mode={mode!r}, padding_mode={pm!r}, align_corners={ac})", dict(x=X4[:, :, :4, :6], g=_G))
        for mode in ("bilinear", "nearest") for pm in ("zeros", "border", "reflection") for ac in (False, True)]
GRID += [
    ("F.grid_sample(x, g, align_corners=False)", dict(x=_a(1, 2, 1, 5), g=_G[:1])),
    ("F.grid_sample(x, g, padding_mode='reflection', align_corners=True)", dict(x=_a(1, 2, 1, 5), g=_G[:1])),
    ("F.affine_grid(t, (2, 3, 4, 5), align_corners=False)", dict(t=_a(2, 2, 3))),
    ("F.affine_grid(t, (2, 3, 4, 5), align_corners=True)", dict(t=_a(2, 2, 3))),
    ("F.affine_grid(t, (1, 3, 2, 4, 3), align_corners=False)", dict(t=_a(1, 3, 4))),
    ("F.grid_sample(x, F.affine_grid(t, (2, 3, 6, 4), align_corners=False), align_corners=False)",
     dict(x=X4[:, :, :4, :6], t=np.array([[[0.9, 0.2, 0.1], [-0.3, 1.1, 0.05]], [[1.2, 0.0, -0.2], [0.1, 0.7, 0.3]]]))),
]


@pytest.mark.parametrize("expr,arrays", GRID, ids=[c[0] for c in GRID])
def test_grid_sample_and_affine_grid(expr, arrays):
    check(expr, arrays)


def test_grid_sample_errors_and_compiled(compiled_vs_eager):
    x, g = (lambda m: m.zeros(1, 2, 3, 3)), (lambda m: m.zeros(1, 2, 2, 2))     # noqa: E731
    raises_like(lambda m: m.nn.functional.grid_sample(x(m), g(m), mode="foo", align_corners=False))
    raises_like(lambda m: m.nn.functional.grid_sample(x(m), g(m), padding_mode="foo", align_corners=False))
    raises_like(lambda m: m.nn.functional.affine_grid(m.zeros(1, 2, 3, dtype=m.int64), (1, 1, 2, 2), False))
    raises_like(lambda m: m.nn.functional.affine_grid(m.zeros(1, 3, 3), (1, 1, 2, 2), False))
    raises_like(lambda m: m.nn.functional.affine_grid(m.zeros(1, 2, 3), (1, 2, 2), False))
    for m in (torch, gradc):
        with pytest.warns(UserWarning, match="Default grid_sample and affine_grid behavior has changed"):
            m.nn.functional.grid_sample(x(m), g(m))
    F = gradc.nn.functional
    compiled_vs_eager(lambda x, g: (F.grid_sample(x, g, padding_mode="reflection", align_corners=False) ** 2).sum(),
                      X4[:, :, :4, :6], _G)


def test_top_level_spellings():
    x, w = _a(1, 2, 4, 5, 4), _a(3, 2, 2, 2, 2)
    for name, args in (("conv3d", (x, w)), ("conv_transpose3d", (x, _a(2, 3, 2, 2, 2))), ("max_pool3d", (x, 2))):
        t = getattr(torch, name)(*[torch.tensor(a) if isinstance(a, np.ndarray) else a for a in args])
        g = getattr(gradc, name)(*[gradc.tensor(a) if isinstance(a, np.ndarray) else a for a in args])
        np.testing.assert_allclose(g.numpy(), t.numpy(), rtol=1e-10, atol=1e-10)
