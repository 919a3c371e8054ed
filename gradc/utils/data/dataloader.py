"""``DataLoader`` (``torch.utils.data.DataLoader``): batches of a dataset's samples, in the main
process.

The arguments, their defaults, the errors for combinations PyTorch refuses (``sampler`` with
``shuffle``, ``batch_sampler`` with ``batch_size``/``shuffle``/``sampler``/``drop_last``,
``batch_size=None`` with ``drop_last``, samplers for an ``IterableDataset``, ...) and ``len()`` are
PyTorch's. Two differences, both refused or announced rather than silently changed:

* ``num_workers > 0`` raises ``NotImplementedError``: PyTorch loads in worker processes (each with
  its own copy of the dataset, its own seed and ``get_worker_info()``), which changes what an
  ``IterableDataset`` or a random transform yields; gradc has no worker processes, and loading
  in the main process instead would not give the same batches.
* ``pin_memory=True`` does what PyTorch's CPU-only build does: warns when iterating that no
  accelerator is found and loads unpinned tensors (gradc has no pinned memory, so it does the
  same when a CUDA device is there, silently).
"""
from __future__ import annotations

import math

from ..._warnings import warn_at_user_code
from ... import dtypes
from ...factories import empty, tensor
from ...tensor import Tensor
from . import collate as _collate
from .dataset import IterableDataset, TensorDataset
from .sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler

__all__ = ["DataLoader", "get_worker_info"]

default_collate = _collate.default_collate      # PyTorch keeps these names in dataloader.py too
default_convert = _collate.default_convert

_FROZEN_ATTRIBUTES = ("batch_size", "batch_sampler", "sampler", "drop_last", "dataset", "persistent_workers")


def get_worker_info():
    """Information about the current loader worker process: always None, as in PyTorch's main
    process (gradc loads in the main process only)."""
    return None


class _InfiniteConstantSampler(Sampler):
    """``None`` forever: the sampler of an ``IterableDataset``, whose samples come from its iterator."""

    def __iter__(self):
        while True:
            yield None


def _check_worker_options(num_workers, timeout, prefetch_factor, persistent_workers, multiprocessing_context):
    if num_workers < 0:
        raise ValueError("num_workers option should be non-negative; use num_workers=0 to disable multiprocessing.")
    if timeout < 0:
        raise ValueError("timeout option should be non-negative")
    if num_workers == 0 and prefetch_factor is not None:
        raise ValueError("prefetch_factor option could only be specified in multiprocessing.let num_workers > 0 "
                         "to enable multiprocessing, otherwise set prefetch_factor to None.")
    if prefetch_factor is not None and prefetch_factor < 0:
        raise ValueError("prefetch_factor option should be non-negative")
    if persistent_workers and num_workers == 0:
        raise ValueError("persistent_workers option needs num_workers > 0")
    if multiprocessing_context is not None and num_workers == 0:
        raise ValueError("multiprocessing_context can only be used with multi-process loading (num_workers > 0), "
                         f"but got num_workers={num_workers}")


def _check_iterable_options(shuffle, sampler, batch_sampler):
    if shuffle not in {False, None}:
        raise ValueError(f"DataLoader with IterableDataset: expected unspecified shuffle option, but got "
                         f"shuffle={shuffle}")
    if sampler is not None:
        raise ValueError(f"DataLoader with IterableDataset: expected unspecified sampler option, but got "
                         f"sampler={sampler}")
    if batch_sampler is not None:
        raise ValueError("DataLoader with IterableDataset: expected unspecified batch_sampler option, but got "
                         f"batch_sampler={batch_sampler}")


class DataLoader:
    """Iterate over batches of ``dataset``: keys from ``sampler`` (or ``shuffle``), grouped by
    ``batch_size`` (or ``batch_sampler``), each batch made by ``collate_fn``."""

    __initialized = False

    def __init__(self, dataset, batch_size: int | None = 1, shuffle: bool | None = None, sampler=None,
                 batch_sampler=None, num_workers: int = 0, collate_fn=None, pin_memory: bool = False,
                 drop_last: bool = False, timeout: float = 0, worker_init_fn=None, multiprocessing_context=None,
                 generator=None, *, prefetch_factor: int | None = None, persistent_workers: bool = False,
                 pin_memory_device: str = "", in_order: bool = True) -> None:
        _check_worker_options(num_workers, timeout, prefetch_factor, persistent_workers, multiprocessing_context)
        self.dataset = dataset
        self.num_workers = num_workers
        self.prefetch_factor = prefetch_factor
        self.pin_memory = pin_memory
        self.pin_memory_device = pin_memory_device
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.multiprocessing_context = multiprocessing_context
        self.in_order = in_order
        self._is_iterable = isinstance(dataset, IterableDataset)
        if self._is_iterable:
            _check_iterable_options(shuffle, sampler, batch_sampler)
        else:
            shuffle = bool(shuffle)
        sampler, batch_sampler, batch_size, drop_last = self._samplers(
            dataset, batch_size, shuffle, sampler, batch_sampler, drop_last, generator)
        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self.generator = generator
        if collate_fn is None:
            collate_fn = _collate.default_collate if self._auto_collation else _collate.default_convert
        self.collate_fn = collate_fn
        self.persistent_workers = persistent_workers
        self._IterableDataset_len_called = None
        self.__initialized = True
        if num_workers > 0:
            raise NotImplementedError(
                f"gradc's DataLoader loads in the main process only: num_workers={num_workers} (worker processes) is "
                "not implemented; pass num_workers=0")

    def _samplers(self, dataset, batch_size, shuffle, sampler, batch_sampler, drop_last, generator):
        """The sampler and batch sampler the options ask for, after PyTorch's checks of their combinations."""
        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError("batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, "
                                 "and drop_last")
            batch_size, drop_last = None, False
        elif batch_size is None and drop_last:
            raise ValueError("batch_size=None option disables auto-batching and is mutually exclusive with drop_last")
        if sampler is None:
            if self._is_iterable:
                sampler = _InfiniteConstantSampler()
            elif shuffle:
                sampler = RandomSampler(dataset, generator=generator)
            else:
                sampler = SequentialSampler(dataset)
        if batch_size is not None and batch_sampler is None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)
        return sampler, batch_sampler, batch_size, drop_last

    def __setattr__(self, attr, val) -> None:
        if self.__initialized and attr in _FROZEN_ATTRIBUTES:
            raise ValueError(f"{attr} attribute should not be set after {self.__class__.__name__} is initialized")
        super().__setattr__(attr, val)

    @property
    def _auto_collation(self) -> bool:
        return self.batch_sampler is not None

    @property
    def _index_sampler(self):
        return self.batch_sampler if self._auto_collation else self.sampler

    def __iter__(self):
        return _SingleProcessDataLoaderIter(self)

    def __len__(self) -> int:
        if not self._is_iterable:
            return len(self._index_sampler)
        length = self._IterableDataset_len_called = len(self.dataset)
        if self.batch_size is not None:
            length = length // self.batch_size if self.drop_last else math.ceil(length / self.batch_size)
        return length


def _plain_tensor_dataset(dataset) -> bool:
    """A TensorDataset itself (not a subclass, which may override indexing) of CPU tensors that
    do not require grad (stacking would record StackBackward0, gathering IndexBackward0)."""
    return type(dataset) is TensorDataset and all(
        isinstance(t, Tensor) and not t.requires_grad and t.device.type == "cpu" for t in dataset.tensors)


class _SingleProcessDataLoaderIter:
    """One pass over a ``DataLoader``: fetch the samples for each key (or batch of keys) and collate them."""

    def __init__(self, loader: DataLoader) -> None:
        if loader.pin_memory:
            self._warn_pin_memory(loader)
        if loader.timeout != 0:
            raise AssertionError("_SingleProcessDataLoaderIter requires timeout == 0")
        self._loader = loader
        self._dataset = loader.dataset
        self._is_iterable = loader._is_iterable
        self._auto_collation = loader._auto_collation
        self._drop_last = loader.drop_last
        self._collate_fn = loader.collate_fn
        self._index_sampler = loader._index_sampler
        self._sampler_iter = iter(self._index_sampler)
        # PyTorch draws the workers' base seed (an int64 random_()) even without workers
        self._base_seed = int(empty((), dtype=dtypes.int64).random_(generator=loader.generator).item())
        self._dataset_iter = iter(self._dataset) if self._is_iterable else None
        self._ended = False
        self._num_yielded = 0

    @staticmethod
    def _warn_pin_memory(loader) -> None:
        from ... import cuda
        if loader.pin_memory_device:
            warn_at_user_code("pin_memory_device is deprecated, the current accelerator will be used as the device,"
                              f"ignore pin_memory_device='{loader.pin_memory_device}'.")
        if not cuda.is_available():
            warn_at_user_code("'pin_memory' argument is set as true but no accelerator is found, then device pinned "
                              "memory won't be used.")

    def __iter__(self):
        return self

    def __len__(self) -> int:
        return len(self._index_sampler)

    def __next__(self):
        index = next(self._sampler_iter)
        data = self._fetch_iterable(index) if self._is_iterable else self._fetch_map(index)
        self._num_yielded += 1
        self._check_reported_length()
        return data

    def _fetch_map(self, index):
        if not self._auto_collation:
            return self._collate_fn(self._dataset[index])
        if self._collate_fn is _collate.default_collate and _plain_tensor_dataset(self._dataset):
            # default_collate of TensorDataset rows is each tensor's rows stacked: the rows
            # gathered in one indexing op (the same values and dtypes, a new contiguous tensor),
            # not one op per sample and per tensor
            rows = tensor(list(index), dtype=dtypes.int64)
            return [t[rows] for t in self._dataset.tensors]
        if getattr(self._dataset, "__getitems__", None):
            return self._collate_fn(self._dataset.__getitems__(index))
        return self._collate_fn([self._dataset[i] for i in index])

    def _fetch_iterable(self, index):
        if self._ended:
            raise StopIteration
        if not self._auto_collation:
            return self._collate_fn(next(self._dataset_iter))
        data = []
        for _ in index:
            try:
                data.append(next(self._dataset_iter))
            except StopIteration:
                self._ended = True
                break
        if len(data) == 0 or (self._drop_last and len(data) < len(index)):
            raise StopIteration
        return self._collate_fn(data)

    def _check_reported_length(self) -> None:
        reported = self._loader._IterableDataset_len_called
        if self._is_iterable and reported is not None and self._num_yielded > reported:
            warn_at_user_code(f"Length of IterableDataset {self._dataset} was reported to be {reported}"
                              f"(when accessing len(dataloader)), but {self._num_yielded} samples have been fetched. ")
