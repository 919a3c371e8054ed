"""int32, int16, int8, uint8 and float16 tensors (eager only): values, result dtypes, promotion,
printing and errors against PyTorch; a clear error (or fallback) under @gradc.compile."""
import warnings

import numpy as np
import pytest

import gradc

torch = pytest.importorskip("torch")

SMALL = ["int32", "int16", "int8", "uint8", "float16"]
ALL = SMALL + ["bool", "int64", "float32", "float64"]
EXPRS = ["x", "x + 1", "x + y", "x * 2.5", "x - y64", "x / 2", "x // 2", "x % 3", "-x", "x.abs()", "x.sum()",
         "x.sum(0)", "x.prod()", "x.cumsum(0)", "x.max()", "x.min(0)", "x.argmax()", "x.float().mean()", "x.mean()",
         "x.sqrt()", "x.exp()", "x.sigmoid()", "x == y", "x > 2", "x.clamp(1, 3)", "x.sort()", "x.topk(2)",
         "x.reshape(2, 3).t()", "x[1:]", "x[[0, 2]]", "torch.cat([x, x])", "torch.stack([x, y])",
         "torch.where(x > 2, x, y)", "x.to(torch.float64)", "x.long()", "x.int()", "x.half()", "x.byte()", "x.short()",
         "x.char()", "x.bool()", "x.tolist()", "x[0].item()", "x & y", "x | 1", "x ^ y", "~x", "x << 1", "x ** 2",
         "torch.maximum(x, y)", "x.sign()", "x.unique()", "x.flip(0)", "x.var()", "x.reshape(2, 3) @ y.reshape(3, 2)",
         "torch.zeros(2, dtype=x.dtype)", "torch.ones_like(x)", "torch.arange(4, dtype=x.dtype)", "x.new_zeros(2)",
         "x.masked_fill(x > 2, 0)", "x.index_select(0, torch.tensor([1, 0]))", "x.add_(1)", "x.mul_(2)", "x.div_(2)",
         "x.round()", "x.count_nonzero()", "x.element_size()", "x.is_floating_point()", "torch.nn.functional.relu(x)",
         "torch.tensor(x.tolist(), dtype=x.dtype)", "x.numpy().dtype.name"]


def _outcome(m, dt, expr):
    x = m.tensor([1, 4, 2, 3, 0, 5], dtype=getattr(m, dt))
    y = m.tensor([3, 1, 2, 2, 1, 0], dtype=getattr(m, dt))
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            r = eval(expr, {"torch": m, "x": x, "y": y, "y64": m.tensor([3, 1, 2, 2, 1, 0])})
        return repr(r).replace("torch.return_types.", "")
    except Exception as e:
        return f"{type(e).__name__}: {e}"


@pytest.mark.parametrize("dt", SMALL)
def test_ops_on_small_dtypes_match_pytorch(dt):
    mismatches = [(e, _outcome(torch, dt, e), _outcome(gradc, dt, e)) for e in EXPRS]
    assert [m for m in mismatches if m[1] != m[2]] == []


def test_promotion_table_matches_pytorch():
    for a in ALL:
        for b in ALL:
            for make_b in (lambda m, d: m.ones(2, dtype=d), lambda m, d: m.ones((), dtype=d), lambda m, d: 1,
                           lambda m, d: 1.5):
                want = (torch.ones(2, dtype=getattr(torch, a)) * make_b(torch, getattr(torch, b))).dtype
                got = (gradc.ones(2, dtype=getattr(gradc, a)) * make_b(gradc, getattr(gradc, b))).dtype
                assert repr(got) == repr(want), (a, b)


def test_names_info_and_numpy_round_trip():
    assert gradc.int is gradc.int32 and gradc.short is gradc.int16 and gradc.half is gradc.float16
    assert gradc.long is gradc.int64
    for dt in SMALL:
        arr = np.arange(3).astype(dt)
        t = gradc.from_numpy(arr)
        assert t.dtype is getattr(gradc, dt) and t.numpy().dtype == arr.dtype
        assert repr(gradc.tensor(arr)) == repr(torch.tensor(arr))
        info = gradc.finfo(t.dtype) if dt == "float16" else gradc.iinfo(t.dtype)
        tinfo = torch.finfo(getattr(torch, dt)) if dt == "float16" else torch.iinfo(getattr(torch, dt))
        assert repr(info) == repr(tinfo)
    assert repr(gradc.tensor([1.5, 2.25], dtype=gradc.half)) == repr(torch.tensor([1.5, 2.25], dtype=torch.half))


def test_float16_computes_in_float32_and_rounds_once():
    data = np.linspace(-4, 4, 101)
    for name in ("sigmoid", "exp", "tanh", "log1p", "sqrt"):
        x = np.abs(data) if name in ("log1p", "sqrt") else data
        got = getattr(gradc.tensor(x, dtype=gradc.float16), name)().numpy()
        want = getattr(torch.tensor(x, dtype=torch.float16), name)().numpy()
        np.testing.assert_array_equal(got, want, err_msg=name)


def test_float16_gradients():
    x = gradc.tensor([0.5, -1.0, 2.0], dtype=gradc.float16, requires_grad=True)
    (x * x).sigmoid().sum().backward()
    tx = torch.tensor([0.5, -1.0, 2.0], dtype=torch.float16, requires_grad=True)
    (tx * tx).sigmoid().sum().backward()
    assert x.grad.dtype is gradc.float16
    np.testing.assert_allclose(x.grad.numpy().astype(np.float32), tx.grad.numpy().astype(np.float32), rtol=2e-3)


def test_compile_refuses_small_dtypes_clearly_or_falls_back():
    f = gradc.compile(lambda a: a * 2)
    with pytest.raises(TypeError, match="handles float32, float64, int64 and bool tensors, not torch.int32"):
        f(gradc.ones(3, dtype=gradc.int32))
    g = gradc.compile(lambda a: (a * 2).to(gradc.float16))
    with pytest.raises(TypeError, match="not torch.float16 .at .*test_small_dtypes.py"):
        g(gradc.ones(3))
    h = gradc.compile(lambda a: (a * 2).to(gradc.int32), fallback=True)
    with pytest.warns(UserWarning, match="fell back to eager mode"):
        out = h(gradc.ones(3))
    assert out.dtype is gradc.int32 and out.tolist() == [2, 2, 2]
    assert f(gradc.ones(3, dtype=gradc.int64)).tolist() == [2, 2, 2]        # int64 still compiles


def test_large_small_dtype_tensors_stay_on_numpy():
    """Eager ops on big operands run compiled kernels for the compiler's dtypes only."""
    x = gradc.ones(100000, dtype=gradc.int32)
    assert (x + 1).dtype is gradc.int32 and (x + 1).sum().item() == 200000
    h = gradc.full((100000,), 0.5, dtype=gradc.float16)
    assert h.exp().dtype is gradc.float16 and abs(h.exp()[0].item() - np.exp(0.5)) < 1e-3


def test_float16_overflow_to_inf_is_silent_as_in_pytorch():
    """A float16 result or number beyond float16's range is inf without NumPy's RuntimeWarning."""
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        x = gradc.full((2,), 60000.0, dtype=gradc.float16)
        for t in (x + x, x * x, gradc.ones(2, dtype=gradc.float16) * 70000.0, gradc.tensor([1e6], dtype=gradc.float16),
                  gradc.tensor([1e6]).half()):
            assert t.dtype == gradc.float16 and np.isinf(t.numpy()).all()
