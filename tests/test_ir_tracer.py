"""The tracer: Python functions over the tensor API recorded as IR."""
import inspect

import numpy as np
import pytest

import gradc
from gradc.ir import ArgSpec, Proxy, TraceError, interpret, print_function, trace, trace_from_examples, verify
from gradc.ops import ShapeError

HERE = "test_ir_tracer.py"


def line_of(marker_fn, offset):
    return inspect.getsourcelines(marker_fn)[1] + offset


def loss(x, w):
    y = x * w
    return y.mean()


def test_trace_records_ops_names_attrs_and_locations():
    f = trace(loss, [ArgSpec("x", (2, 2), "float32", True), ArgSpec("w", (), "float32")])
    l1, l2 = line_of(loss, 1), line_of(loss, 2)
    assert print_function(f) == (
        f"func.func @loss(%x: tensor<2x2xf32> {{gradc.requires_grad}}, %w: tensor<f32>) -> tensor<f32> {{   "
        f"// {HERE}:{l1 - 1}\n"
        f"  %0 = gradc.mul %x, %w : (tensor<2x2xf32>, tensor<f32>) -> tensor<2x2xf32>   // {HERE}:{l1}\n"
        f"  %1 = gradc.mean %0 {{dims = [0, 1], keepdim = false}} : (tensor<2x2xf32>) -> tensor<f32>   "
        f"// {HERE}:{l2}\n"
        f"  func.return %1 : tensor<f32>\n"
        f"}}\n")
    assert f.arg_attrs == [{"gradc.requires_grad": True}, {}]
    assert f.meta["output_structure"] == ("leaf", 0)
    verify(f)


def test_proxy_metadata():
    seen = {}

    def fn(x, i):
        seen["shape"], seen["dtype"], seen["rg"] = x.shape, x.dtype, x.requires_grad
        seen["size1"], seen["ndim"], seen["numel"] = x.size(1), x.ndim, x.numel()
        seen["grad_fn"], seen["is_proxy"] = x.grad_fn, isinstance(x, Proxy)
        seen["len"] = len(x)
        y = x * 2
        seen["y_rg"] = y.requires_grad
        seen["cmp_rg"] = (y > 0).requires_grad
        seen["idx_dtype"] = i.dtype
        seen["detach_rg"] = y.detach().requires_grad
        return y

    f = trace(fn, [ArgSpec(None, (3, 4), gradc.float32, True), ArgSpec(None, (2,), gradc.int64)])
    assert seen["shape"] == gradc.Size([3, 4]) and repr(seen["shape"]) == "torch.Size([3, 4])"
    assert seen["dtype"] is gradc.float32 and seen["idx_dtype"] is gradc.int64
    assert seen["rg"] and seen["y_rg"] and not seen["cmp_rg"] and not seen["detach_rg"]
    assert (seen["size1"], seen["ndim"], seen["numel"], seen["len"]) == (4, 2, 12, 3)
    assert seen["grad_fn"] is None and seen["is_proxy"]
    assert [a.name_hint for a in f.args] == ["x", "i"]
    assert "gradc.detach" in print_function(f)


def test_data_dependent_if_raises_trace_error_naming_file_and_line():
    def model(x):
        if x.sum() > 0:
            return x
        return -x

    line = line_of(model, 1)
    with pytest.raises(TraceError) as info:
        trace(model, [ArgSpec("x", (3,))])
    msg = str(info.value)
    assert isinstance(info.value, RuntimeError)
    assert "data-dependent Python control flow is not supported under @gradc.compile" in msg
    assert f"at {HERE}:{line} " in msg


@pytest.mark.parametrize("convert", [
    lambda x: x.sum().item(), lambda x: x.tolist(), lambda x: x.numpy(), lambda x: float(x.sum()),
    lambda x: int(x.sum()), lambda x: [1, 2, 3][x.sum()], lambda x: bool(x.sum()), lambda x: np.asarray(x),
    lambda x: range(x.sum()),
])
def test_value_conversions_raise_trace_error(convert):
    with pytest.raises(TraceError, match=f"at {HERE}:"):
        trace(lambda x: convert(x), [ArgSpec("x", (3,), gradc.int64)])


def test_conversions_of_several_elements_raise_the_eager_error():
    with pytest.raises(RuntimeError, match=f"^a Tensor with 3 elements cannot be converted to Scalar \\(at {HERE}:"):
        trace(lambda x: x.item(), [ArgSpec("x", (3,))])
    with pytest.raises(RuntimeError, match="^Boolean value of Tensor with more than one value is ambiguous"):
        trace(lambda x: x if x else x, [ArgSpec("x", (3,))])


def test_float_and_long_methods_are_casts_not_conversions():
    f = trace(lambda x: (x.float(), x.long(), x.double()), [ArgSpec("x", (2,), gradc.float64)])
    assert [t.dtype.name for t in f.result_types] == ["float32", "int64", "float64"]
    assert f.meta["output_structure"] == ("seq", "tuple", [("leaf", 0), ("leaf", 1), ("leaf", 2)])


def test_captured_eager_tensors_become_constants():
    w = gradc.tensor([[1.0, 2.0], [3.0, 4.0]])
    k = gradc.tensor(3)

    def fn(x):
        return x @ w + w + k + gradc.ones(2)

    f = trace(fn, [ArgSpec("x", (2, 2))])
    text = print_function(f)
    assert text.count('value = [[1.0, 2.0], [3.0, 4.0]]') == 1      # captured once, reused
    # k is promoted to float32 eagerly (both operands of that cast are eager), then captured
    assert 'gradc.constant {dtype = "float32", shape = [], value = 3.0}' in text
    assert 'gradc.constant {dtype = "float32", shape = [2], value = [1.0, 1.0]}' in text
    x = np.array([[1, 0], [0, 1]], np.float32)
    (out,) = interpret(f, [x])
    np.testing.assert_array_equal(out, fn(gradc.tensor(x)).numpy())


def test_python_scalars_and_non_tensor_arguments():
    def fn(x, scale, dim, keep):
        return (x * scale + 1).sum(dim, keepdim=keep)

    f = trace(fn, [ArgSpec("x", (2, 3)), 2.5, 1, True])
    text = print_function(f)
    assert len(f.args) == 1 and f.meta["tensor_arg_positions"] == [0]
    assert 'value = 2.5' in text and 'value = 1.0' in text
    assert "{dims = [1], keepdim = true}" in text
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.testing.assert_array_equal(interpret(f, [x])[0], fn(gradc.tensor(x), 2.5, 1, True).numpy())


def test_outputs_list_input_passthrough_and_eager_output():
    c = gradc.tensor([7.0])
    f = trace(lambda a, b: [a, b + a, c], [ArgSpec("a", (1,)), ArgSpec("b", (1,))])
    assert f.meta["output_structure"] == ("seq", "list", [("leaf", 0), ("leaf", 1), ("leaf", 2)])
    assert f.outputs[0] is f.args[0]
    a, s, k = interpret(f, [np.ones(1, np.float32), np.full(1, 2, np.float32)])
    assert (a, s, k) == (1, 3, 7)
    with pytest.raises(TypeError, match="must return a tensor"):
        trace(lambda a: 3, [ArgSpec("a", (1,))])
    with pytest.raises(TypeError, match="must return a tensor, or tensors in tuples, lists and dicts, got an object "
                                        "as output 1"):
        trace(lambda a: (a, object()), [ArgSpec("a", (1,))])
    g = trace(lambda a: {"a": a, "n": 3, "pair": (a * 2, None)}, [ArgSpec("a", (1,))])     # pytrees
    assert len(g.outputs) == 2 and g.meta["output_structure"] == (
        "dict", dict, [("a", ("leaf", 0)), ("n", ("const", 3)), ("pair", ("seq", "tuple", [("leaf", 1), ("const", None)]))])


def test_multi_output_ops_and_indexing():
    def fn(x, idx):
        m = x.max(1)
        return m.values, m.indices, x[idx], x[:, 1:], x[[0, 0]]

    f = trace(fn, [ArgSpec("x", (3, 4)), ArgSpec("idx", (2,), gradc.int64)])
    text = print_function(f)
    assert "%0:2 = gradc.max_dim %x" in text and "func.return %0#0, %0#1" in text
    verify(f)
    x = np.random.default_rng(0).normal(size=(3, 4)).astype(np.float32)
    idx = np.array([2, 0])
    want = fn(gradc.tensor(x), gradc.tensor(idx))
    for g, w in zip(interpret(f, [x, idx]), want):
        np.testing.assert_array_equal(g, w.numpy())


def test_inplace_ops_are_functionalized():
    def fn(x):
        y = x.clone()
        y.add_(1)
        y[0] = 10.0
        y.mul_(2)
        return y, x

    f = trace(fn, [ArgSpec("x", (3,))])
    x = np.array([1, 2, 3], np.float32)
    y, x_out = interpret(f, [x])
    np.testing.assert_array_equal(y, [20, 6, 8])
    np.testing.assert_array_equal(x_out, [1, 2, 3])
    assert "gradc.index_put" in print_function(f)


def test_inplace_on_an_argument_rebinds_it():
    def fn(x):
        x.add_(1)
        return x

    f = trace(fn, [ArgSpec("x", (2,))])
    np.testing.assert_array_equal(interpret(f, [np.zeros(2, np.float32)])[0], [1, 1])
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        trace(fn, [ArgSpec("x", (2,), requires_grad=True)])


def _traced_equals_eager(fn, x):
    f = trace(fn, [ArgSpec("x", x.shape)])
    verify(f)
    np.testing.assert_array_equal(interpret(f, [x])[0], fn(gradc.tensor(x)).numpy())


def test_views_and_inplace():
    """Writes through views reach their base, and views see writes into their base, as eagerly:
    the write is undone through the view ops (index_put, inverse permute, reshape back) and the
    base's views are taken again from it."""
    x = np.arange(4, dtype=np.float32).reshape(2, 2)

    def write_view(x):
        y = x.clone()
        y[0].add_(1)
        y.t()[1].mul_(10)
        return y
    _traced_equals_eager(write_view, x)

    def view_sees_base_write(x):
        y = x.clone()
        v = y.reshape(4)
        w = v[1:]
        y.add_(1)
        return v * 2 + w.sum()
    _traced_equals_eager(view_sees_base_write, x)

    def sibling_views(x):
        y = x.clone()
        a, b = y[0], y[:, 1]
        a.mul_(3)               # y[0, 1] changes: b sees it
        return b * 1

    _traced_equals_eager(sibling_views, x)

    def augmented_slice(x):
        y = x.clone()
        y[1:] += x[:1]
        return y
    _traced_equals_eager(augmented_slice, x)

    def fresh_view(x):
        y = x.clone()
        y.add_(1)
        return y.reshape(4)

    f = trace(fresh_view, [ArgSpec("x", (2, 2))])
    np.testing.assert_array_equal(interpret(f, [np.zeros((2, 2), np.float32)])[0], [1, 1, 1, 1])

    def write_expanded(x):
        y = x.clone()
        y[:1].expand(3, 2).add_(1)
        return y
    with pytest.raises(RuntimeError, match="more than one element of the written-to tensor refers to a single"):
        trace(write_expanded, [ArgSpec("x", (2, 2))])


def test_eager_and_proxy_mix_dispatches_to_the_tracer():
    w = gradc.tensor([1.0, 2.0])
    f = trace(lambda x: gradc.where(x > 0, w, x) + gradc.maximum(w, x), [ArgSpec("x", (2,))])
    assert "gradc.where" in print_function(f) and "gradc.maximum" in print_function(f)


def test_shape_errors_propagate():
    with pytest.raises(ShapeError, match="must match"):
        trace(lambda a, b: a + b, [ArgSpec("a", (2,)), ArgSpec("b", (3,))])
    with pytest.raises(RuntimeError, match="floating point"):
        trace(lambda a: a, [ArgSpec("a", (2,), gradc.int64, True)])


def test_proxies_cannot_escape_their_trace():
    saved = []
    trace(lambda a: saved.append(a) or a, [ArgSpec("a", (2,))])
    with pytest.raises(TraceError, match="another trace"):
        trace(lambda b: b + saved[0], [ArgSpec("b", (2,))])


def test_trace_from_examples():
    x = gradc.tensor([[1.0, 2.0]], requires_grad=True)
    n = np.zeros((3,), np.float64)
    f = trace_from_examples(lambda a, b, s: (a * s).sum() + b.sum(), [x, n, 3.0], name="ex")
    assert f.name == "ex"
    assert [str(a.type) for a in f.args] == ["tensor<1x2xf32>", "tensor<3xf64>"]
    assert f.arg_attrs == [{"gradc.requires_grad": True}, {}]
    assert [a.name_hint for a in f.args] == ["a", "b"]


def test_lambda_names_are_valid_symbols():
    f = trace(lambda a: a, [ArgSpec("a", (1,))])
    assert f.name == "lambda"
    assert print_function(f).startswith("func.func @lambda(")


@pytest.mark.parametrize("fn", [lambda x: round(x), lambda x: x * None, lambda x: None - x])
def test_pythons_own_type_errors_name_a_traced_tensor_tensor(fn):
    """Python's TypeError for an operation neither side defines names the traced tensor's type as
    it names an eager tensor's."""
    with pytest.raises(TypeError) as eager:
        fn(gradc.ones(2))
    with pytest.raises(TypeError) as compiled:
        gradc.compile(fn)(gradc.ones(2))
    assert str(eager.value) in str(compiled.value) and "Proxy" not in str(compiled.value)
