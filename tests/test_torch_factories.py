"""gradc/torch_factories.py against PyTorch: empty_strided / empty_permuted (strides), fill,
asarray (memory shared or not), frombuffer, nonzero_static, range (values, dtypes, warning),
poisson / binomial (distributions, errors), set_default_device and set_warn_always."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import gradc

torch = pytest.importorskip("torch")


def _both(fn):
    """fn(torch) and fn(gradc), or the exception type and message of each, and the warnings."""
    out = []
    for m in (torch, gradc):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                out.append((fn(m), [str(w.message) for w in caught]))
            except Exception as e:      # noqa: BLE001
                out.append(((type(e).__name__, str(e)), [str(w.message) for w in caught]))
    return out


def _same(a, b):
    if isinstance(a, tuple) and len(a) == 2 and isinstance(a[0], str) and isinstance(b, tuple):
        assert b == a
    elif hasattr(a, "numpy"):
        assert str(a.dtype) == str(b.dtype) and tuple(a.shape) == tuple(b.shape)
        assert a.requires_grad == b.requires_grad
        np.testing.assert_array_equal(b.detach().numpy(), a.detach().numpy())
    elif isinstance(a, (tuple, list)):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            _same(x, y)
    else:
        assert a == b or repr(a) == repr(b), (a, b)


def _grads(m, value):
    x = m.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = m.fill(x, value)
    (y * m.tensor([1.0, 2.0, 4.0])).sum().backward()
    return y, y.grad_fn.name(), x.grad, getattr(value, "grad", None)


def _shares(m, make):
    """Whether asarray's result follows a write to the source."""
    src = make(m)
    t = m.asarray(src, requires_grad=False) if isinstance(src, m.Tensor) else m.asarray(src)
    src[0] = 42
    return t[0].item() == 42, t.dtype


def _from_bytes(m, **kwargs):
    buf = bytearray(np.arange(8, dtype=np.int32).tobytes())
    t = m.frombuffer(buf, **kwargs)
    buf[kwargs.get("offset", 0)] = 99            # shared memory: the tensor sees the write
    return t


SAME = [
    lambda m: m.empty_strided((2, 3), (1, 2)).stride(), lambda m: m.empty_strided((2, 3), (3, 1)).is_contiguous(),
    lambda m: m.empty_strided((2, 0), (1, 2)).stride(), lambda m: m.empty_strided([], []).shape,
    lambda m: (m.empty_strided((2,), (4,), dtype=m.int64).dtype, m.empty_strided((2,), (1,)).dtype),
    lambda m: m.empty_strided((2, 3), (1, 2), requires_grad=True).requires_grad,
    lambda m: m.empty_strided((2, 3), (1,)),
    lambda m: m.empty_permuted((2, 3, 4), (2, 0, 1)).stride(), lambda m: m.empty_permuted((2, 3, 4), (0, 1, 2)).stride(),
    lambda m: m.empty_permuted((2, 0, 4), (1, 2, 0)).stride(), lambda m: m.empty_permuted((2, 3), (0, 0)),
    lambda m: m.empty_permuted((2, 3), (0,)),
    lambda m: _grads(m, 2.5), lambda m: _grads(m, m.tensor(4.0, requires_grad=True)),
    lambda m: m.fill(m.ones(2, dtype=m.int64), 2.7), lambda m: m.fill(m.ones(2, dtype=m.bool), 0),
    lambda m: m.fill(m.ones(2), m.ones(2)), lambda m: m.fill(m.ones(2, 2), m.tensor(3, dtype=m.int64)),
    lambda m: _shares(m, lambda m: np.arange(3.0)), lambda m: _shares(m, lambda m: m.zeros(3)),
    lambda m: (m.asarray([1, 2.5]), m.asarray([1, 2]), m.asarray(3), m.asarray(np.float64(3)), m.asarray(True)),
    lambda m: m.asarray([[1, 2], [3, 4]], dtype=m.float64), lambda m: m.asarray(np.arange(3), dtype=m.float32),
    lambda m: m.asarray([1, 2], copy=False), lambda m: m.asarray(m.ones(2), dtype=m.float64, copy=False),
    lambda m: m.asarray(m.ones(2), copy=True).requires_grad,
    lambda m: [(lambda t: (t.requires_grad, t.is_leaf, t.grad_fn and t.grad_fn.name()))(
        m.asarray(m.ones(2, requires_grad=True), **kw)) for kw in (
        {}, {"copy": True}, {"dtype": m.float64}, {"requires_grad": True}, {"requires_grad": False, "copy": True},
        {"requires_grad": True, "dtype": m.float64})],
    lambda m: (lambda t: (m.asarray(t, requires_grad=False) is t, t.requires_grad))(m.ones(2, requires_grad=True)),
    lambda m: (lambda t: (m.asarray(t, requires_grad=True) is t, t.requires_grad))(m.ones(2)),
    lambda m: (lambda t: m.asarray(t) is t)(m.ones(2)),
    lambda m: m.asarray(bytearray(b"ab")), lambda m: m.asarray(bytearray(np.arange(3, dtype=np.int64).tobytes()),
                                                                 dtype=m.int64),
    lambda m: (lambda b: (m.asarray(b, dtype=m.uint8), b.__setitem__(0, 7), m.asarray(b, dtype=m.uint8))[::2])(
        bytearray(b"\x01\x02")),
    lambda m: _from_bytes(m, dtype=m.int32), lambda m: _from_bytes(m, dtype=m.int8, count=3, offset=2),
    lambda m: _from_bytes(m, dtype=m.float64, requires_grad=True).requires_grad,
    lambda m: m.frombuffer(bytearray(3), dtype=m.int32), lambda m: m.frombuffer(bytearray(8), dtype=m.int32, count=3),
    lambda m: m.frombuffer(bytearray(8), dtype=m.int32, offset=8),
    lambda m: m.frombuffer(bytearray(8), dtype=m.int32, count=0),
    lambda m: m.nonzero_static(m.tensor([[0, 1], [2, 0]]), size=4),
    lambda m: m.nonzero_static(m.tensor([[0, 1], [2, 3]]), size=2),
    lambda m: m.tensor([1, 0, 3]).nonzero_static(size=1, fill_value=7),
    lambda m: m.tensor([0.0, 0.0]).nonzero_static(size=2, fill_value=-5),
    lambda m: m.nonzero_static(m.tensor([1]), size=-1),
    lambda m: (m.range(1, 4), m.range(0, 1, 0.3), m.range(5, 1, -2), m.range(1, 3, dtype=m.int64)),
    lambda m: m.range(1, 2, dtype=m.float64, requires_grad=True), lambda m: m.range(1, 0), lambda m: m.range(0, 1, 0),
    lambda m: m.poisson(m.tensor([1])), lambda m: m.poisson(m.tensor([-1.0])),
    lambda m: m.binomial(m.tensor([10]), m.tensor([0.5])),
    lambda m: m.poisson(m.zeros(3)), lambda m: m.binomial(m.tensor([0.0, 5.0]), m.tensor([0.3, 0.0])),
    lambda m: m.binomial(m.tensor([4.0, 5.0]), m.tensor([1.0, 1.0])),
]


@pytest.mark.parametrize("fn", SAME)
def test_same_results_warnings_and_errors_as_pytorch(fn):
    (want, want_warnings), (have, have_warnings) = _both(fn)
    _same(want, have)
    assert have_warnings == want_warnings


def test_frombuffer_of_a_read_only_buffer_warns_once_or_always():
    gradc.set_warn_always(True)
    try:
        for _ in range(2):
            with pytest.warns(UserWarning, match="The given buffer is not writable"):
                t = gradc.frombuffer(b"\x01\x00\x02\x00", dtype=gradc.int16)
        assert t.tolist() == [1, 2]
    finally:
        gradc.set_warn_always(False)


def test_set_warn_always_and_default_device():
    for m in (torch, gradc):
        assert not m.is_warn_always_enabled()
        m.set_warn_always(True)
        assert m.is_warn_always_enabled()
        m.set_warn_always(False)
        m.set_default_device("cpu")
        m.set_default_device(m.device("cpu"))
        assert str(m.get_default_device()) == "cpu" and m.ones(1).device.type == "cpu"
        m.set_default_device(None)


def test_float_of_a_tensor_that_requires_grad_warns_every_time_with_warn_always():
    x = gradc.ones((), requires_grad=True)
    gradc.set_warn_always(True)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            float(x), float(x)
    finally:
        gradc.set_warn_always(False)
    assert len(caught) == 2


@pytest.mark.parametrize("rates", [[0.5, 3.0, 20.0], [[1.0], [7.5]]])
def test_poisson_draws_have_the_rates_as_mean_and_variance_and_a_zero_gradient(rates):
    rate = gradc.tensor(rates, dtype=gradc.float64, requires_grad=True)
    draws = gradc.stack([gradc.poisson(rate) for _ in range(3000)])
    assert draws.dtype is gradc.float64 and draws.grad_fn.name() == "StackBackward0"
    np.testing.assert_allclose(draws.mean(0).detach().numpy(), rates, rtol=0.1)
    np.testing.assert_allclose(draws.var(0).detach().numpy(), rates, rtol=0.15)
    assert (draws.detach().numpy() == np.round(draws.detach().numpy())).all()
    y = gradc.poisson(rate)
    assert y.grad_fn.name() == "PoissonBackward0"
    y.sum().backward()
    assert rate.grad.tolist() == torch.zeros(np.shape(rates)).tolist()


def test_binomial_draws_broadcast_and_have_the_binomial_mean():
    count, prob = gradc.tensor([[10.0], [40.0]]), gradc.tensor([0.1, 0.5, 0.9])
    draws = gradc.stack([gradc.binomial(count.expand(2, 3), prob.expand(2, 3)) for _ in range(2000)])
    assert draws.shape == (2000, 2, 3) and draws.dtype is gradc.float32
    np.testing.assert_allclose(draws.mean(0).numpy(), (count * prob).numpy(), rtol=0.06)
    assert (draws <= count).all() and (draws >= 0).all()
    gen = gradc.Generator().manual_seed(3)
    first = gradc.binomial(count.expand(2, 3), prob.expand(2, 3), generator=gen)
    gen.manual_seed(3)
    assert gradc.equal(first, gradc.binomial(count.expand(2, 3), prob.expand(2, 3), generator=gen))


def test_set_default_device_refuses_other_devices():
    with pytest.raises(RuntimeError, match="only the CPU"):
        gradc.set_default_device("cuda")


OPTION_CALLS = [
    lambda m, **o: m.ones(2, **o), lambda m, **o: m.zeros((2, 3), **o), lambda m, **o: m.empty(2, **o).shape,
    lambda m, **o: m.full((2,), 1.5, **o), lambda m, **o: m.rand(2, **o).shape, lambda m, **o: m.randn(2, **o).shape,
    lambda m, **o: m.randint(3, (2,), **o).shape, lambda m, **o: m.randperm(3, **o).shape,
    lambda m, **o: m.arange(3, **o), lambda m, **o: m.linspace(0, 1, 3, **o), lambda m, **o: m.logspace(0, 1, 3, **o),
    lambda m, **o: m.eye(2, **o), lambda m, **o: m.tensor([1.0], **o), lambda m, **o: m.ones_like(m.ones(2), **o),
    lambda m, **o: m.zeros_like(m.ones(2), **o), lambda m, **o: m.full_like(m.ones(2), 3, **o),
    lambda m, **o: m.empty_like(m.ones(2), **o).shape, lambda m, **o: m.rand_like(m.ones(2), **o).shape,
    lambda m, **o: m.randn_like(m.ones(2), **o).shape, lambda m, **o: m.randint_like(m.ones(2), 4, **o).shape,
    lambda m, **o: m.scalar_tensor(2, **o), lambda m, **o: m.hann_window(4, **o),
    lambda m, **o: m.empty_strided((2,), (1,), **o).shape, lambda m, **o: m.empty_permuted((2, 3), (1, 0), **o).shape,
    lambda m, **o: m.range(0, 2, **o),        # (PyTorch's range takes neither: a TypeError)
]


@pytest.mark.parametrize("call", OPTION_CALLS)
@pytest.mark.parametrize("options", [{"pin_memory": False, "layout": "strided"}, {"pin_memory": True}])
def test_factories_take_layout_and_refuse_pinned_memory_as_pytorchs_cpu_build(call, options):
    def run(m):
        return call(m, **{k: (m.strided if v == "strided" else v) for k, v in options.items()})
    (want, _), (have, _) = _both(run)
    _same(want, have)


def test_a_layout_that_is_not_one_is_refused():
    (want, _), (have, _) = _both(lambda m: m.ones(2, layout=3))
    assert have == want == ("TypeError", "ones(): argument 'layout' must be torch.layout, not int")
