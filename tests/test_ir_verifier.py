"""The verifier: accepts everything the tracer makes, names the op and its printed line otherwise."""
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gradc.ir import (Block, Builder, Function, Module, Operation, Region, TensorType, VerifyError, parse_module,
                      print_function, verify)
from gradc.ir.core import FUSED, RETURN, YIELD
from gradc.ir.testing import generate_program
from gradc.ir.verifier import collect_errors

T2 = TensorType((2,), "float32")
T3 = TensorType((3,), "float32")


def two_op_function():
    f = Function("f", [T2, T2], ["x", "y"])
    b = Builder(f.body)
    s = b.op("add", f.args[0], f.args[1])
    n = b.op("neg", s)
    f.set_outputs([n])
    return f, s, n


def test_accepts_a_valid_function():
    f, _, _ = two_op_function()
    verify(f)
    verify(Module([f]))
    assert collect_errors(f) == []


def test_wrong_result_type_names_op_and_printed_line():
    f, s, n = two_op_function()
    s.type = T3
    with pytest.raises(VerifyError) as info:
        verify(f)
    e = info.value
    assert e.op is s.owner
    assert (e.line, e.col) == (2, 3)   # line 2 of print_function(f), after the header
    assert "'gradc.add' op result #0 has type tensor<3xf32> but the op table infers tensor<2xf32>" in e.message
    assert str(e).startswith("2:3: error: 'gradc.add' op")
    assert print_function(f).splitlines()[1].strip().startswith("%0 = gradc.add")


def test_lines_are_module_relative_for_modules():
    f, _, _ = two_op_function()
    g, s, _ = two_op_function()
    g.name = "g"
    s.type = T3
    with pytest.raises(VerifyError) as info:
        verify(Module([f, g]))
    assert info.value.line == len(print_function(f).splitlines()) + 1 + 2


def test_positions_from_the_parser():
    text = "\n\nfunc.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {\n" \
           "  %0 = gradc.neg %x : (tensor<2xf32>) -> tensor<3xf32>\n" \
           "  func.return %x : tensor<2xf32>\n}\n"
    positions = {}
    m = parse_module(text, positions=positions)
    with pytest.raises(VerifyError) as info:
        verify(m, positions=positions)
    assert (info.value.line, info.value.col) == (4, 3)


def test_dominance_and_undefined_operands():
    f, s, n = two_op_function()
    n.owner.move_before(s.owner)
    with pytest.raises(VerifyError, match="'gradc.neg' op operand #0 does not dominate this use"):
        verify(f)

    f, s, n = two_op_function()
    other, os_, _ = two_op_function()
    n.owner.set_operand(0, os_)
    with pytest.raises(VerifyError, match="operand #0 is defined outside this function"):
        verify(f)

    f, s, n = two_op_function()
    dead = Builder.before(n.owner).op("exp", f.args[0])
    repl = Builder.before(n.owner).op("exp", f.args[0])
    n.owner.set_operand(0, dead)
    dead.replace_all_uses_with(repl)
    dead.owner.erase()
    n.owner.operands[0] = dead       # corrupt: bypasses the use-list on purpose
    errors = collect_errors(f)
    messages = " | ".join(e.message for e in errors)
    assert "missing from its value's use-list" in messages
    assert "result of an erased 'gradc.exp' op" in messages


def test_operand_result_and_attr_checks():
    f, s, n = two_op_function()
    n.owner.attrs["dims"] = [0]
    verify(f)   # neg declares no attr_names: not checked
    op = Builder.before(f.return_op).create("sum", [s], {"dims": [0], "keepdim": False})
    op.attrs["axis"] = 1
    with pytest.raises(VerifyError, match=r"'gradc.sum' op has unknown attribute\(s\) 'axis'"):
        verify(f)
    del op.attrs["axis"]
    del op.attrs["keepdim"]
    with pytest.raises(VerifyError, match=r"missing required attribute\(s\) 'keepdim'"):
        verify(f)
    op.attrs["keepdim"] = object()
    with pytest.raises(VerifyError, match="has an unprintable value"):
        verify(f)


def test_operand_and_result_counts():
    f = Function("f", [T2], ["x"])
    f.body.append(Operation("gradc.neg", [f.args[0], f.args[0]], [T2]))
    f.set_outputs([f.ops[0].results[0]])
    with pytest.raises(VerifyError, match=r"expects 1 operand\(s\), got 2"):
        verify(f)
    f = Function("f", [T2], ["x"])
    f.body.append(Operation("gradc.neg", [f.args[0]], [T2, T2]))
    f.set_outputs([f.ops[0].results[0]])
    with pytest.raises(VerifyError, match=r"expects 1 result\(s\), got 2"):
        verify(f)
    f = Function("f", [T2], ["x"])
    f.body.append(Operation("gradc.frob", [f.args[0]], [T2]))
    f.set_outputs([f.ops[0].results[0]])
    with pytest.raises(VerifyError, match="'gradc.frob' op is not in the op table"):
        verify(f)


def test_function_structure():
    f, s, n = two_op_function()
    f.result_types = [T3]
    with pytest.raises(VerifyError, match=r"'func.return' op returns \(tensor<2xf32>\) but @f declares"):
        verify(f)
    f, s, n = two_op_function()
    f.return_op.erase()
    with pytest.raises(VerifyError, match="function @f body must end with 'func.return'") as info:
        verify(f)
    assert info.value.line == 1
    f, s, n = two_op_function()
    f.body.insert(0, Operation(RETURN, [f.args[0]]))
    with pytest.raises(VerifyError, match="must be the last op of its block"):
        verify(f)
    f, s, n = two_op_function()
    f.arg_attrs.append({})
    with pytest.raises(VerifyError, match="2 arguments but 3 argument attribute dicts"):
        verify(f)
    f, s, n = two_op_function()
    with pytest.raises(VerifyError, match="redefinition of symbol @f"):
        verify(Module([f, f.clone()]))


def fused_function(arg_type=T2, yield_from_body=True):
    f = Function("k", [T2], ["a"])
    block = Block([arg_type], ["x"])
    e = Builder(block).op("exp", block.args[0]) if arg_type == T2 else block.args[0]
    if yield_from_body:
        block.append(Operation(YIELD, [e]))
    fused = Operation(FUSED, [f.args[0]], [T2], regions=[Region([block])])
    f.body.append(fused)
    f.set_outputs([fused.results[0]])
    return f, fused, block


def test_fused_structure():
    f, fused, block = fused_function()
    verify(f)
    f, fused, block = fused_function(arg_type=T3)
    with pytest.raises(VerifyError, match="operand #0 has type tensor<2xf32> but body argument 0 has type"):
        verify(f)
    f, fused, block = fused_function(yield_from_body=False)
    with pytest.raises(VerifyError, match="body must end with 'gradc.yield'"):
        verify(f)
    f, fused, block = fused_function()
    fused.results[0].type = T3
    f.result_types = [T3]
    with pytest.raises(VerifyError, match=r"'gradc.yield' op yields \(tensor<2xf32>\) but the enclosing"):
        verify(f)
    f, fused, block = fused_function()
    fused.regions[0].blocks.append(Block())
    with pytest.raises(VerifyError, match="exactly one region with one block"):
        verify(f)


def test_region_may_use_values_of_enclosing_scope_defined_before_it():
    f = Function("k", [T2], ["a"])
    b = Builder(f.body)
    outer = b.op("neg", f.args[0])
    block = Block([T2], ["x"])
    s = Builder(block).op("add", block.args[0], outer)
    block.append(Operation(YIELD, [s]))
    fused = Operation(FUSED, [f.args[0]], [T2], regions=[Region([block])])
    f.body.append(fused)
    f.set_outputs([fused.results[0]])
    verify(f)
    outer.owner.move_before(f.return_op)
    with pytest.raises(VerifyError, match="does not dominate"):
        verify(f)
    # a value defined inside a region is not visible after it
    f2, fused2, block2 = fused_function()
    inner = block2.ops[0].results[0]
    Builder.before(f2.return_op).op("neg", inner)
    with pytest.raises(VerifyError, match="does not dominate"):
        verify(f2)


def test_error_lists_every_problem():
    f, s, n = two_op_function()
    s.type = T3
    f.result_types = [T3]
    with pytest.raises(VerifyError) as info:
        verify(f)
    assert len(info.value.errors) >= 2


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_verifier_accepts_every_traced_program(data):
    program = generate_program(lambda lo, hi: data.draw(st.integers(lo, hi)))
    verify(program.trace())


def test_verifier_accepts_many_seeded_programs():
    for seed in range(300):
        verify(generate_program(random.Random(seed).randint).trace())
