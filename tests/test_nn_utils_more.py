"""nn.utils against PyTorch: spectral norms (hook and parametrization), fusion with batch norm,
skip_init, the clip_grad helpers, stateless.functional_call and the module aliases."""
import warnings

import numpy as np
import pytest

import gradc

LAYERS = {"linear": lambda m: m.nn.Linear(4, 5, dtype=m.float64),
          "conv": lambda m: m.nn.Conv2d(3, 4, 3, dtype=m.float64),
          "conv_transpose": lambda m: m.nn.ConvTranspose2d(3, 4, 3, dtype=m.float64)}


def _spectral_run(m, api, layer):
    """Three training forwards and backwards, then one in eval, through a spectral-normed layer:
    outputs, gradients and the state_dict."""
    m.manual_seed(0)
    mod = LAYERS[layer](m)
    if api == "hook":
        m.nn.utils.spectral_norm(mod)
    else:
        m.nn.utils.parametrizations.spectral_norm(mod)
    x = m.ones(2, 4, dtype=m.float64) if layer == "linear" else m.ones(2, 3, 6, 6, dtype=m.float64)
    outs = []
    for _ in range(3):
        y = mod(x * m.arange(1, x.shape[-1] + 1, dtype=m.float64))
        (y * y).sum().backward()
        outs.append(y.detach().numpy())
    mod.eval()
    outs.append(mod(x).detach().numpy())
    grads = {n: p.grad.numpy() for n, p in mod.named_parameters()}
    return outs, grads, {k: v.numpy() for k, v in mod.state_dict().items()}, mod


@pytest.mark.parametrize("layer", list(LAYERS))
@pytest.mark.parametrize("api", ["hook", "parametrization"])
def test_spectral_norm_matches_pytorch(api, layer):
    torch = pytest.importorskip("torch")
    (o_t, g_t, s_t, _), (o_g, g_g, s_g, mod) = (_spectral_run(m, api, layer) for m in (torch, gradc))
    for want, have in zip(o_t, o_g):
        np.testing.assert_allclose(have, want, rtol=1e-9, atol=1e-12)
    assert list(g_g) == list(g_t) and list(s_g) == list(s_t)
    for k in g_t:
        np.testing.assert_allclose(g_g[k], g_t[k], rtol=1e-9, atol=1e-12)
    for k in s_t:
        np.testing.assert_allclose(s_g[k], s_t[k], rtol=1e-9, atol=1e-12)
    if api == "hook":
        weight = mod.weight.detach().numpy()
        gradc.nn.utils.remove_spectral_norm(mod)
        assert sorted(n for n, _ in mod.named_parameters()) == ["bias", "weight"]
        assert [n for n, _ in mod.named_buffers()] == []
        np.testing.assert_allclose(mod.weight.detach().numpy(), weight, rtol=1e-12)
        assert mod._forward_pre_hooks == {} or not list(mod._forward_pre_hooks)


def test_spectral_norm_errors_are_pytorchs():
    torch = pytest.importorskip("torch")
    for m in (torch, gradc):
        lin = m.nn.utils.spectral_norm(m.nn.Linear(2, 3))
        with pytest.raises(RuntimeError, match="^Cannot register two spectral_norm hooks on the same parameter weight$"):
            m.nn.utils.spectral_norm(lin)
        with pytest.raises(ValueError, match="^Expected n_power_iterations to be positive, but got "
                                             "n_power_iterations=0$"):
            m.nn.utils.spectral_norm(m.nn.Linear(2, 3), n_power_iterations=0)
        with pytest.raises(ValueError, match="^spectral_norm of 'bias' not found in Linear"):
            m.nn.utils.remove_spectral_norm(lin, "bias")
        with pytest.raises(ValueError, match="^Module 'Linear.*' has no parameter or buffer with name 'w'$"):
            m.nn.utils.parametrizations.spectral_norm(m.nn.Linear(2, 3), "w")
        with pytest.raises(IndexError, match=r"^Dimension out of range \(expected to be in range of \[-2, 1\] but "
                                             r"got 2\)$"):
            m.nn.utils.parametrizations.spectral_norm(m.nn.Linear(2, 3), dim=2)
        vec = m.nn.utils.parametrizations.spectral_norm(m.nn.Linear(2, 3), "bias")     # a vector: just normalised
        assert abs(vec.bias.detach().norm().item() - 1.0) < 1e-6


def test_parametrization_changing_the_shape_is_refused_as_pytorch():
    torch = pytest.importorskip("torch")
    messages = []
    for m in (torch, gradc):
        class Flatten(m.nn.Module):
            def forward(self, x):
                return x.reshape(-1)
        with pytest.raises(ValueError) as info:
            m.nn.utils.parametrize.register_parametrization(m.nn.Linear(2, 3), "weight", Flatten())
        lin = m.nn.Linear(2, 3)
        m.nn.utils.parametrize.register_parametrization(lin, "weight", m.nn.Identity())
        with pytest.raises(ValueError) as info2:
            m.nn.utils.parametrize.register_parametrization(lin, "weight", Flatten())
        messages.append((str(info.value), str(info2.value)))
    assert messages[1] == messages[0]


def _fusion_case(m, kind):
    m.manual_seed(1)
    if kind == "linear":
        layer, bn, x = m.nn.Linear(4, 3, dtype=m.float64), m.nn.BatchNorm1d(3, dtype=m.float64), m.randn(5, 4)
    elif kind == "conv":
        layer, bn, x = m.nn.Conv2d(2, 3, 3, dtype=m.float64), m.nn.BatchNorm2d(3, dtype=m.float64), m.randn(2, 2, 5, 5)
    else:
        layer = m.nn.ConvTranspose2d(2, 3, 3, bias=False, dtype=m.float64)
        bn, x = m.nn.BatchNorm2d(3, dtype=m.float64), m.randn(2, 2, 4, 4)
    with m.no_grad():
        bn.running_mean.copy_(m.tensor([0.1, -0.2, 0.3]))
        bn.running_var.copy_(m.tensor([1.5, 0.5, 2.0]))
        bn.weight.copy_(m.tensor([0.7, 1.3, -0.4]))
        bn.bias.copy_(m.tensor([0.05, -0.1, 0.2]))
    layer.eval(), bn.eval()
    return layer, bn, x.double()


@pytest.mark.parametrize("kind", ["linear", "conv", "conv_transpose"])
def test_fusion_matches_pytorch(kind):
    torch = pytest.importorskip("torch")
    got = []
    for m in (torch, gradc):
        layer, bn, x = _fusion_case(m, kind)
        if kind == "linear":
            fused = m.nn.utils.fuse_linear_bn_eval(layer, bn)
        else:
            fused = m.nn.utils.fuse_conv_bn_eval(layer, bn, transpose=kind == "conv_transpose")
        assert type(fused) is type(layer) and fused is not layer
        assert isinstance(fused.weight, m.nn.Parameter) and fused.weight.requires_grad
        assert fused.bias.requires_grad == (kind != "conv_transpose")      # (made from zeros without a bias)
        np.testing.assert_allclose(fused(x).detach().numpy(), bn(layer(x)).detach().numpy(), rtol=1e-10, atol=1e-12)
        got.append([fused.weight.detach().numpy(), fused.bias.detach().numpy()])
    for want, have in zip(*got):
        np.testing.assert_allclose(have, want, rtol=1e-13, atol=1e-15)


def test_fusion_weights_and_errors_are_pytorchs():
    torch = pytest.importorskip("torch")
    got = []
    for m in (torch, gradc):
        w, rm, rv = m.ones(3, 2, dtype=m.float64) * 2, m.zeros(3, dtype=m.float64) + 0.5, m.ones(3, dtype=m.float64)
        fw, fb = m.nn.utils.fuse_conv_bn_weights(w.reshape(3, 2, 1, 1), None, rm, rv, 1e-5, None, None)
        lw, lb = m.nn.utils.fuse_linear_bn_weights(w, None, rm, rv, 1e-5, m.ones(3, dtype=m.float64),
                                                   m.zeros(3, dtype=m.float64))
        got.append([t.detach().numpy() for t in (fw, fb, lw, lb)])
        assert not fw.requires_grad and type(fb).__name__ == "Parameter"
        with pytest.raises(AssertionError, match="^Fusion only for eval!$"):
            m.nn.utils.fuse_linear_bn_eval(m.nn.Linear(2, 3), m.nn.BatchNorm1d(3))
        with pytest.raises(AssertionError, match=r"^To fuse, linear.out_features == bn.num_features or "
                                                 r"bn.num_features == 1, got linear.out_features=3 and "
                                                 r"bn.num_features=4$"):
            m.nn.utils.fuse_linear_bn_eval(m.nn.Linear(2, 3).eval(), m.nn.BatchNorm1d(4).eval())
    for want, have in zip(*got):
        np.testing.assert_allclose(have, want, rtol=1e-15)


def test_skip_init_leaves_the_random_stream_as_pytorch():
    torch = pytest.importorskip("torch")
    draws = []
    for m in (torch, gradc):
        m.manual_seed(3)
        lin = m.nn.utils.skip_init(m.nn.Linear, 4, 2, bias=False, dtype=m.float64)
        assert type(lin) is m.nn.Linear and lin.weight.shape == (2, 4) and lin.weight.dtype == m.float64
        assert lin.bias is None and lin.weight.requires_grad
        draws.append(m.rand(3).numpy())
        with pytest.raises(RuntimeError, match="^Expected a Module; got <class 'int'>$"):
            m.nn.utils.skip_init(int)
        with pytest.raises(RuntimeError, match="^Module must support a 'device' arg to skip initialization$"):
            m.nn.utils.skip_init(m.nn.ReLU)
    np.testing.assert_array_equal(draws[1], draws[0])


def _grads_case(m):
    ps = [m.nn.Parameter(m.ones(3)), m.nn.Parameter(m.ones(2, 2)), m.nn.Parameter(m.ones(1))]
    ps[0].grad, ps[1].grad = m.tensor([3.0, -4.0, 1.0]), m.tensor([[0.5, 2.0], [-1.0, 0.0]])
    return ps


@pytest.mark.parametrize("norm_type", [2.0, 1, "inf", 3.5])
def test_get_total_norm_and_clip_grads_with_norm_match_pytorch(norm_type):
    torch = pytest.importorskip("torch")
    got = []
    for m in (torch, gradc):
        ps = _grads_case(m)
        total = m.nn.utils.get_total_norm([p.grad for p in ps if p.grad is not None], norm_type)
        assert m.nn.utils.clip_grads_with_norm_(ps, 1.5, total) is None
        got.append([total.numpy()] + [p.grad.numpy() for p in ps[:2]] + [ps[2].grad is None])
        assert m.nn.utils.get_total_norm([]).item() == 0.0
        assert m.nn.utils.get_total_norm(m.tensor([3.0, 4.0])).item() == pytest.approx(5.0)
    for want, have in zip(*got):
        np.testing.assert_allclose(have, want, rtol=1e-6)


def test_clip_grad_warnings_and_module_aliases():
    torch = pytest.importorskip("torch")
    for m in (torch, gradc):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            m.nn.utils.clip_grad_norm_((p for p in []), 1.0)
            total = m.nn.utils.clip_grad_norm(_grads_case(m), 1.0)
        assert [(w.category, str(w.message)) for w in caught] == [
            (UserWarning, "`parameters` is an empty generator, no gradient clipping will occur."),
            (FutureWarning, "`torch.nn.utils.clip_grad_norm` is now deprecated in favor of "
                            "`torch.nn.utils.clip_grad_norm_`.")]
        assert total.item() == pytest.approx(np.sqrt(26 + 5.25))
        assert m.nn.utils.clip_grad.clip_grad_norm_ is m.nn.utils.clip_grad_norm_
        assert m.nn.utils.clip_grad.clip_grad_value_ is m.nn.utils.clip_grad_value_
        assert m.nn.utils.convert_parameters.parameters_to_vector is m.nn.utils.parameters_to_vector
        assert m.nn.utils.convert_parameters.vector_to_parameters is m.nn.utils.vector_to_parameters


def test_stateless_functional_call_warns_and_calls():
    torch = pytest.importorskip("torch")
    got = []
    for m in (torch, gradc):
        lin = m.nn.Linear(2, 1)
        with pytest.warns(FutureWarning, match="^`torch.nn.utils.stateless.functional_call` is deprecated as of "
                                               "PyTorch 2.0"):
            y = m.nn.utils.stateless.functional_call(lin, {"weight": m.tensor([[1.0, 2.0]]), "bias": m.tensor([0.5])},
                                                     (m.tensor([[3.0, 4.0]]),))
        got.append(y.item())
        with pytest.raises(RuntimeError, match="Unexpected key"):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                m.nn.utils.stateless.functional_call(lin, {"w": m.ones(1)}, (m.ones(1, 2),), strict=True)
    assert got == [11.5, 11.5]


@pytest.mark.skipif(gradc.cuda.is_available(), reason="PyTorch's CPU-only behaviour (device_ids == [])")
def test_data_parallel_without_cuda_calls_the_module_as_pytorch():
    torch = pytest.importorskip("torch")
    got = []
    for m in (torch, gradc):
        m.manual_seed(0)
        lin = m.nn.Linear(2, 3)
        dp = m.nn.DataParallel(lin)
        assert dp.module is lin and dp.device_ids == [] and not hasattr(dp, "output_device")
        assert [n for n, _ in dp.named_parameters()] == ["module.weight", "module.bias"]
        assert list(dp.state_dict()) == ["module.weight", "module.bias"]
        y = dp(m.ones(4, 2))
        y.sum().backward()
        assert type(y.grad_fn).__name__ == "AddmmBackward0"
        got.append((repr(dp), y.detach().numpy(), lin.weight.grad.numpy()))
        with pytest.raises(RuntimeError, match="^device type could not be determined$"):
            m.nn.parallel.data_parallel(lin, m.ones(1, 2))
    assert got[0][0] == got[1][0]
    np.testing.assert_array_equal(got[1][1], got[0][1])
    np.testing.assert_array_equal(got[1][2], got[0][2])
    dp, x = gradc.nn.DataParallel(gradc.nn.Linear(2, 1)), gradc.ones(1, 2)
    with gradc.autograd.profiler.profile() as prof:
        dp(x)
    assert prof.function_events[0].name == "DataParallel.forward"


def _ctc_case(seed=0, T=12, N=4, C=5, S=4):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((T, N, C))
    targets = rng.integers(1, C, (N, S))
    targets[1, 1] = targets[1, 2]                       # a repeated label needs a blank between
    return x, targets, [T, T - 2, 7, 3], [S, 3, 0, 2]   # (sample 2 has an empty target)


CTC_VARIANTS = {
    "padded": lambda m, t, il, tl: (m.tensor(t), m.tensor(il), m.tensor(tl)),
    "concatenated": lambda m, t, il, tl: (m.tensor(np.concatenate([r[:n] for r, n in zip(t, tl)])), tuple(il),
                                          tuple(tl)),
}


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("variant", list(CTC_VARIANTS))
@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("blank,zero_infinity", [(0, False), (0, True), (4, True)])
def test_ctc_loss_matches_pytorch(reduction, variant, blank, zero_infinity, dtype):
    torch = pytest.importorskip("torch")
    x, targets, il, tl = _ctc_case()
    if blank == 4:
        targets = targets - 1                           # labels 0..3, blank last
    il[3], tl[3], targets[3, :3] = 2, 3, [1, 1, 2]      # impossible in 2 steps: an infinite loss
    got = []
    for m in (torch, gradc):
        a = m.tensor(x, dtype=getattr(m, dtype), requires_grad=True)
        loss = m.nn.functional.ctc_loss(a.log_softmax(2), *CTC_VARIANTS[variant](m, targets, il, tl), blank=blank,
                                        reduction=reduction, zero_infinity=zero_infinity)
        if zero_infinity:
            (loss * m.arange(1, loss.numel() + 1, dtype=loss.dtype).reshape(loss.shape)).sum().backward()
            grad = a.grad.numpy()
        else:
            grad = None                                 # (PyTorch's is NaN for the infinite sample)
        got.append((loss.detach().numpy(), grad, type(loss.grad_fn).__name__, loss.dtype))
    (v_t, g_t, n_t, d_t), (v_g, g_g, n_g, d_g) = got
    assert n_g == n_t and str(d_g) == str(d_t)
    tol = dict(rtol=1e-12, atol=1e-12) if dtype == "float64" else dict(rtol=2e-6, atol=2e-5)
    np.testing.assert_allclose(v_g, v_t, **tol)
    if zero_infinity:
        np.testing.assert_allclose(g_g, g_t, **tol)


def test_ctc_loss_gradient_of_finite_losses_and_unbatched_input():
    torch = pytest.importorskip("torch")
    x, targets, il, tl = _ctc_case(seed=3)
    got = []
    for m in (torch, gradc):
        a = m.tensor(x, requires_grad=True)
        lp = a.log_softmax(2)
        loss = m.nn.CTCLoss()(lp, m.tensor(targets), m.tensor(il), m.tensor(tl))
        single = m.nn.functional.ctc_loss(lp[:, 1], m.tensor(targets[1, :tl[1]]), m.tensor(il[1]), m.tensor(tl[1]),
                                          reduction="none")
        (loss + 0.5 * single).backward()
        got.append((loss.item(), single.detach().numpy(), single.shape, a.grad.numpy()))
    (l_t, s_t, sh_t, g_t), (l_g, s_g, sh_g, g_g) = got
    assert sh_g == sh_t == ()
    assert l_g == pytest.approx(l_t, rel=1e-12)
    np.testing.assert_allclose(s_g, s_t, rtol=1e-12)
    np.testing.assert_allclose(g_g, g_t, rtol=1e-10, atol=1e-13)


def test_ctc_loss_module_and_errors_are_pytorchs():
    torch = pytest.importorskip("torch")
    for m in (torch, gradc):
        assert repr(m.nn.CTCLoss(blank=2, zero_infinity=True)) == "CTCLoss()"
        lp = m.randn(6, 2, 4).log_softmax(2)
        t = m.tensor([[1, 2], [3, 1]])
        with pytest.raises(RuntimeError, match="^blank must be in label range$"):
            m.nn.functional.ctc_loss(lp, t, [6, 6], [2, 2], blank=4)
        with pytest.raises(RuntimeError, match="^input_lengths must be of size batch_size$"):
            m.nn.functional.ctc_loss(lp, t, [6], [2, 2])
        with pytest.raises(RuntimeError, match="^target_lengths must be of size batch_size$"):
            m.nn.functional.ctc_loss(lp, t, [6, 6], [2])
        with pytest.raises(RuntimeError, match=r"^Expected tensor to have size at least 3 at dimension 1, but got "
                                               r"size 2 for argument #2 'targets' \(while checking arguments for "
                                               r"ctc_loss_allocate_outputs\)$"):
            m.nn.functional.ctc_loss(lp, t, [6, 6], [3, 2])
        with pytest.raises(RuntimeError, match=r"^Expected target_lengths to have value at least 0, but got value -1"):
            m.nn.functional.ctc_loss(lp, t, [6, 6], [-1, 2])
        with pytest.raises(RuntimeError, match=r"^Expected tensor to have size 5 at dimension 0, but got size 4"):
            m.nn.functional.ctc_loss(lp, t.flatten(), [6, 6], [2, 3])
        with pytest.raises(RuntimeError, match=r"^Expected tensor to have size 1 at dimension 0, but got size 2"):
            m.nn.functional.ctc_loss(lp[:, 0], t[0], m.tensor(6), m.tensor(1))
        with pytest.raises(RuntimeError, match=r"^Expected input_lengths to have value at most 6, but got value 7"):
            m.nn.functional.ctc_loss(lp, t, [7, 6], [2, 2])
