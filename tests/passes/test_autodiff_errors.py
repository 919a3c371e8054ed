"""autodiff: bad wrt indices, integer arguments and fused input are clear errors; the joint
layout attributes describe the signature."""
import pytest

from gradc.ir import Module, parse_function, verify
from gradc.passes import PassManager
from gradc.passes.autodiff import NUM_COTANGENTS, NUM_OUTPUTS, WRT, AutodiffError, differentiate
from gradc.passes.fuse import fuse

F = """\
func.func @f(%x: tensor<3xf32> {gradc.requires_grad}, %i: tensor<3xi64>) -> (tensor<f32>, tensor<3xi64>) {
  %0 = gradc.cast %i {dtype = "float32"} : (tensor<3xi64>) -> tensor<3xf32>
  %1 = gradc.mul %x, %0 : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  %2 = gradc.exp %1 : (tensor<3xf32>) -> tensor<3xf32>
  %3 = gradc.sum %2 {dims = [0], keepdim = false} : (tensor<3xf32>) -> tensor<f32>
  func.return %3, %i : tensor<f32>, tensor<3xi64>
}
"""


@pytest.mark.parametrize("wrt", [[2], [-1], [0, 7]])
def test_wrt_out_of_range(wrt):
    bad = [i for i in wrt if not 0 <= i < 2][0]
    with pytest.raises(AutodiffError, match=rf"wrt index {bad} out of range for @f with 2 args"):
        differentiate(parse_function(F), wrt)


def test_integer_argument():
    with pytest.raises(AutodiffError, match=r"argument 1 of @f has type tensor<3xi64>; only floating point "
                                            r"arguments can be differentiated"):
        differentiate(parse_function(F), [0, 1])


def test_fused_input_is_rejected():
    f = parse_function(F)
    fuse(f)
    assert any(op.name == "gradc.fused" for op in f.ops)
    with pytest.raises(AutodiffError, match=r"cannot differentiate through 'gradc.fused' \(run autodiff before fuse\)"):
        differentiate(f, [0])


def test_errors_through_the_pass_manager_name_the_problem():
    for pipeline, message in [("autodiff{wrt=5}", "out of range"), ("autodiff{wrt=0,1}", "floating point"),
                              ("fuse,autodiff", "cannot differentiate through 'gradc.fused'")]:
        with pytest.raises(AutodiffError, match=message):
            PassManager.parse(pipeline).run(Module([parse_function(F)]))


def test_joint_layout_attributes():
    f = parse_function(F)
    j = differentiate(f)                       # default wrt: the requires_grad argument
    verify(j)
    assert j.name == "f_joint"
    assert (j.attrs[NUM_OUTPUTS], j.attrs[NUM_COTANGENTS], j.attrs[WRT]) == (2, 1, [0])
    # primals, then one cotangent for the one floating output
    assert [str(a.type) for a in j.args] == ["tensor<3xf32>", "tensor<3xi64>", "tensor<f32>"]
    assert [str(t) for t in j.result_types] == ["tensor<f32>", "tensor<3xi64>", "tensor<3xf32>"]
    assert all("gradc.requires_grad" not in a for a in j.arg_attrs)
    # the original is untouched
    assert f.arg_attrs[0] == {"gradc.requires_grad": True} and len(f.args) == 2


def test_no_requires_grad_gives_an_empty_wrt():
    f = parse_function(F.replace(" {gradc.requires_grad}", ""))
    j = differentiate(f)
    verify(j)
    assert j.attrs[WRT] == [] and len(j.outputs) == 2
