"""Kernel IR: builder typing and checks, index expressions, coalescing, printing."""
import numpy as np
import pytest

from gradc.codegen.kernel_ir import (Index, KernelBuilder, build_matmul, coalesce, match_contraction)


def test_index_broadcast_and_strides():
    assert Index.broadcast((3, 1), (2, 3, 4)).strides == (0, 1, 0)
    assert Index.broadcast((4,), (2, 3, 4)).strides == (0, 0, 1)
    assert Index.broadcast((3, 4), (3, 4), strides=(1, 3)).strides == (1, 3)   # transposed view
    assert str(Index((4, 1), 2)) == "4*i0 + i1 + 2"
    with pytest.raises(ValueError):
        Index.broadcast((5,), (2, 3))


def test_builder_types_and_sugar():
    kb = KernelBuilder("k", (2, 3))
    x = kb.load(kb.input("x", "float32", (2, 3)))
    y = kb.load(kb.input("y", "f32", (3,)))
    z = x * 2.0 + y
    assert z.dtype == "f32" and z.axes == {0, 1}
    c = kb.op("lt", x, y)
    assert c.dtype == "i1"
    w = kb.op("where", c, x, 0.0)
    assert w.dtype == "f32"
    assert kb.op("cast", w, dtype="f32") is w
    with pytest.raises(TypeError):
        kb.op("add", x, kb.op("cast", y, dtype="f64"))
    with pytest.raises(TypeError):
        kb.op("exp", kb.op("cast", x, dtype="i64"))
    with pytest.raises(KeyError):
        kb.op("frobnicate", x)
    out = kb.output("o", "f32", (2, 3))
    with pytest.raises(TypeError):
        kb.store(out, kb.op("cast", x, dtype="f64"))
    kb.store(out, w)
    k = kb.build()
    assert [p.name for p in k.inputs] == ["x", "y"] and [p.name for p in k.outputs] == ["o"]


def test_store_checks_and_reduction_default_index():
    kb = KernelBuilder("k", (4, 5))
    x = kb.load(kb.input("x", "f64", (4, 5)))
    with pytest.raises(ValueError, match="overwritten"):
        kb.store(kb.output("bad", "f64", (5,)), x, index=(0, 1))
    s = kb.reduce("sum", x, axes=(1,))
    assert s.axes == {0}
    kb.store(kb.output("o", "f64", (4,)), s)
    k = kb.build()
    assert k.body[-1].index.strides == (1, 0)
    kb.store(kb.output("t", "f64", ()), kb.reduce("sum", x, axes=(0, 1)), index=(0, 0))
    with pytest.raises(ValueError, match="overlaps"):
        kb.build()


def test_out_of_bounds_index_rejected():
    kb = KernelBuilder("k", (4,))
    buf = kb.input("x", "f32", (4,))
    with pytest.raises(IndexError):
        kb.load(buf, index=(2,))


def test_printer():
    kb = KernelBuilder("softmax", (2, 8))
    x = kb.load(kb.input("x", "f32", (2, 8)))
    m = kb.reduce("max", x, (1,))
    e = kb.op("exp", kb.op("sub", x, m))
    kb.store(kb.output("out", "f32", (2, 8)), kb.op("div", e, kb.reduce("sum", e, (1,))))
    text = str(kb.build())
    assert text.splitlines()[0] == ("kernel @softmax(%x: f32[2,8] input, %out: f32[2,8] output) "
                                    "space [2, 8] reduce (1) {")
    assert "  %1 = reduce.max %0 over (i1) : f32" in text
    assert "  store %out[8*i0 + i1], %5" in text
    kb2 = KernelBuilder("c", (3,))
    x = kb2.load(kb2.input("x", "f32", (3,)))
    kb2.store(kb2.output("o", "f32", (3,)), kb2.op("clamp", x, min=0.0, max=1.0))
    assert "clamp %0 {max=1.0, min=0.0} : f32" in str(kb2.build())


def test_coalesce_merges_contiguous_axes():
    kb = KernelBuilder("k", (4, 1, 5, 6))
    x = kb.load(kb.input("x", "f32", (4, 1, 5, 6)))
    b = kb.load(kb.input("b", "f32", (6,)))
    kb.store(kb.output("o", "f32", (4, 1, 5, 6)), kb.op("add", x, b))
    k = coalesce(kb.build())
    assert k.space == (20, 6)
    kb = KernelBuilder("k", (4, 5, 6))
    x = kb.load(kb.input("x", "f32", (4, 5, 6)))
    kb.store(kb.output("o", "f32", (4, 5, 6)), kb.op("neg", x))
    assert coalesce(kb.build()).space == (120,)


def test_matmul_builds_a_contraction():
    k = build_matmul("mm", (2, 3, 4), (4, 5), "f64")
    assert k.space == (2, 3, 5, 4) and k.reduce_axes == (3,)
    c = match_contraction(k)
    assert c is not None and c.a.buffer.name == "a" and c.b.buffer.name == "b"
    from gradc.codegen import kernel_eval
    a, b = np.random.rand(2, 3, 4), np.random.rand(4, 5)
    out = np.zeros((2, 3, 5))
    kernel_eval.evaluate(k, [a, b, out])
    np.testing.assert_allclose(out, a @ b)
