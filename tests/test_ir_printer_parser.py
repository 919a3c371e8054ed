"""The IR text form: exact printing, parsing back, byte-for-byte round trips and diagnostics."""
import math
import random

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gradc.ir import (Block, Builder, Function, Module, Operation, ParseError, Region, TensorType, parse_function,
                      parse_module, print_function, print_module, verify)
from gradc.ir.attrs import format_attr, format_attr_dict
from gradc.ir.core import FUSED, YIELD
from gradc.ir.parser import Parser
from gradc.ir.testing import generate_program

SPEC_EXAMPLE = """\
func.func @loss(%x: tensor<2x2xf32> {gradc.requires_grad}, %w: tensor<f32>) -> tensor<f32> {
  %0 = gradc.mul %x, %w : (tensor<2x2xf32>, tensor<f32>) -> tensor<2x2xf32>   // model.py:12
  %1 = gradc.mean %0 {dims = [0, 1], keepdim = false} : (tensor<2x2xf32>) -> tensor<f32>
  func.return %1 : tensor<f32>
}
"""


def roundtrip(text):
    return print_module(parse_module(text))


def test_spec_example_round_trips_exactly():
    f = parse_function(SPEC_EXAMPLE)
    assert print_function(f) == SPEC_EXAMPLE
    assert f.arg_attrs == [{"gradc.requires_grad": True}, {}]
    assert [a.name_hint for a in f.args] == ["x", "w"]
    assert f.ops[0].loc == "model.py:12" and f.ops[1].loc is None
    assert f.ops[1].attrs == {"dims": [0, 1], "keepdim": False}
    verify(f)


def test_builder_ir_prints_exactly():
    f = Function("loss", [TensorType((2, 2), "float32"), TensorType((), "float32")], ["x", "w"],
                 arg_attrs=[{"gradc.requires_grad": True}, {}])
    b = Builder(f.body)
    y = b.op("mul", f.args[0], f.args[1], loc="model.py:12")
    z = b.op("mean", y, dims=[0, 1], keepdim=False)
    f.set_outputs([z])
    assert str(f) == SPEC_EXAMPLE


def test_multi_result_names_and_numbering():
    text = """\
func.func @f(%a: tensor<3x4xf32>) -> (tensor<3xf32>, tensor<3xi64>, tensor<3xf32>) {
  %0:2 = gradc.max_dim %a {dim = 1, keepdim = false} : (tensor<3x4xf32>) -> (tensor<3xf32>, tensor<3xi64>)
  %1 = gradc.neg %0#0 : (tensor<3xf32>) -> tensor<3xf32>
  func.return %0#0, %0#1, %1 : tensor<3xf32>, tensor<3xi64>, tensor<3xf32>
}
"""
    assert roundtrip(text) == text
    # arbitrary result names are renumbered in print order
    renamed = text.replace("%0", "%mx").replace("%1", "%n")
    assert roundtrip(renamed) == text


def test_block_argument_names():
    t = TensorType((2,), "float32")
    f = Function("f", [t, t, t, t, t], ["x", "x", "1bad", None, "arg0"])
    f.set_outputs([f.args[0]])
    header = str(f).splitlines()[0]
    # duplicate and invalid hints get numbers, skipping a hint that looks like a number name
    assert header == ("func.func @f(%arg1: tensor<2xf32>, %arg2: tensor<2xf32>, %arg3: tensor<2xf32>, "
                      "%arg4: tensor<2xf32>, %arg0: tensor<2xf32>) -> tensor<2xf32> {")
    assert roundtrip(str(f)) == str(f)


def test_fused_region_round_trip_and_numbering():
    t = TensorType((4,), "float32")
    f = Function("k", [t, t], ["a", "b"])
    block = Block([t, t], ["x", "y"])
    inner = Builder(block)
    s = inner.op("add", block.args[0], block.args[1])
    r = inner.op("sum", s, dims=[0], keepdim=False)
    block.append(Operation(YIELD, [r, s]))
    fused = Operation(FUSED, list(f.args), [r.type, s.type], {"kernel": "k0"}, [Region([block])], loc="m.py:3")
    f.body.append(fused)
    after = Builder(f.body).op("neg", fused.results[1])
    f.set_outputs([fused.results[0], after])
    text = str(f)
    assert text == """\
func.func @k(%a: tensor<4xf32>, %b: tensor<4xf32>) -> (tensor<f32>, tensor<4xf32>) {
  %0:2 = gradc.fused %a, %b {kernel = "k0"} ({
  ^bb0(%x: tensor<4xf32>, %y: tensor<4xf32>):
    %1 = gradc.add %x, %y : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    %2 = gradc.sum %1 {dims = [0], keepdim = false} : (tensor<4xf32>) -> tensor<f32>
    gradc.yield %2, %1 : tensor<f32>, tensor<4xf32>
  }) : (tensor<4xf32>, tensor<4xf32>) -> (tensor<f32>, tensor<4xf32>)   // m.py:3
  %3 = gradc.neg %0#1 : (tensor<4xf32>) -> tensor<4xf32>
  func.return %0#0, %3 : tensor<f32>, tensor<4xf32>
}
"""
    g = parse_function(text)
    verify(g)
    assert print_function(g) == text
    assert g.ops[0].loc == "m.py:3"


def test_function_attrs_loc_and_module_layout():
    text = """\
func.func @a(%p: tensor<i1>) attributes {gradc.flag, gradc.wrt = [0, 1]} {   // model.py:1
  func.return
}

func.func @"weird name"(%q: tensor<2xi64> {gradc.note = "hi"}) -> tensor<2xi64> {
  func.return %q : tensor<2xi64>
}
"""
    m = parse_module(text)
    assert [f.name for f in m.functions] == ["a", "weird name"]
    assert m.functions[0].attrs == {"gradc.flag": True, "gradc.wrt": [0, 1]}
    assert m.functions[0].loc == "model.py:1"
    assert m.functions[1].arg_attrs == [{"gradc.note": "hi"}]
    assert print_module(m) == text
    assert print_module(Module()) == ""


def test_comments_and_annotations():
    text = """\
// a leading comment
func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
  // a comment line
  %0 = gradc.neg %x : (tensor<2xf32>) -> tensor<2xf32>  //   model.py:7
  %1 = gradc.exp %0 : (tensor<2xf32>) -> tensor<2xf32>  // expected-error {{not a location}}
  %2 = gradc.exp %1 : (tensor<2xf32>) -> tensor<2xf32>  // CHECK: not a location either
  func.return %2 : tensor<2xf32>
}
"""
    f = parse_function(text)
    assert [op.loc for op in f.ops] == ["model.py:7", None, None, None]


@pytest.mark.parametrize("value, text", [
    (3, "3"), (-1, "-1"), (1.0, "1.0"), (-1.5e-07, "-1.5e-07"), (1e20, "1e+20"), (0.1, "0.1"),
    (float("inf"), "inf"), (float("-inf"), "-inf"), (float("nan"), "nan"), (True, "true"), (False, "false"),
    (None, "none"), ("float32", '"float32"'), ('a"b\\c\nd\x01', '"a\\"b\\\\c\\nd\\01"'), ([], "[]"),
    ([["slice", 0, None, 2], ["int", 1], ["tensor", 0]], '[["slice", 0, none, 2], ["int", 1], ["tensor", 0]]'),
    ((1, 2), "[1, 2]"), (np.float32(0.5), "0.5"), (np.int64(7), "7"), (np.bool_(True), "true"),
    ({"b": 1, "a": [True]}, "{a = [true], b = 1}"), ({}, "{}"),
])
def test_attribute_spelling(value, text):
    assert format_attr(value) == text
    parsed = Parser("{k = " + text + "}").parse_attr_dict()["k"]
    assert format_attr(parsed) == text


def test_attr_dict_sorting_and_unit_form():
    assert format_attr_dict({"keepdim": False, "dims": [0]}) == "{dims = [0], keepdim = false}"
    assert format_attr_dict({"gradc.requires_grad": True}, unit=True) == "{gradc.requires_grad}"
    assert format_attr_dict({"gradc.requires_grad": True}) == "{gradc.requires_grad = true}"
    assert format_attr_dict({"needs quotes": 1}) == '{"needs quotes" = 1}'
    assert format_attr_dict({}) == ""
    with pytest.raises(TypeError):
        format_attr(object())


attr_values = st.recursive(
    st.none() | st.booleans() | st.integers(-10**12, 10**12) | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=8),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(
        st.from_regex(r"[a-z_][a-z0-9_.]{0,5}", fullmatch=True), children, max_size=3),
    max_leaves=12)


@given(st.dictionaries(st.from_regex(r"[A-Za-z_][A-Za-z0-9_.]{0,6}", fullmatch=True), attr_values, max_size=4))
def test_attribute_dicts_round_trip(attrs):
    text = format_attr_dict(attrs) or "{}"
    parsed = Parser(text).parse_attr_dict()
    assert (format_attr_dict(parsed) or "{}") == text
    assert set(parsed) == set(attrs)


def test_forward_references_parse_and_resolve():
    text = """\
func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
  %0 = gradc.neg %1 : (tensor<2xf32>) -> tensor<2xf32>
  %1 = gradc.exp %x : (tensor<2xf32>) -> tensor<2xf32>
  func.return %0 : tensor<2xf32>
}
"""
    f = parse_function(text)
    neg, exp = f.ops[0], f.ops[1]
    assert neg.operands[0] is exp.results[0]
    assert exp.results[0].uses == [(neg, 0)]


@pytest.mark.parametrize("text, line, col, message", [
    ("func.func @f() {\n  %0 = gradc.nope : () -> tensor<f32>\n}", 2, 8, "unknown op 'gradc.nope'"),
    ("func.func @f() {\n  func.return %x : tensor<f32>\n}", 2, 15, "use of undefined value '%x'"),
    ("func.func @f(%x: tensor<2xf32>) {\n  %0 = gradc.neg %x : (tensor<3xf32>) -> tensor<3xf32>\n  func.return\n}",
     2, 18, "use of value '%x' expects different type than its definition"),
    ("func.func @f(%x: tensor<2x3xf32>) {\n  %0 = gradc.sum %x {dims = [0], keepdim = maybe} : "
     "(tensor<2x3xf32>) -> tensor<3xf32>\n  func.return\n}", 2, 44, "bad attribute value 'maybe'"),
    ("func.func @f(%x: tensor<2xbf16>) {\n}", 1, 18, "bad type 'tensor<2xbf16>'"),
    ("func.func @f(%x: tensor<2xf32>) {\n  func.return\n", 3, 1, "unexpected end of input: missing '}'"),
    ("func.func @f() {\n  func.return\n}\nfunc.func @f() {\n  func.return\n}", 4, 1, "redefinition of symbol @f"),
    ("%0 = gradc.neg", 1, 1, "expected 'func.func'"),
    ("func.func @f(%x: tensor<2xf32>) {\n  %0 = gradc.neg %x : (tensor<2xf32>) -> tensor<2xf32>\n"
     "  %0 = gradc.neg %x : (tensor<2xf32>) -> tensor<2xf32>\n  func.return\n}", 3, 3, "redefinition of value '%0'"),
    ("func.func @f(%x: tensor<2xf32>) {\n  %0 = gradc.neg %x : (tensor<2xf32>) -> (tensor<2xf32>, tensor<2xf32>)\n"
     "}", 2, 3, "defines 1 result(s) but its type lists 2"),
    ('func.func @f() attributes {a = "\\q"} {\n}', 1, 32, "bad attribute string"),
])
def test_parse_errors_have_line_and_column(text, line, col, message):
    with pytest.raises(ParseError) as info:
        parse_module(text)
    e = info.value
    assert (e.line, e.col) == (line, col), str(e)
    assert message in e.message
    assert str(e).startswith(f"{line}:{col}: error: ")
    assert e.format("in.mlir").startswith(f"in.mlir:{line}:{col}: error: ")


def test_parse_function_wants_one_function():
    with pytest.raises(ParseError, match="exactly one function"):
        parse_function(SPEC_EXAMPLE + "\n" + SPEC_EXAMPLE.replace("@loss", "@other"))


def test_positions_map_ops_to_source_lines():
    positions = {}
    m = parse_module("\n\n" + SPEC_EXAMPLE, positions=positions, line_offset=10)
    f = m.functions[0]
    assert positions[f] == (13, 1)
    assert [positions[op] for op in f.ops] == [(14, 3), (15, 3), (16, 3)]
    printed = {}
    print_function(f, positions=printed)
    assert [printed[op] for op in f.ops] == [(2, 3), (3, 3), (4, 3)]


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_random_traced_programs_round_trip(data):
    program = generate_program(lambda lo, hi: data.draw(st.integers(lo, hi)))
    f = program.trace()
    text = print_function(f)
    g = parse_function(text)
    assert print_function(g) == text
    assert print_function(parse_function(print_function(g))) == text


def test_many_seeded_programs_round_trip():
    for seed in range(200):
        f = generate_program(random.Random(seed).randint).trace()
        text = print_function(f)
        assert print_function(parse_function(text)) == text, text


def test_float_attributes_survive_exactly():
    vals = [0.1, 1 / 3, 1e-300, 5e-324, 1.7976931348623157e308, -0.0]
    f = Function("c", [], [])
    b = Builder(f.body)
    v = b.op("constant", value=vals, shape=[len(vals)], dtype="float64")
    f.set_outputs([v])
    g = parse_function(str(f))
    got = g.ops[0].attrs["value"]
    assert all(a == b and math.copysign(1, a) == math.copysign(1, b) for a, b in zip(got, vals))
