"""gradc.testing against torch.testing: assert_close's verdicts and messages (default tolerances per
dtype, mismatch counts, greatest differences and their indices, nested inputs, equal_nan,
check_dtype, check_stride, rtol/atol together, msg) and make_tensor's ranges, shapes and errors."""
import warnings

import numpy as np
import pytest

import gradc

torch = pytest.importorskip("torch")


def _outcome(lib, actual, expected, **kwargs):
    """'OK' or 'ExceptionType: message' of lib.testing.assert_close (gradc's class name spelled as torch's)."""
    try:
        lib.testing.assert_close(actual, expected, **kwargs)
        return "OK"
    except Exception as e:   # noqa: BLE001  (the outcome is the exception)
        return f"{type(e).__name__}: {e}".replace("gradc.tensor.Tensor", "torch.Tensor")


def _t(lib, values, dtype=None):
    return lib.tensor(values, dtype=getattr(lib, dtype) if dtype else None)


CASES = [
    (lambda L: (_t(L, [1., 2., 3.]), _t(L, [1., 2.5, 3.])), {}),
    (lambda L: (_t(L, [1., 2., 3.], "float64"), _t(L, [1., 2. + 1e-8, 3.], "float64")), {}),
    (lambda L: (_t(L, [1., 2., 3.], "float64"), _t(L, [1., 2. + 1e-6, 3.], "float64")), {}),
    (lambda L: (_t(L, [1., 2.], "float16"), _t(L, [1., 2.01], "float16")), {}),
    (lambda L: (_t(L, [[1., 2.], [3., 4.]]), _t(L, [[1., 2.], [3., 0.]])), {}),
    (lambda L: (_t(L, [1, 2, 3]), _t(L, [1, 5, 0])), {}),
    (lambda L: (_t(L, [True, False]), _t(L, [True, True])), {}),
    (lambda L: (_t(L, [1., float("nan")]), _t(L, [1., float("nan")])), {}),
    (lambda L: (_t(L, [1., float("nan")]), _t(L, [1., float("nan")])), {"equal_nan": True}),
    (lambda L: (_t(L, [1., float("nan"), 5.]), _t(L, [2., 1., 5.])), {}),
    (lambda L: (_t(L, [float("inf"), 1.]), _t(L, [float("inf"), 1.])), {}),
    (lambda L: (_t(L, [float("inf"), 1.]), _t(L, [float("-inf"), 1.])), {}),
    (lambda L: (_t(L, [0., 1.]), _t(L, [1., 0.])), {}),
    (lambda L: (_t(L, 3.), _t(L, 3.5)), {}),
    (lambda L: (_t(L, [1., 2.]), _t(L, [1., 2.], "float64")), {}),
    (lambda L: (_t(L, [1., 2.]), _t(L, [1., 2.1], "float64")), {"check_dtype": False}),
    (lambda L: (_t(L, [1, 2]), _t(L, [1., 2.5])), {"check_dtype": False}),
    (lambda L: (_t(L, [1., 2.]), _t(L, [1., 2., 3.])), {}),
    (lambda L: (L.arange(6.).reshape(2, 3), L.arange(6.).reshape(3, 2)), {}),
    (lambda L: (L.arange(6.).reshape(2, 3).t(), L.arange(6.).reshape(2, 3).t().contiguous()), {"check_stride": True}),
    (lambda L: (L.zeros(3, requires_grad=True), L.ones(3)), {}),
    (lambda L: (_t(L, [1., 2.]), _t(L, [1., 2.1])), {"rtol": 0.1, "atol": 0.}),
    (lambda L: (_t(L, [1., 2.]), _t(L, [1., 2.1])), {"rtol": 0.01, "atol": 0.}),
    (lambda L: (_t(L, [1., 2.], "float64"), _t(L, [1., 2.1], "float64")), {"rtol": 0, "atol": 0}),
    (lambda L: (_t(L, [1., 2.]), _t(L, [1., 2.1])), {"rtol": 0.01}),
    (lambda L: (_t(L, [1., 2.]), _t(L, [1., 2.1])), {"atol": 0.01}),
    (lambda L: (_t(L, [1., 2.]), _t(L, [1., 2.1])), {"msg": "custom"}),
    (lambda L: (_t(L, [1., 2.]), _t(L, [1., 2.1])), {"msg": lambda m: "Header\n\n" + m + "\n\nFooter"}),
    (lambda L: ([_t(L, [1.]), {"a": _t(L, [2.])}], [_t(L, [1.]), {"a": _t(L, [3.])}]), {}),
    (lambda L: ([_t(L, [1.])], [_t(L, [1.]), _t(L, [1.])]), {}),
    (lambda L: ((_t(L, [1.]),), [_t(L, [2.])]), {}),
    (lambda L: ({"a": 1}, {"b": 1}), {}),
    (lambda L: (1, 1.0), {}),
    (lambda L: (1, 1.0), {"check_dtype": False}),
    (lambda L: (1.0, 1.1), {}),
    (lambda L: (1.0, 1.0 + 1e-9), {}),
    (lambda L: (True, False), {}),
    (lambda L: (None, 1), {}),
    (lambda L: (_t(L, [1.]), 1.0), {}),
    (lambda L: (np.array([1., 2.]), np.array([1., 3.])), {}),
]


@pytest.mark.parametrize("case", range(len(CASES)))
def test_assert_close_matches_torch(case):
    make, kwargs = CASES[case]
    assert _outcome(gradc, *make(gradc), **kwargs) == _outcome(torch, *make(torch), **kwargs)


def test_assert_close_message_format():
    with pytest.raises(AssertionError) as e:
        gradc.testing.assert_close(gradc.tensor([1., 2., 3.]), gradc.tensor([1., 2.5, 3.]))
    assert str(e.value) == ("Tensor-likes are not close!\n\nMismatched elements: 1 / 3 (33.3%)\n"
                            "Greatest absolute difference: 0.5 at index (1,) (up to 1e-05 allowed)\n"
                            "Greatest relative difference: 0.20000000298023224 at index (1,) (up to 1.3e-06 allowed)")


def test_make_tensor_ranges_and_shapes():
    make = gradc.testing.make_tensor
    for dtype, low, high in ((gradc.float32, -9, 9), (gradc.float64, -9, 9), (gradc.int64, -9, 9),
                             (gradc.uint8, 0, 9), (gradc.bool, 0, 1)):
        t = make(50, 4, dtype=dtype, device="cpu")
        assert t.dtype == dtype and tuple(t.shape) == (50, 4) and not t.requires_grad
        assert low <= float(t.min()) and float(t.max()) <= high
    t = make((3, 4), dtype=gradc.float32, device="cpu", low=-1, high=1, requires_grad=True, noncontiguous=True)
    assert tuple(t.shape) == (3, 4) and not t.is_contiguous() and t.requires_grad
    assert -1 <= float(t.detach().min()) and float(t.detach().max()) < 1
    assert (make(200, dtype=gradc.int8, device="cpu", low=-1, high=2, exclude_zero=True) != 0).all()
    clamped = make(200, dtype=gradc.int8, device="cpu", low=-1000, high=1000)
    assert -128 <= int(clamped.min()) and int(clamped.max()) <= 127
    with pytest.raises(NotImplementedError, match="no memory formats"):
        make(2, 2, dtype=gradc.float32, device="cpu", memory_format="channels_last")


@pytest.mark.parametrize("kwargs", [{"low": 2, "high": 1}, {"low": float("nan")},
                                    {"requires_grad": True, "dtype": "int32"},
                                    {"low": 300, "high": 400, "dtype": "int8"},
                                    {"noncontiguous": True, "memory_format": "channels_last"}])
def test_make_tensor_errors_match_torch(kwargs):
    kwargs = dict(kwargs)
    dtype = kwargs.pop("dtype", "float32")
    memory_format = kwargs.pop("memory_format", None)
    messages = []
    for lib in (gradc, torch):
        extra = {"memory_format": torch.channels_last} if memory_format and lib is torch else {}
        if memory_format and lib is gradc:
            extra = {"memory_format": "channels_last"}
        with pytest.raises(ValueError) as e:
            lib.testing.make_tensor((2, 2), dtype=getattr(lib, dtype), device="cpu", **kwargs, **extra)
        messages.append(str(e.value).replace("'channels_last'", "torch.channels_last"))
    assert messages[0] == messages[1]


def test_make_tensor_low_equal_high_warns_as_torch():
    for lib in (gradc, torch):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            t = lib.testing.make_tensor(3, dtype=lib.float32, device="cpu", low=1.0, high=1.0)
        assert [w.category for w in caught] == [FutureWarning] and t.tolist() == [1.0, 1.0, 1.0]


def test_assert_close_check_device(cuda):
    a, b = gradc.ones(2), gradc.ones(2, device=cuda)
    with pytest.raises(AssertionError) as eg:
        gradc.testing.assert_close(a, b)
    with pytest.raises(AssertionError) as et:          # PyTorch's format, with the device it has here
        torch.testing.assert_close(torch.ones(2), torch.ones(2, device="meta"))
    assert str(eg.value) == str(et.value).replace("meta", "cuda:0")
    gradc.testing.assert_close(a, b, check_device=False)
    with pytest.raises(AssertionError, match="Mismatched elements: 1 / 2"):
        gradc.testing.assert_close(a, gradc.tensor([1., 2.], device=cuda), check_device=False)
