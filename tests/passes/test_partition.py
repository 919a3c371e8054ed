"""partition: errors, the residuals each policy chooses, and the bytes they keep."""
import numpy as np
import pytest

import gradc
from gradc.ir import Module, interpret, parse_function, verify
from gradc.ir.tracer import ArgSpec, trace
from gradc.passes import PassError, PassManager, parse_pipeline
from gradc.passes.autodiff import NUM_COTANGENTS, NUM_OUTPUTS, WRT
from gradc.passes.partition import RESIDUALS, PartitionError, partition, recomputable
from gradc.passes.plan_buffers import plan_partition

from .harness import POLICIES, joint_of, seeded_program, split_and_fuse
from .programs import trace_program

PLAIN = """\
func.func @plain(%x: tensor<3xf32>) -> tensor<3xf32> {
  %0 = gradc.exp %x : (tensor<3xf32>) -> tensor<3xf32>
  func.return %0 : tensor<3xf32>
}
"""


def mlp(x, w1, w2):
    return (x @ w1).tanh() @ w2


def deep_mlp(x, w1, w2, w3):
    return ((x @ w1).tanh() @ w2).relu() @ w3


def elementwise_chain(x):
    return ((x.exp() * 2).sin() + 1).sigmoid().sum()


def long_chain(x, y):
    h = x
    for _ in range(4):
        h = (h * y).tanh() + h
    return (h * h).mean()


def joint(fn, shapes, dtype=gradc.float32, requires_grad=None):
    """The cleaned-up joint of ``fn``; every argument requires grad unless ``requires_grad`` says."""
    if requires_grad is None:
        return joint_of(trace_program(fn, shapes, dtype=dtype))
    specs = [ArgSpec(f"a{i}", s, dtype, rg) for i, (s, rg) in enumerate(zip(shapes, requires_grad))]
    return joint_of(trace(fn, specs, name="prog"))


# ---- errors ------------------------------------------------------------------------------------
def test_non_joint_function_is_a_clear_error():
    f = parse_function(PLAIN)
    with pytest.raises(PartitionError, match=r"@plain is not a joint function from autodiff \(missing "
                                             r"gradc.num_outputs, gradc.num_cotangents, gradc.wrt\)"):
        partition(f)
    with pytest.raises(ValueError):     # PartitionError is a ValueError (and a PassError)
        partition(f)
    with pytest.raises(PassError, match="not a joint function"):
        PassManager.parse("partition").run(Module([parse_function(PLAIN)]))


def test_unknown_policy_is_a_clear_error():
    j = joint(elementwise_chain, [(4,)])
    with pytest.raises(PartitionError, match=r"unknown policy 'fastest' \(expected one of save-all, min-memory\)"):
        partition(j, "fastest")
    # in a pipeline the error surfaces while the pipeline is built, as a PassError
    with pytest.raises(PassError, match="unknown policy 'fastest'"):
        parse_pipeline("partition{policy=fastest}")
    with pytest.raises(PassError, match="unknown policy"):
        PassManager.parse("cse,partition{policy=1}")


@pytest.mark.parametrize("attrs, message", [
    ({NUM_OUTPUTS: 1, WRT: [0]}, r"missing gradc.num_cotangents"),
    ({NUM_OUTPUTS: 2, NUM_COTANGENTS: 1, WRT: [0]}, "inconsistent joint layout"),
    ({NUM_OUTPUTS: 1, NUM_COTANGENTS: 5, WRT: [0]}, "inconsistent joint layout"),
    ({NUM_OUTPUTS: 1, NUM_COTANGENTS: 1, WRT: [1]}, "inconsistent joint layout"),   # wrt names a cotangent
    ({NUM_OUTPUTS: "1", NUM_COTANGENTS: 1, WRT: [0]}, "inconsistent joint layout"),
])
def test_inconsistent_joint_attributes_are_rejected(attrs, message):
    j = joint(elementwise_chain, [(4,)])
    for k in (NUM_OUTPUTS, NUM_COTANGENTS, WRT):
        j.attrs.pop(k)
    j.attrs.update(attrs)
    with pytest.raises(PartitionError, match=message):
        partition(j)


def test_pass_splits_joints_and_leaves_its_halves_alone():
    m = Module([joint(elementwise_chain, [(4,)])])
    assert PassManager.parse("partition", verify_each=True).run(m)
    names = [f.name for f in m.functions]
    assert names == ["prog_forward", "prog_backward"]
    assert all(RESIDUALS in f.attrs for f in m.functions)
    assert not PassManager.parse("partition", verify_each=True).run(m)
    assert [f.name for f in m.functions] == names


# ---- what is saved ------------------------------------------------------------------------------
@pytest.mark.parametrize("policy", POLICIES)
def test_backward_reads_every_residual(policy):
    """No residual is passed to backward for nothing: with x constant, backward of
    tanh(x @ w1) @ w2 never reads w1 (a1), though it is a free primal input."""
    j = joint(mlp, [(4, 5), (5, 6), (6, 3)], requires_grad=[False, True, True])
    p = partition(j, policy)
    n_res = p.forward.attrs[RESIDUALS]
    assert n_res == p.backward.attrs[RESIDUALS] == len(p.residual_types)
    for a in p.backward.args[:n_res]:
        assert a.uses, f"{policy}: residual {a.name_hint} is never read"
    assert "a1" not in [a.name_hint for a in p.backward.args]


@pytest.mark.parametrize("seed", range(150))
def test_residuals_are_read_and_saved_inputs_are_primals(seed):
    prog = seeded_program(seed)
    if not any(s.requires_grad for s in prog.specs):
        return
    j = joint_of(prog.trace())
    for policy in POLICIES:
        p = partition(j, policy)
        n_res = len(p.residual_types)
        fwd_outputs = p.forward.outputs[p.forward.attrs[NUM_OUTPUTS]:]
        assert len(fwd_outputs) == n_res
        for k, (a, v) in enumerate(zip(p.backward.args[:n_res], fwd_outputs)):
            assert a.uses, f"seed {seed} {policy}: residual {k} unread"
            assert a.type == v.type == p.residual_types[k]
            assert (k in p.saved_input_set) == (v in p.forward.args)
        assert p.saved_bytes == sum(t.nbytes for k, t in enumerate(p.residual_types) if k not in p.saved_input_set)
        # ops of backward that do not depend on a cotangent are recomputed forward work:
        # only constants under save-all; only cheap ops (elementwise, views) under min-memory
        tangent = set(p.backward.args[n_res:])
        for op in p.backward.ops[:-1]:
            if any(v in tangent for v in op.operands):
                tangent.update(op.results)
            elif policy == "save-all":
                assert op.name == "gradc.constant", f"seed {seed}: save-all recomputes {op.name}"
            else:
                assert recomputable(op), f"seed {seed}: min-memory recomputes {op.name}"


def test_min_memory_recomputes_only_cheap_ops():
    j = joint(mlp, [(4, 5), (5, 6), (6, 3)])
    save_all, min_mem = partition(j, "save-all"), partition(j, "min-memory")
    count = lambda f, name: sum(op.name == name for op in f.walk())   # noqa: E731
    # forward runs the two matmuls under both policies; backward only its own four (the
    # gradients of both operands of each), never a forward matmul again
    assert count(save_all.forward, "gradc.matmul") == count(min_mem.forward, "gradc.matmul") == 2
    assert count(save_all.backward, "gradc.matmul") == count(min_mem.backward, "gradc.matmul") == 4
    assert count(min_mem.backward, "gradc.tanh") == 1 and count(save_all.backward, "gradc.tanh") == 0


# ---- min-memory keeps strictly fewer bytes than save-all ---------------------------------------------
@pytest.mark.parametrize("fn, shapes", [
    (lambda x, w1, w2: mlp(x, w1, w2).sum(), [(4, 5), (5, 6), (6, 3)]),
    (lambda x, w1, w2: mlp(x, w1, w2).square().mean(), [(32, 16), (16, 64), (64, 8)]),
    (lambda x, w1, w2, w3: deep_mlp(x, w1, w2, w3).sum(), [(8, 4), (4, 16), (16, 16), (16, 2)]),
    (elementwise_chain, [(8,)]),
    (elementwise_chain, [(16, 32)]),
    (long_chain, [(6, 7), (7,)]),
])
@pytest.mark.parametrize("dtype", [gradc.float32, gradc.float64])
def test_min_memory_saves_strictly_fewer_bytes(fn, shapes, dtype):
    j = joint(fn, shapes, dtype)
    save_all, min_mem = partition(j, "save-all"), partition(j, "min-memory")
    assert min_mem.saved_bytes < save_all.saved_bytes
    mem_all, mem_min = plan_partition(save_all), plan_partition(min_mem)
    assert mem_min.saved_bytes < mem_all.saved_bytes
    # both compute the same gradients
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal(s).astype(dtype.np) for s in shapes]
    outs = []
    for p in (save_all, min_mem):
        fo = interpret(p.forward, arrays)
        outs.append(fo[:1] + interpret(p.backward, fo[1:] + [np.array(1.0, dtype=dtype.np)]))
    for a, b in zip(*outs):
        np.testing.assert_allclose(a, b, rtol=1e-6)


def test_saved_bytes_worked_by_hand():
    """tanh(x @ w1) @ w2 summed, float32, x 4x5, w1 5x6, w2 6x3.

    save-all keeps what backward reads: permute(w2) 3x6 (72 B), permute(tanh) 6x4 (96 B),
    1 - tanh^2 4x6 (96 B) and permute(x) 5x4 (80 B) = 344 B. min-memory keeps x and w2
    (primal inputs: free) and x @ w1 4x6 (96 B), recomputing tanh in backward: 96 B.
    """
    j = joint(lambda x, w1, w2: mlp(x, w1, w2).sum(), [(4, 5), (5, 6), (6, 3)], requires_grad=[False, True, True])
    save_all, min_mem = partition(j, "save-all"), partition(j, "min-memory")
    assert save_all.saved_bytes == 72 + 96 + 96 + 80 == 344
    assert sorted(str(t) for t in save_all.residual_types) == \
        ["tensor<3x6xf32>", "tensor<4x6xf32>", "tensor<5x4xf32>", "tensor<6x4xf32>"]
    assert min_mem.saved_bytes == 96
    assert [str(t) for t in min_mem.residual_types] == ["tensor<4x5xf32>", "tensor<6x3xf32>", "tensor<4x6xf32>"]
    assert min_mem.saved_input_indices == [0, 1]


def test_inputs_not_free_to_save_cost_their_bytes():
    """``free_inputs``: only those inputs are saved at no cost (the others the caller may change in
    place before backward, so saving one means copying it). tanh(x + b): with both free the cut
    keeps x and b and recomputes tanh in backward; with neither, it keeps computed values (x + b)."""
    j = joint(lambda x, b: (x + b).tanh().sum(), [(8, 16), (16,)])
    count = lambda f, name: sum(op.name == name for op in f.walk())   # noqa: E731
    free = partition(j, "min-memory")
    assert free.saved_input_indices == [0, 1] and count(free.backward, "gradc.tanh") == 1
    none = partition(j, "min-memory", free_inputs=[])
    assert none.saved_input_indices == [] and none.residual_types != free.residual_types
    assert partition(j, "min-memory", free_inputs=[0, 1]).residual_types == free.residual_types
    assert [vars(p)["free_inputs"] for p in parse_pipeline("partition{free-inputs=0,2},partition{free-inputs=none},"
                                                            "partition{free-inputs=1},partition")] == \
        [[0, 2], [], [1], None]
    with pytest.raises(PassError, match="free-inputs must be positions or 'none'"):
        parse_pipeline("partition{free-inputs=all}")


@pytest.mark.parametrize("policy", POLICIES)
def test_gradient_that_ignores_the_cotangent(policy):
    """A zero gradient (unused input) is rebuilt in backward, not saved."""
    j = joint(lambda x, y: (x * 2).sum(), [(3,), (2,)], gradc.float64)
    p = split_and_fuse(j, policy)
    fo = interpret(p.forward, [np.ones(3), np.ones(2)])
    gx, gy = interpret(p.backward, fo[1:] + [np.array(1.0)])
    np.testing.assert_array_equal(gx, [2.0, 2.0, 2.0])
    np.testing.assert_array_equal(gy, [0.0, 0.0])
    assert all(str(t) != "tensor<2xf64>" for t in p.residual_types)


def test_partition_result_verifies_and_keeps_signature():
    j = joint(mlp, [(4, 5), (5, 6), (6, 3)])
    for policy in POLICIES:
        p = partition(j, policy)
        verify(p.module)
        assert [a.type for a in p.forward.args] == [a.type for a in j.args[:3]]
        assert p.backward.result_types == j.result_types[j.attrs[NUM_OUTPUTS]:]
        assert p.backward.attrs[WRT] == j.attrs[WRT]
        assert [a.type for a in p.backward.args[len(p.residual_types):]] == [a.type for a in j.args[3:]]
