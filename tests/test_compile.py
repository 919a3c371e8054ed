"""@gradc.compile: results equal eager and the interpreter; autograd semantics are eager's."""
import random
import re
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest

import gradc
from gradc.ir.interpreter import interpret
from gradc.ir.testing import generate_program
from gradc.ir.tracer import TraceError


def seed003(inp, w1, w2, w3):
    l1 = inp * w1
    l2 = l1 + w2
    l3 = l1 * w3
    return (l2 * l3).mean()


def _leaves(dtype=gradc.float32):
    return (gradc.ones(2, 2, requires_grad=True, dtype=dtype), gradc.tensor(2.0, requires_grad=True, dtype=dtype),
            gradc.tensor(3.0, requires_grad=True, dtype=dtype), gradc.tensor(4.0, requires_grad=True, dtype=dtype))


def test_seed003_graph_compiled_matches_transcript():
    inp, w1, w2, w3 = _leaves()
    loss = gradc.compile(seed003)(inp, w1, w2, w3)
    assert repr(loss) == "tensor(40., grad_fn=<CompiledFunctionBackward>)"
    loss.backward()
    assert (w1.grad.item(), w2.grad.item(), w3.grad.item()) == (28.0, 8.0, 10.0)
    assert inp.grad.tolist() == [[14.0, 14.0], [14.0, 14.0]]


@pytest.mark.parametrize("seed", range(25))
@pytest.mark.parametrize("dtype,tol", [(gradc.float64, 1e-9), (gradc.float32, 1e-4)])
def test_random_programs_equal_eager_and_interpreter(seed, dtype, tol):
    prog = generate_program(random.Random(seed).randint)
    arrays = [np.asarray(a) for a in prog.example_inputs(seed)]
    arrays = [a.astype(dtype.np) if a.dtype.kind == "f" else a for a in arrays]
    diff = [a.dtype.kind == "f" for a in arrays]

    def loss(*xs):
        out = prog(*xs)
        outs = out if isinstance(out, (tuple, list)) else (out,)
        total = None
        for o in outs:
            if o.dtype.is_floating_point:
                s = (o * o).sum()
                total = s if total is None else total + s
        return total

    eager_in = [gradc.tensor(a, requires_grad=d) for a, d in zip(arrays, diff)]
    comp_in = [gradc.tensor(a, requires_grad=d) for a, d in zip(arrays, diff)]
    ref = loss(*eager_in)
    if ref is None or not ref.requires_grad:
        pytest.skip("program has no differentiable output")
    fn = gradc.compile(loss)
    got = fn(*comp_in)
    np.testing.assert_allclose(got.item(), ref.item(), rtol=tol, atol=tol)
    ref.backward()
    got.backward()
    for e, c in zip(eager_in, comp_in):
        if e.requires_grad and e.grad is not None:
            np.testing.assert_allclose(c.grad.numpy(), e.grad.numpy(), rtol=tol, atol=tol)
    # the interpreter runs the traced function to the same value
    spec = next(iter(fn._cache.values()))
    interp = interpret(spec.traced, arrays)[0]
    np.testing.assert_allclose(got.item(), float(interp), rtol=tol, atol=tol)


def test_mixed_eager_and_compiled_backward():
    # float64, so that compiled and eager agree to 1e-9 whatever the sums' order (in float32
    # w's gradient, a sum over rows with cancellation, differed by 4e-5 relative on one draw)
    rng = np.random.default_rng(5)
    x = gradc.tensor(rng.standard_normal((3, 4)), requires_grad=True)
    w = gradc.tensor(rng.standard_normal(4), requires_grad=True)
    f = gradc.compile(lambda a, b: (a * b).tanh())
    h = f(x * 2, w)                        # eager op before, compiled in the middle
    loss = (h.exp() + x).sum()             # eager after, and x used twice
    loss.backward()
    xe, we = x.detach().clone().requires_grad_(), w.detach().clone().requires_grad_()
    ((((xe * 2) * we).tanh()).exp() + xe).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), xe.grad.numpy(), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(w.grad.numpy(), we.grad.numpy(), rtol=1e-9, atol=1e-12)
    assert type(h.grad_fn).__name__ == "CompiledFunctionBackward"
    assert [type(n).__name__ for n, _ in h.grad_fn.next_functions] == ["MulBackward0", "AccumulateGrad"]


def test_retain_graph_error_and_success():
    inp, w1, w2, w3 = _leaves()
    f = gradc.compile(seed003)
    loss = f(inp, w1, w2, w3)
    loss.backward(retain_graph=True)
    loss.backward()
    assert w1.grad.item() == 56.0              # accumulated twice
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        loss.backward()


def test_double_backward_through_compiled_adjoint():
    x = gradc.tensor([0.5, -1.0, 2.0], dtype=gradc.float64, requires_grad=True)
    f = gradc.compile(lambda t: (t.sin() * t * t).sum())
    y = f(x)
    (g,) = gradc.autograd.grad(y, x, create_graph=True)
    (h,) = gradc.autograd.grad(g.sum(), x)
    xs = x.detach().numpy()
    np.testing.assert_allclose(g.detach().numpy(), np.cos(xs) * xs ** 2 + 2 * xs * np.sin(xs), rtol=1e-12)
    want = -np.sin(xs) * xs ** 2 + 4 * xs * np.cos(xs) + 2 * np.sin(xs)
    np.testing.assert_allclose(h.numpy(), want, rtol=1e-12)
    assert gradc.autograd.gradgradcheck(f, (x,))


def test_hooks_and_retain_grad_on_inputs_and_outputs():
    x = gradc.randn(3, requires_grad=True)
    seen = []
    x.register_hook(lambda g: seen.append(("x", g.clone())))
    f = gradc.compile(lambda t: t * 3)
    y = f(x)
    y.retain_grad()
    y.register_hook(lambda g: g * 10)          # replaces the gradient flowing into the compiled node
    y.sum().backward()
    assert y.grad.tolist() == [10.0, 10.0, 10.0]
    assert x.grad.tolist() == [30.0, 30.0, 30.0]
    assert seen[0][0] == "x" and seen[0][1].tolist() == [30.0, 30.0, 30.0]


def test_inplace_change_of_saved_input_is_caught():
    a = gradc.tensor([1.0, 3.0], requires_grad=True)
    b = a + 2
    loss = gradc.compile(lambda t: (t * t).mean())(b)
    b[0] = 1000.0
    with pytest.raises(RuntimeError, match=r"one of the variables needed for gradient computation has been "
                                           r"modified by an inplace operation: \[torch.FloatTensor \[2\]\], "
                                           r"which is output 0 of torch::autograd::CopySlices, is at version 1; expected "
                                           r"version 0 instead"):
        loss.backward()


def test_recompiles_on_shape_change_with_reason(caplog):
    f = gradc.compile(lambda x: (x * 2).sum())
    f(gradc.ones(2, 2))
    f(gradc.ones(2, 2))
    f(gradc.ones(3, 2))
    f(gradc.ones(3, 2, dtype=gradc.float64))
    lines = f.explain().splitlines()
    assert len(lines) == 3
    assert "first call" in lines[0]
    assert "argument 0 (x): shape changed from [2, 2] to [3, 2]" in lines[1]
    assert "dtype changed from float32 to float64" in lines[2]


def test_the_last_calls_specialisation_is_found_only_for_the_same_key():
    """A call with the last call's key reuses its specialisation without building the key
    (``_same_arguments``); any change of shape, dtype, requires_grad, argument count or kind,
    grad mode or default dtype still finds (or compiles) the right one."""
    def fn(x, y=None):
        return (x * 2).sum() if y is None else (x * y).sum()
    f = gradc.compile(fn)
    x = gradc.ones(2, 2)
    calls = [
        (x,), (x,), (gradc.ones(3, 2),), (gradc.ones(2, 2, dtype=gradc.float64),), (gradc.ones(2, 2, requires_grad=True),),
        (x, gradc.full((2, 2), 3.0)), (x, 3.0), (x, 4.0), (gradc.nn.Parameter(gradc.ones(2, 2)),), (x,),
    ]
    for args in calls * 2:
        want = fn(*args)
        got = f(*args)
        assert got.dtype == want.dtype and got.item() == want.item()
        assert got.requires_grad == want.requires_grad and (got.grad_fn is None) == (want.grad_fn is None)
    compiles = len(f.explain().splitlines())
    with gradc.no_grad():
        assert not f(gradc.ones(2, 2, requires_grad=True)).requires_grad
    assert f(gradc.ones(2, 2, requires_grad=True)).requires_grad
    with gradc.no_grad():
        assert not f(gradc.ones(2, 2, requires_grad=True)).requires_grad
    gradc.set_default_dtype(gradc.float64)
    try:
        f(x)
    finally:
        gradc.set_default_dtype(gradc.float32)
    f(x)
    lines = f.explain().splitlines()
    assert len(lines) == compiles + 2, lines      # one for no_grad, one for the default dtype
    assert "grad mode changed from True to False" in lines[-2]
    assert f(x, y=gradc.full((2, 2), 5.0)).item() == 20.0 and f(x, gradc.full((2, 2), 6.0)).item() == 24.0
    assert len(f.explain().splitlines()) == compiles + 2


def test_no_grad_compiles_forward_only():
    f = gradc.compile(lambda x: (x * x).sum())
    x = gradc.ones(3, requires_grad=True)
    with gradc.no_grad():
        y = f(x)
    assert not y.requires_grad and y.grad_fn is None
    spec = next(iter(f._cache.values()))
    assert not spec.wrt and not hasattr(spec, "partition")
    z = f(x)
    assert z.requires_grad and "grad mode changed" in f.explain()


def test_data_dependent_control_flow_errors_name_the_line():
    def bad(x):
        if x.sum() > 0:
            return x
        return -x
    with pytest.raises(TraceError, match=r"test_compile.py:\d+"):
        gradc.compile(bad)(gradc.ones(2))


def test_fallback_runs_eagerly_with_a_warning():
    def bad(x):
        return x * 2 if x.sum() > 0 else x
    f = gradc.compile(bad, fallback=True)
    with pytest.warns(UserWarning, match="fell back to eager"):
        y = f(gradc.ones(2))
    assert y.tolist() == [2.0, 2.0]


def test_fallback_prints_once_per_call_and_runs_a_failed_key_eagerly_from_then_on(capsys):
    """What the failed trace printed is dropped (the eager run prints it, with values); later calls
    with the same guard key run eagerly without tracing again. Other side effects of the failed
    trace (the list append) happen in both runs of the first call only."""
    calls = []

    def branchy(x):
        calls.append(len(calls))
        print("sum is", x.sum())
        return x * 2 if x.sum() > 0 else x
    f = gradc.compile(branchy, fallback=True)
    with pytest.warns(UserWarning, match="fell back to eager") as record:
        assert f(gradc.ones(2)).tolist() == [2.0, 2.0]
    assert capsys.readouterr().out == "sum is tensor(2.)\n"
    assert not [w for w in record if "printing a traced tensor" in str(w.message)]     # (dropped with the print)
    with warnings.catch_warnings():
        warnings.simplefilter("error")              # (no second warning, no trace)
        assert f(gradc.ones(2)).tolist() == [2.0, 2.0]
        assert f(-gradc.ones(2)).tolist() == [-1.0, -1.0]
    assert capsys.readouterr().out == "sum is tensor(2.)\nsum is tensor(-2.)\n"
    assert len(calls) == 4 and len(f.log) == 1
    with pytest.warns(UserWarning, match="fell back to eager"):
        f(gradc.ones(3))                            # another key: traced (and fails) once
    assert capsys.readouterr().out == "sum is tensor(3.)\n" and len(calls) == 6


def test_fallback_keeps_what_a_successful_trace_prints_and_other_threads_output(capsys):
    import threading

    def printer():
        print("from another thread")

    def fine(x):
        print("tracing", x)
        return x * 2

    def fails(x):
        t = threading.Thread(target=printer)
        t.start()
        t.join()
        return x if x.sum() > 0 else -x
    f = gradc.compile(fine, fallback=True)
    with pytest.warns(UserWarning, match="printing a traced tensor"):
        f(gradc.ones(2))
    f(gradc.ones(2))
    assert capsys.readouterr().out.count("tracing") == 1      # printed at the trace, as without fallback
    with pytest.warns(UserWarning, match="fell back to eager"):
        gradc.compile(fails, fallback=True)(gradc.ones(2))
    assert capsys.readouterr().out == "from another thread\n" * 2      # (one per run: not held back)
    assert not type(sys.stdout).__module__.startswith("gradc")


def test_fallback_of_code_that_fails_eagerly_too_raises_the_eager_error_without_a_warning():
    f = gradc.compile(lambda a, b: a + b, fallback=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")      # no "fell back" warning: eager code fails the same way
        with pytest.raises(RuntimeError, match=r"^The size of tensor a \(2\) must match the size of tensor b \(3\)"):
            f(gradc.ones(2), gradc.ones(3))


def test_printing_a_traced_tensor_warns_that_it_shows_no_values():
    def f(x):
        print(x)
        return x * 2
    with pytest.warns(UserWarning, match=r"printing a traced tensor .* \(at test_compile.py:\d+\)") as caught:
        gradc.compile(f)(gradc.ones(2))
    assert caught[0].filename == __file__


def test_outputs_that_are_views_of_inputs_are_views_as_eagerly():
    """As eager code and torch.compile: a returned view shares the input's memory (the call
    replays the view chain on the caller's tensor), an identity returns the input itself, and
    computed outputs are fresh."""
    x = gradc.ones(4)
    y, z = gradc.compile(lambda t: (t.reshape(2, 2), t * 1))(x)
    y[0, 0] = 5.0
    z[1] = 7.0
    assert x.tolist() == [5.0, 1.0, 1.0, 1.0] and y._base is x
    assert gradc.compile(lambda t: t)(x) is x
    w = gradc.ones(3, 4, requires_grad=True)
    a = w * 1
    v = gradc.compile(lambda t: t[1])(a)
    v.mul_(2)
    a.sum().backward()
    assert a[1].tolist() == [2.0] * 4 and w.grad[1].tolist() == [2.0] * 4 and w.grad[0].tolist() == [1.0] * 4


def test_options_are_validated():
    with pytest.raises(ValueError, match="memory must be one of"):
        gradc.compile(lambda x: x, memory="lots")
    with pytest.raises(TypeError, match="unknown option"):
        gradc.compile(lambda x: x, colour="red")
    with pytest.raises(ValueError, match="target must be one of auto, cpu, cuda, interp, got 'tpu'"):
        gradc.compile(lambda x: x, target="tpu")


def test_save_all_and_min_memory_agree():
    x = gradc.randn(8, 16, dtype=gradc.float64, requires_grad=True)
    w1 = gradc.randn(16, 32, dtype=gradc.float64, requires_grad=True)
    w2 = gradc.randn(32, 4, dtype=gradc.float64, requires_grad=True)

    def mlp(a, b, c):
        return ((a @ b).tanh() @ c).sum()
    grads = []
    for mem in ("save-all", "min-memory"):
        for t in (x, w1, w2):
            t.grad = None
        gradc.compile(mlp, memory=mem)(x, w1, w2).backward()
        grads.append([t.grad.numpy().copy() for t in (x, w1, w2)])
    for a, b in zip(*grads):
        np.testing.assert_allclose(a, b, rtol=1e-12)


# ---- backward="precompute" (the default for scalar losses) against backward="separate" -------------
@pytest.mark.parametrize("seed", range(12))
def test_precompute_and_separate_give_the_same_gradients(seed):
    rng = np.random.default_rng(seed)
    arrays = [rng.standard_normal((4, 5)), rng.standard_normal((5, 3)), rng.standard_normal(3)]

    def loss(x, w, b):
        return ((x @ w + b).tanh() ** 2).sum() + (x.exp() * 0.1).mean()
    grads = {}
    for mode in ("precompute", "separate"):
        ts = [gradc.tensor(a, requires_grad=True) for a in arrays]
        f = gradc.compile(loss, backward=mode)
        out = f(*ts)
        (out * 3.0).backward()                # a cotangent other than 1
        assert next(iter(f._cache.values())).precompute == (mode == "precompute")
        grads[mode] = [t.grad.numpy() for t in ts]
    for a, b in zip(grads["precompute"], grads["separate"]):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("mode", ["precompute", "separate"])
def test_retain_graph_recomputes_or_reuses_and_then_frees(mode):
    inp, w1, w2, w3 = _leaves()
    loss = gradc.compile(seed003, backward=mode)(inp, w1, w2, w3)
    loss.backward(retain_graph=True)
    w1.grad.zero_()                      # in place on the gradient handed out first
    loss.backward(retain_graph=True)
    assert w1.grad.item() == 28.0 and inp.grad.tolist() == [[28.0, 28.0], [28.0, 28.0]]
    loss.backward()
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        loss.backward()


@pytest.mark.parametrize("mode", ["precompute", "separate"])
def test_version_counter_and_hooks_in_both_modes(mode):
    x = gradc.tensor([1.0, 2.0], requires_grad=True)
    b = x * 1
    loss = gradc.compile(lambda t: (t * t).sum(), backward=mode)(b)
    loss.register_hook(lambda g: g * 10)
    loss.backward(retain_graph=True)
    assert x.grad.tolist() == [20.0, 40.0]
    b.mul_(2)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        loss.backward()


def test_outputs_and_gradients_are_new_tensors_of_their_own_dtypes_and_versions():
    """A compiled call's outputs and the gradients its backward hands the leaves are made in one
    loop (``Tensor._wrap_all``): each has the dtype, version counter and values PyTorch gives."""
    torch = pytest.importorskip("torch")

    def fn(mod, x, w, v):
        y = x * w
        return (y * v).sum(), y > 1.0, mod.argmax(), (v.double() * 2.0)

    def check(got, want):
        assert str(got.dtype).split(".")[1] == str(want.dtype).split(".")[1]
        np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-6)

    arrays = [np.array([3.0, 1.0, 2.0], np.float32), np.array([0.5, 2.0, 1.5], np.float32),
              np.array(3.0, np.float32), np.array([1.0, -1.0, 2.0], np.float32)]
    ours = [gradc.tensor(a, requires_grad=i > 1) for i, a in enumerate(arrays)]
    theirs = [torch.tensor(a, requires_grad=i > 1) for i, a in enumerate(arrays)]
    f = gradc.compile(fn)
    for _ in range(2):
        for t in ours + theirs:
            t.grad = None
        got, want = f(*ours), fn(*theirs)
        for g, w in zip(got, want):
            check(g, w)
            assert g.requires_grad == w.requires_grad and g._version == 0
        got[0].backward()
        want[0].backward()
        for a, b in zip(ours[2:], theirs[2:]):
            check(a.grad, b.grad)
        got[1].logical_not_()                     # each its own counter
        ours[2].grad.add_(1.0)
        assert got[1]._version == 1 and ours[2].grad._version == 1
        assert all(t._version == 0 for t in (got[0], got[2], got[3], ours[3].grad))

    loss = gradc.compile(lambda a, b: (a * b).sum())       # its gradients computed by the forward
    a = gradc.tensor([1.0, 2.0], requires_grad=True)
    b = gradc.tensor([3.0, 4.0], dtype=gradc.float64, requires_grad=True)
    for _ in range(2):
        a.grad = b.grad = None
        loss(a, b).backward()
        assert next(iter(loss._cache.values())).precompute
        assert a.grad.dtype == gradc.float32 and b.grad.dtype == gradc.float64
        assert a.grad.tolist() == [3.0, 4.0] and b.grad.tolist() == [1.0, 2.0]
        a.grad.mul_(2.0)
        assert a.grad._version == 1 and b.grad._version == 0


def test_leaf_hooks_registered_after_compiled_steps_run_in_a_fresh_process():
    """Until a hook is registered on some leaf, the engine does not look for one on each leaf
    of a compiled call's node (``node.leaf_hooks_seen``): every way of registering one turns
    the full check on (in a fresh process, where none was registered before)."""
    code = textwrap.dedent("""
        import gradc
        from gradc.autograd.node import leaf_hooks_seen
        f = gradc.compile(lambda a, b: (a * b).sum())
        x, y = gradc.tensor([1.0, 2.0], requires_grad=True), gradc.tensor([3.0, 4.0], requires_grad=True)
        seen = []
        def step():
            x.grad = y.grad = None
            f(x, y).backward()
            return x.grad.tolist(), y.grad.tolist()
        assert step() == ([3.0, 4.0], [1.0, 2.0]) and not leaf_hooks_seen[0]
        h = x.register_hook(lambda g: g * 10)
        assert leaf_hooks_seen[0] and step() == ([30.0, 40.0], [1.0, 2.0])
        h.remove()
        assert step() == ([3.0, 4.0], [1.0, 2.0])
        leaf_hooks_seen[0] = False      # (as in a fresh process: the node hooks below turn it on again)
        y.register_post_accumulate_grad_hook(lambda t: seen.append(t.grad.tolist()))
        assert leaf_hooks_seen[0] and step() == ([3.0, 4.0], [1.0, 2.0]) and seen == [[1.0, 2.0]]
        leaf_hooks_seen[0] = False
        called = []
        x._grad_edge()[0].register_hook(lambda grad_inputs, grad_outputs: called.append(x.grad.tolist()))
        assert leaf_hooks_seen[0] and step() == ([3.0, 4.0], [1.0, 2.0]) and called == [[3.0, 4.0]]
        print("ok")
    """)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr[-2000:]


def test_precompute_needs_a_scalar_output():
    with pytest.raises(ValueError, match="must return one 0-d"):
        gradc.compile(lambda t: t * 2, backward="precompute")(gradc.ones(2, requires_grad=True))
    with pytest.raises(ValueError, match="backward must be one of"):
        gradc.compile(lambda t: t, backward="later")


def test_keyword_arguments_and_defaults():
    f = gradc.compile(lambda a, scale=2.0: (a * scale).sum())
    x = gradc.ones(3, requires_grad=True)
    assert f(x).item() == 6.0 and f(x, scale=3.0).item() == 9.0 and f(a=x).item() == 6.0
    with pytest.raises(TypeError, match="unexpected keyword argument"):
        f(x, colour=1)
    with pytest.raises(TypeError, match="multiple values for argument 'a'"):
        f(x, a=x)
    with pytest.raises(TypeError, match="missing a required argument: 'a'"):
        f(scale=2.0)
    assert f(scale=4.0, a=x).item() == 12.0             # any order, as Python binds them

    g = gradc.compile(lambda *xs, k=1.0: sum(t.sum() for t in xs) * k)   # not plain: inspect binds
    assert g(x, x, k=2.0).item() == 12.0 and g(x, x).item() == 6.0
    assert g(x, x, k=3.0).item() == 18.0                 # a keyword-only scalar is a guard
    w = gradc.full((3,), 2.0, requires_grad=True)
    h = gradc.compile(lambda a, *, weight=None: (a * (1 if weight is None else weight)).sum())
    out = h(x, weight=w)
    out.backward()
    assert out.item() == 6.0 and w.grad.tolist() == [1.0, 1.0, 1.0]   # a keyword-only tensor is an input
    assert h(x).item() == 3.0
    with pytest.raises(TypeError, match=r"\*\*kwargs are not supported"):
        gradc.compile(lambda a, **kw: a.sum())(x, b=1)


def test_shape_errors_in_compiled_code_name_the_line():
    with pytest.raises(gradc.ShapeError, match=r"must match the size of tensor b \(4\).*at test_compile.py:\d+"):
        gradc.compile(lambda a, b: (a + b).sum())(gradc.ones(2, 3), gradc.ones(4))


_BAD_CALLS = [     # (name, function of the module (gradc or torch), its arguments)
    ("reshape", lambda m, a: a.reshape(4, 2), lambda m: [m.ones(2, 3)]),
    ("view", lambda m, a: a.t().view(6), lambda m: [m.ones(2, 3)]),
    ("expand", lambda m, a: a.expand(4, 5), lambda m: [m.ones(2, 3)]),
    ("cat dim", lambda m, a, b: m.cat([a, b], 5), lambda m: [m.ones(2, 3), m.ones(2, 3)]),
    ("stack dim", lambda m, a, b: m.stack([a, b], 4), lambda m: [m.ones(2, 3), m.ones(2, 3)]),
    ("bmm", lambda m, a, b: a.bmm(b), lambda m: [m.ones(2, 2, 3), m.ones(3, 4, 5)]),
    ("matmul 0-d", lambda m, a, b: a @ b, lambda m: [m.ones(()), m.ones(3)]),
    ("matmul dtypes", lambda m, a, b: a @ b, lambda m: [m.ones(2, 2), m.ones(2, 2, dtype=m.float64)]),
    ("index_select dim", lambda m, a, i: a.index_select(3, i), lambda m: [m.ones(2, 3), m.tensor([0, 1])]),
    ("gather dtype", lambda m, a, i: a.gather(1, i), lambda m: [m.ones(2, 3), m.zeros(2, 1)]),
    ("gather size", lambda m, a, i: a.gather(1, i), lambda m: [m.ones(2, 3), m.zeros(5, 1, dtype=m.int64)]),
    ("scatter dtype", lambda m, a, i, s: a.scatter(1, i, s),
     lambda m: [m.ones(2, 3), m.tensor([[0]]), m.ones(1, 1, dtype=m.float64)]),
    ("scatter_add size", lambda m, a, i, s: a.scatter_add(1, i, s),
     lambda m: [m.ones(2, 3), m.tensor([[0, 1, 2, 0]]), m.ones(1, 2)]),
    ("split 0", lambda m, a: a.split(0, 1), lambda m: [m.ones(2, 3)]),
    ("where condition", lambda m, c, a: m.where(c, a, a), lambda m: [m.ones(2, 3), m.ones(2, 3)]),
    ("conv2d channels", lambda m, x, w: m.nn.functional.conv2d(x, w), lambda m: [m.ones(1, 3, 5, 5), m.ones(2, 4, 3, 3)]),
    ("cross_entropy batch", lambda m, x, t: m.nn.functional.cross_entropy(x, t),
     lambda m: [m.ones(4, 3), m.tensor([0, 1])]),
    ("sum dim", lambda m, a: a.sum(3), lambda m: [m.ones(2, 3)]),
    ("neg bool", lambda m, a: -a, lambda m: [m.ones(2, dtype=m.bool)]),
]


@pytest.mark.parametrize("name,fn,make", _BAD_CALLS, ids=[c[0] for c in _BAD_CALLS])
def test_errors_of_the_tensor_api_under_compile_are_pytorchs_and_name_the_line(name, fn, make):
    """A check of the tensor API that fails while tracing raises PyTorch's exception (type and
    message), with the user's line added: never a bare message with no place in the user's code."""
    torch = pytest.importorskip("torch")
    with pytest.raises(Exception) as want:
        fn(torch, *make(torch))
    with pytest.raises(type(want.value)) as got:
        gradc.compile(lambda *a: fn(gradc, *a))(*make(gradc))
    message = str(got.value)
    assert message.startswith(str(want.value)), message
    assert re.search(r"\(at test_compile.py:\d+\)$", message), message


def test_errors_of_compiled_steps_at_run_time_name_the_line():
    """An index out of bounds found when the compiled code runs (no values while tracing) names
    the user's line of the op that failed."""
    f = gradc.compile(lambda a, i: a.gather(1, i))
    assert f(gradc.ones(2, 3), gradc.tensor([[0], [2]])).tolist() == [[1.0], [1.0]]
    with pytest.raises(RuntimeError, match=r"index 7 is out of bounds for dimension 1 with size 3 "
                                           r"\(at test_compile.py:\d+\)"):
        f(gradc.ones(2, 3), gradc.tensor([[0], [7]]))


def test_the_users_own_exceptions_pass_through_unchanged():
    def own(x):
        raise ValueError("my own message")
    with pytest.raises(ValueError) as e:
        gradc.compile(own)(gradc.ones(2))
    assert str(e.value) == "my own message"


def test_boolean_mask_indexing_is_a_trace_error_naming_the_line():
    with pytest.raises(TraceError, match=r"^indexing with a boolean mask .* \(at test_compile.py:\d+\)$"):
        gradc.compile(lambda x: x[x > 0])(gradc.ones(3))


def test_compile_refuses_what_is_not_callable():
    with pytest.raises(TypeError, match="gradc.compile: expected a function .*, got int"):
        gradc.compile(3)
    with pytest.raises(TypeError, match="got str"):
        gradc.compile(memory="save-all")("loss")


@pytest.mark.parametrize("op", ["nonzero", "unique", "multinomial", "bincount"])
def test_ops_whose_results_depend_on_values_are_trace_errors_naming_the_line(op):
    calls = {"nonzero": lambda x: x.nonzero(), "unique": lambda x: x.unique(),
             "multinomial": lambda x: gradc.multinomial(x, 1), "bincount": lambda x: x.long().bincount()}
    with pytest.raises(TraceError, match=rf"^(gradc\.)?{op}.*@gradc.compile.* \(at test_compile.py:\d+\)$"):
        gradc.compile(calls[op])(gradc.ones(3))
    with pytest.warns(UserWarning, match="fell back to eager mode"):
        gradc.compile(calls[op], fallback=True)(gradc.ones(3))


@pytest.mark.parametrize("result,says", [
    (lambda x: None, "got None$"),
    (lambda x: {"y": None}, "got a dict$"),
    (lambda x: (x, object()), "got an object as output 1$"),
    (lambda x: (y for y in [x]), r"got a generator \(generators cannot be compiled: return tensors\)$"),
])
def test_outputs_that_are_not_tensors_are_refused_naming_the_function(result, says):
    with pytest.raises(TraceError, match=r"^<lambda> \(defined at test_compile.py:\d+\) returns a value the "
                                         r"compiler cannot output: .*" + says) as e:
        gradc.compile(result)(gradc.ones(2))
    assert isinstance(e.value, TypeError)


def test_generator_and_async_functions_are_refused_clearly():
    def gen(x):
        yield x

    async def coro(x):
        return x
    with pytest.raises(TraceError, match=r"^gen \(defined at .*got a generator"):
        gradc.compile(gen)(gradc.ones(2))
    with pytest.raises(TraceError, match=r"^coro \(defined at .*got a coroutine \(an async function"):
        gradc.compile(coro)(gradc.ones(2))


@pytest.mark.parametrize("call", [
    lambda x: x * [1.0, 2.0],                       # list * tensor: the tensor as a repeat count
    lambda x: x if x > 0 else -x,                   # bool() of two elements
    lambda x: x * float(x),
    lambda x: x * x.item(),
    lambda x: [x, x][x.sum()],                      # a float tensor as an index
    lambda x: (f"{x:.2f}", x)[1],
], ids=["index", "bool", "float", "item", "float-index", "format"])
def test_conversions_that_fail_whatever_the_values_raise_the_eager_error(call):
    """Where eager code fails because of a tensor's shape or dtype, not its values, compiled code
    raises the same error (with the line), not the data-dependent TraceError."""
    x = gradc.ones(2)
    with pytest.raises(Exception) as eager:
        call(x)
    with pytest.raises(type(eager.value)) as compiled:
        gradc.compile(call)(x)
    assert not isinstance(compiled.value, TraceError)
    assert re.fullmatch(re.escape(str(eager.value)) + r" \(at test_compile.py:\d+\)", str(compiled.value))


def test_numpy_scalars_on_the_left_of_a_traced_tensor_work_as_eagerly():
    def f(x):
        return np.float64(2) * x + np.sqrt(2.0) - np.float32(3) / x + np.int64(2) ** x
    x = gradc.tensor([1.0, 2.0])
    np.testing.assert_allclose(gradc.compile(f)(x).numpy(), f(x).numpy(), rtol=1e-6)
    with pytest.raises(TypeError, match=r"unsupported operand type\(s\) for \*: 'numpy.ndarray'"):
        gradc.compile(lambda x: np.ones(2) * x)(x)


def test_complex_scalars_are_a_clear_type_error_eagerly_and_compiled():
    for f in (lambda x: x * 1j, gradc.compile(lambda x: 1j + x)):
        with pytest.raises(TypeError, match=r"^gradc has no complex dtypes: cannot use the complex number 1j"):
            f(gradc.ones(2))


def test_layout_queries_inside_compiled_code_answer_as_eagerly():
    def f(x):
        t = x.t()
        return x * x.stride(0) + t.stride(1) + t.is_contiguous() + x.is_contiguous() + x.element_size() + x.nbytes
    x = gradc.ones(2, 3)
    assert gradc.compile(f)(x).tolist() == f(x).tolist()


@pytest.mark.parametrize("what,call", [
    ("Tensor.data_ptr", lambda x: x * x.data_ptr()),
    ("Tensor.untyped_storage", lambda x: (x.untyped_storage(), x)[1]),
    ("Tensor.resize_", lambda x: x.resize_(6)),
    ("Tensor.cuda", lambda x: x.cuda()),
    ("formatting with '.2f'", lambda x: (f"{x.sum():.2f}", x)[1]),
    ("copy.deepcopy", lambda x: __import__("copy").deepcopy(x)),
    ("pickling", lambda x: (__import__("pickle").dumps(x), x)[1]),
])
def test_eager_only_tensor_api_inside_compiled_code_is_a_trace_error(what, call):
    with pytest.raises(TraceError, match=rf"^{re.escape(what)}.* at test_compile.py:\d+"):
        gradc.compile(call)(gradc.ones(2, 3))


def test_gradc_tensor_of_traced_tensors_copies_without_history_as_eagerly():
    x = gradc.tensor([1.0, 2.0, 3.0], requires_grad=True)
    f = gradc.compile(lambda x: gradc.tensor([x.sum(), x.max(), 2.0]) * x)
    assert f(x).tolist() == [6.0, 6.0, 6.0]
    assert not gradc.compile(lambda x: gradc.tensor([x.sum(), x.max()]))(x).requires_grad
    with pytest.warns(UserWarning, match="To copy construct from a tensor"):
        y = gradc.compile(lambda x: gradc.tensor(x) * x)(x)
    y.sum().backward()
    assert x.grad.tolist() == [1.0, 2.0, 3.0]       # the copy is a constant to autograd, as eagerly
    assert gradc.compile(lambda x: gradc.as_tensor(x, dtype=gradc.float64) * 2)(x).dtype is gradc.float64
    with pytest.raises(ValueError, match="only one element tensors can be converted to Python scalars"):
        gradc.compile(lambda x: gradc.tensor([x, x]))(x)


@pytest.mark.parametrize("shape", [(2, 3), (4, 1, 3), (1, 3)])
def test_expand_of_an_input_that_requires_grad_compiles(shape, compiled_vs_eager):
    """expand's VJP sums to the input's size and views the sum (sum_to_size): a view of an IR
    value of the autodiff pass, whose layout is row-major (was an AttributeError on _strides)."""
    weights = np.arange(np.prod(shape), dtype=float).reshape(shape)
    compiled_vs_eager(lambda x: (x.expand(*shape) * gradc.tensor(weights)).sum(), np.array([0.5, -1.0, 2.0]))


@pytest.mark.parametrize("dtype", [gradc.float32, gradc.float64])
def test_rounding_ops_compiled_equal_eager(dtype, compiled_vs_eager):
    def f(x):
        y = x * 3
        return (y.floor() * x + y.ceil() * 2 + y.round() * x + y.trunc() + y.frac() * x + y.round(decimals=1)).sum()
    compiled_vs_eager(f, np.random.default_rng(8).standard_normal((7, 9)), dtype=dtype)


@pytest.mark.parametrize("dtype", [gradc.float32, gradc.float64])
def test_smooth_activations_compiled_equal_eager(dtype, compiled_vs_eager):
    """log1p, expm1, erf, softplus, elu and gelu lowered into one fused kernel, forward and backward."""
    F = gradc.nn.functional

    def f(x):
        y = x * 3
        s = (y.abs().log1p() + y.expm1() * 0.1 + y.erf() + F.softplus(y) + F.softplus(y, beta=2.0, threshold=4.0)
             + F.elu(y, 0.5) + F.gelu(y) * x + F.gelu(y, approximate="tanh") + F.logsigmoid(y * 5))
        return (s * x).sum()
    compiled = compiled_vs_eager(f, np.random.default_rng(10).standard_normal((7, 9)), dtype=dtype)
    fused = [op for op in compiled.ir().precomputed.body.ops if op.name == "gradc.fused"]
    assert fused and all(k.name.startswith("fused_") for k in compiled.ir().backend.kernels)


@pytest.mark.parametrize("dtype", [gradc.float32, gradc.float64])
def test_trigonometry_compiled_equal_eager(dtype, compiled_vs_eager):
    def f(x, y):
        u = x / (x.abs() + 1)
        s = (x.tan() + x.atan() + gradc.atan2(x, y) + u.asin() + u.acos() + x.sinh() + y.cosh() + x.asinh()
             + (y.abs() + 1.5).acosh() + u.atanh() + y.log2() + y.log10() + x.exp2())
        return (s * x).sum()
    rng = np.random.default_rng(12)
    compiled_vs_eager(f, rng.uniform(-1.2, 1.2, (6, 7)), rng.uniform(0.5, 2, 7), dtype=dtype,
                      rtol=2e-4 if dtype is gradc.float32 else None)


def test_cumsum_compiled_equal_eager(compiled_vs_eager):
    """cumsum has no kernel lowering: a NumPy step between fused kernels, forward and backward
    (its VJP is the reversed running sum)."""
    def f(x, w):
        return ((x * w).cumsum(1).tanh() ** 2).mean() + x.cumsum(0).sum()
    rng = np.random.default_rng(11)
    compiled = compiled_vs_eager(f, rng.standard_normal((5, 6)), rng.standard_normal(6), rtol=1e-12)
    names = [op.name for op in compiled.ir().precomputed.body.ops]
    assert "gradc.cumsum" in names and "gradc.fused" in names


def test_cumprod_compiled_equal_eager(compiled_vs_eager):
    """cumprod is a NumPy step too; its gradient (zeros in a slice included) is table ops."""
    def f(x, w):
        return ((x * w).cumprod(1) ** 2).sum() + x.relu().cumprod(0).sum()
    rng = np.random.default_rng(12)
    x = rng.standard_normal((5, 6))
    x[1, 2] = x[3, 0] = 0.0
    compiled_vs_eager(f, x, rng.standard_normal(6), rtol=1e-12)


def test_erfinv_compiled_equal_eager(compiled_vs_eager):
    """erfinv has no kernel lowering either: a NumPy step between fused kernels."""
    rng = np.random.default_rng(13)
    compiled_vs_eager(lambda x: ((x.tanh() * 0.9).erfinv() ** 2).sum(), rng.standard_normal((4, 5)), rtol=1e-12)


def test_sort_and_topk_compiled_equal_eager(compiled_vs_eager):
    """sort and topk are NumPy steps in compiled code; their gradients scatter back to the inputs."""
    def f(x):
        top = x.topk(3, dim=1).values
        return (top.tanh() ** 2).sum() + (x.sort(0, descending=True).values * x).sum()
    compiled_vs_eager(f, np.random.default_rng(13).permutation(24).reshape(4, 6) * 0.1, rtol=1e-12)


def test_sort_nan_and_ties_order():
    """NaN sorts as the largest value; ties keep their order (stable) both ways."""
    x = gradc.tensor([1.0, float("nan"), 3.0, 1.0, -2.0])
    assert x.sort().indices.tolist() == [4, 0, 3, 2, 1]
    assert x.sort(descending=True).indices.tolist() == [1, 2, 0, 3, 4]
    with pytest.raises(RuntimeError, match="selected index k out of range"):
        x.topk(6)


def test_remainder_fmod_floor_divide_compiled_equal_eager(compiled_vs_eager):
    """They are NumPy steps in compiled code (no lowering); gradients flow through % and fmod."""
    def f(x, y):
        return ((x % y) * x + gradc.fmod(x, y) * y).sum() + (x.detach() // y.detach()).sum()
    rng = np.random.default_rng(9)
    compiled_vs_eager(f, rng.standard_normal((5, 4)) * 5, rng.standard_normal(4) + 3, rtol=1e-12)


def test_captured_parameters_are_arguments_not_constants():
    """A compiled loss that reaches a module through a closure (the usual training loop): the
    parameters become implicit arguments, so the compiled function sees each optimizer step
    without recompiling, gradients reach them exactly as eagerly, and an eager op on a
    parameter inside the function (W * W) is traced, not computed once at trace time."""
    rng = np.random.default_rng(4)
    model = gradc.nn.Sequential(gradc.nn.Linear(3, 4), gradc.nn.Tanh(), gradc.nn.Linear(4, 1)).double()
    W = gradc.nn.Parameter(gradc.tensor(rng.standard_normal((3, 3))))
    x = gradc.tensor(rng.standard_normal((5, 3)))
    loss = gradc.compile(lambda x: (model(x @ (W * W)) ** 2).mean())
    opt = gradc.optim.SGD(list(model.parameters()) + [W], lr=0.1)
    for _ in range(3):
        opt.zero_grad()
        got = loss(x)
        got.backward()
        compiled_grads = [p.grad.numpy().copy() for p in opt.param_groups[0]["params"]]
        opt.zero_grad()
        want = (model(x @ (W * W)) ** 2).mean()
        want.backward()
        assert got.item() == pytest.approx(want.item(), rel=1e-12)
        for c, p in zip(compiled_grads, opt.param_groups[0]["params"]):
            np.testing.assert_allclose(c, p.grad.numpy(), rtol=1e-10, atol=1e-14)
        opt.step()
    assert len(loss.log) == 1
    assert any(type(n).__name__ == "AccumulateGrad" for n, _ in got.grad_fn.next_functions)
    traced = str(loss.ir().traced)
    assert "%captured0" in traced and "gradc.mul %captured" in traced
    assert "shape = [3, 3]" not in traced and "shape = [4, 3]" not in traced      # no parameter baked in


def test_captured_tensor_changes_recompile_with_a_reason():
    lin = gradc.nn.Linear(3, 2)
    scale = gradc.tensor(2.0)                      # 0-d: compiled in as a constant, guarded
    f = gradc.compile(lambda x: (lin(x) * scale).sum())
    x = gradc.ones(4, 3)
    f(x)
    lin.requires_grad_(False)
    f(x)
    assert "captured tensor 0 (lin.weight): requires_grad changed from True to False" in f.explain()
    scale.add_(1.0)
    assert f(x).item() == pytest.approx((lin(x) * 3.0).sum().item(), rel=1e-6)
    assert "a captured one-element tensor (compiled in as a constant) was modified in place" in f.explain()


def test_rebound_parameter_is_read_afresh_and_gets_the_gradient():
    """``model[0].weight = nn.Parameter(...)`` after compiling: the compiled loss reads the new
    parameter (as eager code would), without recompiling when its type is unchanged, and the
    gradient goes to the new parameter, not the old one."""
    rng = np.random.default_rng(8)
    model = gradc.nn.Sequential(gradc.nn.Linear(3, 4), gradc.nn.Tanh(), gradc.nn.Linear(4, 1)).double()
    x = gradc.tensor(rng.standard_normal((5, 3)))
    loss = gradc.compile(lambda x: (model(x) ** 2).mean())
    loss(x).backward()
    old = model[0].weight
    old_grad = old.grad.numpy().copy()
    model[0].weight = gradc.nn.Parameter(gradc.tensor(rng.standard_normal((4, 3))))
    got = loss(x)
    got.backward()
    want = (model(x) ** 2).mean()
    assert got.item() == pytest.approx(want.item(), rel=1e-12)
    new_grad = model[0].weight.grad.numpy().copy()
    model[0].weight.grad = None
    want.backward()
    np.testing.assert_allclose(new_grad, model[0].weight.grad.numpy(), rtol=1e-10)
    np.testing.assert_array_equal(old.grad.numpy(), old_grad)          # the old one got nothing more
    assert len(loss.log) == 1
    model[0].weight = gradc.nn.Parameter(gradc.tensor(rng.standard_normal((4, 3))).float())
    with pytest.raises(RuntimeError, match="expected m1 and m2 to have the same dtype"):   # as eagerly
        loss(x)
    assert "captured tensor 0 (model[0].weight): dtype changed from float64 to float32" in loss.explain()


def test_rebound_global_and_constant_are_seen():
    """A global rebound to a new module, and a captured one-element tensor (compiled in as a constant)
    rebound to another tensor: the next call follows both."""
    ns = {"gradc": gradc}
    exec("net = gradc.nn.Linear(2, 1)\nscale = gradc.tensor(2.0)\n"
         "def loss(x):\n    return (net(x) * scale).sum()\n", ns)
    f = gradc.compile(ns["loss"])
    x = gradc.ones(3, 2)
    f(x)
    ns["net"] = gradc.nn.Linear(2, 1)
    assert f(x).item() == pytest.approx((ns["net"](x) * 2.0).sum().item(), rel=1e-6)
    assert len(f.log) == 1
    ns["scale"] = gradc.tensor(5.0)
    assert f(x).item() == pytest.approx((ns["net"](x) * 5.0).sum().item(), rel=1e-6)
    assert "a captured one-element tensor (compiled in as a constant) was rebound: scale is another tensor" in f.explain()


def test_module_mode_is_guarded_and_each_mode_keeps_its_specialisation():
    """model.train()/model.eval() after compiling: the mode of every module called in the trace
    is guarded (dropout, batch statistics depend on it); switching back reuses the earlier
    specialisation instead of compiling again."""
    rng = np.random.default_rng(9)
    model = gradc.nn.Sequential(gradc.nn.Linear(3, 3), gradc.nn.BatchNorm1d(3)).double()
    f = gradc.compile(lambda x: model(x))
    x = gradc.tensor(rng.standard_normal((6, 3)))
    model.eval()
    np.testing.assert_allclose(f(x).detach().numpy(), model(x).detach().numpy(), rtol=1e-12)
    model.train()
    got = f(x)
    model.eval()                    # the eager reference must not update the running stats twice
    assert "model.training changed from False to True" in f.explain()
    np.testing.assert_allclose(got.detach().numpy(), gradc.nn.functional.batch_norm(
        model[0](x), None, None, model[1].weight, model[1].bias, training=True).detach().numpy(), rtol=1e-12)
    for mode in (True, False, True, False):
        model.train(mode)
        f(x)
    assert len(f.log) == 2


def test_inplace_writes_to_outside_tensors_happen_at_every_call():
    """``steps.add_(1)`` and ``ema.mul_(0.9).add_(...)`` on tensors from outside the compiled
    function (under no_grad, as a module updates its buffers): each call carries the writes
    out, the trace after the write reads the new value, and a captured 0-d counter becomes an
    argument (no recompile as it changes).  The write bumps the tensor's version."""
    steps = gradc.tensor(0)
    ema = gradc.zeros(3, dtype=gradc.float64)

    def f(x):
        with gradc.no_grad():
            steps.add_(1)
            ema.mul_(0.9).add_(x.detach() * 0.1)
        return (x * ema).sum() + steps

    cf = gradc.compile(f)
    want_ema = np.zeros(3)
    for k in range(1, 4):
        x = gradc.tensor([1.0, 2.0, float(k)], dtype=gradc.float64, requires_grad=True)
        v0 = ema._version
        out = cf(x)
        want_ema = 0.9 * want_ema + 0.1 * x.detach().numpy()
        np.testing.assert_allclose(ema.numpy(), want_ema, rtol=1e-14)
        assert steps.item() == k and ema._version > v0
        assert out.item() == pytest.approx(float(x.detach().numpy() @ want_ema) + k, rel=1e-12)
        out.backward()
        np.testing.assert_allclose(x.grad.numpy(), want_ema, rtol=1e-14)
    assert len(cf.log) == 1
    w = gradc.nn.Parameter(gradc.ones(3))
    g = gradc.compile(lambda x: w.add_(x))
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place"):
        g(gradc.ones(3))


def test_inplace_into_a_tensor_made_in_the_function_is_read_back():
    def f(x):
        buf = gradc.zeros(3, dtype=gradc.float64)
        buf.add_(x)
        return (buf * 2).sum()
    x = gradc.tensor([1.0, 2.0, 3.0], requires_grad=True)
    out = gradc.compile(f)(x)
    assert out.item() == 12.0
    out.backward()
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 2.0, 2.0])


def test_random_factories_in_compiled_code_draw_at_every_call():
    """``gradc.randn_like``/``gradc.rand`` inside a compiled function (the reparameterisation
    trick) become draws in the IR: the same numbers as eager code under the same seed, new ones
    at each call, and gradients through them as eagerly."""
    def sample(mu, log_std):
        eps = gradc.randn_like(mu)
        return ((mu + eps * log_std.exp()) ** 2).sum() + gradc.rand(3, dtype=gradc.float64).sum()

    f = gradc.compile(sample)
    rng = np.random.default_rng(10)
    mu_v, ls_v = rng.standard_normal(4), rng.standard_normal(4)
    got = []
    for run in (f, sample):
        gradc.manual_seed(5)
        mu, ls = (gradc.tensor(v, requires_grad=True) for v in (mu_v, ls_v))
        out = run(mu, ls)
        out.backward()
        got.append([out.item(), mu.grad.numpy(), ls.grad.numpy()])
    for c, e in zip(*got):
        np.testing.assert_allclose(c, e, rtol=1e-12)
    traced = str(f.ir().traced)
    assert "gradc.randn_like" in traced and "gradc.rand_like" in traced
    mu, ls = (gradc.tensor(v) for v in (mu_v, ls_v))
    assert f(mu, ls).item() != f(mu, ls).item()


def test_inplace_sampling_in_compiled_code_draws_at_every_call():
    """``noise.normal_()`` on an outside buffer and ``empty(...).uniform_()`` inside a compiled
    function: draws in the IR with eager's stream (same seed, same numbers, and the buffer holds
    this call's noise afterwards), new numbers at every call."""
    noise = gradc.zeros(4, dtype=gradc.float64)

    def f(x):
        with gradc.no_grad():
            noise.normal_(0.0, 0.1)
        u = gradc.empty(4, dtype=gradc.float64).uniform_(-1, 1)
        keep = gradc.empty(4, dtype=gradc.float64).bernoulli_(0.5)
        return ((x + noise) ** 2 * keep).sum() + u.sum()

    cf = gradc.compile(f)
    got = []
    for run in (cf, f):
        gradc.manual_seed(3)
        x = gradc.ones(4, dtype=gradc.float64, requires_grad=True)
        out = run(x)
        out.backward()
        got.append([out.item(), noise.numpy().copy(), x.grad.numpy()])
    for c, e in zip(*got):
        np.testing.assert_allclose(c, e, rtol=1e-13)
    first = noise.numpy().copy()
    cf(gradc.ones(4, dtype=gradc.float64))
    assert not np.array_equal(first, noise.numpy())


def test_compiled_optimizer_step_reads_each_steps_gradient():
    """A compiled SGD step (``p.sub_(p.grad * lr)`` under no_grad) reads ``p.grad``, a new tensor
    after every backward: the access path ends in ``.grad``, so each step uses its own gradient;
    a one-element gradient (baked in as a constant at first) is seen rebound once and is an
    argument from the recompile on; with ``p.grad = None`` the retrace fails as eager code does."""
    rng = np.random.default_rng(14)
    lin = gradc.nn.Linear(3, 1).double()
    x, y = gradc.tensor(rng.standard_normal((5, 3))), gradc.tensor(rng.standard_normal((5, 1)))
    loss = gradc.compile(lambda: ((lin(x) - y) ** 2).mean())

    @gradc.compile
    def sgd_step():
        with gradc.no_grad():
            for p in lin.parameters():
                p.sub_(p.grad * 0.1)
        return lin.weight.sum()

    for _ in range(4):
        lin.zero_grad()
        loss().backward()
        want = [(p.detach() - p.grad * 0.1).numpy() for p in lin.parameters()]
        sgd_step()
        for p, w in zip(lin.parameters(), want):
            np.testing.assert_allclose(p.detach().numpy(), w, rtol=1e-14)
    assert len(sgd_step.log) == 2 and "lin.bias.grad is another tensor" in sgd_step.log[1]
    lin.zero_grad()
    with pytest.raises(TypeError):
        sgd_step()
    assert "could not compile sgd_step (captured tensor 0 (lin.weight.grad) is no longer a tensor)" in \
        sgd_step.explain()


def test_python_scalars_the_function_reads_are_guarded():
    """A global or closure number read by the function (or by a user function it calls) was baked
    into the trace: changing it recompiles with the name in explain(), changing it back reuses
    the first specialisation, and a value that changes at every call warns after
    ``RECOMPILE_WARNING`` compiles."""
    ns = {"gradc": gradc}
    exec("temperature = 2.0\n"
         "def helper(x):\n    return x / temperature\n"
         "def loss(x):\n    return helper(x).exp().sum()\n", ns)
    f = gradc.compile(ns["loss"])
    x = gradc.ones(3)
    assert f(x).item() == pytest.approx(3 * np.exp(0.5), rel=1e-6)
    ns["temperature"] = 0.5
    assert f(x).item() == pytest.approx(3 * np.exp(2.0), rel=1e-6)
    assert "temperature changed from 2.0 to 0.5" in f.explain()
    ns["temperature"] = 2.0
    f(x)
    assert len(f.log) == 2

    scale = 1
    g = gradc.compile(lambda x: x * scale)
    with pytest.warns(UserWarning, match=r"has compiled 16 times \(the last because scale changed from 15 to 16\)"):
        for k in range(1, 17):
            scale = k
            assert g(x).tolist() == [k] * 3


def test_module_hyperparameters_are_guarded():
    """A called module's Python attributes (dropout's ``p``, a norm's ``eps``) chose what was
    traced: changing one after compiling recompiles, and explain() names it."""
    rng = np.random.default_rng(15)
    norm = gradc.nn.LayerNorm(4, dtype=gradc.float64)
    drop = gradc.nn.Dropout(0.5)
    model = gradc.nn.Sequential(norm, drop)
    f = gradc.compile(lambda x: model(x).sum())
    x = gradc.tensor(rng.standard_normal((3, 4)))
    f(x)
    drop.p = 0.0
    norm.eps = 0.5
    got = f(x)
    assert got.item() == pytest.approx(model(x).sum().item(), rel=1e-12)
    assert "changed from" in f.log[1] and ("model[1].p" in f.log[1] or "model[0].eps" in f.log[1])
    assert "gradc.rand_like" not in str(f.ir().traced)


@pytest.mark.parametrize("memory", ["min-memory", "save-all"])
def test_inplace_writes_into_arguments_reach_the_callers_tensors(memory):
    """``buf.add_(x)`` on an argument changes the caller's tensor, as eagerly (and bumps its
    version); an argument saved for the gradient and then written in place makes backward raise
    eager autograd's in-place error, as PyTorch's."""
    def f(x, buf):
        buf.add_(x)
        return (buf * 2).sum()

    cf = gradc.compile(f, memory=memory)
    x, buf = gradc.ones(3), gradc.zeros(3)
    assert cf(x, buf).item() == 6.0 and buf.tolist() == [1.0, 1.0, 1.0] and buf._version == 1
    assert cf(x, buf).item() == 12.0 and buf.tolist() == [2.0, 2.0, 2.0] and buf._version == 2

    def g(x, s):
        y = (x.exp() * s).sum()
        with gradc.no_grad():
            s.mul_(3.0)
        return y

    x = gradc.tensor([0.5, -1.0, 2.0], dtype=gradc.float64, requires_grad=True)
    s = gradc.tensor([1.0, 2.0, 3.0], dtype=gradc.float64)
    out = gradc.compile(g, memory=memory)(x, s)
    assert s.tolist() == [3.0, 6.0, 9.0]
    with pytest.raises(RuntimeError) as compiled:
        out.backward()
    s = gradc.tensor([1.0, 2.0, 3.0], dtype=gradc.float64)
    with pytest.raises(RuntimeError) as eager:
        g(x, s).backward()
    assert str(compiled.value).startswith(str(eager.value)[:-1]) and "is at version 1; expected version 0" in str(
        eager.value)


@pytest.mark.parametrize("backward", ["auto", "separate"])
def test_a_residual_that_is_a_written_argument_keeps_the_value_at_the_call(backward):
    """``g = autograd.grad(loss, w)`` is ``detach(x)``, simplified to the argument itself, and
    saved for backward; the function then writes ``x`` in place: the gradient is that of the
    value at the call, as eagerly (the residual is copied before the write)."""
    torch = pytest.importorskip("torch")

    def make(m):
        def f(w, x):
            loss = (x * w).sum()
            g, = m.autograd.grad(loss, w)
            x.add_(1)
            return (g * w).sum()
        return f
    got = []
    for m, fn in ((torch, make(torch)), (gradc, make(gradc)), (gradc, gradc.compile(make(gradc), backward=backward))):
        w, x = m.tensor([1.0, 2.0, 3.0], requires_grad=True), m.tensor([0.5, -1.0, 2.0])
        fn(w, x).backward()
        got.append((w.grad.tolist(), x.tolist()))
    assert got[0] == got[1] == got[2] == ([0.5, -1.0, 2.0], [1.5, 0.0, 3.0])


def test_modules_and_containers_as_arguments():
    """``step(model, batch)`` with a module and a dict of tensors: the module is keyed by identity
    and its parameters read through paths from the argument (an optimizer step needs no
    recompile, a rebound parameter is seen); a new dict of the same structure each call needs no
    recompile; gradients reach the parameters as eagerly; a different module recompiles."""
    def step(model, batch):
        x, y = batch["x"], batch["y"]
        return ((model(x) - y) ** 2).mean()

    cstep = gradc.compile(step)
    model = gradc.nn.Sequential(gradc.nn.Linear(3, 4), gradc.nn.Tanh(), gradc.nn.Linear(4, 1)).double()
    opt = gradc.optim.SGD(model.parameters(), lr=0.1)
    rng = np.random.default_rng(16)
    for _ in range(3):
        batch = {"x": gradc.tensor(rng.standard_normal((5, 3))), "y": gradc.tensor(rng.standard_normal((5, 1)))}
        got = []
        for run in (cstep, step):
            opt.zero_grad()
            out = run(model, batch)
            out.backward()
            got.append([out.item()] + [p.grad.numpy().copy() for p in model.parameters()])
        for c, e in zip(*got):
            np.testing.assert_allclose(c, e, rtol=1e-12)
        opt.step()
    assert len(cstep.log) == 1
    model[0].weight = gradc.nn.Parameter(gradc.zeros(4, 3, dtype=gradc.float64))
    assert cstep(model, batch).item() == pytest.approx(step(model, batch).item(), rel=1e-12)
    other = gradc.nn.Sequential(gradc.nn.Linear(3, 1)).double()
    assert cstep(other, batch).item() == pytest.approx(step(other, batch).item(), rel=1e-12)
    assert len(cstep.log) == 2 and "non-tensor arguments changed" in cstep.log[1]


def test_capture_paths_walk_closures_objects_and_containers():
    from gradc import capture_paths
    from gradc.tensor import Tensor
    a, b, c, hidden = gradc.ones(2), gradc.ones(3), gradc.ones(4), gradc.ones(5)

    class Holder:
        def __init__(self):
            self.table = {"k": [a, (b,)]}
    h = Holder()

    def helper():
        return c

    def fn():
        return h, helper

    paths = capture_paths.find_paths(fn, [a, b, c, hidden], Tensor)
    assert paths[0] == (("cell", 0, "h"), ("attr", "table"), ("item", "k"), ("item", 0))
    assert paths[1] == (("cell", 0, "h"), ("attr", "table"), ("item", "k"), ("item", 1), ("item", 0))
    assert paths[2] == (("cell", 1, "helper"), ("cell", 0, "c"))
    assert paths[3] is None
    assert [capture_paths.resolve(fn, p) for p in paths[:3]] == [a, b, c]
    h.table = {}
    assert capture_paths.resolve(fn, paths[0]) is None


@pytest.mark.parametrize("fn,saves", [
    (lambda x: x.exp(), True), (lambda x: x.sigmoid() + 0, False), (lambda x: (x * 2).tanh(), True),
    (lambda x: x * 2, False), (lambda x: (x.exp(), x * 3), True),
], ids=["exp", "sigmoid-then-add", "tanh", "mul", "tuple"])
@pytest.mark.parametrize("backward", ["auto", "separate"])
def test_compiled_output_modified_in_place_before_backward_as_pytorch(fn, saves, backward):
    """An output that eager autograd saves (exp's, tanh's result) modified in place before
    backward is PyTorch's version-counter error naming the op; other outputs may be modified."""
    torch = pytest.importorskip("torch")
    results = []
    for m, f in ((torch, fn), (gradc, gradc.compile(fn, backward=backward))):
        x = m.tensor([0.5, -1.0, 2.0], requires_grad=True)
        out = f(x)
        y = out[0] if isinstance(out, tuple) else out
        y.add_(1)
        try:
            sum(o.sum() for o in (out if isinstance(out, tuple) else (out,))).backward()
            results.append(("ok", x.grad.tolist()))
        except RuntimeError as e:
            results.append(("error", str(e)))
    assert results[0][0] == ("error" if saves else "ok")
    if saves:
        assert results[1] == results[0]
    else:
        assert results[1][0] == "ok"
        np.testing.assert_allclose(results[1][1], results[0][1], rtol=1e-6)


def test_captured_parameter_modified_before_backward_raises_pytorchs_error():
    """Exactly when eager autograd raises: ``x * w`` saves ``w`` only for ``x``'s gradient, so
    modifying ``w`` is an error for ``x * w * w`` (whose second product saves it for the
    first's) and not for ``x * w`` with ``x`` not requiring grad (PyTorch's behaviour)."""
    for body, raises in (("(x * w).exp().sum()", False), ("(x * w * w).exp().sum()", True)):
        for compiled in (False, True):
            w = gradc.nn.Parameter(gradc.ones(3))
            fn = eval("lambda x: " + body, {"w": w})
            out = (gradc.compile(fn) if compiled else fn)(gradc.ones(3))
            with gradc.no_grad():
                w.mul_(2)
            if raises:
                with pytest.raises(RuntimeError, match="one of the variables needed for gradient computation has "
                                                       "been modified by an inplace operation"):
                    out.backward()
            else:
                out.backward()
                np.testing.assert_allclose(w.grad.numpy(), np.full(3, np.e), rtol=1e-6)


def test_ops_on_outside_state_are_traced_so_compiled_eval_follows_it():
    """A compiled evaluation closing over a BatchNorm in eval mode: its running statistics
    (buffers, no grad) change through eager training steps between calls, and the compiled
    function follows them without recompiling; tensors the function makes itself stay eager."""
    rng = np.random.default_rng(6)
    bn = gradc.nn.BatchNorm1d(3, dtype=gradc.float64)
    x = gradc.tensor(rng.standard_normal((8, 3)))
    evaluate = gradc.compile(lambda x: (bn(x) * gradc.arange(3.0, dtype=gradc.float64)).sum())
    for shift in (1.0, -2.0, 5.0):
        bn.train()
        bn(x * 3 + shift)                       # an eager training step moves the running stats
        bn.eval()
        want = (bn(x) * gradc.arange(3.0, dtype=gradc.float64)).sum().item()
        assert evaluate(x).item() == pytest.approx(want, rel=1e-12)
    assert len(evaluate.log) == 1


def test_custom_function_that_needs_its_backward_is_refused_under_compile():
    """A custom autograd.Function's backward is Python the compiler cannot compile: where it would
    run, tracing raises TraceError (differentiating its forward gave other gradients silently);
    without a gradient to compute its forward is traced; fallback=True runs it eagerly."""
    import warnings
    from gradc.ir.errors import TraceError

    class DoubleGrad(gradc.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1

        @staticmethod
        def backward(ctx, g):
            return g * 2

    x = gradc.ones(2, requires_grad=True)
    with pytest.raises(TraceError, match="custom autograd.Function DoubleGrad under @gradc.compile"):
        gradc.compile(lambda x: DoubleGrad.apply(x * 3).sum())(x)
    assert gradc.compile(lambda x: DoubleGrad.apply(x * 3).sum())(x.detach()).item() == 6.0
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        gradc.compile(lambda x: DoubleGrad.apply(x * 3).sum(), fallback=True)(x).backward()
    assert x.grad.tolist() == [6.0, 6.0]


def test_compiling_a_module_gives_a_module_as_torch_compile_does():
    """gradc.compile(model) is an OptimizedModule holding the model as ``_orig_mod``: parameters,
    train()/eval(), state_dict keys under ``_orig_mod.`` and other attributes work as on
    PyTorch's; training through it equals training the model eagerly. ``model.compile()``
    compiles in place."""
    def make():
        gradc.manual_seed(0)
        return gradc.nn.Sequential(gradc.nn.Linear(3, 4), gradc.nn.Tanh(), gradc.nn.Linear(4, 1))
    eager, model = make(), make()
    compiled = gradc.compile(model)
    assert isinstance(compiled, gradc.nn.Module) and type(compiled).__name__ == "OptimizedModule"
    assert compiled._orig_mod is model and len(list(compiled.parameters())) == 4
    assert list(compiled.state_dict()) == ["_orig_mod." + k for k in model.state_dict()]
    assert compiled.eval() is compiled and not model.training
    compiled.train()
    assert model.training and compiled.training
    x, y = gradc.randn(8, 3), gradc.randn(8, 1)
    opts = [gradc.optim.SGD(m.parameters(), lr=0.1) for m in (eager, compiled)]
    for _ in range(3):
        for m, opt in zip((eager, compiled), opts):
            opt.zero_grad()
            ((m(x) - y) ** 2).mean().backward()
            opt.step()
    for a, b in zip(eager.parameters(), model.parameters()):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-5, atol=1e-6)
    assert type(compiled(x).grad_fn).__name__ == "CompiledFunctionBackward"
    again = make()
    again.compile()
    out = again(x)
    assert type(out.grad_fn).__name__ == "CompiledFunctionBackward"
    np.testing.assert_allclose(out.detach().numpy(), make()(x).detach().numpy(), rtol=1e-5, atol=1e-6)


def test_torch_compile_keywords_are_accepted_and_checked_as_pytorch():
    """Code written for torch.compile runs: mode/fullgraph/dynamic compile as usual, disable=True
    and backend='eager' return the function, bad modes/options/backends are PyTorch's errors."""
    def f(x):
        return x * 2
    g = gradc.compile(f, mode="max-autotune", fullgraph=True, dynamic=False)
    assert type(g).__name__ == "CompiledFunction" and g(gradc.ones(2)).tolist() == [2.0, 2.0]
    assert gradc.compile(f, disable=True) is f and gradc.compile(f, backend="eager") is f
    assert gradc.compile(mode="reduce-overhead")(f)(gradc.ones(1)).item() == 2.0
    with pytest.raises(RuntimeError, match="^Unrecognized mode=fast, should be one of: default, lite, "):
        gradc.compile(f, mode="fast")
    with pytest.raises(RuntimeError, match="Either mode or options can be specified"):
        gradc.compile(f, mode="default", options={})
    with pytest.raises(RuntimeError, match="^Invalid backend: 'nope'"):
        gradc.compile(f, backend="nope")
    with pytest.raises(RuntimeError, match="^Unexpected optimization option x"):
        gradc.compile(f, options={"x": 1})


def test_gradc_compiler_namespace_as_torch_compiler():
    """gradc.compiler.is_compiling() is True while gradc.compile traces the calling code;
    disable() leaves a function eager (compiling it returns it; calling it while tracing is a
    TraceError: no graph breaks)."""
    from gradc.ir.errors import TraceError

    def f(x):
        return x * 2 if gradc.compiler.is_compiling() else x * 3
    assert f(gradc.ones(1)).item() == 3.0 and gradc.compile(f)(gradc.ones(1)).item() == 2.0
    assert not gradc.compiler.is_compiling() and gradc.compiler.compile is gradc.compile

    @gradc.compiler.disable
    def g(x):
        return x + 1
    assert gradc.compile(g) is g and g(gradc.ones(1)).item() == 2.0
    with pytest.raises(TraceError, match="marked gradc.compiler.disable"):
        gradc.compile(lambda x: g(x) * 2)(gradc.ones(1))


def test_compiled_modules_deepcopy_and_pickle_and_compile_their_own_calls():
    """A compiled module (gradc.compile(model) or model.compile()) copies and pickles as PyTorch's
    does: the copy compiles its own calls again, with the same options, on its own parameters."""
    import copy
    import pickle
    gradc.manual_seed(0)
    model = gradc.nn.Sequential(gradc.nn.Linear(3, 4), gradc.nn.ReLU(), gradc.nn.Linear(4, 1))
    x = gradc.randn(5, 3)
    wrapped = gradc.compile(model, memory="save-all")
    wrapped(x)
    for twin in (copy.deepcopy(wrapped), pickle.loads(pickle.dumps(wrapped))):
        assert type(twin).__name__ == "OptimizedModule" and twin._orig_mod is not model
        assert twin._compiled_call.memory == "save-all"
        out = twin(x)
        assert type(out.grad_fn).__name__ == "CompiledFunctionBackward"
        np.testing.assert_allclose(out.detach().numpy(), model(x).detach().numpy(), rtol=1e-6)
    model.compile()
    model(x)
    twin = copy.deepcopy(model)
    with gradc.no_grad():
        twin[0].bias.add_(1.0)
    assert type(twin(x).grad_fn).__name__ == "CompiledFunctionBackward"
    assert not np.allclose(twin(x).detach().numpy(), model(x).detach().numpy())    # its own parameters
    assert type(pickle.loads(pickle.dumps(model))(x).grad_fn).__name__ == "CompiledFunctionBackward"


def test_outputs_nest_in_tuples_lists_named_tuples_and_dicts_as_torch_compile_allows():
    """Tensors anywhere in nested tuples, lists, named tuples and dicts (with None, numbers and
    strings beside them, returned as they are) come back in the same structure; gradients flow
    through every tensor as eagerly."""
    import collections
    Pair = collections.namedtuple("Pair", ["a", "b"])

    def f(x, w):
        h = x * w
        return {"loss": h.sum(), "parts": [h, (h * 2, None)], "pair": Pair(h.exp(), 3), "tag": "ok"}
    x = gradc.randn(3, dtype=gradc.float64)
    outs = []
    for fn in (f, gradc.compile(f)):
        w = gradc.tensor([1.0, -2.0, 0.5], dtype=gradc.float64, requires_grad=True)
        out = fn(x, w)
        (out["loss"] + out["parts"][1][0].sum() + out["pair"].a.sum()).backward()
        outs.append((out, w.grad))
    (eager, g_eager), (compiled, g_compiled) = outs
    assert list(compiled) == ["loss", "parts", "pair", "tag"] and compiled["tag"] == "ok"
    assert isinstance(compiled["parts"], list) and isinstance(compiled["parts"][1], tuple)
    assert compiled["parts"][1][1] is None and isinstance(compiled["pair"], type(eager["pair"]))
    assert compiled["pair"].b == 3 and compiled["loss"].grad_fn is not None
    np.testing.assert_allclose(compiled["pair"].a.detach().numpy(), eager["pair"].a.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(g_compiled.numpy(), g_eager.numpy(), rtol=1e-12)
    assert isinstance(gradc.compile(lambda x: [x + 1, x * 2])(x), list)     # a list stays a list


def test_compile_decorates_methods():
    """``@gradc.compile`` on a method (``forward``) binds like a method: each instance its own
    specialisation, gradients reaching the instance's parameters as eagerly."""
    class Net(gradc.nn.Module):
        def __init__(self, seed):
            super().__init__()
            gradc.manual_seed(seed)
            self.lin = gradc.nn.Linear(3, 2)

        @gradc.compile
        def forward(self, x):
            return self.lin(x).tanh().sum()

    x = gradc.randn(4, 3)
    a, b = Net(0), Net(1)
    for net in (a, b):
        net(x).backward()
        want = Net.forward.fn(net, x)
        assert abs(net(x).item() - want.item()) < 1e-5
    ga = a.lin.weight.grad.clone()
    a.zero_grad()
    Net.forward.fn(a, x).backward()
    np.testing.assert_allclose(ga.numpy(), a.lin.weight.grad.numpy(), rtol=1e-5)
    assert isinstance(Net.__dict__["forward"], type(gradc.compile(lambda x: x)))
    assert not np.allclose(a.lin.weight.grad.numpy(), b.lin.weight.grad.numpy())
