"""Eager CPU ops as compiled single-op kernels (codegen/eager_cpu.py) give the NumPy
reference's values, gradients, dtypes and fresh result tensors. The size threshold and the
warm-up count are lowered here so that small tensors take the kernel path."""
import numpy as np
import pytest

import gradc
from gradc.codegen import eager_cpu
from tests.passes.programs import BINARY, REDUCE, UNARY, random_program


@pytest.fixture
def kernels(monkeypatch):
    """Every eager op of at least one element compiles on its first call."""
    monkeypatch.setattr(eager_cpu, "MIN_ELEMENTS", 1)
    monkeypatch.setattr(eager_cpu, "POOL_MIN_ELEMENTS", 1)
    monkeypatch.setattr(eager_cpu, "WARMUP", 1)
    monkeypatch.setattr(eager_cpu, "ENABLED", True)
    eager_cpu.clear()
    yield eager_cpu
    eager_cpu.clear()


def _numpy_refs(fn, *args):
    """``fn(*args)`` with the kernel path off (the NumPy references)."""
    old = eager_cpu.ENABLED
    eager_cpu.ENABLED = False
    try:
        return fn(*args)
    finally:
        eager_cpu.ENABLED = old


def _compiled_keys():
    return [k for k, v in eager_cpu._entries.items() if not isinstance(v, (int, str))]


def _value_and_grads(program, arrays):
    ts = [gradc.tensor(a, requires_grad=True) for a in arrays]
    out = program(*ts)
    out.backward()
    return out.detach().numpy(), [t.grad.numpy() for t in ts]


@pytest.mark.parametrize("dtype,tol", [(np.float64, 1e-9), (np.float32, 1e-4)])
@pytest.mark.parametrize("seed", range(12))
def test_random_programs_match_the_numpy_references(kernels, seed, dtype, tol):
    rng = np.random.default_rng(seed)
    program, shapes = random_program(rng)
    arrays = [rng.standard_normal(s).astype(dtype) for s in shapes]
    want, want_grads = _numpy_refs(_value_and_grads, program, arrays)
    got, got_grads = _value_and_grads(program, arrays)
    assert _compiled_keys(), "no op took the kernel path"
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)
    for g, w in zip(got_grads, want_grads):
        assert g.dtype == w.dtype
        np.testing.assert_allclose(g, w, rtol=tol, atol=tol)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("fn", UNARY + REDUCE, ids=[f"unary{i}" for i in range(len(UNARY))] +
                         [f"reduce{i}" for i in range(len(REDUCE))])
def test_each_op_matches_on_a_bigger_tensor(kernels, fn, dtype):
    x = np.random.default_rng(1).standard_normal((37, 129)).astype(dtype)
    want = _numpy_refs(lambda a: fn(gradc.tensor(a)).numpy(), x)
    got = fn(gradc.tensor(x)).numpy()
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=2e-5 if dtype == np.float32 else 1e-12, atol=1e-6)


@pytest.mark.parametrize("fn", BINARY, ids=[f"binary{i}" for i in range(len(BINARY))])
def test_binary_ops_broadcast(kernels, fn):
    rng = np.random.default_rng(2)
    a, b = rng.standard_normal((31, 40)), rng.standard_normal((40,))
    want = _numpy_refs(lambda: fn(gradc.tensor(a), gradc.tensor(b)).numpy())
    got = fn(gradc.tensor(a), gradc.tensor(b)).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def test_comparisons_and_integers_keep_their_dtypes(kernels):
    a, b = gradc.arange(100.0), gradc.full((100,), 50.0)
    assert (a > b).dtype is gradc.bool and (a > b).sum().item() == 49
    i = gradc.arange(100)
    assert (i * 3).dtype is gradc.int64 and (i * 3).tolist() == [3 * k for k in range(100)]


def test_pow_bakes_a_scalar_exponent_into_the_kernel(kernels):
    x = gradc.tensor(np.linspace(0.5, 3.0, 1000))
    for e in (2, 3, 0.5, -1, 2.5):
        np.testing.assert_allclose((x ** e).numpy(), x.numpy() ** e, rtol=1e-12)
    pows = [k for k in _compiled_keys() if k[0] == "pow"]
    assert sorted(k[3] for k in pows) == [-1.0, 0.5, 2.0, 2.5, 3.0]
    y = gradc.tensor(np.full(1000, 2.0))
    np.testing.assert_allclose((x ** y).numpy(), x.numpy() ** 2, rtol=1e-12)   # a tensor exponent


def test_results_are_fresh_tensors(kernels):
    x = gradc.tensor(np.arange(1000.0))
    y = x * 2
    z = x * 2                        # the same kernel again: its pool must not hand out y's memory
    assert not np.shares_memory(y.numpy(), z.numpy())
    z.add_(1)
    assert y[3].item() == 6.0 and z[3].item() == 7.0
    v = y.numpy()[10:]               # a NumPy view of y's memory keeps it out of reuse too
    del y
    w = x * 2
    w.add_(5)
    assert v[0] == 20.0 and w[10].item() == 25.0


def test_non_contiguous_operands_stay_on_numpy(kernels):
    x = gradc.tensor(np.arange(12.0).reshape(3, 4))
    y = x.t() * 2
    assert y.tolist() == (np.arange(12.0).reshape(3, 4).T * 2).tolist()
    assert not _compiled_keys()


def test_warm_up_count_and_switch(kernels, monkeypatch):
    monkeypatch.setattr(eager_cpu, "WARMUP", 3)
    x = gradc.tensor(np.arange(100.0))
    x.exp()
    x.exp()
    assert not _compiled_keys()
    x.exp()
    assert len(_compiled_keys()) == 1
    monkeypatch.setattr(eager_cpu, "ENABLED", False)
    x.tanh()
    x.tanh()
    x.tanh()
    assert len(_compiled_keys()) == 1


def test_version_counter_and_autograd_unchanged(kernels):
    x = gradc.tensor(np.linspace(-1, 1, 500), requires_grad=True)
    y = x.exp()
    assert type(y.grad_fn).__name__ == "ExpBackward0"
    y.mul_(2)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


@pytest.mark.parametrize("fn", UNARY + REDUCE + [lambda x: x.amax(-1), lambda x: x.amin(0), lambda x: x.relu(),
                                                 lambda x: x.clamp(-1, 1), lambda x: x.abs().sqrt(),
                                                 lambda x: (x * 3).floor(), lambda x: (x * 3).ceil(),
                                                 lambda x: (x * 3).round(), lambda x: (x * 3).trunc(),
                                                 lambda x: (x * 3).frac(), lambda x: x.round(decimals=2),
                                                 lambda x: gradc.nn.functional.silu(x),
                                                 lambda x: gradc.nn.functional.leaky_relu(x, 0.3),
                                                 lambda x: x.log1p(), lambda x: x.expm1(), lambda x: x.erf(),
                                                 lambda x: gradc.nn.functional.softplus(x * 10),
                                                 lambda x: gradc.nn.functional.elu(x),
                                                 lambda x: gradc.nn.functional.logsigmoid(x * 30),
                                                 lambda x: gradc.nn.functional.gelu(x),
                                                 lambda x: gradc.nn.functional.gelu(x, approximate="tanh")],
                         ids=lambda f: "")
def test_nan_and_inf_propagate_as_in_numpy(kernels, fn):
    x = np.random.default_rng(3).standard_normal((8, 33))
    x[1, 3], x[2, 5], x[4, 0], x[5, 7] = np.nan, np.inf, -np.inf, np.nan
    want = _numpy_refs(lambda: fn(gradc.tensor(x)).numpy())
    got = fn(gradc.tensor(x)).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12, equal_nan=True)


def test_result_buffers_are_shared_by_kernels_and_bounded(kernels, monkeypatch):
    x = gradc.tensor(np.arange(1000.0))
    y = x.exp()
    ptr = y.data_ptr()
    del y
    z = x.tanh()                     # another kernel, the same result type: y's freed buffer
    assert z.data_ptr() == ptr
    np.testing.assert_allclose(z.numpy(), np.tanh(np.arange(1000.0)))
    kernels.clear()
    monkeypatch.setattr(eager_cpu, "POOL_BYTES", 2 * 8000)
    live = [x * float(k) for k in range(5)]    # five live results: only two buffers are kept
    assert eager_cpu._SharedRecycler.held == 2 * 8000
    assert [t[7].item() for t in live] == [7.0 * k for k in range(5)]


def test_threads_get_distinct_buffers(kernels):
    import threading
    x = gradc.tensor(np.linspace(0, 1, 4096))
    errors = []

    def work(k):
        for _ in range(30):
            y = x * float(k)
            if not np.allclose(y.numpy(), np.linspace(0, 1, 4096) * k):
                errors.append(k)
    threads = [threading.Thread(target=work, args=(k,)) for k in range(1, 5)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors


def test_float_to_int_casts_do_not_depend_on_size(kernels):
    """Out-of-range floats cast to int64 give NumPy's values whether or not the op is large."""
    x = gradc.tensor([1e30, float("nan"), -1e30, 2.7, -2.7] * 8)
    import warnings
    with np.errstate(all="ignore"):
        want = np.array([1e30, np.nan, -1e30, 2.7, -2.7] * 8, np.float32).astype(np.int64)
    with warnings.catch_warnings():
        warnings.simplefilter("error")          # PyTorch casts without a warning
        assert x.long().tolist() == want.tolist()
    assert not [k for k in _compiled_keys() if k[0] == "cast"]


@pytest.mark.parametrize("fn", BINARY + [lambda a, b: gradc.minimum(a, b), lambda a, b: a ** b,
                                         lambda a, b: (a > b) | (a == b)],
                         ids=lambda f: "")
def test_binary_nan_and_inf_match_numpy(kernels, fn):
    rng = np.random.default_rng(4)
    a, b = rng.standard_normal((6, 40)), rng.standard_normal((6, 40))
    a[0, :4] = [np.nan, np.inf, -np.inf, 0.0]
    b[0, :4] = [1.0, np.nan, np.inf, 0.0]
    b[1, :3] = [0.0, -0.0, np.nan]
    want = _numpy_refs(lambda: fn(gradc.tensor(a), gradc.tensor(b)).numpy())
    got = fn(gradc.tensor(a), gradc.tensor(b)).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12, equal_nan=True)


def test_broadcast_views_go_in_as_the_memory_they_repeat(kernels):
    rng = np.random.default_rng(5)
    c = gradc.tensor(rng.standard_normal((7, 1)))
    e = c.expand(7, 30)                          # stride 0 along dim 1
    w = gradc.tensor(rng.standard_normal((7, 30)))
    for fn in (lambda: e / 3.0, lambda: e * w, lambda: gradc.where(w > 0, e, w), lambda: e.sum(1),
               lambda: (e + w).exp(), lambda: gradc.tensor(2.0, dtype=gradc.float64).expand(7, 30) * w):
        want = _numpy_refs(lambda: fn().numpy())
        got = fn().numpy()
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    shapes = [k[4] for k in _compiled_keys() if k[4] is not None]
    assert ((7, 1), ()) in shapes and ((1, 1), (7, 30)) in shapes
    assert not [k for k in eager_cpu._entries if eager_cpu._entries[k] is eager_cpu._NUMPY]
    t = gradc.tensor(rng.standard_normal((30, 7))).t()   # transposed: NumPy reads it in place
    np.testing.assert_allclose((t * 2).numpy(), t.numpy() * 2)


def test_ops_with_three_operands_take_the_kernel_path_when_any_is_large(kernels, monkeypatch):
    monkeypatch.setattr(eager_cpu, "MIN_ELEMENTS", 100)
    big = gradc.tensor(np.linspace(-1, 1, 200))
    out = gradc.where(gradc.tensor(True), gradc.tensor(0.5), big)
    assert out.tolist() == [0.5] * 200
    assert [k[0] for k in _compiled_keys()] == ["where"]


def test_environment_switch():
    import os
    import subprocess
    import sys
    code = "from gradc.codegen import eager_cpu; print(eager_cpu.ENABLED)"
    for value, want in (("0", "False"), ("1", "True")):
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                             env={**os.environ, "GRADC_EAGER_KERNELS": value})
        assert out.stdout.strip() == want


def test_scatters_into_pooled_zeros(kernels):
    rng = np.random.default_rng(6)
    logits = rng.standard_normal((50, 40))
    labels = rng.integers(0, 40, 50)
    for _ in range(3):                   # later rounds reuse (and must re-zero) earlier buffers
        x = gradc.tensor(logits, requires_grad=True)
        x.gather(1, gradc.tensor(labels).unsqueeze(1)).sum().backward()
        want = np.zeros_like(logits)
        want[np.arange(50), labels] = 1.0
        np.testing.assert_array_equal(x.grad.numpy(), want)
        y = gradc.tensor(logits, requires_grad=True)
        (y[gradc.tensor(labels[:10])] * 2).sum().backward()
        want = np.zeros_like(logits)
        np.add.at(want, labels[:10], 2.0)
        np.testing.assert_array_equal(y.grad.numpy(), want)
        junk = gradc.tensor(logits) * 7.0          # leaves garbage in a pooled (50, 40) buffer
        del junk
    assert eager_cpu.zeros((3, 4), np.float32).tolist() == [[0.0] * 4] * 3


def test_large_matmul_results_come_from_the_pool(kernels):
    rng = np.random.default_rng(7)
    a, b = rng.standard_normal((20, 30)), rng.standard_normal((30, 40))
    x = gradc.tensor(a) @ gradc.tensor(b)
    ptr = x.data_ptr()
    np.testing.assert_allclose(x.numpy(), a @ b, rtol=1e-12)
    del x
    y = gradc.tensor(b.T) @ gradc.tensor(a.T)       # another product with a (40, 20) result...
    z = gradc.tensor(a) @ gradc.tensor(b)           # ...and this one takes the freed (20, 40) buffer
    assert z.data_ptr() == ptr and y.data_ptr() != ptr
    np.testing.assert_allclose(z.numpy(), a @ b, rtol=1e-12)
    v = gradc.tensor(rng.standard_normal(30)) @ gradc.tensor(b)   # 1-D operands: plain np.matmul
    assert v.shape == (40,)


def _large_trig_inputs(dtype, n):
    from tests.codegen.test_math import _log_spaced
    return _log_spaced(dtype, n, np.random.default_rng(5))[-n:]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_trig_of_large_arguments_at_the_real_size_threshold(monkeypatch, dtype):
    """Eager sin/cos/tan of MIN_ELEMENTS (512K) log-spaced arguments up to the largest finite value
    run as kernels and stay within 2 ulp of NumPy (tan 3); so do the gradients cos x and -sin x."""
    from tests.codegen.test_math import max_ulp_err
    monkeypatch.setattr(eager_cpu, "WARMUP", 1)
    monkeypatch.setattr(eager_cpu, "ENABLED", True)
    eager_cpu.clear()
    try:
        x = _large_trig_inputs(dtype, eager_cpu.MIN_ELEMENTS)
        x64 = x.astype(np.float64)
        for op, ref, dref in (("sin", np.sin, np.cos), ("cos", np.cos, lambda v: -np.sin(v)), ("tan", np.tan, None)):
            t = gradc.tensor(x, requires_grad=dref is not None)
            y = getattr(t, op)()
            assert any(k[0] == op for k in _compiled_keys()), f"{op} did not take the kernel path"
            assert max_ulp_err(y.detach().numpy(), ref(x64), dtype) <= (3 if op == "tan" else 2), op
            if dref is not None:
                y.backward(gradc.ones_like(y))
                assert max_ulp_err(t.grad.numpy(), dref(x64), dtype) <= 2, f"{op} gradient"
    finally:
        eager_cpu.clear()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("op", ["sin", "cos"])
def test_compiled_trig_of_large_arguments_and_gradients(op, dtype):
    """@gradc.compile'd sin/cos of large arguments (the issue: 1e10 gave -1e24, 1e20 -inf) and their
    compiled gradients match NumPy within 2 ulp."""
    from tests.codegen.test_math import max_ulp_err
    x = _large_trig_inputs(dtype, 4099)
    x64 = x.astype(np.float64)
    ref, dref = (np.sin, np.cos) if op == "sin" else (np.cos, lambda v: -np.sin(v))
    t = gradc.tensor(x, requires_grad=True)
    y = gradc.compile(lambda v: getattr(v, op)() + 0)(t)
    assert max_ulp_err(y.detach().numpy(), ref(x64), dtype) <= 2
    gradc.compile(lambda v: getattr(v, op)().sum())(t).backward()
    assert max_ulp_err(t.grad.numpy(), dref(x64), dtype) <= 2


def test_size_threshold_is_read_at_each_call_after_the_types_were_memoized(kernels, monkeypatch):
    # the eager op memo keeps each call's largest operand size; the threshold is compared per call
    a, b = gradc.tensor(np.arange(150.0)), gradc.tensor(np.ones(150))
    monkeypatch.setattr(eager_cpu, "MIN_ELEMENTS", 1000)
    assert (a * b).tolist() == np.arange(150.0).tolist()
    assert _compiled_keys() == []
    monkeypatch.setattr(eager_cpu, "MIN_ELEMENTS", 100)
    assert (a * b).tolist() == np.arange(150.0).tolist()
    assert [k[0] for k in _compiled_keys()] == ["mul"]


def _f32_near_multiples_and_random(n):
    """``n`` f32 arguments: those nearest the multiples of pi/2 below 2**16 and their neighbours (as
    many as fit), then random ones below 2**15."""
    from tests.codegen.test_math import f32_near_half_pi_multiples
    rng = np.random.default_rng(9)
    x = rng.permutation(f32_near_half_pi_multiples())[:n]
    return np.concatenate([x, rng.uniform(-2.0 ** 15, 2.0 ** 15, n - len(x))]).astype(np.float32)


# f32: sin and cos (and so their gradients cos x, -sin x) and tan in ulps of the exact value and of
# the correctly rounded one; tan's gradient 1 + tan(x)^2 doubles tan's relative error
_F32_TRIG_GRAD_ULPS = {"sin": (1.25, 1), "cos": (1.25, 1), "tan": (4, 4)}


def _check_f32_trig(op, x, y, grad):
    from tests.codegen.test_math import F32_TRIG_ULPS, TRIG, trig_ulps
    x64 = x.astype(np.float64)
    exact, rounded = trig_ulps(y, TRIG[op](x64), np.float32)
    bound, bound_rounded = F32_TRIG_ULPS[op]
    assert exact.max() <= bound and rounded.max() <= bound_rounded, f"{op}: {exact.max():.2f} ulp"
    dref = {"sin": np.cos, "cos": lambda v: -np.sin(v), "tan": lambda v: 1 + np.tan(v) ** 2}[op]
    exact, rounded = trig_ulps(grad, dref(x64), np.float32)
    bound, bound_rounded = _F32_TRIG_GRAD_ULPS[op]
    assert exact.max() <= bound and rounded.max() <= bound_rounded, f"{op} gradient: {exact.max():.2f} ulp"


@pytest.mark.parametrize("op", ["sin", "cos", "tan"])
def test_f32_trig_near_multiples_of_half_pi_eager(monkeypatch, op):
    """Eager f32 sin/cos/tan of MIN_ELEMENTS arguments, nearest the multiples of pi/2 below 2**16
    and random below 2**15, run as kernels (the FMA reduction with its low part: the three-part one
    was 600-1900 ulp off near k pi), and their gradients, within a few ulp of the exact values."""
    from tests.codegen.test_math import host_has_fma
    if not host_has_fma():
        pytest.skip("the f32 FMA reduction")
    monkeypatch.setattr(eager_cpu, "WARMUP", 1)
    monkeypatch.setattr(eager_cpu, "ENABLED", True)
    eager_cpu.clear()
    try:
        x = _f32_near_multiples_and_random(eager_cpu.MIN_ELEMENTS)
        t = gradc.tensor(x, requires_grad=True)
        y = getattr(t, op)()
        assert any(k[0] == op for k in _compiled_keys()), f"{op} did not take the kernel path"
        y.backward(gradc.ones_like(y))
        _check_f32_trig(op, x, y.detach().numpy(), t.grad.numpy())
    finally:
        eager_cpu.clear()


@pytest.mark.parametrize("op", ["sin", "cos", "tan"])
def test_f32_trig_near_multiples_of_half_pi_compiled(op):
    """@gradc.compile'd f32 sin/cos/tan near the multiples of pi/2, and their compiled gradients."""
    from tests.codegen.test_math import host_has_fma
    if not host_has_fma():
        pytest.skip("the f32 FMA reduction")
    x = _f32_near_multiples_and_random(100003)
    t = gradc.tensor(x, requires_grad=True)
    y = gradc.compile(lambda v: getattr(v, op)() + 0)(t)
    gradc.compile(lambda v: getattr(v, op)().sum())(t).backward()
    _check_f32_trig(op, x, y.detach().numpy(), t.grad.numpy())
