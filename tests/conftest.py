"""Every test starts from the same gradc random state, so a test's random tensors are the same
whichever tests ran before it (a failure reproduces when the test is run alone)."""
import os

import pytest

import gradc
from gradc.codegen import cuda_driver


@pytest.fixture(autouse=True)
def _seeded_gradc_rng():
    gradc.manual_seed(0)
    yield


@pytest.fixture
def compiled_vs_eager():
    """``check(f, *arrays, dtype=float64, rtol=None)``: f's scalar loss and the gradient of each
    input (a leaf made from each array) are the same eagerly and under @gradc.compile, to ``rtol``
    (default 1e-4 in float32, 1e-9 in float64). Returns the CompiledFunction, for more checks."""
    import numpy as np

    def check(f, *arrays, dtype=gradc.float64, rtol=None):
        tol = rtol if rtol is not None else (1e-4 if dtype is gradc.float32 else 1e-9)
        eager, comp = ([gradc.tensor(a, dtype=dtype, requires_grad=True) for a in arrays] for _ in range(2))
        compiled = gradc.compile(f)
        le, lc = f(*eager), compiled(*comp)
        le.backward()
        lc.backward()
        np.testing.assert_allclose(lc.item(), le.item(), rtol=tol)
        for e, c in zip(eager, comp):
            np.testing.assert_allclose(c.grad.numpy(), e.grad.numpy(), rtol=tol, atol=tol)
        return compiled
    return check


@pytest.fixture
def cuda(monkeypatch):
    """gradc's CUDA device: the simulator unless GRADC_TEST_REAL_GPU=1 asks for the real one."""
    if os.environ.get("GRADC_TEST_REAL_GPU") != "1":
        monkeypatch.setenv("GRADC_CUDA_SIMULATOR", "1")
    monkeypatch.setattr(cuda_driver, "_driver", None)
    if not gradc.cuda.is_available():
        pytest.skip(f"no CUDA device: {gradc.cuda.unavailable_reason()}")
    yield "cuda"
    monkeypatch.setattr(cuda_driver, "_driver", None)
