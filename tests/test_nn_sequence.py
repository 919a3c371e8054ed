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


# ---- LSTM projections, packed sequences --------------------------------------------------------

def _run_recurrent(m, mod, x, h0, packed=None, batch_first=False):
    """Output, final states and the gradients of the input, initial states and parameters."""
    R = m.nn.utils.rnn
    xt = m.tensor(x, requires_grad=True)
    states = [m.tensor(h, requires_grad=True) for h in h0] if h0 else []
    hx = None if not states else (tuple(states) if len(states) == 2 else states[0])
    inp = xt if packed is None else R.pack_padded_sequence(xt, packed[0], batch_first=batch_first,
                                                            enforce_sorted=packed[1])
    out, hn = mod(inp, hx)
    if packed is not None:
        assert isinstance(out, R.PackedSequence)
        out, lengths = R.pad_packed_sequence(out, batch_first=batch_first, padding_value=-1.5)
        assert lengths.tolist() == list(packed[0])
    hs = hn if isinstance(hn, tuple) else (hn,)
    loss = _weighted(m, out) + sum((h ** 2).sum() for h in hs)
    mod.zero_grad()
    loss.backward()
    return ([out.detach().numpy()] + [h.detach().numpy() for h in hs] + [xt.grad.numpy()]
            + [s.grad.numpy() for s in states] + [p.grad.numpy() for p in mod.parameters()])


RNNS = [("LSTM", dict(proj_size=2)), ("LSTM", dict(proj_size=3, num_layers=2, bidirectional=True, initial=True)),
        ("LSTM", dict(proj_size=2, bias=False, batch_first=True)), ("LSTM", dict(packed=True)),
        ("LSTM", dict(packed=True, unsorted=True, num_layers=2, bidirectional=True, initial=True)),
        ("LSTM", dict(packed=True, unsorted=True, proj_size=2, bidirectional=True, batch_first=True, initial=True)),
        ("GRU", dict(packed=True, unsorted=True, bidirectional=True, initial=True)),
        ("RNN", dict(packed=True, nonlinearity="relu", num_layers=2, bidirectional=True)),
        ("RNN", dict(nonlinearity="relu", num_layers=2, initial=True))]


@pytest.mark.parametrize("cls,kw", RNNS, ids=[f"{c}-{'-'.join(k)}" for c, k in RNNS])
def test_recurrent_projections_and_packed_sequences_match_pytorch(cls, kw):
    """LSTM(proj_size) and RNN/LSTM/GRU over packed batches (sorted or not, uneven lengths):
    outputs (padded back), final states and every gradient equal PyTorch's in float64."""
    rng = np.random.default_rng(5)
    kw = dict(kw)
    packed, unsorted, initial = kw.pop("packed", False), kw.pop("unsorted", False), kw.pop("initial", False)
    tm = getattr(torch.nn, cls)(3, 4, dtype=torch.float64, **kw)
    gm = getattr(gradc.nn, cls)(3, 4, dtype=gradc.float64, **kw)
    _load(gm, tm)
    bf = kw.get("batch_first", False)
    T, N = 5, 3
    x = rng.standard_normal((N, T, 3) if bf else (T, N, 3))
    layers = kw.get("num_layers", 1) * (2 if kw.get("bidirectional") else 1)
    h0 = None
    if initial:
        h0 = [rng.standard_normal((layers, N, kw.get("proj_size") or 4))]
        if cls == "LSTM":
            h0.append(rng.standard_normal((layers, N, 4)))
    lengths = ((2, 5, 3) if unsorted else (5, 3, 2)) if packed else None
    got = [_run_recurrent(m, mod, x, h0, None if lengths is None else (lengths, not unsorted), bf)
           for m, mod in ((torch, tm), (gradc, gm))]
    _compare(got)


def test_rnn_dropout_between_layers_draws_in_training():
    gradc.manual_seed(0)
    lstm = gradc.nn.LSTM(3, 4, num_layers=2, dropout=0.5)
    x = gradc.randn(4, 2, 3)
    assert not np.allclose(lstm(x)[0].detach().numpy(), lstm(x)[0].detach().numpy())
    lstm.eval()
    np.testing.assert_array_equal(lstm(x)[0].detach().numpy(), lstm(x)[0].detach().numpy())


def test_packing_utilities_match_pytorch():
    rng = np.random.default_rng(6)
    seqs = [rng.standard_normal((n, 2)) for n in (3, 5, 1, 5)]
    got = []
    for m in (torch, gradc):
        R = m.nn.utils.rnn
        ts = [m.tensor(s, requires_grad=True) for s in seqs]
        out = []
        for bf in (False, True):
            for side in ("right", "left"):
                out.append(R.pad_sequence(ts, batch_first=bf, padding_value=7.0, padding_side=side).detach().numpy())
        p = R.pack_sequence(ts, enforce_sorted=False)
        out += [p.data.detach().numpy(), p.batch_sizes.numpy(), p.sorted_indices.numpy(), p.unsorted_indices.numpy()]
        padded, lengths = R.pad_packed_sequence(p, batch_first=True, total_length=7)
        out += [padded.detach().numpy(), lengths.numpy()]
        out += [s.detach().numpy() for s in R.unpack_sequence(p)]
        out += [s.detach().numpy() for s in R.unpad_sequence(padded, lengths, batch_first=True)]
        s = R.pack_sequence(sorted(ts, key=lambda t: -t.shape[0]))
        assert s.sorted_indices is None and s.unsorted_indices is None
        _weighted(m, padded).backward()
        out += [t.grad.numpy() for t in ts]
        got.append(out)
    for want, have in zip(*got, strict=True):
        assert have.dtype == want.dtype
        np.testing.assert_array_equal(have, want)


def test_recurrent_and_packing_errors_match_pytorch():
    cases = ["m.nn.LSTM(3, 4, proj_size=4)", "m.nn.LSTM(3, 4, proj_size=-1)", "m.nn.GRU(3, 4, proj_size=2)",
             "m.nn.RNN(3, 4, proj_size=2)", "R.pack_padded_sequence(m.zeros(4, 3, 2), [4, 2, 3])",
             "R.pack_padded_sequence(m.zeros(4, 3, 2), [4, 3, 0])", "R.pack_padded_sequence(m.zeros(4, 3, 2), [4, 3])",
             "R.pad_sequence([m.zeros(2)], padding_side='mid')",
             "R.pad_packed_sequence(R.pack_padded_sequence(m.zeros(4, 3, 2), [4, 3, 2]), total_length=2)"]
    for case in cases:
        errs = []
        for m in (torch, gradc):
            with pytest.raises(Exception) as e:
                eval(case, {"m": m, "R": m.nn.utils.rnn})
            errs.append((type(e.value), str(e.value)))
        assert errs[1] == errs[0], case
    assert repr(gradc.nn.LSTM(3, 4, proj_size=2, num_layers=2)) == repr(torch.nn.LSTM(3, 4, proj_size=2, num_layers=2))
