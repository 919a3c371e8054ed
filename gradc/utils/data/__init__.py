"""``torch.utils.data``: datasets, samplers, collation and the ``DataLoader``.

``dataset.py`` holds the datasets and ``random_split``, ``sampler.py`` the samplers,
``collate.py`` ``default_collate``/``default_convert``, ``dataloader.py`` the ``DataLoader`` and
its iterators, ``fetch.py`` the fetchers that make a batch (in the main process or in a worker),
``worker.py`` the worker processes' loop and ``get_worker_info``.
"""
from .collate import default_collate, default_convert
from .dataloader import DataLoader, get_worker_info
from .dataset import (ChainDataset, ConcatDataset, Dataset, IterableDataset, StackDataset, Subset, TensorDataset,
                      random_split)
from .sampler import (BatchSampler, RandomSampler, Sampler, SequentialSampler, SubsetRandomSampler,
                      WeightedRandomSampler)

__all__ = ["BatchSampler", "ChainDataset", "ConcatDataset", "DataLoader", "Dataset", "IterableDataset",
           "RandomSampler", "Sampler", "SequentialSampler", "StackDataset", "Subset", "SubsetRandomSampler",
           "TensorDataset", "WeightedRandomSampler", "default_collate", "default_convert", "get_worker_info",
           "random_split"]
