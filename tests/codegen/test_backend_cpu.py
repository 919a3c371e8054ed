"""@gradc.compile on the CPU backend: fused regions become native kernels and match eager mode."""
import numpy as np
import pytest

import gradc


def mlp_loss(x, w, b):
    h = (x @ w + b).relu()
    return (h.softmax(-1) * 2.0 + h.tanh()).mean()


def test_compiled_forward_backward_matches_eager():
    from gradc.codegen.backend_cpu import CPUBackend
    rng = np.random.default_rng(0)
    args = [gradc.tensor(rng.standard_normal(s).astype(np.float32), requires_grad=True)
            for s in ((32, 24), (24, 16), (16,))]
    cf = gradc.compile(mlp_loss)
    y = cf(*args)
    y.backward()
    grads = [a.grad.numpy().copy() for a in args]
    spec = next(iter(cf._cache.values()))
    assert isinstance(spec.backend, CPUBackend) and spec.backend.kernels, "no native kernels were built"
    for a in args:
        a.grad = None
    y2 = mlp_loss(*args)
    y2.backward()
    np.testing.assert_allclose(float(y), float(y2), rtol=1e-5)
    for g, a in zip(grads, args):
        np.testing.assert_allclose(g, a.grad.numpy(), rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("dtype", [gradc.float32, gradc.float64])
def test_matmul_op_goes_native(dtype):
    def f(a, b):
        return a @ b
    a = gradc.randn(5, 7, dtype=dtype)
    b = gradc.randn(7, 3, dtype=dtype)
    np.testing.assert_allclose(gradc.compile(f)(a, b).numpy(), a.numpy() @ b.numpy(), rtol=1e-5)


def _two_layer(x, w1, w2):
    return ((x @ w1).tanh() @ w2).sum()


def _arena_case():
    rng = np.random.default_rng(1)
    arrays = [rng.standard_normal(s) for s in ((16, 32), (32, 24), (24, 8))]     # float64
    return arrays, [gradc.tensor(a, requires_grad=True) for a in arrays]


def test_intermediates_live_in_the_planned_arena():
    """Values that native steps write and read come from one arena at plan-buffers' offsets;
    the function's outputs (loss and gradients) never do."""
    from gradc.passes.plan_buffers import plan_function
    _, args = _arena_case()
    cf = gradc.compile(_two_layer)
    cf(*args).backward()
    ex = cf.ir().forward
    assert ex.arena is not None and ex.arena_values, "no intermediate went to the arena"
    plan = {b.value: b for b in plan_function(ex.func).buffers}
    outputs = set(ex.func.outputs)
    base = ex.arena.ctypes.data
    for v, view in ex.arena_values.items():
        assert v not in outputs and not plan[v].escapes
        assert view.ctypes.data - base == plan[v].offset and view.nbytes == plan[v].size
        assert np.shares_memory(view, ex.arena)
    # the arena is no larger than the plan's (it may hold fewer buffers than the plan places)
    assert ex.arena.nbytes <= max(b.offset + b.size for b in plan.values() if not b.escapes)


def test_arena_results_are_right_on_every_call():
    """The arena is reused by every call: results of repeated calls (new values each time)
    match eager mode, and gradients handed out earlier are not overwritten."""
    arrays, args = _arena_case()
    cf = gradc.compile(_two_layer)
    kept, expected = [], []
    for step in range(3):
        for a, base in zip(args, arrays):
            a.data = gradc.tensor(base * (step + 1))
            a.grad = None
        loss = cf(*args)
        loss.backward()
        kept.append([a.grad for a in args])
        eager = [gradc.tensor(a.detach().numpy(), requires_grad=True) for a in args]
        ref = _two_layer(*eager)
        ref.backward()
        np.testing.assert_allclose(float(loss), float(ref), rtol=1e-9)
        for a, e in zip(args, eager):
            np.testing.assert_allclose(a.grad.numpy(), e.grad.numpy(), rtol=1e-9, atol=1e-12)
        expected.append([e.grad.numpy().copy() for e in eager])
    for grads, refs in zip(kept, expected):      # earlier gradients still hold their values
        for g, r in zip(grads, refs):
            np.testing.assert_allclose(g.numpy(), r, rtol=1e-9, atol=1e-12)
    assert not any(np.shares_memory(g.numpy(), cf.ir().forward.arena) for grads in kept for g in grads)


def test_values_read_by_reference_ops_stay_out_of_the_arena():
    """An op that runs its NumPy reference may return a view of its operand (indexing), so a
    value it reads is never an arena buffer: the view could outlive the bytes."""
    def f(x, w):
        h = (x @ w).exp()
        return h[1:3] * 2.0, h.sum()
    x, w = gradc.randn(6, 4), gradc.randn(4, 5)
    cf = gradc.compile(f)
    a, s = cf(x, w)
    in_arena = cf.ir().forward.arena_values
    assert in_arena, "x @ w (read only by the fused exp) should live in the arena"
    for v in in_arena:
        assert all(user.name in ("gradc.fused", "gradc.matmul") for user, _ in v.uses)
    h = (x.numpy() @ w.numpy())
    np.testing.assert_allclose(a.numpy(), np.exp(h)[1:3] * 2.0, rtol=1e-5)
    np.testing.assert_allclose(float(s), np.exp(h).sum(), rtol=1e-5)


def test_one_compiled_function_from_several_threads():
    """Calls from several threads take turns on a compiled function's kernels and arena: every
    thread gets the results of its own inputs (big enough for the kernels to run on both cores)."""
    import threading
    rng = np.random.default_rng(3)
    w1, w2 = (gradc.tensor(rng.standard_normal(s).astype(np.float32)) for s in ((256, 256), (256, 8)))
    cf = gradc.compile(lambda x, a, b: ((x @ a).tanh() @ b).exp().sum(0))
    xs = [gradc.tensor(rng.standard_normal((512, 256)).astype(np.float32)) for _ in range(4)]
    want = [np.exp(np.tanh(x.numpy() @ w1.numpy()) @ w2.numpy()).sum(0) for x in xs]
    cf(xs[0], w1, w2)                   # compile once, before the threads start
    errors = []

    def work(k):
        try:
            for _ in range(30):
                np.testing.assert_allclose(cf(xs[k], w1, w2).numpy(), want[k], rtol=2e-4)
        except Exception as e:          # reported below: a thread's exception is otherwise lost
            errors.append(e)
    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[0]


@pytest.mark.parametrize("name", ["add", "sub"])
def test_alpha_lowers_into_the_fused_kernel(name):
    """x.add(y, alpha=a) is one op with an alpha attr; the fused kernel computes x + a * y."""
    rng = np.random.default_rng(2)
    xs = [gradc.tensor(rng.standard_normal(s), requires_grad=True) for s in ((4, 5), (5,))]
    fn = lambda x, y: getattr(x, name)(y, alpha=-1.5).exp().sum()   # noqa: E731
    cf = gradc.compile(fn)
    cf(*xs).backward()
    got = [x.grad.numpy().copy() for x in xs]
    assert cf.ir().backend.kernels, "no native kernel was built"
    assert any(o.attrs.get("alpha") == -1.5 for o in cf.ir().traced.body.ops)
    for x in xs:
        x.grad = None
    fn(*xs).backward()
    for g, x in zip(got, xs):
        np.testing.assert_allclose(g, x.grad.numpy(), rtol=1e-12)


def test_clamp_with_tensor_bounds_compiles_to_one_kernel():
    """clamp_tensor lowers to maximum then minimum inside the fused kernel; its gradients are
    eager mode's (PyTorch's clamp_backward)."""
    rng = np.random.default_rng(4)
    xs = [gradc.tensor(rng.standard_normal(s), requires_grad=True) for s in ((6, 5), (5,), (6, 1))]
    fn = lambda x, lo, hi: (x.clamp(lo, hi) * x).sum() + x.clamp(max=hi).sum()   # noqa: E731
    cf = gradc.compile(fn)
    cf(*xs).backward()
    got = [x.grad.numpy().copy() for x in xs]
    assert cf.ir().backend.kernels
    assert sum(o.name == "gradc.clamp_tensor" for o in cf.ir().traced.body.ops) == 2
    for x in xs:
        x.grad = None
    fn(*xs).backward()
    for g, x in zip(got, xs):
        np.testing.assert_allclose(g, x.grad.numpy(), rtol=1e-12, atol=1e-12)


def test_pooled_outputs_start_on_cache_lines_and_views_keep_them_out_of_reuse():
    """Kernel outputs come from pools of 64-byte-aligned buffers (views of a larger
    allocation); a view the caller keeps of a result (a reshape) must keep that buffer from
    being handed out again, as the result itself does."""
    from gradc.codegen.backend_cpu import Recycler
    pool = Recycler((4, 8), np.float32)
    a, ptr = pool.get()
    assert ptr % 64 == 0 and a.ctypes.data == ptr
    view = a.reshape(32)
    del a
    b, _ = pool.get()
    assert not np.shares_memory(b, view)
    del b
    del view
    c, ptr_c = pool.get()                    # nothing holds the first buffer now: reused
    assert ptr_c == ptr

    f = gradc.compile(lambda x: (x * 2.0).exp())
    x = gradc.tensor(np.linspace(0, 1, 1024, dtype=np.float32))
    first = f(x).reshape(32, 32)             # only a view of the first result survives
    want = first.numpy().copy()
    for _ in range(3):
        f(x + 1.0)
    np.testing.assert_array_equal(first.numpy(), want)


def test_runner_writes_each_call_to_the_buffer_it_returns():
    """The runner sets an output's pointer in its argument vector only when the pool hands out
    another buffer than the last call's: results held by the caller take the next call to new
    buffers, released ones are reused, and every result holds its own call's values."""
    f = gradc.compile(lambda x, y: (x * y + 1.0, x - y))
    xs = [gradc.tensor(np.full((4, 8), float(i), np.float32)) for i in range(12)]
    y = gradc.tensor(np.arange(32, dtype=np.float32).reshape(4, 8))
    held, ptrs = [], []
    for i, x in enumerate(xs):
        a, b = f(x, y)
        ptrs.append(a._data.ctypes.data)
        np.testing.assert_array_equal(a.numpy(), x.numpy() * y.numpy() + 1.0)
        np.testing.assert_array_equal(b.numpy(), x.numpy() - y.numpy())
        if i % 3 == 0:                     # kept: the next calls write elsewhere
            held.append((i, a, b))
    assert 1 < len(set(ptrs)) < len(ptrs)        # both new buffers and reused ones
    for i, a, b in held:                  # untouched by the calls after theirs
        np.testing.assert_array_equal(a.numpy(), xs[i].numpy() * y.numpy() + 1.0)
        np.testing.assert_array_equal(b.numpy(), xs[i].numpy() - y.numpy())


def test_large_tensor_copies_start_on_cache_lines():
    """gradc.tensor copies large arrays onto a cache line (kernels read them with 64-byte
    vectors), in C order like torch.tensor, with the value cast as asked."""
    src = np.asfortranarray(np.random.default_rng(0).standard_normal((300, 400)))
    with pytest.warns(UserWarning, match="To copy construct from a tensor"):
        from_tensor = gradc.tensor(gradc.tensor(src))
    for t in (gradc.tensor(src), gradc.tensor(src, dtype=gradc.float32), from_tensor):
        assert t._data.ctypes.data % 64 == 0 and t._data.flags.c_contiguous and t.stride() == (400, 1)
        np.testing.assert_allclose(t.numpy(), src, rtol=1e-6)
    small = gradc.tensor(np.asfortranarray(np.ones((2, 3))))
    assert small._data.flags.c_contiguous and small.tolist() == [[1.0] * 3] * 2
    src[0, 0] = 5.0                          # a copy: the source's later changes do not show
    assert gradc.tensor(src)[0, 0].item() == 5.0 and t[0, 0].item() != 5.0
