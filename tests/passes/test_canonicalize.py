"""canonicalize: each identity, what must not be rewritten, constant folding, and on random
programs (and their joints): values preserved and one run is a fixed point."""
import itertools

import numpy as np
import pytest

from gradc.ir import Builder, Function, TensorType, interpret, print_function, verify
from gradc.passes.canonicalize import FOLD_MAX_ELEMENTS, canonicalize

from .harness import seeded_program
from gradc.passes.autodiff import differentiate

F32 = "float32"


def build(arg_shapes, body, dtype=F32):
    """A function of fresh args whose result is ``body(builder, *args)``."""
    f = Function("f", [TensorType(s, dtype) for s in arg_shapes], [f"x{i}" for i in range(len(arg_shapes))])
    b = Builder(f.body)
    out = body(b, *f.args)
    f.set_outputs(out if isinstance(out, (list, tuple)) else [out])
    verify(f)
    return f


def canonical(f, arrays):
    """Canonicalize ``f`` in place, checking verification and values; return the outputs' owners."""
    want = interpret(f, arrays)
    canonicalize(f)
    verify(f)
    got = interpret(f, arrays)
    for a, b in zip(got, want):
        assert a.dtype == b.dtype and a.shape == b.shape
        np.testing.assert_array_equal(a, b)
    assert not canonicalize(f), "a second canonicalize run changed the IR"
    return f.outputs


def arrays_for(f, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.uniform(-2, 2, size=a.type.shape).astype(a.type.dtype.np) for a in f.args]


IDENTITIES = {
    "x*1": lambda b, x: b.op("mul", x, b.constant(1.0)),
    "1*x": lambda b, x: b.op("mul", b.constant(1.0, (2, 3)), x),
    "x+0": lambda b, x: b.op("add", x, b.constant(0.0)),
    "0+x": lambda b, x: b.op("add", b.constant(0.0, (3,)), x),
    "x-0": lambda b, x: b.op("sub", x, b.constant(0.0, (1, 3))),
    "x/1": lambda b, x: b.op("div", x, b.constant(1.0)),
    "neg(neg(x))": lambda b, x: b.op("neg", b.op("neg", x)),
    "neg^4(x)": lambda b, x: b.op("neg", b.op("neg", b.op("neg", b.op("neg", x)))),
    "reshape(reshape(x)) to x's shape": lambda b, x: b.op("reshape", b.op("reshape", x, shape=[6]), shape=[2, 3]),
    "permute(permute(x)) = identity": lambda b, x: b.op("permute", b.op("permute", x, dims=[1, 0]), dims=[1, 0]),
    "identity permute": lambda b, x: b.op("permute", x, dims=[0, 1]),
    "sum over no dims": lambda b, x: b.op("sum", x, dims=[], keepdim=False),
    "reshape to same shape": lambda b, x: b.op("reshape", x, shape=[2, 3]),
    "expand to same shape": lambda b, x: b.op("expand", x, shape=[2, 3]),
    "cast to same dtype": lambda b, x: b.op("cast", x, dtype=F32),
    "sum_to same shape": lambda b, x: b.op("sum_to", x, shape=[2, 3]),
    "(x*1+0)/1": lambda b, x: b.op("div", b.op("add", b.op("mul", x, b.constant(1.0)), b.constant(0.0)),
                                   b.constant(1.0)),
}


@pytest.mark.parametrize("name", list(IDENTITIES))
def test_identity_is_x(name):
    f = build([(2, 3)], IDENTITIES[name])
    (out,) = canonical(f, arrays_for(f))
    assert out is f.args[0], f"{name}: result is {out}"


KEPT = {   # name: (arg shapes, body, op that must survive)
    "0-x": ([(3,)], lambda b, x: b.op("sub", b.constant(0.0), x), "gradc.sub"),
    "1/x": ([(3,)], lambda b, x: b.op("div", b.constant(1.0), x), "gradc.div"),
    "x*0": ([(3,)], lambda b, x: b.op("mul", x, b.constant(0.0)), "gradc.mul"),
    "x*1 broadcast to 2x3": ([(3,)], lambda b, x: b.op("mul", x, b.constant(1.0, (2, 3))), "gradc.mul"),
    "x+0 adds a dim": ([(3,)], lambda b, x: b.op("add", x, b.constant(0.0, (1, 3))), "gradc.add"),
    "x-0 broadcast to 4x3": ([(3,)], lambda b, x: b.op("sub", x, b.constant(0.0, (4, 1))), "gradc.sub"),
    "x/1 of 0-d x by a vector": ([()], lambda b, x: b.op("div", x, b.constant(1.0, (2,))), "gradc.div"),
    "x*[1, 2]": ([(2,)], lambda b, x: b.op("mul", x, b.builder_constant([1.0, 2.0])), "gradc.mul"),
    "single neg": ([(3,)], lambda b, x: b.op("neg", x), "gradc.neg"),
    "permute": ([(2, 3)], lambda b, x: b.op("permute", x, dims=[1, 0]), "gradc.permute"),
    "sum over a real dim": ([(2, 3)], lambda b, x: b.op("sum", x, dims=[1], keepdim=False), "gradc.sum"),
    "cast to f64": ([(3,)], lambda b, x: b.op("cast", x, dtype="float64"), "gradc.cast"),
    "expand": ([(3,)], lambda b, x: b.op("expand", x, shape=[2, 3]), "gradc.expand"),
    "clone": ([(3,)], lambda b, x: b.op("clone", x), "gradc.clone"),
}


class _B(Builder):
    def builder_constant(self, values):
        return self.constant(values, (len(values),))


@pytest.mark.parametrize("name", list(KEPT))
def test_not_an_identity_is_kept(name):
    shapes, body, op_name = KEPT[name]
    f = Function("f", [TensorType(s, F32) for s in shapes], ["x"])
    out = body(_B(f.body), *f.args)
    f.set_outputs([out])
    verify(f)
    (res,) = canonical(f, arrays_for(f))
    assert res is not f.args[0]
    assert res.owner.name == op_name


def test_reduce_over_unit_dims_is_a_reshape():
    for name, keep in itertools.product(["sum", "mean", "amax", "amin", "prod"], [False, True]):
        f = build([(4, 1, 3, 1)], lambda b, x: b.op(name, x, dims=[1, 3], keepdim=keep))
        (out,) = canonical(f, arrays_for(f))
        if keep:
            assert out is f.args[0]
        else:
            assert out.owner.name == "gradc.reshape" and out.owner.operands[0] is f.args[0]


def test_sum_to_becomes_sum_and_reshape():
    cases = [((2, 3, 4), (3, 1)), ((2, 3, 4), (4,)), ((5, 1, 3), (1, 3)), ((1, 3), (3,)), ((2, 3), (1, 1)),
             ((4,), ()), ((1, 1, 3), (3,))]
    for src, dst in cases:
        f = build([src], lambda b, x: b.op("sum_to", x, shape=list(dst)))
        (out,) = canonical(f, arrays_for(f))
        assert all(op.name != "gradc.sum_to" for op in f.walk()), (src, dst)
        assert out.type.shape == dst
        # when every summed dim has size 1 the sum disappears too, in the same run
        if all(s == 1 for s in src[:len(src) - len(dst)]) and \
                all(not (d == 1 and s != 1) for d, s in zip(dst, src[len(src) - len(dst):])):
            assert all(op.name != "gradc.sum" for op in f.walk()), (src, dst)


def test_permute_compositions():
    for p, q in itertools.product(itertools.permutations(range(3)), repeat=2):
        f = build([(2, 3, 4)], lambda b, x: b.op("permute", b.op("permute", x, dims=list(p)), dims=list(q)))
        (out,) = canonical(f, arrays_for(f))
        composed = [p[d] for d in q]
        if composed == [0, 1, 2]:
            assert out is f.args[0]
        else:
            assert out.owner.name == "gradc.permute" and out.owner.operands[0] is f.args[0]
            assert out.owner.attrs["dims"] == composed


def test_constant_folding():
    def body(b):
        small = b.op("add", b.constant([1.0, 2.0, 3.0], (3,)), b.constant(10.0))
        splat = b.op("exp", b.constant(0.0, (64,)))
        large = b.op("mul", b.constant([[1.0], [2.0], [3.0], [4.0]], (4, 1)),
                     b.constant([[1.0, 2.0, 3.0, 4.0, 5.0]], (1, 5)))
        nan = b.op("log", b.constant(-1.0))
        ints = b.op("add", b.constant(3, (), "int64"), b.constant(4, (), "int64"))
        return [small, splat, large, nan, ints]

    f = Function("f", [], [])
    f.set_outputs(body(Builder(f.body)))
    verify(f)
    small, splat, large, nan, ints = canonical(f, [])
    assert small.owner.name == "gradc.constant" and small.owner.attrs["value"] == [11.0, 12.0, 13.0]
    assert splat.owner.attrs == {"value": 1.0, "shape": [64], "dtype": F32}
    assert large.owner.name == "gradc.mul" and 4 * 5 > FOLD_MAX_ELEMENTS   # not uniform, too big to spell out
    assert nan.owner.name == "gradc.log"                                     # NaN is not folded
    assert ints.owner.attrs == {"value": 7, "shape": [], "dtype": "int64"}


def test_big_splats_fold_without_materialising():
    """A 4M-element splat (the mean's gradient constant) folds through elementwise ops and views
    on its single value, so it stays one constant the fuser can put in a kernel."""
    f = Function("f", [], [])
    b = Builder(f.body)
    c = b.constant(0.25, (4096, 1024))
    row = b.op("reshape", b.constant(-0.5, (4096,)), shape=[4096, 1])
    f.set_outputs([b.op("neg", b.op("mul", c, b.constant(2.0))), b.op("expand", row, shape=[4096, 1024])])
    scaled, expanded = canonical(f, [])
    assert scaled.owner.attrs == {"value": -0.5, "shape": [4096, 1024], "dtype": F32}
    assert expanded.owner.attrs == {"value": -0.5, "shape": [4096, 1024], "dtype": F32}


@pytest.mark.parametrize("chunk", range(6))
def test_random_programs_keep_values_and_reach_a_fixed_point(chunk):
    for seed in range(chunk * 100, chunk * 100 + 100):
        prog = seeded_program(seed)
        f = prog.trace()
        funcs = [f]
        if any(s.requires_grad for s in prog.specs):
            funcs.append(differentiate(f))
        for g in funcs:
            rng = np.random.default_rng(seed)
            args = prog.example_inputs(seed) + [rng.uniform(-1, 1, size=a.type.shape).astype(a.type.dtype.np)
                                                for a in g.args[len(prog.specs):]]
            want = interpret(g, args)
            h = g.clone()
            canonicalize(h)
            verify(h)
            text = print_function(h)
            assert not canonicalize(h) and print_function(h) == text, f"seed {seed}: not a fixed point"
            for a, b in zip(interpret(h, args), want):
                assert a.dtype == b.dtype and a.shape == b.shape, f"seed {seed}"
                np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7, err_msg=f"seed {seed}")


def _close_after_canonicalize(f, arrays):
    """Canonicalize ``f``; its values stay those of the original up to reassociation."""
    want = interpret(f, arrays)
    canonicalize(f)
    verify(f)
    for a, b in zip(interpret(f, arrays), want):
        assert a.dtype == b.dtype and a.shape == b.shape
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
    assert not canonicalize(f), "a second canonicalize run changed the IR"


@pytest.mark.parametrize("case", ["mul_left", "mul_right", "div", "neg", "mean", "no_keepdim"])
def test_per_row_factors_leave_the_row_sum(case):
    """sum over a row of (row factor) * x is factor * sum(x), and so on: afterwards the sum reads
    x itself and the factor is applied to the (small) sum."""
    def body(b, x, r):
        reduce, keep = ("mean" if case == "mean" else "sum"), case != "no_keepdim"
        term = {"mul_left": lambda: b.op("mul", r, x), "mul_right": lambda: b.op("mul", x, r),
                "div": lambda: b.op("div", x, r), "neg": lambda: b.op("neg", x),
                "mean": lambda: b.op("mul", x, r), "no_keepdim": lambda: b.op("mul", x, r)}[case]()
        return b.op(reduce, term, dims=[1], keepdim=keep)
    f = build([(3, 5), (3, 1)], body, dtype="float64")
    x = f.args[0]
    _close_after_canonicalize(f, arrays_for(f))
    out = f.outputs[0].owner
    if out.name == "gradc.reshape":
        out = out.operands[0].owner
    assert out.name in ("gradc.mul", "gradc.div", "gradc.neg")
    reduced = out.operands[0].owner
    assert reduced.name in ("gradc.sum", "gradc.mean") and reduced.operands[0] is x


@pytest.mark.parametrize("case", ["varies_along_row", "other_dim"])
def test_factors_that_vary_along_the_sum_stay_inside(case):
    def body(b, x, r, c):
        if case == "varies_along_row":
            return b.op("sum", b.op("mul", x, c), dims=[1], keepdim=True)
        return b.op("sum", b.op("mul", x, r), dims=[0], keepdim=True)
    f = build([(3, 5), (3, 1), (5,)], body, dtype="float64")
    _close_after_canonicalize(f, arrays_for(f))
    s = f.outputs[0].owner
    assert s.name == "gradc.sum" and s.operands[0].owner.name == "gradc.mul"


def test_elementwise_ops_sink_below_expand():
    """expand(r) / 4 computes r / 4 and expands it; a product with a full-shape operand reads
    the small value directly (elementwise ops broadcast)."""
    def body(b, x, r):
        e = b.op("expand", r, shape=[3, 5])
        q = b.op("div", e, b.constant(4.0, dtype="float64"))
        return [b.op("mul", q, x), b.op("exp", e)]
    f = build([(3, 5), (3, 1)], body, dtype="float64")
    x, r = f.args
    _close_after_canonicalize(f, arrays_for(f))
    prod, expd = (o.owner for o in f.outputs)
    assert prod.name == "gradc.mul" and prod.operands[1] is x
    assert tuple(prod.operands[0].type.shape) == (3, 1)
    assert expd.name == "gradc.expand" and expd.operands[0].owner.name == "gradc.exp"
    assert expd.operands[0].owner.operands[0] is r


@pytest.mark.parametrize("reduce", ["sum", "mean"])
@pytest.mark.parametrize("keepdim", [True, False])
def test_a_centered_sum_is_zero_and_keeps_nan(reduce, keepdim):
    """sum/mean of x - mean(x) over the mean's dims is mean(x) * 0: 0 for finite rows (the
    unrewritten sum is rounding noise around 0) and NaN for rows with a NaN or an inf, where
    the unrewritten sum is NaN too."""
    def body(b, x):
        centered = b.op("sub", x, b.op("mean", x, dims=[1], keepdim=True))
        return b.op(reduce, centered, dims=[1], keepdim=keepdim)
    f = build([(4, 7)], body, dtype="float64")
    x = np.random.default_rng(0).standard_normal((4, 7)) * 1e3
    x[1, 2], x[2, 0], x[3, 5] = np.nan, np.inf, -np.inf
    want = interpret(f, [x])[0]
    canonicalize(f)
    verify(f)
    got = interpret(f, [x])[0]
    assert got.shape == want.shape
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    assert np.isnan(got.reshape(4)[1:]).all() and got.reshape(4)[0] == 0
    np.testing.assert_allclose(want.reshape(4)[0], 0, atol=1e-9)
    assert not any(op.name == reduce and op.operands[0].owner.name == "gradc.sub" for op in f.body.ops)


def test_sums_of_other_differences_are_kept():
    """x - mean(y), x - mean over another dim, and x - mean without keepdim (expanded) of a
    different tensor stay sums."""
    def body(b, x, y):
        return [b.op("sum", b.op("sub", x, b.op("mean", y, dims=[1], keepdim=True)), dims=[1], keepdim=True),
                b.op("sum", b.op("sub", x, b.op("mean", x, dims=[0], keepdim=True)), dims=[1], keepdim=True)]
    f = build([(3, 5), (3, 5)], body, dtype="float64")
    _close_after_canonicalize(f, arrays_for(f))
    assert all(o.owner.name == "gradc.sum" for o in f.outputs)
