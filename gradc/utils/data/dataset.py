"""Datasets (``torch.utils.data.dataset``): the map-style ``Dataset`` and stream ``IterableDataset``
bases, ``TensorDataset``, ``StackDataset``, ``ConcatDataset``, ``ChainDataset``, ``Subset`` and
``random_split``, with PyTorch's behaviour and errors.

``random_split`` permutes with gradc's generator (``randperm``), whose numbers are PyTorch's: the
same seed gives PyTorch's split.
"""
from __future__ import annotations

import bisect
import itertools
import math
from collections.abc import Iterable
from typing import Generic, TypeVar

from ..._warnings import warn_at_user_code
from ...random_state import default_generator

__all__ = ["Dataset", "IterableDataset", "TensorDataset", "StackDataset", "ConcatDataset", "ChainDataset",
           "Subset", "random_split"]

_T_co = TypeVar("_T_co", covariant=True)


class Dataset(Generic[_T_co]):
    """A map from keys to samples: subclasses define ``__getitem__`` (and usually ``__len__``;
    optionally ``__getitems__`` to fetch a batch of keys at once)."""

    def __getitem__(self, index):
        raise NotImplementedError("Subclasses of Dataset should implement __getitem__.")

    def __add__(self, other):
        return ConcatDataset([self, other])


class IterableDataset(Dataset[_T_co], Iterable[_T_co]):
    """A stream of samples: subclasses define ``__iter__`` (an abstract method, as in PyTorch)."""

    def __add__(self, other):
        return ChainDataset([self, other])


class TensorDataset(Dataset):
    """Samples are the tensors indexed along their first dimension (which they must share)."""

    def __init__(self, *tensors) -> None:
        if any(tensors[0].size(0) != tensor.size(0) for tensor in tensors):
            raise AssertionError("Size mismatch between tensors")
        self.tensors = tensors

    def __getitem__(self, index):
        return tuple(tensor[index] for tensor in self.tensors)

    def __len__(self) -> int:
        return self.tensors[0].size(0)


def _check_same_lengths(datasets) -> int:
    length = len(datasets[0])
    if any(length != len(dataset) for dataset in datasets):
        raise ValueError("Size mismatch between datasets")
    return length


def _items_of(dataset, indices) -> list:
    """``dataset``'s samples at ``indices``, through its ``__getitems__`` when it has one."""
    if callable(getattr(dataset, "__getitems__", None)):
        items = dataset.__getitems__(indices)
        if len(items) != len(indices):
            raise ValueError(f"Nested dataset's output size mismatch. Expected {len(indices)}, got {len(items)}")
        return items
    return [dataset[idx] for idx in indices]


class StackDataset(Dataset):
    """Samples are tuples (positional datasets) or dicts (keyword datasets) of the datasets' samples."""

    def __init__(self, *args, **kwargs) -> None:
        if args and kwargs:
            raise ValueError("Supported either ``tuple``- (via ``args``) or``dict``- (via ``kwargs``) like "
                             "input/output, but both types are given.")
        if not args and not kwargs:
            raise ValueError("At least one dataset should be passed")
        self._length = _check_same_lengths(args or list(kwargs.values()))
        self.datasets = args or kwargs

    def __getitem__(self, index):
        if isinstance(self.datasets, dict):
            return {k: dataset[index] for k, dataset in self.datasets.items()}
        return tuple(dataset[index] for dataset in self.datasets)

    def __getitems__(self, indices: list):
        if isinstance(self.datasets, dict):
            columns = {k: _items_of(dataset, indices) for k, dataset in self.datasets.items()}
            return [{k: column[i] for k, column in columns.items()} for i in range(len(indices))]
        columns = [_items_of(dataset, indices) for dataset in self.datasets]
        return [tuple(column[i] for column in columns) for i in range(len(indices))]

    def __len__(self) -> int:
        return self._length


class ConcatDataset(Dataset):
    """The datasets one after the other (``cumulative_sizes`` holds the running lengths)."""

    @staticmethod
    def cumsum(sequence):
        return list(itertools.accumulate(len(e) for e in sequence))

    def __init__(self, datasets) -> None:
        self.datasets = list(datasets)
        if len(self.datasets) == 0:
            raise AssertionError("datasets should not be an empty iterable")
        for d in self.datasets:
            if isinstance(d, IterableDataset):
                raise AssertionError("ConcatDataset does not support IterableDataset")
        self.cumulative_sizes = self.cumsum(self.datasets)

    def __len__(self) -> int:
        return self.cumulative_sizes[-1]

    def __getitem__(self, idx):
        if idx < 0:
            if -idx > len(self):
                raise ValueError("absolute value of index should not exceed dataset length")
            idx = len(self) + idx
        dataset_idx = bisect.bisect_right(self.cumulative_sizes, idx)
        sample_idx = idx if dataset_idx == 0 else idx - self.cumulative_sizes[dataset_idx - 1]
        return self.datasets[dataset_idx][sample_idx]

    @property
    def cummulative_sizes(self):
        warn_at_user_code("`cummulative_sizes` attribute is renamed to `cumulative_sizes`", FutureWarning)
        return self.cumulative_sizes


class ChainDataset(IterableDataset):
    """The iterable datasets' streams one after the other."""

    def __init__(self, datasets) -> None:
        self.datasets = datasets

    def __iter__(self):
        for d in self.datasets:
            _require_iterable(d)
            yield from d

    def __len__(self) -> int:
        total = 0
        for d in self.datasets:
            _require_iterable(d)
            total += len(d)
        return total


def _require_iterable(dataset) -> None:
    if not isinstance(dataset, IterableDataset):
        raise AssertionError("ChainDataset only supports IterableDataset")


class Subset(Dataset):
    """The samples of ``dataset`` at ``indices``."""

    def __init__(self, dataset, indices) -> None:
        self.dataset = dataset
        self.indices = indices
        if type(self).__getitem__ is not Subset.__getitem__ and type(self).__getitems__ is Subset.__getitems__:
            raise NotImplementedError(
                f"{type(self).__name__} overrides __getitem__ but not __getitems__. "
                "When subclassing Subset and overriding __getitem__, you must also override "
                "__getitems__ to ensure DataLoader works correctly with your custom logic. "
                "A simple implementation:\n\n"
                "def __getitems__(self, indices):\n"
                "    return [self.__getitem__(idx) for idx in indices]")

    def __getitem__(self, idx):
        if isinstance(idx, list):
            return self.dataset[[self.indices[i] for i in idx]]
        return self.dataset[self.indices[idx]]

    def __getitems__(self, indices: list) -> list:
        if callable(getattr(self.dataset, "__getitems__", None)):
            return self.dataset.__getitems__([self.indices[idx] for idx in indices])
        return [self.dataset[self.indices[idx]] for idx in indices]

    def __len__(self) -> int:
        return len(self.indices)


def _lengths_of_fractions(n: int, fractions) -> list:
    """Split sizes for fractions of ``n`` samples: floors, the remainder handed out round-robin."""
    lengths = []
    for i, frac in enumerate(fractions):
        if frac < 0 or frac > 1:
            raise ValueError(f"Fraction at index {i} is not between 0 and 1")
        lengths.append(math.floor(n * frac))
    for i in range(n - sum(lengths)):
        lengths[i % len(lengths)] += 1
    for i, length in enumerate(lengths):
        if length == 0:
            warn_at_user_code(f"Length of split at index {i} is 0. This might result in an empty dataset.")
    return lengths


def random_split(dataset, lengths, generator=default_generator) -> list:
    """Split ``dataset`` at random into non-overlapping ``Subset``s of the given lengths (counts, or
    fractions summing to 1)."""
    from ...factories import randperm
    if math.isclose(sum(lengths), 1) and sum(lengths) <= 1:
        lengths = _lengths_of_fractions(len(dataset), lengths)
    if sum(lengths) != len(dataset):
        raise ValueError("Sum of input lengths does not equal the length of the input dataset!")
    indices = randperm(sum(lengths), generator=generator).tolist()
    return [Subset(dataset, indices[offset - length:offset])
            for offset, length in zip(itertools.accumulate(lengths), lengths)]
