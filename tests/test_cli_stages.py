"""gradc.stages (behind `gradc dump-ir`) runs what @gradc.compile runs: same IR at every stage."""
import re

import numpy as np
import pytest

import gradc
from gradc import stages
from gradc.ir.core import Module
from gradc.ir.printer import print_function, print_module
from gradc.ir.tracer import ArgSpec
from gradc.nn import functional as F


def seed003(inp, w1, w2, w3):
    l1 = inp * w1
    l2 = l1 + w2
    l3 = l1 * w3
    return (l2 * l3).mean()


def mlp(x, w1, b1, w2, b2):
    return F.linear(F.relu(F.linear(x, w1, b1)), w2, b2).tanh().sum()


CASES = {
    "seed003": (seed003, [((2, 2), True), ((), True), ((), True), ((), True)]),
    "mlp": (mlp, [((8, 4), False), ((16, 4), True), ((16,), True), ((3, 16), True), ((3,), False)]),
    "mlp-no-grad": (mlp, [((8, 4), False), ((16, 4), False), ((16,), False), ((3, 16), False), ((3,), False)]),
}


def _body(text):
    """IR text without the location comment of the func.func lines (gradc.compile traces a wrapper)."""
    return re.sub(r"^(func\.func .*\{)   // \S+$", r"\1", text, flags=re.M)


@pytest.mark.parametrize("memory", ["min-memory", "save-all"])
@pytest.mark.parametrize("case", list(CASES))
def test_stages_match_gradc_compile(case, memory):
    fn, args = CASES[case]
    rng = np.random.default_rng(0)
    tensors = [gradc.tensor(rng.standard_normal(shape).astype(np.float32), requires_grad=g) for shape, g in args]
    specs = [ArgSpec(n, shape, gradc.float32, g) for n, (shape, g) in zip(fn.__code__.co_varnames, args)]
    cf = gradc.compile(fn, memory=memory, backward="separate")   # stages show the partitioned pipeline
    cf(*tensors)
    spec = cf.ir()
    st = stages.build(fn, specs, memory=memory, backward="separate")
    assert _body(st.text("traced")) == _body(print_function(spec.traced))
    if spec.wrt:
        assert st.wrt == spec.wrt
        assert _body(st.text("adjoint")) == _body(print_function(spec.joint))
        assert st.text("optimized") == print_module(spec.partition.module)
        part = st.partition()
        assert part.residual_types == spec.partition.residual_types
        assert part.saved_input_indices == spec.partition.saved_input_indices
    else:
        assert _body(st.text("optimized")) == _body(print_module(Module([spec.forward_only])))
    # the CPU backend compiled the same fused kernels (up to their names)
    ours = [str(k.kernel).split("(", 1)[1] for k in st.kernels() if k.kernel is not None and "fused" in k.name]
    theirs = [str(k).split("(", 1)[1] for k in spec.backend.kernels]
    assert ours == theirs


def test_parse_arg_round_trip():
    for text in ("x=f32[2,2]:grad", "w=f64[]", "idx=i64[3]", "mask=i1[4,1]"):
        assert stages.format_arg(stages.parse_arg(text)) == text
    assert stages.parse_arg(" x = f32[ 2, 3 ] : grad ").shape == (2, 3)
    for bad in ("x", "x=f32", "=f32[2]", "x=f32[2]:foo", "x=f32[-1]", "x=f32[a]"):
        with pytest.raises(stages.StageError):
            stages.parse_arg(bad)


def test_until_stops_early():
    specs = [ArgSpec("inp", (2, 2), gradc.float32, True)] + [ArgSpec(n, (), gradc.float32, True)
                                                             for n in ("w1", "w2", "w3")]
    st = stages.build(seed003, specs, until="adjoint")
    assert st.adjoint is not None and st.forward is None and st.optimized is None


def test_load_target_unwraps_compiled_functions(tmp_path):
    src = tmp_path / "compiled_fn.py"
    src.write_text("import gradc\n\n\n@gradc.compile(memory='save-all')\ndef f(x):\n    return (x * x).sum()\n")
    fn, memory, backward = stages.load_target(f"{src}:f")
    assert fn.__name__ == "f" and memory == "save-all" and backward == "auto"
    st = stages.from_cli(f"{src}:f", ["x=f32[3]:grad"])
    assert st.memory == "save-all" and "func.func @f_backward(" in st.text("optimized")
    assert stages.from_cli(f"{src}:f", ["x=f32[3]:grad"], memory="min-memory").memory == "min-memory"


def test_graph_of_a_forward_only_function():
    from gradc.graph import to_dot
    specs = [ArgSpec("x", (8, 4), gradc.float32), ArgSpec("w1", (16, 4), gradc.float32),
             ArgSpec("b1", (16,), gradc.float32), ArgSpec("w2", (3, 16), gradc.float32),
             ArgSpec("b2", (3,), gradc.float32)]
    dot = to_dot(stages.build(mlp, specs))
    assert "forward only" in dot and "cluster_backward" not in dot and "cylinder" not in dot
    assert "subgraph cluster_mlp_fused0 {" in dot


@pytest.mark.parametrize("case", ["seed003", "mlp"])
def test_kernel_stages_lower_what_a_default_compile_runs(case):
    """Scalar losses: @gradc.compile's default computes loss and gradients in one function
    (the precomputed stage), and the kernel stages lower that function's kernels."""
    fn, args = CASES[case]
    rng = np.random.default_rng(0)
    tensors = [gradc.tensor(rng.standard_normal(shape).astype(np.float32), requires_grad=g) for shape, g in args]
    specs = [ArgSpec(n, shape, gradc.float32, g) for n, (shape, g) in zip(fn.__code__.co_varnames, args)]
    cf = gradc.compile(fn)
    cf(*tensors)
    backend = next(iter(cf._cache.values())).backend
    st = stages.build(fn, specs)
    assert st.kernel_source() == "precomputed"
    ours = [str(k.kernel).split("(", 1)[1] for k in st.kernels() if k.kernel is not None and "fused" in k.name]
    assert ours == [str(k).split("(", 1)[1] for k in backend.kernels]
