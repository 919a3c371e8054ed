"""@gradc.compile keeps eager semantics where the tracer has to work for it: grad-mode blocks
inside the function, compiled functions calling compiled functions, arguments that no output
uses, version checks exactly where eager autograd saves a tensor, and kernels whose
reductions run over different axes.  Each case runs eagerly and compiled and compares."""
import re

import numpy as np
import pytest

import gradc


def _both(fn):
    return (("eager", fn), ("compiled", gradc.compile(fn)))


def test_no_grad_block_inside_the_function_stops_gradients():
    def f(x):
        with gradc.no_grad():
            s = x.sum()
            m = x.max()
        return (x * s).sum() + m * x.mean()
    grads = {}
    for name, fn in _both(f):
        x = gradc.tensor([1., 2., 3.], requires_grad=True)
        fn(x).backward()
        grads[name] = x.grad.tolist()
    assert grads["eager"] == grads["compiled"] == [7.0, 7.0, 7.0]


def test_an_argument_used_only_under_no_grad_gets_no_gradient():
    def f(x, w):
        with gradc.no_grad():
            s = (w * 2).sum()
        return x.sum() * s
    for name, fn in _both(f):
        x, w = gradc.ones(3, requires_grad=True), gradc.ones(3, requires_grad=True)
        fn(x, w).backward()
        assert w.grad is None, name
        assert x.grad.tolist() == [6.0, 6.0, 6.0], name


def test_a_compiled_function_called_by_a_compiled_function_is_inlined():
    @gradc.compile
    def act(x):
        return 0.5 * x * (1 + (0.79788456 * (x + 0.044715 * x ** 3)).tanh())

    @gradc.compile
    def loss(x, w):
        return act(x @ w).sum()

    rng = np.random.default_rng(0)
    x = gradc.tensor(rng.standard_normal((4, 3)))
    w = gradc.tensor(rng.standard_normal((3, 2)), requires_grad=True)
    got = loss(x, w)
    got.backward()
    w_eager = w.detach().clone().requires_grad_()
    want = act.fn(x @ w_eager).sum()
    want.backward()
    assert got.item() == pytest.approx(want.item(), rel=1e-12)
    np.testing.assert_allclose(w.grad.numpy(), w_eager.grad.numpy(), rtol=1e-12)
    assert any(op.name == "gradc.tanh" for op in loss.ir().traced.body.ops)    # act's ops are in loss's IR
    assert act(x).shape == (4, 3)                     # and act still works on its own


def test_unused_argument_gets_none_and_outputs_without_grad_do_not_require_it():
    def f(x, w):
        return (x * 2).sum()

    def g(x, y):
        return x * 2, y * 3, (x > 0).float()

    for name, fn in _both(f):
        x, w = gradc.ones(3, requires_grad=True), gradc.ones(3, requires_grad=True)
        assert gradc.autograd.grad(fn(x, w), [x, w], allow_unused=True)[1] is None, name
        with pytest.raises(RuntimeError, match="appears to not have been used in the graph"):
            gradc.autograd.grad(fn(x, w), [x, w])
        fn(x, w).backward()
        assert w.grad is None and x.grad.tolist() == [2.0, 2.0, 2.0], name
    for name, fn in _both(g):
        a, b, c = fn(gradc.ones(3, requires_grad=True), gradc.ones(3))
        assert (a.requires_grad, b.requires_grad, c.requires_grad) == (True, False, False), name
        assert b.grad_fn is None and c.grad_fn is None, name


@pytest.mark.parametrize("body,raises", [
    ("a.exp().sum()", False),          # exp saves its result, not its input
    ("(a * 3).sum()", False),          # a product saves an operand only for the other's gradient
    ("(a * a).sum()", True),
    ("a.t().sin().sum()", True),       # sin saves its input: a view of a
    ("(a / 3).sum()", False),
])
def test_in_place_change_after_the_call_raises_exactly_when_eager_does(body, raises):
    for name, fn in _both(eval("lambda a: " + body)):
        x = gradc.tensor([[0.5, -1.0], [2.0, 0.0]], requires_grad=True)
        a = x * 1
        y = fn(a)
        want = None
        if not raises:
            x2 = x.detach().clone().requires_grad_()
            eval("lambda a: " + body)(x2 * 1).backward()
            want = x2.grad.numpy()
        a.add_(1)
        if raises:
            with pytest.raises(RuntimeError, match="modified by an inplace operation"):
                y.backward()
        else:
            y.backward()
            np.testing.assert_allclose(x.grad.numpy(), want, rtol=1e-6, err_msg=name)


def test_two_outputs_reducing_over_different_axes_compile():
    """A logsumexp over dim 1 beside a softmax over dim 0: the backward's column sums feed
    computations of the row kernel, so they stay a kernel of their own."""
    f = gradc.compile(lambda a: (a.logsumexp(1, keepdim=True) + a, a.softmax(0)))
    rng = np.random.default_rng(1)
    a = gradc.tensor(rng.standard_normal((5, 5)), requires_grad=True)
    p, q = f(a)
    ((p * p).sum() + (q * gradc.arange(25.).reshape(5, 5).double()).sum()).backward()
    a2 = a.detach().clone().requires_grad_()
    p2, q2 = a2.logsumexp(1, keepdim=True) + a2, a2.softmax(0)
    ((p2 * p2).sum() + (q2 * gradc.arange(25.).reshape(5, 5).double()).sum()).backward()
    np.testing.assert_allclose(p.detach().numpy(), p2.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(a.grad.numpy(), a2.grad.numpy(), rtol=1e-10)


@pytest.mark.parametrize("shape", [(2, 2), (3, 5), (4, 1, 6)])
def test_a_row_kernel_output_broadcast_from_per_row_values_is_written_whole(shape):
    """The gradient of p1 in (p2 * p1.mean(-1, keepdim) + p1.sum(0, keepdim)).sum() is a splat
    constant plus a per-row value: a full-shape output of the row kernel that varies along no
    reduced axis. Every element is stored (only the first column was, the rest left as found)."""
    def f(p1, p2):
        return (p2 * p1.mean(dim=-1, keepdim=True) + p1.sum(dim=0, keepdim=True)).sum()
    rng = np.random.default_rng(7)
    x, y = (gradc.tensor(rng.standard_normal(shape), requires_grad=True) for _ in range(2))
    for backward in ("auto", "separate"):
        got = gradc.autograd.grad(gradc.compile(f, backward=backward)(x, y), [x, y])
        want = gradc.autograd.grad(f(x, y), [x, y])
        for g, w in zip(got, want):
            np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-12, err_msg=backward)


def test_contiguous_of_a_transpose_is_row_major_so_view_works():
    """The attention idiom ``transpose(1, 2).contiguous().view(B, T, C)``, eagerly and compiled."""
    def f(x):
        return x.transpose(1, 2).contiguous().view(2, 3, 20)
    x = gradc.randn(2, 4, 3, 5)
    y = x.transpose(1, 2).contiguous()
    assert y.is_contiguous() and y.stride() == (60, 20, 5, 1)
    np.testing.assert_array_equal(gradc.compile(f)(x).numpy(), f(x).numpy())
    with pytest.raises(RuntimeError, match="view size is not compatible"):
        x.transpose(1, 2).view(2, 3, 20)


@pytest.mark.parametrize("labels", [[0, 3], [0, -1]])
def test_out_of_range_labels_raise_in_compiled_code(labels):
    """The one-hot mask a compiled gather becomes would silently pick nothing for a bad label;
    the compiled call raises the eager call's IndexError (PyTorch's message), naming the line."""
    F = gradc.nn.functional
    logits = gradc.tensor([[2.0, 0.5, -1.0], [0.1, 0.2, 0.3]], requires_grad=True)
    loss = gradc.compile(lambda l, t: F.cross_entropy(l, t))
    with pytest.raises(IndexError, match=rf"^Target {labels[1]} is out of bounds\.$"):
        F.cross_entropy(logits, gradc.tensor(labels))
    with pytest.raises(IndexError, match=rf"^Target {labels[1]} is out of bounds\. \(at test_compile_eager_semantics"):
        loss(logits, gradc.tensor(labels))
    ignoring = gradc.compile(lambda l, t: F.cross_entropy(l, t, ignore_index=-1))
    assert ignoring(logits, gradc.tensor([0, -1])).item() == pytest.approx(
        F.cross_entropy(logits, gradc.tensor([0, -1]), ignore_index=-1).item(), rel=1e-6)
    good = gradc.tensor([0, 2])
    assert loss(logits, good).item() == pytest.approx(F.cross_entropy(logits, good).item(), rel=1e-6)


def test_out_of_range_gather_and_one_hot_raise_in_compiled_code():
    a = gradc.arange(12.).reshape(3, 4)
    gather = gradc.compile(lambda a, i: a.gather(1, i))
    assert gather(a, gradc.tensor([[0], [3], [1]])).tolist() == [[0.0], [7.0], [9.0]]
    with pytest.raises(IndexError, match="index 1000000 is out of bounds"):
        gather(a, gradc.tensor([[0], [1000000], [1]]))
    one_hot = gradc.compile(lambda t: gradc.nn.functional.one_hot(t, 3).float().sum(0))
    assert one_hot(gradc.tensor([0, 2, 1])).tolist() == [1.0, 1.0, 1.0]
    for bad, message in (([0, 3], "Class values must be smaller than num_classes."),
                         ([0, -1], "Class values must be non-negative.")):
        with pytest.raises(RuntimeError, match=rf"^{message} \(at test_compile_eager_semantics.py:\d+\)$"):
            one_hot(gradc.tensor(bad))


@pytest.mark.parametrize("shape,dim,index", [((2, 3), 0, [0, 2]), ((2, 3), 1, [0, 3]), ((2, 3, 4), 2, [-1]),
                                             ((5,), 0, [5])])
def test_out_of_range_index_select_raises_pytorchs_error_in_compiled_code(shape, dim, index):
    torch = pytest.importorskip("torch")
    with pytest.raises(Exception) as want:
        torch.ones(*shape).index_select(dim, torch.tensor(index))
    f = gradc.compile(lambda x, i: x.index_select(dim, i) * 2)
    with pytest.raises(type(want.value), match=rf"^{re.escape(str(want.value))} \(at test_compile_eager"):
        f(gradc.ones(*shape), gradc.tensor(index))
    good = gradc.tensor([0] * len(index))
    assert f(gradc.ones(*shape), good).tolist() == (gradc.ones(*shape).index_select(dim, good) * 2).tolist()


class _Options:
    pass


def test_scalars_in_closure_dicts_lists_and_objects_are_guarded():
    cfg = {"temperature": 1.0, "nested": {"shift": 0.0}}
    opts = _Options()
    opts.scale = 1.0
    w = [1.0, 1.0]
    f = gradc.compile(lambda x: x / cfg["temperature"] + cfg["nested"]["shift"])
    g = gradc.compile(lambda x: x * opts.scale)
    h = gradc.compile(lambda x: x * gradc.tensor(w))
    x = gradc.ones(2)
    assert (f(x).tolist(), g(x).tolist(), h(x).tolist()) == ([1.0, 1.0], [1.0, 1.0], [1.0, 1.0])
    cfg["temperature"], opts.scale, w[0] = 0.5, 3.0, 7.0
    assert (f(x).tolist(), g(x).tolist(), h(x).tolist()) == ([2.0, 2.0], [3.0, 3.0], [7.0, 1.0])
    cfg["nested"]["shift"] = 1.0
    assert f(x).tolist() == [3.0, 3.0]
    assert "cfg['temperature'] changed from 1.0 to 0.5" in f.explain()
    assert "cfg['nested']['shift'] changed from 0.0 to 1.0" in f.explain()
    assert "opts.scale changed from 1.0 to 3.0" in g.explain()
    assert "w[0] changed from 1.0 to 7.0" in h.explain()
    n = len(f.log)
    f(x)
    assert len(f.log) == n                  # unchanged values: no recompile


def test_lengths_of_small_closure_lists_and_dicts_are_guarded():
    """``len(state)`` or a loop over a small list is baked into the trace: a list that grew
    recompiles (it returned the old length's result), as dynamo guards it."""
    state, table = [1, 2], {"a": 1.0}
    f = gradc.compile(lambda x: x + len(state) + sum(v for v in table.values()))
    x = gradc.zeros(1)
    assert f(x).item() == 3.0
    state.append(3)
    assert f(x).item() == 4.0
    table["b"] = 2.0
    assert f(x).item() == 6.0
    assert "len(state) changed from 2 to 3" in f.explain() and "len(table) changed from 1 to 2" in f.explain()


class _ConfiguredNet(gradc.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = gradc.nn.Linear(3, 3)
        self.cfg = {"act": "relu", "scale": 2.0}
        self.opts = [1.0, 0.5]

    def forward(self, x):
        h = self.lin(x) * self.cfg["scale"] * self.opts[1]
        return h.relu() if self.cfg["act"] == "relu" else h.tanh()


@pytest.mark.parametrize("as_argument", [False, True])
def test_scalars_in_module_dicts_and_lists_are_guarded(as_argument):
    net = _ConfiguredNet()
    f = gradc.compile((lambda m, x: m(x).sum()) if as_argument else (lambda x: net(x).sum()))
    call = (lambda x: f(net, x)) if as_argument else f
    x = gradc.randn(4, 3)
    for change in (None, ("cfg", "act", "tanh"), ("opts", 1, 2.0), ("cfg", "scale", -1.0)):
        if change:
            getattr(net, change[0])[change[1]] = change[2]
        np.testing.assert_allclose(call(x).item(), net(x).sum().item(), rtol=1e-6)
    text = f.explain()
    assert "cfg['act'] changed from 'relu' to 'tanh'" in text and "opts[1] changed from 0.5 to 2.0" in text
    n = len(f.log)
    call(x)
    assert len(f.log) == n


def test_in_place_writes_into_arguments_carry_gradients_as_eagerly():
    def act_(h):
        h.mul_(2)
        return (h * h).sum()

    def accumulate(buf, x):
        buf.add_(x * 2)
        return buf * 1

    for name, fn in _both(act_):
        x = gradc.tensor([1., 2., 3.], requires_grad=True)
        a = x * 1
        y = fn(a)
        (y + a.sum()).backward()
        assert (y.item(), x.grad.tolist()) == (56.0, [10.0, 18.0, 26.0]), name
        with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place"):
            fn(gradc.ones(2, requires_grad=True))
        with gradc.no_grad():
            w = gradc.ones(2, requires_grad=True)
            assert fn(w).item() == 8.0 and w.tolist() == [2.0, 2.0], name
    for name, fn in _both(accumulate):
        buf, x = gradc.zeros(3), gradc.tensor([1., 2., 3.], requires_grad=True)
        fn(buf, x)
        assert buf.requires_grad, name
        (buf ** 2).sum().backward()
        assert x.grad.tolist() == [8.0, 16.0, 24.0], name


def test_a_gradient_carrying_write_into_a_view_argument_is_a_clear_error():
    f = gradc.compile(lambda buf, x: buf.add_(x * 2).sum())
    base = gradc.zeros(2, 3)
    with pytest.raises(RuntimeError, match="a view of another tensor"):
        f(base[0], gradc.ones(3, requires_grad=True))
    f(base[0], gradc.ones(3))                     # no gradient: the write goes through the view
    assert base.tolist() == [[2.0, 2.0, 2.0], [0.0, 0.0, 0.0]]


def test_a_written_argument_sharing_memory_with_another_is_a_clear_error():
    def f(p, q):
        p.mul_(3)
        return q + 1
    compiled = gradc.compile(f)
    a = gradc.ones(4)
    with pytest.raises(RuntimeError, match="argument 0, which the function writes in place, shares memory with "
                                           "argument 1"):
        compiled(a, a)
    b = gradc.arange(6.)
    with pytest.raises(RuntimeError, match="shares memory"):
        compiled(b[0:4], b[2:6])
    c, d = gradc.ones(4), gradc.ones(4)
    assert compiled(c, d).tolist() == [2.0] * 4 and c.tolist() == [3.0] * 4


@pytest.mark.parametrize("body,what", [("x.register_hook(print)", "register_hook"), ("x.retain_grad()", "retain_grad"),
                                       ("x.data", "Tensor.data"),
                                       ("x.requires_grad_(False)",
                                        "requires_grad_ of the caller's tensor .an argument or a captured tensor.")])
def test_eager_autograd_api_inside_a_compiled_function_is_a_clear_error(body, what):
    f = gradc.compile(eval("lambda x: (" + body + ", x * 2)[1]"))
    with pytest.raises(gradc.ir.tracer.TraceError, match=f"{what} inside a @gradc.compile function is not supported"):
        f(gradc.ones(2, requires_grad=True))


def _writes_through_views(x, y):
    z = x * 1.0
    z[1:] += y                      # an augmented assignment through a slice
    z[:, 0].mul_(x[0, 0])           # a write through a column
    v = z.reshape(-1)               # a view taken before the base is written ...
    z.t()[1].add_(2.0)              # ... through a transposed view
    z[z > 1.0] = 0.5                # a mask assignment
    z.diagonal().sub_(y.sum())
    return (v * v).sum() + (z * x).sum()


def test_writes_through_views_and_masks_compile_as_eagerly(compiled_vs_eager):
    """Under @gradc.compile an in-place write through a view reaches its base, a view taken
    earlier sees a write into its base, and x[mask] = v is where(mask, v, x): values and
    gradients as eagerly."""
    rng = np.random.default_rng(3)
    compiled_vs_eager(_writes_through_views, rng.standard_normal((3, 3)), rng.standard_normal((2, 3)))


def test_detached_tensors_share_memory_under_compile():
    """A detached tensor sees later writes into its source, as eagerly; a write through it (which
    eagerly would change the source without history) is a clear error under @gradc.compile."""
    from gradc.ir.tracer import TraceError

    def reads(x):
        y = x * 1
        d = y.detach()
        y.mul_(3)
        return y + d
    x = gradc.tensor([1., 2.])
    assert gradc.compile(reads)(x).tolist() == reads(x).tolist() == [6., 12.]

    def writes(x):
        y = x * 1
        y.detach().mul_(10)
        return y + 0
    with pytest.raises(TraceError, match="in-place write through detach"):
        gradc.compile(writes)(x)


_LOCATION = re.compile(r" \(at [^()]*:\d+\)$")     # (compiled errors add where in the user's code)


@pytest.mark.parametrize("shape,body", [
    ((), lambda x: len(x)), ((), lambda x: [v for v in x]), ((), lambda x: iter(x)), ((3,), lambda x: x + "a"),
    ((3,), lambda x: "a" + x), ((3,), lambda x: x * [1]), ((3,), lambda x: x @ "a"), ((3,), lambda x: x - None),
    ((3,), lambda x: int(x)), ((3,), lambda x: float(x)), ((3,), lambda x: complex(x)), ((3,), lambda x: bool(x)),
    ((3,), lambda x: x[1.5]), ((2, 3), lambda x: x[None, 1.5]), ((3,), lambda x: x[[1.5]]), ((3,), lambda x: x["a"]),
    ((3,), lambda x: x()), ((3,), lambda x: x.foo), ((3,), lambda x: setattr(x, "shape", 3)),
    ((3,), lambda x: range(x)), ((3,), lambda x: [1, 2][x]), ((3,), lambda x: divmod(x, "a")),
    ((3,), lambda x: sorted([x, "b"])), ((3,), lambda x: x.__setitem__(0, "a")), ((3,), lambda x: round(x, "a")),
])
def test_python_errors_on_traced_tensors_read_as_eager_ones(shape, body):
    """Python's own errors on a traced tensor (a wrong operand, len or iteration of a 0-d tensor, a
    conversion of several elements, a bad index) have the eager tensor's type, message and name."""
    errors = []
    for _, fn in _both(body):
        with pytest.raises(Exception) as info:
            fn(gradc.ones(shape))
        errors.append((type(info.value), _LOCATION.sub("", str(info.value))))
    assert errors[0] == errors[1]
    assert "Proxy" not in errors[1][1]
