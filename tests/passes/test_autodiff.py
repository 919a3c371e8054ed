"""autodiff: the joint IR equals eager autograd and finite differences; double backward."""
import numpy as np
import pytest

import gradc
from gradc.executor import Executor
from gradc.ir.verifier import verify
from gradc.passes.autodiff import AutodiffError, differentiate
from gradc.passes.canonicalize import canonicalize

from .programs import chain, eager_grads, finite_differences, mlp, random_program, trace_program


def run(func, arrays):
    return Executor(func).run([np.asarray(a) for a in arrays])


@pytest.mark.parametrize("seed", range(40))
def test_random_programs_match_eager(seed):
    rng = np.random.default_rng(seed)
    program, shapes = random_program(rng)
    arrays = [rng.standard_normal(s) for s in shapes]
    f = trace_program(program, shapes)
    joint = differentiate(f)
    verify(joint)
    out = run(joint, arrays + [np.array(1.0)])
    ref, grads, _ = eager_grads(program, arrays)
    np.testing.assert_allclose(out[0], ref.detach().numpy(), rtol=1e-9, atol=1e-12)
    for got, want in zip(out[1:], grads):
        np.testing.assert_allclose(got, want.numpy(), rtol=1e-7, atol=1e-10)


@pytest.mark.parametrize("seed", range(10))
def test_random_programs_match_finite_differences(seed):
    rng = np.random.default_rng(100 + seed)
    program, shapes = random_program(rng)
    arrays = [rng.standard_normal(s) for s in shapes]
    joint = differentiate(trace_program(program, shapes))
    canonicalize(joint)
    grads = run(joint, arrays + [np.array(1.0)])[1:]
    fwd = trace_program(program, shapes)
    for got, num in zip(grads, finite_differences(lambda xs: run(fwd, xs)[0], arrays)):
        np.testing.assert_allclose(got, num, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("seed", range(15))
def test_second_derivative_matches_eager_create_graph(seed):
    rng = np.random.default_rng(200 + seed)
    program, shapes = random_program(rng, n_ops=4)
    arrays = [rng.standard_normal(s) for s in shapes]
    joint = differentiate(trace_program(program, shapes))
    # d/dx of sum(grad_x * v) for a fixed direction v: differentiate the joint again,
    # seeding the cotangent of the first gradient output with v and the rest with zero.
    second = differentiate(joint, wrt=[0])
    verify(second)
    v = rng.standard_normal(shapes[0])
    zeros = [np.zeros(()), np.zeros(shapes[1])]
    out = run(second, arrays + [np.array(1.0)] + [np.zeros(())] + [v] + [zeros[1]])
    _, grads, xs = eager_grads(program, arrays, create_graph=True)
    hv = None
    if grads[0] is not None and grads[0].requires_grad:   # else the gradient is constant in x
        hv = gradc.autograd.grad((grads[0] * gradc.tensor(v)).sum(), xs[0], allow_unused=True)[0]
    want = hv.detach().numpy() if hv is not None else np.zeros(shapes[0])
    np.testing.assert_allclose(out[-1], want, rtol=1e-6, atol=1e-9)


def test_mlp_and_chain_gradients():
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal((4, 5)), rng.standard_normal((5, 6)), rng.standard_normal((6, 3))]
    joint = differentiate(trace_program(mlp, [a.shape for a in arrays]))
    got = run(joint, arrays + [np.array(1.0)])
    _, want, _ = eager_grads(mlp, arrays)
    for g, w in zip(got[1:], want):
        np.testing.assert_allclose(g, w.numpy(), rtol=1e-9)
    x = rng.standard_normal(10)
    got = run(differentiate(trace_program(chain, [(10,)])), [x, np.array(1.0)])
    np.testing.assert_allclose(got[1], 4 * (x + 2) / 10, rtol=1e-12)


def test_wrt_subset_and_nondifferentiable_paths():
    def f(x, y):
        return (x * (y > 0).double()).sum() + y.sum()
    fn = trace_program(f, [(3,), (3,)])
    joint = differentiate(fn, wrt=[0])
    x, y = np.array([1.0, 2.0, 3.0]), np.array([-1.0, 1.0, 2.0])
    out = run(joint, [x, y, np.array(1.0)])
    assert len(out) == 2
    np.testing.assert_allclose(out[1], [0.0, 1.0, 1.0])


def test_errors_name_the_problem():
    fn = trace_program(chain, [(3,)])
    with pytest.raises(AutodiffError, match="out of range"):
        differentiate(fn, wrt=[5])
    g = trace_program(lambda x: x.argmax().double() + x.sum(), [(3,)])
    assert differentiate(g, wrt=[0]) is not None   # argmax is skipped, not an error
