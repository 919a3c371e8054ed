"""Storages: ``Tensor.untyped_storage()`` (an ``UntypedStorage``, the bytes of the memory a CPU
tensor views) and ``Tensor.storage()`` (a deprecated ``TypedStorage``, the same memory as
elements of the tensor's dtype), and ``Tensor.set_`` / ``Tensor.as_strided_``, which make a tensor
view a storage.

A storage is the whole NumPy allocation behind a tensor (the root of the array's ``base`` chain),
so it shares memory both ways with every tensor over it: ``data_ptr()`` is the allocation's
start, ``nbytes()`` its size, and a tensor's ``storage_offset()`` counts elements from there.
gradc's storages cannot be resized, and CUDA tensors have none (their memory is not NumPy's).
"""
from __future__ import annotations

import warnings

import numpy as np

from . import dtypes

_TYPED_STORAGE_WARNING = (
    "TypedStorage is deprecated. It will be removed in the future and UntypedStorage will be the only storage "
    "class. This should only matter to you if you are using storages directly.  To access UntypedStorage "
    "directly, use tensor.untyped_storage() instead of tensor.storage()")

# ATen's C type names in set_'s dtype error ("Could not set tensor of type float to ...")
_C_TYPE_NAMES = {"float32": "float", "float64": "double", "float16": "c10::Half", "int64": "long int",
                 "int32": "int", "int16": "short int", "int8": "signed char", "uint8": "unsigned char", "bool": "bool"}


def root_array(data: np.ndarray) -> np.ndarray:
    """The array that owns ``data``'s memory: the end of its chain of NumPy bases (through the
    interface object ``np.lib.stride_tricks.as_strided`` puts between a strided view and its base)."""
    while True:
        base = data.base
        if not isinstance(base, np.ndarray):
            base = getattr(base, "base", None)          # (as_strided's DummyArray)
        if not isinstance(base, np.ndarray):
            return data
        data = base


def _bytes_of(root: np.ndarray) -> np.ndarray:
    """A 1-D uint8 view of all of ``root``'s memory."""
    if not (root.flags.c_contiguous or root.flags.f_contiguous):
        raise RuntimeError("gradc: this tensor's memory is not one contiguous block, it has no storage")
    order = "C" if root.flags.c_contiguous else "F"
    return root.reshape(-1, order=order).view(np.uint8)


class UntypedStorage:
    """The bytes of a CPU tensor's memory, shared with it."""

    def __init__(self, data: np.ndarray):
        self._bytes = data

    @classmethod
    def _of(cls, tensor) -> "UntypedStorage":
        data = tensor._data
        if not isinstance(data, np.ndarray):
            raise RuntimeError("gradc: a CUDA tensor has no storage gradc can show (its memory is not NumPy's)")
        return cls(_bytes_of(root_array(data)))

    device = property(lambda self: __import__("gradc").device("cpu"))
    dtype = property(lambda self: dtypes.uint8)
    is_cuda = property(lambda self: False)

    def nbytes(self) -> int:
        return int(self._bytes.size)

    def size(self) -> int:
        return self.nbytes()

    def __len__(self) -> int:
        return self.nbytes()

    def element_size(self) -> int:
        return 1

    def data_ptr(self) -> int:
        return self._bytes.__array_interface__["data"][0]

    def tolist(self) -> list:
        return self._bytes.tolist()

    def __getitem__(self, index):
        if isinstance(index, slice):
            return UntypedStorage(self._bytes[index])
        return int(self._bytes[index])

    def __setitem__(self, index, value):
        self._bytes[index] = value

    def fill_(self, value):
        self._bytes[...] = value
        return self

    def copy_(self, source, non_blocking=False):
        if source.nbytes() != self.nbytes():
            raise RuntimeError(f"size does not match, self was {self.nbytes()} bytes but src was {source.nbytes()} bytes")
        self._bytes[...] = source._bytes
        return self

    def clone(self) -> "UntypedStorage":
        return UntypedStorage(self._bytes.copy())

    def cpu(self) -> "UntypedStorage":
        return self

    def is_shared(self) -> bool:
        return False

    def resize_(self, size):
        raise RuntimeError("gradc: storages cannot be resized (a storage is a NumPy allocation)")

    def _typed(self, dtype) -> np.ndarray:
        """The storage as elements of ``dtype`` (whole elements from its start)."""
        n = self.nbytes() // dtype.itemsize
        return self._bytes[:n * dtype.itemsize].view(dtype.np)

    def __repr__(self):
        values = "\n".join(f" {v}" for v in self.tolist())
        return f"{values}\n[torch.storage.UntypedStorage(device=cpu) of size {self.nbytes()}]"


class TypedStorage:
    """``Tensor.storage()``: the tensor's memory as elements of its dtype (deprecated in PyTorch)."""

    def __init__(self, untyped: UntypedStorage, dtype):
        self._untyped_storage = untyped
        self.dtype = dtype

    device = property(lambda self: self._untyped_storage.device)
    is_cuda = property(lambda self: False)

    def untyped(self) -> UntypedStorage:
        return self._untyped_storage

    def _values(self) -> np.ndarray:
        return self._untyped_storage._typed(self.dtype)

    def size(self) -> int:
        return self._untyped_storage.nbytes() // self.dtype.itemsize

    def __len__(self) -> int:
        return self.size()

    def nbytes(self) -> int:
        return self._untyped_storage.nbytes()

    def element_size(self) -> int:
        return self.dtype.itemsize

    def data_ptr(self) -> int:
        return self._untyped_storage.data_ptr()

    def tolist(self) -> list:
        return self._values().tolist()

    def __getitem__(self, index):
        if isinstance(index, slice):
            raise RuntimeError("gradc: slicing a TypedStorage is not supported")
        return self._values()[index].item()

    def __setitem__(self, index, value):
        self._values()[index] = value

    def fill_(self, value):
        self._values()[...] = value
        return self

    def __repr__(self):
        values = "\n".join(f" {v}" for v in self.tolist())
        return f"{values}\n[torch.storage.TypedStorage(dtype={self.dtype}, device=cpu) of size {self.size()}]"


def untyped_storage(self) -> UntypedStorage:
    """``Tensor.untyped_storage()``: the bytes of this tensor's memory (shared with it)."""
    return UntypedStorage._of(self)


_warned = []


def storage(self) -> TypedStorage:
    """``Tensor.storage()``: the memory as elements of the tensor's dtype, with PyTorch's warning
    (once per process, as PyTorch's)."""
    if not _warned:
        _warned.append(True)
        warnings.warn(_TYPED_STORAGE_WARNING, UserWarning, stacklevel=2)
    return TypedStorage(UntypedStorage._of(self), self.dtype)


def check_storage_bounds(size, stride, offset, itemsize, storage_nbytes) -> None:
    """PyTorch's setStorage check: the largest element (offset + sum (n_k - 1) stride_k) must lie
    inside the storage (nothing is needed for an empty size)."""
    if any(n == 0 for n in size):
        return
    needed = (offset + sum(max(0, (n - 1) * st) for n, st in zip(size, stride)) + 1) * itemsize
    if needed > storage_nbytes:
        raise RuntimeError(f"setStorage: sizes {list(size)}, strides {list(stride)}, storage offset {offset}, and "
                           f"itemsize {itemsize} requiring a storage size of {needed} are out of bounds for storage of "
                           f"size {storage_nbytes}")


def _contiguous_strides(size) -> list:
    strides, step = [], 1
    for n in reversed(size):
        strides.append(step)
        step *= max(n, 1)
    return strides[::-1]


def _check_settable(self, dtype) -> None:
    from .autograd import grad_mode
    if self._requires_grad and self._grad_fn is None and grad_mode.is_grad_enabled():
        raise RuntimeError("a leaf Variable that requires grad is being used in an in-place operation.")
    if dtype is not self.dtype:
        raise RuntimeError(f"Could not set tensor of type {_C_TYPE_NAMES.get(dtype.name, dtype.name)} to a tensor of "
                           f"type {_C_TYPE_NAMES.get(self.dtype.name, self.dtype.name)}")


def _view_storage(self, store: UntypedStorage, offset, size, stride, would_grow=False) -> None:
    """Make ``self`` the view of ``store`` at ``offset`` with ``size`` and ``stride`` (elements).
    ``would_grow``: PyTorch would resize the storage to fit (set_ of a storage); gradc cannot."""
    itemsize = self.dtype.itemsize
    try:
        check_storage_bounds(size, stride, offset, itemsize, store.nbytes())
    except RuntimeError as error:
        if not would_grow:
            raise
        raise RuntimeError(f"gradc: set_ needs a larger storage than this one ({error}); PyTorch would resize the "
                           "storage, gradc's storages (NumPy allocations) cannot grow") from None
    typed = store._typed(self.dtype)
    start = typed[offset:] if offset < typed.size else typed[:0]
    self._data = np.lib.stride_tricks.as_strided(start, shape=tuple(size), strides=[st * itemsize for st in stride])
    self._storage_origin = typed
    self._base = None
    self._version_counter.value += 1


_SET_SIGNATURES = """ * ()
 * (torch.Storage source)
 * (torch.Storage source, int storage_offset, tuple of ints size, tuple of ints stride = None)
 * (Tensor source)
 * (Tensor source, int storage_offset, tuple of ints size, tuple of ints stride = None)
"""


def set_(self, source=None, storage_offset=None, size=None, stride=None):
    """``Tensor.set_()``: empty; ``set_(tensor)``: the same memory, offset, size and strides as
    ``tensor``; ``set_(storage, storage_offset, size, stride)``: a view of ``storage`` (1-D over
    all of it without a size, contiguous strides without a stride)."""
    from .tensor_api import is_tensor_like
    if source is None:
        _check_settable(self, self.dtype)
        self._data = np.empty(0, dtype=self.dtype.np)
        self._storage_origin = None
        self._base = None
        self._version_counter.value += 1
        return self
    if is_tensor_like(source):
        _check_settable(self, source.dtype)
        _view_storage(self, UntypedStorage._of(source), source.storage_offset(), tuple(source.shape), source.stride())
        return self
    if storage_offset is not None and size is None:
        kind = "torch.storage.UntypedStorage" if isinstance(source, UntypedStorage) else type(source).__name__
        raise TypeError(f"set_() received an invalid combination of arguments - got ({kind}, "
                        f"{type(storage_offset).__name__}), but expected one of:\n{_SET_SIGNATURES}")
    if isinstance(source, TypedStorage):
        if source.dtype is not self.dtype:
            raise RuntimeError(f"Expected a Storage of type {_C_TYPE_NAMES.get(self.dtype.name, self.dtype.name)} or an "
                               f"UntypedStorage, but got type {source.dtype.scalar_type} for argument 1 'storage'")
        _check_settable(self, source.dtype)
        source = source.untyped()
    elif isinstance(source, UntypedStorage):
        _check_settable(self, self.dtype)
    else:
        raise TypeError(f"set_() received an invalid combination of arguments - got ({type(source).__name__}, ...)")
    if size is None:
        size = (source.nbytes() // self.dtype.itemsize,)
    size = tuple(int(n) for n in size)
    stride = _contiguous_strides(size) if stride is None else [int(s) for s in stride]
    _view_storage(self, source, int(storage_offset or 0), size, stride, would_grow=True)
    return self


def is_set_to(self, tensor) -> bool:
    """Whether both tensors view the same memory with the same offset, sizes and strides."""
    return (isinstance(self._data, np.ndarray) and isinstance(tensor._data, np.ndarray)
            and self.data_ptr() == tensor.data_ptr() and self.shape == tensor.shape and self.stride() == tensor.stride()
            and self.dtype is tensor.dtype and root_array(self._data) is root_array(tensor._data))


def as_strided_(self, size, stride, storage_offset=None):
    """``Tensor.as_strided_``: this tensor becomes ``self.as_strided(size, stride, storage_offset)``,
    a view of its own storage (AsStridedBackward1 when it has history, as PyTorch names it)."""
    if self._grad_fn is not None or (self._requires_grad and self._base is not None):
        return self._restride_(lambda x: x.as_strided(size, stride, storage_offset), "AsStridedBackward1")
    offset = self.storage_offset() if storage_offset is None else int(storage_offset)
    _check_settable(self, self.dtype)
    _view_storage(self, UntypedStorage._of(self), offset, tuple(int(n) for n in size), [int(s) for s in stride])
    return self


def _install():
    """The storage methods of eager tensors (a traced tensor has no memory: the tracer refuses them)."""
    from .tensor import Tensor
    for fn in (untyped_storage, storage, set_, is_set_to, as_strided_):
        setattr(Tensor, fn.__name__, fn)


_install()
