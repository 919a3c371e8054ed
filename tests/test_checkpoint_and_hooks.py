"""torch.utils.checkpoint (both variants), autograd.graph saved-tensor hooks, autograd.forward_ad,
register_hook inside a checkpoint and autograd.grad(is_grads_batched=True): values, gradients,
errors and warnings against PyTorch 2.13 where it is installed."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import gradc

X = np.linspace(-2, 3, 15).reshape(5, 3)


def _close(a, b, atol=1e-5):
    return np.allclose(np.asarray(a), np.asarray(b), atol=atol, rtol=1e-5)


def _errors(fn):
    try:
        fn()
    except Exception as e:          # noqa: BLE001
        return type(e).__name__, str(e)
    return None


# ---- saved tensor hooks ------------------------------------------------------------------------
def _hooks_case(m):
    out = {}
    H = m.autograd.graph.saved_tensors_hooks
    x = m.tensor([0.5, -1.0, 2.0], requires_grad=True)
    calls = []

    def pack(t):
        calls.append((tuple(t.shape), t.requires_grad, m.is_grad_enabled()))
        return t
    with H(pack, lambda p: p):
        y = (x * x).exp().sin().sum()
    y.backward()
    out["calls"], out["grad"] = calls, x.grad.tolist()
    storage = []                       # PyTorch's documentation example: pack to an index

    def pack_index(t):
        storage.append(t)
        return len(storage) - 1
    x.grad = None
    with H(pack_index, lambda i: storage[i]):
        y = (x.tanh() * x).sum()
    y.backward()
    out["index"] = x.grad.tolist()
    with H(lambda t: t.detach().clone(), lambda p: p):     # double backward through unpacked copies
        y = (x * x * x).sum()
    g, = m.autograd.grad(y, x, create_graph=True)
    out["double"] = m.autograd.grad(g.sum(), x)[0].tolist()
    unpacks = [0]

    def count(p):
        unpacks[0] += 1
        return p
    with H(lambda t: t, count):
        y = x.exp()
    y.sum().backward(retain_graph=True)
    y.sum().backward()
    out["unpacks"] = unpacks[0]
    x.grad = None
    with m.autograd.graph.save_on_cpu():
        y = m.nn.functional.softmax(x * 2, 0).log().sum() + x.norm()
    y.backward()
    out["cpu"] = x.grad.tolist()

    class F(m.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            ctx.save_for_backward(a)
            return a * 3

        @staticmethod
        def backward(ctx, g):
            (a,) = ctx.saved_tensors
            return g * a
    packed = []
    with H(lambda t: packed.append(1) or t.clone(), lambda p: p):
        y = F.apply(x)
    x.grad = None
    y.sum().backward()
    out["function"] = (len(packed), x.grad.tolist())

    def unpack_int():
        with H(lambda t: t, lambda p: 3):
            y = x.exp()
        y.sum().backward()
    out["unpack_int"] = _errors(unpack_int)
    h = x * 2

    def modify():
        with H(lambda t: t.mul_(2), lambda p: p):
            h.exp()
    out["modify"] = _errors(modify)

    def disabled():
        with m.autograd.graph.disable_saved_tensors_hooks("hooks are off"):
            with H(lambda t: t, lambda p: p):
                pass
    out["disabled"] = _errors(disabled)
    return out


@pytest.mark.parametrize("key", ["calls", "grad", "index", "double", "unpacks", "cpu", "function", "unpack_int",
                                 "modify", "disabled"])
def test_saved_tensors_hooks_against_torch(key):
    torch = pytest.importorskip("torch")
    a, b = _hooks_case(gradc)[key], _hooks_case(torch)[key]
    if key in ("grad", "index", "double", "cpu"):
        assert _close(a, b)
    elif key == "function":
        assert a[0] == b[0] and _close(a[1], b[1])
    else:
        assert a == b


def test_pack_called_once_per_saved_tensor():
    x = gradc.randn(4, requires_grad=True)
    calls = []
    with gradc.autograd.graph.saved_tensors_hooks(lambda t: calls.append(t) or t, lambda p: p):
        y = x.exp()                  # saves its output
        z = y.sin()                  # saves its input
    assert len(calls) == 2 and calls[0] is y and calls[1] is y
    assert len(y.grad_fn._saved) == 1 and len(z.grad_fn._saved) == 1
    z.sum().backward()
    assert _close(x.grad.numpy(), (x.exp().cos() * x.exp()).detach().numpy())


def test_hooks_are_popped_and_nest():
    from gradc.autograd.node import _DEFAULT_HOOKS
    outer, inner = [], []
    H = gradc.autograd.graph.saved_tensors_hooks
    x = gradc.randn(3, requires_grad=True)
    with H(lambda t: outer.append(1) or t, lambda p: p):
        with H(lambda t: inner.append(1) or t, lambda p: p):
            x.exp()
        x.sin()
    assert (len(outer), len(inner)) == (1, 1) and _DEFAULT_HOOKS == []


# ---- checkpoint --------------------------------------------------------------------------------
def _checkpoint_case(m, reentrant):
    out = {}
    cp = m.utils.checkpoint.checkpoint
    W1 = m.tensor(np.linspace(-1, 1, 12).reshape(4, 3), dtype=m.float32, requires_grad=True)
    W2 = m.tensor(np.linspace(-0.5, 1, 8).reshape(2, 4), dtype=m.float32, requires_grad=True)
    x = m.tensor(X, dtype=m.float32, requires_grad=True)

    def f(x, scale=1.0):
        return m.sigmoid(m.tanh(x @ W1.t()) * scale @ W2.t()), 7

    def g(x):
        return f(x)[0]
    g(x).sum().backward()
    ref = [t.grad.clone() for t in (x, W1, W2)]
    x.grad = W1.grad = W2.grad = None
    y = cp(g, x, use_reentrant=reentrant)
    y.sum().backward()
    out["grads"] = [(a.numpy(), t.grad.numpy()) for a, t in zip(ref, (x, W1, W2))]
    out["grad_fn"] = type(y.grad_fn).__name__
    x.grad = W1.grad = W2.grad = None
    if reentrant:
        out["kwargs"] = _errors(lambda: cp(f, x, use_reentrant=True, scale=2.0))
        y = cp(g, x, use_reentrant=True)
        out["autograd.grad"] = _errors(lambda: m.autograd.grad(y.sum(), [x]))
    else:
        y, n = cp(f, x, use_reentrant=False, scale=2.0)
        y.sum().backward()
        out["kwargs"] = (n, round(x.grad.sum().item(), 4))
        y = cp(g, x, use_reentrant=False)
        out["autograd.grad"] = round(m.autograd.grad(y.sum(), [x, W1])[1].sum().item(), 4)
    drop, lin = m.nn.Dropout(0.5), m.nn.Linear(3, 3)
    with m.no_grad():
        lin.weight.copy_(m.tensor(np.linspace(-1, 1, 9).reshape(3, 3), dtype=m.float32))
        lin.bias.zero_()

    def dropped(t):
        return drop(lin(t)).exp()
    m.manual_seed(3)
    xx = x.detach().clone().requires_grad_()
    y = cp(dropped, xx, use_reentrant=reentrant)
    state = m.get_rng_state()
    y.sum().backward()
    out["rng_restored"] = bool((m.get_rng_state() == state).all())
    g1 = xx.grad.clone()
    xx.grad = None
    m.manual_seed(3)
    y2 = dropped(xx)
    y2.sum().backward()
    out["dropout_same_mask"] = (_close(y.detach().numpy(), y2.detach().numpy()), _close(g1.numpy(), xx.grad.numpy()))
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        y = cp(g, x.detach(), use_reentrant=reentrant)
    out["no_input_requires_grad"] = (y.requires_grad, [str(i.message) for i in w])
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        cp(g, x)
    out["use_reentrant_warning"] = [(i.category.__name__, str(i.message)) for i in w]
    seq = m.nn.Sequential(m.nn.Linear(3, 4), m.nn.ReLU(), m.nn.Linear(4, 4), m.nn.Tanh(), m.nn.Linear(4, 2))
    with m.no_grad():
        for i, p in enumerate(seq.parameters()):
            p.copy_(m.tensor(np.sin(np.arange(p.numel()) + i).reshape(tuple(p.shape)), dtype=m.float32))
    xs = x.detach().clone().requires_grad_()
    ys = m.utils.checkpoint.checkpoint_sequential(seq, 2, xs, use_reentrant=reentrant)
    ys.pow(2).sum().backward()
    out["sequential"] = (ys.detach().numpy(), xs.grad.numpy(), seq[0].weight.grad.numpy())
    seen = []

    def hooked(t):
        h = t * 3
        if h.requires_grad:
            h.register_hook(lambda grad: seen.append(grad.sum().item()))
        return (h * h).sum()
    xs.grad = None
    cp(hooked, xs, use_reentrant=reentrant).backward()
    out["hook"] = (len(seen), round(seen[0], 3), round(xs.grad.sum().item(), 3))
    b = x * 1
    y = cp(g, b, use_reentrant=reentrant)
    with m.no_grad():
        b.add_(1)
    out["modified_input"] = _errors(lambda: y.sum().backward())
    y = cp(lambda t: (t.exp(), "tag", None), x, use_reentrant=reentrant)
    out["non_tensor_outputs"] = (y[1], y[2], y[0].requires_grad)
    return out


@pytest.mark.parametrize("reentrant", [True, False])
def test_checkpoint_against_torch(reentrant):
    torch = pytest.importorskip("torch")
    a, b = _checkpoint_case(gradc, reentrant), _checkpoint_case(torch, reentrant)
    assert a.keys() == b.keys()
    for k in a:
        if k in ("grads", "sequential"):
            pieces_a = [p for pair in a[k] for p in (pair if isinstance(pair, tuple) else (pair,))]
            pieces_b = [p for pair in b[k] for p in (pair if isinstance(pair, tuple) else (pair,))]
            assert all(_close(p, q) for p, q in zip(pieces_a, pieces_b)), k
        elif k in ("kwargs", "autograd.grad") and not reentrant:
            assert _close(np.asarray(a[k], float), np.asarray(b[k], float), atol=1e-3), k
        else:
            assert a[k] == b[k], k
    if True:   # gradients equal the uncheckpointed ones
        for ref, got in a["grads"]:
            assert _close(ref, got)


def _checkpoint_extra(m):
    out = {}
    cp = m.utils.checkpoint.checkpoint
    x = m.tensor(np.linspace(-1, 2, 6).reshape(2, 3), dtype=m.float32, requires_grad=True)
    y = cp(lambda t: (t.exp() * t).sum(), x, use_reentrant=False)
    y.backward(retain_graph=True)
    y.backward()
    out["twice"] = x.grad.numpy()
    x.grad = None

    def inner(t):
        return t.tanh() * t

    def outer(t):
        return cp(inner, t * 2, use_reentrant=False).exp()
    cp(outer, x, use_reentrant=False).sum().backward()
    out["nested"] = x.grad.numpy()
    y = cp(lambda t: (t ** 3).sum(), x, use_reentrant=False)
    g, = m.autograd.grad(y, x, create_graph=True)
    out["double"] = m.autograd.grad(g.sum(), x)[0].numpy()
    calls = [0]

    def changes(t):
        calls[0] += 1
        return t.exp().sum() if calls[0] == 1 else t[:1].exp().sum()
    y = cp(changes, x, use_reentrant=False)
    err = _errors(y.backward)
    out["mismatch"] = (err[0], err[1].split("\n")[:4])
    with m.no_grad():
        out["no_grad"] = [cp(lambda t: t.exp(), x, use_reentrant=r).requires_grad for r in (True, False)]
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        m.utils.checkpoint.checkpoint_sequential([m.nn.Tanh(), m.nn.Tanh()], 2, x)
    out["sequential_warning"] = [str(i.message) for i in w]
    return out


def test_checkpoint_more_against_torch():
    torch = pytest.importorskip("torch")
    a, b = _checkpoint_extra(gradc), _checkpoint_extra(torch)
    for k in a:
        if isinstance(a[k], np.ndarray):
            assert _close(a[k], b[k]), k
        else:
            assert a[k] == b[k], k


def test_checkpoint_forward_saves_nothing_inside():
    """The checkpointed region keeps placeholders only: its nodes hold no tensor until backward."""
    x = gradc.randn(4, 3, requires_grad=True)
    y = gradc.utils.checkpoint.checkpoint(lambda t: t.exp().sin(), x, use_reentrant=False)
    saved = y.grad_fn._saved
    assert all(s.tensor is None and isinstance(s._packed, int) for s in saved.values())
    y.sum().backward()
    assert _close(x.grad.numpy(), (x.exp().cos() * x.exp()).detach().numpy())


# ---- forward AD --------------------------------------------------------------------------------
FWD = {
    "chain": lambda m, a, b: (a.sin() * a.exp() + a ** 2).tanh(),
    "matmul": lambda m, a, b: a @ b,
    "sum": lambda m, a, b: (a * a).sum(1),
    "mean_max": lambda m, a, b: a.mean(0) + a.amax(1).sum(),
    "softmax": lambda m, a, b: m.softmax(a, dim=1),
    "log_softmax": lambda m, a, b: m.nn.functional.log_softmax(a @ b, dim=0),
    "norm": lambda m, a, b: m.linalg.vector_norm(a, dim=1) + a.norm(),
    "layer_norm": lambda m, a, b: m.nn.functional.layer_norm(a, (3,)),
}


def _fwd(m, name):
    fw = m.autograd.forward_ad
    a = m.tensor(X[:4] / 2, dtype=m.float64)
    b = m.tensor(np.cos(np.arange(12.0)).reshape(3, 4), dtype=m.float64)
    ta = m.tensor(np.sin(np.arange(12.0)).reshape(4, 3), dtype=m.float64)
    tb = m.tensor(np.linspace(-1, 1, 12).reshape(3, 4), dtype=m.float64)
    with fw.dual_level():
        da, db = fw.make_dual(a, ta), fw.make_dual(b, tb)
        primal, tangent = fw.unpack_dual(FWD[name](m, da, db))
    return primal.numpy(), tangent.numpy(), primal.requires_grad


@pytest.mark.parametrize("name", sorted(FWD))
def test_forward_ad_against_torch(name):
    torch = pytest.importorskip("torch")
    pa, ta, ra = _fwd(gradc, name)
    pb, tb, rb = _fwd(torch, name)
    assert _close(pa, pb, 1e-10) and _close(ta, tb, 1e-10) and ra == rb


@pytest.mark.parametrize("name", ["chain", "softmax", "norm"])
def test_forward_ad_agrees_with_func_jvp(name):
    fw = gradc.autograd.forward_ad
    a = gradc.tensor(X[:4] / 2, dtype=gradc.float64)
    b = gradc.tensor(np.cos(np.arange(12.0)).reshape(3, 4), dtype=gradc.float64)
    ta = gradc.tensor(np.sin(np.arange(12.0)).reshape(4, 3), dtype=gradc.float64)
    with fw.dual_level():
        tangent = fw.unpack_dual(FWD[name](gradc, fw.make_dual(a, ta), b)).tangent
    _, expected = gradc.func.jvp(lambda t: FWD[name](gradc, t, b), (a,), (ta,))
    assert _close(tangent.numpy(), expected.numpy(), 1e-10)


def _fwd_behaviour(m):
    fw = m.autograd.forward_ad
    out = {}
    x = m.tensor([1.0, 2.0, 3.0])
    out["no_level"] = _errors(lambda: fw.make_dual(x, m.ones(3)))
    with fw.dual_level() as level:
        out["level"] = level
        out["size"] = _errors(lambda: fw.make_dual(x, m.ones(2)))
        out["int"] = _errors(lambda: fw.make_dual(m.arange(3), m.ones(3)))
        out["nested"] = _errors(lambda: fw.dual_level().__enter__())
        d = fw.make_dual(x, m.tensor([1.0, 0.0, -1.0]))
        out["own"] = fw.unpack_dual(d).tangent.tolist()
        plain = m.tensor([4.0, 5.0, 6.0])
        u = fw.unpack_dual(plain)
        out["plain"] = (u.primal is plain, u.tangent)
        out["fields"] = type(u).__name__, u._fields
        y = d * d + plain
        out["tangent"] = fw.unpack_dual(y).tangent.tolist()
        w = m.ones(3, requires_grad=True)
        z = fw.unpack_dual(fw.make_dual(w, m.ones(3)) * 2).primal
        out["keeps_graph"] = z.requires_grad
    out["after_exit"] = fw.unpack_dual(y).tangent
    out["exit_again"] = _errors(fw.exit_dual_level)
    return out


def test_forward_ad_behaviour_against_torch():
    torch = pytest.importorskip("torch")
    a, b = _fwd_behaviour(gradc), _fwd_behaviour(torch)
    assert a == b


def test_forward_ad_without_torch():
    fw = gradc.autograd.forward_ad
    x = gradc.tensor([0.5, 1.0])
    with fw.dual_level():
        y = fw.make_dual(x, gradc.tensor([1.0, 0.0])).exp().sum()
        p, t = fw.unpack_dual(y)
    assert _close(p.item(), np.exp([0.5, 1.0]).sum()) and _close(t.item(), np.exp(0.5))


# ---- is_grads_batched --------------------------------------------------------------------------
def _batched(m):
    x = m.tensor([0.5, -1.0, 2.0], requires_grad=True)
    w = m.tensor([1.0, 2.0], requires_grad=True)
    y = x.exp() * x
    out = {"jac": m.autograd.grad(y, x, m.eye(3), is_grads_batched=True, retain_graph=True)[0].numpy()}
    v = m.tensor(np.arange(6.0).reshape(2, 3), dtype=m.float32)
    out["two"] = m.autograd.grad(y, [x, w], v, is_grads_batched=True, allow_unused=True, retain_graph=True)[1]
    out["shape_error"] = _errors(lambda: m.autograd.grad(y, x, m.ones(3), is_grads_batched=True))
    return out


def test_is_grads_batched_against_torch():
    torch = pytest.importorskip("torch")
    a, b = _batched(gradc), _batched(torch)
    assert _close(a["jac"], b["jac"]) and a["two"] is None and b["two"] is None
    assert a["shape_error"] == b["shape_error"]


@pytest.mark.parametrize("reentrant", [True, False])
def test_checkpointed_module_with_inplace_relu_and_dropout_matches_uncheckpointed(reentrant):
    m = gradc
    net = m.nn.Sequential(m.nn.Linear(3, 4), m.nn.ReLU(inplace=True), m.nn.Linear(4, 2), m.nn.Dropout(0.3),
                          m.nn.GELU())
    inp = m.tensor(np.linspace(-1, 1, 12).reshape(4, 3), dtype=m.float32, requires_grad=True)
    results = []
    for checkpointed in (False, True):
        m.manual_seed(5)
        y = m.utils.checkpoint.checkpoint(net, inp, use_reentrant=reentrant) if checkpointed else net(inp)
        y.sum().backward()
        results.append((y.detach().numpy().copy(), inp.grad.numpy().copy(), net[0].weight.grad.numpy().copy()))
        inp.grad = None
        net.zero_grad()
    assert all(_close(a, b) for a, b in zip(*results))


def test_saved_tensor_hooks_with_inplace_ops_against_torch():
    torch = pytest.importorskip("torch")

    def run(m):
        x = m.tensor([0.5, -1.0, 2.0], requires_grad=True)
        b = m.tensor([1.5, 2.0, -0.5], requires_grad=True)
        with m.autograd.graph.saved_tensors_hooks(lambda t: t.detach().clone(), lambda p: p):
            y = x * 1
            y.exp_()
            z = x * 1
            z.mul_(b)
            w = x * 1
            w.sin_()
            w.mul_(2)
        (y.sum() + z.sum() + w.sum()).backward()
        return x.grad.numpy(), b.grad.numpy()
    for a, b in zip(run(gradc), run(torch)):
        assert _close(a, b)


# ---- hooks on grad_fn nodes: what they see and what they return -----------------------------------
def _node_hook_run(m, setup, hook, pre=False):
    """Build ``setup`` (defines ``out`` and the leaves), hook ``out.grad_fn``, run backward; the
    leaves' gradients, what the hook saw (shapes) and any error, as comparable values."""
    ns = {"m": m, "F": m.nn.functional}
    exec(setup, ns)
    seen = []

    def post(gi, go):
        seen.append(tuple(None if g is None else tuple(g.shape) for g in gi))
        return hook(m, gi)

    def prehook(go):
        seen.append(tuple(None if g is None else tuple(g.shape) for g in go))
        return hook(m, go)
    node = ns["out"].grad_fn
    (node.register_prehook(prehook) if pre else node.register_hook(post))
    err = _errors(lambda: ns["out"].sum().backward())
    grads = [None if ns[k].grad is None else ns[k].grad.numpy().tolist() for k in ("x", "y")]
    return grads, seen, err


NODE_HOOK_SETUPS = {
    "mul": "x = m.ones(2, requires_grad=True); y = m.full((2,), 2.0, requires_grad=True); out = x * y",
    "mul-one-edge": "x = m.ones(2, requires_grad=True); y = m.ones(2); out = x * y",
    "mse": "x = m.ones(2, 2, requires_grad=True); y = m.zeros(2, 2, requires_grad=True); out = F.mse_loss(x, y)",
    "addmm": ("x = m.ones(2, 2, requires_grad=True); y = m.ones(2, 2, requires_grad=True); "
              "out = m.addmm(m.ones(2), x, y)"),
    "layer_norm": ("x = m.tensor([[1., 2.], [3., 5.]], requires_grad=True); y = m.ones(2, requires_grad=True); "
                   "out = F.layer_norm(x, (2,), y)"),
}
NODE_HOOKS = {
    "none": lambda m, g: None,
    "scale-first": lambda m, g: (None if g[0] is None else g[0] * 10,) + tuple(g[1:]),
    "drop-first": lambda m, g: (None,) + tuple(g[1:]),
    "list": lambda m, g: list(g),
    "too-few": lambda m, g: tuple(g[:-1]),
    "int": lambda m, g: (5,) + tuple(g[1:]),
    "resized": lambda m, g: (m.ones(7),) + tuple(g[1:]),
    "double": lambda m, g: (g[0].double(),) + tuple(g[1:]),
    "fill-none": lambda m, g: tuple(m.ones(2) if v is None else v for v in g),
}


@pytest.mark.parametrize("pre", [False, True], ids=["post", "pre"])
@pytest.mark.parametrize("hook", sorted(NODE_HOOKS))
@pytest.mark.parametrize("setup", sorted(NODE_HOOK_SETUPS))
def test_grad_fn_hooks_see_and_replace_gradients_as_pytorch(setup, hook, pre):
    """A node's post-hook gets a gradient per edge (a composite node such as MseLossBackward0's
    too) and a pre-hook the incoming ones; what they return replaces them, checked with
    PyTorch's errors (not a tuple, wrong count, not a tensor, changed size or type, a value for
    a None gradient)."""
    torch = pytest.importorskip("torch")
    want = _node_hook_run(torch, NODE_HOOK_SETUPS[setup], NODE_HOOKS[hook], pre)
    got = _node_hook_run(gradc, NODE_HOOK_SETUPS[setup], NODE_HOOKS[hook], pre)
    assert got[1:] == want[1:]
    if want[2] is None:
        for g, w in zip(got[0], want[0]):
            assert (g is None) == (w is None) and (w is None or _close(g, w))


def test_hooked_composite_node_frees_its_graph_and_keeps_double_backward():
    """After a hook is registered on a composite node, a backward without retain_graph frees its
    graph (a second one raises PyTorch's error), and create_graph still differentiates through it."""
    F = gradc.nn.functional
    x, y = gradc.ones(2, 2, requires_grad=True), gradc.zeros(2, 2, requires_grad=True)
    loss = F.mse_loss(x, y)
    loss.grad_fn.register_hook(lambda gi, go: (gi[0] * 3, None))
    loss.backward(retain_graph=True)
    assert x.grad.tolist() == [[1.5, 1.5], [1.5, 1.5]] and y.grad is None
    loss.backward()
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        loss.backward()
    loss = F.mse_loss(x * 2, y)
    loss.grad_fn.register_hook(lambda gi, go: None)
    g, = gradc.autograd.grad(loss, x, create_graph=True)
    assert g.requires_grad and g.tolist() == [[2.0, 2.0], [2.0, 2.0]]
    x.grad = None
    g.sum().backward()
    assert x.grad.tolist() == [[2.0, 2.0], [2.0, 2.0]]
