"""gradc.save / gradc.load (``gradc/serialization.py``): round trips of tensors, models and
optimizers, storages shared by views, file objects, map_location, the weights_only refusal,
files of the first format, and errors, against PyTorch's torch.save / torch.load."""
from __future__ import annotations

import collections
import io
import pathlib
import pickle
import zipfile

import numpy as np
import pytest

import gradc

DATA = pathlib.Path(__file__).resolve().parent / "data"


def _round_trip(obj, zip_format=True, **load_kwargs):
    """``obj`` saved by gradc (PyTorch's zip format, or gradc's own) and loaded by gradc."""
    buffer = io.BytesIO()
    gradc.save(obj, buffer, _use_new_zipfile_serialization=zip_format)
    buffer.seek(0)
    return gradc.load(buffer, **load_kwargs)


FORMATS = pytest.mark.parametrize("zip_format", [True, False], ids=["zip", "gradc"])


@FORMATS
@pytest.mark.parametrize("dtype", [gradc.float32, gradc.float64, gradc.int64, gradc.int32, gradc.int16, gradc.bool,
                                   gradc.float16, gradc.int8, gradc.uint8])
def test_tensors_keep_values_dtype_and_shape(dtype, zip_format):
    x = (gradc.arange(12).reshape(3, 4) % 5).to(dtype)
    y = _round_trip(x, zip_format)
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


def _torch_round_trip(torch, obj, **load_kwargs):
    buffer = io.BytesIO()
    torch.save(obj, buffer)
    buffer.seek(0)
    return torch.load(buffer, **load_kwargs)


def _views(lib):
    """The same tensors and views of them, made by gradc or by torch."""
    x = lib.arange(12.0).reshape(3, 4)
    return {"x": x, "row": x[1], "cols": x[:, 1:], "t": x.t(), "flat_tail": x.view(-1)[5:],
            "wide": lib.ones(3).expand(2, 3), "step": lib.arange(10)[2:8:2], "alone": lib.arange(10)[3:5]}


@FORMATS
def test_views_share_storage_after_load_as_in_pytorch(zip_format):
    torch = pytest.importorskip("torch")
    mine, theirs = _round_trip(_views(gradc), zip_format), _torch_round_trip(torch, _views(torch))
    for k in theirs:
        assert mine[k].tolist() == theirs[k].tolist(), k
        assert mine[k].stride() == theirs[k].stride(), k
        assert mine[k].storage_offset() == theirs[k].storage_offset(), k
        assert mine[k]._base is None and theirs[k]._base is None
    for d in (mine, theirs):                          # a write through one view shows through the others
        d["cols"][0, 0] = 100.0
        d["flat_tail"].mul_(-1)
        d["row"].add_(0.5)
    for k in theirs:
        assert mine[k].tolist() == theirs[k].tolist(), k
    # views taken after the load count from the loaded storage too
    assert mine["row"][2:].storage_offset() == theirs["row"][2:].storage_offset() == 6
    # an expanded tensor still refuses in-place writes (several elements at one address)
    with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
        mine["wide"].add_(1)


@FORMATS
def test_views_on_one_storage_share_a_version_counter_and_base_bytes_are_saved_once(zip_format):
    x = gradc.zeros(1000)
    views = [x[i:i + 10] for i in range(0, 1000, 10)]
    buffer = io.BytesIO()
    gradc.save(views, buffer, _use_new_zipfile_serialization=zip_format)
    assert len(buffer.getvalue()) < 4000 + 8000           # the storage once (4000 bytes), not 100 copies
    buffer.seek(0)
    loaded = gradc.load(buffer)
    loaded[3].add_(1)
    assert loaded[0]._version == loaded[3]._version == 1
    assert [v.storage_offset() for v in loaded[:3]] == [0, 10, 20]
    # a tensor saved twice, and a view of it, load as the same object and a view of it
    y = gradc.ones(4)
    a, b, c = _round_trip([y, y, y[2:]], zip_format)
    assert a is b and c.storage_offset() == 2
    c.fill_(7.0)
    assert a.tolist() == [1.0, 1.0, 7.0, 7.0]


def test_unrelated_tensors_do_not_share_and_empty_tensors_load():
    d = _round_trip({"a": gradc.ones(2), "b": gradc.ones(2), "e": gradc.zeros(0, 3), "s": gradc.tensor(2.5)})
    d["a"].add_(1)
    assert d["b"].tolist() == [1.0, 1.0]
    assert tuple(d["e"].shape) == (0, 3) and d["s"].item() == 2.5 and d["s"].ndim == 0


def test_autograd_state_is_saved_as_pytorch_saves_it():
    torch = pytest.importorskip("torch")

    def make(lib):
        a = lib.tensor([1.0, 2.0], requires_grad=True)
        a.grad = lib.tensor([5.0, 5.0])
        p = lib.nn.Parameter(lib.ones(2))
        p.grad = lib.ones(2)
        return {"a": a, "nonleaf": a * 3, "p": p, "frozen": lib.nn.Parameter(lib.ones(1), requires_grad=False),
                "plain": lib.zeros(2)}

    mine, theirs = _round_trip(make(gradc)), _torch_round_trip(torch, make(torch))
    for k in theirs:
        m, t = mine[k], theirs[k]
        assert (m.requires_grad, m.is_leaf, m.grad_fn, m.grad) == (t.requires_grad, t.is_leaf, t.grad_fn, t.grad), k
        assert isinstance(m, gradc.nn.Parameter) == isinstance(t, torch.nn.Parameter), k
        assert m.tolist() == t.tolist(), k
    mine["nonleaf"].sum().backward()                   # a loaded leaf that requires grad gets a gradient
    assert mine["nonleaf"].grad.tolist() == [1.0, 1.0]


def test_module_state_dict_round_trips_through_a_file(tmp_path):
    gradc.manual_seed(1)
    model = gradc.nn.Sequential(gradc.nn.Linear(3, 2), gradc.nn.BatchNorm1d(2))
    model(gradc.randn(4, 3))                           # running stats change
    path = tmp_path / "model.gradc"
    gradc.save(model.state_dict(), path)
    state = gradc.load(path)
    assert isinstance(state, collections.OrderedDict) and list(state) == list(model.state_dict())
    for k, v in model.state_dict().items():
        assert state[k].dtype is v.dtype and state[k].tolist() == v.tolist(), k
    fresh = gradc.nn.Sequential(gradc.nn.Linear(3, 2), gradc.nn.BatchNorm1d(2))
    fresh.load_state_dict(state)
    fresh.eval(), model.eval()
    x = gradc.randn(5, 3)
    np.testing.assert_array_equal(fresh(x).detach().numpy(), model(x).detach().numpy())


class Config:
    def __init__(self, depth):
        self.depth = depth


def test_weights_only_refuses_other_classes_with_pytorchs_message():
    torch = pytest.importorskip("torch")
    buffer = io.BytesIO()
    gradc.save({"w": gradc.ones(2), "cfg": Config(3)}, buffer)
    buffer.seek(0)
    with pytest.raises(pickle.UnpicklingError) as mine:
        gradc.load(buffer)
    tbuffer = io.BytesIO()
    torch.save({"w": torch.ones(2), "cfg": Config(3)}, tbuffer)
    tbuffer.seek(0)
    with pytest.raises(pickle.UnpicklingError) as theirs:
        torch.load(tbuffer)
    assert type(mine.value) is type(theirs.value) is pickle.UnpicklingError
    m, t = str(mine.value), str(theirs.value)
    assert m.startswith("Weights only load failed.")
    assert m.splitlines()[0] == t.splitlines()[0]
    refusal = "WeightsUnpickler error: Unsupported global: GLOBAL test_serialization.Config was not an allowed global"
    assert refusal in m and refusal in t
    buffer.seek(0)
    assert gradc.load(buffer, weights_only=False)["cfg"].depth == 3
    # a builtin is named without its module, as PyTorch names it
    with pytest.raises(pickle.UnpicklingError, match="Unsupported global: GLOBAL slice was not"):
        _round_trip(slice(1, 2))
    with pytest.raises(pickle.UnpicklingError, match="Unsupported global: GLOBAL slice was not"):
        _torch_round_trip(torch, slice(1, 2))


def test_safe_globals_allow_a_class():
    buffer = io.BytesIO()
    gradc.save(Config(4), buffer)
    with gradc.serialization.safe_globals([Config]):
        buffer.seek(0)
        assert gradc.load(buffer).depth == 4
    buffer.seek(0)
    with pytest.raises(pickle.UnpicklingError, match="Weights only load failed"):
        gradc.load(buffer)
    gradc.serialization.add_safe_globals([Config])
    try:
        assert Config in gradc.serialization.get_safe_globals()
        buffer.seek(0)
        assert gradc.load(buffer).depth == 4
    finally:
        gradc.serialization.clear_safe_globals()


def _plain(lib):
    return {"size": lib.Size([2, 3]), "device": lib.device("cpu"), "dtypes": [lib.float16, lib.int8, lib.bool],
            "set": {1, 2}, "od": collections.OrderedDict(a=1), "counter": collections.Counter("aab"),
            "complex": 1 + 2j, "bytes": b"\x00\xff", "bytearray": bytearray(b"ab"), "tuple": (None, True, 1.5, "s"),
            "nested": [{"t": lib.ones(1, dtype=lib.float64)}]}


def test_weights_only_reads_what_pytorch_reads():
    torch = pytest.importorskip("torch")
    mine, theirs = _round_trip(_plain(gradc)), _torch_round_trip(torch, _plain(torch))
    assert set(mine) == set(theirs)
    assert isinstance(mine["size"], gradc.Size) and mine["size"] == (2, 3) and repr(mine["size"]) == repr(theirs["size"])
    assert mine["device"] == gradc.device("cpu") and hash(mine["device"]) == hash(gradc.device("cpu"))
    assert mine["dtypes"] == [gradc.float16, gradc.int8, gradc.bool]
    assert [repr(d) for d in mine["dtypes"]] == [repr(d) for d in theirs["dtypes"]]
    for k in ("set", "od", "counter", "complex", "bytes", "bytearray", "tuple"):
        assert mine[k] == theirs[k] and type(mine[k]) is type(theirs[k]), k
    assert mine["nested"][0]["t"].dtype is gradc.float64


def test_map_location_forms():
    x = gradc.arange(4.0)
    for where in (None, "cpu", gradc.device("cpu"), {"cuda:0": "cpu"}, lambda storage, location: storage,
                  lambda storage, location: None):
        y = _round_trip([x, x[1:]], map_location=where)
        assert y[0].device == gradc.device("cpu") and y[0].tolist() == [0.0, 1.0, 2.0, 3.0]
        y[1].fill_(9.0)
        assert y[0].tolist() == [0.0, 9.0, 9.0, 9.0]
    seen = []
    _round_trip(x, map_location=lambda storage, location: seen.append((storage.dtype, storage.numel(), location)))
    assert seen == [(gradc.uint8, 16, "cpu")]          # PyTorch's callable gets (storage, location) too
    with pytest.raises(TypeError, match="map_location"):
        _round_trip(x, map_location=3)


def test_cuda_tensors_load_on_cuda_or_where_map_location_says(cuda, monkeypatch):
    x = gradc.arange(6.0, device=cuda).reshape(2, 3)
    buffer = io.BytesIO()
    gradc.save({"x": x, "row": x[1], "t": x.t()}, buffer)
    for where, dev in ((None, "cuda:0"), ("cpu", "cpu"), ({"cuda:0": "cpu"}, "cpu"), (gradc.device("cuda"), "cuda:0"),
                       (lambda storage, location: storage.cuda(), "cuda:0")):
        buffer.seek(0)
        d = gradc.load(buffer, map_location=where)
        assert {str(v.device) for v in d.values()} == {dev}
        assert d["t"].tolist() == [[0.0, 3.0], [1.0, 4.0], [2.0, 5.0]]
        d["row"].add_(10.0)                          # a contiguous view shares the storage on either device
        assert d["x"].tolist() == [[0.0, 1.0, 2.0], [13.0, 14.0, 15.0]]
    monkeypatch.setattr(gradc.cuda, "is_available", lambda: False)
    buffer.seek(0)
    with pytest.raises(RuntimeError) as e:
        gradc.load(buffer)
    assert str(e.value) == (
        "Attempting to deserialize object on a CUDA device but torch.cuda.is_available() is False. If you are "
        "running on a CPU-only machine, please use torch.load with map_location=torch.device('cpu') to map your "
        "storages to the CPU.")
    buffer.seek(0)
    assert gradc.load(buffer, map_location="cpu")["x"].device == gradc.device("cpu")


def test_loading_to_cuda_without_cuda_raises_pytorchs_error(monkeypatch):
    monkeypatch.setattr(gradc.cuda, "is_available", lambda: False)
    with pytest.raises(RuntimeError, match=r"^Attempting to deserialize object on a CUDA device"):
        _round_trip(gradc.ones(2), map_location="cuda")


def test_errors_match_pytorch(tmp_path):
    torch = pytest.importorskip("torch")
    target = tmp_path / "missing" / "ckpt.pt"
    with pytest.raises(RuntimeError) as mine:
        gradc.save(gradc.ones(2), target)
    with pytest.raises(RuntimeError) as theirs:
        torch.save(torch.ones(2), target)
    assert str(mine.value) == str(theirs.value) == f"Parent directory {target.parent} does not exist."
    with pytest.raises(RuntimeError, match="Parent directory missing does not exist."):
        gradc.save(gradc.ones(2), "missing/ckpt.pt")
    with pytest.raises(FileNotFoundError):
        gradc.load(tmp_path / "nonexistent.gradc")
    with pytest.raises(FileNotFoundError):
        torch.load(tmp_path / "nonexistent.pt")


def test_files_that_gradc_did_not_write_are_refused_clearly(tmp_path):
    for data in (b"hello world", pickle.dumps([1, 2]), b"", b"\x80\x04K\x01."):
        with pytest.raises(RuntimeError, match="not a file written by gradc.save"):
            gradc.load(io.BytesIO(data))
    buffer = io.BytesIO()
    gradc.save({"w": gradc.ones(100)}, buffer, _use_new_zipfile_serialization=False)
    with pytest.raises(RuntimeError, match="not a file written by gradc.save"):
        gradc.load(io.BytesIO(buffer.getvalue()[:200]))      # cut inside the storage bytes
    with pytest.raises(RuntimeError, match="not a file written by gradc.save"):
        gradc.load(io.BytesIO(buffer.getvalue()[:-5]))       # cut inside the object
    # PyTorch's zip format: a zip that is not whole fails as torch.load fails
    buffer = io.BytesIO()
    gradc.save({"w": gradc.ones(100)}, buffer)
    for data in (b"PK\x03\x04rest", buffer.getvalue()[:200], buffer.getvalue()[:-5]):
        with pytest.raises(RuntimeError, match="^PytorchStreamReader failed reading zip archive: failed finding "
                                               "central directory"):
            gradc.load(io.BytesIO(data))


def test_paths_and_file_objects(tmp_path):
    x = gradc.tensor([1.0, 2.0])
    gradc.save(x, str(tmp_path / "a.gradc"))
    gradc.save(x, tmp_path / "b.gradc")
    with open(tmp_path / "c.gradc", "wb") as f:
        gradc.save(x, f)
    for name in "abc":
        assert gradc.load(tmp_path / f"{name}.gradc").tolist() == [1.0, 2.0]
    with open(tmp_path / "c.gradc", "rb") as f:
        assert gradc.load(f).tolist() == [1.0, 2.0]


def test_files_of_the_first_format_still_load():
    """tests/data/serialization_v1.gradc was written by the first gradc.save (one pickle, each tensor a
    NumPy copy)."""
    for weights_only in (True, False):
        d = gradc.load(DATA / "serialization_v1.gradc", weights_only=weights_only)
        assert d["x"] is d["again"] and d["x"].requires_grad and d["x"].tolist() == [[1.0, 2.0], [3.0, 4.0]]
        assert isinstance(d["p"], gradc.nn.Parameter) and d["p"].tolist() == [0.5, -1.5]
        assert d["i"].dtype is gradc.int64 and d["i"].tolist() == [0, 1, 2, 3]
        assert d["b"].dtype is gradc.bool and d["h"].dtype is gradc.float16 and d["h"].tolist() == [1.5, 2.25]
        assert d["u8"].dtype is gradc.uint8 and d["u8"].tolist() == [1, 255]
        assert d["meta"] == collections.OrderedDict(step=3, names=["a", "b"], t=(1, 2.5))


def test_files_of_the_second_format_still_load():
    """tests/data/serialization_v2.gradc was written by gradc.save before it wrote PyTorch's zip
    format (gradc's version 2: storages, views of them, and the pickled object)."""
    for weights_only in (True, False):
        d = gradc.load(DATA / "serialization_v2.gradc", weights_only=weights_only)
        assert d["x"] is d["again"] and d["x"].requires_grad and d["x"].tolist() == [[1.0, 2.0], [3.0, 4.0]]
        assert d["row"].tolist() == [3.0, 4.0] and not d["row"].requires_grad
        d["row"].fill_(0.0)                                 # a view of x's storage, as saved
        assert d["x"].tolist() == [[1.0, 2.0], [0.0, 0.0]]
        assert isinstance(d["p"], gradc.nn.Parameter) and d["p"].tolist() == [0.5, -1.5]
        assert d["i"].dtype is gradc.int64 and d["i"].tolist() == [2, 3, 4, 5] and d["i"].storage_offset() == 2
        assert d["it"].stride() == (1, 3) and d["it"].tolist() == [[0, 3], [1, 4], [2, 5]]
        assert d["h"].dtype is gradc.float16 and d["h"].tolist() == [1.5, 2.25]
        assert d["b"].tolist() == [True, False] and d["size"] == gradc.Size([2, 3]) and d["dt"] is gradc.float64
        assert d["meta"] == collections.OrderedDict(step=3, names=["a", "b"], t=(1, 2.5))


def test_several_saves_in_one_stream_load_in_turn():
    """gradc's own format only: a zip archive (PyTorch's format) is read from its end."""
    buffer = io.BytesIO()
    gradc.save({"a": gradc.ones(2)}, buffer, _use_new_zipfile_serialization=False)
    gradc.save([gradc.arange(3)], buffer, _use_new_zipfile_serialization=False)
    buffer.seek(0)
    assert gradc.load(buffer)["a"].tolist() == [1.0, 1.0]
    assert gradc.load(buffer)[0].tolist() == [0, 1, 2]


class _Unseekable(io.RawIOBase):
    def __init__(self, data):
        self._data = io.BytesIO(data)

    def readable(self):
        return True

    def readinto(self, b):
        chunk = self._data.read(min(len(b), 7))      # short reads, as a pipe gives
        b[:len(chunk)] = chunk
        return len(chunk)


def test_streams_that_cannot_seek():
    buffer = io.BytesIO()
    gradc.save({"w": gradc.arange(50.0), "v": gradc.arange(4)}, buffer)
    d = gradc.load(_Unseekable(buffer.getvalue()))
    assert d["w"].tolist() == list(range(50)) and d["v"].tolist() == [0, 1, 2, 3]


def _copy_cases(m):
    """(name, tensor) pairs: every dtype, views, a non-leaf, parameters, a buffer, a tensor with
    an attribute and one with a gradient."""
    out = []
    for dt in (m.float32, m.float64, m.float16, m.int8, m.uint8, m.int16, m.int32, m.int64, m.bool):
        x = (m.arange(12).reshape(3, 4) % 5).to(dt)
        out += [(f"{dt}", x), (f"{dt} t", x.t()), (f"{dt} strided", x[1:, ::2]), (f"{dt} expand", x[:1].expand(2, 4))]
    out.append(("non-leaf", m.ones(2, requires_grad=True) * 2))
    out.append(("parameter", m.nn.Parameter(m.ones(2))))
    out.append(("frozen parameter", m.nn.Parameter(m.ones(2), requires_grad=False)))
    out.append(("buffer", m.nn.Buffer(m.ones(2), persistent=False)))
    tagged = m.ones(2)
    tagged.tag = {"a": [1]}
    out.append(("tagged", tagged))
    with_grad = m.ones(2, requires_grad=True)
    (with_grad * 3).sum().backward()
    out.append(("with grad", with_grad))
    return out


def _described(t):
    return (type(t).__name__, str(t.dtype).split(".")[-1], tuple(t.shape), t.tolist(), t.requires_grad, t.is_leaf,
            getattr(t, "tag", None), getattr(t, "persistent", None),
            None if t.grad is None else t.grad.tolist())


@pytest.mark.parametrize("how", ["pickle", "deepcopy"])
def test_pickle_and_deepcopy_keep_what_pytorchs_keep(how):
    """pickle (what multiprocessing sends) and copy.deepcopy keep the values of every dtype and of
    views, requires_grad (a pickled non-leaf loads as a leaf that requires grad), the class
    (nn.Parameter, nn.Buffer's flag) and attributes set on the tensor; deepcopy also the gradient,
    and it refuses a non-leaf, as PyTorch's."""
    import copy
    torch = pytest.importorskip("torch")
    seen = []
    for m in (torch, gradc):
        row = []
        for name, t in _copy_cases(m):
            try:
                c = pickle.loads(pickle.dumps(t)) if how == "pickle" else copy.deepcopy(t)
            except RuntimeError as e:
                row.append((name, "error", str(e)))
                continue
            row.append((name, _described(c), isinstance(c, m.nn.Buffer), isinstance(c, m.nn.Parameter)))
        seen.append(row)
    assert seen[1] == seen[0]
    linear = gradc.nn.Linear(2, 3)
    model = pickle.loads(pickle.dumps(linear)) if how == "pickle" else copy.deepcopy(linear)
    assert all(type(p) is gradc.nn.Parameter for p in model.parameters())


def test_copy_copy_shares_memory_as_pytorchs():
    """copy.copy: a new leaf on the same memory (a write to the original shows in the copy),
    with requires_grad (a non-leaf's copy is a leaf that requires grad), the class and the
    attributes, but not the gradient."""
    import copy
    torch = pytest.importorskip("torch")
    seen = []
    for m in (torch, gradc):
        row = []
        for name, t in _copy_cases(m):
            c = copy.copy(t)
            described = _described(c)
            with m.no_grad():
                t.fill_(1)                          # (through the original: an expand view fills its base)
            row.append((name, described, isinstance(c, m.nn.Buffer), c.tolist() == t.tolist()))
        seen.append(row)
    assert seen[1] == seen[0]
    assert all(shared for *_, shared in seen[1])


# ---- PyTorch's zip format: torch.save -> gradc.load and gradc.save -> torch.load ------------------
def _from_torch(torch, obj, **load_kwargs):
    buffer = io.BytesIO()
    torch.save(obj, buffer)
    buffer.seek(0)
    return gradc.load(buffer, **load_kwargs)


def _to_torch(torch, obj, **load_kwargs):
    buffer = io.BytesIO()
    gradc.save(obj, buffer)
    buffer.seek(0)
    return torch.load(buffer, weights_only=True, **load_kwargs)


def _mlp(lib, optimizer):
    """A model and its optimizer: SGD with momentum for a model with BatchNorm (whose buffers are
    state too), Adam for one without (Adam's first steps magnify tiny gradient differences)."""
    if optimizer == "SGD":
        model = lib.nn.Sequential(lib.nn.Linear(3, 4), lib.nn.BatchNorm1d(4), lib.nn.Tanh(), lib.nn.Linear(4, 2))
        return model, lib.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    model = lib.nn.Sequential(lib.nn.Linear(3, 4), lib.nn.Tanh(), lib.nn.Linear(4, 2))
    return model, lib.optim.Adam(model.parameters(), lr=0.05)


OPTIMIZERS = pytest.mark.parametrize("optimizer", ["SGD", "Adam"])


def _train(lib, model, opt, x, steps):
    for _ in range(steps):
        opt.zero_grad()
        model(x).pow(2).mean().backward()
        opt.step()


def _assert_same_model(torch, gmodel, tmodel, x):
    gmodel.eval(), tmodel.eval()
    np.testing.assert_allclose(gmodel(gradc.tensor(x.numpy())).detach().numpy(), tmodel(x).detach().numpy(),
                               rtol=1e-5, atol=1e-6)
    gmodel.train(), tmodel.train()


@OPTIMIZERS
def test_a_torch_checkpoint_loads_into_gradc_modules_and_optimizers(optimizer):
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    tmodel, topt = _mlp(torch, optimizer)
    x = torch.randn(8, 3)
    _train(torch, tmodel, topt, x, 2)
    ck = _from_torch(torch, {"model": tmodel.state_dict(), "optimizer": topt.state_dict(), "epoch": 7,
                             "history": [[1, 2.5], [3, {"loss": torch.tensor(0.25)}]]})
    assert ck["epoch"] == 7 and ck["history"][0] == [1, 2.5] and ck["history"][1][1]["loss"].item() == 0.25
    state = ck["model"]
    assert isinstance(state, collections.OrderedDict) and list(state) == list(tmodel.state_dict())
    assert state._metadata == tmodel.state_dict()._metadata            # kept, as torch.load keeps it
    for k, v in tmodel.state_dict().items():
        assert str(state[k].dtype) == str(v.dtype) and state[k].tolist() == v.tolist(), k
    gmodel, gopt = _mlp(gradc, optimizer)
    gmodel.load_state_dict(state)
    gopt.load_state_dict(ck["optimizer"])
    _assert_same_model(torch, gmodel, tmodel, x)
    _train(torch, tmodel, topt, x, 1)                                   # one more step each: the same model
    _train(gradc, gmodel, gopt, gradc.tensor(x.numpy()), 1)
    _assert_same_model(torch, gmodel, tmodel, x)
    # saved again by gradc, the loaded checkpoint is the one torch wrote, _metadata included
    again = _to_torch(torch, ck)
    assert again["model"]._metadata == state._metadata and again["epoch"] == 7
    for k, v in state.items():
        assert again["model"][k].dtype == getattr(torch, v.dtype.name) and again["model"][k].tolist() == v.tolist()


def test_tensor_and_parameter_attributes_in_torch_checkpoints_load():
    torch = pytest.importorskip("torch")
    t = torch.ones(2)
    t.note = "kept"                                       # pickled through torch._tensor._rebuild_from_type_v2
    p = torch.nn.Parameter(torch.zeros(2))
    p.tag = 3                                             # through torch._utils._rebuild_parameter_with_state
    d = _from_torch(torch, {"t": t, "p": p})
    assert d["t"].note == "kept" and d["t"].tolist() == [1.0, 1.0] and type(d["t"]) is gradc.Tensor
    assert d["p"].tag == 3 and isinstance(d["p"], gradc.nn.Parameter) and d["p"].requires_grad


@OPTIMIZERS
def test_a_gradc_checkpoint_loads_into_torch_modules_and_optimizers(tmp_path, optimizer):
    torch = pytest.importorskip("torch")
    gradc.manual_seed(0)
    gmodel, gopt = _mlp(gradc, optimizer)
    x = torch.randn(8, 3)
    gx = gradc.tensor(x.numpy())
    _train(gradc, gmodel, gopt, gx, 2)
    path = tmp_path / "ckpt.pt"
    gradc.save({"model": gmodel.state_dict(), "optimizer": gopt.state_dict(), "epoch": 7,
                "history": [[1, 2.5], [3, {"loss": gradc.tensor(0.25)}]]}, path)
    ck = torch.load(path, weights_only=True)
    assert ck["epoch"] == 7 and ck["history"][1][1]["loss"].item() == 0.25
    tmodel, topt = _mlp(torch, optimizer)
    tmodel.load_state_dict(ck["model"])
    topt.load_state_dict(ck["optimizer"])
    _assert_same_model(torch, gmodel, tmodel, x)
    _train(torch, tmodel, topt, x, 1)
    _train(gradc, gmodel, gopt, gx, 1)
    _assert_same_model(torch, gmodel, tmodel, x)
    # the archive is laid out as torch.save lays it out: records in a folder named after the file,
    # storages aligned to 64 bytes (torch.load's mmap=True reads them in place)
    with zipfile.ZipFile(path) as archive:
        names = archive.namelist()
    assert names[:4] == ["ckpt/data.pkl", "ckpt/.format_version", "ckpt/.storage_alignment", "ckpt/byteorder"]
    assert {"ckpt/version", "ckpt/.data/serialization_id", "ckpt/data/0"} <= set(names)
    mapped = torch.load(path, weights_only=True, mmap=True)
    assert mapped["model"]["0.weight"].tolist() == ck["model"]["0.weight"].tolist()


@pytest.mark.parametrize("name", [d.name for d in gradc.dtypes.ALL])
def test_every_dtype_both_libraries_have_crosses_over(name):
    torch = pytest.importorskip("torch")
    values = [[0, 1, 2], [3, 0, 5]]
    t = torch.tensor(values).to(getattr(torch, name))
    g = gradc.tensor(values).to(getattr(gradc, name))
    mine, theirs = _from_torch(torch, {"t": t, "d": t.dtype}), _to_torch(torch, {"t": g, "d": g.dtype})
    assert mine["t"].dtype is mine["d"] is g.dtype and mine["t"].tolist() == t.tolist()
    assert theirs["t"].dtype is theirs["d"] is t.dtype and theirs["t"].tolist() == g.tolist()


def test_views_and_non_contiguous_tensors_cross_over_sharing_storage():
    torch = pytest.importorskip("torch")
    from_torch, to_torch, torch_own = (_from_torch(torch, _views(torch)), _to_torch(torch, _views(gradc)),
                                       _torch_round_trip(torch, _views(torch)))
    for d in (from_torch, to_torch):
        for k in torch_own:
            assert d[k].tolist() == torch_own[k].tolist(), k
            assert d[k].stride() == torch_own[k].stride(), k
            assert d[k].storage_offset() == torch_own[k].storage_offset(), k
            assert d[k].is_contiguous() == torch_own[k].is_contiguous(), k
    for d in (from_torch, to_torch, torch_own):            # views of one storage stay views of one storage
        d["cols"][0, 0] = 100.0
        d["flat_tail"].mul_(-1)
        d["row"].add_(0.5)
    for d in (from_torch, to_torch):
        for k in torch_own:
            assert d[k].tolist() == torch_own[k].tolist(), k
    with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
        from_torch["wide"].add_(1)
    assert to_torch["x"].untyped_storage().nbytes() == 48     # one storage for x and its views, written once


def test_tensors_of_two_dtypes_on_one_memory_are_refused_as_torch_refuses():
    torch = pytest.importorskip("torch")
    message = "Cannot save multiple tensors or storages that view the same data as different types"
    x, tx = gradc.arange(4.0), torch.arange(4.0)
    with pytest.raises(RuntimeError, match=message):
        gradc.save([x, x.view(gradc.int32)], io.BytesIO())
    with pytest.raises(RuntimeError, match=message):
        torch.save([tx, tx.view(torch.int32)], io.BytesIO())
    y = _round_trip([x, x.view(gradc.int32)], zip_format=False)       # gradc's own format keeps both
    assert y[1].tolist() == x.view(gradc.int32).tolist()


def test_parameters_and_requires_grad_cross_over():
    torch = pytest.importorskip("torch")

    def make(lib):
        a = lib.tensor([1.0, 2.0], requires_grad=True)
        p = lib.nn.Parameter(lib.ones(2))
        return {"a": a, "again": a, "nonleaf": a * 3, "p": p, "p_view": p[1:],
                "frozen": lib.nn.Parameter(lib.ones(1), requires_grad=False), "plain": lib.zeros(2)}

    torch_own = _torch_round_trip(torch, make(torch))
    for d, lib in ((_from_torch(torch, make(torch)), gradc), (_to_torch(torch, make(gradc)), torch)):
        assert d["a"] is d["again"]
        for k, t in torch_own.items():
            m = d[k]
            assert (m.requires_grad, m.is_leaf, m.grad_fn, m.grad) == (t.requires_grad, t.is_leaf, None, None), k
            assert isinstance(m, lib.nn.Parameter) == isinstance(t, torch.nn.Parameter), k
            assert m.tolist() == t.tolist(), k
        with lib.no_grad():
            d["p"].add_(1.0)                                    # a Parameter and a view of it share the storage
        assert d["p_view"].tolist() == [2.0]


def test_plain_values_cross_over():
    torch = pytest.importorskip("torch")
    from_torch, to_torch, torch_own = (_from_torch(torch, _plain(torch)), _to_torch(torch, _plain(gradc)),
                                       _torch_round_trip(torch, _plain(torch)))
    for d, lib in ((from_torch, gradc), (to_torch, torch)):
        assert set(d) == set(torch_own)
        assert isinstance(d["size"], lib.Size) and d["size"] == (2, 3)
        assert d["device"] == lib.device("cpu")
        assert d["dtypes"] == [lib.float16, lib.int8, lib.bool]
        for k in ("set", "od", "counter", "complex", "bytes", "bytearray", "tuple"):
            assert d[k] == torch_own[k] and type(d[k]) is type(torch_own[k]), k
        assert d["nested"][0]["t"].dtype is lib.float64


def test_map_location_on_a_torch_checkpoint():
    torch = pytest.importorskip("torch")
    x = torch.arange(4.0)
    for where in (None, "cpu", gradc.device("cpu"), {"cuda:0": "cpu"}, lambda storage, location: storage):
        y = _from_torch(torch, [x, x[1:]], map_location=where)
        assert y[0].device == gradc.device("cpu") and y[0].tolist() == [0.0, 1.0, 2.0, 3.0]
        y[1].fill_(9.0)
        assert y[0].tolist() == [0.0, 9.0, 9.0, 9.0]
    seen = []
    _from_torch(torch, [x, x[1:]], map_location=lambda storage, location: seen.append(
        (storage.dtype, storage.numel(), location)))
    assert seen == [(gradc.uint8, 16, "cpu")]          # once per storage, its bytes, as PyTorch passes them
    with pytest.raises(TypeError, match="map_location"):
        _from_torch(torch, x, map_location=3)


def test_weights_only_refuses_unknown_globals_in_torch_checkpoints():
    torch = pytest.importorskip("torch")
    for obj in ({"w": torch.ones(2), "cfg": Config(3)}, torch.nn.Linear(2, 2)):
        buffer = io.BytesIO()
        torch.save(obj, buffer)
        for load in (gradc.load, torch.load):
            buffer.seek(0)
            with pytest.raises(pickle.UnpicklingError, match="Weights only load failed") as e:
                load(buffer)
            assert "Unsupported global: GLOBAL" in str(e.value)
    buffer.seek(0)
    with pytest.raises(pickle.UnpicklingError, match="Unsupported global: GLOBAL torch.nn.modules.linear.Linear"):
        gradc.load(buffer)
    buffer.seek(0)        # a whole torch module: gradc does not import torch to build it
    with pytest.raises(pickle.UnpicklingError, match=r"PyTorch's torch.nn.modules.linear.Linear.*state_dict\(\)"):
        gradc.load(buffer, weights_only=False)
    d = _from_torch(torch, {"w": torch.ones(2), "cfg": Config(3)}, weights_only=False)
    assert d["cfg"].depth == 3 and d["w"].tolist() == [1.0, 1.0]
    with gradc.serialization.safe_globals([Config]):
        assert _from_torch(torch, Config(5)).depth == 5


def test_bfloat16_is_refused_by_its_key_unless_upcast():
    torch = pytest.importorskip("torch")
    w = torch.tensor([[1.5, -2.0, 3.140625], [0.0, 1e-3, 65280.0]], dtype=torch.bfloat16)
    obj = {"model": collections.OrderedDict(w=w, row=w[1], b=torch.ones(2))}
    with pytest.raises(RuntimeError, match=r"the loaded object\['model'\]\['w'\] \(storage data/0\) is a bfloat16 "
                                           r"tensor, and gradc has no bfloat16; .*upcast_bfloat16=True"):
        _from_torch(torch, obj)
    d = _from_torch(torch, obj, upcast_bfloat16=True)["model"]
    assert d["w"].dtype is gradc.float32 and d["w"].tolist() == w.float().tolist()
    assert d["row"].storage_offset() == 3 and d["b"].dtype is gradc.float32
    d["w"][1, 0] = 7.0                                     # still one storage
    assert d["row"].tolist()[0] == 7.0
    with pytest.raises(RuntimeError, match=r"the loaded object\[1\] \(storage data/0\) is a complex64 tensor"):
        _from_torch(torch, [1, torch.ones(2, dtype=torch.complex64)])
    with pytest.raises(RuntimeError, match=r"the loaded object\[0\] \(storage data/0\) is a uint16 tensor"):
        _from_torch(torch, [torch.ones(2, dtype=torch.uint16)])
    with pytest.raises(RuntimeError, match=r"the loaded object\['dtype'\] is torch.bfloat16"):
        _from_torch(torch, {"dtype": torch.bfloat16})


def test_unseekable_streams_and_paths_in_the_zip_format(tmp_path):
    torch = pytest.importorskip("torch")

    class Sink(io.RawIOBase):
        def __init__(self):
            self.data = io.BytesIO()

        def writable(self):
            return True

        def write(self, b):
            return self.data.write(b)

    sink = Sink()
    gradc.save({"w": gradc.arange(5.0)[1:]}, sink)
    data = sink.data.getvalue()
    assert torch.load(io.BytesIO(data))["w"].tolist() == [1.0, 2.0, 3.0, 4.0]
    assert gradc.load(_Unseekable(data))["w"].tolist() == [1.0, 2.0, 3.0, 4.0]
    torch.save({"w": torch.arange(3)}, tmp_path / "t.pt")
    assert gradc.load(tmp_path / "t.pt")["w"].tolist() == [0, 1, 2]
    assert gradc.load(str(tmp_path / "t.pt"))["w"].dtype is gradc.int64


@pytest.mark.filterwarnings("ignore::DeprecationWarning")          # torch.jit's
def test_pytorchs_other_formats_are_named_not_read(tmp_path):
    torch = pytest.importorskip("torch")
    torch.save({"w": torch.arange(3)}, tmp_path / "legacy.pt", _use_new_zipfile_serialization=False)
    assert torch.load(tmp_path / "legacy.pt")["w"].tolist() == [0, 1, 2]
    with pytest.raises(RuntimeError, match="PyTorch's legacy format"):
        gradc.load(tmp_path / "legacy.pt")
    x = torch.arange(4, dtype=torch.uint8)          # a storage of its own and one its tensor shares
    with pytest.raises(RuntimeError, match=r"holds storages themselves \(data/0, data/1; .*gradc has no storage "):
        _from_torch(torch, {"x": x, "storage": x.untyped_storage(), "alone": torch.ones(1).untyped_storage()})
    scripted = io.BytesIO()
    torch.jit.save(torch.jit.script(torch.nn.Linear(2, 2)), scripted)
    scripted.seek(0)
    with pytest.raises(RuntimeError, match=r"TorchScript archive \(torch.jit.save\)"):
        gradc.load(scripted)


def test_tensors_torch_cannot_describe_as_views_are_saved_as_copies():
    torch = pytest.importorskip("torch")
    a = np.arange(6.0, dtype=np.float32)
    reversed_ = gradc.from_numpy(a[::-1])                 # a negative stride: PyTorch has none
    assert reversed_.stride() == (-1,)
    for d in (_to_torch(torch, {"r": reversed_, "a": gradc.from_numpy(a)}),
              _round_trip({"r": reversed_, "a": gradc.from_numpy(a)})):
        assert d["r"].tolist() == [5.0, 4.0, 3.0, 2.0, 1.0, 0.0] and d["r"].stride() == (1,)
        assert d["a"].tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]


def test_big_endian_checkpoints_load():
    """A checkpoint written on a big-endian machine (its ``byteorder`` record says so)."""
    torch = pytest.importorskip("torch")
    obj = {"f": torch.tensor([1.5, -2.0]), "i": torch.tensor([1, 256], dtype=torch.int16),
           "b": torch.tensor([1, 255], dtype=torch.uint8),
           "bf": torch.tensor([1.5, -3.0], dtype=torch.bfloat16)}
    buffer = io.BytesIO()
    torch.save(obj, buffer)
    sizes = {"0": 4, "1": 2, "2": 1, "3": 2}              # element sizes of the storages, in the order saved
    swapped = io.BytesIO()
    with zipfile.ZipFile(buffer) as src, zipfile.ZipFile(swapped, "w") as dst:
        for name in src.namelist():
            data = src.read(name)
            if name.endswith("/byteorder"):
                data = b"big"
            elif "/data/" in name:
                n = sizes[name.rsplit("/", 1)[1]]
                data = np.frombuffer(data, f"<u{n}").astype(f">u{n}").tobytes()
            dst.writestr(name, data)
    swapped.seek(0)
    theirs = torch.load(swapped)
    swapped.seek(0)
    mine = gradc.load(swapped, upcast_bfloat16=True)
    for k in obj:
        assert mine[k].tolist() == theirs[k].tolist() == obj[k].tolist(), k


def test_a_torch_checkpoint_saved_on_cuda_loads_where_map_location_says(monkeypatch):
    """Storages saved at ``cuda:0`` (the file's location rewritten, as no GPU is needed here)."""
    torch = pytest.importorskip("torch")
    x = torch.arange(6.0).reshape(2, 3)
    buffer = io.BytesIO()
    torch.save({"x": x, "row": x[1]}, buffer)
    on_cuda = io.BytesIO()
    with zipfile.ZipFile(buffer) as src, zipfile.ZipFile(on_cuda, "w") as dst:
        for name in src.namelist():
            data = src.read(name)
            if name.endswith("data.pkl"):
                data = data.replace(b"X\x03\x00\x00\x00cpu", b"X\x06\x00\x00\x00cuda:0")
                assert b"cuda:0" in data
            dst.writestr(name, data)
    monkeypatch.setattr(gradc.cuda, "is_available", lambda: False)
    on_cuda.seek(0)
    with pytest.raises(RuntimeError, match=r"^Attempting to deserialize object on a CUDA device but "
                                           r"torch.cuda.is_available\(\) is False"):
        gradc.load(on_cuda)
    seen = []
    for where in ("cpu", {"cuda:0": "cpu"}, lambda storage, location: seen.append(location) or storage):
        on_cuda.seek(0)
        d = gradc.load(on_cuda, map_location=where)
        assert d["x"].device == gradc.device("cpu") and d["row"].tolist() == [3.0, 4.0, 5.0]
        d["row"].add_(1.0)
        assert d["x"].tolist() == [[0.0, 1.0, 2.0], [4.0, 5.0, 6.0]]
    assert seen == ["cuda:0"]


def test_gradc_writes_the_pickle_torch_writes():
    """data.pkl and the storages, byte for byte, for tensors, views, a Parameter, a dtype, a Size and
    plain values (torch.save's pickle, protocol 2, persistent ids naming typed storages)."""
    torch = pytest.importorskip("torch")

    def make(lib):
        x = lib.arange(6.0).reshape(2, 3)
        return {"x": x, "row": x[1], "t": x.t(), "p": lib.nn.Parameter(lib.ones(2)), "i": lib.arange(3),
                "d": lib.float16, "s": lib.Size([1, 2]), "n": [1, 2.5, "a", None, (True,)], "b": b"xy", "set": {3}}

    mine, theirs = io.BytesIO(), io.BytesIO()
    gradc.save(make(gradc), mine)
    torch.save(make(torch), theirs)
    with zipfile.ZipFile(mine) as m, zipfile.ZipFile(theirs) as t:
        assert m.namelist() == t.namelist()
        for name in m.namelist():
            if not name.endswith("serialization_id"):
                assert m.read(name) == t.read(name), name


class _FreshTensors:
    """Pickles as tensors made anew at each pickling (gradc.save pickles twice for the zip format)."""

    def __reduce__(self):
        big = np.arange(6.0, dtype=np.float32)              # tensors on one memory that are not views in gradc
        return (dict, ([("tail", gradc.from_numpy(big[2:])), ("whole", gradc.from_numpy(big))],))


def test_objects_that_pickle_fresh_tensors_keep_their_offsets():
    torch = pytest.importorskip("torch")
    buffer = io.BytesIO()
    gradc.save({"f": _FreshTensors()}, buffer)
    for load in (torch.load, gradc.load):
        buffer.seek(0)
        d = load(buffer, weights_only=False)["f"]
        assert d["tail"].tolist() == [2.0, 3.0, 4.0, 5.0] and d["whole"].tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
        assert d["tail"].storage_offset() == 2
