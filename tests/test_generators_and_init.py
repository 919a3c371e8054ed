"""gradc.Generator (generator= on every sampling function, states, seeds) and nn.init's
initialisers (gains, fans, statistics, errors) against PyTorch's definitions."""
import math

import numpy as np
import pytest

import gradc
from gradc.nn import init


def test_generator_streams_are_reproducible_and_independent_of_the_default():
    g = gradc.Generator().manual_seed(3)
    assert gradc.Generator().initial_seed() == 67280421310721 and g.initial_seed() == 3
    first = [gradc.randn(3, generator=g), gradc.rand(2, generator=g), gradc.randint(0, 9, (4,), generator=g),
             gradc.randperm(5, generator=g), gradc.empty(3).uniform_(generator=g), gradc.empty(2).normal_(generator=g),
             gradc.normal(0.0, 1.0, size=(2,), generator=g), gradc.bernoulli(gradc.full((4,), 0.5), generator=g),
             gradc.multinomial(gradc.ones(5), 3, generator=g)]
    g.manual_seed(3)
    gradc.manual_seed(123)                      # the default stream is another one
    gradc.randn(10)
    again = [gradc.randn(3, generator=g), gradc.rand(2, generator=g), gradc.randint(0, 9, (4,), generator=g),
             gradc.randperm(5, generator=g), gradc.empty(3).uniform_(generator=g), gradc.empty(2).normal_(generator=g),
             gradc.normal(0.0, 1.0, size=(2,), generator=g), gradc.bernoulli(gradc.full((4,), 0.5), generator=g),
             gradc.multinomial(gradc.ones(5), 3, generator=g)]
    for a, b in zip(first, again):
        assert a.tolist() == b.tolist()


def test_states_and_seeds():
    assert gradc.manual_seed(5) is gradc.default_generator and gradc.initial_seed() == 5
    state = gradc.get_rng_state()
    x = gradc.rand(4)
    gradc.set_rng_state(state)
    assert gradc.rand(4).tolist() == x.tolist()
    g = gradc.Generator()
    s = g.seed()
    assert g.initial_seed() == s
    saved = g.get_state()
    y = gradc.randn(3, generator=g)
    assert gradc.randn(3, generator=g.set_state(saved)).tolist() == y.tolist()
    with pytest.raises(RuntimeError, match="expected a state from Generator.get_state"):
        g.set_state(gradc.zeros(3))
    with pytest.raises(TypeError, match="expected a gradc.Generator"):
        gradc.rand(2, generator=np.random.default_rng())


def test_generator_under_compile_is_a_clear_error():
    g = gradc.Generator()
    f = gradc.compile(lambda x: x + gradc.rand(2, generator=g))
    with pytest.raises(RuntimeError, match="generator= is not supported under @gradc.compile"):
        f(gradc.ones(2))


def test_calculate_gain_and_fans_as_pytorch():
    assert init.calculate_gain("conv2d") == 1 and init.calculate_gain("tanh") == 5.0 / 3
    assert init.calculate_gain("relu") == math.sqrt(2.0)
    assert init.calculate_gain("leaky_relu") == math.sqrt(2.0 / (1 + 0.01 ** 2))
    assert init.calculate_gain("leaky_relu", 0.2) == math.sqrt(2.0 / 1.04) and init.calculate_gain("selu") == 0.75
    with pytest.raises(ValueError, match="^Unsupported nonlinearity gelu$"):
        init.calculate_gain("gelu")
    with pytest.raises(ValueError, match="fewer than 2 dimensions"):
        init.kaiming_uniform_(gradc.empty(3))
    with pytest.raises(ValueError, match=r"^Mode fan_avg not supported, please use one of \['fan_in', 'fan_out'\]$"):
        init.kaiming_normal_(gradc.empty(3, 3), mode="fan_avg")
    with pytest.warns(UserWarning, match="Initializing zero-element tensors is a no-op"):
        init.kaiming_uniform_(gradc.empty(0, 3))
    with pytest.raises(ValueError, match="Only tensors with 2 dimensions are supported"):
        init.eye_(gradc.empty(2, 2, 2))


def test_initialiser_statistics():
    gradc.manual_seed(0)
    w = gradc.empty(400, 300)
    init.kaiming_normal_(w, mode="fan_out", nonlinearity="relu")
    assert abs(float(w.std()) - math.sqrt(2.0 / 400)) < 0.002
    init.kaiming_uniform_(w, a=math.sqrt(5))                  # nn.Linear's: bound 1/sqrt(fan_in)
    assert float(w.abs().max()) <= 1 / math.sqrt(300) and float(w.abs().max()) > 0.99 / math.sqrt(300)
    init.xavier_normal_(w, gain=2.0)
    assert abs(float(w.std()) - 2.0 * math.sqrt(2.0 / 700)) < 0.002
    init.xavier_uniform_(w)
    assert float(w.abs().max()) <= math.sqrt(6.0 / 700)
    init.trunc_normal_(w, mean=0.5, std=1.0, a=0.0, b=1.0)
    assert float(w.min()) >= 0.0 and float(w.max()) <= 1.0 and abs(float(w.mean()) - 0.5) < 0.01
    init.constant_(w, 0.25)
    assert set(w.unique().tolist()) == {0.25}
    e = init.eye_(gradc.empty(2, 3))
    assert e.tolist() == [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]


@pytest.mark.parametrize("shape", [(3, 5), (5, 3), (4, 2, 3)])
def test_orthogonal_rows_or_columns_are_orthonormal(shape):
    w = init.orthogonal_(gradc.empty(*shape, dtype=gradc.float64), gain=2.0)
    m = w.reshape(shape[0], -1).numpy()
    gram = m @ m.T if m.shape[0] <= m.shape[1] else m.T @ m
    np.testing.assert_allclose(gram, 4.0 * np.eye(gram.shape[0]), atol=1e-12)


def test_initialisers_leave_no_graph_on_parameters():
    lin = gradc.nn.Linear(4, 3)
    init.orthogonal_(lin.weight)
    init.trunc_normal_(lin.bias, std=0.1)
    assert lin.weight.is_leaf and lin.weight.grad_fn is None and lin.bias.is_leaf and lin.bias.requires_grad
