"""NAdam, RAdam, Adamax, Adadelta, ASGD, Rprop, Adafactor and LBFGS against torch.optim
(foreach=False): 20-step trajectories, state_dict round trips and argument errors."""
import numpy as np
import pytest

import gradc

CASES = [
    ("NAdam", dict(lr=0.05, weight_decay=0.1)),
    ("NAdam", dict(lr=0.05, weight_decay=0.1, decoupled_weight_decay=True, momentum_decay=0.01, maximize=True)),
    ("RAdam", dict(lr=0.05, weight_decay=0.1)),
    ("RAdam", dict(lr=0.05, weight_decay=0.1, decoupled_weight_decay=True, maximize=True)),
    ("Adamax", dict(lr=0.05, weight_decay=0.1, betas=(0.8, 0.99))),
    ("Adadelta", dict(lr=0.5, weight_decay=0.1, rho=0.8)),
    ("ASGD", dict(lr=0.05, weight_decay=0.1, t0=5, lambd=1e-2)),
    ("Rprop", dict(lr=0.05)),
    ("Rprop", dict(lr=0.05, maximize=True, etas=(0.3, 1.5), step_sizes=(1e-3, 0.1))),
    ("Adafactor", dict(lr=0.05, weight_decay=0.1)),
    ("Adafactor", dict(lr=0.05, eps=(1e-3, 1e-3), d=1.5, beta2_decay=-0.5, maximize=True)),
    ("LBFGS", dict(lr=0.5, max_iter=5)),
    ("LBFGS", dict(lr=1, max_iter=5, line_search_fn="strong_wolfe", history_size=3)),
]
IDS = [f"{name}-{i}" for i, (name, _) in enumerate(CASES)]


def _setup(m, name, kw, dtype):
    """A Linear layer and a bias vector (two parameter groups, the second at half the learning
    rate, except for LBFGS which has one) and a closure computing a tanh regression loss."""
    m.manual_seed(0)
    rng = np.random.default_rng(0)
    dt = getattr(m, dtype)
    lin = m.nn.Linear(4, 3).to(dt)
    b = m.nn.Parameter(m.tensor(rng.standard_normal(3), dtype=dt))
    x = m.tensor(rng.standard_normal((6, 4)), dtype=dt)
    if name == "LBFGS":
        groups = list(lin.parameters()) + [b]
    else:
        groups = [{"params": lin.parameters()}, {"params": [b], "lr": kw["lr"] * 0.5}]
    params = list(lin.parameters()) + [b]

    def closure_for(opt):
        def closure():
            opt.zero_grad()
            loss = ((lin(x).tanh() + b) ** 2).sum()
            loss.backward()
            return loss
        return closure
    return params, groups, closure_for


def _trajectory(m, name, kw, dtype, steps=20, reload_at=None):
    """The parameters after ``steps`` closure steps; with ``reload_at``, the optimizer's
    state_dict is taken there and loaded into a fresh optimizer that takes the remaining steps."""
    params, groups, closure_for = _setup(m, name, kw, dtype)
    opt = getattr(m.optim, name)(groups, **kw)
    losses = []
    for k in range(steps):
        if k == reload_at:
            saved = opt.state_dict()
            opt = getattr(m.optim, name)(groups if name == "LBFGS" else
                                         [{"params": g["params"]} for g in opt.param_groups], **kw)
            opt.load_state_dict(saved)
        losses.append(opt.step(closure_for(opt)).item())
    return [p.detach().numpy() for p in params], losses


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name,kw", CASES, ids=IDS)
def test_trajectory_matches_pytorch(name, kw, dtype):
    torch = pytest.importorskip("torch")
    kw = dict(kw, **({} if name == "LBFGS" else {"foreach": False}))
    (want, want_losses), (have, have_losses) = (_trajectory(m, name, kw, dtype) for m in (torch, gradc))
    tol = dict(rtol=1e-9, atol=1e-11) if dtype == "float64" else dict(rtol=1e-4, atol=2e-5)
    for w, h in zip(want, have):
        assert h.dtype == w.dtype
        np.testing.assert_allclose(h, w, **tol)
    np.testing.assert_allclose(have_losses, want_losses, **tol)
    assert not np.allclose(want[0], _setup(torch, name, kw, dtype)[0][0].detach().numpy())   # it moved


@pytest.mark.parametrize("name,kw", CASES, ids=IDS)
def test_state_dict_round_trip_into_a_fresh_optimizer(name, kw):
    """Stopping after 10 steps and going on in a fresh optimizer loaded from the state_dict
    gives the uninterrupted trajectory; the groups' keys are PyTorch's."""
    torch = pytest.importorskip("torch")
    straight, _ = _trajectory(gradc, name, kw, "float64")
    resumed, _ = _trajectory(gradc, name, kw, "float64", reload_at=10)
    for s, r in zip(straight, resumed):
        np.testing.assert_array_equal(r, s)
    sds = []
    for m in (torch, gradc):
        params, groups, closure_for = _setup(m, name, kw, "float64")
        opt = getattr(m.optim, name)(groups, **kw)
        opt.step(closure_for(opt))
        sds.append(opt.state_dict())
    want, have = sds
    assert [sorted(g) for g in have["param_groups"]] == [sorted(g) for g in want["param_groups"]]
    assert [g["params"] for g in have["param_groups"]] == [g["params"] for g in want["param_groups"]]
    assert {k: sorted(v) for k, v in have["state"].items()} == {k: sorted(v) for k, v in want["state"].items()}


def test_step_without_closure_and_with_one():
    """``step()`` for the non-LBFGS optimizers needs no closure and returns None; with one it
    returns the closure's loss, computed with gradients enabled even under no_grad."""
    p = gradc.nn.Parameter(gradc.ones(3))
    opt = gradc.optim.NAdam([p])
    (p * 2).sum().backward()
    assert opt.step() is None

    def closure():
        opt.zero_grad()
        loss = (p ** 2).sum()
        assert loss.requires_grad
        loss.backward()
        return loss
    before = p.detach().clone()
    with gradc.no_grad():
        assert opt.step(closure).item() == (before ** 2).sum().item()
    assert not gradc.equal(p.detach(), before)
    assert gradc.optim.SGD([p], lr=0.1).step(closure) is not None


ERRORS = [
    ("NAdam", dict(lr=-1.0)), ("NAdam", dict(eps=-1.0)), ("NAdam", dict(betas=(1.0, 0.9))),
    ("NAdam", dict(betas=(0.9, -0.1))), ("NAdam", dict(weight_decay=-1.0)), ("NAdam", dict(momentum_decay=-1.0)),
    ("RAdam", dict(lr=-1.0)), ("RAdam", dict(betas=(0.9, 1.0))), ("RAdam", dict(weight_decay=-0.5)),
    ("Adamax", dict(lr=-1.0)), ("Adamax", dict(eps=-1.0)), ("Adamax", dict(betas=(-0.1, 0.9))),
    ("Adadelta", dict(lr=-1.0)), ("Adadelta", dict(rho=1.5)), ("Adadelta", dict(eps=-1.0)),
    ("Adadelta", dict(weight_decay=-1.0)), ("ASGD", dict(lr=-1.0)), ("ASGD", dict(weight_decay=-1.0)),
    ("Rprop", dict(lr=-1.0)), ("Rprop", dict(etas=(1.5, 2.0))), ("Rprop", dict(etas=(0.5, 0.9))),
    ("Adafactor", dict(lr=-1.0)), ("Adafactor", dict(beta2_decay=0.5)), ("Adafactor", dict(eps=(-1.0, 1e-3))),
    ("Adafactor", dict(eps=(None, -1.0))), ("Adafactor", dict(d=0.5)), ("Adafactor", dict(weight_decay=-1.0)),
    ("LBFGS", dict(lr=-1.0)),
]


@pytest.mark.parametrize("name,kw", ERRORS, ids=[f"{n}-{i}" for i, (n, _) in enumerate(ERRORS)])
def test_argument_errors_are_pytorchs(name, kw):
    torch = pytest.importorskip("torch")
    with pytest.raises(ValueError) as want:
        getattr(torch.optim, name)([torch.nn.Parameter(torch.ones(2))], **kw)
    with pytest.raises(ValueError) as have:
        getattr(gradc.optim, name)([gradc.nn.Parameter(gradc.ones(2))], **kw)
    assert str(have.value) == str(want.value)


def test_lbfgs_errors_are_pytorchs():
    torch = pytest.importorskip("torch")
    for m in (torch, gradc):
        a, b = m.nn.Parameter(m.ones(2)), m.nn.Parameter(m.ones(2))
        with pytest.raises(ValueError, match=r"^LBFGS doesn't support per-parameter options \(parameter groups\)$"):
            m.optim.LBFGS([{"params": [a]}, {"params": [b]}])
        opt = m.optim.LBFGS([a], line_search_fn="backtracking")

        def closure():
            opt.zero_grad()
            loss = (a ** 2).sum()
            loss.backward()
            return loss
        with pytest.raises(RuntimeError, match="^only 'strong_wolfe' is supported$"):
            opt.step(closure)


def test_differentiable_is_refused():
    with pytest.raises(NotImplementedError, match="differentiable=True"):
        gradc.optim.RAdam([gradc.nn.Parameter(gradc.ones(2))], differentiable=True)


@pytest.mark.parametrize("name", ["SGD", "AdamW", "NAdam", "LBFGS"])
def test_step_hooks_and_profile_names_are_pytorchs(name):
    """Global and per-optimizer pre/post step hooks run in PyTorch's order with (optimizer,)
    as args, a pre hook may replace the arguments (the closure here), handles remove them, and a
    profile shows the ``Optimizer.step#<class>.step`` and ``zero_grad`` blocks."""
    torch = pytest.importorskip("torch")
    import importlib
    seen = []
    for m in (torch, gradc):
        module = importlib.import_module(f"{m.__name__}.optim.optimizer")
        p = m.nn.Parameter(m.ones(2))
        opt = getattr(m.optim, name)([p], lr=0.1)

        def closure():
            opt.zero_grad()
            loss = (p * p).sum()
            loss.backward()
            return loss
        calls = []
        handles = [module.register_optimizer_step_pre_hook(lambda o, a, k: calls.append(("global pre", a[0] is o))),
                   opt.register_step_pre_hook(lambda o, a, k: calls.append(("pre", len(a), sorted(k)))),
                   opt.register_step_pre_hook(lambda o, a, k: ((o,), {"closure": closure})),
                   opt.register_step_post_hook(lambda o, a, k: calls.append(("post", sorted(k)))),
                   module.register_optimizer_step_post_hook(lambda o, a, k: calls.append(("global post",)))]
        loss = opt.step()
        calls.append(loss.item())
        for h in handles:
            h.remove()
        closure()
        with m.autograd.profiler.profile() as prof:
            opt.step(closure) if name == "LBFGS" else opt.step()
            opt.zero_grad()
        names = [e.key for e in prof.key_averages() if e.key.startswith("Optimizer.")]
        handle = opt.register_step_pre_hook(lambda o, a, k: 5)
        with pytest.raises(RuntimeError, match="must return None or a tuple of \\(new_args, new_kwargs\\), but got 5"):
            opt.step(closure)
        handle.remove()
        seen.append((calls, names, p.detach().numpy()))
    assert seen[0][1] == [f"Optimizer.step#{name}.step", f"Optimizer.zero_grad#{name}.zero_grad"]
    assert seen[0][0][:2] == [("global pre", True), ("pre", 1, [])]
    assert seen[1][0] == seen[0][0] and seen[1][1] == seen[0][1]
    np.testing.assert_allclose(seen[1][2], seen[0][2], rtol=1e-6)
