"""GPU execution: runs on a CUDA device through PyCUDA; skips cleanly (with the reason) otherwise."""
import numpy as np
import pytest

from gradc.codegen import kernel_eval, runtime_cuda

from .helpers import TOL, buffers
from .programs import programs

PROGRAMS = programs()


def test_clear_error_without_pycuda(monkeypatch):
    import builtins
    real_import = builtins.__import__

    def fake_import(name, *a, **kw):
        if name.startswith("pycuda"):
            raise ImportError("No module named 'pycuda'")
        return real_import(name, *a, **kw)
    monkeypatch.setattr(builtins, "__import__", fake_import)
    with pytest.raises(runtime_cuda.CudaUnavailable, match="needs PyCUDA"):
        runtime_cuda.CudaRuntime()
    assert runtime_cuda.available() is False


def _gpu_or_skip():
    try:
        return runtime_cuda.runtime()
    except runtime_cuda.CudaUnavailable as e:
        pytest.skip(f"no GPU execution here: {e}")


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_program_on_gpu(name):
    rt = _gpu_or_skip()
    k = PROGRAMS[name]
    rng = np.random.default_rng(0)
    arrs = buffers(k, rng, low=0.5 if "prod" in name else -2.0, high=1.5)
    got = [a.copy() for a in arrs]
    rt.compile(k)(*got)
    ref = [a.copy() for a in arrs]
    kernel_eval.evaluate(k, ref)
    for i, p in enumerate(k.params):
        if p.role == "output":
            np.testing.assert_allclose(got[i], ref[i], equal_nan=True, **TOL[p.dtype])
