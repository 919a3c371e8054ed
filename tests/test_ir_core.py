"""IR core: types, values and use-lists, ops, blocks, functions, modules, the Builder, cloning."""
import pytest

from gradc import dtypes
from gradc.ir import (Block, Builder, Function, Module, Operation, Region, TensorType, parse_type,
                      print_function, verify)
from gradc.ir.core import FUSED, YIELD
from gradc.ops import ShapeError

F32 = TensorType((2, 3), "float32")


def make_func():
    f = Function("f", [F32, TensorType((), "float32")], ["x", "w"])
    b = Builder(f.body)
    y = b.op("mul", f.args[0], f.args[1])
    z = b.op("sum", y, dims=[0, 1], keepdim=False)
    f.set_outputs([z])
    return f, y, z


def test_tensor_type_text_and_equality():
    assert str(TensorType((2, 2), "float32")) == "tensor<2x2xf32>"
    assert str(TensorType((), dtypes.float32)) == "tensor<f32>"
    assert str(TensorType((4,), dtypes.int64)) == "tensor<4xi64>"
    assert str(TensorType((), dtypes.bool_)) == "tensor<i1>"
    assert str(TensorType((0, 3), dtypes.float64)) == "tensor<0x3xf64>"
    for text in ["tensor<2x2xf32>", "tensor<f32>", "tensor<4xi64>", "tensor<i1>", "tensor<0x3xf64>"]:
        assert str(parse_type(text)) == text
    assert TensorType((2,), "float32") == TensorType([2], dtypes.float32)
    assert hash(TensorType((2,), "float32")) == hash(TensorType((2,), "float32"))
    assert TensorType((2,), "float32") != TensorType((2,), "float64")
    with pytest.raises(ValueError):
        parse_type("tensor<2xf16>")


def test_builder_infers_result_types():
    f, y, z = make_func()
    assert y.type == F32
    assert z.type == TensorType((), "float32")
    assert f.result_types == [z.type]
    b = Builder.at_end(f.body)
    vals, idx = b.op("max_dim", f.args[0], dim=1, keepdim=False)
    assert vals.type == TensorType((2,), "float32") and idx.type == TensorType((2,), "int64")
    assert f.body.ops[-1].name == "func.return"   # at_end inserts before the terminator
    with pytest.raises(ShapeError):
        b.op("add", f.args[0], Builder(f.body).op("constant", value=0.0, shape=[4], dtype="float32"))


def test_use_lists_and_replace_all_uses():
    f, y, z = make_func()
    mul = y.owner
    assert [(op.name, i) for op, i in y.uses] == [("gradc.sum", 0)]
    assert f.args[0].users() == [mul]
    neg = Builder.before(z.owner).op("neg", y)
    y.replace_uses_if(neg, lambda op: op.name == "gradc.sum")
    assert z.owner.operands[0] is neg
    assert [op.name for op, _ in y.uses] == ["gradc.neg"]
    verify(f)
    z2 = Builder.before(f.return_op).op("mean", neg, dims=[0, 1], keepdim=False)
    z.replace_all_uses_with(z2)
    assert f.outputs == [z2] and not z.has_uses()


def test_erase_requires_unused_results():
    f, y, z = make_func()
    with pytest.raises(ValueError, match="still has"):
        y.owner.erase()
    f.return_op.set_operands([f.args[1]])
    f.result_types = [f.args[1].type]
    z.owner.erase()
    y.owner.erase()
    assert [op.name for op in f.ops] == ["func.return"]
    assert f.args[0].uses == [] and len(f.args[1].uses) == 1
    verify(f)


def test_erase_drops_uses_of_nested_ops():
    f = Function("g", [F32], ["a"])
    block = Block([F32], ["x"])
    inner = Builder(block)
    e = inner.op("exp", block.args[0])
    block.append(Operation(YIELD, [e]))
    fused = Operation(FUSED, [f.args[0]], [F32], regions=[Region([block])])
    f.body.append(fused)
    f.set_outputs([f.args[0]])
    assert len(block.args[0].uses) == 1
    fused.erase()
    assert block.args[0].uses == [] and len(f.args[0].uses) == 1


def test_block_insertion_and_move():
    f, y, z = make_func()
    b = Builder.before(z.owner)
    n = b.op("neg", y)
    assert [op.name for op in f.ops] == ["gradc.mul", "gradc.neg", "gradc.sum", "func.return"]
    n.owner.move_before(y.owner)
    assert [op.name for op in f.ops][:2] == ["gradc.neg", "gradc.mul"]
    with pytest.raises(Exception):
        verify(f)   # neg now uses mul's result before it is defined
    y.owner.move_before(n.owner)
    verify(f)


def test_function_arguments_and_outputs():
    f, y, z = make_func()
    a = f.add_argument(TensorType((3,), "float32"), "extra", {"gradc.requires_grad": True})
    assert f.arg_attrs[-1] == {"gradc.requires_grad": True} and a.index == 2
    f.erase_argument(2)
    assert len(f.args) == 2 and len(f.arg_attrs) == 2
    with pytest.raises(ValueError):
        f.erase_argument(0)   # still used
    f.set_outputs([z, y])
    assert f.result_types == [z.type, y.type]
    assert f.return_op.operands == [z, y]


def test_clone_is_deep_and_prints_the_same():
    f, y, z = make_func()
    f.attrs["gradc.wrt"] = [0]
    f.meta["output_structure"] = "single"
    g = f.clone()
    assert str(g) == str(f)
    assert g.meta == f.meta and g.meta is not f.meta
    assert all(op.parent is g.body for op in g.ops)
    g.ops[0].attrs["x"] = 1
    assert "x" not in f.ops[0].attrs
    Builder.before(g.return_op).op("neg", g.args[0])
    assert len(f.ops) == 3 and len(g.ops) == 4


def test_module():
    f, _, _ = make_func()
    g = f.clone()
    g.name = "g"
    m = Module([f, g])
    assert m.get("g") is g
    with pytest.raises(KeyError):
        m.get("h")
    text = str(m)
    assert text == print_function(f) + "\n" + print_function(g)
