"""fuse: semantics, kernel structure and idempotence on random programs; cse/dce on fused IR."""
import numpy as np
import pytest

from gradc.ir import FUSED, YIELD, interpret, parse_function, print_function, verify
from gradc.passes.cse import eliminate_common_subexpressions
from gradc.passes.dce import eliminate_dead_code
from gradc.passes.decompose import DecomposePass
from gradc.passes.fuse import FUSIBLE_REDUCTIONS, find_groups, fuse, is_elementwise_like, split_total_reductions

from .harness import clean, joint_of, seeded_program


def functions_of(seed):
    """The traced program, its joint, and the joint with composite ops decomposed."""
    prog = seeded_program(seed)
    f = prog.trace()
    out = [f]
    if any(s.requires_grad for s in prog.specs):
        j = joint_of(f)
        out.append(j)
        d = j.clone()
        DecomposePass().run(d)
        out.append(clean(d))
    return prog, out


def arguments(prog, func, seed):
    rng = np.random.default_rng(seed)
    extra = [rng.uniform(-1, 1, size=a.type.shape).astype(a.type.dtype.np) for a in func.args[len(prog.specs):]]
    return prog.example_inputs(seed) + extra


def check_kernels(func):
    for op in func.ops:
        if op.name != FUSED:
            continue
        assert op.results, "a kernel without results"
        body = op.regions[0].blocks[0]
        visible = set(body.args)
        for inner in body.ops:
            assert all(v in visible for v in inner.operands), "a kernel body reads a value from outside"
            visible.update(inner.results)
            if inner.name != YIELD:
                assert is_elementwise_like(inner) or inner.name in FUSIBLE_REDUCTIONS, inner.name
        assert body.ops[-1].name == YIELD


@pytest.mark.parametrize("chunk", range(6))
def test_fuse_preserves_values_and_structure(chunk):
    for seed in range(chunk * 100, chunk * 100 + 100):
        prog, funcs = functions_of(seed)
        for f in funcs:
            args = arguments(prog, f, seed)
            # fuse reassociates total sums (split_total_reductions); beyond that it keeps
            # the NumPy ops and their order, so the results agree bit for bit
            reassociated = f.clone()
            split_total_reductions(reassociated)
            want = interpret(reassociated, args)
            g = f.clone()
            fuse(g)
            verify(g)
            check_kernels(g)
            got = interpret(g, args)
            for a, b in zip(got, want):   # the same NumPy ops in the same order: bit for bit
                assert a.dtype == b.dtype and a.shape == b.shape
                np.testing.assert_array_equal(a, b, err_msg=f"seed {seed} @{f.name}")
            # a second run finds nothing more
            text = print_function(g)
            assert not fuse(g), f"seed {seed} @{f.name}: fuse is not idempotent"
            assert print_function(g) == text


def test_every_fusible_op_lands_in_a_kernel_or_is_unworthy():
    """After fuse, a top-level elementwise op is left only where it would be a lone
    constant/reshape/expand kernel (nothing to compute)."""
    for seed in range(200):
        _, funcs = functions_of(seed)
        for f in funcs:
            g = f.clone()
            fuse(g)
            for op in g.ops:
                if op.opdef is not None and is_elementwise_like(op):
                    assert op.name in ("gradc.constant", "gradc.reshape", "gradc.expand"), \
                        f"seed {seed}: {op.name} left outside a kernel"
            assert find_groups(g) == []


DEAD = """\
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = gradc.exp %x : (tensor<4xf32>) -> tensor<4xf32>
  %1 = gradc.sum %0 {dims = [0], keepdim = false} : (tensor<4xf32>) -> tensor<f32>
  %2 = gradc.neg %x : (tensor<4xf32>) -> tensor<4xf32>
  func.return %2 : tensor<4xf32>
}
"""


def test_dead_fusible_ops_are_erased_not_fused():
    f = parse_function(DEAD)
    assert fuse(f)
    verify(f)
    assert [op.name for op in f.ops] == [FUSED, "func.return"]
    assert [o.name for o in f.ops[0].regions[0].blocks[0].ops] == ["gradc.neg", YIELD]


# ---- cse / dce on fused IR ----------------------------------------------------------------------
TWO_KERNELS = """\
func.func @f(%a: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %0 = gradc.fused %a ({
  ^bb0(%x: tensor<4xf32>):
    %1 = gradc.exp %x : (tensor<4xf32>) -> tensor<4xf32>
    %2 = gradc.exp %x : (tensor<4xf32>) -> tensor<4xf32>
    %3 = gradc.add %1, %2 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    gradc.yield %3 : tensor<4xf32>
  }) : (tensor<4xf32>) -> tensor<4xf32>
  %4 = gradc.fused %a ({
  ^bb0(%y: tensor<4xf32>):
    %5 = gradc.exp %y : (tensor<4xf32>) -> tensor<4xf32>
    %6 = gradc.add %5, %5 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    gradc.yield %6 : tensor<4xf32>
  }) : (tensor<4xf32>) -> tensor<4xf32>
  %7 = gradc.fused %a ({
  ^bb0(%z: tensor<4xf32>):
    %8 = gradc.sin %z : (tensor<4xf32>) -> tensor<4xf32>
    gradc.yield %8 : tensor<4xf32>
  }) : (tensor<4xf32>) -> tensor<4xf32>
  func.return %0, %4 : tensor<4xf32>, tensor<4xf32>
}
"""


def test_cse_and_dce_on_kernels():
    f = parse_function(TWO_KERNELS)
    x = np.linspace(-1, 1, 4).astype(np.float32)
    want = interpret(f, [x])
    assert eliminate_common_subexpressions(f)      # inside the first body only
    verify(f)
    kernels = [op for op in f.ops if op.name == FUSED]
    assert len(kernels) == 3                        # ops with regions are never merged
    assert [o.name for o in kernels[0].regions[0].blocks[0].ops] == ["gradc.exp", "gradc.add", YIELD]
    assert eliminate_dead_code(f)                   # the unused sin kernel goes
    verify(f)
    assert [op.name for op in f.ops] == [FUSED, FUSED, "func.return"]
    got = interpret(f, [x])
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("seed", range(60))
def test_cse_dce_after_fuse_keep_values(seed):
    prog, funcs = functions_of(seed)
    for f in funcs:
        args = arguments(prog, f, seed)
        want = interpret(f, args)
        g = f.clone()
        fuse(g)
        eliminate_common_subexpressions(g)
        verify(g)
        eliminate_dead_code(g)
        verify(g)
        check_kernels(g)
        for a, b in zip(interpret(g, args), want):
            np.testing.assert_array_equal(a, b)
