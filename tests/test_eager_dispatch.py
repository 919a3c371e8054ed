"""The eager op path's shortcuts keep eager semantics: the memo of shape rules, NumPy's error
state around the NumPy references, and mean's forward without np.mean's wrapper."""
import warnings

import numpy as np
import pytest

import gradc
from gradc.ops import registry
from gradc.ops.registry import ShapeError


def test_shape_rule_memo_answers_per_shape_and_dtype():
    a = gradc.ones(2, 3)
    assert (a + a).shape == (2, 3)
    assert (gradc.ones(4) + gradc.ones(4)).shape == (4,)
    assert (a.double() + a.double()).dtype is gradc.float64
    assert (a + gradc.ones(3)).shape == (2, 3)


def test_shape_rule_errors_are_not_memoized():
    a, b = gradc.ones(2, 3), gradc.ones(4)
    for _ in range(2):          # the second call must raise again, not find a memo entry
        with pytest.raises(ShapeError, match=r"gradc.add with shapes \[2, 3\], \[4\]"):
            a + b


def test_shape_rule_memo_tells_attr_values_and_types_apart():
    x = gradc.ones(2, 3)
    assert x.sum(0).shape == (3,)
    assert x.sum(1).shape == (2,)
    assert x.sum(1, keepdim=True).shape == (2, 1)
    assert x.sum([0, 1]).shape == ()
    # True == 1 and hash alike: the memo key holds each attr's type too
    op = registry.get("sum")
    memo = op.__dict__["_eager_info"].memo
    keys = [k for k in memo if any(isinstance(p, tuple) and p[:1] == ("keepdim",) for p in k)]
    assert all(p[1] is bool for k in keys for p in k if isinstance(p, tuple) and p[:1] == ("keepdim",))


def test_shape_rule_memo_is_bounded():
    info = registry.get("neg").__dict__.get("_eager_info")
    for n in range(1, 300):
        -gradc.ones(n)
    info = registry.get("neg").__dict__["_eager_info"]
    assert 0 < len(info.memo) <= info.MEMO_LIMIT


def test_index_keys_are_memoized_per_key():
    x = gradc.arange(12.0).reshape(3, 4)
    info = registry.get("index").__dict__.get("_eager_info")
    if info is not None:
        info.memo.clear()
    assert x[1].tolist() == [4.0, 5.0, 6.0, 7.0]
    assert x[2].tolist() == [8.0, 9.0, 10.0, 11.0]      # another int: another entry, not the first's
    assert x[1:].shape == (2, 4) and x[:, 1].shape == (3,) and x[None].shape == (1, 3, 4)
    info = registry.get("index").__dict__["_eager_info"]
    keys = [k for k in info.memo if any(isinstance(p, tuple) and p[:1] == ("key",) for p in k)]
    assert len(keys) >= 5
    for _ in range(2):          # a bad key raises every time (errors are not memoized)
        with pytest.raises(ShapeError):
            gradc.ops.dispatch.apply("index", x, key=[["int", 5]])


@pytest.mark.parametrize("key", [
    lambda m: (Ellipsis, m.tensor([[True, False, True, True], [False, True, True, False], [True] * 4])),
    lambda m: (m.tensor([True, False]), Ellipsis, m.tensor([0, 2])),
    lambda m: (None, Ellipsis, m.tensor([1, 0]), slice(None)),
    lambda m: (1, Ellipsis, None),
])
def test_index_with_an_ellipsis_and_index_tensors_against_torch(key):
    torch = pytest.importorskip("torch")
    a = np.arange(24.0).reshape(2, 3, 4)
    got, want = gradc.tensor(a)[key(gradc)], torch.tensor(a)[key(torch)]
    assert tuple(got.shape) == tuple(want.shape)
    assert got.tolist() == want.tolist()


def test_single_input_ops_of_tensors_and_subclasses_and_a_non_tensor():
    from gradc.tensor import Tensor
    p = gradc.nn.Parameter(gradc.ones(2, 3))
    assert p.t().shape == (3, 2) and p.t().grad_fn.name() == "TBackward0" and (-p).grad_fn.name() == "NegBackward0"
    assert gradc.ones(2, 3).t().shape == (3, 2)
    with pytest.raises(TypeError, match="gradc.neg: expected Tensor inputs, got ndarray"):
        Tensor._apply(registry.get("neg"), [np.ones(2)], {})


def test_unhashable_attrs_skip_the_memo():
    x = gradc.arange(12.0).reshape(3, 4)
    assert x[1:, ::2].tolist() == [[4.0, 6.0], [8.0, 10.0]]
    assert x[[0, 2]].shape == (2, 4)


def test_numpy_references_run_quietly_and_leave_numpy_error_state_alone():
    x = gradc.tensor([0.0, 1.0, -1.0])
    with np.errstate(all="raise"):
        before = np.geterr()
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert (1 / x).tolist()[0] == float("inf")
            assert np.isnan(x.log().tolist()[2])
            assert np.isnan(gradc.tensor([]).mean().item())      # PyTorch: nan, no warning
            assert (gradc.tensor([3e38]) * 10).tolist() == [float("inf")]
        assert np.geterr() == before
        with pytest.raises(FloatingPointError):               # the user's own NumPy code still raises
            np.array([1.0]) / np.array([0.0])


def test_error_state_is_restored_after_an_op_raises():
    before = np.geterr()
    with pytest.raises(Exception):
        gradc.ones(2, 3) @ gradc.ones(2, 3)
    with pytest.raises(Exception):
        gradc.ones(2).reshape(3)
    assert np.geterr() == before


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape,dim", [((1000,), None), ((37, 53), 1), ((37, 53), 0), ((5, 0), 1),
                                       ((), None), ((3, 4, 5), (0, 2))])
def test_mean_matches_numpy_bitwise(dtype, shape, dim):
    rng = np.random.default_rng(0)
    a = (rng.standard_normal(shape) * 100).astype(dtype)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = np.mean(a, axis=dim)
    got = gradc.tensor(a).mean(dim).numpy()
    assert got.dtype == want.dtype and got.shape == np.shape(want)
    np.testing.assert_array_equal(got, want)


def test_backward_of_many_small_ops_matches_numpy():
    rng = np.random.default_rng(1)
    xs = [rng.standard_normal((3, 4)) for _ in range(3)]
    a, b, c = (gradc.tensor(x, requires_grad=True) for x in xs)
    ((a * b + c).mean(0) * (b - c).sum(0)).sum().backward()
    x, y, z = xs
    gm = np.ones(4)
    s = (y - z).sum(0)
    m = (x * y + z).mean(0)
    np.testing.assert_allclose(a.grad.numpy(), y * (s / 3))
    np.testing.assert_allclose(b.grad.numpy(), x * (s / 3) + m * gm)
    np.testing.assert_allclose(c.grad.numpy(), (s / 3) * np.ones((3, 4)) - m)


def test_leaf_grads_are_copies_when_a_gradient_is_shared():
    """AddBackward hands one gradient tensor to both inputs: each leaf's .grad is its own copy."""
    x, y = gradc.ones(3, requires_grad=True), gradc.ones(3, requires_grad=True)
    seen = []
    y.register_hook(lambda g: seen.append(g))
    (x + y).sum().backward()
    assert not np.shares_memory(x.grad.numpy(), y.grad.numpy())
    x.grad.add_(1)
    assert y.grad.tolist() == [1.0, 1.0, 1.0] and seen[0].tolist() == [1.0, 1.0, 1.0]
    e = gradc.ones(2, 3, requires_grad=True)
    e.sum().backward()                  # the gradient is an expanded view: .grad owns contiguous memory
    assert e.grad.is_contiguous() and e.grad.tolist() == [[1.0] * 3] * 2
    e.grad.add_(1)
    assert e.grad.tolist() == [[2.0] * 3] * 2


def test_gradient_accumulation_overflows_quietly():
    x = gradc.tensor([1.0], requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        (x * 3e38).sum().backward()
        (x * 3e38).sum().backward()     # 3e38 + 3e38 overflows float32 in the in-place accumulation
    assert x.grad.tolist() == [float("inf")]


@pytest.mark.parametrize("call,name", [(lambda x: x.var(1), "var"), (lambda x: x.std(1), "std"),
                                       (lambda x: x.var(), None)])
def test_var_without_degrees_of_freedom_warns_as_pytorch_does(call, name):
    x = gradc.ones(3, 1)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = call(x)
    if name is None:                    # three elements, correction 1: fine
        assert not caught and out.item() == 0.0
        return
    assert [str(w.message).split("(")[0] for w in caught] == [f"{name}"]
    assert caught[0].category is UserWarning and caught[0].filename == __file__
    assert "degrees of freedom is <= 0" in str(caught[0].message)
    assert np.isnan(out.numpy()).all()


@pytest.mark.parametrize("fn", [lambda x: x.sign(), lambda x: x.floor(), lambda x: x.round(decimals=1),
                                lambda x: x.div(2.0, rounding_mode="trunc"), lambda x: (x * 1).fill_(3.0)])
def test_piecewise_constant_ops_pass_exact_zero_gradients(fn):
    """PyTorch's zeros_like(grad): an inf or nan incoming gradient still gives 0, eager and compiled."""
    x = gradc.tensor([1.5, -0.5, 2.25], requires_grad=True)
    fn(x).backward(gradc.tensor([float("inf"), float("nan"), 1.0]))
    assert x.grad.tolist() == [0.0, 0.0, 0.0]
    y = gradc.tensor([1.5, -0.5, 2.25], requires_grad=True)
    w = gradc.tensor([float("inf"), float("nan"), 1.0])
    gradc.compile(lambda t, v: (fn(t) * v).sum())(y, w).backward()
    assert y.grad.tolist() == [0.0, 0.0, 0.0]


def _graph_names(t, depth=4):
    """The grad_fn names reachable from ``t`` (breadth first, ``depth`` levels)."""
    names, level = [], [t.grad_fn]
    for _ in range(depth):
        nxt = []
        for n in level:
            if n is None:
                continue
            names.append(n.name())
            nxt.extend(f for f, _ in n.next_functions)
        level = nxt
    return names


def test_reduction_and_broadcast_gradients_with_create_graph_against_torch():
    torch = pytest.importorskip("torch")
    # the VJPs' internal sum and expand record PyTorch's nodes (SumBackward0, ExpandBackward0)
    def results(lib):
        x = lib.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
        b = lib.tensor(0.5, requires_grad=True)
        out = []
        for f in (lambda: (x * b).sum(), lambda: (x * x).mean(), lambda: ((x + b) ** 2).sum(),
                  lambda: (x.sum(0) * b).sum(), lambda: (x.exp() * b).mean()):
            gx, gb = lib.autograd.grad(f(), (x, b), create_graph=True, allow_unused=True)
            for g in (gx, gb):
                if g is None:
                    out.append(None)
                    continue
                (h,) = lib.autograd.grad(g.sum(), x, allow_unused=True, retain_graph=True)
                out.append((np.round(g.tolist(), 6).tolist(), _graph_names(g),
                            None if h is None else np.round(h.tolist(), 6).tolist()))
        return out
    assert results(gradc) == results(torch)


@pytest.mark.parametrize("shape,to", [((), (2, 2)), ((), ()), ((), (0, 3)), ((2, 1), (2, 3)), ((1,), (3, 1)),
                                      ((2, 2), (2, 2)), ((1, 3), (4, 1, 3)), ((1, 1), (1, 1)), ((1,), (0,)),
                                      ((3,), (2, 3)), ((2, 1, 3), (5, 2, 4, 3)), ((0,), (2, 0))])
def test_expand_forward_is_numpy_broadcast_view(shape, to):
    # expand's NumPy reference builds the broadcast view itself: np.broadcast_to's strides (but on
    # size-1 dims, whose strides are PyTorch's: test_expand_strides_are_pytorchs), memory and
    # values; writable only where no element repeats and the input is writable
    from gradc.ops.shape import _expand_forward
    n = int(np.prod(shape))
    for dtype in (np.float32, np.float64, np.int64, np.bool_):
        for read_only in (False, True):
            for offset in (0, 1):           # a view starting inside a larger array
                x = np.arange(n + 1).astype(dtype)[offset:offset + n].reshape(shape)
                x.flags.writeable = not read_only
                got, want = _expand_forward(x, list(to)), np.broadcast_to(x, to)
                assert got.shape == want.shape and got.dtype == want.dtype
                assert [a for a, k in zip(got.strides, to) if k != 1] == [b for b, k in zip(want.strides, to) if k != 1]
                assert got.__array_interface__["data"][0] == want.__array_interface__["data"][0]
                assert got.flags.writeable == (got.size == x.size and not read_only)
                np.testing.assert_array_equal(got, want)
                assert np.may_share_memory(got, x) == np.may_share_memory(want, x)


def test_expand_of_a_transposed_tensor_keeps_numpy_broadcast_layout():
    x = gradc.arange(6.0).reshape(2, 3).t()[:, :1]       # not contiguous: NumPy's own broadcast
    e = x.expand(3, 4)
    assert e._data.strides == np.broadcast_to(x._data, (3, 4)).strides
    assert e.tolist() == [[0.0] * 4, [1.0] * 4, [2.0] * 4]


def test_node_refuses_a_vjp_gradient_of_the_wrong_shape():
    import dataclasses
    x, y = gradc.ones(2, 2, requires_grad=True), gradc.ones(2, 2, requires_grad=True)
    node = (x * y).grad_fn
    node._op = dataclasses.replace(node._op, vjp=lambda ctx, g: [g[0].sum(), g[0]])
    with pytest.raises(RuntimeError, match=r"^Function MulBackward0 returned an invalid gradient at index 0 - "
                                           r"got \[\] but expected shape compatible with \[2, 2\]$"):
        node(gradc.ones(2, 2))


def test_node_results_against_torch():
    torch = pytest.importorskip("torch")
    # one output of a two-output node gets a gradient (the other gets zeros); an input that
    # needs none gets None; a gradient of another dtype is cast to its input's
    outs = []
    for lib in (gradc, torch):
        x = lib.tensor([[1.0, 5.0], [3.0, 2.0]], requires_grad=True)
        w = lib.tensor(2.0, dtype=lib.float64, requires_grad=True)
        values, _ = (x * 3).max(1)
        (values.double() * w).sum().backward()
        node = (x * lib.tensor([1.0, 2.0])).grad_fn
        outs.append((x.grad.tolist(), x.grad.dtype.itemsize, w.grad.item(),
                     [None if g is None else g.tolist() for g in node(lib.ones(2, 2))]))
    assert outs[0] == outs[1]


def test_recording_after_a_views_base_changed_in_place_against_torch():
    torch = pytest.importorskip("torch")
    # the view's requires_grad is only known once its history is refreshed: the op must record
    got = []
    for lib in (gradc, torch):
        w = lib.tensor([2.0, 3.0, 4.0], requires_grad=True)
        base = lib.ones(3)
        v = base[:2]
        plain = v * v                        # nothing requires grad: no node
        base.mul_(w)
        y = v * lib.tensor([5.0, 6.0])
        y.sum().backward()
        got.append((plain.requires_grad, plain.grad_fn is None, y.requires_grad, type(y.grad_fn).__name__,
                     w.grad.tolist()))
    assert got[0] == got[1]


def test_binary_op_of_two_tensors_is_still_captured_by_a_trace():
    # x * W with W from a closure takes the same-class shortcut; a trace must still record it
    W = gradc.tensor([1.0, 2.0], requires_grad=True)
    f = gradc.compile(lambda x: (x * W).sum())
    x = gradc.tensor([3.0, 4.0])
    f(x).backward()
    assert W.grad.tolist() == [3.0, 4.0]
    W.grad = None
    with gradc.no_grad():
        W.mul_(2.0)
    f(x).backward()                          # the new W is read: it was captured, not baked in
    assert W.grad.tolist() == [3.0, 4.0] and f(x).item() == 22.0
    assert "gradc.mul" in str(f.ir().traced) and "%captured" in str(f.ir().traced)


@pytest.mark.parametrize("view", [lambda w: w.t(), lambda w: w.T, lambda w: w.transpose(0, 1),
                                  lambda w: w.permute(1, 0), lambda w: w.view(-1)[:4].reshape(2, 2),
                                  lambda w: w.unsqueeze(0).squeeze(), lambda w: w[1:].expand(2, 2),
                                  lambda w: w.select(0, 0).narrow(0, 0, 2)[None, ..., :]])
def test_view_methods_of_a_closure_tensor_are_captured_by_a_trace(view):
    # the view methods take the same-class shortcut of dispatch; a trace must still record them
    W = gradc.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    f = gradc.compile(lambda x: (view(W) * x).sum())
    x = gradc.tensor([[1.0, 10.0], [100.0, 1000.0]])
    f(x).backward()
    want = gradc.autograd.grad((view(W) * x).sum(), W)[0].tolist()
    assert W.grad.tolist() == want
    with gradc.no_grad():
        W.mul_(2.0)
    assert f(x).item() == (view(W) * x).sum().item()       # the new W is read: captured, not baked in
    assert "%captured" in str(f.ir().traced)


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", "int32", "uint8"])
def test_python_number_operands_against_torch(dtype):
    torch = pytest.importorskip("torch")
    # a Python int or float with a floating point tensor takes the tensor's dtype without the
    # general promotion; the other cases promote; values, dtypes, nodes and edges as PyTorch's
    def results(lib):
        floating = dtype.startswith("float")
        x = lib.tensor([1.5, 3.0, 250.0], dtype=getattr(lib, dtype), requires_grad=floating)
        out = []
        for c in (2, 2.5, -3, 70000.0, 10 ** 3):
            for r in (x * c, c * x, x + c, c + x, x - c, c - x, x / c, c / x):
                fns = r.grad_fn.next_functions if r.grad_fn is not None else ()
                out.append((str(r.dtype), np.asarray(r.detach().tolist(), dtype=float).round(3).tolist(),
                            type(r.grad_fn).__name__, [type(n).__name__ if n else None for n, _ in fns]))
        return out
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)       # (NumPy's overflow of 70000 into float16)
        assert results(gradc) == results(torch)


def test_expand_values_and_errors_against_torch():
    torch = pytest.importorskip("torch")
    def results(lib):
        x = lib.tensor([[1.0], [2.0]])
        out = [x.expand(2, 3).tolist(), x.expand(4, -1, 2).shape == (4, 2, 2), x.expand((2, 1)).tolist()]
        for sizes in ((3,), (2, 4, 5), (-1, 2, 3), (3, 3)):
            try:
                x.expand(*sizes)
            except RuntimeError as e:
                out.append(str(e))
        return out
    assert results(gradc) == results(torch)


def test_holds_values_tells_eager_tensors_from_traced_ones():
    from gradc.tensor_api import _holds_values
    seen = []

    def f(x):
        seen.append(_holds_values(x))
        return x.view(-1) * 2           # (view reads it too: a traced view checks the traced layout)
    assert gradc.compile(f)(gradc.ones(2, 2)).tolist() == [2.0] * 4
    assert seen == [False]
    assert _holds_values(gradc.ones(2)) and _holds_values(gradc.nn.Parameter(gradc.ones(2)))
    assert not _holds_values(np.ones(2)) and not _holds_values(1.0) and not _holds_values(None)


@pytest.mark.parametrize("method", ["reshape", "view"])
def test_reshape_sizes_and_errors_against_torch(method):
    torch = pytest.importorskip("torch")
    shapes = [(-1,), (3, -1), (-1, 4), (2, 2, 3), (0, -1), (-1, -1), (2, -2), (-3, 4), (5, -1), (13,), (4, 3, 1, -1),
              (12, 0), ()]

    def results(lib):
        x, empty = lib.arange(12.0), lib.zeros(0, 3)
        out = []
        for t in (x, empty):
            for shape in shapes:
                try:
                    out.append(tuple(getattr(t, method)(shape).shape))
                except RuntimeError as e:
                    out.append(str(e))
        return out
    assert results(gradc) == results(torch)


@pytest.mark.parametrize("first", ["gradc.tensor", "gradc.autograd", "gradc.tensor_api", "gradc.autograd.engine"])
def test_backward_works_whichever_module_is_imported_first(first):
    # gradc.autograd binds Tensor and is_tensor_like at import (the backward prelude's names),
    # and Tensor.backward reads gradc.autograd.backward at call time: no import order breaks that
    import subprocess
    import sys
    code = (f"import {first}\nimport gradc\nx = gradc.ones(2, requires_grad=True)\n(x * x).sum().backward()\n"
            "print(x.grad.tolist())")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[2.0, 2.0]"


def test_broadcast_binary_gradients_against_torch():
    torch = pytest.importorskip("torch")
    # add/sub/mul VJPs sum a broadcast gradient back to each operand's shape (leading and size-1 dims)
    def results(lib):
        out = []
        for sa, sb in (((2, 3), (3,)), ((2, 1), (1, 3)), ((2, 3), ()), ((4, 2, 3), (2, 1)), ((2, 2), (2, 2))):
            a = lib.arange(float(np.prod(sa) or 1)).reshape(sa).requires_grad_()
            b = (lib.arange(float(np.prod(sb) or 1)) + 1).reshape(sb).requires_grad_()
            for f in (lambda: a + b, lambda: a - b, lambda: a * b, lambda: b.add(a, alpha=2)):
                ga, gb = lib.autograd.grad((f() * 1.5).sum(), (a, b), create_graph=True)
                out.append((ga.tolist(), gb.tolist(), _graph_names(ga), _graph_names(gb)))
        return out
    assert results(gradc) == results(torch)


def test_reshape_forward_is_numpy_reshape():
    # a view where NumPy can make one (sharing memory, same strides), a copy otherwise
    from gradc.ops import registry
    forward = registry.get("reshape").forward
    base = np.arange(12.0).reshape(3, 4)
    for x, shape in ((base, [4, 3]), (base, [12]), (base.T, [12]), (base.T, [2, 6]), (base[:, 1:3], [6]),
                     (np.float32(2.0).reshape(()), [1, 1]), (base[0, :1].reshape(()), [1]), (base[:0], [0, 4])):
        got, want = forward(x, shape), np.reshape(x, tuple(shape))
        assert got.shape == want.shape and got.strides == want.strides and got.dtype == want.dtype
        assert np.may_share_memory(got, x) == np.may_share_memory(want, x)
        np.testing.assert_array_equal(got, want)


def test_permute_forward_is_numpy_transpose():
    from gradc.ops import registry
    forward = registry.get("permute").forward
    base = np.arange(24.0).reshape(2, 3, 4)
    for x, dims in ((base, [2, 0, 1]), (base, [0, 1, 2]), (base[:, ::2], [1, 0, 2]), (base[0], [1, 0]),
                    (np.array(1.0), [])):
        got, want = forward(x, dims), np.transpose(x, tuple(dims))
        assert got.shape == want.shape and got.strides == want.strides and np.may_share_memory(got, x)
        np.testing.assert_array_equal(got, want)


EXPAND_STRIDE_CASES = ["m.ones(()).expand(1,1)", "m.ones(()).expand(2,1)", "m.ones(1).expand(1,1)",
                       "m.ones(2,1)[::2].expand(1,1)", "m.ones(4,1)[::2].expand(2,1)", "m.ones(4,1)[::2].expand(2,5)",
                       "m.ones(1,1).expand(1,1)", "m.ones(3).expand(1,1,3)", "m.ones(3).expand(2,1,3)",
                       "m.ones(3).expand(1,2,3)", "m.ones(2,3).t().expand(1,3,2)", "m.ones(1,3).expand(1,1,1,3)",
                       "m.ones(2,1,3).expand(1,2,4,3)", "m.ones(5)[::2].expand(1,3)"]


@pytest.mark.parametrize("expr", EXPAND_STRIDE_CASES)
def test_expand_strides_are_pytorchs(expr):
    """expand keeps the strides of kept dims (size-1 ones too) and continues the next dim's for a
    new size-1 leading dim, as PyTorch's inferExpandGeometry: stride() and is_contiguous() agree."""
    torch = pytest.importorskip("torch")
    t, g = eval(expr, {"m": torch}), eval(expr, {"m": gradc})
    assert (g.stride(), g.is_contiguous()) == (t.stride(), t.is_contiguous())


@pytest.mark.parametrize("call", [
    lambda: gradc.nn.functional.mse_loss(gradc.ones(3, 4, requires_grad=True), gradc.ones(3, 1)),
    lambda: gradc.nn.MSELoss()(gradc.ones(3, 4), gradc.ones(3, 1)),
    lambda: gradc.nn.functional.l1_loss(gradc.ones(2, 2), gradc.ones(2)),
    lambda: gradc.nn.functional.softmax(gradc.ones(2, 3)),
    lambda: gradc.nn.functional.kl_div(gradc.ones(2, 3), gradc.ones(2, 3)),
    lambda: gradc.ones(2, 3, 4).T,
])
def test_warnings_of_library_functions_point_at_the_callers_line(call):
    """Like PyTorch's, whatever wrappers (composite autograd nodes, modules) sit in between."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        call()
    assert caught and caught[0].category is UserWarning
    assert caught[0].filename == __file__, caught[0].filename
