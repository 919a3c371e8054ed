"""Forward + backward after partition (both policies) and fuse equals the joint function,
eager autograd and finite differences; the verifier accepts the IR after every pass."""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gradc.ir import interpret
from gradc.ir.testing import generate_program
from gradc.passes.autodiff import NUM_OUTPUTS

from .harness import (POLICIES, assert_close, eager_reference, joint_of, random_cotangents, run_forward_backward,
                      run_pipeline, seeded_program, split_and_fuse)
from .programs import chain, finite_differences, mlp, random_program, trace_program

# Random programs are float32 (some float64) and include pow, log, sqrt, rsqrt, var, norm:
# eager and the IR run the same NumPy kernels but may group float sums differently.
EAGER_RTOL, EAGER_ATOL = 2e-4, 2e-4


def check_program(prog, seed):
    """Partition+fuse vs the joint (same ops: near-exact) and vs eager autograd."""
    f = prog.trace()
    if not any(s.requires_grad for s in prog.specs):
        return False
    arrays = prog.example_inputs(seed)
    joint = joint_of(f)
    n_out = joint.attrs[NUM_OUTPUTS]
    cts = random_cotangents(f, seed)
    floating_cts = [c for c in cts if c is not None]
    ref_joint = interpret(joint, arrays + floating_cts)
    ref_out, ref_grads = eager_reference(prog, arrays, cts)
    assert_close(ref_joint[:n_out], ref_out, EAGER_RTOL, EAGER_ATOL, "joint outputs vs eager")
    assert_close(ref_joint[n_out:], ref_grads, EAGER_RTOL, EAGER_ATOL, "joint gradients vs eager")
    for policy in POLICIES:
        part = split_and_fuse(joint, policy)
        outs, grads = run_forward_backward(part, arrays, floating_cts, n_out)
        assert_close(outs, ref_joint[:n_out], 1e-6, 1e-7, f"{policy} outputs vs joint")
        assert_close(grads, ref_joint[n_out:], 1e-6, 1e-7, f"{policy} gradients vs joint")
    return True


@pytest.mark.parametrize("chunk", range(8))
def test_random_programs_forward_backward_match_joint_and_eager(chunk):
    checked = 0
    for seed in range(chunk * 50, chunk * 50 + 50):
        prog = seeded_program(seed)
        try:
            checked += check_program(prog, seed)
        except AssertionError as e:
            raise AssertionError(f"seed {seed}:\n{prog.describe()}\n{e}") from None
    assert checked >= 20   # about two thirds of the programs have a requires_grad input


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_forward_backward_property(data):
    prog = generate_program(lambda lo, hi: data.draw(st.integers(lo, hi)), max_steps=10)
    check_program(prog, 0)


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("policy", POLICIES)
def test_smooth_programs_match_finite_differences(seed, policy):
    """float64 programs of smooth ops: backward after partition+fuse vs central differences."""
    rng = np.random.default_rng(300 + seed)
    program, shapes = random_program(rng)
    arrays = [rng.standard_normal(s) for s in shapes]
    fwd = trace_program(program, shapes)
    part = split_and_fuse(joint_of(trace_program(program, shapes)), policy)
    _, grads = run_forward_backward(part, arrays, [np.array(1.0)], 1)
    for got, num in zip(grads, finite_differences(lambda xs: interpret(fwd, xs)[0], arrays)):
        np.testing.assert_allclose(got, num, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("policy", POLICIES)
def test_mlp_and_chain_through_the_pass_manager(policy):
    """The registered passes as text pipelines, verify_each, run forward then backward."""
    rng = np.random.default_rng(1)
    arrays = [rng.standard_normal((4, 5)), rng.standard_normal((5, 6)), rng.standard_normal((6, 3))]
    cases = [(mlp, arrays), (chain, [rng.standard_normal(10)])]
    for decompose in ("", "decompose,"):
        pipeline = (f"canonicalize,cse,autodiff,{decompose}canonicalize,cse,dce,partition{{policy={policy}}},"
                    "fuse,cse,dce,plan-buffers")
        for program, xs in cases:
            module = run_pipeline(trace_program(program, [a.shape for a in xs]), pipeline)
            forward, backward = module.functions
            assert forward.name.endswith("_forward") and backward.name.endswith("_backward")
            assert "gradc.peak_bytes" in forward.attrs and "gradc.peak_bytes" in backward.attrs
            fo = interpret(forward, xs)
            grads = interpret(backward, fo[1:] + [np.array(1.0)])
            _, want = _eager(program, xs)
            for g, w in zip(grads, want):
                np.testing.assert_allclose(g, w, rtol=1e-9, atol=1e-12)


def _eager(program, arrays):
    from .programs import eager_grads
    out, grads, _ = eager_grads(program, arrays)
    return out, [g.numpy() for g in grads]


@pytest.mark.parametrize("seed", range(10))
def test_second_order_joint_partitions_and_fuses(seed):
    """The joint of a joint (double backward) is a joint like any other."""
    rng = np.random.default_rng(500 + seed)
    program, shapes = random_program(rng, n_ops=4)
    arrays = [rng.standard_normal(s) for s in shapes]
    first = joint_of(trace_program(program, shapes))
    second = joint_of(first, wrt=[0])
    cts = [rng.standard_normal(t.shape) for t in second.result_types[:second.attrs[NUM_OUTPUTS]]]
    primals = arrays + [np.array(1.0)]
    want = interpret(second, primals + cts)
    n_out = second.attrs[NUM_OUTPUTS]
    for policy in POLICIES:
        outs, grads = run_forward_backward(split_and_fuse(second, policy), primals, cts, n_out)
        assert_close(outs + grads, want, 1e-9, 1e-12, policy)
