"""Kernels with accumulations: sums over outer axes, only stored, beside inner reductions
(a layernorm's backward in one pass).  Builder rules, CPU code (split over threads and not),
coalescing, and the fuse pass that creates them."""
import numpy as np
import pytest

import gradc
from gradc.codegen import kernel_eval, runtime_cpu
from gradc.codegen.kernel_ir import Compute, KernelBuilder, coalesce, contiguous_strides
from gradc.codegen.split_reduce import split_reduction
from gradc.ir.core import FUSED
from gradc.ir.tracer import ArgSpec, trace
from gradc.passes.fuse import fuse

from .helpers import TOL, assert_kernel_matches, buffers
from .programs import count_above_row_mean, layernorm_grad, row_and_column_sums


def test_inner_axes_are_those_the_kernel_computes_with():
    k = layernorm_grad("f64", n=5, m=7)
    assert k.reduce_axes == (1,)
    assert [r.axes for r in k.accumulations] == [(0,), (0,), (0,)]
    assert all(r.axes == (1,) for r in k.reductions)
    assert sorted(k.accumulated_outputs()) == ["db", "dw", "s"]
    text = str(k)
    assert "reduce (1)" in text and "reduce.sum" in text and "over (i0)" in text


def test_without_computation_the_set_with_the_last_axis_is_inner():
    kb = KernelBuilder("k", (4, 6))
    x = kb.load(kb.input("x", "f32", (4, 6)))
    kb.store(kb.output("cols", "f32", (6,)), kb.reduce("sum", x, (0,)), index=(0, 1))
    kb.store(kb.output("rows", "f32", (4,)), kb.reduce("max", x, (1,)), index=(1, 0))
    k = kb.build()
    assert k.reduce_axes == (1,) and [r.kind for r in k.accumulations] == ["sum"]


def test_constant_scaled_sums_fold_into_accumulations():
    """mean over outer axes, or a sum times a constant, beside row reductions: the constant moves
    into the accumulated operand, so the result is only stored."""
    kb = KernelBuilder("k", (8, 5))
    x = kb.load(kb.input("x", "f64", (8, 5)))
    d = kb.op("sub", x, kb.reduce("max", x, (1,)))
    kb.store(kb.output("m", "f64", (5,)), kb.reduce("mean", d, (0,)), index=(0, 1))
    kb.store(kb.output("s", "f64", (5,)), kb.op("mul", 3.0, kb.reduce("sum", kb.op("exp", d), (0,))), index=(0, 1))
    k = kb.build()
    assert k.reduce_axes == (1,) and len(k.accumulations) == 2
    assert not any(isinstance(s, Compute) and s.op in ("mul", "div") and s.result.axes == {1} for s in k.body)
    arrs = buffers(k, np.random.default_rng(5))
    m, s = assert_kernel_matches(k, arrs)
    d_ = arrs[0] - arrs[0].max(1, keepdims=True)
    np.testing.assert_allclose(m, d_.mean(0), rtol=1e-12)
    np.testing.assert_allclose(s, 3 * np.exp(d_).sum(0), rtol=1e-12)


def test_accumulation_rules():
    def base():
        kb = KernelBuilder("k", (4, 6))
        x = kb.load(kb.input("x", "f32", (4, 6)))
        return kb, x, kb.op("sub", x, kb.reduce("max", x, (1,)))

    kb, x, d = base()
    kb.store(kb.output("o", "f32", (6,)), kb.reduce("max", d, (0,)), index=(0, 1))
    with pytest.raises(ValueError, match="must be a sum"):
        kb.build()

    kb, x, d = base()
    kb.store(kb.output("o", "f32", (6,)), kb.op("exp", kb.reduce("sum", d, (0,))), index=(0, 1))
    with pytest.raises(ValueError, match="only one axis set"):
        kb.build()

    kb, x, d = base()
    kb.store(kb.output("o", "f32", ()), kb.reduce("sum", d, (0, 1)), index=(0, 0))
    with pytest.raises(ValueError, match="overlaps"):
        kb.build()


def test_unsplit_kernel_runs_on_one_thread_and_overwrites_old_contents():
    k = layernorm_grad("f32", n=40, m=300)
    assert split_reduction(k) is None             # small: not split
    ck = runtime_cpu.compile_kernel(k)
    assert not ck.info.parallel_ok                # its accumulations reduce the threads' axis
    assert_kernel_matches(k, buffers(k, np.random.default_rng(1)))   # outputs start at 7


@pytest.mark.parametrize("dtype", ["f32", "f64"])
def test_split_kernel_gives_each_slice_its_partials(dtype):
    k = layernorm_grad(dtype, n=1024, m=1024)
    sk, combine = split_reduction(k)
    assert sk.space == (16, 64, 1024) and sk.reduce_axes == (2,)
    assert sorted(combine) == ["db", "dw", "s"]
    shapes = {p.name: p.shape for p in sk.params}
    assert shapes["dw"] == (16, 1024) and shapes["db"] == (16, 1, 1024) and shapes["s"] == (16,)
    assert all(r.axes == (1,) for r in sk.accumulations)
    assert runtime_cpu.compile_kernel(sk).info.parallel_ok
    _check_split(k, sk, combine, buffers(k, np.random.default_rng(2)), dtype)


def _check_split(k, sk, combine, arrs, dtype):
    """Run split kernel ``sk`` (partial outputs start at 7: the kernel must zero them), add up
    the partials as the backend does, and compare with the reference evaluation of ``k``."""
    split_arrs = [a if p.name not in combine else np.full(q.shape, 7, a.dtype)
                  for p, q, a in zip(k.params, sk.params, arrs)]
    runtime_cpu.compile_kernel(sk)(*split_arrs)
    ref = [a.copy() for a in arrs]
    kernel_eval.evaluate(k, ref)
    for p, got, want in zip(k.params, split_arrs, ref):
        if p.role == "output":
            if p.name in combine:
                got = got.sum(0, dtype=np.float64).reshape(p.shape)
            np.testing.assert_allclose(got, want, err_msg=p.name, **TOL[dtype])


def test_coalesce_keeps_an_accumulated_axis_apart():
    k = row_and_column_sums("f64", space=(6, 5, 40))
    c = coalesce(k)
    assert c.space == (6, 5, 40)
    assert_kernel_matches(k, buffers(k, np.random.default_rng(3)))


def _layernorm_loss(x, gamma, beta):
    mu = x.mean(-1, keepdim=True)
    var = ((x - mu) ** 2).mean(-1, keepdim=True)
    y = (x - mu) / (var + 1e-5).sqrt() * gamma + beta
    return (y * y).sum()


def test_fuse_joins_column_sums_to_the_row_kernel():
    specs = [ArgSpec("x", (8, 16), gradc.float64, True), ArgSpec("gamma", (16,), gradc.float64, True),
             ArgSpec("beta", (16,), gradc.float64, True)]
    from gradc import stages
    st = stages.build(_layernorm_loss, specs)
    fused = [op for op in st.precomputed.functions[0].body.ops if op.name == FUSED]
    big = [op for op in fused if tuple(op.operands[0].type.shape) == (8, 16)]
    assert len(big) == 1, st.precomputed          # x is read by one kernel
    kernel = next(k.kernel for k in stages._lower_kernels(st.precomputed) if k.kernel.numel == 8 * 16)
    # dgamma and dbeta accumulate; the loss's total is split along the rows (a row sum per point)
    assert kernel.reduce_axes == (1,) and len(kernel.accumulations) == 2
    assert (8,) in [tuple(p.shape) for p in kernel.outputs]


def test_total_sums_split_along_row_dims_before_column_dims():
    """A total sum beside both a row reduction and a column sum of the same input becomes row
    sums (one more chain in the row pass) rather than a third column accumulation."""
    from gradc.passes.fuse import split_total_reductions

    def f(x):
        return x.sum() + x.amax(1).sum() + x.sum(0).sum()
    func = trace(f, [ArgSpec("x", (8, 16), gradc.float64, False)])
    assert split_total_reductions(func)
    sums = [op for op in func.body.ops if op.name == "gradc.sum" and tuple(op.operands[0].type.shape) == (8, 16)]
    assert sorted(tuple(op.attrs["dims"]) for op in sums) == [(0,), (1,)]


def test_fuse_leaves_sums_that_feed_computations_alone():
    def f(x):
        return (x - x.sum(0)).exp().sum(1) + x.amax(1)
    func = trace(f, [ArgSpec("x", (8, 16), gradc.float64, False)])
    fuse(func)
    for op in func.body.ops:
        if op.name == FUSED:
            from gradc.codegen.lower_fused import lower_fused
            assert not lower_fused(op).accumulations


@pytest.mark.parametrize("shape", [(6, 10), (1024, 1024)])
def test_compiled_layernorm_matches_eager(shape):
    rng = np.random.default_rng(4)
    data = [rng.standard_normal(shape), rng.standard_normal(shape[-1]), rng.standard_normal(shape[-1])]

    def leaves():
        return [gradc.tensor(a, requires_grad=True) for a in data]
    eager = leaves()
    _layernorm_loss(*eager).backward()
    for backward in ("auto", "separate"):
        comp = leaves()
        loss = gradc.compile(_layernorm_loss, backward=backward)(*comp)
        loss.backward()
        np.testing.assert_allclose(loss.item(), _layernorm_loss(*eager).item(), rtol=1e-9)
        for a, b in zip(comp, eager):
            np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-9, atol=1e-9)


def test_fuse_keeps_row_sums_beside_column_statistics_apart():
    """Sums over trailing dims next to a kernel that computes with column reductions stay a
    kernel of their own: as accumulations they would keep the column kernel on one thread."""
    def f(x):
        centred = x - x.mean(0)
        return (centred * centred).sum(0), (x * 2).sum(1)
    func = trace(f, [ArgSpec("x", (8, 16), gradc.float64, False)])
    fuse(func)
    from gradc.codegen.lower_fused import lower_fused
    kernels = [lower_fused(op) for op in func.body.ops if op.name == FUSED]
    assert len(kernels) == 2 and not any(k.accumulations for k in kernels)


def _xent_with_bias(x, b, labels):
    logits = x + b
    picked = logits.gather(1, labels.unsqueeze(1)).squeeze(1)
    return (logits.logsumexp(1) - picked).mean()


def _norm_3d(x, gamma, beta):
    mu = x.mean(-1, keepdim=True)
    xc = x - mu
    return ((xc * (xc * xc).mean(-1, keepdim=True).add(1e-5).rsqrt() * gamma + beta) ** 2).mean()


def _rmsnorm(x, w):
    return ((x * (x * x).mean(-1, keepdim=True).add(1e-6).rsqrt() * w).tanh()).sum()


def _per_position_weight(x, w):
    """w (6, 10) for x (4, 6, 10): w's gradient sums over dim 0 only."""
    return ((x - x.mean(-1, keepdim=True)) * w).pow(2).sum()


CASES = {
    "xent_bias": (_xent_with_bias, [(32, 50), (50,)], lambda rng: rng.integers(0, 50, 32)),
    "norm_3d": (_norm_3d, [(4, 6, 10), (10,), (10,)], None),
    "rmsnorm": (_rmsnorm, [(16, 24), (24,)], None),
    "per_position": (_per_position_weight, [(4, 6, 10), (6, 10)], None),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_functions_with_column_gradients_compile_to_accumulations_and_match_eager(name):
    fn, shapes, extra = CASES[name]
    rng = np.random.default_rng(7)
    data = [rng.standard_normal(s) for s in shapes]
    rest = [gradc.tensor(extra(rng))] if extra else []

    def leaves():
        return [gradc.tensor(a, requires_grad=True) for a in data]
    eager = leaves()
    want = fn(*eager, *rest)
    want.backward()
    for backward in ("auto", "separate"):
        comp = leaves()
        compiled = gradc.compile(fn, backward=backward)
        got = compiled(*comp, *rest)
        got.backward()
        if backward == "auto":       # (a separate backward may not need one: xent_bias's has no row sums)
            kernels = next(iter(compiled._cache.values())).backend.kernels
            assert any(k.accumulations for k in kernels), f"{name}: no accumulation kernel"
        np.testing.assert_allclose(got.item(), want.item(), rtol=1e-9)
        for a, b in zip(comp, eager):
            np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-9, atol=1e-12)


def test_integer_accumulation_on_cpu_and_in_the_gpu_simulator():
    from gradc.codegen import gpusim
    k = count_above_row_mean()
    assert k.accumulations and k.accumulated_outputs()["counts"].result.dtype == "i64"
    arrs = buffers(k, np.random.default_rng(6))
    counts, mask = assert_kernel_matches(k, arrs)
    np.testing.assert_array_equal(counts, (arrs[0] > arrs[0].mean(1, keepdims=True)).sum(0))
    sim = [a.copy() for a in arrs]
    gpusim.run(k, sim, block=(32, 1, 1))
    np.testing.assert_array_equal(sim[1], counts)


def _random_accumulation_kernel(seed: int, space, dtype):
    """Row statistics over the last axis, an elementwise value built from them, and sums of
    random values over random leading axes (some scaled, one per-row), all stored."""
    import random
    rnd = random.Random(seed)
    nd = len(space)
    kb = KernelBuilder(f"acc_rand_{seed}", space)
    x = kb.load(kb.input("x", dtype, space))
    w = kb.load(kb.input("w", dtype, space[-1:]))
    stat = kb.reduce(rnd.choice(["sum", "max", "mean"]), x, (nd - 1,))
    v = kb.op(rnd.choice(["sub", "mul", "add"]), x, stat)
    v = kb.op(rnd.choice(["tanh", "exp", "neg", "abs"]), kb.op("mul", v, 0.25))
    kb.store(kb.output("elem", dtype, space), kb.op("mul", v, w))
    for k in range(rnd.randint(1, 3)):
        lead = tuple(range(rnd.randint(1, nd - 1)))
        operand = rnd.choice([v, kb.op("mul", v, x), kb.op("mul", v, w), kb.op("exp", kb.op("neg", kb.op("abs", stat)))])
        total = kb.reduce(rnd.choice(["sum", "mean"]), operand, lead)
        if rnd.random() < 0.5:
            total = kb.op("mul", total, rnd.choice([2.0, -0.5]))
        keep = [d for d in range(nd) if d not in lead]
        shape = tuple(space[d] for d in keep)
        strides = [0] * nd
        for d, st in zip(keep, contiguous_strides(shape)):
            strides[d] = st if space[d] != 1 else 0
        kb.store(kb.output(f"acc{k}", dtype, shape), total, index=tuple(strides))
    return kb.build()


@pytest.mark.parametrize("seed", range(12))
def test_random_accumulation_kernels_match_the_reference(seed):
    dtype = "f64" if seed % 2 else "f32"
    space = [(9, 17), (5, 4, 33), (2, 3, 5, 7)][seed % 3]
    k = _random_accumulation_kernel(seed, space, dtype)
    assert k.accumulations and k.reduce_axes == (len(space) - 1,)
    arrs = buffers(k, np.random.default_rng(seed), low=-1.0, high=1.0)
    got = assert_kernel_matches(k, arrs)
    if seed < 4:                 # the GPU schedule (atomic adds) in the simulator
        from gradc.codegen import gpusim
        sim = [a.copy() for a in arrs]
        gpusim.run(k, sim, block=(32, 1, 1))
        outs = [i for i, p in enumerate(k.params) if p.role == "output"]
        for i, g in zip(outs, got):
            np.testing.assert_allclose(sim[i], g, err_msg=k.params[i].name, **TOL[dtype])


@pytest.mark.parametrize("seed", [0, 1])
def test_random_accumulation_kernels_split_over_threads(seed):
    """Large enough to split into per-thread partial slices, as the CPU backend runs them."""
    dtype = "f64" if seed % 2 else "f32"
    k = _random_accumulation_kernel(seed, (1024, 1024), dtype)
    split = split_reduction(k)
    assert split is not None
    _check_split(k, *split, buffers(k, np.random.default_rng(seed), low=-1.0, high=1.0), dtype)
