"""torch.normal / bernoulli / multinomial: shapes, dtypes, statistics, gradients, errors, and
fresh draws per call under @gradc.compile (values differ from PyTorch's generator)."""
import numpy as np
import pytest

import gradc


def test_normal_forms_shapes_statistics_and_gradients():
    gradc.manual_seed(0)
    assert gradc.normal(gradc.zeros(3), gradc.ones(3)).shape == (3,)
    assert gradc.normal(0.0, 1.0, size=(2, 3)).shape == (2, 3)
    assert gradc.normal(gradc.zeros(2, 2), 1.0).shape == (2, 2)
    assert gradc.normal(2.0, gradc.ones(4)).shape == (4,)
    z = gradc.normal(gradc.full((200000,), 1.5), 2.0)
    assert abs(float(z.mean()) - 1.5) < 0.03 and abs(float(z.std()) - 2.0) < 0.03
    mu, sigma = gradc.ones(3, requires_grad=True), gradc.full((3,), 2.0, requires_grad=True)
    y = gradc.normal(mu, sigma)
    y.sum().backward()
    assert mu.grad.tolist() == [1.0, 1.0, 1.0]                       # d/dmu of mu + sigma * z
    np.testing.assert_allclose(sigma.grad.numpy(), ((y - mu) / sigma).detach().numpy(), rtol=1e-6)


def test_bernoulli_and_multinomial_statistics():
    gradc.manual_seed(1)
    b = gradc.bernoulli(gradc.full((200000,), 0.3, dtype=gradc.float64))
    assert b.dtype == gradc.float64 and set(np.unique(b.numpy())) <= {0.0, 1.0}
    assert abs(float(b.mean()) - 0.3) < 0.01
    m = gradc.multinomial(gradc.tensor([1.0, 3.0]), 20000, replacement=True)
    assert m.dtype == gradc.int64 and abs(float(m.float().mean()) - 0.75) < 0.02
    rows = gradc.multinomial(gradc.tensor([[0.5, 0.5, 0.0], [0.0, 0.0, 1.0]]), 3)
    assert sorted(rows[0].tolist()) == [0, 1, 2] and rows[0, 2].item() == 2     # zero weight last
    assert rows[1, 0].item() == 2


@pytest.mark.parametrize("expr,message", [
    ("gradc.bernoulli(gradc.tensor([1.5]))", "Expected p_in >= 0 && p_in <= 1"),
    ("gradc.normal(gradc.zeros(2), -gradc.ones(2))", "normal expects all elements of std >= 0.0"),
    ("gradc.multinomial(gradc.tensor([-1.0, 2.0]), 1)", "probability tensor contains"),
    ("gradc.multinomial(gradc.tensor([1.0, 2.0]), 3)", "cannot sample n_sample > prob_dist.size(-1)"),
])
def test_sampling_errors(expr, message):
    with pytest.raises(RuntimeError, match=message.replace("(", r"\(").replace(")", r"\)")):
        eval(expr)


def test_compiled_normal_draws_anew_at_every_call():
    f = gradc.compile(lambda mu: gradc.normal(mu, 1.0).sum())
    a, b = f(gradc.zeros(1000)), f(gradc.zeros(1000))
    assert a.item() != b.item()
    g = gradc.compile(lambda p: gradc.multinomial(p, 1))
    with pytest.raises(RuntimeError, match="not supported under @gradc.compile"):
        g(gradc.tensor([0.5, 0.5]))
