"""CUDA tensors and @gradc.compile on CUDA inputs.

Without a GPU these run through the CUDA simulator driver (GRADC_CUDA_SIMULATOR=1: the kernels'
GPU lowering executed by CPU threads), with gradc on the CPU (itself checked against PyTorch)
as the oracle. With PyCUDA and a GPU, ``GRADC_TEST_REAL_GPU=1`` runs them on the device.
"""

import numpy as np
import pytest

import gradc
from gradc.codegen import cuda_driver


def test_without_a_gpu_asking_for_cuda_says_what_to_install(monkeypatch):
    monkeypatch.delenv("GRADC_CUDA_SIMULATOR", raising=False)
    monkeypatch.setattr(cuda_driver, "_driver", None)
    try:
        cuda_driver.PyCudaDriver()
        pytest.skip("a real GPU is present")
    except cuda_driver.CudaUnavailable:
        pass
    assert gradc.cuda.is_available() is False and gradc.cuda.device_count() == 0
    with pytest.raises(RuntimeError, match=r"pip install 'gradc\[cuda\]'"):
        gradc.ones(2, device="cuda")
    with pytest.raises(RuntimeError, match="gradc cannot use device 'cuda'"):
        gradc.ones(2).cuda()
    monkeypatch.setattr(cuda_driver, "_driver", None)


def test_printing_and_conversions(cuda):
    x = gradc.tensor([0.4011, -0.9069], device=cuda, requires_grad=True)
    assert repr(x) == "tensor([ 0.4011, -0.9069], device='cuda:0', requires_grad=True)"
    assert x.is_cuda and x.device == gradc.device("cuda", 0) and repr(x.device) == "device(type='cuda', index=0)"
    assert x.tolist() == pytest.approx([0.4011, -0.9069])
    assert repr(gradc.tensor(2.5, device="cuda:0")) == "tensor(2.5000, device='cuda:0')"
    assert gradc.tensor([3], device=cuda).item() == 3
    y = (x * 2).sum()
    assert repr(y) == "tensor(-1.0116, device='cuda:0', grad_fn=<SumBackward0>)"
    with pytest.raises(TypeError, match=r"can't convert cuda:0 device type tensor to numpy. Use Tensor.cpu\(\)"):
        x.detach().numpy()
    c = x.detach().cpu()
    assert c.device.type == "cpu" and repr(c) == "tensor([ 0.4011, -0.9069])"
    assert x.detach().cuda() is not None and gradc.ones(2).to("cuda").device.type == "cuda"
    with pytest.raises(RuntimeError, match="invalid device ordinal"):
        gradc.ones(2, device="cuda:1")


def test_ops_between_devices_raise_pytorchs_error(cuda):
    a = gradc.ones(2, device=cuda)
    with pytest.raises(RuntimeError, match=r"Expected all tensors to be on the same device, but found at least two "
                                           r"devices, cuda:0 and cpu!"):
        a + gradc.ones(2)


def _pair(shape, seed, requires_grad=True, positive=False):
    rng = np.random.default_rng(seed)
    v = rng.standard_normal(shape)
    v = (np.abs(v) + 0.5 if positive else v).astype(np.float32)
    return (gradc.tensor(v, requires_grad=requires_grad),
            gradc.tensor(v, device="cuda", requires_grad=requires_grad))


EAGER_CASES = {
    "elementwise": lambda a, b: ((a * b + 1).exp() - a.tanh() * b.sigmoid()).sum(),
    "broadcast": lambda a, b: (a * b[0] - b.mean(0, keepdim=True)).pow(2).mean(),
    "reductions": lambda a, b: a.sum(1).max() + b.amax(0).sum() + (a - b).abs().mean(),
    "matmul": lambda a, b: (a @ b.T).relu().sum(),
    "softmax": lambda a, b: (a.softmax(-1) * b).sum() + a.log_softmax(0)[1, 2],
    "views": lambda a, b: (a.T.reshape(-1)[2:7] * b.flatten()[:5]).sum() + a[:, 1].sum(),
}


@pytest.mark.parametrize("name", sorted(EAGER_CASES))
def test_eager_values_and_gradients_match_the_cpu(cuda, name):
    fn = EAGER_CASES[name]
    a_cpu, a_gpu = _pair((3, 4), 0)
    b_cpu, b_gpu = _pair((3, 4), 1)
    want = fn(a_cpu, b_cpu)
    got = fn(a_gpu, b_gpu)
    assert got.device.type == "cuda"
    np.testing.assert_allclose(got.item(), want.item(), rtol=1e-5, atol=1e-6)
    want.backward()
    got.backward()
    for t_cpu, t_gpu in ((a_cpu, a_gpu), (b_cpu, b_gpu)):
        assert t_gpu.grad.device.type == "cuda"
        np.testing.assert_allclose(t_gpu.grad.cpu().numpy(), t_cpu.grad.numpy(), rtol=1e-5, atol=1e-6)


def test_accumulation_retain_graph_and_the_second_backward_error(cuda):
    _, x = _pair((5,), 2)
    y = (x * x).sum()
    y.backward(retain_graph=True)
    y.backward()
    np.testing.assert_allclose(x.grad.cpu().numpy(), 4 * x.detach().cpu().numpy(), rtol=1e-6)
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        y.backward()


def test_gradient_flows_back_across_a_device_copy(cuda):
    w = gradc.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = (w.cuda() * 3).sum()
    assert y.grad_fn.next_functions[0][0].name() == "MulBackward0"
    y.backward()
    assert w.grad.device.type == "cpu"
    np.testing.assert_allclose(w.grad.numpy(), [3.0, 3.0, 3.0])
    z = w.to("cuda")
    assert type(z.grad_fn).__name__ == "ToCopyBackward0" and not z.is_leaf


def test_in_place_ops_and_version_counter(cuda):
    _, x = _pair((4,), 3)
    h = x * 1
    h.add_(2)
    h.mul_(x)
    h.sum().backward()
    xc = x.detach().cpu().numpy()
    np.testing.assert_allclose(x.grad.cpu().numpy(), 2 * xc + 2, rtol=1e-6)
    h = x * 1
    h.mul_(h)       # saved as other too, then written: PyTorch's version error
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        h.sum().backward()
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        x.add_(1)
    a = gradc.ones(3, device=cuda, requires_grad=True)
    b = a.exp()
    b.mul_(2)       # exp saved its output: modified in place
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        b.sum().backward()


def _loss(x, w, b):
    return ((x @ w + b).tanh() ** 2).mean()


@pytest.mark.parametrize("backward", ["auto", "separate"])
def test_compiled_forward_and_backward_on_cuda_match_the_cpu(cuda, backward):
    rng = np.random.default_rng(4)
    arrays = [rng.standard_normal(s).astype(np.float32) for s in ((6, 5), (5, 3), (3,))]
    cpu = [gradc.tensor(a, requires_grad=i > 0) for i, a in enumerate(arrays)]
    gpu = [gradc.tensor(a, device=cuda, requires_grad=i > 0) for i, a in enumerate(arrays)]
    f = gradc.compile(_loss, backward=backward)
    want = f(*cpu)
    got = f(*gpu)
    assert got.device.type == "cuda" and type(got.grad_fn).__name__ == "CompiledFunctionBackward"
    assert "device changed from cpu to cuda:0" in f.explain()
    np.testing.assert_allclose(got.item(), want.item(), rtol=1e-5)
    (want * 3).backward()
    (got * 3).backward()
    for c, g in zip(cpu[1:], gpu[1:]):
        np.testing.assert_allclose(g.grad.cpu().numpy(), c.grad.numpy(), rtol=1e-4, atol=1e-6)
    with gradc.no_grad():
        out = f(*gpu)
    assert out.grad_fn is None and out.device.type == "cuda"
    with pytest.raises(RuntimeError, match="all tensor arguments must be on one device"):
        f(cpu[0], *gpu[1:])


def _layernorm_loss(x, gamma, beta):
    mu = x.mean(-1, keepdim=True)
    y = (x - mu) / (((x - mu) ** 2).mean(-1, keepdim=True) + 1e-5).sqrt() * gamma + beta
    return (y * y).sum()


@pytest.mark.parametrize("backward", ["auto", "separate"])
def test_compiled_layernorm_with_column_sums_on_cuda_matches_the_cpu(cuda, backward):
    """gamma's and beta's gradients are column sums accumulated (atomically on the GPU) in the
    kernel that computes x's gradient from the row statistics."""
    rng = np.random.default_rng(5)
    arrays = [rng.standard_normal(s).astype(np.float32) for s in ((9, 40), (40,), (40,))]
    cpu = [gradc.tensor(a, requires_grad=True) for a in arrays]
    gpu = [gradc.tensor(a, device=cuda, requires_grad=True) for a in arrays]
    f = gradc.compile(_layernorm_loss, backward=backward)
    f(*gpu)
    backend = next(iter(f._cache.values())).backend
    assert any(k.accumulations for k in backend.kernels)
    for _ in range(2):     # a second call reuses the kernels: the column sums start again from 0
        for t in cpu + gpu:
            t.grad = None
        want, got = f(*cpu), f(*gpu)
        np.testing.assert_allclose(got.item(), want.item(), rtol=1e-5)
        want.backward()
        got.backward()
        for c, g in zip(cpu, gpu):
            np.testing.assert_allclose(g.grad.cpu().numpy(), c.grad.numpy(), rtol=1e-4, atol=1e-5)


def test_compile_target_cuda_refuses_cpu_tensors(cuda):
    f = gradc.compile(lambda x: x.exp().sum(), target="cuda")
    with pytest.raises(RuntimeError, match="target cuda got a tensor on cpu"):
        f(gradc.ones(3))
    np.testing.assert_allclose(f(gradc.ones(3, device=cuda)).item(), 3 * np.e, rtol=1e-6)


def test_modules_and_optimizers_train_on_cuda(cuda):
    gradc.manual_seed(0)
    model = gradc.nn.Sequential(gradc.nn.Linear(3, 4), gradc.nn.Tanh(), gradc.nn.Linear(4, 1))
    ref = gradc.nn.Sequential(gradc.nn.Linear(3, 4), gradc.nn.Tanh(), gradc.nn.Linear(4, 1))
    for p, q in zip(ref.parameters(), model.parameters()):
        p.data = q.detach().clone()
    params = list(model.parameters())
    assert model.cuda() is model and list(model.parameters()) == params
    assert all(p.device.type == "cuda" and p.is_leaf and p.requires_grad for p in params)
    x = np.random.default_rng(5).standard_normal((8, 3)).astype(np.float32)
    opts = [gradc.optim.Adam(m.parameters(), lr=0.05) for m in (model, ref)]
    for _ in range(3):
        for m, opt, dev in ((model, opts[0], cuda), (ref, opts[1], "cpu")):
            opt.zero_grad()
            loss = (m(gradc.tensor(x, device=dev)) ** 2).mean()
            loss.backward()
            opt.step()
    for p, q in zip(model.parameters(), ref.parameters()):
        np.testing.assert_allclose(p.detach().cpu().numpy(), q.detach().numpy(), rtol=1e-4, atol=1e-6)
    model.cpu()
    assert all(p.device.type == "cpu" for p in model.parameters())


def test_compiled_double_backward_and_retain_graph_on_cuda(cuda):
    f = gradc.compile(lambda x: (x.tanh() ** 3).sum())
    x = gradc.tensor([0.3, -0.7, 1.1], device=cuda, requires_grad=True)
    g, = gradc.autograd.grad(f(x), x, create_graph=True)
    gg, = gradc.autograd.grad(g.sum(), x)
    xc = x.detach().cpu().requires_grad_()
    gc, = gradc.autograd.grad((xc.tanh() ** 3).sum(), xc, create_graph=True)
    ggc, = gradc.autograd.grad(gc.sum(), xc)
    assert g.device.type == "cuda" and gg.device.type == "cuda"
    np.testing.assert_allclose(g.detach().cpu().numpy(), gc.detach().numpy(), rtol=1e-5)
    np.testing.assert_allclose(gg.cpu().numpy(), ggc.numpy(), rtol=1e-4)
    y = f(x)
    y.backward(retain_graph=True)
    y.backward()
    np.testing.assert_allclose(x.grad.cpu().numpy(), 2 * gc.detach().numpy(), rtol=1e-5)


def test_contiguous_views_share_the_device_buffer(cuda):
    """x[i], x[a:b] and reshape of a CUDA tensor alias it as on the CPU: writes through either
    are seen by the other, and they share one version counter."""
    base = np.arange(12, dtype=np.float32).reshape(3, 4)
    for dev in ("cpu", cuda):
        x = gradc.tensor(base, device=dev)
        row, rows, flat = x[1], x[1:3], x.reshape(12)
        if dev != "cpu":                   # one device allocation, at byte offsets
            assert row._data.buffer is x._data.buffer is rows._data.buffer is flat._data.buffer
            assert (row._data.offset, rows._data.offset, flat._data.offset) == (16, 16, 0)
        row.add_(100)                      # through a view into the base
        x[0, 0] = -1.0                     # into the base, seen by the views
        flat[11] = 50.0
        got = [t.cpu().numpy().copy() for t in (x, row, rows, flat)]
        assert x._version == row._version == rows._version == flat._version == 3
        if dev == "cpu":
            want = got
        else:
            for g, w in zip(got, want):
                np.testing.assert_array_equal(g, w)
    np.testing.assert_array_equal(want[0][1], base[1] + 100)
    assert want[0][0, 0] == -1.0 and want[0][2, 3] == 50.0


def test_in_place_through_a_cuda_view_keeps_its_history(cuda):
    """An in-place op on a contiguous view of a non-leaf rebases the base's history
    (CopySlices), and the gradients are the CPU's."""
    grads = []
    for dev in ("cpu", cuda):
        w = gradc.tensor([[1.0, 2.0], [3.0, 4.0]], device=dev, requires_grad=True)
        y = w * 2
        y[0].mul_(w[1])
        assert type(y.grad_fn).__name__ == "CopySlices"
        y.sum().backward()
        grads.append(w.grad.cpu().numpy())
    np.testing.assert_allclose(grads[1], grads[0])


def test_writes_to_copied_cuda_views_raise(cuda):
    """Views gradc keeps as copies on the GPU (non-contiguous ones) refuse in-place writes
    rather than leave the base unchanged; reading them is fine."""
    x = gradc.ones(3, 4, device=cuda)
    col, t = x[:, 1], x.t()
    np.testing.assert_array_equal(col.cpu().numpy(), np.ones(3, np.float32))
    for v in (col, t):
        with pytest.raises(RuntimeError, match="non-contiguous view of a CUDA tensor"):
            v.add_(1)
    np.testing.assert_array_equal(x.cpu().numpy(), np.ones((3, 4), np.float32))
    c = col.clone()
    c.add_(1)                                  # a clone is independent: writes are fine
    np.testing.assert_array_equal(c.cpu().numpy(), np.full(3, 2.0, np.float32))


def test_copied_cuda_views_follow_their_base(cuda):
    """A non-contiguous CUDA view is a copy, but it shares the base's version counter: after an
    in-place change of the base it reads the base's current values, and a backward that saved
    it raises PyTorch's version error, as on the CPU."""
    x = gradc.zeros(3, 4, device=cuda)
    col, t = x[:, 1], x.t()
    x.add_(2)
    x[0, 1] = 7.0
    np.testing.assert_array_equal(col.cpu().numpy(), [7.0, 2.0, 2.0])
    np.testing.assert_array_equal(t.cpu().numpy(), x.cpu().numpy().T)
    assert col._version == x._version == 2
    np.testing.assert_array_equal((col * 1).cpu().numpy(), [7.0, 2.0, 2.0])   # ops read it too
    for dev in ("cpu", cuda):
        w = gradc.ones(2, 3, device=dev, requires_grad=True)
        y = w * 1
        v = y.t()
        z = (v * v).sum()                # saves v
        y.add_(1)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            z.backward()
