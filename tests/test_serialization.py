"""gradc.save / gradc.load (``gradc/serialization.py``): round trips of tensors, models and
optimizers, shared tensors, file objects, the weights_only refusal and clear errors."""
from __future__ import annotations

import io
import pickle

import numpy as np
import pytest

import gradc


def _round_trip(obj, **load_kwargs):
    buffer = io.BytesIO()
    gradc.save(obj, buffer)
    buffer.seek(0)
    return gradc.load(buffer, **load_kwargs)


@pytest.mark.parametrize("dtype", [gradc.float32, gradc.float64, gradc.int64, gradc.bool, gradc.float16, gradc.int8])
def test_tensors_keep_values_dtype_and_shape(dtype):
    x = (gradc.arange(12).reshape(3, 4) % 5).to(dtype)
    y = _round_trip(x)
    assert y.dtype is dtype and tuple(y.shape) == (3, 4)
    np.testing.assert_array_equal(y.numpy(), x.numpy())


def test_requires_grad_parameters_and_identity_survive(tmp_path):
    x = gradc.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2                                        # a non-leaf loads as a leaf that requires grad
    p = gradc.nn.Parameter(gradc.ones(2))
    path = tmp_path / "ckpt.gradc"
    gradc.save({"x": x, "again": x, "y": y, "p": p, "t": gradc.tensor([1, 2]).t()}, path)
    d = gradc.load(str(path))
    assert d["x"] is d["again"] and d["x"].requires_grad and d["x"].is_leaf
    assert d["y"].requires_grad and d["y"].is_leaf and d["y"].tolist() == [2.0, 4.0]
    assert isinstance(d["p"], gradc.nn.Parameter) and d["p"].requires_grad
    assert not d["t"].requires_grad


def test_model_and_optimizer_state_dicts_restore_training():
    gradc.manual_seed(0)

    def make():
        model = gradc.nn.Sequential(gradc.nn.Linear(3, 4), gradc.nn.Tanh(), gradc.nn.Linear(4, 1))
        return model, gradc.optim.Adam(model.parameters(), lr=0.05)

    x = gradc.randn(8, 3)
    model, opt = make()
    for _ in range(2):
        opt.zero_grad()
        model(x).pow(2).mean().backward()
        opt.step()
    state = _round_trip({"model": model.state_dict(), "opt": opt.state_dict()})
    model2, opt2 = make()
    model2.load_state_dict(state["model"])
    opt2.load_state_dict(state["opt"])
    for m, o in ((model, opt), (model2, opt2)):      # one more step each: the same result
        o.zero_grad()
        m(x).pow(2).mean().backward()
        o.step()
    for a, b in zip(model.parameters(), model2.parameters()):
        np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())


class Config:
    def __init__(self, depth):
        self.depth = depth


def test_weights_only_refuses_other_classes_by_name():
    buffer = io.BytesIO()
    gradc.save({"w": gradc.ones(2), "cfg": Config(3)}, buffer)
    buffer.seek(0)
    with pytest.raises(pickle.UnpicklingError, match="Weights only load failed: the file names test_serialization.Config"):
        gradc.load(buffer)
    buffer.seek(0)
    assert gradc.load(buffer, weights_only=False)["cfg"].depth == 3


def test_clear_errors():
    with pytest.raises(FileNotFoundError):
        gradc.load("/nonexistent/ckpt.gradc")
    with pytest.raises(RuntimeError, match="map_location='cuda:1' is not supported"):
        _round_trip(gradc.ones(2), map_location="cuda:1")
    assert _round_trip(gradc.ones(2), map_location="cpu").tolist() == [1.0, 1.0]
    with pytest.raises(RuntimeError, match="zip file"):
        gradc.load(io.BytesIO(b"PK\x03\x04rest"))
    with pytest.raises(RuntimeError, match="not a file written by gradc.save"):
        gradc.load(io.BytesIO(pickle.dumps([1, 2])))


def test_pytorch_cannot_be_confused_with_gradc_files(tmp_path):
    torch = pytest.importorskip("torch")
    path = tmp_path / "t.pt"
    torch.save({"w": torch.ones(2)}, path)
    with pytest.raises(RuntimeError, match="PyTorch's torch.save format"):
        gradc.load(path)
