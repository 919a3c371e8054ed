"""``gradc.save`` and ``gradc.load``: tensors, and the dicts, lists and tuples around them
(``model.state_dict()``, ``optimizer.state_dict()``, checkpoints), to a path or a binary stream.

``save`` writes PyTorch's zip format (``torch.save``'s default since PyTorch 1.6; see
``_torch_format``), so ``torch.load(path, weights_only=True)`` reads what gradc saves, and
``load`` reads what ``torch.save`` wrote as well as gradc's own format, which
``save(..., _use_new_zipfile_serialization=False)`` still writes (torch cannot read it). Both keep
what ``torch.save`` keeps:

- Storages. Each distinct block of memory that saved tensors live in is written once, and each
  tensor as (storage, offset, shape, strides, dtype), through pickle's persistent ids. Views of
  one another (``x``, ``x[1:]``, ``x.t()``, ``x.view(...)``, ``expand``) load as views of one
  new storage: a write through one shows through the others, strides are kept, and
  ``storage_offset()`` is the saved one (counted from the start of the view's base). Only the
  bytes the saved tensors (and the bases they are views of) cover are written. In the zip
  format a storage has one dtype: tensors of different dtypes on one memory raise PyTorch's
  "Cannot save multiple tensors or storages that view the same data as different types", and a
  tensor whose offset or strides are not whole elements (or negative) is written as a contiguous
  copy of its own. Loaded tensors
  are not views of each other (``_base`` is None, as in PyTorch); those on one storage share
  one version counter (PyTorch gives each its own). A tensor that appears twice loads as one.
- ``requires_grad`` (a non-leaf loads as a leaf, ``grad_fn`` None), ``nn.Parameter``, the dtype;
  not ``.grad`` (as PyTorch).
- The device: a CUDA tensor is saved as ``cuda:0`` and loads there, or raises PyTorch's error
  when CUDA is not available; ``map_location`` ('cpu', a device, a dict of locations, or a
  callable ``(storage, location) -> storage`` as in PyTorch, the storage being a 1-D uint8
  gradc tensor) moves storages as they load. CUDA tensors gradc keeps as copies
  (non-contiguous views) are saved as their own storages.

``load(..., weights_only=True)`` (the default, as PyTorch's since 2.6) reads only tensors,
``nn.Parameter``, dtypes, devices, ``gradc.Size``, dicts, OrderedDicts, lists, tuples, sets and
plain values, plus classes allowed by ``add_safe_globals`` / ``safe_globals``; any other class
is refused with PyTorch's "Weights only load failed. ... Unsupported global: GLOBAL m.Name"
error. ``weights_only=False`` runs arbitrary pickle code: only for files you trust.

Reading PyTorch's files: ``torch.*`` names in the pickle map onto gradc's (rebuild functions,
storage classes, ``torch.Size``, ``torch.device``, dtypes); a state dict's ``_metadata`` is
kept. gradc has no bfloat16, complex or uint16/32/64: a tensor of such a dtype raises an error
that names where it sits in the checkpoint (``the loaded object['model']['w']``), except that
``load(..., upcast_bfloat16=True)`` loads bfloat16 storages as float32 (exact). Sparse,
quantized and nested tensors, storages saved by themselves, other torch classes (a whole
``nn.Module``), TorchScript archives and PyTorch's legacy (pre-1.6, non-zip) format are refused
with errors that say so.

gradc's own file layout (version 2): a pickled header ``("gradc-save", 2, [(location, nbytes,
start), ...])``, the raw bytes of each storage, then the pickled object; ``load`` reads no further, so several
saves to one stream load in turn. Files of version 1 (one pickle with ``(magic, 1, obj)``, each
tensor a NumPy copy) still load. Not kept: tensor subclasses other than ``nn.Parameter`` (they
load as Tensors) and attributes set on tensors; ``pickle_module``, ``mmap`` and extra pickle
arguments are accepted and ignored.
"""
from __future__ import annotations

import contextlib
import ctypes
import io
import os
import pickle
import zipfile

import numpy as np

from . import _torch_format

_MAGIC = "gradc-save"
_VERSION = 2
DEFAULT_PROTOCOL = 2          # torch.serialization.DEFAULT_PROTOCOL
_TORCH_LEGACY_MAGIC = 0x1950A86A20F9469CFC6C      # what PyTorch's legacy (non-zip) files pickle first

_UNSAFE_MESSAGE = (
    "In PyTorch 2.6, we changed the default value of the `weights_only` argument in `torch.load` from `False` to "
    "`True`; gradc.load has the same default. Re-running `gradc.load` with `weights_only` set to `False` will "
    "likely succeed, but it can result in arbitrary code execution. Do it only if you got the file from a "
    "trusted source.")
_CUDA_UNAVAILABLE = (
    "Attempting to deserialize object on a CUDA device but torch.cuda.is_available() is False. If you are running "
    "on a CPU-only machine, please use torch.load with map_location=torch.device('cpu') to map your storages to "
    "the CPU.")

# what weights_only=True lets a file name (besides add_safe_globals' classes)
_ALLOWED = {
    ("gradc.serialization", "_rebuild_tensor_v2"),
    ("gradc.serialization", "_rebuild_device"),
    ("gradc.dtypes", "from_name"),
    ("gradc.tensor_api", "Size"),
    ("collections", "OrderedDict"), ("collections", "Counter"),
    ("builtins", "set"), ("builtins", "frozenset"), ("builtins", "complex"), ("builtins", "bytearray"),
    ("_codecs", "encode"),
}
# version 1 files also name NumPy's array pieces and the old tensor rebuild
_V1_ALLOWED = {("gradc.serialization", "_rebuild_tensor")}
_NUMPY_ALLOWED = {"_reconstruct", "ndarray", "dtype", "_frombuffer", "scalar"}

_safe_globals: dict = {}


def _global_name(obj) -> str:
    return f"{obj.__module__}.{obj.__qualname__}"


def add_safe_globals(safe_globals):
    """Let ``load(weights_only=True)`` rebuild these classes/functions (``torch.serialization.add_safe_globals``)."""
    for g in safe_globals:
        if isinstance(g, tuple):            # (obj, "module.Name") as PyTorch accepts
            obj, name = g
        else:
            obj, name = g, _global_name(g)
        _safe_globals[name] = obj


def get_safe_globals():
    return list(_safe_globals.values())


def clear_safe_globals():
    _safe_globals.clear()


@contextlib.contextmanager
def safe_globals(safe_globals):
    """``with gradc.serialization.safe_globals([Cls]): gradc.load(...)``: allowed only inside the block."""
    saved = dict(_safe_globals)
    add_safe_globals(safe_globals)
    try:
        yield
    finally:
        _safe_globals.clear()
        _safe_globals.update(saved)


# ---- saving ------------------------------------------------------------------------------------
def _ptr(a) -> int:
    return a.__array_interface__["data"][0]


def _bounds(a):
    """[lo, hi): the bytes a NumPy array's elements span."""
    lo = hi = _ptr(a)
    if a.size == 0:
        return lo, lo
    for n, s in zip(a.shape, a.strides):
        if s < 0:
            lo += (n - 1) * s
        else:
            hi += (n - 1) * s
    return lo, hi + a.itemsize


def _root(a):
    """The NumPy array that owns (or first wraps) ``a``'s memory: views of one another share it."""
    while True:
        b = a.base
        if isinstance(b, np.ndarray):
            a = b
        elif isinstance(getattr(b, "base", None), np.ndarray) and hasattr(b, "__array_interface__"):
            a = b.base                     # as_strided's DummyArray
        else:
            return a


class _StorageRef:
    __slots__ = ("key",)

    def __init__(self, key):
        self.key = key


class _SavedStorage:
    """One storage being saved: the memory it covers (addresses [lo, hi)) and what keeps it alive."""

    def __init__(self, key, location, anchor, keep, device_array=None):
        self.key, self.location, self.lo, self.hi, self.keep = key, location, anchor, anchor, keep
        self.anchor = anchor            # offsets in the file count from here (not an address)
        self.device_array = device_array

    def cover(self, lo, hi):
        if hi > lo:
            if self.hi <= self.lo:
                self.lo, self.hi = lo, hi
            else:
                self.lo, self.hi = min(self.lo, lo), max(self.hi, hi)

    def data(self) -> bytes:
        n = self.hi - self.lo
        if n <= 0:
            return b""
        if self.device_array is not None:        # a CUDA buffer: its bytes [lo, hi) copied to the host
            from .codegen.cuda_driver import DeviceArray
            d = self.device_array
            return DeviceArray(d.driver, d.buffer, (n,), np.uint8, self.lo).get().tobytes()
        return ctypes.string_at(self.lo, n)


class _Storages:
    """The storages a save writes: each distinct block of memory the saved tensors live in, found
    by what owns the memory, and the bytes [lo, hi) of it that they (and their bases) cover."""

    def __init__(self):
        self.by_memory = {}        # identity of the memory -> _SavedStorage
        self.order = []

    def new(self, ident, location, anchor, keep, device_array=None):
        s = _SavedStorage(len(self.order), location, anchor, keep, device_array)
        self.order.append(s)
        if ident is not None:
            self.by_memory[ident] = s
        return s

    def tensor_args(self, t):
        """(storage, byte position from its anchor, byte strides, writeable) of tensor ``t``."""
        from .codegen.cuda_driver import DeviceArray
        data = t._data
        base = t._base
        if isinstance(data, np.ndarray):
            if data.size == 0:
                s = self.new(None, "cpu", 0, data)
                return s, 0, data.strides, bool(data.flags.writeable)
            root = _root(data)
            s = self.by_memory.get(id(root))
            if s is None or s.keep is not root:
                s = self.new(id(root), "cpu", _bounds(root)[0], root)
            s.cover(*_bounds(data))
            if base is not None and isinstance(base._data, np.ndarray) and _root(base._data) is root:
                s.cover(*_bounds(base._data))
            origin = t._storage_origin if base is None else base._storage_origin
            if origin is not None and _root(origin) is root:
                s.cover(*_bounds(origin))
            return s, _ptr(data) - s.anchor, data.strides, bool(data.flags.writeable)
        # CUDA
        location = str(t.device)
        if isinstance(data, DeviceArray) and not t._device_copy_view:
            s = self.by_memory.get(("cuda", id(data.buffer)))
            if s is None or s.keep is not data.buffer:
                s = self.new(("cuda", id(data.buffer)), location, 0, data.buffer, data)
            s.cover(data.offset, data.offset + data.nbytes)
            if base is not None and isinstance(base._data, DeviceArray) and base._data.buffer is data.buffer:
                s.cover(base._data.offset, base._data.offset + base._data.nbytes)
            return s, data.offset, data.strides, True
        return self.copy(t)

    def copy(self, t):
        """A contiguous host copy of ``t`` as its own storage (a copy gradc keeps on the GPU, or a
        tensor PyTorch's format cannot describe as a view)."""
        host = np.ascontiguousarray(t._host())
        s = self.new(None, str(t.device), _ptr(host), host)
        s.cover(*_bounds(host))
        return s, 0, host.strides, True


class _Pickler(pickle.Pickler):
    def __init__(self, file, protocol):
        super().__init__(file, protocol=protocol)
        self.storages = _Storages()

    def persistent_id(self, obj):
        if type(obj) is _StorageRef:
            return ("storage", obj.key)
        return None

    def reducer_override(self, obj):
        from .tensor import Tensor, device
        from .tensor_api import Size
        if isinstance(obj, Tensor):
            from .nn.parameter import Parameter
            s, position, strides, writeable = self.storages.tensor_args(obj)
            # the offset counts from the storage's anchor; load subtracts where the saved bytes start
            return (_rebuild_tensor_v2, (_StorageRef(s.key), position, tuple(obj.shape), tuple(strides),
                                         obj.dtype.name, bool(obj.requires_grad), isinstance(obj, Parameter),
                                         writeable))
        if type(obj) is device:
            return (_rebuild_device, (str(obj),))
        if type(obj) is Size:
            return (Size, (tuple(obj),))
        return NotImplemented


def _open_for_writing(f):
    name = os.fspath(f)
    parent = os.path.dirname(name)
    if parent and not os.path.isdir(parent):
        raise RuntimeError(f"Parent directory {parent} does not exist.")
    return open(name, "wb")


def save(obj, f, pickle_module=pickle, pickle_protocol=DEFAULT_PROTOCOL, _use_new_zipfile_serialization=True):
    """Write ``obj`` to ``f`` (a path or a binary file object), as ``torch.save``: in PyTorch's zip
    format, which ``torch.load`` reads; ``_use_new_zipfile_serialization=False`` writes gradc's own
    format instead (version 2, which only gradc reads; several of them can follow one another in a stream)."""
    if isinstance(f, (str, os.PathLike)):
        with _open_for_writing(f) as stream:
            _save_stream(obj, stream, pickle_protocol, _use_new_zipfile_serialization, _torch_format.archive_name(f))
        return
    _save_stream(obj, f, pickle_protocol, _use_new_zipfile_serialization, _torch_format.archive_name(f))


def _save_stream(obj, stream, protocol, zip_format, archive_name):
    body = io.BytesIO()
    pickler = _Pickler(body, protocol)
    pickler.dump(obj)          # for the zip format, a first pass: which bytes of each storage the tensors need
    if zip_format:
        body = io.BytesIO()
        torch_pickler = _torch_format.TorchPickler(body, protocol, pickler.storages)
        torch_pickler.dump(obj)
        _torch_format.write_zip(stream, archive_name, body.getvalue(), torch_pickler.refs.values())
        return
    # (location, bytes, where the bytes start relative to the offsets the tensors were given)
    header = (_MAGIC, _VERSION, [(s.location, s.hi - s.lo, s.lo - s.anchor) for s in pickler.storages.order])
    _write(stream, header, pickler.storages.order, body)


def _write(stream, header, storages, body):
    pickle.dump(header, stream, protocol=2)
    for s in storages:
        stream.write(s.data())
    stream.write(body.getbuffer())


# ---- loading -----------------------------------------------------------------------------------
def _is_weights_only_error(e) -> bool:
    return isinstance(e, pickle.UnpicklingError) and str(e).startswith("Weights only load failed.")


def _weights_only_error(module, name):
    full = name if module == "builtins" else f"{module}.{name}"
    return pickle.UnpicklingError(         # the type PyTorch raises
        "Weights only load failed. This file can still be loaded, to do so you have two options, "
        "\033[1mdo those steps only if you trust the source of the checkpoint\033[0m. "
        f"\n\t(1) {_UNSAFE_MESSAGE}\n\t(2) Alternatively, to load with `weights_only=True` please check the "
        "recommended steps in the following error message.\n\tWeightsUnpickler error: "
        f"Unsupported global: GLOBAL {full} was not an allowed global by default. Please use "
        f"`gradc.serialization.add_safe_globals([{full}])` or the `gradc.serialization.safe_globals([{full}])` "
        "context manager to allowlist this global if you trust this class/function.\n\n"
        "gradc.load with weights_only=True reads tensors, nn.Parameter, dtypes, devices, gradc.Size, dicts, "
        "OrderedDicts, lists, tuples, sets and plain values.")


class _LoadedStorage:
    """A storage as it loads: its bytes on the host, where it goes, and its tensors' shared version counter."""

    def __init__(self, host, start, target):
        from .tensor import new_counter
        self.host, self.start, self.target = host, start, target
        self.device_array = None          # the bytes uploaded, for a CUDA target
        self.counter = new_counter()


class _Unpickler(pickle.Unpickler):
    """Unpickles gradc's format (``storages``: the list of its storages) or PyTorch's zip format
    (``zip_storages``: a ``_torch_format.ZipStorages``); torch's names map onto gradc's functions."""

    def __init__(self, stream, storages, weights_only, allow_v1=False, zip_storages=None):
        super().__init__(stream)
        self._storages, self._weights_only, self._allow_v1 = storages, weights_only, allow_v1
        self._zip_storages = zip_storages
        self.missing_dtypes = []          # torch dtypes the file names that gradc does not have

    def find_class(self, module, name):
        if module == "__builtin__":          # protocol 2 (torch.save's) names builtins as Python 2 did
            module = "builtins"
        gradc_obj = _torch_format.torch_global(module, name)
        if isinstance(gradc_obj, _torch_format.MissingDtype):
            self.missing_dtypes.append(name)
        if gradc_obj is not None:
            return gradc_obj
        if module == "torch._utils" and name.startswith("_rebuild_"):
            raise pickle.UnpicklingError(f"gradc.load: the file holds a tensor that gradc cannot represent "
                                         f"({module}.{name}: sparse, quantized, nested or meta tensors)")
        if self._weights_only:
            full = f"{module}.{name}"
            if full in _safe_globals:
                return _safe_globals[full]
            if not ((module, name) in _ALLOWED or self._allow_v1 and (
                    (module, name) in _V1_ALLOWED or module.split(".")[0] == "numpy" and name in _NUMPY_ALLOWED)):
                raise _weights_only_error(module, name)
        if module.split(".")[0] == "torch":
            raise pickle.UnpicklingError(
                f"gradc.load: the file needs PyTorch's {module}.{name}, which gradc does not provide (a whole "
                "torch.nn.Module saved with torch.save? Save its state_dict() instead)")
        return super().find_class(module, name)

    def persistent_load(self, pid):
        if (isinstance(pid, tuple) and len(pid) == 5 and pid[0] == "storage"
                and self._zip_storages is not None):
            return self._zip_storages.storage(*pid[1:])
        if (isinstance(pid, tuple) and len(pid) == 2 and pid[0] == "storage" and self._storages is not None
                and isinstance(pid[1], int) and 0 <= pid[1] < len(self._storages)):
            return self._storages[pid[1]]
        raise pickle.UnpicklingError(f"gradc.load: unknown persistent id {pid!r}")


def _check_cuda_target(dev):
    from .cuda import is_available
    if dev.type == "cuda" and not is_available():
        raise RuntimeError(_CUDA_UNAVAILABLE)


def _target(location, map_location, host):
    """Where a storage saved at ``location`` goes: (device, or None for the CPU; a mapped tensor or None)."""
    from .tensor import Tensor, device
    if callable(map_location) and not isinstance(map_location, (str, device, dict)):
        mapped = map_location(Tensor._wrap(host), location)
        if mapped is not None:
            if not isinstance(mapped, Tensor):
                raise TypeError(f"gradc.load: map_location returned {type(mapped).__name__}; expected the storage "
                                "(a gradc tensor) it was given, or a copy of it on another device, or None")
            return mapped.device, mapped
        map_location = None
    if map_location is None:
        dev = device(location)
    elif isinstance(map_location, dict):
        dev = device(map_location.get(location, location))
    elif isinstance(map_location, (str, device)):
        dev = device(map_location)
    else:
        raise TypeError(f"gradc.load: map_location should be a str, a device, a dict or a callable, not "
                        f"{type(map_location).__name__}")
    _check_cuda_target(dev)
    return dev, None


def _rebuild_tensor_v2(storage, position, shape, strides, dtype, requires_grad, parameter, writeable):
    from . import dtypes
    if not isinstance(storage, _LoadedStorage):
        raise pickle.UnpicklingError("gradc.load: a tensor without its storage (corrupt file?)")
    offset = position - storage.start if storage.host.size else 0
    t = _tensor_on(storage, offset, shape, strides, dtypes.from_name(dtype), writeable)
    return _as_parameter(t, requires_grad) if parameter else _with_requires_grad(t, requires_grad)


def _tensor_on(storage, offset, shape, strides, dt, writeable=True):
    """A tensor of dtype ``dt`` viewing a loaded storage's bytes from ``offset`` with byte ``strides``."""
    from .tensor import Tensor
    try:
        array = np.ndarray(tuple(shape), dt.np, buffer=storage.host, offset=offset, strides=tuple(strides))
    except (TypeError, ValueError) as e:
        raise pickle.UnpicklingError(f"gradc.load: a tensor does not fit its storage (corrupt file?): {e}") from None
    if storage.target is not None and storage.target.type == "cuda":
        t = Tensor(_device_data(storage, array, offset, dt))
    else:
        if not writeable:
            array.flags.writeable = False
        t = Tensor._wrap(array)
        t._storage_origin = storage.host
    t._version_counter = storage.counter
    return t


def _with_requires_grad(t, requires_grad):
    if requires_grad:
        t.requires_grad_(True)
    return t


def _as_parameter(t, requires_grad):
    """``nn.Parameter`` on a loaded tensor's memory (its storage and version counter kept)."""
    from .nn.parameter import Parameter
    p = Parameter(t, requires_grad=requires_grad)
    p._version_counter, p._storage_origin = t._version_counter, t._storage_origin
    return p


def _device_data(storage, array, offset, dt):
    """``array`` (a view of the storage's host bytes) on the GPU: a view of the uploaded storage when
    it is contiguous, else a copy (gradc's device arrays are contiguous)."""
    from .codegen.cuda_driver import DeviceArray
    from .cuda import require_cuda
    drv = require_cuda()
    if storage.device_array is None:
        mapped = storage.mapped
        if mapped is not None and isinstance(mapped._data, DeviceArray) and mapped._data.dtype == np.uint8:
            storage.device_array = mapped._data
        else:
            storage.device_array = drv.to_device(storage.host)
    if array.size == 0 or array.flags.c_contiguous:
        d = storage.device_array
        return DeviceArray(d.driver, d.buffer, array.shape, dt.np, d.offset + offset)
    return drv.to_device(np.ascontiguousarray(array))


def _loaded_storage(host, start, location, map_location):
    """A storage's bytes (``host``, saved at ``location``) where ``map_location`` puts them."""
    dev, mapped = _target(location, map_location, host)
    if mapped is not None and mapped.device.type == "cpu":
        host = np.ascontiguousarray(mapped._data).view(np.uint8).reshape(-1)
    s = _LoadedStorage(host, start, dev)
    s.mapped = mapped
    return s


def _rebuild_device(spec):
    from .tensor import device
    return device(spec)


def _rebuild_tensor(array, requires_grad, device, parameter):
    """Version 1 files' tensors (a NumPy copy each)."""
    from .tensor import Tensor
    if parameter:
        from .nn.parameter import Parameter
        t = Parameter(array, requires_grad=requires_grad)
    else:
        t = Tensor(array, requires_grad=requires_grad)
    return t._to_device(device) if device != "cpu" else t


def load(f, map_location=None, pickle_module=None, *, weights_only=True, mmap=None, upcast_bfloat16=False,
         **pickle_load_args):
    """Read what ``save`` or ``torch.save`` wrote to ``f`` (a path or a binary file object), as
    ``torch.load``. gradc has no bfloat16: a bfloat16 tensor in a file raises, naming where it is,
    unless ``upcast_bfloat16=True``, which loads bfloat16 storages as float32 (exactly: bfloat16's
    bits are float32's upper half)."""
    if isinstance(f, (str, os.PathLike)):
        with open(f, "rb") as stream:
            return _load_stream(stream, map_location, weights_only, upcast_bfloat16)
    return _load_stream(f, map_location, weights_only, upcast_bfloat16)


def _load_zip(stream, map_location, weights_only, upcast_bfloat16):
    """PyTorch's zip format: data.pkl unpickled, its storages read from data/<key> as they are named."""
    archive, prefix = _torch_format.open_archive(stream)
    with archive:
        storages = _torch_format.ZipStorages(archive, prefix, map_location, upcast_bfloat16)
        try:
            with archive.open(prefix + "data.pkl") as pkl:
                unpickler = _Unpickler(pkl, None, weights_only, zip_storages=storages)
                obj = unpickler.load()
        except (zipfile.BadZipFile, EOFError) as e:
            raise _torch_format.corrupt_zip(f"{type(e).__name__}: {e}") from None
    flagged = storages.unsupported + unpickler.missing_dtypes
    if flagged:
        _torch_format.check_supported(obj, ", ".join(sorted(set(flagged))))
    storages.check_claimed()
    return obj


def _not_gradc(detail=""):
    return RuntimeError("gradc.load: not a file written by gradc.save or torch.save"
                        + (f" ({detail})" if detail else "") + "; corrupt file?")


def _load_stream(stream, map_location, weights_only, upcast_bfloat16):
    seekable = getattr(stream, "seekable", lambda: False)()
    start = stream.tell() if seekable else None
    head = stream.read(2)
    if seekable:      # read the stream itself: it ends right after what save wrote (the next save's bytes follow)
        stream.seek(start)
    else:
        stream = io.BufferedReader(_Rewound(head, stream))
    if head == b"PK":
        return _load_zip(stream, map_location, weights_only, upcast_bfloat16)
    try:        # version 2's header, or a whole version 1 file
        payload = _Unpickler(stream, None, weights_only, allow_v1=True).load()
    except Exception as e:      # a file that is not a pickle fails in many ways
        if _is_weights_only_error(e):
            raise
        raise _not_gradc(f"{type(e).__name__}: {e}") from None
    if payload == _TORCH_LEGACY_MAGIC:
        raise RuntimeError("gradc.load: this file is in PyTorch's legacy format (torch.save with "
                           "_use_new_zipfile_serialization=False, or PyTorch before 1.6), which gradc does not read; "
                           "re-save it with torch.save's default (zip) format")
    if not (isinstance(payload, tuple) and len(payload) == 3 and payload[0] == _MAGIC
            and isinstance(payload[1], int)):
        raise _not_gradc()
    version = payload[1]
    if version == 1:
        return payload[2]
    if version > _VERSION:
        raise RuntimeError(f"gradc.load: the file is format version {version}; this gradc reads up to {_VERSION}")
    storages = []
    for location, nbytes, start in payload[2]:
        host = np.empty(nbytes, np.uint8)
        if nbytes and _read_into(stream, memoryview(host)) != nbytes:
            raise _not_gradc("the file ends inside a storage")
        storages.append(_loaded_storage(host, start, location, map_location))
    try:
        return _Unpickler(stream, storages, weights_only).load()
    except EOFError:
        raise _not_gradc("the file ends early") from None
    except pickle.UnpicklingError as e:
        if _is_weights_only_error(e):
            raise
        raise _not_gradc(str(e)) from None


def _read_into(stream, view):
    """Fill ``view`` from ``stream`` (file objects may return less per call); the bytes read."""
    done = 0
    readinto = getattr(stream, "readinto", None)
    while done < len(view):
        if readinto is not None:
            n = readinto(view[done:])
        else:
            chunk = stream.read(len(view) - done)
            n = len(chunk)
            view[done:done + n] = chunk
        if not n:
            break
        done += n
    return done


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
