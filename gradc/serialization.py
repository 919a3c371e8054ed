"""``gradc.save`` and ``gradc.load``: tensors, and the dicts, lists and tuples around them
(``model.state_dict()``, ``optimizer.state_dict()``, checkpoints), to a file or a binary stream.

The format is gradc's own, a pickle with a small header: it is not PyTorch's zip format, and
neither library reads the other's files. Each tensor is stored as its values (a NumPy array),
dtype, requires_grad (kept for non-leaves too, which load as leaves, as PyTorch's do) and
whether it is an ``nn.Parameter``; a tensor that appears twice loads as one tensor. Views are
stored as copies: a view and its base load as separate tensors.

``load(..., weights_only=True)`` (the default, as PyTorch's since 2.6) reads only tensors,
containers and plain values, and refuses any other class by name; ``weights_only=False`` runs
arbitrary pickle code, so only for files you trust.
"""
from __future__ import annotations

import io
import os
import pickle

import numpy as np

_MAGIC = "gradc-save"
_VERSION = 1

# what weights_only=True lets a file name: gradc's tensor rebuild, NumPy's array pieces, containers
_ALLOWED = {
    ("gradc.serialization", "_rebuild_tensor"),
    ("collections", "OrderedDict"),
    ("builtins", "set"), ("builtins", "frozenset"), ("builtins", "slice"), ("builtins", "complex"),
}
_NUMPY_ALLOWED = {"_reconstruct", "ndarray", "dtype", "_frombuffer", "scalar"}


def _rebuild_tensor(array, requires_grad, device, parameter):
    from .tensor import Tensor
    if parameter:
        from .nn.parameter import Parameter
        t = Parameter(array, requires_grad=requires_grad)
    else:
        t = Tensor(array, requires_grad=requires_grad)
    return t._to_device(device) if device != "cpu" else t


class _Pickler(pickle.Pickler):
    def reducer_override(self, obj):
        from .tensor import Tensor
        if isinstance(obj, Tensor):
            from .nn.parameter import Parameter
            return (_rebuild_tensor, (np.ascontiguousarray(obj._host()).copy(), bool(obj.requires_grad),
                                      str(obj.device), isinstance(obj, Parameter)))
        return NotImplemented


class _WeightsOnlyUnpickler(pickle.Unpickler):
    def find_class(self, module, name):
        if (module, name) in _ALLOWED or (module.split(".")[0] == "numpy" and name in _NUMPY_ALLOWED):
            return super().find_class(module, name)
        raise pickle.UnpicklingError(
            f"Weights only load failed: the file names {module}.{name}, which is not a tensor, container or "
            "plain value. If you trust the file, load it with weights_only=False (that runs any code the "
            "file holds).")


def save(obj, f, pickle_protocol=pickle.DEFAULT_PROTOCOL):
    """Write ``obj`` to ``f`` (a path or a binary file object)."""
    if isinstance(f, (str, os.PathLike)):
        with open(f, "wb") as stream:
            _Pickler(stream, protocol=pickle_protocol).dump((_MAGIC, _VERSION, obj))
        return
    _Pickler(f, protocol=pickle_protocol).dump((_MAGIC, _VERSION, obj))


def _check_map_location(map_location):
    from .tensor import device as Device
    if map_location is None:
        return
    if isinstance(map_location, dict) and all(str(v) == "cpu" for v in map_location.values()):
        return
    if isinstance(map_location, (str, Device)) and str(map_location) == "cpu":
        return
    raise RuntimeError(f"gradc.load: map_location={map_location!r} is not supported; gradc loads tensors to the "
                       "CPU (map_location=None or 'cpu'), then .to(device) moves them")


def load(f, map_location=None, pickle_module=None, *, weights_only=True, mmap=None):
    """Read what ``save`` wrote to ``f`` (a path or a binary file object)."""
    _check_map_location(map_location)
    if isinstance(f, (str, os.PathLike)):
        with open(f, "rb") as stream:
            return _load_stream(stream, weights_only)
    return _load_stream(f, weights_only)


def _load_stream(stream, weights_only):
    head = stream.read(2)
    if head == b"PK":
        raise RuntimeError("gradc.load: this is a zip file (PyTorch's torch.save format?); gradc reads only "
                           "files written by gradc.save")
    stream = io.BufferedReader(_Rewound(head, stream))
    unpickler = _WeightsOnlyUnpickler(stream) if weights_only else pickle.Unpickler(stream)
    try:
        payload = unpickler.load()
    except (EOFError, pickle.UnpicklingError) as e:
        if isinstance(e, pickle.UnpicklingError) and str(e).startswith("Weights only load failed"):
            raise
        raise RuntimeError(f"gradc.load: not a file written by gradc.save ({e})") from None
    if not (isinstance(payload, tuple) and len(payload) == 3 and payload[0] == _MAGIC):
        raise RuntimeError("gradc.load: not a file written by gradc.save")
    if payload[1] > _VERSION:
        raise RuntimeError(f"gradc.load: the file is format version {payload[1]}; this gradc reads up to {_VERSION}")
    return payload[2]


class _Rewound(io.RawIOBase):
    """``stream`` with ``head`` (already read from it) put back in front."""

    def __init__(self, head, stream):
        self._head, self._stream = head, stream

    def readable(self):
        return True

    def readinto(self, buffer):
        if self._head:
            n = min(len(buffer), len(self._head))
            buffer[:n] = self._head[:n]
            self._head = self._head[n:]
            return n
        data = self._stream.read(len(buffer))
        buffer[:len(data)] = data
        return len(data)
