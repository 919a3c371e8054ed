"""The interpreter: the op table's NumPy references over IR, equal to eager gradc."""
import random

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import gradc
from gradc.ir import InterpreterError, interpret, parse_function
from gradc.ir.testing import generate_program


def test_simple_function():
    f = parse_function("""\
func.func @loss(%x: tensor<2x2xf32>, %w: tensor<f32>) -> tensor<f32> {
  %0 = gradc.mul %x, %w : (tensor<2x2xf32>, tensor<f32>) -> tensor<2x2xf32>
  %1 = gradc.mean %0 {dims = [0, 1], keepdim = false} : (tensor<2x2xf32>) -> tensor<f32>
  func.return %1 : tensor<f32>
}
""")
    x = np.arange(4, dtype=np.float32).reshape(2, 2)
    (out,) = interpret(f, [x, np.float32(2.0)])
    assert out.dtype == np.float32 and out.shape == () and out == 3.0


def test_multi_result_and_constants():
    f = parse_function("""\
func.func @f(%x: tensor<2x3xf32>) -> (tensor<2xf32>, tensor<2xi64>, tensor<2x3xf32>) {
  %0:2 = gradc.max_dim %x {dim = 1, keepdim = false} : (tensor<2x3xf32>) -> (tensor<2xf32>, tensor<2xi64>)
  %1 = gradc.constant {dtype = "float32", shape = [3], value = [1.0, 2.0, 3.0]} : () -> tensor<3xf32>
  %2 = gradc.add %x, %1 : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  func.return %0#0, %0#1, %2 : tensor<2xf32>, tensor<2xi64>, tensor<2x3xf32>
}
""")
    x = np.array([[1, 5, 2], [7, 0, 3]], dtype=np.float32)
    values, indices, shifted = interpret(f, [x])
    np.testing.assert_array_equal(values, [5, 7])
    np.testing.assert_array_equal(indices, [1, 0])
    assert indices.dtype == np.int64
    np.testing.assert_array_equal(shifted, x + [1, 2, 3])


def test_fused_region_runs_its_body():
    fused = parse_function("""\
func.func @k(%a: tensor<4xf32>, %b: tensor<4xf32>) -> (tensor<f32>, tensor<4xf32>) {
  %0 = gradc.neg %b : (tensor<4xf32>) -> tensor<4xf32>
  %1:2 = gradc.fused %a, %b ({
  ^bb0(%x: tensor<4xf32>, %y: tensor<4xf32>):
    %2 = gradc.add %x, %y : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    %3 = gradc.mul %2, %0 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    %4 = gradc.sum %3 {dims = [0], keepdim = false} : (tensor<4xf32>) -> tensor<f32>
    gradc.yield %4, %2 : tensor<f32>, tensor<4xf32>
  }) : (tensor<4xf32>, tensor<4xf32>) -> (tensor<f32>, tensor<4xf32>)
  func.return %1#0, %1#1 : tensor<f32>, tensor<4xf32>
}
""")
    a = np.arange(4, dtype=np.float32)
    b = np.ones(4, dtype=np.float32)
    total, s = interpret(fused, [a, b])
    np.testing.assert_array_equal(s, a + b)
    assert total == np.sum((a + b) * -b)


def test_argument_checks_and_tensor_inputs():
    f = parse_function("func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {\n"
                       "  func.return %x : tensor<2xf32>\n}\n")
    with pytest.raises(InterpreterError, match="takes 1 argument"):
        interpret(f, [])
    with pytest.raises(InterpreterError, match="expected shape"):
        interpret(f, [np.zeros(3, np.float32)])
    with pytest.raises(InterpreterError, match="expected dtype"):
        interpret(f, [np.zeros(2, np.float64)])
    x = gradc.tensor([1.0, 2.0], requires_grad=True)
    (out,) = interpret(f, [x])
    np.testing.assert_array_equal(out, [1.0, 2.0])
    out[0] = 5   # outputs are fresh arrays, even when an argument is returned
    assert x[0].item() == 1.0


def test_results_are_checked_against_their_types():
    f = parse_function("func.func @f(%x: tensor<2xf32>) -> tensor<3xf32> {\n"
                       "  %0 = gradc.neg %x : (tensor<2xf32>) -> tensor<3xf32>\n"
                       "  func.return %0 : tensor<3xf32>\n}\n")
    with pytest.raises(InterpreterError, match="has shape \\[2\\] but its IR type is tensor<3xf32>"):
        interpret(f, [np.zeros(2, np.float32)])


def check_against_eager(program, seed):
    f = program.trace()
    xs = program.example_inputs(seed)
    got = interpret(f, xs)
    want = program(*[gradc.tensor(x) for x in xs])
    assert len(got) == len(want)
    for g, w in zip(got, want):
        w = w.numpy()
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_array_equal(g, w)   # the same NumPy code ran: bitwise equal (NaNs equal)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_interpreter_equals_eager_on_random_programs(data):
    program = generate_program(lambda lo, hi: data.draw(st.integers(lo, hi)))
    check_against_eager(program, data.draw(st.integers(0, 2**16)))


def test_interpreter_equals_eager_on_many_seeded_programs():
    for seed in range(300):
        check_against_eager(generate_program(random.Random(seed).randint), seed)
