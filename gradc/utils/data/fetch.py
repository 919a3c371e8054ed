"""Fetchers (``torch.utils.data._utils.fetch``): one batch (or sample) of a dataset for a key or a
list of keys, collated. The main process uses one when ``num_workers=0``, each worker process its
own copy otherwise.

A map-style fetcher indexes the dataset (``__getitems__`` when it has one); an iterable fetcher
takes the next samples of the dataset's iterator and raises ``StopIteration`` at its end (a
short last batch unless ``drop_last``), as PyTorch's.
"""
from __future__ import annotations

from ... import dtypes
from ...factories import tensor
from ...tensor import Tensor
from . import collate as _collate
from .dataset import TensorDataset


def _plain_tensor_dataset(dataset) -> bool:
    """A TensorDataset itself (not a subclass, which may override indexing) of CPU tensors that
    do not require grad (stacking would record StackBackward0, gathering IndexBackward0)."""
    return type(dataset) is TensorDataset and all(
        isinstance(t, Tensor) and not t.requires_grad and t.device.type == "cpu" for t in dataset.tensors)


class _BaseDatasetFetcher:
    """A dataset and how to make its batches."""

    def __init__(self, dataset, auto_collation: bool, collate_fn, drop_last: bool) -> None:
        self.dataset = dataset
        self.auto_collation = auto_collation
        self.collate_fn = collate_fn
        self.drop_last = drop_last

    def fetch(self, index):
        raise NotImplementedError


class _MapDatasetFetcher(_BaseDatasetFetcher):
    """``collate_fn`` of ``dataset[key]`` (or of the samples of a list of keys)."""

    def fetch(self, index):
        if not self.auto_collation:
            return self.collate_fn(self.dataset[index])
        if self.collate_fn is _collate.default_collate and _plain_tensor_dataset(self.dataset):
            # default_collate of TensorDataset rows is each tensor's rows stacked: the rows
            # gathered in one indexing op (the same values and dtypes, a new contiguous tensor),
            # not one op per sample and per tensor
            rows = tensor(list(index), dtype=dtypes.int64)
            return [t[rows] for t in self.dataset.tensors]
        if getattr(self.dataset, "__getitems__", None):
            return self.collate_fn(self.dataset.__getitems__(index))
        return self.collate_fn([self.dataset[i] for i in index])


class _IterableDatasetFetcher(_BaseDatasetFetcher):
    """``collate_fn`` of the next sample (or the next ``len(index)`` samples) of ``iter(dataset)``."""

    def __init__(self, dataset, auto_collation: bool, collate_fn, drop_last: bool) -> None:
        super().__init__(dataset, auto_collation, collate_fn, drop_last)
        self.dataset_iter = iter(dataset)
        self.ended = False

    def fetch(self, index):
        if self.ended:
            raise StopIteration
        if not self.auto_collation:
            return self.collate_fn(next(self.dataset_iter))
        data = []
        for _ in index:
            try:
                data.append(next(self.dataset_iter))
            except StopIteration:
                self.ended = True
                break
        if len(data) == 0 or (self.drop_last and len(data) < len(index)):
            raise StopIteration
        return self.collate_fn(data)


def create_fetcher(is_iterable: bool, dataset, auto_collation: bool, collate_fn, drop_last: bool):
    """The fetcher for ``dataset`` (PyTorch's ``_DatasetKind.create_fetcher``)."""
    kind = _IterableDatasetFetcher if is_iterable else _MapDatasetFetcher
    return kind(dataset, auto_collation, collate_fn, drop_last)
