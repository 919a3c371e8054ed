"""Automatic mixed precision: ``gradc.autocast`` / ``gradc.amp`` / ``gradc.cuda.amp`` / ``gradc.cpu.amp``
and ``GradScaler``, against PyTorch (a CPU build: CUDA autocast and scalers warn and disable)."""
import pickle
import threading
import warnings

import numpy as np
import pytest

import gradc

torch = pytest.importorskip("torch")


@pytest.fixture
def no_cuda(monkeypatch):
    """gradc without a CUDA device, as the CPU build of PyTorch the tests compare with."""
    monkeypatch.setattr(gradc.cuda, "is_available", lambda: False)


def _caught(fn):
    """(the exception's type and message, or None; the warnings' categories and messages) of ``fn()``."""
    with warnings.catch_warnings(record=True) as ws:
        warnings.simplefilter("always")
        try:
            fn()
            err = None
        except Exception as e:  # noqa: BLE001  (compared with PyTorch's)
            err = (type(e).__name__, str(e))
    return err, [(w.category.__name__, str(w.message)) for w in ws]


# ---- the API --------------------------------------------------------------------------------------------
def test_the_names_a_ported_script_uses_exist():
    assert gradc.autocast is gradc.amp.autocast
    assert gradc.GradScaler is gradc.amp.GradScaler
    from gradc.cuda.amp import GradScaler, autocast, custom_bwd, custom_fwd  # noqa: F401
    from gradc.cpu.amp import GradScaler as CpuScaler, autocast as cpu_autocast  # noqa: F401
    for name in ("is_autocast_enabled", "set_autocast_enabled", "get_autocast_dtype", "set_autocast_dtype",
                 "is_autocast_cache_enabled", "set_autocast_cache_enabled", "autocast_increment_nesting",
                 "autocast_decrement_nesting", "clear_autocast_cache", "is_autocast_cpu_enabled",
                 "get_autocast_gpu_dtype", "get_autocast_cpu_dtype"):
        assert callable(getattr(gradc, name)), name
    assert gradc.amp.is_autocast_available("cpu") and gradc.amp.is_autocast_available("cuda")
    assert gradc.cpu.is_available() and gradc.cpu.device_count() == 1 and gradc.cpu.current_device() == "cpu"


@pytest.mark.parametrize("lib", [torch, gradc], ids=["torch", "gradc"])
def test_state_functions_and_nesting(lib):
    seen = []
    assert lib.is_autocast_enabled() is False and lib.is_autocast_enabled("cpu") is False
    assert lib.get_autocast_dtype("cuda") == lib.float16
    with lib.autocast("cpu", dtype=lib.float16):
        seen.append((lib.is_autocast_enabled("cpu"), lib.is_autocast_enabled(), str(lib.get_autocast_dtype("cpu"))))
        with lib.autocast("cpu", enabled=False):
            seen.append((lib.is_autocast_enabled("cpu"), str(lib.get_autocast_dtype("cpu"))))
            seen.append(lib.mm(lib.ones(2, 2), lib.ones(2, 2)).dtype == lib.float32)
        seen.append(lib.mm(lib.ones(2, 2), lib.ones(2, 2)).dtype == lib.float16)
        with lib.autocast("cpu", dtype=lib.float16, cache_enabled=False):
            seen.append(lib.is_autocast_cache_enabled())
        seen.append(lib.is_autocast_cache_enabled())
    seen.append(lib.is_autocast_enabled("cpu"))
    seen.append((lib.autocast_increment_nesting(), lib.autocast_decrement_nesting(), lib.autocast_decrement_nesting()))
    lib.autocast_increment_nesting()
    assert seen == [(True, False, "torch.float16"), (False, "torch.float16"), True, True, False, True, False,
                    (1, 0, -1)]


@pytest.mark.parametrize("call", [
    lambda lib: lib.autocast(1),
    lambda lib: lib.autocast("meta", dtype=lib.float16),
    lambda lib: lib.autocast("cpu", dtype=lib.float16)(3),
    lambda lib: lib.autocast("cpu", dtype=lib.float32),
    lambda lib: lib.autocast("cpu", dtype=lib.float64),
    lambda lib: lib.is_autocast_enabled("foo"),
    lambda lib: lib.set_autocast_enabled("cpu"),
    lambda lib: lib.set_autocast_dtype("cpu", 3),
    lambda lib: lib.get_autocast_cpu_dtype() if lib is gradc else lib.get_autocast_gpu_dtype(),
    lambda lib: lib.amp.custom_fwd(device_type=1),
], ids=["device-type", "device", "decorate", "float32", "float64", "state-device", "enabled-type", "dtype-type",
        "deprecated", "custom_fwd"])
def test_errors_and_warnings_as_pytorch(call):
    got, want = _caught(lambda: call(gradc)), _caught(lambda: call(torch))
    if got[1] and got[1][0][0] == "DeprecationWarning":     # (gradc's cpu dtype is unset: compare the words only)
        got = (None, [(got[1][0][0], got[1][0][1].replace("cpu", "gpu"))])
        want = (None, [(c, m.split(" (Triggered")[0].replace("cuda", "gpu")) for c, m in want[1]])
    assert got == want


def test_autocast_state_is_per_thread():
    seen = []
    with gradc.autocast("cpu", dtype=gradc.float16):
        t = threading.Thread(target=lambda: seen.append(gradc.is_autocast_enabled("cpu")))
        t.start()
        t.join()
        seen.append(gradc.is_autocast_enabled("cpu"))
    assert seen == [False, True]


def test_cpu_without_a_dtype_names_the_missing_bfloat16():
    """PyTorch's CPU default is bfloat16, which gradc lacks: an error, not float16 numbers."""
    with pytest.raises(RuntimeError, match="gradc has no bfloat16.*dtype=gradc.float16"):
        gradc.autocast("cpu")
    with pytest.raises(RuntimeError, match="gradc has no bfloat16"):
        gradc.get_autocast_dtype("cpu")
    with pytest.warns(FutureWarning), pytest.raises(RuntimeError, match="gradc has no bfloat16"):
        gradc.cpu.amp.autocast()
    with pytest.raises(TypeError, match="bfloat16"):
        gradc.autocast("cpu", dtype=torch.bfloat16)
    with pytest.raises(AttributeError, match="no attribute 'bfloat16': gradc has no bfloat16"):
        gradc.autocast("cpu", dtype=gradc.bfloat16)
    with pytest.raises(AttributeError, match="no attribute 'bfloat17'$"):
        gradc.bfloat17  # noqa: B018
    assert not hasattr(gradc, "bfloat16")
    with gradc.autocast("cpu", enabled=False):        # turned off, the dtype does not matter
        assert gradc.mm(gradc.ones(2, 2), gradc.ones(2, 2)).dtype is gradc.float32
    gradc.set_autocast_enabled("cpu", True)              # switched on by hand, without a dtype
    try:
        with pytest.raises(RuntimeError, match="gradc has no bfloat16"):
            gradc.mm(gradc.ones(2, 2), gradc.ones(2, 2))
    finally:
        gradc.set_autocast_enabled("cpu", False)
    gradc.set_autocast_dtype("cpu", gradc.float16)
    try:
        with gradc.autocast("cpu"):
            assert gradc.mm(gradc.ones(2, 2), gradc.ones(2, 2)).dtype is gradc.float16
    finally:
        gradc.set_autocast_dtype("cpu", None)


def test_cuda_without_cuda_warns_and_disables_as_pytorch(no_cuda):
    for make in (lambda lib: lib.autocast("cuda"), lambda lib: lib.amp.autocast("cuda", dtype=lib.float16),
                 lambda lib: lib.cuda.amp.autocast(), lambda lib: lib.amp.GradScaler(),
                 lambda lib: lib.cuda.amp.GradScaler(), lambda lib: lib.cpu.amp.GradScaler(),
                 lambda lib: lib.cpu.amp.autocast(enabled=False)):
        (g_err, g_warn), (t_err, t_warn) = _caught(lambda: make(gradc)), _caught(lambda: make(torch))
        assert g_err is None and t_err is None
        assert g_warn == t_warn
    with pytest.warns(UserWarning, match="CUDA is not available"):
        region = gradc.autocast("cuda")
    with region:
        assert gradc.is_autocast_enabled("cuda") is False
        assert gradc.mm(gradc.ones(2, 2), gradc.ones(2, 2)).dtype is gradc.float32
    for name in ("custom_fwd", "custom_bwd"):
        with pytest.warns(FutureWarning, match=f"torch.cuda.amp.{name}"):
            getattr(gradc.cuda.amp, name)(lambda ctx, x: x)


def test_cuda_autocast_with_a_gpu_says_gradc_cannot(cuda):
    """gradc's CUDA tensors run as compiled kernels, which have no float16: an error, not float32 numbers."""
    with pytest.raises(RuntimeError, match="gradc cannot autocast on CUDA"):
        gradc.autocast("cuda")
    with gradc.autocast("cuda", enabled=False):
        x = gradc.ones(2, 2, device=cuda)
        assert (x @ x).dtype is gradc.float32
    p = gradc.nn.Parameter(gradc.tensor([3.0, 4.0], device=cuda))     # float32 gradients: the scaler works
    opt = gradc.optim.SGD([p], lr=0.5)
    scaler = gradc.amp.GradScaler(init_scale=4.0)
    scaler.scale((p * p).sum() / 2).backward()
    assert p.grad.tolist() == [12.0, 16.0]
    scaler.step(opt)
    scaler.update()
    assert p.tolist() == [1.5, 2.0] and scaler.get_scale() == 4.0 and scaler._scale.device.type == "cuda"
    opt.zero_grad()
    scaler.scale((p * p).sum()).backward()
    p.grad[0] = float("inf")
    scaler.step(opt)
    scaler.update()
    assert p.tolist() == [1.5, 2.0] and scaler.get_scale() == 2.0


# ---- the ops' casts --------------------------------------------------------------------------------------
def _op_cases(T):
    F = T.nn.functional
    rs = np.random.RandomState(0)

    def t(*shape):
        return T.tensor(rs.randn(*shape).astype(np.float32))
    x, y, b = t(4, 4), t(4, 4), t(4)
    img, w = t(1, 2, 5, 5), t(3, 2, 3, 3)
    tgt = T.tensor([0, 1, 2, 3])
    xh, yh, imgh = x.half(), y.half(), img.half()
    return {
        # lower precision: float32 inputs cast to float16
        "matmul": lambda: T.matmul(x, y), "mm": lambda: T.mm(x, y), "bmm": lambda: T.bmm(x[None], y[None]),
        "@": lambda: x @ y, "Tensor.mm": lambda: x.mm(y), "linear": lambda: F.linear(x, y, b),
        "linear-3d": lambda: F.linear(img[0], t(3, 5), t(3)), "addmm": lambda: T.addmm(b, x, y),
        "baddbmm": lambda: T.baddbmm(x[None], x[None], y[None]), "addbmm": lambda: T.addbmm(x, x[None], y[None]),
        "conv1d": lambda: F.conv1d(img[:, :, 0], w[:, :, 0]), "conv2d": lambda: F.conv2d(img, w, t(3)),
        "conv3d": lambda: F.conv3d(img[:, :, None], w[:, :, None]),
        "conv_transpose2d": lambda: F.conv_transpose2d(img, w.transpose(0, 1)),
        "prelu": lambda: F.prelu(x, T.tensor([0.1])),
        "sdpa": lambda: F.scaled_dot_product_attention(x[None], x[None], x[None]),
        "vecdot": lambda: T.linalg.vecdot(x, y), "half-and-float": lambda: T.matmul(xh, y),
        "float64": lambda: T.mm(x.double(), y.double()),
        # composites that reach a listed op
        "einsum": lambda: T.einsum("ij,jk->ik", x, y), "tensordot": lambda: T.tensordot(x, y, 1),
        "inner": lambda: T.inner(x, y), "multi_dot": lambda: T.linalg.multi_dot([x, y, x]),
        "Linear": lambda: T.nn.Linear(4, 3)(x).float() * 0, "MultiheadAttention":
            lambda: T.nn.MultiheadAttention(4, 1)(x[None], x[None], x[None])[0] * 0,
        # not listed: their inputs' dtype
        "mv": lambda: T.mv(x, b), "dot": lambda: T.dot(b, b), "addmv": lambda: T.addmv(b, x, b),
        "outer": lambda: T.outer(b, b), "addr": lambda: T.addr(x, b, b), "softmax": lambda: F.softmax(x, -1),
        "relu": lambda: F.relu(x), "sum": lambda: x.sum(), "layer_norm-half": lambda: F.layer_norm(xh, (4,)),
        "mixed-add": lambda: x + xh, "mixed-cat": lambda: T.cat([x, xh]), "kron": lambda: T.kron(x, y),
        # float32: float16 inputs cast up
        "prod": lambda: xh.prod(), "mse_loss": lambda: F.mse_loss(xh, yh), "l1_loss": lambda: F.l1_loss(xh, yh),
        "cross_entropy": lambda: F.cross_entropy(xh, tgt), "nll_loss": lambda: F.nll_loss(xh, tgt),
        "binary_cross_entropy": lambda: F.binary_cross_entropy(xh.sigmoid(), yh.sigmoid()),
        "bce_with_logits": lambda: F.binary_cross_entropy_with_logits(xh, yh.sigmoid()),
        "kl_div": lambda: F.kl_div(xh, yh.sigmoid(), reduction="batchmean"),
        "smooth_l1_loss": lambda: F.smooth_l1_loss(xh, yh), "huber_loss": lambda: F.huber_loss(xh, yh),
        "cdist": lambda: T.cdist(xh, yh), "trace": lambda: T.trace(xh), "inverse": lambda: T.inverse(xh),
        "linalg.inv": lambda: T.linalg.inv(xh), "pinverse": lambda: T.pinverse(xh),
        "quantile": lambda: T.quantile(xh, 0.5), "max_pool3d": lambda: F.max_pool3d(imgh, 1),
        "avg_pool3d": lambda: F.avg_pool3d(imgh, 1), "adaptive_avg_pool3d": lambda: F.adaptive_avg_pool3d(imgh, 1),
        "cosine_embedding_loss": lambda: F.cosine_embedding_loss(xh, yh, T.ones(4)),
        "margin_ranking_loss": lambda: F.margin_ranking_loss(b.half(), b.half(), T.ones(4)),
        "soft_margin_loss": lambda: F.soft_margin_loss(xh, yh), "hinge_embedding_loss":
            lambda: F.hinge_embedding_loss(xh, yh), "poisson_nll_loss": lambda: F.poisson_nll_loss(xh, yh),
        "triplet_margin_loss": lambda: F.triplet_margin_loss(xh, yh, xh), "multi_margin_loss":
            lambda: F.multi_margin_loss(xh, tgt), "multilabel_margin_loss":
            lambda: F.multilabel_margin_loss(xh, T.zeros(4, 4, dtype=T.long)),
        "cholesky": lambda: T.linalg.cholesky((x @ x.T + T.eye(4)).half()), "svd": lambda: T.linalg.svd(xh)[1],
        "solve": lambda: T.linalg.solve(xh, yh),
        "grid_sample": lambda: F.grid_sample(imgh, T.zeros(1, 2, 2, 2).half(), align_corners=False),
        "max_unpool2d": lambda: F.max_unpool2d(*F.max_pool2d(imgh, 2, return_indices=True), 2, output_size=(5, 5)),
        "reflect-pad1d": lambda: F.pad(imgh[0], (1, 1), mode="reflect"),
        "reflect-pad2d": lambda: F.pad(imgh, (1, 1, 2, 0), mode="reflect"),
        "replicate-pad3d": lambda: F.pad(imgh[None], (1, 1, 1, 1, 1, 0), mode="replicate"),
        "ReplicationPad2d": lambda: T.nn.ReplicationPad2d(1)(imgh),
        "reflect-pad3d (not listed)": lambda: F.pad(imgh[None], (1, 1, 1, 1, 0, 0), mode="reflect"),
        "circular-pad (not listed)": lambda: F.pad(imgh, (1, 1, 1, 1), mode="circular"),
        "qr": lambda: T.linalg.qr(xh)[1], "eigh": lambda: T.linalg.eigh((x @ x.T).half())[0],
        "svdvals": lambda: T.linalg.svdvals(xh), "matrix_rank": lambda: T.linalg.matrix_rank(xh).float(),
        "lstsq": lambda: T.linalg.lstsq((x @ x.T + T.eye(4)).half(), yh).solution,
        "cond": lambda: T.linalg.cond((x @ x.T + T.eye(4)).half()),
        "householder_product": lambda: T.linalg.householder_product(xh, xh[0, :2]),
        "adaptive_max_pool3d": lambda: F.adaptive_max_pool3d(imgh, 1),
        "fractional_max_pool2d": lambda: F.fractional_max_pool2d(imgh, 2, output_size=2,
                                                                 _random_samples=T.full((1, 2, 2), 0.5).half()),
    }


_OPS = list(_op_cases(torch))


@pytest.mark.parametrize("name", _OPS)
def test_ops_cast_as_pytorch_cpu_autocast(name):
    got, want = [], []
    for lib, out in ((gradc, got), (torch, want)):
        case = _op_cases(lib)[name]
        with lib.autocast("cpu", dtype=lib.float16):
            r = case()
        out.append((str(r.dtype), r.detach().double().numpy()))
    assert got[0][0] == want[0][0]
    scale = max(1.0, float(np.abs(want[0][1]).max()))
    np.testing.assert_allclose(got[0][1], want[0][1], rtol=0, atol=2e-3 * scale)


_RECURRENT = {"RNN": lambda nn: nn.RNN(4, 5, num_layers=2), "RNN-relu": lambda nn: nn.RNN(4, 5, nonlinearity="relu"),
              "GRU": lambda nn: nn.GRU(4, 5), "LSTM-proj": lambda nn: nn.LSTM(4, 5, proj_size=3),
              "RNNCell": lambda nn: nn.RNNCell(4, 5), "LSTMCell": lambda nn: nn.LSTMCell(4, 5),
              "GRUCell": lambda nn: nn.GRUCell(4, 5)}


@pytest.mark.parametrize("name", list(_RECURRENT))
def test_recurrent_layers_cast_as_pytorchs_linear_cells(name):
    """PyTorch's cells project with linear (cast), then mix with the float32 state where they have one
    (GRU, LSTMCell: float32 results; RNN: float16)."""
    runs = []
    for lib in (torch, gradc):
        lib.manual_seed(0)
        module = _RECURRENT[name](lib.nn)
        x = lib.randn(2, 4) if name.endswith("Cell") else lib.randn(3, 2, 4)
        x.requires_grad_()
        with lib.autocast("cpu", dtype=lib.float16):
            out = module(x)
        out = out[0] if isinstance(out, tuple) else out
        out.float().sum().backward()
        runs.append((str(out.dtype), out.detach().double().numpy(), x.grad.numpy()))
    assert runs[0][0] == runs[1][0]
    np.testing.assert_allclose(runs[1][1], runs[0][1], rtol=0, atol=2e-3)
    np.testing.assert_allclose(runs[1][2], runs[0][2], rtol=0, atol=2e-3)


def test_gradients_reach_float32_parameters_in_float32():
    grads = {}
    for lib in (torch, gradc):
        lib.manual_seed(0)
        net = lib.nn.Sequential(lib.nn.Conv2d(2, 3, 3), lib.nn.ReLU(), lib.nn.Flatten(), lib.nn.Linear(27, 4))
        x = lib.randn(2, 2, 5, 5, requires_grad=True)
        with lib.autocast("cpu", dtype=lib.float16):
            out = net(x)
            loss = lib.nn.functional.cross_entropy(out, lib.tensor([1, 3]))
        loss.backward()
        names = (out.grad_fn.name(), [n.name() for n, _ in out.grad_fn.next_functions if n is not None])
        grads[lib.__name__] = (str(out.dtype), str(loss.dtype), names, loss.item(),
                               [(str(p.grad.dtype), p.grad.numpy().copy()) for p in [x, *net.parameters()]])
    g, t = grads["gradc"], grads["torch"]
    assert g[:3] == t[:3] == ("torch.float16", "torch.float32", g[2])
    assert g[2] == (t[2][0], t[2][1])
    assert abs(g[3] - t[3]) < 2e-3
    for (gd, ga), (td, ta) in zip(g[4], t[4]):
        assert gd == td == "torch.float32"
        np.testing.assert_allclose(ga, ta, rtol=0, atol=5e-3 * max(1.0, np.abs(ta).max()))


def test_backward_inside_the_region_runs_in_the_forward_dtypes():
    """The VJP rules are gradc ops: under autocast they cast nothing (an mv's float32 backward stays
    float32), so backward inside the region gives the gradients backward outside it gives."""
    grads = []
    for inside in (False, True):
        a = gradc.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
        v = gradc.tensor([0.1, 0.2], requires_grad=True)
        with gradc.autocast("cpu", dtype=gradc.float16):
            loss = gradc.mv(a, v).sum() + (a @ a).float().sum()
            if inside:
                loss.backward()
        if not inside:
            loss.backward()
        grads.append((a.grad.dtype, a.grad.tolist(), v.grad.dtype, v.grad.tolist()))
    assert grads[0] == grads[1] and grads[0][0] is grads[0][2] is gradc.float32
    t_a = torch.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    t_v = torch.tensor([0.1, 0.2], requires_grad=True)
    with torch.autocast("cpu", dtype=torch.float16):
        (torch.mv(t_a, t_v).sum() + (t_a @ t_a).float().sum()).backward()
    np.testing.assert_allclose(grads[0][1], t_a.grad.numpy(), rtol=1e-3)
    np.testing.assert_allclose(grads[0][3], t_v.grad.numpy(), rtol=1e-3)


@pytest.mark.parametrize("cache", [True, False])
def test_the_weight_cache_casts_a_parameter_once_per_region(cache):
    shared = []
    for lib in (torch, gradc):
        lin, x = lib.nn.Linear(3, 3), lib.ones(2, 3)
        with lib.autocast("cpu", dtype=lib.float16, cache_enabled=cache):
            a, b = lin(x), lin(x)
        edges = [dict((n.name(), n) for n, _ in o.grad_fn.next_functions if n is not None) for o in (a, b)]
        shared.append(edges[0]["ToCopyBackward0"] is edges[1]["ToCopyBackward0"])
    assert shared == [cache, cache]


def test_the_weight_cache_skips_no_grad_casts_and_keeps_entries_for_the_region():
    seen = []
    for lib in (torch, gradc):
        lin, x = lib.nn.Linear(3, 3), lib.ones(2, 3)
        with lib.autocast("cpu", dtype=lib.float16):
            with lib.no_grad():
                lin(x)                       # (not cached: the casts after it still record the graph)
            before = lin(x)
            with lib.no_grad():
                lin.weight.add_(1.0)
            after = lin(x)                   # PyTorch's cache still holds the weight cast before the change
        seen.append((before.requires_grad, after.requires_grad, (after - before).abs().max().item()))
        with lib.autocast("cpu", dtype=lib.float16):     # a new region casts afresh
            seen.append((lin(x) - before).abs().max().item() > 0)
    assert seen[:2] == seen[2:] and seen[0] == (True, True, 0.0) and seen[1] is True


def test_autocast_decorates_functions_and_modules_forward():
    class Net(gradc.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = gradc.nn.Linear(3, 2)

        @gradc.autocast("cpu", dtype=gradc.float16)
        def forward(self, x):
            return self.fc(x)
    assert Net()(gradc.ones(1, 3)).dtype is gradc.float16
    assert gradc.is_autocast_enabled("cpu") is False


@pytest.mark.parametrize("cast_inputs", [None, "float32"])
def test_custom_fwd_and_bwd_as_pytorch(cast_inputs):
    seen = {}
    for lib in (torch, gradc):
        class MyMM(lib.autograd.Function):
            @staticmethod
            @lib.amp.custom_fwd(device_type="cpu", cast_inputs=cast_inputs and getattr(lib, cast_inputs))
            def forward(ctx, a, b):
                ctx.save_for_backward(a, b)
                return a.mm(b)

            @staticmethod
            @lib.amp.custom_bwd(device_type="cpu")
            def backward(ctx, grad):
                a, b = ctx.saved_tensors
                seen.setdefault(lib.__name__, []).append((lib.is_autocast_enabled("cpu"), str(grad.dtype)))
                return grad.mm(b.t()), a.t().mm(grad)
        a = lib.ones(2, 2, requires_grad=True)
        with lib.autocast("cpu", dtype=lib.float16):
            out = MyMM.apply(a, lib.ones(2, 2))
        seen.setdefault(lib.__name__, []).append(str(out.dtype))
        out.float().sum().backward()
        seen[lib.__name__].append(str(a.grad.dtype))
    assert seen["gradc"] == seen["torch"]


# ---- @gradc.compile ---------------------------------------------------------------------------------------
def test_compiled_functions_are_guarded_on_the_autocast_state():
    """Compiled code traced without autocast is not run under it (it would miss the casts): the state is
    part of the guard key, and a call under autocast traces the casts."""
    x, w = gradc.randn(4, 4), gradc.randn(4, 4, requires_grad=True)

    def f(a, b):
        return (a @ b).tanh().sum()
    compiled = gradc.compile(f)
    assert compiled(x, w).dtype is gradc.float32
    with gradc.autocast("cpu", dtype=gradc.float16):
        eager, out = f(x, w), compiled(x, w)
    assert out.dtype is eager.dtype is gradc.float16 and out.item() == eager.item()
    assert "autocast changed from off to" in compiled.explain()
    assert compiled(x, w).dtype is gradc.float32            # off again: the first specialisation

    gradc.set_autocast_enabled("cuda", True)             # (another device's autocast: no CPU casts)
    try:
        assert compiled(x, w).dtype is gradc.float32
    finally:
        gradc.set_autocast_enabled("cuda", False)

    @gradc.compile
    def g(a, b):
        with gradc.autocast("cpu", enabled=False):   # a region turned off inside
            return (a @ b).sum()
    with gradc.autocast("cpu", dtype=gradc.float16):
        assert g(x, w).dtype is gradc.float32


def _autocast_step(net, compiled):
    def step(x, t):
        with gradc.autocast("cpu", dtype=gradc.float16):
            out = net(x)
            return out, gradc.nn.functional.cross_entropy(out, t), (out.relu() * 2).sum()
    return gradc.compile(step) if compiled else step


def test_compiled_autocast_regions_equal_eager_ones():
    """The IR has no float16: under @gradc.compile the casts round float32 values to float16 after each op
    (``round_half``) and the function returns float16 tensors where eager code does, with eager's values;
    the gradients are computed in float32 between the casts (eager's are rounded at every float16 op)."""
    x, t = gradc.randn(2, 2, 5, 5), gradc.tensor([1, 3])
    runs = []
    for compiled in (False, True):
        gradc.manual_seed(0)
        net = gradc.nn.Sequential(gradc.nn.Conv2d(2, 3, 3), gradc.nn.ReLU(), gradc.nn.Flatten(),
                                  gradc.nn.Linear(27, 8), gradc.nn.Tanh(), gradc.nn.Linear(8, 4))
        out, loss, total = _autocast_step(net, compiled)(x, t)
        (loss + total.float()).backward()
        runs.append(([str(v.dtype) for v in (out, loss, total)], out.detach().numpy(), loss.item(), total.item(),
                     [p.grad.numpy().copy() for p in net.parameters()]))
    (dt_e, out_e, loss_e, total_e, grads_e), (dt_c, out_c, loss_c, total_c, grads_c) = runs
    assert dt_e == dt_c == ["torch.float16", "torch.float32", "torch.float16"]
    assert (out_e == out_c).all() and loss_e == loss_c and total_e == total_c
    for a, b in zip(grads_e, grads_c):
        np.testing.assert_allclose(b, a, rtol=0, atol=2e-3 * max(1.0, np.abs(a).max()))


def test_compiled_autocast_of_tensors_the_function_makes_and_explicit_half_stays_refused():
    def f(x):
        m = gradc.ones(4, 4) * 0.3          # made in the function: a constant of the trace, cast there
        with gradc.autocast("cpu", dtype=gradc.float16):
            return (x @ m).sum() * 0.1, m @ m
    x = gradc.randn(4, 4)
    eager, compiled = f(x), gradc.compile(f)(x)
    assert [t.dtype for t in compiled] == [t.dtype for t in eager] == [gradc.float16, gradc.float16]
    assert compiled[0].item() == eager[0].item() and compiled[1].tolist() == eager[1].tolist()
    with pytest.raises(TypeError, match="not torch.float16"):    # only autocast's casts are emulated
        gradc.compile(lambda a: a.half() * 2)(x)


def test_a_compiled_amp_training_step_gives_eagers_losses():
    losses = []
    for compiled in (False, True):
        gradc.manual_seed(0)
        model = gradc.nn.Sequential(gradc.nn.Linear(6, 16), gradc.nn.ReLU(), gradc.nn.Linear(16, 3))
        opt = gradc.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
        scaler = gradc.amp.GradScaler("cpu", init_scale=2.0 ** 17, growth_interval=3)
        x, target = gradc.randn(32, 6), gradc.randint(0, 3, (32,))

        def loss_fn(inp, tgt):
            with gradc.autocast("cpu", dtype=gradc.float16):
                return gradc.nn.functional.cross_entropy(model(inp), tgt)
        loss_fn = gradc.compile(loss_fn) if compiled else loss_fn
        run = []
        for _ in range(8):
            opt.zero_grad()
            loss = loss_fn(x, target)
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
            run.append((loss.item(), scaler.get_scale()))
        losses.append(run)
    assert [s for _, s in losses[0]] == [s for _, s in losses[1]]
    np.testing.assert_allclose([v for v, _ in losses[1]], [v for v, _ in losses[0]], rtol=1e-3)


# ---- GradScaler -------------------------------------------------------------------------------------------
def test_a_disabled_scaler_passes_through():
    for lib in (torch, gradc):
        scaler = lib.amp.GradScaler("cpu", enabled=False)
        p = lib.nn.Parameter(lib.ones(2))
        opt = lib.optim.SGD([p], lr=0.5)
        loss = (p * 3).sum()
        assert scaler.scale(loss) is loss
        loss.backward()
        scaler.unscale_(opt)
        assert scaler.step(opt) is None
        scaler.update()
        assert p.tolist() == [-0.5, -0.5]
        assert (scaler.get_scale(), scaler.state_dict(), scaler.is_enabled()) == (1.0, {}, False)
        scaler.load_state_dict({})


def _scaler_run(lib, steps, **kwargs):
    """Per step: (scale before, loss, skipped?, scale after, growth tracker, weight): a linear model whose
    gradient is inf at the steps in ``steps``."""
    lib.manual_seed(0)
    model = lib.nn.Linear(3, 1)
    opt = lib.optim.SGD(model.parameters(), lr=0.1)
    scaler = lib.amp.GradScaler("cpu", **kwargs)
    x = lib.tensor([[1.0, 2.0, 3.0], [0.5, -1.0, 2.0]])
    record = []
    for i in range(len(steps)):
        opt.zero_grad()
        loss = model(x).pow(2).mean()
        before = scaler.get_scale()
        scaler.scale(loss).backward()
        if steps[i]:
            model.weight.grad[0, 1] = float(steps[i])
        w = model.weight.detach().clone()
        scaler.step(opt)
        scaler.update()
        skipped = bool((model.weight == w).all())
        record.append((before, loss.item(), skipped, scaler.get_scale(), scaler._get_growth_tracker(),
                       model.weight.detach().numpy().copy()))
    return record, scaler.state_dict()


@pytest.mark.parametrize("kwargs", [dict(init_scale=8.0, growth_interval=2),
                                    dict(init_scale=2.0 ** 16, growth_factor=4.0, backoff_factor=0.25,
                                         growth_interval=3)])
def test_scaler_skips_backs_off_and_grows_as_pytorch(kwargs):
    steps = [0, "inf", 0, 0, "nan", 0, 0, 0, "-inf", 0]
    (got, got_state), (want, want_state) = _scaler_run(gradc, steps, **kwargs), _scaler_run(torch, steps, **kwargs)
    assert [(r[0], r[2], r[3], r[4]) for r in got] == [(r[0], r[2], r[3], r[4]) for r in want]
    assert [r[2] for r in got] == [bool(s) for s in steps]
    assert got_state == want_state
    np.testing.assert_allclose([r[1] for r in got], [r[1] for r in want], rtol=1e-5)
    np.testing.assert_allclose([r[5] for r in got], [r[5] for r in want], rtol=1e-5, atol=1e-6)


def test_scaler_unscale_then_clip_and_its_misuse_errors():
    for lib in (gradc, torch):
        p = lib.nn.Parameter(lib.tensor([3.0, 4.0]))
        opt = lib.optim.SGD([p], lr=1.0)
        scaler = lib.amp.GradScaler("cpu", init_scale=4.0)
        with pytest.raises(AssertionError, match="Attempted step but _scale is None"):
            scaler.step(opt)
        scaler.scale(p.pow(2).sum() / 2).backward()
        assert p.grad.tolist() == [12.0, 16.0]
        scaler.unscale_(opt)
        assert p.grad.tolist() == [3.0, 4.0]
        with pytest.raises(RuntimeError, match="unscale_\\(\\) has already been called on this optimizer"):
            scaler.unscale_(opt)
        lib.nn.utils.clip_grad_norm_([p], 1.0)
        scaler.step(opt)
        with pytest.raises(RuntimeError, match="step\\(\\) has already been called since the last update"):
            scaler.step(opt)
        with pytest.raises(RuntimeError, match="unscale_\\(\\) is being called after step"):
            scaler.unscale_(opt)
        with pytest.raises(RuntimeError, match="Closure use is not currently supported"):
            scaler.step(opt, closure=lambda: None)
        scaler.update(2.0)
        assert scaler.get_scale() == 2.0 and p.tolist() == pytest.approx([2.4, 3.2])
        with pytest.raises(AssertionError, match="new_scale should be a float"):
            scaler.update(lib.ones(2))
        scaler.update(lib.tensor(16.0))
        assert scaler.get_scale() == 16.0
        with pytest.raises(AssertionError, match="The backoff factor must be < 1.0"):
            lib.amp.GradScaler("cpu", backoff_factor=1.0)


def test_scaler_state_dict_round_trip_and_pickling():
    states = []
    for lib in (gradc, torch):
        a = lib.amp.GradScaler("cpu", init_scale=32.0, growth_interval=5)
        p = lib.nn.Parameter(lib.ones(1))
        opt = lib.optim.SGD([p], lr=0.1)
        for _ in range(3):
            a.scale(p.sum()).backward()
            a.step(opt)
            a.update()
        b = lib.amp.GradScaler("cpu")
        b.load_state_dict(a.state_dict())
        c = pickle.loads(pickle.dumps(a))
        states.append((a.state_dict(), b.state_dict(), c.state_dict(), b.get_scale()))
        with pytest.raises(RuntimeError, match="The source state dict is empty"):
            b.load_state_dict({})
    assert states[0] == states[1]
    assert states[0][0] == {"scale": 32.0, "growth_factor": 2.0, "backoff_factor": 0.5, "growth_interval": 5,
                            "_growth_tracker": 3}


def test_a_scaler_around_a_compiled_loss_steps_as_around_the_eager_one():
    runs = []
    for compiled in (False, True):
        gradc.manual_seed(0)
        model = gradc.nn.Linear(4, 2)
        opt = gradc.optim.SGD(model.parameters(), lr=0.1)
        scaler = gradc.amp.GradScaler("cpu", init_scale=2.0 ** 10, growth_interval=2)
        x, y = gradc.randn(8, 4), gradc.randn(8, 2)

        def loss_fn(inp, target):
            return gradc.nn.functional.mse_loss(model(inp), target)
        loss_fn = gradc.compile(loss_fn) if compiled else loss_fn
        record = []
        for step in range(5):
            opt.zero_grad()
            scaler.scale(loss_fn(x, y)).backward()
            if step == 2:
                model.bias.grad[0] = float("inf")
            scaler.step(opt)
            scaler.update()
            record.append((scaler.get_scale(), model.weight.detach().numpy().copy()))
        runs.append(record)
    assert [r[0] for r in runs[0]] == [r[0] for r in runs[1]] == [1024.0, 2048.0, 1024.0, 1024.0, 2048.0]
    for (_, a), (_, b) in zip(*runs):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_fp16_gradients_are_refused_by_unscale():
    for lib in (gradc, torch):
        p = lib.nn.Parameter(lib.ones(2).half())
        opt = lib.optim.SGD([p], lr=0.1)
        scaler = lib.amp.GradScaler("cpu")
        scaler.scale(p.float().sum()).backward()
        with pytest.raises(ValueError, match="Attempting to unscale FP16 gradients."):
            scaler.step(opt)


def _amp_training(lib, steps=12):
    lib.manual_seed(0)
    model = lib.nn.Sequential(lib.nn.Linear(6, 16), lib.nn.ReLU(), lib.nn.Linear(16, 3))
    opt = lib.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    scaler = lib.amp.GradScaler("cpu", init_scale=2.0 ** 17, growth_interval=3)
    x, target = lib.randn(32, 6), lib.randint(0, 3, (32,))
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        with lib.autocast(device_type="cpu", dtype=lib.float16):
            out = model(x)
            loss = lib.nn.functional.cross_entropy(out, target)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        losses.append((str(out.dtype), str(loss.dtype), loss.item(), scaler.get_scale()))
    return losses


def test_a_pytorch_style_amp_training_loop_gives_pytorchs_losses():
    got, want = _amp_training(gradc), _amp_training(torch)
    assert [g[:2] for g in got] == [w[:2] for w in want] == [("torch.float16", "torch.float32")] * len(want)
    assert [g[3] for g in got] == [w[3] for w in want]        # the same steps skipped, the same growth
    np.testing.assert_allclose([g[2] for g in got], [w[2] for w in want], rtol=2e-3)
    assert want[-1][2] < want[0][2]
