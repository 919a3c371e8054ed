"""The benchmark's hand-written NumPy baselines compute the same loss and gradients as gradc."""
import os
import sys

import numpy as np
import pytest

import gradc

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "bench"))
import workloads  # noqa: E402


@pytest.mark.parametrize("name", sorted(workloads.WORKLOADS))
def test_numpy_baseline_matches_gradc(name):
    make_inputs, loss_fn, numpy_fn, _ = workloads.WORKLOADS[name]
    inputs, wrt = make_inputs(np.random.default_rng(1))
    as64 = {k: (v.astype(np.float64) if v.dtype.kind == "f" else v) for k, v in inputs.items()}
    ts = {k: gradc.tensor(v, requires_grad=k in wrt) for k, v in as64.items()}
    loss = loss_fn(*ts.values())
    loss.backward()
    np_loss, np_grads = numpy_fn(*as64.values())
    assert abs(float(np_loss) - loss.item()) <= 1e-9 * abs(loss.item())
    for k, g in zip(wrt, np_grads):
        np.testing.assert_allclose(np.asarray(g), ts[k].grad.numpy(), rtol=1e-7, atol=1e-9)


def _precomputed(name):
    """The function @gradc.compile runs for workload ``name`` (loss and gradients in one)."""
    make, loss, _, _ = workloads.WORKLOADS[name]
    inputs, wrt = make(np.random.default_rng(0))
    f = gradc.compile(loss)
    f(*[gradc.tensor(v, requires_grad=k in wrt) for k, v in inputs.items()]).backward()
    return f.ir().precomputed


def test_softmax_xent_is_one_pass_over_the_logits():
    """W3's loss and gradient: one kernel over the [4096, 1024] logits (plus a 4096-element one)."""
    func = _precomputed("W3 softmax-xent")
    big = [op for op in func.body.ops if op.name == "gradc.fused"
           and any(tuple(v.type.shape) == (4096, 1024) for v in op.operands)]
    assert len(big) == 1
    assert not [op for op in func.body.ops if op.name == "gradc.constant"]   # splats folded into it


def test_layernorm_reads_x_in_one_kernel():
    """W4: one kernel reads x: its row statistics, the loss's row sums and dx, with the column
    sums (dgamma, dbeta) accumulated beside them; a small kernel sums the loss's row sums."""
    from gradc.codegen.lower_fused import lower_fused
    func = _precomputed("W4 layernorm")
    big = [op for op in func.body.ops if op.name == "gradc.fused"
           and any(tuple(v.type.shape) == (4096, 1024) for v in op.operands)]
    assert len(big) == 1
    kernel = lower_fused(big[0])
    assert kernel.reduce_axes == (1,) and len(kernel.accumulations) == 2
    assert sorted(tuple(p.shape) for p in kernel.outputs) == [(1024,), (1024,), (4096,), (4096, 1024)]
