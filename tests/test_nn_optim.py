"""nn modules and optimizers: training matches PyTorch's parameter updates step by step."""
import warnings

import numpy as np
import pytest

import gradc
import gradc.nn.functional as F


def _model():
    gradc.manual_seed(0)
    return gradc.nn.Sequential(gradc.nn.Linear(3, 8), gradc.nn.Tanh(), gradc.nn.Linear(8, 4))


def test_module_parameters_and_repr():
    m = _model()
    names = [n for n, _ in m.named_parameters()]
    assert names == ["0.weight", "0.bias", "2.weight", "2.bias"]
    assert all(p.requires_grad and p.is_leaf for p in m.parameters())
    assert "Linear(in_features=3, out_features=8, bias=True)" in repr(m)
    assert repr(m[0].bias).startswith("Parameter containing:\ntensor(")
    m.eval()
    assert not m[0].training
    m.train()
    assert m[2].training


def test_zero_grad_set_to_none_and_zero():
    m = _model()
    F.mse_loss(m(gradc.ones(2, 3)), gradc.zeros(2, 4)).backward()
    opt = gradc.optim.SGD(m.parameters(), lr=0.1)
    opt.zero_grad(set_to_none=False)
    assert all(p.grad is not None and float(p.grad.abs().sum()) == 0 for p in m.parameters())
    opt.zero_grad()
    assert all(p.grad is None for p in m.parameters())


@pytest.mark.parametrize("kind,kw", [
    ("SGD", dict(lr=0.1)),
    ("SGD", dict(lr=0.05, momentum=0.9)),
    ("SGD", dict(lr=0.05, momentum=0.9, nesterov=True, weight_decay=0.01)),
    ("Adam", dict(lr=0.01)),
    ("Adam", dict(lr=0.01, weight_decay=0.1, amsgrad=True)),
])
def test_training_matches_pytorch_step_by_step(kind, kw):
    torch = pytest.importorskip("torch")
    m = _model()
    tm = torch.nn.Sequential(torch.nn.Linear(3, 8), torch.nn.Tanh(), torch.nn.Linear(8, 4))
    with torch.no_grad():
        for p, tp in zip(m.parameters(), tm.parameters()):
            tp.copy_(torch.tensor(p.detach().numpy()))
    opt = getattr(gradc.optim, kind)(m.parameters(), **kw)
    topt = getattr(torch.optim, kind)(tm.parameters(), **kw)
    rng = np.random.default_rng(0)
    for step in range(6):
        x = rng.standard_normal((5, 3)).astype(np.float32)
        t = rng.integers(0, 4, 5)
        opt.zero_grad()
        topt.zero_grad()
        loss = F.cross_entropy(m(gradc.tensor(x)), gradc.tensor(t))
        tloss = torch.nn.functional.cross_entropy(tm(torch.tensor(x)), torch.tensor(t))
        loss.backward()
        tloss.backward()
        opt.step()
        topt.step()
        assert abs(loss.item() - tloss.item()) < 1e-5
        for p, tp in zip(m.parameters(), tm.parameters()):
            np.testing.assert_allclose(p.detach().numpy(), tp.detach().numpy(), rtol=1e-5, atol=1e-6)


def test_functional_losses_match_definitions():
    x = gradc.tensor([[1.0, 2.0, 0.5], [0.1, 0.2, 3.0]])
    t = gradc.tensor([1, 2])
    lp = x.log_softmax(1).detach().numpy()
    expected = -(lp[0, 1] + lp[1, 2]) / 2
    assert abs(F.cross_entropy(x, t).item() - expected) < 1e-6
    assert abs(F.mse_loss(x, x * 0).item() - float((x.detach().numpy() ** 2).mean())) < 1e-6
    with pytest.raises(ValueError, match="not a valid value"):
        F.mse_loss(x, x, reduction="avg")


# ---- losses against PyTorch: values and gradients of input and target ------------------------
LOSSES = [
    ("l1_loss", lambda m, a, b: m.nn.functional.l1_loss(a, b)),
    ("l1_loss(sum)", lambda m, a, b: m.nn.functional.l1_loss(a, b, reduction="sum")),
    ("smooth_l1_loss", lambda m, a, b: m.nn.functional.smooth_l1_loss(a, b * 4, beta=0.7)),
    ("smooth_l1_loss(beta=0)", lambda m, a, b: m.nn.functional.smooth_l1_loss(a, b * 4, beta=0.0)),
    ("huber_loss(none)", lambda m, a, b: m.nn.functional.huber_loss(a, b * 4, delta=1.5, reduction="none")),
    ("bce_with_logits", lambda m, a, b: m.nn.functional.binary_cross_entropy_with_logits(a, b)),
    ("bce_with_logits(weight,pos_weight)", lambda m, a, b: m.nn.functional.binary_cross_entropy_with_logits(
        a, b, weight=m.tensor([0.5, 0.75, 1.25, 1.5]), pos_weight=m.tensor([2.0, 1.5, 1.0, 0.5]), reduction="sum")),
    ("bce", lambda m, a, b: m.nn.functional.binary_cross_entropy(a.sigmoid(), b)),
    ("bce(weight,none)", lambda m, a, b: m.nn.functional.binary_cross_entropy(a.sigmoid(), b,
                                                                             weight=m.tensor([0.5, 0.75, 1.25, 1.5]),
                                                                             reduction="none")),
    ("logsigmoid", lambda m, a, b: m.nn.functional.logsigmoid(a * 10) * b),
    ("modules", lambda m, a, b: (m.nn.BCEWithLogitsLoss(pos_weight=m.tensor([2.0, 1.5, 1.0, 0.5]))(a, b)
                                 + m.nn.HuberLoss(delta=0.5)(a, b) + m.nn.SmoothL1Loss(beta=0.3)(a, b)
                                 + m.nn.L1Loss()(a, b) + m.nn.MSELoss(reduction="sum")(a, b))),
]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name,fn", LOSSES, ids=[n for n, _ in LOSSES])
def test_losses_match_pytorch(name, fn, dtype):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(5)
    x, t = (rng.standard_normal((3, 4)) * 3).astype(dtype), rng.random((3, 4)).astype(dtype)
    got = []
    for m in (torch, gradc):
        a, b = m.tensor(x, requires_grad=True), m.tensor(t, requires_grad=True)
        y = fn(m, a, b)
        y.sum().backward()
        got.append([y.detach().numpy(), a.grad.numpy(), b.grad.numpy()])
    tol = dict(rtol=1e-5, atol=1e-6) if dtype == "float32" else dict(rtol=1e-12, atol=1e-12)
    for want, have in zip(*got):
        assert have.dtype == want.dtype
        np.testing.assert_allclose(have, want, **tol)


def test_losses_compiled_equal_eager(compiled_vs_eager):
    """The composite losses fuse under @gradc.compile (softplus, where, abs and the mean)."""
    rng = np.random.default_rng(6)
    t = gradc.tensor(rng.random((8, 3)))

    def f(x, w):
        z = x @ w
        return (F.binary_cross_entropy_with_logits(z, t) + F.huber_loss(z, t, delta=0.5)
                + F.smooth_l1_loss(z, t, beta=0.2) + F.l1_loss(z, t))
    compiled_vs_eager(f, rng.standard_normal((8, 5)), rng.standard_normal((5, 3)), rtol=1e-10)


def _class_loss_data(shape, seed=8):
    """Logits of ``shape``, class-index targets (one ignored, -100) and class probabilities."""
    rng = np.random.default_rng(seed)
    c = shape[1] if len(shape) > 1 else shape[0]
    t = rng.integers(0, c, (shape[0],) + shape[2:] if len(shape) > 1 else ())
    if t.ndim:
        t.flat[0] = -100
    p = rng.random(shape)
    return rng.standard_normal(shape), t, p / p.sum(axis=1 if len(shape) > 1 else 0, keepdims=True), rng.random(c) + 0.5


@pytest.mark.parametrize("shape", [(5, 4), (4,), (3, 4, 2, 3)], ids=["NC", "C", "NCd1d2"])
@pytest.mark.parametrize("target", ["indices", "probabilities"])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_cross_entropy_and_nll_match_pytorch(shape, target, reduction):
    """cross_entropy with class indices (ignore_index) or probabilities, weights and label
    smoothing, and nll_loss: values and input gradients equal PyTorch's in float64; the
    modules keep their weight as a buffer."""
    torch = pytest.importorskip("torch")
    x, t, p, w = _class_loss_data(shape)
    for weighted in (False, True):
        for smoothing in (0.0, 0.25):
            got = []
            for m in (torch, gradc):
                a = m.tensor(x, requires_grad=True)
                tt = m.tensor(t) if target == "indices" else m.tensor(p)
                kw = dict(reduction=reduction, label_smoothing=smoothing)
                if weighted:
                    kw["weight"] = m.tensor(w)
                y = m.nn.functional.cross_entropy(a, tt, **kw)
                if target == "indices":
                    kw.pop("label_smoothing")
                    y = y + 0.5 * m.nn.functional.nll_loss(a.log_softmax(1 if a.ndim > 1 else 0), tt, **kw)
                    y = y + m.nn.CrossEntropyLoss(**{**kw, "ignore_index": 1})(a, tt.clamp(min=0))
                y.sum().backward()
                got.append([y.detach().numpy(), a.grad.numpy()])
            for want, have in zip(*got):
                assert have.shape == want.shape
                np.testing.assert_allclose(have, want, rtol=1e-12, atol=1e-12)


def test_cross_entropy_compiled_equal_eager(compiled_vs_eager):
    """Weights, ignore_index and label smoothing under @gradc.compile, on (N, C, d) logits."""
    x, t, p, w = _class_loss_data((3, 4, 5))
    t, w = gradc.tensor(t), gradc.tensor(w)
    compiled_vs_eager(lambda z: F.cross_entropy(z, t, weight=w, label_smoothing=0.1), x)
    compiled_vs_eager(lambda z: F.cross_entropy(z, gradc.tensor(p), weight=w, label_smoothing=0.1), x)
    compiled_vs_eager(lambda z: F.nll_loss(z.log_softmax(1), t.clamp(min=0), ignore_index=2, reduction="sum"), x)


def test_cross_entropy_errors_are_pytorchs():
    x = gradc.randn(3, 4)
    with pytest.raises(ValueError, match=r"Expected input batch_size \(3\) to match target batch_size \(2\)\."):
        F.cross_entropy(x, gradc.tensor([0, 1]))
    with pytest.raises(IndexError, match="Target 5 is out of bounds."):
        F.cross_entropy(x, gradc.tensor([0, 1, 5]))
    with pytest.raises(RuntimeError, match="weight tensor should be defined either for all 4 classes or no classes "
                                           r"but got weight tensor of shape: \[3\]"):
        F.cross_entropy(x, gradc.tensor([0, 1, 2]), weight=gradc.ones(3))
    with pytest.raises(RuntimeError, match="0D or 1D target tensor expected, multi-target not supported"):
        F.cross_entropy(x, gradc.rand(3, 5))
    with pytest.raises(RuntimeError, match="expected target dtype to be Long or Byte, but got Float"):
        F.cross_entropy(x, gradc.tensor([0., 1., 2.]))
    with pytest.raises(RuntimeError, match=r"Expected target size \[2, 3\], got \[2, 2\]"):
        F.cross_entropy(gradc.randn(2, 4, 3), gradc.tensor([[2, 0], [1, 1]]))
    with pytest.raises(RuntimeError, match="label_smoothing must be between 0.0 and 1.0. Got: 1.5"):
        F.cross_entropy(x, gradc.tensor([0, 1, 2]), label_smoothing=1.5)
    assert np.isnan(F.cross_entropy(x, gradc.tensor([-100, -100, -100])).item())
    with pytest.raises(IndexError, match="Target -100 is out of bounds."):
        F.cross_entropy(x, gradc.tensor([0, 1, -100]), ignore_index=1)


def test_buffers_state_dict_and_to():
    """register_buffer: in state_dict (unless persistent=False) after the parameters, moved and
    cast by to() (floating point only), not parameters; load_state_dict's errors are PyTorch's."""
    loss = gradc.nn.CrossEntropyLoss(weight=gradc.ones(4))
    assert list(loss.state_dict()) == ["weight"] and list(loss.parameters()) == []
    assert loss.double().weight.dtype == gradc.float64
    assert list(gradc.nn.NLLLoss().state_dict()) == [] and gradc.nn.NLLLoss().weight is None
    m = gradc.nn.Sequential(gradc.nn.Linear(2, 2), gradc.nn.Module())
    m[1].register_buffer("count", gradc.tensor(0))
    m[1].register_buffer("scratch", gradc.zeros(2), persistent=False)
    assert list(m.state_dict()) == ["0.weight", "0.bias", "1.count"]
    assert [n for n, _ in m.named_buffers()] == ["1.count", "1.scratch"]
    m.double()
    assert m[1].count.dtype == gradc.int64 and m[1].scratch.dtype == gradc.float64
    m[1].count = gradc.tensor(7)
    assert m.state_dict()["1.count"].item() == 7
    assert repr(m.load_state_dict(m.state_dict())) == "<All keys matched successfully>"
    with pytest.raises(RuntimeError, match='Error\\(s\\) in loading state_dict for Sequential:\n\tMissing key\\(s\\) '
                                           'in state_dict: "1.count". '):
        m.load_state_dict({k: v for k, v in m.state_dict().items() if k != "1.count"})
    assert m.load_state_dict({"0.weight": gradc.ones(2, 2), "x": gradc.ones(1)}, strict=False) == (
        ["0.bias", "1.count"], ["x"])
    with pytest.raises(RuntimeError, match=r"size mismatch for 0.weight: copying a param with shape "
                                           r"torch.Size\(\[3, 2\]\) from checkpoint"):
        m.load_state_dict({**m.state_dict(), "0.weight": gradc.ones(3, 2)})
    with pytest.raises(KeyError, match="buffer name can.*t contain"):
        m.register_buffer("a.b", gradc.ones(1))
    with pytest.raises(TypeError, match="cannot assign 'int' object to buffer 'x'"):
        m.register_buffer("x", 3)
    with pytest.raises(TypeError, match="cannot assign 'int' as buffer 'count'"):
        m[1].count = 3


def test_loss_modules_repr_and_errors():
    assert [repr(c()) for c in (gradc.nn.MSELoss, gradc.nn.L1Loss, gradc.nn.BCEWithLogitsLoss,
                                gradc.nn.CrossEntropyLoss)] == ["MSELoss()", "L1Loss()", "BCEWithLogitsLoss()",
                                                                "CrossEntropyLoss()"]
    x = gradc.zeros(3)
    with pytest.raises(ValueError, match=r"Target size \(torch.Size\(\[4\]\)\) must be the same as input size"):
        F.binary_cross_entropy_with_logits(x, gradc.zeros(4))
    with pytest.raises(RuntimeError, match="does not support negative values for beta"):
        F.smooth_l1_loss(x, x, beta=-1)
    with pytest.raises(RuntimeError, match="non-positive values for delta"):
        F.huber_loss(x, x, delta=0)
    with pytest.warns(UserWarning, match="different to the input size"):
        F.l1_loss(gradc.zeros(3, 1), gradc.zeros(3))


NORMS = [
    ("layer_norm", lambda m, a, b: m.nn.functional.layer_norm(a, (4,), b[0], b[1])),
    ("layer_norm(2 dims, no affine)", lambda m, a, b: m.nn.functional.layer_norm(a, [3, 4], eps=1e-3) * a),
    ("LayerNorm module", lambda m, a, b: m.nn.LayerNorm(4, dtype=a.dtype)(a) * b[0]),
    ("normalize", lambda m, a, b: m.nn.functional.normalize(a, dim=-1) * b[1]),
    ("normalize(p=1, dim=1)", lambda m, a, b: m.nn.functional.normalize(a, p=1.0, dim=1)),
    ("cosine_similarity", lambda m, a, b: m.nn.functional.cosine_similarity(a, a * b[0] + 1, dim=-1)),
]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name,fn", NORMS, ids=[n for n, _ in NORMS])
def test_normalizations_match_pytorch(name, fn, dtype):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(7)
    x, w = (rng.standard_normal((2, 3, 4)) * 3 + 1).astype(dtype), rng.standard_normal((2, 4)).astype(dtype)
    got = []
    for m in (torch, gradc):
        a, b = m.tensor(x, requires_grad=True), m.tensor(w, requires_grad=True)
        y = fn(m, a, b)
        (y * y).sum().backward()
        got.append([y.detach().numpy(), a.grad.numpy(), b.grad.numpy() if b.grad is not None else np.zeros(1)])
    tol = dict(rtol=1e-4, atol=1e-5) if dtype == "float32" else dict(rtol=1e-10, atol=1e-12)
    for want, have in zip(*got):
        np.testing.assert_allclose(have, want, **tol)


def test_layer_norm_module_and_errors():
    ln = gradc.nn.LayerNorm(4)
    assert repr(ln) == "LayerNorm((4,), eps=1e-05, elementwise_affine=True, bias=True)"
    assert [n for n, _ in ln.named_parameters()] == ["weight", "bias"]
    assert repr(gradc.nn.LayerNorm((3, 4), eps=1e-6, elementwise_affine=False)) == \
        "LayerNorm((3, 4), eps=1e-06, elementwise_affine=False, bias=False)"
    with pytest.raises(RuntimeError, match=r"Given normalized_shape=\[5\], expected input with shape \[\*, 5\], "
                                           r"but got input of size\[2, 3, 4\]"):
        F.layer_norm(gradc.zeros(2, 3, 4), (5,))


def test_layer_norm_compiled_is_one_row_kernel(compiled_vs_eager):
    """F.layer_norm under @gradc.compile: x is read by one fused kernel, gradients equal eager's."""
    rng = np.random.default_rng(8)

    def loss(x, w, b):
        return (F.layer_norm(x, (32,), w, b) ** 2).sum()
    compiled = compiled_vs_eager(loss, rng.standard_normal((16, 32)), rng.standard_normal(32),
                                 rng.standard_normal(32), rtol=1e-10)
    fused = [op for op in compiled.ir().precomputed.body.ops if op.name == "gradc.fused"
             and any(tuple(v.type.shape) == (16, 32) for v in op.operands)]
    assert len(fused) == 1


@pytest.mark.parametrize("padding_idx", [None, 1, -9])
def test_embedding_matches_pytorch(padding_idx):
    torch = pytest.importorskip("torch")
    W = np.random.default_rng(9).standard_normal((10, 3))
    got = []
    for m in (torch, gradc):
        w, idx = m.tensor(W, requires_grad=True), m.tensor([[1, 2], [3, 1], [0, 9]])
        y = m.nn.functional.embedding(idx, w, padding_idx=padding_idx)
        (y * y).sum().backward()
        got.append((y.detach().numpy(), w.grad.numpy(), y.grad_fn.name()))
    (t_out, t_grad, t_name), (g_out, g_grad, g_name) = got
    np.testing.assert_array_equal(g_out, t_out)
    np.testing.assert_array_equal(g_grad, t_grad)          # no gradient for the padding row
    if padding_idx is None:                              # (with one, gradc records a where)
        assert g_name == t_name == "EmbeddingBackward0"


def test_embedding_module_compiled_and_errors():
    gradc.manual_seed(0)
    e = gradc.nn.Embedding(10, 4, padding_idx=0)
    assert repr(e) == "Embedding(10, 4, padding_idx=0)" and not e.weight[0].detach().numpy().any()
    idx = gradc.tensor([[1, 2, 0], [3, 3, 9]])
    eager = (e(idx).tanh() ** 2).sum()
    eager.backward()
    g_eager = e.weight.grad.clone()
    e.weight.grad = None
    compiled = gradc.compile(lambda i, w: (gradc.nn.functional.embedding(i, w, padding_idx=0).tanh() ** 2).sum())
    compiled(idx, e.weight).backward()
    np.testing.assert_allclose(compiled(idx, e.weight).item(), eager.item(), rtol=1e-6)
    np.testing.assert_allclose(e.weight.grad.numpy(), g_eager.numpy(), rtol=1e-5, atol=1e-6)   # float32 tanh: compiled vs NumPy
    assert not e.weight.grad.numpy()[0].any()
    with pytest.raises(IndexError, match="index out of range in self"):
        e(gradc.tensor([10]))
    with pytest.raises(RuntimeError, match=r"but got torch.FloatTensor instead"):
        e(gradc.tensor([1.0]))


def test_dropout_eager_semantics():
    """Zeros with probability p, survivors scaled by 1 / (1 - p), PyTorch's MulBackward0 with no
    edge to the mask; the input itself when not training or p == 0."""
    gradc.manual_seed(3)
    x = gradc.ones(20000, requires_grad=True)
    y = F.dropout(x, 0.25)
    assert y.grad_fn.name() == "MulBackward0" and y.grad_fn.next_functions[1] == (None, 0)
    kept = y.detach().numpy() != 0
    assert abs(kept.mean() - 0.75) < 0.02
    np.testing.assert_allclose(y.detach().numpy()[kept], 1 / 0.75)
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), y.detach().numpy())
    assert F.dropout(x, 0.5, training=False) is x and F.dropout(x, 0.0) is x
    assert not F.dropout(x, 1.0).detach().numpy().any()
    d = gradc.nn.Dropout(0.3)
    assert repr(d) == "Dropout(p=0.3, inplace=False)"
    d.eval()
    assert d(x) is x
    with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1, but got 1.5"):
        F.dropout(x, 1.5)
    eval_mode = gradc.compile(lambda t: F.dropout(t, 0.5, training=False).sum())
    assert eval_mode(x).item() == 20000.0


@pytest.mark.parametrize("memory", ["min-memory", "save-all"])
def test_dropout_compiled_draws_like_eager_and_backward_uses_its_mask(memory):
    """Under @gradc.compile dropout draws from gradc's generator exactly as eagerly (same seed,
    same mask, same loss and gradients), draws a new mask at every call, and backward uses the
    mask of its own forward: a retained graph's second backward gives the same gradients, even
    after later calls drew other masks.  Double backward through the draw raises."""
    rng = np.random.default_rng(7)
    lin = gradc.nn.Linear(6, 5).double()
    drop = gradc.nn.Dropout(0.4)
    loss = gradc.compile(lambda x: (drop(lin(x)).tanh() ** 2).sum(), memory=memory)
    xs = [rng.standard_normal((9, 6)) for _ in range(3)]
    outs = []
    for k, xv in enumerate(xs):
        got = []
        for run in (loss, lambda x: (drop(lin(x)).tanh() ** 2).sum()):
            gradc.manual_seed(100 + k)
            x = gradc.tensor(xv, requires_grad=True)
            lin.zero_grad()
            out = run(x)
            out.backward(retain_graph=True)
            got.append([out.item(), x.grad.numpy().copy(), lin.weight.grad.numpy().copy()])
            if run is loss:
                outs.append((out, x))
        for c, e in zip(*got):
            np.testing.assert_allclose(c, e, rtol=1e-12, atol=1e-15)
    assert outs[0][0].item() != outs[1][0].item()
    first, x0 = outs[0]                        # two calls later: backward still uses call 1's mask
    g0 = x0.grad.numpy().copy()
    x0.grad = None
    first.backward()
    np.testing.assert_array_equal(x0.grad.numpy(), g0)
    assert "gradc.rand_like" in str(loss.ir().traced) and len(loss.log) == 1
    x = gradc.tensor(xs[0], requires_grad=True)
    with pytest.raises(RuntimeError, match=r"create_graph=True\) through @gradc.compile.*draws random numbers"), \
            warnings.catch_warnings():
        warnings.simplefilter("ignore")         # PyTorch's note on backward(create_graph=True), once
        loss(x).backward(create_graph=True)


def test_transformer_layer_trains_compiled_with_dropout():
    """A TransformerEncoderLayer with its default dropout (0.1) in training mode: a compiled
    loss equals the eager one under the same seed, gradients included; eval mode recompiles
    without draws."""
    rng = np.random.default_rng(8)
    layer = gradc.nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dtype=gradc.float64, batch_first=True)
    x = gradc.tensor(rng.standard_normal((3, 5, 8)))
    loss = gradc.compile(lambda x: (layer(x) ** 2).mean())
    got = []
    for run in (loss, lambda x: (layer(x) ** 2).mean()):
        gradc.manual_seed(11)
        layer.zero_grad()
        out = run(x)
        out.backward()
        got.append([out.item()] + [p.grad.numpy().copy() for p in layer.parameters()])
    for c, e in zip(*got):
        np.testing.assert_allclose(c, e, rtol=1e-10, atol=1e-13)
    layer.eval()
    loss(x)
    assert len(loss.log) == 2 and "gradc.rand_like" not in str(loss.ir().traced)


def test_one_hot_matches_pytorch():
    torch = pytest.importorskip("torch")
    for args in ([[0, 2, 1]], [[[0], [3]], 5]):
        want = torch.nn.functional.one_hot(torch.tensor(args[0]), *args[1:])
        got = F.one_hot(gradc.tensor(args[0]), *args[1:])
        assert str(got.dtype) == str(want.dtype) and got.tolist() == want.tolist()
    for bad, msg in (((gradc.tensor([0, 5]), 3), "Class values must be smaller than num_classes."),
                     ((gradc.tensor([-1]),), "Class values must be non-negative."),
                     ((gradc.tensor([1.0]),), "one_hot is only applicable to index tensor of type LongTensor.")):
        with pytest.raises(RuntimeError, match=msg):
            F.one_hot(*bad)
    f = gradc.compile(lambda logits, labels: -(logits.log_softmax(1) * F.one_hot(labels, 4)).sum(1).mean())
    logits, labels = gradc.randn(5, 4), gradc.tensor([0, 3, 1, 1, 2])
    np.testing.assert_allclose(f(logits, labels).item(), F.cross_entropy(logits, labels).item(), rtol=1e-6)


CONVS = [((2, 3, 7, 8), (4, 3, 3, 3), {}), ((2, 4, 7, 8), (6, 2, 3, 2), dict(stride=2, padding=1, groups=2)),
         ((1, 3, 9, 9), (2, 3, 3, 3), dict(dilation=2, padding=(1, 2))), ((3, 6, 6), (2, 3, 2, 2), {}),
         ((1, 2, 5, 6), (3, 2, 3, 3), dict(padding="same")), ((1, 2, 5, 6), (3, 2, 2, 3), dict(padding="same", dilation=2))]


@pytest.mark.parametrize("xs,ws,kw", CONVS, ids=[str(c[2]) for c in CONVS])
def test_conv2d_matches_pytorch(xs, ws, kw):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(16)
    arrays = rng.standard_normal(xs), rng.standard_normal(ws), rng.standard_normal(ws[0])
    got = []
    for m in (torch, gradc):
        x, w, b = (m.tensor(a, requires_grad=True) for a in arrays)
        y = m.nn.functional.conv2d(x, w, b, **kw)
        (y * y).sum().backward()
        got.append([y.detach().numpy(), x.grad.numpy(), w.grad.numpy(), b.grad.numpy()])
    for want, have in zip(*got):
        assert have.shape == want.shape
        np.testing.assert_allclose(have, want, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("fn,kw", [("max_pool2d", dict(kernel_size=2)), ("avg_pool2d", dict(kernel_size=2)),
                                   ("max_pool2d", dict(kernel_size=3, stride=2, padding=1)),
                                   ("avg_pool2d", dict(kernel_size=3, stride=2, padding=1)),
                                   ("max_pool2d", dict(kernel_size=(2, 3), stride=1, dilation=2))])
def test_pooling_matches_pytorch(fn, kw):
    torch = pytest.importorskip("torch")
    data = np.random.default_rng(17).standard_normal((2, 3, 7, 8))
    got = []
    for m in (torch, gradc):
        x = m.tensor(data, requires_grad=True)
        y = getattr(m.nn.functional, fn)(x, **kw)
        (y * y).sum().backward()
        got.append([y.detach().numpy(), x.grad.numpy()])
    for want, have in zip(*got):
        assert have.shape == want.shape
        np.testing.assert_allclose(have, want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("kw", [dict(kernel_size=2), dict(kernel_size=3, stride=2, padding=1),
                                dict(kernel_size=(2, 3), stride=1, dilation=2), dict(kernel_size=2, stride=1)])
def test_max_pool2d_ties_and_indices_match_pytorch(kw):
    """Windows full of equal values: PyTorch gives each window's gradient to its first maximum
    (row-major) and returns that element's flat index in its H*W plane; so does gradc, eagerly
    and through nn.MaxPool2d(return_indices=True), batched and unbatched."""
    torch = pytest.importorskip("torch")
    data = np.random.default_rng(3).integers(0, 3, (2, 2, 7, 8)).astype(np.float64)
    for shape in [(2, 2, 7, 8), (2, 7, 8)]:
        got = []
        for m in (torch, gradc):
            x = m.tensor(data.reshape(-1)[:int(np.prod(shape))].reshape(shape), requires_grad=True)
            y, idx = m.nn.MaxPool2d(**kw, return_indices=True)(x)
            (y * m.arange(y.numel(), dtype=m.float64).reshape(y.shape)).sum().backward()
            got.append([y.detach().numpy(), idx.numpy(), x.grad.numpy()])
        for want, have in zip(*got):
            assert have.shape == want.shape
            np.testing.assert_array_equal(have, want)


def test_small_cnn_trains_compiled_like_eager(compiled_vs_eager):
    """Conv2d, MaxPool2d, Flatten and Linear in a loss: compiled equals eager, reprs are PyTorch's."""
    gradc.manual_seed(1)
    net = gradc.nn.Sequential(gradc.nn.Conv2d(1, 4, 3, padding=1), gradc.nn.ReLU(), gradc.nn.MaxPool2d(2),
                              gradc.nn.Flatten(), gradc.nn.Linear(4 * 3 * 3, 2))
    assert "Conv2d(1, 4, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1))" in repr(net)
    assert "MaxPool2d(kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=False)" in repr(net)
    x = gradc.randn(5, 1, 6, 6)
    t = gradc.tensor([0, 1, 1, 0, 1])
    w = [p.detach().numpy() for p in net.parameters()]

    def loss(cw, cb, lw, lb):
        h = F.max_pool2d(F.conv2d(x, cw, cb, padding=1).relu(), 2).flatten(1)
        return F.cross_entropy(F.linear(h, lw, lb), t)
    compiled_vs_eager(loss, *w, dtype=gradc.float32)
    with pytest.raises(RuntimeError, match=r"expected input\[1, 3, 5, 5\] to have 2 channels, but got 3"):
        F.conv2d(gradc.ones(1, 3, 5, 5), gradc.ones(4, 2, 3, 3))


@pytest.mark.parametrize("cls,shape", [("BatchNorm1d", (4, 3)), ("BatchNorm1d", (4, 3, 5)), ("BatchNorm2d", (2, 3, 4, 5)),
                                       ("BatchNorm3d", (2, 3, 2, 2, 3))])
@pytest.mark.parametrize("kw", [dict(), dict(momentum=None), dict(affine=False), dict(track_running_stats=False),
                                dict(eps=1e-3, momentum=0.3)], ids=["default", "cumulative", "no-affine", "no-stats",
                                                                    "eps-momentum"])
def test_batch_norm_matches_pytorch(cls, shape, kw):
    """Two training steps then one in eval mode: outputs, input and parameter gradients, the
    running statistics and num_batches_tracked, the repr and the state_dict keys are PyTorch's."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(4)
    xs = [rng.standard_normal(shape) for _ in range(3)]
    got = []
    for m in (torch, gradc):
        bn = getattr(m.nn, cls)(3, dtype=m.float64, **kw)
        outs = []
        for i, xv in enumerate(xs):
            if i == 2:
                bn.eval()
            x = m.tensor(xv, requires_grad=True)
            y = bn(x)
            (y * m.tensor(np.arange(y.numel()).reshape(y.shape) % 5, dtype=m.float64)).sum().backward()
            outs += [y.detach().numpy(), x.grad.numpy()] + [p.grad.numpy() for p in bn.parameters()]
            bn.zero_grad()
        outs += [v.numpy() for v in bn.state_dict().values()]
        got.append((outs, repr(bn), list(bn.state_dict())))
    (want, want_repr, want_keys), (have, have_repr, have_keys) = got
    assert have_repr == want_repr and have_keys == want_keys
    for w, h in zip(want, have, strict=True):
        assert h.shape == w.shape
        np.testing.assert_allclose(h, w, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("cls,shape", [("BatchNorm1d", (4, 3)), ("BatchNorm2d", (2, 3, 4, 5))])
@pytest.mark.parametrize("kw", [dict(), dict(momentum=None), dict(track_running_stats=False)],
                         ids=["default", "cumulative", "no-stats"])
@pytest.mark.parametrize("returns", ["output", "loss"])
def test_batch_norm_training_compiled_matches_pytorch(cls, shape, kw, returns):
    """A compiled forward in training mode updates the running statistics and num_batches_tracked
    as PyTorch's eager step does (the in-place writes run after each call), three steps, then
    an eval-mode call: the module's mode is guarded, so it recompiles with the running statistics.
    ``returns``: the compiled function returns the normalised tensor (its backward runs later,
    mixed with eager ops) or the scalar loss (forward and gradients in one pass)."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(5)
    xs = [rng.standard_normal(shape) for _ in range(4)]
    weights = np.arange(np.prod(shape)).reshape(shape) % 5
    got = []
    for m in (torch, gradc):
        bn = getattr(m.nn, cls)(3, dtype=m.float64, **kw)
        w = m.tensor(weights, dtype=m.float64)
        if m is gradc:
            step = gradc.compile((lambda x: bn(x)) if returns == "output" else (lambda x: (bn(x) * w).sum()))
        else:
            step = (lambda x: bn(x)) if returns == "output" else (lambda x: (bn(x) * w).sum())
        outs = []
        for i, xv in enumerate(xs):
            if i == 3:
                bn.eval()
            x = m.tensor(xv, requires_grad=True)
            y = step(x)
            (y * w).sum().backward() if returns == "output" else y.backward()
            outs += [y.detach().numpy(), x.grad.numpy()] + [p.grad.numpy() for p in bn.parameters()]
            outs += [v.numpy().copy() for v in bn.state_dict().values()]
            bn.zero_grad()
        got.append(outs)
    for w_, h in zip(*got, strict=True):
        np.testing.assert_allclose(h, w_, rtol=1e-10, atol=1e-12)
    assert len(step.log) == 2 and "training changed from True to False" in step.log[1]


def test_batch_norm_compiled_twice_before_one_backward():
    """Two compiled training calls through one BatchNorm, then one backward of their sum (a
    siamese step): the second call's update of the running statistics is no in-place error for
    the first call's backward (nothing reads them there, as in PyTorch), and gradients and
    statistics equal eager ones."""
    rng = np.random.default_rng(12)
    x1, x2 = (gradc.tensor(rng.standard_normal((5, 3))) for _ in range(2))
    got = []
    for compiled in (True, False):
        gradc.manual_seed(0)
        model = gradc.nn.Sequential(gradc.nn.Linear(3, 3), gradc.nn.BatchNorm1d(3)).double()
        f = (lambda x: (model(x) ** 2).mean())
        f = gradc.compile(f) if compiled else f
        (f(x1) + f(x2)).backward()
        got.append([p.grad.numpy() for p in model.parameters()] + [v.numpy() for v in model.state_dict().values()])
    for c, e in zip(*got):
        np.testing.assert_allclose(c, e, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("returns", ["loss", "output"])
def test_dropout_before_batch_norm_trains_compiled_like_eager(returns):
    """Linear -> ReLU -> Dropout -> Linear -> BatchNorm: the running statistics depend on the
    call's dropout mask, so the compiled forward returns their new values itself (a second
    function would draw another mask).  Three training steps under one seed each: losses,
    gradients and the state_dict equal eager ones."""
    rng = np.random.default_rng(13)
    xs = [gradc.tensor(rng.standard_normal((7, 4))) for _ in range(3)]
    got = []
    for compiled in (True, False):
        gradc.manual_seed(0)
        model = gradc.nn.Sequential(gradc.nn.Linear(4, 6), gradc.nn.ReLU(), gradc.nn.Dropout(0.3),
                                    gradc.nn.Linear(6, 5), gradc.nn.BatchNorm1d(5)).double()
        if returns == "loss":
            f = lambda x: (model(x).tanh() ** 2).mean()          # noqa: E731
        else:
            f = lambda x: model(x)                                # noqa: E731
        f = gradc.compile(f) if compiled else f
        out = []
        for k, x in enumerate(xs):
            gradc.manual_seed(50 + k)
            model.zero_grad()
            y = f(x)
            loss = y if returns == "loss" else (y.tanh() ** 2).mean()
            loss.backward()
            out += [loss.item()] + [p.grad.numpy().copy() for p in model.parameters()]
            out += [v.numpy().copy() for v in model.state_dict().values()]
        got.append(out)
    for c, e in zip(*got):
        np.testing.assert_allclose(c, e, rtol=1e-12, atol=1e-14)


def test_batch_norm_compiled_and_errors(compiled_vs_eager):
    """Eval mode and batch statistics without running ones compile (training with running
    statistics: ``test_batch_norm_training_compiled_matches_pytorch``)."""
    rng = np.random.default_rng(2)
    bn = gradc.nn.BatchNorm2d(3, dtype=gradc.float64)
    bn(gradc.tensor(rng.standard_normal((4, 3, 2, 2))))              # running stats off their defaults
    bn.eval()
    rm, rv = bn.running_mean, bn.running_var
    compiled_vs_eager(lambda x, w, b: (F.batch_norm(x, rm, rv, w, b) ** 2).sum(), rng.standard_normal((2, 3, 4, 4)),
                      rng.random(3), rng.random(3))
    compiled_vs_eager(lambda x, w: (F.batch_norm(x, None, None, w, None, training=True) ** 3).sum(),
                      rng.standard_normal((5, 3)), rng.random(3))
    with pytest.raises(ValueError, match=r"expected 2D or 3D input \(got 4D input\)"):
        gradc.nn.BatchNorm1d(3)(gradc.ones(2, 3, 4, 5))
    with pytest.raises(ValueError, match=r"Expected more than 1 value per channel when training, got input size "
                                         r"torch.Size\(\[1, 3\]\)"):
        gradc.nn.BatchNorm1d(3)(gradc.ones(1, 3))
    with pytest.raises(RuntimeError, match="running_mean should contain 4 elements not 3"):
        gradc.nn.BatchNorm1d(3)(gradc.ones(2, 4))
    with pytest.raises(RuntimeError, match="running_mean must be defined in evaluation mode"):
        F.batch_norm(gradc.ones(2, 3), None, None)


MIXED = ["F.layer_norm(x, (3,), m.ones(3, dtype=m.float64))", "F.layer_norm(x.double(), (3,), m.ones(3))",
         "F.layer_norm(x, (3,), m.ones(3), m.zeros(3, dtype=m.float64))",
         "F.batch_norm(x, m.zeros(3, dtype=m.float64), m.ones(3, dtype=m.float64))",
         "F.batch_norm(x, m.zeros(3), m.ones(3), m.ones(3, dtype=m.float64))", "F.batch_norm(x.double(), m.zeros(3), m.ones(3))"]


@pytest.mark.parametrize("expr", MIXED)
def test_norms_reject_mixed_dtypes_as_pytorch(expr):
    torch = pytest.importorskip("torch")
    msgs = []
    for m in (torch, gradc):
        with pytest.raises(RuntimeError) as e:
            eval(expr, {"m": m, "F": m.nn.functional, "x": m.ones(2, 3)})
        msgs.append(str(e.value))
    assert msgs[1] == msgs[0]


def _run_both(fn):
    torch = pytest.importorskip("torch")
    return fn(torch), fn(gradc)


def test_containers_and_module_tree_match_pytorch():
    """ModuleList (folded repr, slicing, insert/del), ModuleDict, Sequential(OrderedDict),
    named_modules/named_children/get_submodule/apply, state_dict keys and print(Parameter)."""
    from collections import OrderedDict

    def build(m):
        nn = m.nn
        ml = nn.ModuleList([nn.Linear(2, 2) for _ in range(3)] + [nn.ReLU()])
        ml.insert(1, nn.Tanh())
        del ml[0]
        md = nn.ModuleDict({"a": nn.Linear(1, 1), "b": nn.ReLU()})
        md["c"] = nn.Tanh()
        md.pop("b")
        seq = nn.Sequential(OrderedDict([("fc", nn.Linear(2, 2)), ("act", nn.ReLU())]))
        outer = nn.Sequential(seq, nn.ModuleList([nn.Linear(2, 3), nn.Tanh()]), md)
        seen = []
        outer.apply(lambda mod: seen.append(type(mod).__name__))
        return [repr(ml), repr(ml[1:3]), len(ml), repr(md), list(md), "c" in md, repr(seq[0:1]), repr(seq.fc),
                [n for n, _ in outer.named_modules()], [n for n, _ in outer.named_children()], list(outer.state_dict()),
                repr(outer.get_submodule("1.0")), seen, str(nn.Parameter(m.ones(2))), repr(outer)]
    want, have = _run_both(build)
    assert have == want


def test_forward_hooks_and_requires_grad_():
    lin = gradc.nn.Linear(2, 2)
    calls = []
    pre = lin.register_forward_pre_hook(lambda mod, args: (args[0] * 2,))
    post = lin.register_forward_hook(lambda mod, args, out: calls.append(args[0].sum().item()) or out * 0)
    assert lin(gradc.ones(3, 2)).abs().sum().item() == 0 and calls == [12.0]
    pre.remove()
    post.remove()
    assert lin(gradc.ones(3, 2)).abs().sum().item() > 0 and calls == [12.0]
    assert not any(p.requires_grad for p in lin.requires_grad_(False).parameters())
    with pytest.raises(KeyError, match='module name can.*t contain ".", got: a.b'):
        lin.add_module("a.b", gradc.nn.ReLU())
    with pytest.raises(TypeError, match="int is not a Module subclass"):
        lin.add_module("a", 3)


@pytest.mark.parametrize("norm_type", [2.0, 1.0, float("inf")])
def test_clip_grad_norm_and_value_match_pytorch(norm_type):
    def run(m):
        ps = [m.nn.Parameter(m.ones(3)), m.nn.Parameter(m.ones(2)), m.nn.Parameter(m.ones(1))]
        ps[0].grad, ps[1].grad = m.tensor([3.0, -4.0, 0.5]), m.tensor([12.0, 0.25])
        total = m.nn.utils.clip_grad_norm_(ps, 1.5, norm_type=norm_type)
        out = [total.item()] + [p.grad.numpy().copy() for p in ps[:2]]
        m.nn.utils.clip_grad_value_(ps, 0.3)
        vec = m.nn.utils.parameters_to_vector(ps)
        m.nn.utils.vector_to_parameters(vec * 3, ps)
        return out + [p.grad.numpy() for p in ps[:2]] + [vec.detach().numpy(), ps[1].detach().numpy()]
    want, have = _run_both(run)
    for w, h in zip(want, have, strict=True):
        np.testing.assert_allclose(h, w, rtol=1e-6)
    with pytest.raises(RuntimeError, match="The total norm of order 2.0 for gradients from `parameters` is non-finite"):
        p = gradc.nn.Parameter(gradc.ones(1))
        p.grad = gradc.tensor([float("inf")])
        gradc.nn.utils.clip_grad_norm_([p], 1.0, error_if_nonfinite=True)


def _train(m, opt_name, kw, sched=None, steps=7):
    """A few steps of an optimizer (and scheduler) on a small tanh regression; the final
    weights and the learning rates the scheduler reported."""
    rng = np.random.default_rng(0)
    w = m.nn.Parameter(m.tensor(rng.standard_normal((3, 2))))
    x = m.tensor(rng.standard_normal((5, 3)))
    opt = getattr(m.optim, opt_name)([w], **kw)
    sch = sched(m, opt) if sched else None
    lrs = []
    for _ in range(steps):
        opt.zero_grad()
        ((x @ w).tanh() ** 2).sum().backward()
        opt.step()
        if sch:
            sch.step()
            lrs.append(sch.get_last_lr()[0])
    return w.detach().numpy(), lrs


@pytest.mark.parametrize("name,kw", [("AdamW", dict(lr=0.1)), ("AdamW", dict(lr=0.05, weight_decay=0.3, amsgrad=True)),
                                     ("RMSprop", dict(lr=0.01)),
                                     ("RMSprop", dict(lr=0.01, momentum=0.9, centered=True, weight_decay=0.1)),
                                     ("Adagrad", dict(lr=0.1)),
                                     ("Adagrad", dict(lr=0.1, lr_decay=0.01, weight_decay=0.1,
                                                      initial_accumulator_value=0.5))])
def test_more_optimizers_match_pytorch(name, kw):
    torch = pytest.importorskip("torch")
    np.testing.assert_allclose(_train(gradc, name, kw)[0], _train(torch, name, kw)[0], rtol=1e-12, atol=1e-14)


SCHEDULERS = [lambda m, o: m.optim.lr_scheduler.StepLR(o, 2, 0.5),
              lambda m, o: m.optim.lr_scheduler.MultiStepLR(o, [1, 3, 3], 0.1),
              lambda m, o: m.optim.lr_scheduler.ExponentialLR(o, 0.9),
              lambda m, o: m.optim.lr_scheduler.CosineAnnealingLR(o, 3, 0.001),
              lambda m, o: m.optim.lr_scheduler.LambdaLR(o, lambda e: 1 / (e + 1)),
              lambda m, o: m.optim.lr_scheduler.LinearLR(o, 0.25, 1.0, 4)]


@pytest.mark.parametrize("sched", SCHEDULERS, ids=["step", "multistep", "exponential", "cosine", "lambda", "linear"])
def test_lr_schedulers_match_pytorch(sched):
    """The learning rates are PyTorch's to the bit (the same chainable formulas), and so is SGD's path."""
    torch = pytest.importorskip("torch")
    (w_t, lr_t), (w_g, lr_g) = (_train(m, "SGD", dict(lr=0.1, momentum=0.9), sched, steps=9) for m in (torch, gradc))
    assert lr_g == lr_t
    np.testing.assert_allclose(w_g, w_t, rtol=1e-12, atol=1e-14)


ACTIVATIONS = ["F.relu6(x)", "F.hardtanh(x)", "F.hardtanh(x, -2.0, 2.5)", "F.hardsigmoid(x)", "F.hardswish(x)", "F.mish(x)",
               "F.selu(x)", "F.celu(x, 0.5)", "F.glu(x.reshape(2, -1), 1)", "F.glu(x)", "F.softsign(x)", "F.tanhshrink(x)",
               "F.threshold(x, 0.1, 20.0)", "F.hardshrink(x)", "F.softshrink(x, 0.5)", "F.softmin(x.reshape(1, -1), 1)",
               "F.softmax(x.reshape(2, -1, 2))", "F.log_softmax(x.reshape(1, -1, 1, 1))",
               "F.prelu(x, m.tensor([0.25], dtype=m.float64))", "F.prelu(x.reshape(1, 68, 1), m.linspace(0, 1, 68, dtype=m.float64))",
               "m.nn.PReLU(68, dtype=m.float64)(x.reshape(1, 68))"]


@pytest.mark.parametrize("expr", ACTIVATIONS)
def test_more_activations_match_pytorch(expr):
    """Values and gradients at and around every kink (-3, 3, +-1, 0, 6, thresholds); the softmax
    family's implicit dim (with PyTorch's deprecation warning) is PyTorch's."""
    torch = pytest.importorskip("torch")
    xs = np.concatenate([np.linspace(-7, 7, 57), [-3.0, 3.0, -1.0, 1.0, 0.0, 6.0, -0.5, 0.5, 0.1, 20.0, -6.0]])
    got = []
    for m in (torch, gradc):
        x = m.tensor(xs, requires_grad=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            y = eval(expr, {"F": m.nn.functional, "x": x, "m": m})
        (y * m.arange(y.numel(), dtype=m.float64).reshape(y.shape)).sum().backward()
        got.append([y.detach().numpy(), x.grad.numpy()])
    # PyTorch's float64 hardsigmoid gradient multiplies by float32(1/6)
    rtol = 1e-7 if "hardsigmoid" in expr else 1e-12
    for want, have in zip(*got):
        assert have.shape == want.shape
        np.testing.assert_allclose(have, want, rtol=rtol, atol=1e-13)


def test_activation_modules_print_and_compile(compiled_vs_eager):
    torch = pytest.importorskip("torch")

    def reprs(m):
        nn = m.nn
        return [repr(a) for a in (nn.Hardshrink(), nn.Softshrink(0.3), nn.PReLU(), nn.PReLU(3, 0.1), nn.Softmin(1),
                                  nn.Softmax(), nn.LogSoftmax(1), nn.ReLU6(inplace=True), nn.Hardtanh(-2, 2), nn.SELU(),
                                  nn.CELU(0.5), nn.Threshold(0.1, 20.0), nn.Tanhshrink(), nn.GLU(), nn.Mish(),
                                  nn.Hardswish(), nn.Hardsigmoid(), nn.Softsign())]
    assert reprs(gradc) == reprs(torch)
    with pytest.warns(UserWarning, match="Implicit dimension choice for softmax has been deprecated"):
        F.softmax(gradc.ones(2, 3))
    with pytest.raises(RuntimeError, match="Halving dimension must be even, but dimension 0 is size 3"):
        F.glu(gradc.ones(3))
    rng = np.random.default_rng(9)
    compiled_vs_eager(lambda x: (F.hardswish(x) + F.mish(x) + F.selu(x) * F.relu6(x) + F.glu(x, 1).sum()
                                 + F.softshrink(x) * F.hardsigmoid(x)).sum(), rng.standard_normal((4, 6)) * 4)


_A = np.random.default_rng(21)
ATTENTION_AND_NORMS = [
    ("F.scaled_dot_product_attention(q, k, v)", dict(q=(2, 3, 4, 5), k=(2, 3, 6, 5), v=(2, 3, 6, 7))),
    ("F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=0.3)", dict(q=(3, 4, 5), k=(3, 6, 5), v=(3, 6, 2))),
    ("F.scaled_dot_product_attention(q, k, v, attn_mask=m.tensor(np.tri(4, 6, 2) > 0))",
     dict(q=(2, 4, 5), k=(2, 6, 5), v=(2, 6, 3))),
    ("F.scaled_dot_product_attention(q, k, v, attn_mask=b)", dict(q=(2, 1, 4, 5), k=(2, 1, 6, 5), v=(2, 1, 6, 3),
                                                                  b=(2, 1, 4, 6))),
    ("F.scaled_dot_product_attention(q, k, v, enable_gqa=True)", dict(q=(1, 4, 3, 2), k=(1, 2, 5, 2), v=(1, 2, 5, 3))),
    ("F.group_norm(x, 2, w, b)", dict(x=(2, 4, 3, 2), w=(4,), b=(4,))),
    ("F.group_norm(x, 4)", dict(x=(2, 4, 5))),
    ("F.rms_norm(x, (3, 2), w)", dict(x=(2, 4, 3, 2), w=(3, 2))),
    ("m.nn.RMSNorm(2, dtype=m.float64)(x)", dict(x=(2, 4, 3, 2))),
    ("m.nn.GroupNorm(2, 4, dtype=m.float64)(x)", dict(x=(2, 4, 3))),
    ("F.kl_div(p.log_softmax(1), t.softmax(1), reduction='batchmean')", dict(p=(3, 5), t=(3, 5))),
    ("F.kl_div(p, t.softmax(1).log(), reduction='sum', log_target=True)", dict(p=(3, 5), t=(3, 5))),
    ("m.nn.KLDivLoss(reduction='none')(p, t.sigmoid())", dict(p=(3, 5), t=(3, 5))),
]


@pytest.mark.parametrize("expr,shapes", ATTENTION_AND_NORMS, ids=[e for e, _ in ATTENTION_AND_NORMS])
def test_attention_norms_and_kl_div_match_pytorch(expr, shapes):
    """scaled_dot_product_attention (causal, bool and float masks, grouped heads), group_norm,
    rms_norm and kl_div: values and the gradient of every input, float64."""
    torch = pytest.importorskip("torch")
    arrays = {n: _A.standard_normal(s) for n, s in shapes.items()}
    got = []
    for m in (torch, gradc):
        ts = {n: m.tensor(a, requires_grad=True) for n, a in arrays.items()}
        y = eval(expr, {"F": m.nn.functional, "m": m, "np": np, **ts})
        (y * m.arange(y.numel(), dtype=m.float64).reshape(y.shape)).sum().backward()
        got.append([y.detach().numpy()] + [t.grad.numpy() for t in ts.values()])
    for want, have in zip(*got, strict=True):
        assert have.shape == want.shape
        np.testing.assert_allclose(have, want, rtol=1e-10, atol=1e-12)


def test_attention_compiles_and_norm_modules_print(compiled_vs_eager):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(5)

    def attn(q, k, v):
        return (F.scaled_dot_product_attention(q, k, v, is_causal=True) ** 2).sum()
    compiled_vs_eager(attn, rng.standard_normal((2, 4, 8)), rng.standard_normal((2, 4, 8)), rng.standard_normal((2, 4, 8)))
    for mod in ("GroupNorm(2, 4)", "RMSNorm(4)", "RMSNorm([3, 4], eps=1e-3)", "KLDivLoss()"):
        assert repr(eval("gradc.nn." + mod)) == repr(eval("torch.nn." + mod, {"torch": torch}))
    with pytest.raises(ValueError, match=r"num_channels \(4\) must be divisible by num_groups \(3\)"):
        gradc.nn.GroupNorm(3, 4)


def test_optimizer_state_dict_round_trip():
    """state_dict has PyTorch's layout (state by parameter position, groups listing positions);
    a fresh optimizer loaded from it continues exactly where the first one would have."""
    rng = np.random.default_rng(3)
    x = gradc.tensor(rng.standard_normal((5, 3)))

    def loss(w):
        return ((x @ w).tanh() ** 2).sum()
    w1 = gradc.nn.Parameter(gradc.tensor(rng.standard_normal((3, 2))))
    opt = gradc.optim.Adam([w1], lr=0.1)
    for _ in range(3):
        opt.zero_grad()
        loss(w1).backward()
        opt.step()
    sd = opt.state_dict()
    assert list(sd["state"]) == [0] and sd["param_groups"][0]["params"] == [0] and sd["state"][0]["step"] == 3
    w2 = gradc.nn.Parameter(w1.detach().clone())
    opt2 = gradc.optim.Adam([w2], lr=0.5)
    opt2.load_state_dict(sd)
    assert opt2.param_groups[0]["lr"] == 0.1
    for w, o in ((w1, opt), (w2, opt2)):
        o.zero_grad()
        loss(w).backward()
        o.step()
    np.testing.assert_array_equal(w2.detach().numpy(), w1.detach().numpy())
    with pytest.raises(ValueError, match="different number of parameter groups"):
        opt2.load_state_dict({"state": {}, "param_groups": []})


@pytest.mark.parametrize("kw", [dict(), dict(key_padding_mask="kpm"), dict(attn_mask="float"), dict(attn_mask="causal"),
                                dict(average_attn_weights=False), dict(need_weights=False),
                                dict(attn_mask="float", key_padding_mask="kpm"), dict(is_causal=True, attn_mask="causal")],
                         ids=["plain", "padding", "float-mask", "bool-mask", "per-head", "no-weights", "both", "causal"])
def test_multihead_attention_matches_pytorch(kw):
    """PyTorch's weights loaded into gradc's module: outputs, attention weights, and the gradients
    of the inputs and every parameter agree (sequence-first, float64)."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    E, H, L, S, N = 8, 2, 3, 5, 2
    tm = torch.nn.MultiheadAttention(E, H, dtype=torch.float64)
    gm = gradc.nn.MultiheadAttention(E, H, dtype=gradc.float64)
    assert repr(gm) == repr(tm) and list(gm.state_dict()) == list(tm.state_dict())
    gm.load_state_dict({k: gradc.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
    q, k, v = rng.standard_normal((L, N, E)), rng.standard_normal((S, N, E)), rng.standard_normal((S, N, E))
    kpm = np.zeros((N, S), bool)
    kpm[0, 4] = kpm[1, 0] = True
    masks = {"kpm": kpm, "float": rng.standard_normal((L, S)), "causal": np.triu(np.ones((L, S), bool), 1)}
    got = []
    for m, mod in ((torch, tm), (gradc, gm)):
        ts = [m.tensor(a, requires_grad=True) for a in (q, k, v)]
        args = {n: (m.tensor(masks[a]) if isinstance(a, str) else a) for n, a in kw.items()}
        out, w = mod(*ts, **args)
        loss = (out * m.arange(out.numel(), dtype=m.float64).reshape(out.shape)).sum()
        if w is not None:
            loss = loss + (w ** 2).sum()
        mod.zero_grad()
        loss.backward()
        got.append([out.detach().numpy()] + ([] if w is None else [w.detach().numpy()]) + [t.grad.numpy() for t in ts]
                   + [p.grad.numpy() for p in mod.parameters()])
    for want, have in zip(*got, strict=True):
        assert have.shape == want.shape
        np.testing.assert_allclose(have, want, rtol=1e-9, atol=1e-11)


def test_multihead_attention_batch_first_unbatched_and_compiled(compiled_vs_eager):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(1)
    tm = torch.nn.MultiheadAttention(8, 4, batch_first=True, dtype=torch.float64)
    gm = gradc.nn.MultiheadAttention(8, 4, batch_first=True, dtype=gradc.float64)
    gm.load_state_dict({k: gradc.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
    for shape in [(2, 3, 8), (3, 8)]:
        x = rng.standard_normal(shape)
        (to, tw), (go, gw) = tm(*(torch.tensor(x),) * 3), gm(*(gradc.tensor(x),) * 3)
        np.testing.assert_allclose(go.detach().numpy(), to.detach().numpy(), rtol=1e-10)
        np.testing.assert_allclose(gw.detach().numpy(), tw.detach().numpy(), rtol=1e-10)
    params = [p.detach().numpy() for p in gm.parameters()]
    x = gradc.tensor(rng.standard_normal((2, 3, 8)))

    def loss(wi, bi, wo, bo):
        for p, new in zip(gm.parameters(), (wi, bi, wo, bo)):
            object.__setattr__(gm if p is gm.in_proj_weight or p is gm.in_proj_bias else gm.out_proj,
                               "weight" if p is gm.in_proj_weight or p is gm.out_proj.weight else "bias", new) \
                if False else None
        return F.scaled_dot_product_attention(*(F.linear(x, wi[i * 8:(i + 1) * 8], bi[i * 8:(i + 1) * 8])
                                                for i in range(3)), is_causal=True).tanh().sum() + (wo * bo).sum()
    compiled_vs_eager(loss, *params)


_S = np.random.default_rng(31)
_X4, _X3 = _S.standard_normal((2, 3, 5, 7)), _S.standard_normal((2, 3, 9))
RESAMPLING = [("F.adaptive_avg_pool2d(x, (2, 3))", _X4), ("F.adaptive_avg_pool2d(x, (4, None))", _X4),
              ("F.adaptive_avg_pool1d(x, 4)", _X3), ("F.interpolate(x, size=(3, 5))", _X4),
              ("F.interpolate(x, scale_factor=1.7)", _X4), ("F.interpolate(x, size=(8, 4), mode='nearest-exact')", _X4),
              ("F.interpolate(x, size=(8, 11), mode='bilinear')", _X4),
              ("F.interpolate(x, size=(8, 11), mode='bilinear', align_corners=True)", _X4),
              ("F.interpolate(x, scale_factor=1.5, mode='bilinear')", _X4), ("F.interpolate(x, size=4, mode='linear')", _X3),
              ("F.interpolate(x, scale_factor=0.5, mode='linear', align_corners=True)", _X3),
              ("F.interpolate(x, size=(2, 3), mode='area')", _X4), ("F.avg_pool1d(x, 3, 2, 1)", _X3),
              ("F.max_pool1d(x, 3, 2)", _X3), ("m.nn.Upsample(scale_factor=2, mode='bilinear')(x)", _X4),
              ("m.nn.AdaptiveAvgPool2d((2, 2))(x)", _X4), ("F.adaptive_max_pool2d(x, (2, 3))", _X4),
              ("m.nn.AdaptiveMaxPool2d((4, None))(x)", _X4), ("F.adaptive_max_pool2d(x[0], 4)", _X4),
              ("F.adaptive_max_pool1d(x, 4)", _X3), ("m.nn.AdaptiveMaxPool1d(7)(x)", _X3),
              ("F.adaptive_max_pool2d(x, (2, 3), return_indices=True)[1] * 1.0 + x.sum()", _X4),
              ("F.adaptive_max_pool1d(x, 4, return_indices=True)[1] * 1.0 + x.sum()", _X3)]


@pytest.mark.parametrize("expr,data", RESAMPLING, ids=[e for e, _ in RESAMPLING])
def test_resampling_matches_pytorch(expr, data):
    """interpolate (nearest, nearest-exact, linear, bilinear with and without align_corners,
    area; by size and by scale factor), adaptive average pooling and the 1-D pools."""
    torch = pytest.importorskip("torch")
    got = []
    for m in (torch, gradc):
        x = m.tensor(data, requires_grad=True)
        y = eval(expr, {"F": m.nn.functional, "m": m, "x": x})
        (y * m.arange(y.numel(), dtype=m.float64).reshape(y.shape)).sum().backward()
        got.append([y.detach().numpy(), x.grad.numpy()])
    for want, have in zip(*got, strict=True):
        assert have.shape == want.shape
        np.testing.assert_allclose(have, want, rtol=1e-10, atol=1e-12)


DISTANCES = ["F.pairwise_distance(a, p)", "F.margin_ranking_loss(a[:, 0], p[:, 0], t)",
             "F.hinge_embedding_loss(a, t[:, None] * m.ones(4, 5, dtype=m.float64))",
             "F.cosine_embedding_loss(a, p, t, margin=0.2)", "F.triplet_margin_loss(a, p, n, swap=True)",
             "m.nn.TripletMarginLoss(margin=0.5, p=1)(a, p, n)", "m.nn.MarginRankingLoss(0.1)(a[:, 0], p[:, 0], t)",
             "m.nn.PairwiseDistance(p=1, keepdim=True)(a, p)"]


@pytest.mark.parametrize("expr", DISTANCES)
def test_distance_losses_match_pytorch(expr):
    torch = pytest.importorskip("torch")
    arrays = [_S.standard_normal((4, 5)) for _ in range(3)]
    got = []
    for m in (torch, gradc):
        a, p, n = (m.tensor(v, requires_grad=True) for v in arrays)
        y = eval(expr, {"F": m.nn.functional, "m": m, "a": a, "p": p, "n": n, "t": m.tensor([1.0, -1, 1, -1])})
        (y * m.arange(y.numel(), dtype=m.float64).reshape(y.shape)).sum().backward()
        got.append([y.detach().numpy()] + [np.zeros(1) if q.grad is None else q.grad.numpy() for q in (a, p, n)])
    for want, have in zip(*got, strict=True):
        np.testing.assert_allclose(have, want, rtol=1e-10, atol=1e-12)


def test_resampling_modules_print_and_compile(compiled_vs_eager):
    torch = pytest.importorskip("torch")
    for mod in ("Upsample(scale_factor=2)", "AdaptiveAvgPool2d((2, 3))", "AdaptiveAvgPool2d(1)", "AvgPool1d(2)",
                "AdaptiveMaxPool2d((2, 3))", "AdaptiveMaxPool1d(3)",
                "MaxPool1d(3, 2)", "Upsample(size=(3, 4), mode='bilinear')"):
        assert repr(eval("gradc.nn." + mod)) == repr(eval("torch.nn." + mod, {"torch": torch}))
    with pytest.raises(ValueError, match="only one of size or scale_factor should be defined"):
        F.interpolate(gradc.ones(1, 1, 4), size=2, scale_factor=2)
    rng = np.random.default_rng(2)
    compiled_vs_eager(lambda x: (F.interpolate(F.adaptive_avg_pool2d(x, (3, 2)), scale_factor=2, mode="bilinear") ** 2
                                 ).sum() + F.interpolate(x, size=(4, 4)).sum(), rng.standard_normal((1, 2, 6, 5)))


RECURRENT = [(cls, kw) for cls in ("RNN", "LSTM", "GRU")
             for kw in (dict(), dict(num_layers=2), dict(bidirectional=True),
                        dict(num_layers=2, bidirectional=True, batch_first=True), dict(bias=False), dict(initial=True),
                        dict(unbatched=True))] + [("RNN", dict(nonlinearity="relu"))]


@pytest.mark.parametrize("cls,kw", RECURRENT, ids=[f"{c}-{'-'.join(k) or 'plain'}" for c, k in RECURRENT])
def test_recurrent_layers_match_pytorch(cls, kw):
    """PyTorch's weights loaded into gradc's RNN/LSTM/GRU (same names and order, same repr):
    outputs, final states and the gradients of the input, the initial state and every
    parameter agree in float64."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(12)
    kw = dict(kw)
    initial, unbatched = kw.pop("initial", False), kw.pop("unbatched", False)
    tm = getattr(torch.nn, cls)(3, 4, dtype=torch.float64, **kw)
    gm = getattr(gradc.nn, cls)(3, 4, dtype=gradc.float64, **kw)
    assert repr(gm) == repr(tm) and list(gm.state_dict()) == list(tm.state_dict())
    gm.load_state_dict({k: gradc.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
    shape = (5, 3) if unbatched else (2, 5, 3) if kw.get("batch_first") else (5, 2, 3)
    x = rng.standard_normal(shape)
    layers = kw.get("num_layers", 1) * (2 if kw.get("bidirectional") else 1)
    h0 = [rng.standard_normal((layers, 2, 4)) for _ in range(2)] if initial else None
    got = []
    for m, mod in ((torch, tm), (gradc, gm)):
        xt = m.tensor(x, requires_grad=True)
        states = [m.tensor(h, requires_grad=True) for h in h0] if h0 else []
        hx = None if not states else (tuple(states) if cls == "LSTM" else states[0])
        out, hn = mod(xt, hx)
        hs = hn if isinstance(hn, tuple) else (hn,)
        loss = (out * m.arange(out.numel(), dtype=m.float64).reshape(out.shape)).sum() + sum((h ** 2).sum() for h in hs)
        mod.zero_grad()
        loss.backward()
        got.append([out.detach().numpy()] + [h.detach().numpy() for h in hs] + [xt.grad.numpy()]
                   + [s.grad.numpy() for s in states[:1 if cls != "LSTM" else 2]] + [p.grad.numpy() for p in mod.parameters()])
    for want, have in zip(*got, strict=True):
        assert have.shape == want.shape
        np.testing.assert_allclose(have, want, rtol=1e-9, atol=1e-11)


def test_lstm_compiles_as_an_unrolled_function():
    """A compiled loss closing over an LSTM: equal to eager, gradients reach its parameters."""
    rng = np.random.default_rng(13)
    lstm = gradc.nn.LSTM(3, 4, dtype=gradc.float64)
    head = gradc.nn.Linear(4, 1, dtype=gradc.float64)
    x = gradc.tensor(rng.standard_normal((6, 2, 3)))
    loss = gradc.compile(lambda x: (head(lstm(x)[0][-1]) ** 2).mean())
    got = loss(x)
    got.backward()
    compiled = [p.grad.numpy().copy() for p in lstm.parameters()]
    lstm.zero_grad()
    want = (head(lstm(x)[0][-1]) ** 2).mean()
    want.backward()
    assert got.item() == pytest.approx(want.item(), rel=1e-12)
    for c, p in zip(compiled, lstm.parameters()):
        np.testing.assert_allclose(c, p.grad.numpy(), rtol=1e-10, atol=1e-14)


TRANSPOSED = [dict(), dict(stride=2), dict(stride=2, padding=1, output_padding=1), dict(stride=3, padding=2, dilation=2),
              dict(groups=2, stride=2), dict(padding=2)]


@pytest.mark.parametrize("dim", [1, 2])
@pytest.mark.parametrize("kw", TRANSPOSED, ids=lambda kw: "-".join(f"{k}{v}" for k, v in kw.items()) or "plain")
def test_conv_transpose_matches_pytorch(dim, kw):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(14)
    x = rng.standard_normal((2, 4, 5, 4) if dim == 2 else (2, 4, 7))
    w = rng.standard_normal((4, 6 // kw.get("groups", 1)) + ((3, 2) if dim == 2 else (3,)))
    b = rng.standard_normal(6)
    got = []
    for m in (torch, gradc):
        xt, wt, bt = (m.tensor(a, requires_grad=True) for a in (x, w, b))
        y = getattr(m.nn.functional, f"conv_transpose{dim}d")(xt, wt, bt, **kw)
        (y * m.arange(y.numel(), dtype=m.float64).reshape(y.shape)).sum().backward()
        got.append([y.detach().numpy(), xt.grad.numpy(), wt.grad.numpy(), bt.grad.numpy()])
    for want, have in zip(*got, strict=True):
        assert have.shape == want.shape
        np.testing.assert_allclose(have, want, rtol=1e-10, atol=1e-10)


def test_conv_transpose_modules_print_and_compile(compiled_vs_eager):
    torch = pytest.importorskip("torch")
    for mod in ("ConvTranspose2d(4, 6, 3, stride=2, padding=1, output_padding=1, groups=2)",
                "ConvTranspose2d(2, 3, (2, 3), bias=False)", "ConvTranspose1d(2, 3, 3, stride=2, dilation=2)"):
        assert repr(eval("gradc.nn." + mod)) == repr(eval("torch.nn." + mod, {"torch": torch}))
    rng = np.random.default_rng(15)
    compiled_vs_eager(lambda x, w: (F.conv_transpose2d(x, w, stride=2, padding=1, output_padding=1) ** 2).sum(),
                      rng.standard_normal((1, 2, 4, 3)), rng.standard_normal((2, 3, 3, 3)))


@pytest.mark.parametrize("kw", [dict(), dict(norm_first=True), dict(batch_first=True, activation="gelu")],
                         ids=["post-norm", "pre-norm", "batch-first-gelu"])
def test_transformer_encoder_matches_pytorch(kw):
    """Two encoder layers (dropout 0) with PyTorch's weights: same repr and state_dict keys,
    outputs and the gradients of the input and every parameter."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(16)
    tl = torch.nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0, dtype=torch.float64, **kw)
    gl = gradc.nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0, dtype=gradc.float64, **kw)
    assert repr(gl) == repr(tl) and list(gl.state_dict()) == list(tl.state_dict())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        te = torch.nn.TransformerEncoder(tl, 2, enable_nested_tensor=False)
    ge = gradc.nn.TransformerEncoder(gl, 2)
    ge.load_state_dict({k: gradc.tensor(v.detach().numpy()) for k, v in te.state_dict().items()})
    x = rng.standard_normal((5, 3, 8))
    kpm = np.zeros((3, 5), bool)
    kpm[1, 4] = True
    got = []
    for m, mod in ((torch, te), (gradc, ge)):
        xt = m.tensor(x, requires_grad=True)
        y = mod(xt) if kw.get("batch_first") else mod(xt, src_key_padding_mask=m.tensor(kpm))
        (y * m.arange(y.numel(), dtype=m.float64).reshape(y.shape)).sum().backward()
        got.append([y.detach().numpy(), xt.grad.numpy()] + [p.grad.numpy() for p in mod.parameters()])
    for want, have in zip(*got, strict=True):
        np.testing.assert_allclose(have, want, rtol=1e-9, atol=1e-10)


FOLDS = [("F.unfold(x, (2, 3), padding=1, stride=2)", (2, 3, 4, 5)), ("F.unfold(x, 2, dilation=2)", (1, 2, 5, 6)),
         ("F.unfold(x, 3)", (3, 4, 4)), ("F.fold(x, (4, 5), (2, 3), padding=1, stride=2)", (2, 18, 9)),
         ("F.fold(x, (5, 6), 2, dilation=2)", (1, 8, 12)), ("F.fold(x, (5, 5), 2, stride=2)", (1, 8, 4)),
         ("F.fold(F.unfold(x, 3, padding=1), (4, 5), 3, padding=1)", (2, 3, 4, 5)), ("m.nn.Fold((4, 4), 2)(x)", (2, 12, 9)),
         ("m.nn.Unfold(2, stride=2)(x)", (2, 3, 4, 6))]


@pytest.mark.parametrize("expr,shape", FOLDS, ids=[e for e, _ in FOLDS])
def test_unfold_and_fold_match_pytorch(expr, shape):
    torch = pytest.importorskip("torch")
    x = np.random.default_rng(17).standard_normal(shape)
    got, nodes = [], []
    for m in (torch, gradc):
        xt = m.tensor(x, requires_grad=True)
        y = eval(expr, {"F": m.nn.functional, "m": m, "x": xt})
        nodes.append(type(y.grad_fn).__name__)
        (y * m.arange(y.numel(), dtype=m.float64).reshape(y.shape)).sum().backward()
        got.append([y.detach().numpy(), xt.grad.numpy()])
    if expr.startswith(("F.fold", "m.nn.Fold")):
        assert nodes[1] == nodes[0] == "Col2ImBackward0"
    for want, have in zip(*got, strict=True):
        assert have.shape == want.shape
        np.testing.assert_allclose(have, want, rtol=1e-12, atol=1e-12)
    assert repr(gradc.nn.Fold((4, 5), 2)) == repr(torch.nn.Fold((4, 5), 2))
    with pytest.raises(RuntimeError, match="divisible by the product of kernel_size"):
        F.fold(gradc.ones(1, 5, 4), (4, 5), 2)
