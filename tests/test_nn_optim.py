"""nn modules and optimizers: training matches PyTorch's parameter updates step by step."""
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
