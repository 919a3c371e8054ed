"""Reductions that return indices or pick among equal values, against PyTorch: topk, kthvalue,
mode, median/nanmedian, max/min/argmax along a dim, with ties, NaN, -0.0/0.0, integer and bool
inputs (the index PyTorch's CPU algorithm picks, ``gradc/ops/selection.py``); their gradients
with ties, eager and compiled; their argument errors (out= dtypes, empty dims, bad dims)."""
from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import gradc

torch = pytest.importorskip("torch")

_R = np.random.default_rng(5)
ROWS = {
    "few_values": _R.integers(0, 3, (4, 9)).astype(np.float64),
    "long_ties": _R.integers(0, 4, (3, 40)).astype(np.float64),       # introsort / introselect past 16
    "wide_ties": _R.integers(0, 5, (2, 200)).astype(np.float64),      # k * 64 <= n: partial_sort
    "nan": np.array([[1, math.nan, 3, math.nan, 1], [math.nan] * 5, [2, 2, math.nan, 1, 2]]),
    "zeros": np.array([[0.0, -0.0, 0.0, -0.0, 1.0], [-0.0, 0.0, -0.0, 0.0, -0.0]]),
    "inf": np.array([[math.inf, 1, math.inf, -math.inf, -math.inf]]),
    "distinct": _R.standard_normal((3, 30)),
}


def _run(fn, m):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return fn(m)
    except Exception as e:      # noqa: BLE001
        return e


def _as_list(r):
    return list(r) if isinstance(r, (tuple, list)) else [r]


def _assert_same(fn):
    """fn(torch) and fn(gradc) agree: values (NaN and the sign of zero included), dtypes and
    shapes of every output, or exception (gradc's is an instance of torch's type) and message."""
    expected, got = _run(fn, torch), _run(fn, gradc)
    if isinstance(expected, Exception):
        assert isinstance(got, Exception), f"gradc returned {got!r}, torch raised {expected!r}"
        assert isinstance(got, type(expected)) and str(got) == str(expected), (got, expected)
        return
    assert not isinstance(got, Exception), f"gradc raised {got!r}, torch returned {expected!r}"
    for e, g in zip(_as_list(expected), _as_list(got), strict=True):
        assert str(g.dtype) == str(e.dtype) and tuple(g.shape) == tuple(e.shape)
        ev, gv = np.asarray(e.detach().tolist(), dtype=float), np.asarray(g.detach().tolist(), dtype=float)
        np.testing.assert_array_equal(gv, ev)
        np.testing.assert_array_equal(np.signbit(gv) & ~np.isnan(gv), np.signbit(ev) & ~np.isnan(ev))


def _input(m, name, dtype="float32"):
    a = ROWS[name]
    return m.tensor(a.tolist(), dtype=getattr(m, dtype))


@pytest.mark.parametrize("name", sorted(ROWS))
@pytest.mark.parametrize("k", [1, 2, 3])
@pytest.mark.parametrize("largest", [True, False])
@pytest.mark.parametrize("sorted_", [True, False])
def test_topk_picks_pytorchs_indices(name, k, largest, sorted_):
    _assert_same(lambda m: _input(m, name).topk(k, -1, largest, sorted_))


@pytest.mark.parametrize("dtype", ["int64", "int32", "uint8", "float64", "float16"])
def test_topk_of_other_dtypes(dtype):
    _assert_same(lambda m: _input(m, "long_ties", dtype).topk(5, 1))
    _assert_same(lambda m: _input(m, "few_values", dtype).topk(4, 0, largest=False, sorted=False))


def test_topk_errors_and_empty():
    _assert_same(lambda m: m.ones(3, 4, dtype=m.bool).topk(1))
    _assert_same(lambda m: m.ones(3, 4).topk(5))
    _assert_same(lambda m: m.zeros(0).topk(0))
    _assert_same(lambda m: m.zeros(2, 0).topk(0, 0))


_X = [[1.0, 2, 2], [3, 1, 3]]
_OUT_CASES = {
    "max": lambda m, o: m.max(m.tensor(_X), 0, out=o), "min": lambda m, o: m.min(m.tensor(_X), 0, out=o),
    "sort": lambda m, o: m.sort(m.tensor(_X), 0, out=o), "topk": lambda m, o: m.topk(m.tensor(_X), 1, 0, out=o),
    "kthvalue": lambda m, o: m.kthvalue(m.tensor(_X), 1, 0, out=o), "mode": lambda m, o: m.mode(m.tensor(_X), 0, out=o),
    "median": lambda m, o: m.median(m.tensor(_X), 0, out=o),
    "nanmedian": lambda m, o: m.nanmedian(m.tensor(_X), 0, out=o),
    "cummax": lambda m, o: m.cummax(m.tensor(_X), 0, out=o), "cummin": lambda m, o: m.cummin(m.tensor(_X), 0, out=o),
}


@pytest.mark.parametrize("op", sorted(_OUT_CASES))
@pytest.mark.parametrize("dtypes", [("float64", "int64"), ("float32", "int32"), ("float64", "int32"),
                                    ("float32", "int64")])
def test_out_tuples_must_have_the_result_dtypes(op, dtypes):
    values, indices = dtypes
    _assert_same(lambda m: _OUT_CASES[op](m, (m.empty(0, dtype=getattr(m, values)),
                                                m.empty(0, dtype=getattr(m, indices)))))


@pytest.mark.parametrize("call", ["argmax(x, 0, out=o)", "argmin(x, out=o)", "amax(x, 0, out=o)", "amin(x, 1, out=o)",
                                  "sum(x, 0, out=o)", "prod(x, 1, out=o)", "cumsum(x, 0, out=o)",
                                  "mean(x, 0, out=o)", "msort(x, out=o)", "mean(x.long(), 0, out=o)", "max(x, out=o)",
                                  "min(x, x, out=o)", "maximum(x, x, out=o)"])
@pytest.mark.parametrize("dtype", ["float64", "int64", "int32", "bool"])
def test_out_dtype_rules(call, dtype):
    def fn(m):
        x = m.tensor([[1.5, math.nan, 2.0], [3.0, 1.0, -2.5]])
        return eval(f"m.{call}", {"m": m, "x": x, "o": m.empty(0, dtype=getattr(m, dtype))})
    _assert_same(fn)


@pytest.mark.parametrize("name", sorted(ROWS))
@pytest.mark.parametrize("k", [1, 2, 4])
@pytest.mark.parametrize("keepdim", [False, True])
def test_kthvalue_picks_pytorchs_index(name, k, keepdim):
    _assert_same(lambda m: _input(m, name).kthvalue(k, 1, keepdim))


@pytest.mark.parametrize("dtype", ["int64", "int16", "float64", "float16", "bool"])
def test_kthvalue_of_other_dtypes(dtype):
    _assert_same(lambda m: _input(m, "long_ties", dtype).kthvalue(7, 1))
    _assert_same(lambda m: m.tensor(True if dtype == "bool" else 2, dtype=getattr(m, dtype)).kthvalue(1))


@pytest.mark.parametrize("call", ["zeros(0, 3).kthvalue(1, 0)", "zeros(2, 0).kthvalue(3, 0)", "zeros(2, 3).kthvalue(0)",
                                  "zeros(2, 3).kthvalue(1, 2)", "tensor(2.).kthvalue(2)", "tensor(2.).kthvalue(1, 1)"])
def test_kthvalue_errors(call):
    _assert_same(lambda m: eval(f"m.{call}", {"m": m}))


@pytest.mark.parametrize("name, dtype", [(n, d) for n in ("few_values", "long_ties", "wide_ties")
                                          for d in ("float32", "int64", "int8", "float16")]
                         + [("nan", "float32"), ("zeros", "float32"), ("nan", "float64")])
@pytest.mark.parametrize("descending", [False, True])
def test_unstable_sort_orders_ties_as_pytorch(name, descending, dtype):
    _assert_same(lambda m: _input(m, name, dtype).sort(dim=-1, descending=descending))
    _assert_same(lambda m: _input(m, name, dtype).argsort(-1, descending))
    _assert_same(lambda m: _input(m, name, dtype).sort(dim=-1, descending=descending, stable=True))


@pytest.mark.parametrize("name", sorted(ROWS))
@pytest.mark.parametrize("dim", [0, 1])
def test_mode_and_medians_pick_pytorchs_index(name, dim):
    _assert_same(lambda m: _input(m, name).mode(dim))
    _assert_same(lambda m: _input(m, name).median(dim, True))
    _assert_same(lambda m: _input(m, name).nanmedian(dim))


def test_nanmedian_of_nan_slices():
    for n in range(1, 40):
        _assert_same(lambda m: m.full((2, n), math.nan).nanmedian(1))


@pytest.mark.parametrize("call", ["zeros(0, 3).mode(0)", "zeros(0, 3).mode(1)", "zeros(2, 3).mode(2)",
                                  "tensor(2.).mode(1)", "tensor(True).mode()", "tensor([True, False, True]).mode()",
                                  "zeros(0).mode()"])
def test_mode_edges(call):
    _assert_same(lambda m: eval(f"m.{call}", {"m": m}))


_GRAD_OPS = {
    "max_dim": lambda m, x: m.max(x, 1).values, "min_dim": lambda m, x: m.min(x, 0).values,
    "max": lambda m, x: m.max(x), "amax": lambda m, x: m.amax(x, 1), "amin": lambda m, x: m.amin(x, (0, 1)),
    "median": lambda m, x: m.median(x), "nanmedian": lambda m, x: m.nanmedian(x),
    "median_dim": lambda m, x: m.median(x, 1).values, "nanmedian_dim": lambda m, x: m.nanmedian(x, 1).values,
    "kthvalue": lambda m, x: m.kthvalue(x, 2, 1).values, "mode": lambda m, x: m.mode(x, 1).values,
    "topk": lambda m, x: m.topk(x, 2, 1).values, "sort": lambda m, x: m.sort(x, 1).values,
    "cummax": lambda m, x: m.cummax(x, 1).values, "cummin": lambda m, x: m.cummin(x, 1).values,
}


def _weighted_sum(m, op, x):
    y = _GRAD_OPS[op](m, x)
    return (y * m.arange(1, y.numel() + 1, dtype=m.float64).reshape(y.shape)).sum(), y


@pytest.mark.parametrize("op", sorted(_GRAD_OPS))
@pytest.mark.parametrize("name", ["few_values", "long_ties", "nan", "zeros"])
def test_gradients_with_ties_eager_and_compiled(op, name):
    grads = []
    for m in (torch, gradc):
        x = _input(m, name, "float64").requires_grad_()
        loss, y = _weighted_sum(m, op, x)
        loss.backward()
        grads.append(x.grad.numpy())
        if m is gradc:
            assert type(y.grad_fn).__name__ == expected_node
        else:
            expected_node = type(y.grad_fn).__name__
    np.testing.assert_array_equal(grads[1], grads[0])
    x = _input(gradc, name, "float64").requires_grad_()
    gradc.compile(lambda x: _weighted_sum(gradc, op, x)[0])(x).backward()
    np.testing.assert_array_equal(x.grad.numpy(), grads[0])


@pytest.mark.parametrize("call", [
    "zeros(2, 0).amax(-1)", "zeros(0, 3).amin((0, 0))", "zeros(0, 3).amax((1, -2))", "zeros(0).max()",
    "zeros(0, 2).max(0)", "zeros(2, 0).argmax(-1, True)", "zeros(0).argmin()", "zeros(2, 0).max(-1)",
    "zeros(0, 3).aminmax(dim=0)", "zeros(2, 0).cummax(5)", "zeros(0).cummin(-3)", "tensor(1.).cummax(1)",
    "tensor(1.).cummin(-2)", "tensor(1.).cummax(0)", "ones(3, dtype=m.bool).argmax(1.5)",
    "ones(3, dtype=m.bool).argmin(0)", "ones(2, 3).argmax(2)", "tensor(2.).argmax(1)", "tensor(2.).max(0)",
    "tensor(2.).max(1)", "ones(2, 3).max('a')", "ones(2, 3).sum((0, 0))", "ones(2, 3).median(2)",
    "zeros(2, 0).nanmedian(1)", "zeros(0).median()", "zeros(0, dtype=m.int64).median()",
    "ones(3, dtype=m.bool).median()"])
def test_argument_errors(call):
    _assert_same(lambda m: eval(f"m.{call}", {"m": m}))


@pytest.mark.parametrize("call", ["ones(2, 3, dtype=m.int64).softmax(0)", "ones(2, 3, dtype=m.int64).softmax(1)",
                                  "ones(2, 3).log_softmax(-1, dtype=m.int32)", "tensor(1).softmax(0)",
                                  "zeros(0, 3, dtype=m.int64).log_softmax(0)", "zeros(0, 3).softmax(1, dtype=m.bool)",
                                  "ones(2, 1, dtype=m.bool).log_softmax(0)", "ones(2, 3).softmax(2)"])
def test_softmax_dtype_errors(call):
    _assert_same(lambda m: eval(f"m.{call}", {"m": m}))


@pytest.mark.parametrize("name", ["few_values", "nan", "zeros", "inf"])
@pytest.mark.parametrize("dim", [None, 0, 1])
@pytest.mark.parametrize("consecutive", [False, True])
def test_unique_with_nan_and_signed_zeros(name, dim, consecutive):
    fn = "unique_consecutive" if consecutive else "unique"
    _assert_same(lambda m: getattr(m, fn)(_input(m, name), return_inverse=True, return_counts=True, dim=dim))


@pytest.mark.parametrize("call", ["unique(m.ones(2, 3), dim=3)", "unique(m.tensor(1.), dim=0)",
                                  "unique_consecutive(m.tensor(1.), dim=-1)", "unique(m.zeros(2, 0), dim=0)",
                                  "unique_consecutive(m.zeros(0, 3), dim=1)", "unique(m.zeros(2, 0), dim=1)",
                                  "unique_consecutive(m.ones(2, 3), dim=-3)"])
def test_unique_dim_errors(call):
    _assert_same(lambda m: eval(f"m.{call}", {"m": m}))


def test_cumsum_of_negative_zeros_starts_from_zero():
    _assert_same(lambda m: _input(m, "zeros").cumsum(0))
    _assert_same(lambda m: _input(m, "zeros").cumsum(1, dtype=m.float64))


def test_out_of_a_values_indices_op_must_be_a_tuple():
    _assert_same(lambda m: m.min(m.ones(2, 3), 0, True, out=m.empty(0)))
