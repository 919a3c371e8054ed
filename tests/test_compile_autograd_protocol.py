"""The autograd protocol around @gradc.compile functions, against PyTorch and eager gradc: which
inputs get gradients, tensors returned twice, hooks and retain_grad on outputs the function also
uses, version-counter errors exactly where eager autograd raises them, freed graphs under
create_graph=True, and double backward through compiled outputs.

Each scenario is written once over ``(m, C)``: ``m`` the module (torch or gradc), ``C`` the
decorator (identity, or ``gradc.compile``); what it returns must be equal for the three runs."""
from __future__ import annotations

import numpy as np
import pytest

import gradc

torch = pytest.importorskip("torch")

RUNS = {"torch": (torch, lambda f: f), "eager": (gradc, lambda f: f), "compiled": (gradc, gradc.compile)}


def _shown(v):
    """A comparable form of a scenario's result: tensors as rounded lists, errors as their text."""
    if isinstance(v, (tuple, list)):
        return [_shown(x) for x in v]
    if hasattr(v, "detach") and hasattr(v, "tolist"):
        return ("tensor", np.round(np.array(v.detach().tolist(), dtype=float), 8).tolist())
    return v


def _outcome(fn):
    try:
        return _shown(fn())
    except RuntimeError as e:
        return ("error", str(e).split("\n")[0])


def _agree(scenario):
    got = {name: _shown(scenario(m, c)) for name, (m, c) in RUNS.items()}
    assert got["eager"] == got["torch"], got
    assert got["compiled"] == got["torch"], got
    return got["torch"]


def _x(m, values=(0.5, -1.0, 2.0)):
    return m.tensor(list(values), dtype=m.float64, requires_grad=True)


def test_an_input_no_output_given_a_gradient_depends_on_gets_none():
    def scenario(m, C):
        f = C(lambda a, b: (a * 2, b.sin()))
        x, y = _x(m), _x(m)
        y.register_hook(lambda g: g * 2)      # (not called: no gradient reaches y)
        f(x, y)[0].sum().backward()
        unused = _outcome(lambda: m.autograd.grad(f(x, y)[0].sum(), [x, y]))
        return x.grad, y.grad is None, unused, m.autograd.grad(f(x, y)[0].sum(), [x, y], allow_unused=True)[1] is None
    assert _agree(scenario)[1:] == [True, ["error", "The differentiated Tensor at index 1 appears to not have been "
                                           "used in the graph. Set allow_unused=True if this is the desired "
                                           "behavior."], True]


def test_a_tensor_returned_twice_is_one_tensor():
    def scenario(m, C):
        f = C(lambda a: (a.sin(),) * 2)
        x = _x(m)
        o = f(x)
        o[0].register_hook(lambda g: g * 10)
        (o[0] + o[1] * 2).sum().backward()
        return o[0] is o[1], x.grad
    assert _agree(scenario)[0] is True


def _used_inside(a, b):
    t = a * 3
    return t, t.cos() * b, (t > 0).long()


def test_hooks_and_retain_grad_on_an_output_used_inside_see_every_gradient():
    """Eagerly a hook on ``t`` sees the gradient from ``t.cos() * b`` too; the compiled node
    replays the function eagerly to run it there."""
    def scenario(m, C):
        f = C(_used_inside)
        x, b = _x(m), _x(m, (1.0, 2.0, 3.0))
        o = f(x, b)
        seen = []
        o[0].register_hook(lambda g: g * 3 + 1)
        o[0].register_hook(lambda g: seen.append(g.detach().clone()))
        o[0].retain_grad()
        o[1].retain_grad()
        (o[0].sum() + (o[1] ** 2).sum()).backward()
        only_inside = f(x, b)
        only_inside[0].retain_grad()
        only_inside[1].sum().backward()       # no gradient given to output 0 itself
        return x.grad, b.grad, o[0].grad, o[1].grad, seen, only_inside[0].grad
    _agree(scenario)


def test_output_hooks_under_create_graph_run_again_in_the_second_backward():
    """sigmoid saves its result: eagerly the gradient's graph runs through the hooked output."""
    def scenario(m, C):
        f = C(lambda p0, p1, p2: (p2.sin().abs().sigmoid(), p0 + p1))
        x = _x(m)
        o = f(x, x * 1, x * 1)
        o[0].register_hook(lambda g: g * 3 + 1)
        g, = m.autograd.grad(o[0].sum() + o[1].sum(), [x], create_graph=True)
        (g * x.detach()).sum().backward()
        return g, x.grad
    _agree(scenario)


@pytest.mark.parametrize("body", ["(a.exp() * 1, a.tanh())", "((a * a), a.sin())", "(a.sigmoid() + b, b * 2)",
                                  "((a + b).relu() * 3, a / 3)"])
def test_in_place_change_of_an_input_after_a_non_scalar_call(body):
    """The separate backward raises where eager autograd saved the input, and otherwise computes
    with the values at the call (a copy where it needs an input eager autograd did not save)."""
    def scenario(m, C):
        f = C(eval("lambda a, b: " + body))
        x, y = _x(m), _x(m, (1.0, 2.0, -3.0))
        a = x * 1
        o = f(a, y)
        a.add_(1)
        return _outcome(lambda: ((o[0] + o[1]).sum().backward(), x.grad, y.grad)[1:])
    _agree(scenario)


def test_a_retained_scalar_loss_backs_up_twice_after_an_unsaved_input_changes():
    def scenario(m, C):
        f = C(lambda a, b: (a.exp() * b).sum())
        x, b = _x(m), m.tensor([1.0, 2.0, 3.0], dtype=m.float64)
        loss = f(x * 1, b)
        loss.backward(retain_graph=True)
        b.add_(1)                          # saved by the product: the second backward raises
        saved = _outcome(lambda: loss.backward())
        x.grad = None
        loss = f(x * 1, b)
        loss.backward(retain_graph=True)
        with m.no_grad():
            x.add_(1)                      # exp saves its result: no error, the old values count
        loss.backward()
        return saved, x.grad
    _agree(scenario)


def test_ops_no_output_depends_on_save_nothing():
    def f(p0, p1):
        t0 = p0 + p1.sum(dim=0, keepdim=True)
        unused = p1.maximum(p0)            # eagerly a node no backward reaches
        return t0.sum()

    def scenario(m, C):
        x = m.tensor([[-0.1, 0.3], [0.2, 0.4]], dtype=m.float64, requires_grad=True)
        loss = C(f)(x, x)
        with m.no_grad():
            x.add_(0.5)
        loss.backward()
        return x.grad
    _agree(scenario)


DOUBLE = ["(a.exp() * b).sum()", "((a + b) * (a + b)).sum()", "((a * b) * a).sum()", "(a * a * b).sum()",
          "((a * 2).sin() * b).sum()", "(a.exp() * b.sin()).sum()", "(a.exp() * b).sin().sum()",
          "((a + b).exp() * a).sum()"]


@pytest.mark.parametrize("body", DOUBLE)
@pytest.mark.parametrize("first,second", [("x", "x,b"), ("x", "b"), ("b", "x"), ("x,b", "x")])
@pytest.mark.parametrize("retain", [False, True])
def test_double_backward_after_the_first_freed_the_graph(body, first, second, retain):
    """autograd.grad(create_graph=True, retain_graph=False) then a second derivative: PyTorch's
    error exactly where eagerly the gradient's graph runs through a freed node that saved
    tensors; with the graph retained, a later backward of the loss fails where the second
    backward freed such nodes."""
    def scenario(m, C):
        f = C(eval("lambda a, b: " + body))
        x, b = _x(m, (0.5, -1.0)), _x(m, (1.0, 2.0))
        names = {"x": x, "b": b}
        loss = f(x, b)

        def run():
            g = m.autograd.grad(loss, [names[n] for n in first.split(",")], create_graph=True, retain_graph=retain)
            h = m.autograd.grad(sum(v.sum() for v in g), [names[n] for n in second.split(",")], allow_unused=True)
            return g, h
        out = [_outcome(run)]
        if retain:
            out.append(_outcome(lambda: (loss.backward(), x.grad, b.grad)[1:]))
        return out
    _agree(scenario)


def test_create_graph_with_an_output_given_no_gradient():
    """Eagerly the unused output's part of the graph never runs: no second-order dependence on
    the inputs only it reads (and no error from their freed nodes)."""
    def f0(p0, p1, p2):
        return (p0 / 3) * 1, p2 * p0.relu()

    def scenario(m, C):
        x = m.tensor([[1.03, -0.781], [0.389, 0.84]], dtype=m.float64, requires_grad=True)
        o = C(f0)(x * 1, x, x * 1)
        g, = m.autograd.grad(o[0].sum() + (x * x.sum()).sum(), [x], create_graph=True, retain_graph=False)
        (g * g).sum().backward()
        return g, x.grad
    _agree(scenario)


def test_second_backward_through_a_compiled_output_an_eager_op_saved():
    def f0(p0):
        return (p0.cos() + p0.sum(dim=0, keepdim=True)).sin()

    def scenario(m, C):
        x = m.tensor([-1.111, 0.911, -0.314, -0.016], dtype=m.float64, requires_grad=True)
        o = C(f0)(x)
        g, = m.autograd.grad(o.sum() + (o * x).sum(), [x], create_graph=True, retain_graph=True)
        h = m.autograd.grad((g * g).sum(), [x])
        return g, h, _outcome(lambda: (o.sum() + (o * x).sum()).backward())
    _agree(scenario)


def test_a_function_that_saves_nothing_is_not_freed():
    """p1 - p0 saves no tensor: eagerly a second pass through it after a non-retained one works."""
    def scenario(m, C):
        f = C(lambda p0, p1: p1 - p0)
        x, y = _x(m), _x(m, (1.0, 2.0, 3.0))
        o = f(y, x)
        loss = o.sum() + (o * x).sum()
        g, = m.autograd.grad(loss, [x], create_graph=True, retain_graph=True)
        h = m.autograd.grad((g * y.detach()).sum(), [x, y], allow_unused=True)
        loss.backward()
        return g, h, x.grad, y.grad
    _agree(scenario)


def test_a_replayed_graph_stands_for_the_node_in_later_backwards():
    """After a create_graph=True backward that replayed the function (retain_grad on an output),
    the replayed graph is the node's: a second-order pass frees it, and a later backward of the
    loss is PyTorch's error, as eagerly."""
    def f0(p0):
        t0 = p0.tanh()
        t1 = t0 * p0.sum()
        return t1 * t0.mean(dim=-1, keepdim=True), t0

    def scenario(m, C):
        x = m.tensor([[-0.199, -0.534, 0.163], [0.039, 1.251, -0.369]], dtype=m.float64, requires_grad=True)
        o = C(f0)(x)
        o[0].retain_grad()
        loss = o[0].sum() + (o[1] * 2).sum()
        g, = m.autograd.grad(loss, [x], create_graph=True, retain_graph=True)
        h = m.autograd.grad((g * g).sum(), [x])
        return g, h, o[0].grad, _outcome(lambda: loss.backward())
    _agree(scenario)


def test_second_order_pass_reaching_a_replayed_node_twice():
    """The gradient's graph runs through the replayed graph and, through an output an eager op
    saved, through the node itself: one pass, each node once."""
    def f0(p0):
        t0 = p0.cos()
        return t0.abs().sum(), t0.abs(), -t0.abs()

    def scenario(m, C):
        x = m.tensor([[1.266, 0.154], [-0.068, 0.131]], dtype=m.float64, requires_grad=True)
        o = C(f0)(x)
        loss = o[1].sin().sum() + o[2].sum()
        g, = m.autograd.grad(loss, [x], create_graph=True, retain_graph=True)
        (g * x.detach()).sum().backward()
        return g, x.grad
    _agree(scenario)


def test_retained_grad_of_an_output_no_requested_input_depends_on():
    """autograd.grad with respect to x only: eagerly the node of an output that depends on y alone
    does not run, so its retain_grad stays None."""
    def f0(p0, p1):
        q = (p0 * 2).sigmoid()
        return q.sum(), q * p1

    def scenario(m, C):
        x, y = _x(m), _x(m, (1.0, -2.0, 0.5))
        o = C(f0)(y, x)
        o[0].retain_grad()
        g = m.autograd.grad(o[0] + o[1].sum(), [x], create_graph=True)
        return g, o[0].grad is None
    assert _agree(scenario)[1] is True


@pytest.mark.parametrize("body", ["((-b) ** 2).sum()", "(a * (a * 2).abs().detach().mean()).sum()",
                                  "(a.relu() * b).sum()", "(a.maximum(b) * a).sum()"])
def test_double_backward_through_nodes_that_keep_no_graph(body):
    """pow with a constant exponent reads its result only for the exponent's gradient; a no_grad
    block's ops and relu's/maximum's masks keep no graph: no error after the first backward freed
    the graph."""
    def scenario(m, C):
        f = C(eval("lambda a, b: " + body))
        x, b = _x(m), _x(m, (1.0, -2.0, 0.5))
        g = m.autograd.grad(f(x, b), [x, b], create_graph=True, retain_graph=False, allow_unused=True)
        return _outcome(lambda: m.autograd.grad(sum(v.sum() for v in g if v is not None), [x, b], allow_unused=True))
    _agree(scenario)


def test_an_enable_grad_block_inside_a_function_called_under_no_grad():
    """Eagerly what the block computes requires grad (and backs up to the inputs), the rest not."""
    def scenario(m, C):
        def f0(p0, p1):
            with m.enable_grad():
                t0 = p0 / 3
            return p1 * t0.mean(dim=-1, keepdim=True), t0, p0 * 2
        x = m.tensor([[-0.668, 1.729], [-0.474, 0.579]], dtype=m.float64, requires_grad=True)
        with m.no_grad():
            o = C(f0)(x, x)
        o[1].sum().backward()
        return [(v.requires_grad, v.is_leaf) for v in o], x.grad
    assert _agree(scenario)[0] == [[False, True], [True, False], [False, True]]


@pytest.mark.filterwarnings("ignore")      # (the programs read .grad of non-leaves, as users do)
@pytest.mark.parametrize("first", range(0, 80, 16))
def test_fuzzed_protocol_scenarios_compile_as_eagerly(first):
    """A few dozen programs of the seeded fuzzer (``autograd_protocol_fuzz``): the compiled run's
    record (values, flags, reached leaves, .grad, exceptions) is the eager run's."""
    import autograd_protocol_fuzz as fuzz
    for seed in range(first, first + 16):
        chunks = fuzz.Gen(seed).scenario()
        found = fuzz.check(chunks, fuzz.tolerance(chunks), pairs=(("eager", "compiled"),))
        assert found is None, (seed, fuzz.short(found[1][1]), fuzz.short(found[1][2]))


def test_a_detached_input_returned_shares_its_version_counter():
    """p1.detach() returned by a compiled function is a view of the caller's tensor with its version
    counter, as eagerly: an eager op that saved it sees the input's in-place change."""
    def scenario(m, C):
        x, y = _x(m), _x(m, (3.0, 4.0, 5.0))
        o = C(lambda p0, p1: (p1.detach(), p0 * 2, p1.t().detach()))(x, y)
        loss = (o[0] * y).sum() + o[1].sum() + o[2].sum()
        with m.no_grad():
            y.add_(0.5)
        return o[0]._version == y._version == o[2]._version, _outcome(lambda: loss.backward())
    assert _agree(scenario)[0] is True


@pytest.mark.parametrize("body", ["(a + 1).relu().sum()", "F.leaky_relu(a - b).sum()", "(a.relu() * b).sum()"])
def test_create_graph_gradient_through_relu_requires_grad_as_eagerly(body):
    """PyTorch's backward of relu (threshold_backward) takes the input: under create_graph=True the
    first-order gradient requires grad (ThresholdBackwardBackward0) and its derivative is zero;
    the compiled adjoint's where carries none, so the node ties the gradient to the input."""
    def scenario(m, C):
        F = m.nn.functional
        f = C(eval("lambda a, b: " + body, {"F": F}))
        x, b = _x(m), _x(m, (1.0, -2.0, 0.5))
        g = m.autograd.grad(f(x, b), [x], create_graph=True)[0]
        h = m.autograd.grad((g * g).sum(), [x], allow_unused=True)[0]
        return (g.requires_grad, g.is_leaf, g.grad_fn is None), h
    _agree(scenario)


def test_a_view_of_an_input_returned_under_no_grad_requires_grad_as_eagerly():
    """Called under no_grad, a view of an input that requires grad is a view made in no_grad
    mode: it requires grad (a leaf taking no gradient); a detached one does not."""
    def scenario(m, C):
        f = C(lambda a, b: (a * 2, b.t(), b[0].detach(), b[1:]))
        x = m.tensor([[0.5, -1.0], [2.0, 3.0]], dtype=m.float64, requires_grad=True)
        with m.no_grad():
            outs = f(x * 1, x)
        flags = [(v.requires_grad, v.is_leaf, v.grad_fn is None) for v in outs]
        (outs[1] * 3).sum().backward()
        return flags, x.grad, _outcome(lambda: outs[3].add_(1))
    flags = _agree(scenario)[0]
    assert flags == [[False, True, True], [True, True, True], [False, True, True], [True, True, True]]


def test_an_inference_tensor_is_refused_exactly_where_eager_autograd_would_save_it():
    def scenario(m, C):
        with m.inference_mode():
            a = m.tensor([1.0, 2.0, 3.0], dtype=m.float64)
        x = _x(m)
        saves = C(lambda p, q: p * q)            # mul saves both operands
        adds = C(lambda p, q: p + q)             # add saves neither
        out = [_outcome(lambda: saves(x, a)), _outcome(lambda: adds(x, a).sum().backward()), x.grad]
        with m.no_grad():
            out.append(saves(x, a))
        return out
    assert _agree(scenario)[0][0] == "error"


@pytest.mark.parametrize("body", ["(F.hardtanh(a * 2) + b).sum()", "F.max_pool1d(a.reshape(1, 1, 3), 2).sum() - b.sum()",
                                  "F.pad(a.reshape(1, 3), (2, 1), mode='reflect').sum() + b.sum()"])
def test_create_graph_gradient_through_a_composition_requires_grad_as_eagerly(body):
    """The same for compositions of table ops that PyTorch records as one node whose backward takes
    the input (hardtanh, the pools, the pads): only the inputs whose gradient runs through it are
    tied (b's gradient, a constant, does not require grad)."""
    def scenario(m, C):
        F = m.nn.functional
        f = C(eval("lambda a, b: " + body, {"F": F}))
        x, b = _x(m), _x(m, (1.0, -2.0, 0.5))
        ga, gb = m.autograd.grad(f(x, b), [x, b], create_graph=True)
        h = m.autograd.grad((ga * ga).sum(), [x], allow_unused=True)[0]
        return (ga.requires_grad, gb.requires_grad, ga.grad_fn is None), h
    assert _agree(scenario)[0] == [True, False, False]


def _changed_then_differentiated(m, C, change):
    """A compiled call, an in-place ``change`` of the input eager autograd did not save (it saved
    ``a * 2``), then a create_graph=True gradient and its derivative."""
    x = _x(m)
    xc = x * 1.0
    y = C(lambda a: (a * 2).sin().sum())(xc)
    change(m, x, xc)
    (g,) = m.autograd.grad(y, x, create_graph=True)
    return g, m.autograd.grad((g * g).sum(), x)[0]


CHANGES = {"add_": lambda m, x, xc: xc.add_(1.0), "a slice": lambda m, x, xc: xc[1:].mul_(3.0),
           "twice": lambda m, x, xc: (xc.add_(1.0), xc.mul_(2.0)),
           "recorded": lambda m, x, xc: xc.mul_(x.detach() + 2)}


@pytest.mark.parametrize("change", CHANGES.values(), ids=list(CHANGES))
def test_create_graph_after_an_input_unsaved_eagerly_changed_in_place(change):
    """Eager autograd saved what it computed from the input, so the input may change; the compiled
    create_graph backward computes from the input again: from the copy kept of it before the write
    (in the input's place in the graph at the call)."""
    _agree(lambda m, C: _changed_then_differentiated(m, C, change))


def test_create_graph_after_a_leaf_changed_through_data():
    """A write through ``x.data`` counts no version of x, yet changes what x holds: the compiled
    create_graph backward computes from the copy kept before it, as eager from what it saved."""
    def scenario(m, C):
        x = _x(m)
        y = C(lambda a: (a * 2).sin().sum())(x)
        x.data.add_(1.0)
        x.data.data.mul_(2.0)
        g = m.autograd.grad(y, x, create_graph=True)[0]
        return g, m.autograd.grad((g * g).sum(), x)[0], x._version
    _agree(scenario)


def test_create_graph_after_a_leaf_changed_under_no_grad():
    def scenario(m, C):
        x, w = _x(m), _x(m, (1.5, 0.5, -2.0))
        o1, o2 = C(lambda a, b: ((a * 2).sin() * b.exp(), (a * 3).cos() * b))(x, w)
        with m.no_grad():
            x.mul_(3.0)
        g = m.autograd.grad((o1 * o2).sum(), [x, w], create_graph=True)
        return g, m.autograd.grad((g[0] * g[1]).sum(), [x, w])
    _agree(scenario)


def test_an_output_hooks_replay_after_an_input_changed_in_place():
    """A hook on an output the function also uses makes the backward replay the function eagerly
    from its inputs: from the copy kept of one changed since."""
    def scenario(m, C):
        x = _x(m)
        xc = x * 1.0
        o1, o2 = C(lambda a: ((s := (a * 2).sin()), s.sum() * 2))(xc)
        o1.register_hook(lambda g: g * 3)
        xc.add_(1.0)
        (o1.sum() + o2).backward()
        return x.grad
    _agree(scenario)


def test_an_input_saved_eagerly_and_changed_still_raises_under_create_graph():
    def scenario(m, C):
        x = _x(m)
        xc = x * 1.0
        y = C(lambda a: (a * a).sum())(xc)
        xc.add_(1.0)
        return _outcome(lambda: m.autograd.grad(y, x, create_graph=True))
    assert "modified by an inplace operation" in _agree(scenario)[1]


def test_the_nodes_watching_an_input_are_forgotten_when_gone():
    """Each call's node watches the inputs it would read again (a weak reference on the input's
    version counter); those of calls whose graphs are gone are dropped as new ones come."""
    f = gradc.compile(lambda a: (a * 2).sin().sum())
    x = gradc.tensor([0.5, -1.0, 2.0], requires_grad=True)
    for _ in range(100):
        f(x).backward()
    assert len(x._version_counter.watchers) <= 8
    with gradc.no_grad():
        x.add_(1.0)
    assert x._version_counter.watchers is None


def test_live_nodes_watching_an_input_keep_its_value_when_gone_ones_are_replaced():
    """A call whose last watcher of an input is gone takes that place in the list: the nodes still
    alive are all told of a later in-place write, and each one's create_graph=True gradient
    reads the input's value at its call, as eager autograd's saved tensors."""
    def scenario(m, C):
        f = C(lambda a, b, c: ((a + b) * (a * c)).mean())      # b: not saved eagerly, read again
        a, b, c = _x(m), _x(m, (3.0, 1.0, -2.0)), _x(m, (1.5, 2.0, 0.5))
        kept = []
        for k in range(6):
            y = f(a, b, c)
            if k % 2 == 0:
                kept.append(y)
            else:
                del y            # its node is gone: the next call's replaces it
        with m.no_grad():
            b.mul_(10.0)
        grads = [m.autograd.grad(y, [a, c], create_graph=True) for y in kept]
        second = [m.autograd.grad(ga.sum() + gc.sum(), [a, c]) for ga, gc in grads]
        return grads, second
    _agree(scenario)


def test_one_node_serves_every_output_as_pytorchs_compiled_functions():
    """Two outputs, each computed from one input: eagerly each has a node of its own, reaching its
    input only; PyTorch's compiled functions (torch.compile's AOTAutograd, an autograd.Function)
    record one node for both whose next_functions lists both inputs, and so does @gradc.compile
    (one node per call: no node per output to make, nor to run in backward).  The gradients are
    eager autograd's all the same: backward from one output gives the other input none."""
    class Both(torch.autograd.Function):
        @staticmethod
        def forward(ctx, a, b):
            return a * 2, b.sin()

        @staticmethod
        def backward(ctx, ga, gb):
            return ga * 2, gb

    def shown(o, leaves):
        return o[0].grad_fn is o[1].grad_fn, [[[v is n.variable for v in leaves].index(True)
                                               for n, _ in t.grad_fn.next_functions] for t in o]
    x, y = _x(torch), _x(torch)
    want = shown(Both.apply(x, y), [x, y])
    x, y = _x(gradc), _x(gradc)
    o = gradc.compile(lambda a, b: (a * 2, b.sin()))(x, y)
    assert shown(o, [x, y]) == want == (True, [[0, 1], [0, 1]])
    o[0].sum().backward()
    assert x.grad.tolist() == [2.0, 2.0, 2.0] and y.grad is None


@pytest.mark.parametrize("index", ["a.relu().argmax()", "F.hardtanh(a * 3).argmax()", "(F.max_pool1d(a.reshape(1, 1, 3), 2) > 0)"])
def test_a_node_that_only_computes_an_index_ties_no_gradient(index):
    """relu/hardtanh/a pool whose result only feeds an argmax or a comparison: eagerly no gradient
    runs back through it, so the create_graph=True gradient of a linear output stays a constant."""
    def scenario(m, C):
        F = m.nn.functional
        f = C(eval("lambda a: (a * 2, " + index + ")", {"F": F}))
        x = _x(m)
        g = m.autograd.grad(f(x)[0].sum(), [x], create_graph=True)[0]
        return g, g.requires_grad
    assert _agree(scenario)[1] is False


@pytest.mark.parametrize("body", ["a.relu().sum()", "F.hardtanh(a * a).sum()", "F.max_pool1d((a * a).reshape(1, 1, 3), 2).sum()",
                                  "F.hardtanh(a).sum()", "(a.relu() * a).sum()"])
def test_a_tied_gradient_after_its_graph_was_freed(body):
    """The create_graph=True gradient through relu/hardtanh/a pool is tied to the node's input (or
    relu's result): eagerly a second backward runs (with zeros) through that node and the saving
    nodes before it, PyTorch's error once a first backward freed them; none when none saved."""
    def scenario(m, C):
        F = m.nn.functional
        f = C(eval("lambda a: " + body, {"F": F}))
        x = _x(m)
        (g,) = m.autograd.grad(f(x), x, create_graph=True, retain_graph=False)
        return g, _outcome(lambda: m.autograd.grad(g.sum(), x, allow_unused=True)[0])
    _agree(scenario)


def test_create_graph_through_a_function_that_captures_a_parameter():
    """A gradient penalty through a compiled function reading a parameter from outside (a
    captured tensor, an extra argument of the traced function): the create_graph backward's
    gradient function takes it as an argument like the others."""
    def scenario(m, C):
        w = m.tensor([1.5, -0.5, 2.0], dtype=m.float64, requires_grad=True)
        lin = m.nn.Linear(3, 2).double()
        with m.no_grad():
            lin.weight.copy_(m.tensor([[0.1, -0.2, 0.3], [0.5, 0.4, -0.6]], dtype=m.float64))
            lin.bias.fill_(0.25)
        f = C(lambda a: (lin(a.tanh() * w) ** 2).sum())
        x = _x(m)
        (g,) = m.autograd.grad(f(x), x, create_graph=True)
        return g, m.autograd.grad((g * g).sum(), [x, w, lin.weight, lin.bias])
    _agree(scenario)


def test_the_copy_kept_of_a_changed_input_goes_with_the_freed_graph():
    f = gradc.compile(lambda a: (a * 2).sin().sum())
    x = gradc.tensor([0.5, -1.0, 2.0], requires_grad=True)
    y = f(x)
    with gradc.no_grad():
        x.add_(1.0)
    node = y.grad_fn
    assert node._kept[0].tolist() == [0.5, -1.0, 2.0]
    y.backward()
    assert node._kept is None
    assert x.grad.tolist() == pytest.approx([2 * np.cos(1.0), 2 * np.cos(-2.0), 2 * np.cos(4.0)])
