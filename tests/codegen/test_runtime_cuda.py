"""GPU execution through the CUDA driver: PyCUDA on a real GPU (skips cleanly without one), and
the same launches through the CPU simulator driver."""
import numpy as np
import pytest

from gradc.codegen import cuda_driver, kernel_eval

from .helpers import TOL, buffers
from .programs import programs

PROGRAMS = programs()
SIM = ["chain_f32", "bcast_tr_f32", "softmax_f32_16", "layernorm_f64", "linear_relu_f32", "red_mean_f32_40x5x3_02",
       "layernorm_grad_f32"]


def test_clear_error_without_pycuda(monkeypatch):
    import builtins
    real_import = builtins.__import__

    def fake_import(name, *a, **kw):
        if name.startswith("pycuda"):
            raise ImportError("No module named 'pycuda'")
        return real_import(name, *a, **kw)
    monkeypatch.setattr(builtins, "__import__", fake_import)
    with pytest.raises(cuda_driver.CudaUnavailable, match=r"PyCUDA is not installed \(pip install 'gradc\[cuda\]'\)"):
        cuda_driver.PyCudaDriver()


def _check(drv, name):
    k = PROGRAMS[name]
    rng = np.random.default_rng(0)
    arrs = buffers(k, rng, low=0.5 if "prod" in name else -2.0, high=1.5)
    dev = [drv.to_device(a) for a in arrs]
    drv.compile(k)(*dev)
    drv.synchronize()
    ref = [a.copy() for a in arrs]
    kernel_eval.evaluate(k, ref)
    for i, p in enumerate(k.params):
        if p.role == "output":
            np.testing.assert_allclose(dev[i].get(), ref[i], equal_nan=True, **TOL[p.dtype])


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_program_on_gpu(name):
    try:
        drv = cuda_driver.PyCudaDriver()
    except cuda_driver.CudaUnavailable as e:
        pytest.skip(f"no GPU execution here: {e}")
    _check(drv, name)


@pytest.mark.parametrize("name", SIM)
def test_program_through_the_simulator_driver(name):
    _check(cuda_driver.SimulatorDriver(), name)


def test_device_arrays_copy_and_reshape():
    drv = cuda_driver.SimulatorDriver()
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    d = drv.to_device(a)
    r = d.reshape((3, 2))
    assert r.buffer is d.buffer and r.shape == (3, 2) and d.nbytes == 24
    e = drv.empty((3, 2), np.float32)
    drv.copy(e, r)
    np.testing.assert_array_equal(e.get(), a.reshape(3, 2))
    with pytest.raises(ValueError, match="cannot reshape"):
        d.reshape((4,))
