"""``gradc.autograd.grad`` and ``requires_grad_()`` inside ``@gradc.compile`` functions
(``gradc/ir/traced_grad.py``): a gradient penalty (WGAN-GP), Hessian-vector products, a
MAML-style inner step, a physics-informed loss, a PGD attack, ``allow_unused``,
``grad_outputs``, ``create_graph=False``, freed graphs and the transforms built on ``grad``,
each run by PyTorch, by eager gradc and compiled, with the values and the outer gradients of
every parameter compared in float64 (to 1e-9).

Each scenario is written once over ``(m, C)``: ``m`` the module (torch or gradc), ``C`` the
decorator (identity, or ``gradc.compile``)."""
from __future__ import annotations

import re

import numpy as np
import pytest

import gradc
from gradc.ir.errors import TraceError

torch = pytest.importorskip("torch")

RUNS = {"torch": (torch, lambda f: f), "eager": (gradc, lambda f: f), "compiled": (gradc, gradc.compile)}


def _arrays(v):
    """Tensors of a scenario's result as NumPy arrays (None, flags and messages as they are)."""
    if isinstance(v, (tuple, list)):
        return [_arrays(x) for x in v]
    if hasattr(v, "detach") and hasattr(v, "tolist"):
        return np.array(v.detach().tolist(), dtype=float)
    return v


def _same(a, b, path="result"):
    if isinstance(a, list):
        assert isinstance(b, list) and len(a) == len(b), f"{path}: {a!r} != {b!r}"
        for k, (x, y) in enumerate(zip(a, b)):
            _same(x, y, f"{path}[{k}]")
    elif isinstance(a, np.ndarray):
        assert isinstance(b, np.ndarray), f"{path}: {a!r} != {b!r}"
        np.testing.assert_allclose(b, a, rtol=1e-9, atol=1e-12, err_msg=path)
    else:
        assert a == b, f"{path}: {a!r} != {b!r}"


def _agree(scenario):
    """The scenario's result from the three runs, checked equal (values to 1e-9); torch's."""
    got = {name: _arrays(scenario(m, c)) for name, (m, c) in RUNS.items()}
    _same(got["torch"], got["eager"])
    _same(got["torch"], got["compiled"])
    return got["torch"]


def _message(e: Exception) -> str:
    """An error's message without the user's line that errors raised while tracing end with."""
    return re.sub(r" \(at test_compile_traced_grad\.py:\d+\)$", "", str(e))


def _data(shape, seed):
    return np.random.default_rng(seed).standard_normal(shape)


def _t(m, array, requires_grad=False):
    return m.tensor(np.asarray(array).tolist(), dtype=m.float64, requires_grad=requires_grad)


def _mlp(m, sizes=(4, 16, 1), seed=0):
    """``Linear, Tanh, Linear, ...`` in float64 with the same weights in torch and gradc."""
    layers = []
    for k, (i, o) in enumerate(zip(sizes, sizes[1:])):
        lin = m.nn.Linear(i, o, dtype=m.float64)
        with m.no_grad():
            lin.weight.copy_(_t(m, _data((o, i), seed + 2 * k) * 0.5))
            lin.bias.copy_(_t(m, _data((o,), seed + 2 * k + 1) * 0.1))
        layers += [lin, m.nn.Tanh()]
    return m.nn.Sequential(*layers[:-1])


def _grads(params):
    return [p.grad for p in params]


def test_wgan_gradient_penalty():
    def scenario(m, C):
        D = _mlp(m)

        @C
        def step(real, fake, a):
            x = (a * real + (1 - a) * fake).requires_grad_(True)
            g, = m.autograd.grad(D(x).sum(), x, create_graph=True)
            gp = ((g.norm(2, dim=1) - 1) ** 2).mean()
            return D(fake).mean() - D(real).mean() + 10 * gp
        out = []
        for seed in (1, 2):       # the second call runs the compiled function again
            D.zero_grad()
            loss = step(_t(m, _data((8, 4), seed)), _t(m, _data((8, 4), seed + 10)),
                        _t(m, np.random.default_rng(seed).random((8, 1))))
            loss.backward()
            out += [loss, loss.requires_grad, _grads(D.parameters())]
        return out
    _agree(scenario)


@pytest.mark.parametrize("backward", ["separate", "precompute"])
def test_wgan_gradient_penalty_with_each_backward_form(backward):
    """The same step with the partitioned forward and backward, and with the gradients computed
    by the forward (a scalar loss): eager gradc's values and gradients."""
    def run(C):
        D = _mlp(gradc, seed=4)

        @C
        def step(real, fake, a):
            x = (a * real + (1 - a) * fake).requires_grad_(True)
            g, = gradc.autograd.grad(D(x).sum(), x, create_graph=True)
            return D(fake).mean() - D(real).mean() + 10 * ((g.norm(2, dim=1) - 1) ** 2).mean()
        loss = step(_t(gradc, _data((6, 4), 5)), _t(gradc, _data((6, 4), 6)), _t(gradc, _data((6, 1), 7)))
        loss.backward()
        return _arrays([loss, _grads(D.parameters())])
    _same(run(lambda f: f), run(lambda f: gradc.compile(f, backward=backward)))


def test_gradient_penalty_on_detached_inputs_and_captured_weights():
    """``x.detach().requires_grad_()`` of an argument that requires grad: no gradient of the
    penalty reaches the argument, every weight gets one."""
    def scenario(m, C):
        D = _mlp(m, (3, 5, 2), seed=3)

        @C
        def penalty(x):
            xi = x.detach().requires_grad_()
            g, = m.autograd.grad(D(xi).pow(2).sum(), xi, create_graph=True)
            return (g * g).sum() + D(x).sum()
        x = _t(m, _data((4, 3), 5), requires_grad=True)
        loss = penalty(x)
        loss.backward()
        return loss, x.grad, _grads(D.parameters())
    _agree(scenario)


@pytest.mark.filterwarnings("ignore:Using backward\\(\\) with create_graph=True")
def test_gradient_penalty_with_hooks_and_a_third_derivative():
    """A hook and retain_grad on the penalty output (the node replays the function eagerly),
    then backward(create_graph=True) and the gradient of the weights' gradient norm: third
    derivatives through the traced gradient."""
    def scenario(m, C):
        D = _mlp(m, (3, 4, 1), seed=21)
        params = list(D.parameters())

        @C
        def step(real):
            x = (real * 1.5).requires_grad_()
            g, = m.autograd.grad(D(x).sum(), x, create_graph=True)
            gp = ((g.norm(2, dim=1) - 1) ** 2).mean()
            return gp, D(real).mean() + 10 * gp
        gp, total = step(_t(m, _data((5, 3), 22)))
        gp.retain_grad()
        seen = []
        gp.register_hook(lambda g: seen.append(g.item()))
        total.backward(create_graph=True)
        h = m.autograd.grad(sum((p.grad ** 2).sum() for p in params), params, allow_unused=True)
        return gp.grad, seen, _grads(params), list(h)
    got = _agree(scenario)
    assert got[1] == [10.0] and got[3][-1] is None


def test_hessian_vector_product_is_grad_of_grad():
    def scenario(m, C):
        @C
        def hvp(x, w, v):
            y = (x @ w).tanh().pow(3).sum()
            g, = m.autograd.grad(y, x, create_graph=True)
            hv, = m.autograd.grad(g, x, grad_outputs=v, create_graph=True)
            return hv, g
        x, w = _t(m, _data((3, 4), 1), True), _t(m, _data((4, 2), 2), True)
        v = _t(m, _data((3, 4), 3))
        hv, g = hvp(x, w, v)
        (hv.pow(2).sum() + g.sum()).backward()      # third derivatives, for x and w
        return hv, g, hv.requires_grad, x.grad, w.grad
    _agree(scenario)


def test_hessian_vector_product_of_module_weights():
    def scenario(m, C):
        D = _mlp(m, (2, 6, 1), seed=7)
        params = list(D.parameters())

        @C
        def hvp(x, *vs):
            loss = D(x).pow(2).mean()
            gs = m.autograd.grad(loss, params, create_graph=True)
            return m.autograd.grad(sum((g * v).sum() for g, v in zip(gs, vs)), params)
        x = _t(m, _data((5, 2), 8))
        vs = [_t(m, _data(tuple(p.shape), 20 + k)) for k, p in enumerate(params)]
        hv = hvp(x, *vs)
        return list(hv), [h.requires_grad for h in hv]
    _agree(scenario)


def test_maml_inner_step_and_outer_gradients():
    def scenario(m, C):
        D = _mlp(m, (3, 8, 1), seed=11)
        params = list(D.parameters())

        def forward(x, ps):
            w1, b1, w2, b2 = ps
            return m.nn.functional.linear(m.tanh(m.nn.functional.linear(x, w1, b1)), w2, b2)

        @C
        def meta_loss(xs, ys, xq, yq):
            inner = ((forward(xs, params) - ys) ** 2).mean()
            grads = m.autograd.grad(inner, params, create_graph=True)
            fast = [p - 0.1 * g for p, g in zip(params, grads)]
            return ((forward(xq, fast) - yq) ** 2).mean()
        batch = [_t(m, _data(s, 30 + k)) for k, s in enumerate([(6, 3), (6, 1), (5, 3), (5, 1)])]
        loss = meta_loss(*batch)
        loss.backward()
        return loss, _grads(params)
    _agree(scenario)


def test_maml_with_functional_call():
    def scenario(m, C):
        net = _mlp(m, (3, 4, 1), seed=17)

        @C
        def meta_loss(xs, ys, xq, yq):
            params = dict(net.named_parameters())
            inner = ((m.func.functional_call(net, params, (xs,)) - ys) ** 2).mean()
            grads = m.autograd.grad(inner, list(params.values()), create_graph=True)
            fast = {k: p - 0.1 * g for (k, p), g in zip(params.items(), grads)}
            return ((m.func.functional_call(net, fast, (xq,)) - yq) ** 2).mean()
        batch = [_t(m, _data(s, 40 + k)) for k, s in enumerate([(5, 3), (5, 1), (4, 3), (4, 1)])]
        loss = meta_loss(*batch)
        loss.backward()
        return loss, _grads(net.parameters())
    _agree(scenario)


def test_create_graph_false_gradients_take_no_gradient():
    """Without create_graph the gradient does not require grad and the outer backward does not
    differentiate through it (d/dx of (g * x).sum() is g, not g + x * dg/dx)."""
    def scenario(m, C):
        @C
        def f(x):
            g, = m.autograd.grad(x.sin().pow(2).sum(), x)
            return (g * x).sum(), g
        x = _t(m, _data((5,), 4), requires_grad=True)
        out, g = f(x)
        out.backward()
        return out, g, g.requires_grad, out.requires_grad, x.grad
    got = _agree(scenario)
    assert got[2] is False and got[3] is True


def test_create_graph_gradient_of_a_linear_function_does_not_require_grad():
    def scenario(m, C):
        inside = []

        @C
        def f(x):
            g, = m.autograd.grad((3 * x).sum(), x, create_graph=True)
            h, = m.autograd.grad((x * x).sum(), x, create_graph=True)
            inside.extend([g.requires_grad, h.requires_grad])
            return g, h
        g, h = f(_t(m, _data((3,), 1), requires_grad=True))
        return g, h, g.requires_grad, h.requires_grad, inside
    assert _agree(scenario)[2:] == [False, True, [False, True]]


def test_allow_unused_and_materialize_grads():
    def scenario(m, C):
        out = []
        for kwargs in ({}, {"allow_unused": True}, {"materialize_grads": True}):
            unused = []

            @C
            def f(x, y):
                gx, gy = m.autograd.grad((x * x).sum(), [x, y], **kwargs)
                unused.append(gy is None)
                return gx if gy is None else (gx, gy)
            try:
                out.append([f(_t(m, [1.0, 2.0], True), _t(m, [3.0], True)), unused])
            except RuntimeError as e:
                out.append(_message(e))
        return out
    got = _agree(scenario)
    assert got[0] == ("The differentiated Tensor at index 1 appears to not have been used in the graph. Set "
                      "allow_unused=True if this is the desired behavior.")
    assert got[1][1] == [True] and got[2][1] == [False]


def test_grad_outputs_traced_and_eager_and_argument_errors():
    def scenario(m, C):
        w = _t(m, _data((3,), 9))

        @C
        def f(x, v):
            y = x.exp() * w
            a, = m.autograd.grad(y, x, grad_outputs=v, retain_graph=True)
            b, = m.autograd.grad([y, y.sum()], [x], grad_outputs=[w, None])
            return a, b
        out = list(f(_t(m, _data((3,), 1), True), _t(m, _data((3,), 2))))
        for bad in (lambda x: m.autograd.grad(x.exp(), x),                      # non-scalar, no grad_outputs
                    lambda x: m.autograd.grad(x.detach().sum(), x),             # output needs no grad
                    lambda x: m.autograd.grad(x.sum(), x.detach()),             # input needs no grad
                    lambda x: m.autograd.grad(x.exp(), x, grad_outputs=x[:2]),  # shape mismatch
                    lambda x: m.autograd.grad([x.sum(), x.sum()], x, grad_outputs=[x.sum()])):
            try:
                C(lambda x: bad(x)[0])(_t(m, [1.0, 2.0, 3.0], True))
                out.append("no error")
            except RuntimeError as e:
                out.append(_message(e))
        return out
    got = _agree(scenario)
    assert got[2:] == ["grad can be implicitly created only for scalar outputs",
                       "element 0 of tensors does not require grad and does not have a grad_fn",
                       "One of the differentiated Tensors does not require grad",
                       "Mismatch in shape: grad_output[0] has a shape of torch.Size([2]) and output[0] has a shape "
                       "of torch.Size([3]).",
                       "got 2 tensors and 1 gradients"]


def test_grad_of_captured_tensors_with_traced_inputs():
    """An output that is the caller's tensor (a parameter), traced inputs: traced all the same,
    with eager autograd's answers."""
    def scenario(m, C):
        w = _t(m, [1.0, 2.0], True)
        errors = []

        @C
        def f(x):
            try:
                m.autograd.grad(w.sum(), x)
            except RuntimeError as e:
                errors.append(_message(e))
            gw, gx = m.autograd.grad(w, [w, x], grad_outputs=m.ones(2, dtype=m.float64), allow_unused=True)
            return gw * x, m.autograd.grad(w, x, m.ones(2, dtype=m.float64), materialize_grads=True)[0]
        return list(f(_t(m, [3.0, 4.0], True))), errors
    assert _agree(scenario)[1] == ["The differentiated Tensor at index 0 appears to not have been used in the graph. "
                                   "Set allow_unused=True if this is the desired behavior."]


def test_requires_grad_flags_inside_compiled_code():
    def scenario(m, C):
        inside = []

        @C
        def f(x):
            y = x * 2
            a = (y.detach() * 0 + 1).requires_grad_()
            inside.extend([y.requires_grad, a.requires_grad, a.is_leaf, (a * y).requires_grad])
            inside.extend([y.is_leaf, y.detach().is_leaf, (y.detach() * 2).is_leaf, x.is_leaf])
            for bad in (lambda: y.requires_grad_(False), lambda: a.long().requires_grad_()):
                try:
                    bad()
                except RuntimeError as e:
                    inside.append(_message(e))
            b = a.requires_grad_(False)
            inside.extend([b is a, a.requires_grad])
            return x * a
        return f(_t(m, [1.0, 2.0], True)), inside
    got = _agree(scenario)[1]
    assert got[:8] == [True, True, True, True, False, True, True, True] and got[10:] == [True, False]
    assert got[8:10] == ["you can only change requires_grad flags of leaf variables. If you want to use a computed "
                        "variable in a subgraph that doesn't require differentiation use var_no_grad = var.detach().",
                        "only Tensors of floating point dtype can require gradients"]


def test_requires_grad_attribute_and_argument_errors_inside_compiled_code():
    def scenario(m, C):
        errors = []

        @C
        def f(a):
            x = a.detach()
            x.requires_grad = True
            for bad in (lambda: x.requires_grad_("yes"), lambda: setattr(x, "requires_grad", 1),
                        lambda: x.requires_grad_(True, 1)):
                try:
                    bad()
                except (TypeError, RuntimeError) as e:
                    errors.append((type(e).__name__, _message(e)))
            return m.autograd.grad((x ** 2).sum(), x)[0]
        return f(m.ones(2, dtype=m.float64)), errors
    got = _agree(scenario)[1]
    assert got == [["TypeError", "requires_grad_(): argument 'requires_grad' (position 1) must be bool, not str"],
                   ["RuntimeError", "requires_grad must be a bool"],
                   ["TypeError", "requires_grad_() takes from 0 to 1 positional arguments but 2 were given"]]


def test_uses_before_requires_grad_take_no_gradient():
    """A use of a tensor made before ``requires_grad_()`` is no part of the graph (eagerly it was
    computed without grad): the leaf is a new value of the trace."""
    def scenario(m, C):
        @C
        def f(x):
            y = x * 2
            before = y.sin()
            y.requires_grad_()
            g, = m.autograd.grad((y.exp() + before).sum(), y)
            return g
        return f(_t(m, _data((4,), 6)))
    _agree(scenario)


def test_physics_informed_loss_sets_requires_grad_of_its_argument():
    """``x.requires_grad_()`` on an argument (the collocation points of a physics-informed loss):
    the caller's ``x`` requires grad after the call and gets a gradient from the outer backward,
    a use of ``x`` before the call to requires_grad_ takes none, every weight gets one, as eagerly."""
    def scenario(m, C):
        net = _mlp(m, (1, 8, 1), seed=13)

        @C
        def pinn(x):
            before = x * 3
            x.requires_grad_(True)
            du, = m.autograd.grad(net(x).sum(), x, create_graph=True)
            return ((du - m.cos(x)) ** 2).mean() + before.sum()
        out = []
        for shift in (0.0, 0.5):
            net.zero_grad()
            x = m.linspace(shift, 1, 5, dtype=m.float64).reshape(5, 1)
            loss = pinn(x)
            loss.backward()
            out += [loss, x.requires_grad, x.grad, _grads(net.parameters())]
        loss = pinn(x)       # x requires grad now: requires_grad_() does nothing
        loss.backward()
        return out + [loss, x.grad]
    got = _agree(scenario)
    assert got[1] is True and got[3][-1] is None      # (the last bias: not in du's graph)


def test_an_argument_made_to_require_grad_is_a_leaf_for_in_place_writes():
    def scenario(m, C):
        def f(x):
            x.requires_grad_()
            x.add_(1)
            return x * 2
        try:
            return C(f)(m.ones(2, dtype=m.float64))
        except RuntimeError as e:
            return _message(e)
    assert _agree(scenario) == "a leaf Variable that requires grad is being used in an in-place operation."


def test_requires_grad_of_the_callers_tensor_and_backward_stay_trace_errors():
    x = gradc.ones(3, dtype=gradc.float64, requires_grad=True)
    with pytest.raises(TraceError, match=r"^Tensor.requires_grad_ of the caller.s tensor .* at test_compile_traced"):
        gradc.compile(lambda x: x.requires_grad_(False) * 2)(x)
    with pytest.raises(TraceError, match=r"^Tensor.backward inside a @gradc.compile function is not supported"):
        gradc.compile(lambda x: x.sum().backward())(x)


def test_dump_ir_shows_the_adjoint_ops_in_the_traced_stage(tmp_path):
    from gradc.cli import main
    src = tmp_path / "gp.py"
    src.write_text("import gradc\n"
                   "def gp(x, w):\n"
                   "    x = x.detach().requires_grad_()\n"
                   "    y = (x @ w).tanh().sum()\n"
                   "    g, = gradc.autograd.grad(y, x, create_graph=True)\n"
                   "    return (g ** 2).sum()\n")
    out = tmp_path / "gp.mlir"
    assert main(["dump-ir", f"{src}:gp", "--arg", "x=f64[2,4]", "--arg", "w=f64[4,3]:grad", "--stage", "traced",
                 "-o", str(out)]) == 0
    ops = re.findall(r"= gradc\.(\w+) .*// gp\.py:(\d)", out.read_text())
    assert ops[:3] == [("detach", "3"), ("matmul", "4"), ("tanh", "4")]
    # the adjoint of tanh (1 - y*y) and of the matmul (a matmul by w transposed), then the penalty
    names = [n for n, _ in ops]
    assert names[names.index("sum"):] == ["sum", "constant", "reshape", "reshape", "expand", "mul", "constant",
                                          "sub", "mul", "permute", "matmul", "constant", "pow", "sum"]


def _cube_of_sin(z):
    return (z.sin() ** 3).sum()


def _sin_times_first(z):
    return z.sin() * z[:1]


@pytest.mark.parametrize("name", ["vjp", "jvp", "vhp", "hvp"])
def test_autograd_functional_products_inside_compiled_code(name):
    """autograd.functional's products are autograd.grad (double-backward trick for the forward
    ones): traced, they compile; with create_graph=True the outer backward goes through them."""
    def scenario(m, C):
        fn = _cube_of_sin if name in ("vhp", "hvp") else _sin_times_first

        @C
        def f(x, v):
            return getattr(m.autograd.functional, name)(fn, x, v, create_graph=True)
        x = _t(m, _data((3,), 2), True)
        out, prod = f(x, _t(m, _data((3,), 3)))
        prod.pow(2).sum().backward()
        return out, prod, prod.requires_grad, x.grad
    _agree(scenario)


@pytest.mark.parametrize("name", ["grad", "jacrev", "jacfwd", "hessian", "autograd.functional.jacobian",
                                  "autograd.functional.hessian"])
def test_function_transforms_inside_compiled_code(name):
    def scenario(m, C):
        transform = m.func if "." not in name else m.autograd.functional
        fn = _cube_of_sin if name.endswith(("grad", "hessian")) else _sin_times_first

        @C
        def f(x):
            if "." in name:
                return getattr(transform, name.rsplit(".", 1)[1])(fn, x)
            return getattr(transform, name)(fn)(x)
        return f(_t(m, _data((3,), 4)))
    _agree(scenario)


@pytest.mark.parametrize("body", [
    "y = x.exp().sum(); a = grad(y, x); b = grad(y, x)",                       # exp saves its result
    "y = (x * x).sum(); a = grad(y, x, retain_graph=True); b = grad(y, x); c = grad(y, x)",
    "y = (x + 2).sum(); a = grad(y, x); b = grad(y, x)",                       # add saves nothing
    "y = x.exp().sum(); a = grad(y, x, create_graph=True); b = grad(y, x)",    # create_graph retains
])
def test_a_second_grad_through_freed_ops_is_pytorchs_error(body):
    def scenario(m, C):
        def f(x):
            scope = {"x": x, "grad": lambda *a, **k: m.autograd.grad(*a, **k)[0]}
            exec(body, scope)
            return scope["b"] * 1
        try:
            return C(f)(_t(m, [1.0, 2.0], True))
        except RuntimeError as e:
            return _message(e)
    freed = isinstance(_agree(scenario), str)
    assert freed == ("x + 2" not in body and "create_graph" not in body)


@pytest.mark.parametrize("backward", ["auto", "separate"])
@pytest.mark.parametrize("body", ["y + grad(y, x).sum()", "(x * 3).sum() + grad(y, x).sum()",
                                  "y + grad(y, x, retain_graph=True).sum()"])
def test_backward_through_ops_a_grad_inside_freed_is_pytorchs_error(body, backward):
    def scenario(m, C):
        def f(x):
            y = x.exp().sum()
            return eval(body, {"x": x, "y": y, "grad": lambda *a, **k: m.autograd.grad(*a, **k)[0]})
        x = _t(m, [1.0, 2.0], True)
        out = (gradc.compile(f, backward=backward) if C is gradc.compile else f)(x)
        try:
            out.backward()
        except RuntimeError as e:
            return out, str(e)
        return out, x.grad
    freed = isinstance(_agree(scenario)[1], str)
    assert freed == (body == "y + grad(y, x).sum()")


def test_outputs_computed_only_from_leaves_made_inside_require_grad():
    """Eagerly an output computed from a tensor the function made a leaf requires grad (with a
    grad_fn, or none for the leaf itself), and backward from it accumulates into that leaf,
    which the caller never sees: compiled, the same flags, and the backward runs (PyTorch's
    error where an autograd.grad inside freed that graph)."""
    def scenario(m, C):
        @C
        def f(a):
            x = a.detach().requires_grad_()
            g, = m.autograd.grad((x ** 3).sum(), x, create_graph=True)
            return g * 2, x.clone(), (a * 2).sum()

        @C
        def leaf(a):
            return (a * 2).detach().requires_grad_(), a.detach().requires_grad_()
        outs = [*f(_t(m, [1.0, 2.0])), *leaf(_t(m, [1.0, 2.0]))]
        flags = [(t.requires_grad, t.is_leaf, t.grad_fn is None) for t in outs]
        outs[0].sum().backward()
        outs[1].sum().backward()
        (outs[3] * outs[4]).sum().backward()

        @C
        def freed(a):
            x = a.detach().requires_grad_()
            y = x.exp().sum()
            return y + m.autograd.grad(y, x)[0].sum()
        out = freed(_t(m, [1.0, 2.0]))
        try:
            out.backward()
        except RuntimeError as e:
            return outs, flags, outs[3].grad, outs[4].grad, out, str(e)
        return outs, flags, outs[3].grad, outs[4].grad, out
    got = _agree(scenario)
    assert got[1] == [[True, False, False], [True, False, False], [False, True, True], [True, True, True],
                      [True, True, True]]
    assert got[-1].startswith("Trying to backward through the graph a second time")


def test_returning_a_leaf_made_inside_with_outputs_computed_from_it_is_a_trace_error():
    """(its .grad would miss the other outputs' gradients: the compiled backward differentiates
    with respect to the arguments only)"""
    @gradc.compile
    def f(a):
        x = a.detach().requires_grad_()
        return x, (x * x).sum()
    with pytest.raises(TraceError, match=r"^@gradc.compile\(f\): output 0 is a tensor the function made a leaf"):
        f(gradc.ones(2))


@pytest.mark.parametrize("update", ["no_grad in place", ".data"])
def test_projected_gradient_descent_attack(update):
    """PGD: the perturbation is a tensor the function makes (zeros_like(x).requires_grad_(), an
    eager leaf) and updates without grad from grad(loss, delta); its detach() and .data read the
    traced value written into it (were the data of the trace's first run)."""
    def scenario(m, C):
        net = _mlp(m, (3, 4, 2), seed=23)

        @C
        def adversarial_loss(x, y):
            delta = m.zeros_like(x).requires_grad_()
            for _ in range(3):
                loss = m.nn.functional.cross_entropy(net(x + delta), y)
                g, = m.autograd.grad(loss, delta)
                if update == ".data":
                    delta.data = (delta + 0.1 * g.sign()).clamp(-0.15, 0.15)
                else:
                    with m.no_grad():
                        delta.add_(0.1 * g.sign())
                        delta.clamp_(-0.15, 0.15)
            return m.nn.functional.cross_entropy(net(x + delta.detach()), y), delta.data * 1
        out = []
        for seed in (24, 25):
            net.zero_grad()
            loss, delta = adversarial_loss(_t(m, _data((5, 3), seed)), m.tensor([0, 1, 1, 0, 1]))
            loss.backward()
            out += [loss, delta, _grads(net.parameters())]
        return out
    _agree(scenario)


def test_a_leaf_made_inside_and_written_under_no_grad_stays_a_leaf():
    """A traced perturbation made a leaf (requires_grad_()) and updated in place under no_grad
    is the same leaf with new data: gradients with respect to it and the flags of what is
    computed from it are eager autograd's."""
    def scenario(m, C):
        net = _mlp(m, (3, 4, 2), seed=29)

        @C
        def adversarial(x, y, start):
            delta = (start * 0.1).requires_grad_()
            for _ in range(3):
                g, = m.autograd.grad(m.nn.functional.cross_entropy(net(x + delta), y), delta)
                with m.no_grad():
                    delta.add_(0.1 * g.sign())
                    delta.clamp_(-0.15, 0.15)
            h, = m.autograd.grad((delta ** 3).sum(), delta, create_graph=True)
            return m.nn.functional.cross_entropy(net(x + delta.detach()), y), delta * 1, h
        loss, delta, h = adversarial(_t(m, _data((5, 3), 30)), m.tensor([0, 1, 1, 0, 1]), _t(m, _data((5, 3), 31)))
        loss.backward()
        return loss, delta, h, [t.requires_grad for t in (loss, delta, h)], _grads(net.parameters())
    assert _agree(scenario)[3] == [True, True, True]


_CRITICS = {
    "conv, max pool": lambda m: [m.nn.Conv2d(2, 3, 3, padding=1, dtype=m.float64), m.nn.Tanh(), m.nn.MaxPool2d(2),
                                 m.nn.Flatten(), m.nn.Linear(12, 1, dtype=m.float64)],
    "conv, gelu, avg pool": lambda m: [m.nn.Conv2d(2, 3, 3, padding=1, dtype=m.float64), m.nn.GELU(),
                                       m.nn.AvgPool2d(2), m.nn.Flatten(), m.nn.Linear(12, 1, dtype=m.float64)],
    "layer norm, softmax": lambda m: [m.nn.Flatten(), m.nn.Linear(32, 8, dtype=m.float64),
                                      m.nn.LayerNorm(8, dtype=m.float64), m.nn.Softmax(-1),
                                      m.nn.Linear(8, 1, dtype=m.float64)],
    "batch norm (training), dropout": lambda m: [m.nn.Conv2d(2, 3, 3, padding=1, dtype=m.float64),
                                                 m.nn.BatchNorm2d(3, dtype=m.float64), m.nn.SiLU(),
                                                 m.nn.Dropout(0.3), m.nn.Flatten(), m.nn.Linear(48, 1, dtype=m.float64)],
}


@pytest.mark.parametrize("critic", sorted(_CRITICS))
def test_gradient_penalty_of_layers(critic):
    """The penalty's double backward through convolutions, pools, normalizations, softmax and
    dropout (the same draws as PyTorch's), with the running statistics a BatchNorm writes."""
    def scenario(m, C):
        D = m.nn.Sequential(*_CRITICS[critic](m))
        with m.no_grad():
            for k, p in enumerate(D.parameters()):
                p.copy_(_t(m, _data(tuple(p.shape), k) * 0.5))

        @C
        def step(real):
            x = real.detach().requires_grad_()
            g, = m.autograd.grad(D(x).sum(), x, create_graph=True)
            return ((g.flatten(1).norm(2, dim=1) - 1) ** 2).mean() + D(real).mean()
        m.manual_seed(0)
        loss = step(_t(m, _data((2, 2, 4, 4), 7)))
        loss.backward()
        return loss, _grads(D.parameters()), list(D.buffers())
    _agree(scenario)
