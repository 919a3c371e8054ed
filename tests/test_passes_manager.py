"""The pass registry, pipelines, PassManager instrumentation, and the cse/dce passes."""
import io
import random

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gradc.ir import Builder, Function, Module, TensorType, VerifyError, interpret, parse_function, verify
from gradc.ir.testing import generate_program
from gradc.passes import Pass, PassError, PassManager, get_pass, parse_pipeline, register_pass, registered_passes
from gradc.passes import manager
from gradc.passes.cse import CSE
from gradc.passes.dce import DCE

T = TensorType((3,), "float32")

DUPLICATES = """\
func.func @f(%x: tensor<3xf32>) -> tensor<3xf32> {
  %0 = gradc.exp %x : (tensor<3xf32>) -> tensor<3xf32>
  %1 = gradc.exp %x : (tensor<3xf32>) -> tensor<3xf32>
  %2 = gradc.neg %1 : (tensor<3xf32>) -> tensor<3xf32>
  %3 = gradc.mul %0, %1 : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  func.return %3 : tensor<3xf32>
}
"""


@pytest.fixture
def scratch_passes():
    """Register test-only passes and remove them afterwards."""
    added = []

    def add(cls):
        register_pass(cls)
        added.append(cls.name)
        return cls
    yield add
    for name in added:
        manager._REGISTRY.pop(name, None)


def test_builtin_passes_are_registered():
    passes = registered_passes()
    assert passes["cse"] is CSE and passes["dce"] is DCE
    assert list(passes) == sorted(passes)
    assert get_pass("cse") is CSE


def test_unknown_pass_lists_known_ones():
    with pytest.raises(PassError, match=r"unknown pass 'frobnicate'; known passes: .*cse.*dce"):
        PassManager.parse("cse,frobnicate")


def test_pipeline_text_and_options(scratch_passes):
    @scratch_passes
    class Opts(Pass):
        name = "test-options"

        def __init__(self, wrt=(), max_size=0, mode="fast", exact=False, ratio=1.0):
            self.wrt, self.max_size, self.mode, self.exact, self.ratio = wrt, max_size, mode, exact, ratio

        def run(self, func):
            return False

    pm = PassManager.parse(" cse , test-options{wrt=0,1 max-size=3 mode=slow exact=true ratio=0.5}, dce ")
    assert pm.pipeline == "cse,test-options,dce"
    p = pm.passes[1]
    assert (p.wrt, p.max_size, p.mode, p.exact, p.ratio) == ([0, 1], 3, "slow", True, 0.5)
    assert parse_pipeline("test-options{wrt=2}")[0].wrt == 2
    assert parse_pipeline("") == []
    with pytest.raises(PassError, match="bad options for pass 'test-options'"):
        parse_pipeline("test-options{nope=1}")
    with pytest.raises(PassError, match="expected key=value"):
        parse_pipeline("test-options{wrt}")
    with pytest.raises(PassError, match="unbalanced"):
        parse_pipeline("test-options{wrt=1")
    with pytest.raises(PassError, match="bad options for pass 'cse'"):
        parse_pipeline("cse{x=1}")
    with pytest.raises(PassError, match=r"unknown option nope \(options: wrt, max-size, mode, exact, ratio\)"):
        parse_pipeline("test-options{nope=1}")
    for text in ("cse,,dce", "cse,", ",cse", " , "):
        with pytest.raises(PassError, match="empty pass name in pass pipeline"):
            parse_pipeline(text)


def test_register_pass_validates_names(scratch_passes):
    with pytest.raises(ValueError, match="kebab-case"):
        @register_pass
        class Bad(Pass):
            name = "Bad_Name"

    @scratch_passes
    class Once(Pass):
        name = "test-once"

    with pytest.raises(ValueError, match="registered twice"):
        @register_pass
        class Other(Pass):
            name = "test-once"


def test_run_applies_each_pass_to_each_function():
    m = Module([parse_function(DUPLICATES), parse_function(DUPLICATES.replace("@f", "@g"))])
    pm = PassManager.parse("cse,dce")
    assert pm.run(m) is True
    for f in m.functions:
        assert [op.name for op in f.ops] == ["gradc.exp", "gradc.mul", "func.return"]
    assert [name for name, _ in pm.timings] == ["cse", "dce"]
    assert pm.run(m) is False
    f = parse_function(DUPLICATES)
    assert PassManager([CSE(), DCE]).run(f) is True      # a Function works too; classes are instantiated
    assert len(f.ops) == 3


def test_print_ir_after_all_and_after_change():
    out = io.StringIO()
    PassManager.parse("cse,cse,dce", print_ir_after_all=True, stream=out).run(parse_function(DUPLICATES))
    text = out.getvalue()
    assert text.count("// -----// IR Dump After cse //----- //\nfunc.func @f") == 2
    assert text.count("// -----// IR Dump After dce //----- //\nfunc.func @f") == 1
    out = io.StringIO()
    PassManager.parse("cse,cse,dce", print_ir_after_change=True, stream=out).run(parse_function(DUPLICATES))
    text = out.getvalue()
    assert text.count("IR Dump After cse") == 1 and text.count("IR Dump After dce") == 1
    assert text.index("IR Dump After cse") < text.index("IR Dump After dce")


def test_verify_each_names_the_breaking_pass(scratch_passes):
    @scratch_passes
    class Breaker(Pass):
        name = "test-break-types"

        def run(self, func):
            func.ops[0].results[0].type = TensorType((7,), "float32")
            return True

    f = parse_function(DUPLICATES)
    PassManager.parse("test-break-types").run(f)   # without verify_each nothing notices
    with pytest.raises(VerifyError, match="after pass 'test-break-types': 'gradc.exp' op result #0"):
        PassManager.parse("cse,test-break-types", verify_each=True).run(parse_function(DUPLICATES))


def test_module_passes_can_add_functions(scratch_passes):
    @scratch_passes
    class Dup(Pass):
        name = "test-duplicate"

        def run_on_module(self, module):
            g = module.functions[0].clone()
            g.name += "_copy"
            module.add(g)
            return True

    m = Module([parse_function(DUPLICATES)])
    PassManager.parse("test-duplicate,cse", verify_each=True).run(m)
    assert [f.name for f in m.functions] == ["f", "f_copy"]


def test_timing_report():
    pm = PassManager.parse("cse,dce")
    pm.run(parse_function(DUPLICATES))
    report = pm.timing_report()
    assert "Pass execution timing report" in report
    assert [ln.split()[-1] for ln in report.splitlines()[-3:]] == ["cse", "dce", "Total"]


# ---- cse and dce -------------------------------------------------------------------------------
def test_cse_respects_attrs_types_and_purity():
    f = Function("f", [T], ["x"])
    b = Builder(f.body)
    a1 = b.op("clamp", f.args[0], min=0.0, max=None)
    a2 = b.op("clamp", f.args[0], min=0.0, max=None)
    a3 = b.op("clamp", f.args[0], min=0, max=None)       # 0 is not 0.0
    c1 = b.op("constant", value=float("nan"), shape=[], dtype="float32")
    c2 = b.op("constant", value=float("nan"), shape=[], dtype="float32")
    f.set_outputs([a1, a2, a3, c1, c2])
    assert CSE().run(f)
    assert f.outputs == [a1, a1, a3, c1, c1]
    verify(f)
    assert not CSE().run(f)


def test_dce_iterates_to_a_fixpoint():
    f = Function("f", [T], ["x"])
    b = Builder(f.body)
    v = f.args[0]
    for _ in range(5):
        v = b.op("exp", v)
    f.set_outputs([f.args[0]])
    assert DCE().run(f)
    assert [op.name for op in f.ops] == ["func.return"]
    assert not DCE().run(f)


def check_passes_preserve_semantics(program, pipeline):
    f = program.trace()
    xs = program.example_inputs(1)
    want = interpret(f, xs)
    PassManager.parse(pipeline, verify_each=True).run(f)
    verify(f)
    for g, w in zip(interpret(f, xs), want):
        np.testing.assert_array_equal(g, w)
    return f


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_cse_dce_preserve_semantics_on_random_programs(data):
    program = generate_program(lambda lo, hi: data.draw(st.integers(lo, hi)))
    f = check_passes_preserve_semantics(program, "cse,dce")
    # idempotent: a second run changes nothing
    assert not PassManager.parse("cse,dce").run(f)


def test_cse_dce_on_many_seeded_programs():
    for seed in range(200):
        check_passes_preserve_semantics(generate_program(random.Random(seed).randint), "dce,cse,dce")
