"""gradc.backends against torch.backends on PyTorch's CPU-only build: the flags' defaults, their
type checks and messages, the flags() context managers, availability answers, and
cuda.matmul.allow_tf32 as the other spelling of the float32 matmul precision."""
import numpy as np
import pytest

import gradc
import gradc.backends as gb

torch = pytest.importorskip("torch")
import torch.backends.cuda  # noqa: E402
import torch.backends.cudnn  # noqa: E402
import torch.backends.mkldnn  # noqa: E402
import torch.backends.mps  # noqa: E402
import torch.backends.openmp  # noqa: E402

tb = torch.backends

FLAGS = [("cudnn", "enabled"), ("cudnn", "benchmark"), ("cudnn", "deterministic"), ("cudnn", "allow_tf32"),
         ("mkldnn", "enabled"), ("mkldnn", "deterministic")]


@pytest.fixture(autouse=True)
def _restore_flags():
    saved = {(m, f): (getattr(getattr(gb, m), f), getattr(getattr(tb, m), f)) for m, f in FLAGS}
    precision = (gradc.get_float32_matmul_precision(), torch.get_float32_matmul_precision())
    yield
    for (m, f), (g, t) in saved.items():
        setattr(getattr(gb, m), f, g)
        setattr(getattr(tb, m), f, t)
    gradc.set_float32_matmul_precision(precision[0])
    torch.set_float32_matmul_precision(precision[1])


@pytest.mark.parametrize("module,flag", FLAGS)
def test_flags_defaults_setting_and_type_errors(module, flag):
    g, t = getattr(gb, module), getattr(tb, module)
    assert getattr(g, flag) is getattr(t, flag)
    for value in (not getattr(t, flag), getattr(t, flag)):
        setattr(g, flag, value)
        setattr(t, flag, value)
        assert getattr(g, flag) is getattr(t, flag) is value
    for bad in (1, None, 0.5, np.bool_(True)):
        with pytest.raises(RuntimeError) as et:
            setattr(t, flag, bad)
        with pytest.raises(RuntimeError) as eg:
            setattr(g, flag, bad)
        assert str(eg.value) == str(et.value)
        assert getattr(g, flag) is getattr(t, flag)


@pytest.mark.filterwarnings("ignore:TF32 acceleration on top of oneDNN")  # torch.backends.mkldnn.flags() warns
def test_cudnn_flags_context_manager():
    gb.cudnn.benchmark = tb.cudnn.benchmark = True
    with gb.cudnn.flags(enabled=False), tb.cudnn.flags(enabled=False):
        inside = [(getattr(gb.cudnn, f), getattr(tb.cudnn, f)) for f in ("enabled", "benchmark", "deterministic",
                                                                         "allow_tf32")]
    assert all(g is t for g, t in inside) and inside[0] == (False, False) and inside[1] == (False, False)
    assert gb.cudnn.enabled is True and gb.cudnn.benchmark is True
    with gb.mkldnn.flags(enabled=False), tb.mkldnn.flags(enabled=False):
        assert gb.mkldnn.enabled is tb.mkldnn.enabled is False
    assert gb.mkldnn.enabled is tb.mkldnn.enabled is True


def test_availability_on_a_cpu_only_install():
    assert gb.cudnn.is_available() is tb.cudnn.is_available() is False
    assert gb.cudnn.version() is tb.cudnn.version() is None
    assert gb.cudnn.benchmark_limit is tb.cudnn.benchmark_limit is None
    assert gb.mps.is_available() is tb.mps.is_available() is False
    assert gb.mps.is_built() is tb.mps.is_built() is False
    assert gb.cuda.is_built() is tb.cuda.is_built() is False       # no PyCUDA, no simulator here
    assert gb.mkldnn.is_available() is False                       # PyTorch has oneDNN; gradc does not
    assert gb.openmp.is_available() is False                       # gradc's kernels use their own thread pool


def test_cuda_is_built_with_the_simulator(monkeypatch):
    monkeypatch.setenv("GRADC_CUDA_SIMULATOR", "1")
    assert gb.cuda.is_built() is True


def test_matmul_allow_tf32_is_the_float32_matmul_precision():
    assert gb.cuda.matmul.allow_tf32 is tb.cuda.matmul.allow_tf32 is False
    gb.cuda.matmul.allow_tf32 = True
    tb.cuda.matmul.allow_tf32 = True
    assert gradc.get_float32_matmul_precision() == torch.get_float32_matmul_precision() == "high"
    assert gb.cuda.matmul.allow_tf32 is True
    gb.cuda.matmul.allow_tf32 = False
    assert gradc.get_float32_matmul_precision() == "highest"
    for bad in (1, "x"):
        with pytest.raises(RuntimeError) as et:
            tb.cuda.matmul.allow_tf32 = bad
        with pytest.raises(RuntimeError) as eg:
            gb.cuda.matmul.allow_tf32 = bad
        assert str(eg.value) == str(et.value)


def test_matmul_reduction_switches_and_unknown_attributes():
    for name in ("allow_fp16_reduced_precision_reduction", "allow_bf16_reduced_precision_reduction"):
        assert getattr(gb.cuda.matmul, name) is getattr(tb.cuda.matmul, name) is True
        for bad in (1, [], [True, False, True], [1]):
            with pytest.raises(TypeError) as et:
                setattr(tb.cuda.matmul, name, bad)
            with pytest.raises(TypeError) as eg:
                setattr(gb.cuda.matmul, name, bad)
            assert str(eg.value) == str(et.value)
        setattr(gb.cuda.matmul, name, (False, True))
        assert getattr(gb.cuda.matmul, name) is False
        setattr(gb.cuda.matmul, name, True)
    for action in (lambda m: m.no_such_switch, lambda m: setattr(m, "no_such_switch", 1)):
        with pytest.raises(AttributeError) as et:
            action(tb.cuda.matmul)
        with pytest.raises(AttributeError) as eg:
            action(gb.cuda.matmul)
        assert str(eg.value) == str(et.value) == "Unknown attribute no_such_switch"


def test_import_gradc_as_torch_spelling():
    assert gradc.backends.cudnn is gb.cudnn
    import gradc.backends.cudnn as cudnn_module
    assert cudnn_module.enabled is True and cudnn_module.is_available() is False
