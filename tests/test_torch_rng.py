"""gradc's random numbers are PyTorch's (``torch_rng``): after the same manual_seed, the draws
of the factories, the in-place samplers, nn.init, the layers' default initialisation, dropout,
multinomial and compiled draws equal PyTorch 2.13's bit for bit (orthogonal_ to rounding:
its QR is another LAPACK's)."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import gradc

torch = pytest.importorskip("torch")


def _params(module):
    return np.concatenate([p.detach().numpy().ravel() for p in module.parameters()])


DRAWS = {
    "rand": lambda m: m.rand(3, 5).numpy(),
    "rand-f64": lambda m: m.rand(40, dtype=m.float64).numpy(),
    "rand-f16": lambda m: m.rand(20, dtype=m.float16).numpy(),
    "randn-small": lambda m: m.randn(5).numpy(),
    "randn-16": lambda m: m.randn(4, 4).numpy(),
    "randn-tail": lambda m: m.randn(7, 9).numpy(),
    "randn-large": lambda m: m.randn(20000).numpy(),
    "randn-f64": lambda m: m.randn(100, dtype=m.float64).numpy(),
    "randn-f64-small": lambda m: m.randn(3, dtype=m.float64).numpy(),
    "randn-f64-compiled-fill": lambda m: m.randn(3, 4099, dtype=m.float64).numpy(),     # C library per value
    "normal_-f64-compiled-fill": lambda m: m.empty(8192, dtype=m.float64).normal_(-0.4, 2.3).numpy(),
    "cached-normal-between-calls": lambda m: np.concatenate([m.randn(3).numpy(), m.randn(1).numpy(),
                                                            m.rand(2).numpy()]),
    "randint": lambda m: m.randint(-3, 50, (30,)).numpy(),
    "randint-wide": lambda m: m.randint(-2 ** 40, 2 ** 40, (10,)).numpy(),
    "randint-keywords": lambda m: m.randint(high=9, size=(6,)).numpy(),
    "randperm": lambda m: m.randperm(300).numpy(),
    "randperm-compiled-shuffle": lambda m: m.randperm(10000).numpy(),
    "uniform_": lambda m: m.empty(50).uniform_(-0.3, 0.7).numpy(),
    "normal_": lambda m: m.empty(50).normal_(2.0, 3.0).numpy(),
    "normal_-small": lambda m: m.empty(6, dtype=m.float64).normal_(2.0, 3.0).numpy(),
    "normal_-f64": lambda m: m.empty(48, dtype=m.float64).normal_(0.3, 1.7).numpy(),
    "uniform_-f64": lambda m: m.empty(50, dtype=m.float64).uniform_(-0.37, 1.9).numpy(),
    "kaiming_uniform_-f64": lambda m: m.nn.init.kaiming_uniform_(m.empty(8, 9, dtype=m.float64)).numpy(),
    "log_normal_-parameters": lambda m: m.empty(12, dtype=m.float64).log_normal_(0.3, 1.7).numpy(),
    "cauchy_-parameters": lambda m: m.empty(12, dtype=m.float64).cauchy_(0.3, 1.7).numpy(),
    "bernoulli_": lambda m: m.empty(64).bernoulli_(0.3).numpy(),
    "bernoulli": lambda m: m.bernoulli(m.full((40,), 0.4)).numpy(),
    "exponential_": lambda m: m.empty(20, dtype=m.float64).exponential_(2.0).numpy(),
    "log_normal_": lambda m: m.empty(5, dtype=m.float64).log_normal_().numpy(),
    "cauchy_": lambda m: m.empty(5, dtype=m.float64).cauchy_().numpy(),
    "geometric_": lambda m: m.empty(8).geometric_(0.3).numpy(),
    "random_": lambda m: m.empty(8, dtype=m.int64).random_(0, 100).numpy(),
    "normal(tensors)": lambda m: m.normal(m.zeros(5), m.ones(5)).numpy(),
    "multinomial": lambda m: m.multinomial(m.tensor([[0.1, 0.5, 0.2, 0.2], [1., 2., 3., 4.]]), 3).numpy(),
    "multinomial-replacement": lambda m: m.multinomial(m.tensor([[0.1, 0.5, 0.2, 0.2]]), 10, True).numpy(),
    "dropout": lambda m: m.nn.functional.dropout(m.ones(200), 0.3).numpy(),
    "Linear": lambda m: _params(m.nn.Linear(7, 5)),
    "Conv2d": lambda m: _params(m.nn.Conv2d(3, 4, 3)),
    "LSTM": lambda m: _params(m.nn.LSTM(3, 4)),
    "Embedding": lambda m: _params(m.nn.Embedding(10, 4)),
    "xavier_normal_": lambda m: m.nn.init.xavier_normal_(m.empty(8, 9)).numpy(),
    "kaiming_normal_": lambda m: m.nn.init.kaiming_normal_(m.empty(8, 9)).numpy(),
    "trunc_normal_": lambda m: m.nn.init.trunc_normal_(m.empty(100)).numpy(),
    "trunc_normal_-narrow": lambda m: m.nn.init.trunc_normal_(m.empty(100), 0.0, 1.0, -0.3, 0.2).numpy(),
}


@pytest.mark.parametrize("seed", [0, 7, 2 ** 40 + 3])
@pytest.mark.parametrize("name", sorted(DRAWS))
def test_draws_equal_pytorchs_after_the_same_seed(name, seed):
    out = []
    for m in (torch, gradc):
        m.manual_seed(seed)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out.append(np.asarray(DRAWS[name](m)))
    np.testing.assert_array_equal(out[1], out[0])


def test_orthogonal_init_equals_pytorchs_to_rounding():
    out = []
    for m in (torch, gradc):
        m.manual_seed(0)
        out.append(m.nn.init.orthogonal_(m.empty(4, 6)).numpy())
    np.testing.assert_allclose(out[1], out[0], rtol=1e-5, atol=1e-6)


def test_generators_and_states_replay_the_same_numbers():
    g = gradc.Generator().manual_seed(5)
    t = torch.Generator().manual_seed(5)
    np.testing.assert_array_equal(gradc.randn(20, generator=g).numpy(), torch.randn(20, generator=t).numpy())
    gradc.manual_seed(1)
    gradc.randn(3)                             # leaves a cached normal behind
    state = gradc.get_rng_state()
    first = gradc.randn(5).numpy()
    gradc.set_rng_state(state)
    np.testing.assert_array_equal(gradc.randn(5).numpy(), first)


def test_compiled_draws_follow_the_same_stream():
    f = gradc.compile(lambda x: x + gradc.randn(20))
    gradc.manual_seed(3)
    torch.manual_seed(3)
    np.testing.assert_array_equal(f(gradc.zeros(20)).numpy(), torch.randn(20).numpy())
