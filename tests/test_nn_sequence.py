"""Sequence models against PyTorch: the Transformer decoder and encoder-decoder, MultiheadAttention's
kdim/vdim, bias_kv and zero-attention options, LSTM projections and packed sequences."""
import warnings

import numpy as np
import pytest

import gradc

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.filterwarnings("ignore:Support for mismatched key_padding_mask:UserWarning",
                                        "ignore:enable_nested_tensor is True:UserWarning")


def _load(gm, tm):
    """PyTorch's parameters copied into gradc's module (after checking names, shapes and repr)."""
    assert repr(gm) == repr(tm)
    ts, gs = tm.state_dict(), gm.state_dict()
    assert list(gs) == list(ts)
    assert [tuple(v.shape) for v in gs.values()] == [tuple(v.shape) for v in ts.values()]
    gm.load_state_dict({k: gradc.tensor(v.detach().numpy()) for k, v in ts.items()})


def _weighted(m, y):
    return (y * m.arange(y.numel(), dtype=m.float64).reshape(y.shape).sin()).sum()


def _compare(got, rtol=1e-9, atol=1e-10):
    for want, have in zip(*got, strict=True):
        assert have.shape == want.shape
        np.testing.assert_allclose(have, want, rtol=rtol, atol=atol)


# ---- Transformer decoder ---------------------------------------------------------------------

DECODER = [dict(), dict(norm_first=True), dict(batch_first=True, activation="gelu"), dict(activation="callable"),
           dict(masks=True), dict(masks=True, batch_first=True, norm_first=True), dict(causal=True),
           dict(unbatched=True, masks=True)]


@pytest.mark.parametrize("kw", DECODER, ids=lambda kw: "-".join(kw) or "plain")
def test_transformer_decoder_matches_pytorch(kw):
    """Two decoder layers and a final LayerNorm with PyTorch's weights (eval mode, dropout 0.1):
    outputs and the gradients of tgt, memory and every parameter, float64."""
    rng = np.random.default_rng(0)
    kw = dict(kw)
    masks, causal, unbatched = kw.pop("masks", False), kw.pop("causal", False), kw.pop("unbatched", False)
    act = kw.pop("activation", None)
    T, S, N, E = 4, 5, 3, 8
    mods = []
    for m in (torch, gradc):
        a = {} if act is None else dict(activation=(lambda x: x.tanh() * 2) if act == "callable" else act)
        layer = m.nn.TransformerDecoderLayer(E, 2, dim_feedforward=16, dtype=m.float64, **kw, **a)
        mods.append((layer, m.nn.TransformerDecoder(layer, 2, norm=m.nn.LayerNorm(E, dtype=m.float64)).eval()))
    (tl, td), (gl, gd) = mods
    assert repr(gl) == repr(tl)
    _load(gd, td)
    bf = kw.get("batch_first")
    shape = (lambda L: (L, E)) if unbatched else (lambda L: (N, L, E) if bf else (L, N, E))
    tgt, mem = rng.standard_normal(shape(T)), rng.standard_normal(shape(S))
    tgt_mask = np.triu(np.full((T, T), -np.inf), 1)
    mem_mask = np.zeros((T, S), bool)
    mem_mask[0, 1] = mem_mask[2, 4] = True
    tkpm, mkpm = np.zeros((N, T), bool), np.zeros((N, S), bool)
    tkpm[1, 3] = mkpm[0, 2] = mkpm[2, 0] = True
    got = []
    for m, mod in ((torch, td), (gradc, gd)):
        t, mm = m.tensor(tgt, requires_grad=True), m.tensor(mem, requires_grad=True)
        args = {}
        if masks:
            args = dict(tgt_mask=m.tensor(tgt_mask), memory_mask=m.tensor(mem_mask))
            if not unbatched:
                args.update(tgt_key_padding_mask=m.tensor(tkpm), memory_key_padding_mask=m.tensor(mkpm))
        if causal:
            args = dict(tgt_mask=m.nn.Transformer.generate_square_subsequent_mask(T, dtype=m.float64),
                        tgt_is_causal=True)
        y = mod(t, mm, **args)
        mod.zero_grad()
        _weighted(m, y).backward()
        got.append([y.detach().numpy(), t.grad.numpy(), mm.grad.numpy()] + [p.grad.numpy() for p in mod.parameters()])
    _compare(got)


@pytest.mark.parametrize("kw", [dict(), dict(batch_first=True, norm_first=True, activation="gelu")],
                         ids=["plain", "batch-first-pre-norm-gelu"])
def test_transformer_matches_pytorch(kw):
    """nn.Transformer (2 encoder, 2 decoder layers) with PyTorch's weights, in eval mode: the
    same state_dict keys and shapes and repr, outputs and gradients with every mask."""
    rng = np.random.default_rng(1)
    E, S, T, N = 8, 5, 4, 2
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tm = torch.nn.Transformer(E, 2, 2, 2, 16, dtype=torch.float64, **kw).eval()
    gm = gradc.nn.Transformer(E, 2, 2, 2, 16, dtype=gradc.float64, **kw).eval()
    _load(gm, tm)
    bf = kw.get("batch_first")
    src = rng.standard_normal((N, S, E) if bf else (S, N, E))
    tgt = rng.standard_normal((N, T, E) if bf else (T, N, E))
    skpm = np.zeros((N, S), bool)
    skpm[1, 4] = True
    got = []
    for m, mod in ((torch, tm), (gradc, gm)):
        s, t = m.tensor(src, requires_grad=True), m.tensor(tgt, requires_grad=True)
        mask = mod.generate_square_subsequent_mask(T, dtype=m.float64)
        y = mod(s, t, tgt_mask=mask, src_key_padding_mask=m.tensor(skpm), memory_key_padding_mask=m.tensor(skpm))
        mod.zero_grad()
        _weighted(m, y).backward()
        got.append([y.detach().numpy(), s.grad.numpy(), t.grad.numpy()] + [p.grad.numpy() for p in mod.parameters()])
    _compare(got)


def test_transformer_masks_init_and_errors():
    for sz in (1, 4):
        want = torch.nn.Transformer.generate_square_subsequent_mask(sz)
        have = gradc.nn.Transformer.generate_square_subsequent_mask(sz)
        assert have.dtype == gradc.float32 and have.numpy().tolist() == want.numpy().tolist()
    gm = gradc.nn.Transformer(8, 2, 1, 1, 16)
    for name, p in gm.named_parameters():         # Xavier-uniform matrices: bounded by sqrt(6 / (fan_in + fan_out))
        if p.ndim > 1:
            assert float(p.abs().max()) <= (6 / sum(p.shape)) ** 0.5 + 1e-7, name
    for m in (torch, gradc):
        mod = m.nn.Transformer(8, 2, 1, 1, 16)
        with pytest.raises(RuntimeError, match="the batch number of src and tgt must be equal"):
            mod(m.zeros(3, 2, 8), m.zeros(3, 1, 8))
        with pytest.raises(RuntimeError, match="the feature number of src and tgt must be equal to d_model"):
            mod(m.zeros(3, 2, 8), m.zeros(3, 2, 4))
        with pytest.raises(RuntimeError, match="activation should be relu/gelu, not tanh"):
            m.nn.TransformerDecoderLayer(8, 2, activation="tanh")
        layer = m.nn.TransformerDecoderLayer(8, 2, 16)
        with pytest.raises(RuntimeError, match="Need attn_mask if specifying the is_causal hint"):
            layer(m.zeros(3, 2, 8), m.zeros(4, 2, 8), tgt_is_causal=True)
        with pytest.raises(AssertionError, match="embed_dim must be divisible by num_heads"):
            m.nn.MultiheadAttention(8, 3)


def test_transformer_decoder_layer_compiled_equals_eager(compiled_vs_eager):
    """A small decoder-layer loss (eval mode, a causal mask) compiles to the eager values and gradients."""
    rng = np.random.default_rng(2)
    layer = gradc.nn.TransformerDecoderLayer(8, 2, 16, dtype=gradc.float64).eval()
    mask = gradc.nn.Transformer.generate_square_subsequent_mask(3, dtype=gradc.float64)

    def loss(tgt, mem):
        return (layer(tgt, mem, tgt_mask=mask) ** 2).mean() + layer.linear1.weight.sum()
    compiled_vs_eager(loss, rng.standard_normal((3, 2, 8)), rng.standard_normal((4, 2, 8)))


def test_transformer_decoder_layer_trains_with_dropout():
    """Training mode draws dropout masks (outputs differ between calls); eval mode is deterministic."""
    gradc.manual_seed(0)
    layer = gradc.nn.TransformerDecoderLayer(8, 2, 16, dropout=0.5)
    tgt, mem = gradc.randn(3, 2, 8), gradc.randn(4, 2, 8)
    assert not np.allclose(layer(tgt, mem).detach().numpy(), layer(tgt, mem).detach().numpy())
    layer.eval()
    np.testing.assert_array_equal(layer(tgt, mem).detach().numpy(), layer(tgt, mem).detach().numpy())


# ---- MultiheadAttention options ----------------------------------------------------------------

MHA = [dict(kdim=5, vdim=3), dict(kdim=5, vdim=3, bias=False), dict(add_bias_kv=True), dict(add_zero_attn=True),
       dict(add_bias_kv=True, add_zero_attn=True, kdim=6, vdim=6), dict(add_bias_kv=True, masks=True),
       dict(add_zero_attn=True, masks=True, per_head=True), dict(kdim=5, vdim=3, masks=True, batch_first=True),
       dict(add_bias_kv=True, add_zero_attn=True, unbatched=True), dict(kdim=4, vdim=4, no_weights=True, masks=True)]


@pytest.mark.parametrize("kw", MHA, ids=lambda kw: "-".join(f"{k}{v}" for k, v in kw.items()))
def test_multihead_attention_options_match_pytorch(kw):
    """kdim/vdim (separate projection weights), add_bias_kv, add_zero_attn, masks, per-head and
    no weights: outputs, weights and the gradients of the inputs and every parameter."""
    rng = np.random.default_rng(3)
    kw = dict(kw)
    masks, per_head, no_w, unbatched = (kw.pop(k, False) for k in ("masks", "per_head", "no_weights", "unbatched"))
    E, H, L, S, N = 8, 2, 3, 5, 2
    gradc.manual_seed(0)
    tm = torch.nn.MultiheadAttention(E, H, dtype=torch.float64, **kw)
    gm = gradc.nn.MultiheadAttention(E, H, dtype=gradc.float64, **kw)
    _load(gm, tm)
    assert (gm.in_proj_weight is None) == (tm.in_proj_weight is None)
    kd, vd = kw.get("kdim", E), kw.get("vdim", E)
    bf = kw.get("batch_first")
    shp = (lambda n, d: (n, d)) if unbatched else (lambda n, d: (N, n, d) if bf else (n, N, d))
    q, k, v = rng.standard_normal(shp(L, E)), rng.standard_normal(shp(S, kd)), rng.standard_normal(shp(S, vd))
    kpm = np.zeros((N, S), bool)
    kpm[0, 4] = kpm[1, 0] = True
    am = rng.standard_normal((L, S))
    got = []
    for m, mod in ((torch, tm), (gradc, gm)):
        ts = [m.tensor(a, requires_grad=True) for a in (q, k, v)]
        args = dict(key_padding_mask=m.tensor(kpm), attn_mask=m.tensor(am)) if masks else {}
        out, w = mod(*ts, need_weights=not no_w, average_attn_weights=not per_head, **args)
        loss = _weighted(m, out) + (0 if w is None else (w ** 2).sum())
        mod.zero_grad()
        loss.backward()
        got.append([out.detach().numpy()] + ([] if w is None else [w.detach().numpy()]) + [t.grad.numpy() for t in ts]
                   + [p.grad.numpy() for p in mod.parameters()])
    _compare(got)


def test_multihead_attention_init_and_errors():
    gradc.manual_seed(0)
    m = gradc.nn.MultiheadAttention(8, 2, add_bias_kv=True, kdim=4)
    assert [n for n, _ in m.named_parameters()] == [n for n, _ in torch.nn.MultiheadAttention(
        8, 2, add_bias_kv=True, kdim=4).named_parameters()]
    assert m.in_proj_weight is None and m.kdim == 4 and m.vdim == 8 and not m._qkv_same_embed_dim
    assert float(m.in_proj_bias.abs().sum()) == 0 and float(m.bias_k.abs().sum()) > 0
    for mod in (torch, gradc):
        a = mod.nn.MultiheadAttention(8, 2)
        x = mod.zeros(3, 2, 8)
        with pytest.raises(RuntimeError, match=r"The shape of the 2D attn_mask is torch.Size\(\[3, 4\]\), but should "
                                               r"be \(3, 3\)."):
            a(x, x, x, attn_mask=mod.zeros(3, 4))
        with pytest.raises(RuntimeError, match="Need attn_mask if specifying the is_causal hint"):
            a(x, x, x, is_causal=True)
