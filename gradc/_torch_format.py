"""PyTorch's checkpoint format (``torch.save``'s zip format, the default since PyTorch 1.6) for
``gradc.save`` and ``gradc.load``, without torch.

A checkpoint is an uncompressed zip archive whose records all sit in one folder (``archive/``,
or the file's name): ``data.pkl`` (the object, pickled with protocol 2), ``byteorder``,
``version``, ``.format_version``, ``.storage_alignment``, ``.data/serialization_id`` and
``data/<key>``, the bytes of each storage (aligned to 64 bytes in the file, as torch aligns them).
In ``data.pkl`` a tensor is ``torch._utils._rebuild_tensor_v2(storage, storage_offset, size,
stride, requires_grad, backward_hooks)`` (offsets and strides count elements), a storage a
persistent id ``("storage", torch.FloatStorage, key, location, numel)``, a Parameter
``torch._utils._rebuild_parameter(tensor, requires_grad, backward_hooks)``, dtypes, devices and
sizes ``torch.float32``, ``torch.device("cpu")``, ``torch.Size((2, 3))``.

Writing: ``TorchPickler`` (pure-Python ``pickle._Pickler``, whose ``save`` can be extended) writes
those torch names as GLOBAL opcodes (``TorchName``) although torch is not installed. Reading:
``torch_global`` maps the names onto gradc's functions for ``serialization._Unpickler``, and
``ZipStorages`` reads each ``data/<key>`` once, so tensors viewing one storage load as views of
one storage. Storages of dtypes gradc does not have (bfloat16, complex, uint16, ...) load as
``Unsupported`` markers that ``check_supported`` reports by where they sit in the loaded object;
bfloat16 storages load as float32 when asked (``upcast_bfloat16=True``).
"""
from __future__ import annotations

import collections
import io
import os
import pickle
import random
import struct
import sys
import zipfile

import numpy as np

from . import dtypes

_ALIGNMENT = 64
# gradc dtype name -> the typed storage class torch pickles for it
_STORAGE_TYPES = {"bool": "BoolStorage", "uint8": "ByteStorage", "int8": "CharStorage", "int16": "ShortStorage",
                  "int32": "IntStorage", "int64": "LongStorage", "float16": "HalfStorage",
                  "float32": "FloatStorage", "float64": "DoubleStorage"}
# torch's storage classes and dtypes gradc does not have
_OTHER_STORAGE_TYPES = {"BFloat16Storage": "bfloat16", "ComplexFloatStorage": "complex64",
                        "ComplexDoubleStorage": "complex128", "QInt8Storage": "qint8", "QUInt8Storage": "quint8",
                        "QInt32Storage": "qint32", "QUInt4x2Storage": "quint4x2", "QUInt2x4Storage": "quint2x4"}
_OTHER_DTYPES = ("bfloat16", "complex32", "complex64", "complex128", "uint16", "uint32", "uint64", "float8_e4m3fn",
                 "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz", "float8_e8m0fnu", "float4_e2m1fn_x2",
                 "qint8", "quint8", "qint32", "quint4x2", "quint2x4", "bits1x8", "bits2x4", "bits4x2", "bits8",
                 "bits16")


# ---- names -------------------------------------------------------------------------------------
class TorchName:
    """A torch global (``torch._utils._rebuild_tensor_v2``, ``torch.FloatStorage``, ...) that
    ``TorchPickler`` writes by name. Callable only so that pickle accepts it in a reduce tuple."""

    _cache: dict = {}

    def __new__(cls, module, name):
        key = (module, name)
        if key not in cls._cache:          # one object per name: pickle memoizes it (BINGET), as torch's files do
            obj = super().__new__(cls)
            obj.module, obj.name = module, name
            cls._cache[key] = obj
        return cls._cache[key]

    def __call__(self, *args):
        raise TypeError(f"{self.module}.{self.name} is PyTorch's; gradc only writes its name")


class MissingDtype:
    """A torch dtype gradc does not have, as it was named in a file."""

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return f"torch.{self.name}"


class StorageType:
    """A storage class named in a persistent id: the dtype of its elements (None: gradc lacks it)."""

    def __init__(self, dtype_name):
        self.dtype_name = dtype_name
        self.dtype = next((d for d in dtypes.ALL if d.name == dtype_name), None)

    def __call__(self, *args):
        raise TypeError("gradc.load: PyTorch storages are read through the file's persistent ids only")


class Unsupported:
    """A tensor (or its storage) of a dtype gradc does not have: reported by ``check_supported``."""

    def __init__(self, dtype_name, key):
        self.dtype_name, self.key = dtype_name, key


def _rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad, backward_hooks, metadata=None):
    if isinstance(storage, Unsupported):
        return storage
    return _rebuild(storage, storage.dtype, storage_offset, size, stride, requires_grad)


def _rebuild_tensor_v3(storage, storage_offset, size, stride, requires_grad, backward_hooks, dtype, metadata=None):
    if isinstance(dtype, MissingDtype):
        return Unsupported(dtype.name, getattr(storage, "key", None))
    if isinstance(storage, Unsupported):
        return storage
    return _rebuild(storage, dtype, storage_offset, size, stride, requires_grad)


def _rebuild(storage, dt, storage_offset, size, stride, requires_grad):
    from .serialization import _LoadedStorage, _tensor_on, _with_requires_grad
    if not isinstance(storage, _LoadedStorage):
        raise pickle.UnpicklingError("gradc.load: a tensor without its storage (corrupt file?)")
    storage.unclaimed -= 1
    item = dt.np.itemsize
    # several elements at one address (an expanded tensor) refuse in-place writes, as in PyTorch
    writeable = not any(s == 0 and n > 1 for n, s in zip(size, stride))
    t = _tensor_on(storage, storage_offset * item, size, [s * item for s in stride], dt, writeable)
    return _with_requires_grad(t, requires_grad)


def _rebuild_parameter(data, requires_grad, backward_hooks):
    from .serialization import _as_parameter
    if isinstance(data, Unsupported):
        return data
    return _as_parameter(data, requires_grad)


def _rebuild_parameter_with_state(data, requires_grad, backward_hooks, state):
    p = _rebuild_parameter(data, requires_grad, backward_hooks)
    if not isinstance(p, Unsupported):
        _set_state(p, state)
    return p


def _rebuild_from_type_v2(func, new_type, args, state):
    """A tensor with attributes (or of a subclass): gradc keeps Tensor and Parameter, and the attributes."""
    from .nn.parameter import Parameter
    from .serialization import _as_parameter
    t = func(*args)
    if isinstance(t, Unsupported):
        return t
    if new_type is Parameter and not isinstance(t, Parameter):
        t = _as_parameter(t, t.requires_grad)
    _set_state(t, state)
    return t


def _set_state(obj, state):
    if isinstance(state, tuple):           # (dict, slots)
        state = {**(state[0] or {}), **(state[1] or {})}
    for name, value in (state or {}).items():
        setattr(obj, name, value)


def _torch_globals():
    from .nn.parameter import Parameter
    from .tensor import Tensor, device
    from .tensor_api import Size
    names = {("torch._utils", f.__name__): f for f in (_rebuild_tensor_v2, _rebuild_tensor_v3, _rebuild_parameter,
                                                         _rebuild_parameter_with_state)}
    names.update({("torch._tensor", "_rebuild_from_type_v2"): _rebuild_from_type_v2,
                  ("torch.nn.parameter", "Parameter"): Parameter, ("torch", "Tensor"): Tensor,
                  ("torch", "Size"): Size, ("torch", "device"): device})
    for name, storage in _STORAGE_TYPES.items():
        names["torch", storage] = StorageType(name)
    for storage, name in _OTHER_STORAGE_TYPES.items():
        names["torch", storage] = StorageType(name)
    for module in ("torch", "torch.storage"):
        names[module, "UntypedStorage"] = names[module, "TypedStorage"] = StorageType("uint8")
    for d in dtypes.ALL:
        names["torch", d.name] = d
    for name in _OTHER_DTYPES:
        names["torch", name] = MissingDtype(name)
    return names


_GLOBALS = None


def torch_global(module, name):
    """gradc's stand-in for the torch global a file names, or None."""
    global _GLOBALS
    if _GLOBALS is None:
        _GLOBALS = _torch_globals()
    return _GLOBALS.get((module, name))


def check_supported(obj, flagged):
    """Raise for the first tensor or dtype of a dtype gradc lacks, naming where it sits in ``obj``;
    ``flagged`` (the load met such a storage or dtype) raises even where the walk finds nothing."""
    _find_unsupported(obj, "the loaded object", set())
    if flagged:
        raise RuntimeError(f"gradc.load: the file holds tensors or dtypes that gradc does not have ({flagged})")


def _find_unsupported(obj, path, seen):
    from .tensor import Tensor
    if id(obj) in seen or isinstance(obj, Tensor):
        return
    seen.add(id(obj))
    if isinstance(obj, Unsupported):
        storage = f" (storage data/{obj.key})" if obj.key is not None else ""
        hint = "; gradc.load(..., upcast_bfloat16=True) loads bfloat16 tensors as float32" \
            if obj.dtype_name == "bfloat16" else ""
        raise RuntimeError(f"gradc.load: {path}{storage} is a {obj.dtype_name} tensor, and gradc has no "
                           f"{obj.dtype_name}{hint}")
    if isinstance(obj, MissingDtype):
        raise RuntimeError(f"gradc.load: {path} is torch.{obj.name}, a dtype gradc does not have")
    if isinstance(obj, dict):
        for k, v in obj.items():
            _find_unsupported(v, f"{path}[{k!r}]", seen)
    if isinstance(obj, (list, tuple, set, frozenset)):
        for i, v in enumerate(obj):
            _find_unsupported(v, f"{path}[{i}]", seen)
    elif hasattr(obj, "__dict__") and not isinstance(obj, type):
        for k, v in vars(obj).items():
            _find_unsupported(v, f"{path}.{k}", seen)


# ---- reading -----------------------------------------------------------------------------------
class ZipStorages:
    """The storages of an opened checkpoint, each read (and placed by ``map_location``) once."""

    def __init__(self, archive, prefix, map_location, upcast_bfloat16):
        self.archive, self.prefix = archive, prefix
        self.map_location, self.upcast_bfloat16 = map_location, upcast_bfloat16
        self.big_endian = _read_text(archive, prefix + "byteorder", "little") == "big"
        self.loaded = {}
        self.unsupported = []        # names of the dtypes gradc lacks that the file's storages have

    def storage(self, storage_type, key, location, numel):
        if not isinstance(storage_type, StorageType):
            raise pickle.UnpicklingError(f"gradc.load: {storage_type!r} is not a storage type (corrupt file?)")
        key = str(key)
        if key not in self.loaded:
            self.loaded[key] = self._storage(storage_type, key, location)
        storage = self.loaded[key]
        storage.unclaimed += 1            # each reference is one tensor's, unless the file saved a storage itself
        return storage

    def _storage(self, storage_type, key, location):
        from .serialization import _loaded_storage
        name = storage_type.dtype_name
        if storage_type.dtype is None and not (name == "bfloat16" and self.upcast_bfloat16):
            storage = Unsupported(name, key)
            self.unsupported.append(name)
        else:
            host, dt = self._read(key, storage_type)
            storage = _loaded_storage(host, 0, str(location), self.map_location)
            storage.dtype, storage.key = dt, key
        storage.unclaimed = 0
        return storage

    def check_claimed(self):
        """Raise if the file held a storage itself (``torch.save(t.untyped_storage())``): gradc has none."""
        bare = sorted(k for k, s in self.loaded.items() if not isinstance(s, Unsupported) and s.unclaimed > 0)
        if bare:
            raise RuntimeError(f"gradc.load: the file holds storages themselves (data/{', data/'.join(bare)}; "
                               "torch.save of a tensor's untyped_storage() or storage()), and gradc has no storage "
                               "objects; save the tensors instead")

    def _read(self, key, storage_type):
        """The storage's bytes (native byte order) and their dtype: float32 for an upcast bfloat16 one."""
        from .serialization import _read_into
        name = f"{self.prefix}data/{key}"
        try:
            host = np.empty(self.archive.getinfo(name).file_size, np.uint8)
        except KeyError:
            raise pickle.UnpicklingError(f"gradc.load: the file has no record data/{key} (corrupt file?)") from None
        with self.archive.open(name) as record:          # read in place: no second copy of the bytes
            if _read_into(record, memoryview(host)) != host.size:
                raise corrupt_zip(f"record data/{key} ends early")
        if storage_type.dtype is None:                       # bfloat16: its bits are float32's upper half
            halves = host.view(">u2" if self.big_endian else "<u2").astype(np.uint32)
            return (halves << 16).view(np.float32).view(np.uint8), dtypes.float32
        dt = storage_type.dtype
        if self.big_endian and dt.np.itemsize > 1:
            host = host.view(dt.np.newbyteorder(">")).astype(dt.np).view(np.uint8)
        return host, dt


def _read_text(archive, name, default):
    try:
        return archive.read(name).decode().strip()
    except KeyError:
        return default


def open_archive(stream):
    """The zip archive in ``stream`` (at its start) and the folder its records are in."""
    if not getattr(stream, "seekable", lambda: False)():
        stream = io.BytesIO(stream.read())
    try:
        archive = zipfile.ZipFile(stream)
    except zipfile.BadZipFile as e:
        raise corrupt_zip(f"failed finding central directory ({e})") from None
    names = archive.namelist()
    pickles = [n for n in names if n.endswith("/data.pkl") and n.count("/") == 1]
    if not pickles:
        raise RuntimeError("PytorchStreamReader failed locating file data.pkl: file not found")
    prefix = pickles[0][:-len("data.pkl")]
    if prefix + "constants.pkl" in names:
        raise RuntimeError("gradc.load: this is a TorchScript archive (torch.jit.save), which gradc cannot load; "
                           "save the module's state_dict() with torch.save instead")
    return archive, prefix


def corrupt_zip(detail):
    return RuntimeError(f"PytorchStreamReader failed reading zip archive: {detail}. If you are seeing this error, "
                        "there is a high likelihood that your checkpoint file is corrupted. This can happen if the "
                        "checkpoint was not saved properly, was transferred incorrectly, or the file was modified "
                        "after saving.")


# ---- writing -----------------------------------------------------------------------------------
class _StorageRef:
    """A storage being written: its key in the archive, the ``_SavedStorage`` and its elements' dtype."""

    def __init__(self, key, storage, dt):
        self.key, self.storage, self.dtype = key, storage, dt


class _PlainTensor:
    """A Parameter's data, pickled as the plain tensor ``_rebuild_parameter`` takes."""

    def __init__(self, tensor):
        self.tensor = tensor


_PLAIN = frozenset((int, float, str, bytes, bool, type(None), tuple, list, dict, collections.OrderedDict))


class TorchPickler(pickle._Pickler):
    """Pickles ``obj`` as ``torch.save`` does. ``storages`` (from a first pass with gradc's own
    pickler) already covers every byte range the tensors need, so offsets are final here."""

    def __init__(self, file, protocol, storages):
        from .nn.parameter import Parameter
        from .tensor import Tensor, device
        from .tensor_api import Size
        super().__init__(file, protocol=protocol)
        self._types = Parameter, Tensor, device, Size       # imported once: reducer_override meets every object
        self.storages = storages
        self.refs = {}          # id(_SavedStorage) -> _StorageRef, in the order torch would number them
        self.first_pass = {id(s) for s in storages.order}

    def save(self, obj, save_persistent_id=True):
        name = obj if type(obj) is TorchName else (TorchName("torch", obj.name) if type(obj) is dtypes.dtype
                                                   else None)
        if name is None:
            super().save(obj, save_persistent_id)
            return
        self.framer.commit_frame()
        memo = self.memo.get(id(obj))
        if memo is not None:
            self.write(self.get(memo[0]))
            return
        self.write(pickle.GLOBAL + f"{name.module}\n{name.name}\n".encode("utf-8"))
        self.memoize(obj)

    def persistent_id(self, obj):
        if type(obj) is _StorageRef:
            s = obj.storage
            return ("storage", TorchName("torch", _STORAGE_TYPES[obj.dtype.name]), obj.key, s.location,
                    (s.hi - s.lo) // obj.dtype.np.itemsize)
        return None

    def reducer_override(self, obj):
        if type(obj) in _PLAIN:
            return NotImplemented
        Parameter, Tensor, device, Size = self._types
        if isinstance(obj, Parameter):
            return (TorchName("torch._utils", "_rebuild_parameter"),
                    (_PlainTensor(obj), bool(obj.requires_grad), collections.OrderedDict()))
        if isinstance(obj, (Tensor, _PlainTensor)):
            t = obj.tensor if type(obj) is _PlainTensor else obj
            ref, offset, strides = self._tensor_args(t)
            requires_grad = bool(t.requires_grad) and type(obj) is not _PlainTensor    # a Parameter's .data
            return (TorchName("torch._utils", "_rebuild_tensor_v2"),
                    (ref, offset, tuple(t.shape), strides, requires_grad, collections.OrderedDict()))
        if type(obj) is device:
            return (TorchName("torch", "device"), (obj.type,) if obj.index is None else (obj.type, obj.index))
        if type(obj) is Size:
            return (TorchName("torch", "Size"), (tuple(obj),))
        return NotImplemented

    def _tensor_args(self, t):
        """(storage reference, storage_offset, strides), both counted in elements as torch counts them."""
        from .serialization import _bounds
        s, position, strides, _ = self.storages.tensor_args(t)
        if id(s) not in self.first_pass and isinstance(s.keep, np.ndarray):
            # memory the first pass did not meet (an object that pickles fresh tensors each time):
            # all of it, so that no later tensor moves where this storage starts
            s.cover(*_bounds(s.keep))
        item = t.dtype.np.itemsize
        start = position + s.anchor - s.lo            # bytes from where the written storage starts
        if any(v % item or v < 0 for v in (start, s.hi - s.lo, *strides)):
            s, position, strides, _ = self.storages.copy(t)      # not expressible in elements: a copy of its own
            start = position + s.anchor - s.lo
        ref = self.refs.get(id(s))
        if ref is None:
            ref = self.refs[id(s)] = _StorageRef(str(len(self.refs)), s, t.dtype)
        elif ref.dtype is not t.dtype:
            raise RuntimeError("Cannot save multiple tensors or storages that view the same data as different types")
        return ref, start // item, tuple(v // item for v in strides)


def archive_name(f) -> str:
    """The folder torch names a checkpoint's records under: the file's name without its extension."""
    if isinstance(f, (str, os.PathLike)):
        return os.path.splitext(os.path.basename(os.fspath(f)))[0] or "archive"
    return "archive"


def write_zip(stream, name, data_pkl, refs):
    """Write the records ``torch.save`` writes: data.pkl, then the storages in key order (each
    copied from memory only as it is written)."""
    head = [("data.pkl", data_pkl), (".format_version", b"1"), (".storage_alignment", str(_ALIGNMENT).encode()),
            ("byteorder", sys.byteorder.encode())]
    tail = [("version", b"3\n"), (".data/serialization_id", str(random.getrandbits(128)).zfill(40).encode())]
    with zipfile.ZipFile(stream, "w", zipfile.ZIP_STORED) as archive:
        start = archive.fp.tell()
        for record, data in head:
            archive.writestr(_record_info(name, record), data)
        for ref in refs:
            data = ref.storage.data()
            info = _record_info(name, f"data/{ref.key}")
            # zipfile adds a 20-byte zip64 field to the local header of a record of 4 GiB or more
            fields = 20 if len(data) >= zipfile.ZIP64_LIMIT else 0
            info.extra = _padding(archive.fp.tell() - start, len(info.filename.encode()) + fields)
            archive.writestr(info, data)
        for record, data in tail:
            archive.writestr(_record_info(name, record), data)


def _record_info(name, record):
    info = zipfile.ZipInfo(f"{name}/{record}", date_time=(1980, 1, 1, 0, 0, 0))
    info.compress_type = zipfile.ZIP_STORED
    return info


def _padding(header_offset, header_length) -> bytes:
    """A zip extra field that starts the record's bytes at a multiple of 64 (torch's "FB" field);
    ``header_length``: the local header's name and other extra fields."""
    data_start = header_offset + 30 + header_length + 4
    pad = -data_start % _ALIGNMENT
    return b"FB" + struct.pack("<H", pad) + b"Z" * pad
