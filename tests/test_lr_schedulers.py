"""Learning-rate schedulers against PyTorch's: the learning rates (and cycled momenta) of every
step, two parameter groups, 60 steps, to 1e-12; state_dict round trips; PyTorch's errors."""
import warnings

import numpy as np
import pytest

import gradc

torch = pytest.importorskip("torch")

S = "m.optim.lr_scheduler."
SCHEDULES = {
    "multiplicative": ("SGD", S + "MultiplicativeLR(o, lambda e: 0.97 if e % 3 else 1.01)"),
    "constant": ("SGD", S + "ConstantLR(o, factor=0.4, total_iters=7)"),
    "polynomial": ("SGD", S + "PolynomialLR(o, total_iters=40, power=2.5)"),
    "polynomial-short": ("SGD", S + "PolynomialLR(o)"),
    "warm-restarts": ("SGD", S + "CosineAnnealingWarmRestarts(o, 7, eta_min=0.001)"),
    "warm-restarts-mult": ("SGD", S + "CosineAnnealingWarmRestarts(o, 3, T_mult=2)"),
    "cyclic-triangular": ("SGD", S + "CyclicLR(o, 0.01, 0.1, step_size_up=5)"),
    "cyclic-triangular2": ("SGD", S + "CyclicLR(o, [0.01, 0.02], [0.1, 0.3], step_size_up=4, step_size_down=7, "
                                      "mode='triangular2')"),
    "cyclic-exp-range": ("SGD", S + "CyclicLR(o, 0.01, 0.1, step_size_up=6, mode='exp_range', gamma=0.97, "
                                    "base_momentum=0.7, max_momentum=0.95)"),
    "cyclic-scale-fn": ("Adam", S + "CyclicLR(o, 0.001, 0.01, 5, scale_fn=lambda x: 0.9 ** x, "
                                    "scale_mode='iterations')"),
    "cyclic-no-momentum": ("Adagrad", S + "CyclicLR(o, 0.01, 0.1, 3, cycle_momentum=False)"),
    "one-cycle": ("SGD", S + "OneCycleLR(o, 0.5, total_steps=61)"),
    "one-cycle-linear": ("Adam", S + "OneCycleLR(o, [0.1, 0.2], epochs=6, steps_per_epoch=11, "
                                     "anneal_strategy='linear', pct_start=0.25)"),
    "one-cycle-three-phase": ("SGD", S + "OneCycleLR(o, 0.3, total_steps=70, three_phase=True, div_factor=10.0, "
                                         "final_div_factor=100.0, base_momentum=0.8)"),
    "one-cycle-no-momentum": ("Adagrad", S + "OneCycleLR(o, 0.3, total_steps=60, cycle_momentum=False)"),
    "sequential": ("SGD", S + "SequentialLR(o, [" + S + "LinearLR(o, 0.1, total_iters=5), " + S
                   + "ExponentialLR(o, 0.95), " + S + "CosineAnnealingLR(o, 10)], milestones=[5, 30])"),
    "sequential-constant": ("SGD", S + "SequentialLR(o, [" + S + "ConstantLR(o, 0.5, total_iters=3), " + S
                            + "StepLR(o, 4, 0.7)], [10])"),
    "chained": ("SGD", S + "ChainedScheduler([" + S + "ConstantLR(o, 0.3, total_iters=4), " + S
                + "ExponentialLR(o, 0.97), " + S + "MultiStepLR(o, [10, 20])])"),
    "chained-polynomial": ("Adam", S + "ChainedScheduler([" + S + "PolynomialLR(o, 50, 0.5), " + S
                           + "MultiplicativeLR(o, lambda e: 0.99)], optimizer=o)"),
}


def _momenta(o):
    return [g["betas"][0] if "betas" in g else g.get("momentum") for g in o.param_groups]


def _run(m, opt_name, expr, steps=60, resume=None):
    """SGD/Adam/Adagrad on two parameter groups of a small regression with the scheduler:
    the last lrs and momenta each step, and the final weights."""
    rng = np.random.default_rng(0)
    w1, w2 = (m.nn.Parameter(m.tensor(rng.standard_normal((3, 2)))) for _ in range(2))
    x = m.tensor(0.3 * rng.standard_normal((5, 3)))
    kw = dict(momentum=0.9) if opt_name == "SGD" else {}
    o = getattr(m.optim, opt_name)([dict(params=[w1]), dict(params=[w2], lr=0.05)], lr=0.1, **kw)
    sch = eval(expr, {"m": m, "o": o})
    trace = []
    for i in range(steps):
        o.zero_grad()
        (((x @ w1).tanh() + (x @ w2).sin()) ** 2).sum().backward()
        o.step()
        sch.step()
        trace.append(sch.get_last_lr() + _momenta(o))
        if resume is not None and i == resume:           # a new scheduler (same optimizer) from the state dict
            state = sch.state_dict()
            sch = eval(expr, {"m": m, "o": o})
            sch.load_state_dict(state)
            for g, lr in zip(o.param_groups, trace[-1]):
                g["lr"] = lr
    return np.array(trace, dtype=float), np.concatenate([w1.detach().numpy(), w2.detach().numpy()])


@pytest.mark.parametrize("name", list(SCHEDULES))
def test_schedulers_match_pytorch(name):
    opt, expr = SCHEDULES[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        (tt, tw), (gt, gw) = (_run(m, opt, expr) for m in (torch, gradc))
    np.testing.assert_allclose(gt, tt, rtol=1e-12, atol=1e-15)
    assert np.ptp(gt[:, 0]) > 0                            # (the schedule does change the lr)
    np.testing.assert_allclose(gw, tw, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name", ["constant", "polynomial", "warm-restarts-mult", "cyclic-triangular2", "one-cycle",
                                  "sequential", "chained", "multiplicative"])
def test_scheduler_state_dict_resumes(name):
    """Rebuilding the scheduler from its state_dict midway changes nothing."""
    opt, expr = SCHEDULES[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = _run(gradc, opt, expr)[0]
        got = _run(gradc, opt, expr, resume=17)[0]
    if name == "one-cycle":        # (a new OneCycleLR resets momentum on construction; the lrs carry on)
        got, want = got[:, :2], want[:, :2]
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-15)


PLATEAU = [dict(), dict(mode="max", patience=2), dict(threshold_mode="abs", threshold=0.05, patience=1, cooldown=2),
           dict(mode="max", threshold_mode="abs", factor=0.5, patience=0, min_lr=[0.02, 0.001]),
           dict(factor=0.5, patience=0, min_lr=0.03, eps=0.01), dict(patience=3, cooldown=1, factor=0.3)]


@pytest.mark.parametrize("kw", PLATEAU, ids=lambda kw: "-".join(f"{k}{v}" for k, v in kw.items()) or "plain")
def test_reduce_lr_on_plateau_matches_pytorch(kw):
    rng = np.random.default_rng(4)
    metrics = np.concatenate([np.linspace(1, 0.5, 10), 0.5 + 0.02 * rng.standard_normal(40), np.linspace(0.5, 1, 10)])
    got = []
    for m in (torch, gradc):
        p = m.nn.Parameter(m.zeros(1))
        o = m.optim.SGD([dict(params=[p]), dict(params=[m.nn.Parameter(m.zeros(1))], lr=0.05)], lr=0.1)
        sch = m.optim.lr_scheduler.ReduceLROnPlateau(o, **kw)
        trace = []
        for i, v in enumerate(metrics):
            sch.step(m.tensor(v) if i % 2 else float(v))
            trace.append(sch.get_last_lr() + [sch.num_bad_epochs, sch.cooldown_counter, sch.best])
            if i == 30:
                state = sch.state_dict()
                sch = m.optim.lr_scheduler.ReduceLROnPlateau(o)
                sch.load_state_dict(state)
        got.append(np.array(trace, dtype=float))
    np.testing.assert_allclose(got[1], got[0], rtol=1e-12)


def test_scheduler_errors_match_pytorch():
    cases = ["ConstantLR(o, factor=1.5)", "CosineAnnealingWarmRestarts(o, 0)", "CosineAnnealingWarmRestarts(o, 2, 0)",
             "CyclicLR(o, 0.1, 1.0, mode='bad')", "OneCycleLR(o, 1.0)", "OneCycleLR(o, 1.0, total_steps=10, pct_start=1)",
             "OneCycleLR(o, 1.0, total_steps=10, anneal_strategy='x')", "OneCycleLR(o, [1.0, 2.0], total_steps=10)",
             "ReduceLROnPlateau(o, factor=1.0)", "ReduceLROnPlateau(o, mode='up')",
             "ReduceLROnPlateau(o, threshold_mode='x')", "SequentialLR(o, [], [])",
             "SequentialLR(o, [m.optim.lr_scheduler.ConstantLR(o)], [3])", "ChainedScheduler([])",
             "ChainedScheduler([m.optim.lr_scheduler.ReduceLROnPlateau(o)])",
             "MultiplicativeLR(o, [lambda e: 1, lambda e: 2])", "MultiplicativeLR(o, 3)",
             "StepLR(None, 3)", "CyclicLR(a, 0.1, 1.0)"]
    for case in cases:
        errs = []
        for m in (torch, gradc):
            o = m.optim.SGD([m.nn.Parameter(m.zeros(1))], lr=0.1)
            a = m.optim.Adagrad([m.nn.Parameter(m.zeros(1))], lr=0.1)
            with pytest.raises(Exception) as e:
                eval("m.optim.lr_scheduler." + case, {"m": m, "o": o, "a": a})
            errs.append((type(e.value), str(e.value)))
        assert errs[1] == errs[0], case
    o = gradc.optim.SGD([gradc.nn.Parameter(gradc.zeros(1))], lr=0.1)
    sch = gradc.optim.lr_scheduler.OneCycleLR(o, 1.0, total_steps=3)
    for _ in range(3):
        sch.step()
    with pytest.raises(ValueError, match="Tried to step 4 times. The specified number of total steps is 3"):
        sch.step()
