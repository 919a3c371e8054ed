"""Every kernel the GPU backend emits for the benchmark workloads W1-W5, forward and backward
(partitioned and precomputed pipelines), is assembled by ptxas for sm_80 and sm_90."""
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

import gradc
from gradc import stages
from gradc.codegen import ptx
from gradc.ir.tracer import ArgSpec

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "bench"))
import workloads  # noqa: E402

PTXAS = shutil.which("ptxas")
needs_ptxas = pytest.mark.skipif(PTXAS is None, reason="ptxas (CUDA toolkit) is not on PATH; "
                                                       "the PTX is emitted but cannot be assembled here")


def _specs(name):
    make_inputs, loss_fn, _, _ = workloads.WORKLOADS[name]
    inputs, wrt = make_inputs(np.random.default_rng(0))
    specs = [ArgSpec(k, np.shape(v), gradc.float32 if np.asarray(v).dtype.kind == "f" else gradc.int64, k in wrt)
             for k, v in inputs.items()]
    return loss_fn, specs


def _kernels(name):
    loss_fn, specs = _specs(name)
    st = stages.build(loss_fn, specs, backward="separate")
    kernels = [k.kernel for k in st.kernels() if k.kernel is not None]
    auto = stages.build(loss_fn, specs)          # scalar losses: the precomputed function's kernels
    if auto.kernel_source() == "precomputed":
        kernels += [k.kernel for k in auto.kernels() if k.kernel is not None]
    return kernels


@needs_ptxas
@pytest.mark.parametrize("sm", ["sm_80", "sm_90"])
@pytest.mark.parametrize("name", sorted(workloads.WORKLOADS))
def test_workload_kernels_assemble(name, sm, tmp_path):
    kernels = _kernels(name)
    assert kernels, f"{name}: no kernels were lowered"
    for i, k in enumerate(kernels):
        path = tmp_path / f"k{i}.ptx"
        path.write_text(ptx.emit_ptx(k, sm=sm))
        res = subprocess.run([PTXAS, f"-arch={sm}", str(path), "-o", str(tmp_path / f"k{i}.cubin")],
                             capture_output=True, text=True)
        assert res.returncode == 0, f"ptxas -arch={sm} rejected kernel {k.name} of {name}:\n{res.stderr}"


@pytest.mark.parametrize("name", sorted(workloads.WORKLOADS))
def test_workload_kernels_emit_ptx_entry_points(name):
    for k in _kernels(name):
        text = ptx.emit_ptx(k, sm="sm_80")
        assert ".visible .entry" in text and ".target sm_80" in text
