"""Collation (``torch.utils.data._utils.collate``): ``default_collate`` stacks a list of samples
into a batch (tensors, NumPy arrays and numbers become tensors with a leading batch dimension;
strings stay lists; mappings, namedtuples and sequences are collated field by field, recursively);
``default_convert`` turns NumPy arrays in a sample into tensors without batching; ``collate`` is
the general function that takes a ``collate_fn_map`` from element types to collate functions.
"""
from __future__ import annotations

import collections.abc
import copy
import re

import numpy as np

from ... import factories, functional
from ...dtypes import float64
from ...tensor import Tensor
from ...tensor_api import stack

__all__ = ["collate", "default_collate", "default_collate_fn_map", "default_convert"]

np_str_obj_array_pattern = re.compile(r"[SaUO]")

default_collate_err_msg_format = ("default_collate: batch must contain tensors, numpy arrays, numbers, "
                                  "dicts or lists; found {}")


def _is_numpy_value(data) -> bool:
    """A NumPy array or scalar other than a string (what ``default_convert`` turns into a tensor)."""
    elem_type = type(data)
    return elem_type.__module__ == "numpy" and elem_type.__name__ not in ("str_", "string_")


def _rebuild_mapping(data, convert):
    """``data`` with ``convert(key)`` for each key's value, as its own mapping type when possible."""
    try:
        if isinstance(data, collections.abc.MutableMapping):
            clone = copy.copy(data)
            clone.update({key: convert(key) for key in data})
            return clone
        return type(data)({key: convert(key) for key in data})
    except TypeError:
        return {key: convert(key) for key in data}


def _rebuild_sequence(data, values):
    """``values`` in the sequence type of ``data`` when it can be rebuilt, else a list."""
    try:
        if isinstance(data, collections.abc.MutableSequence):
            clone = copy.copy(data)
            for i, value in enumerate(values):
                clone[i] = value
            return clone
        return type(data)(list(values))
    except TypeError:
        return list(values)


def default_convert(data):
    """Convert each NumPy array or scalar in ``data`` (recursively through mappings, namedtuples and
    sequences) into a tensor; anything else is returned unchanged."""
    if isinstance(data, Tensor):
        return data
    if _is_numpy_value(data):
        if isinstance(data, np.ndarray) and np_str_obj_array_pattern.search(data.dtype.str) is not None:
            return data
        return factories.as_tensor(data)
    if isinstance(data, collections.abc.Mapping):
        return _rebuild_mapping(data, lambda key: default_convert(data[key]))
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return type(data)(*(default_convert(d) for d in data))
    if isinstance(data, tuple):
        return [default_convert(d) for d in data]
    if isinstance(data, collections.abc.Sequence) and not isinstance(data, (str, bytes)):
        return _rebuild_sequence(data, [default_convert(d) for d in data])
    return data


def collate(batch, *, collate_fn_map=None):
    """Collate ``batch`` (a list of samples), dispatching on the first sample's type through
    ``collate_fn_map`` (exact type first, then ``isinstance`` in the map's order)."""
    elem = batch[0]
    elem_type = type(elem)
    if collate_fn_map is not None:
        if elem_type in collate_fn_map:
            return collate_fn_map[elem_type](batch, collate_fn_map=collate_fn_map)
        for collate_type in collate_fn_map:
            if isinstance(elem, collate_type):
                return collate_fn_map[collate_type](batch, collate_fn_map=collate_fn_map)
    if isinstance(elem, collections.abc.Mapping):
        return _rebuild_mapping(elem, lambda key: collate([d[key] for d in batch], collate_fn_map=collate_fn_map))
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):
        return elem_type(*(collate(samples, collate_fn_map=collate_fn_map) for samples in zip(*batch)))
    if isinstance(elem, collections.abc.Sequence):
        it = iter(batch)
        elem_size = len(next(it))
        if not all(len(e) == elem_size for e in it):
            raise RuntimeError("each element in list of batch should be of equal size")
        collated = [collate(samples, collate_fn_map=collate_fn_map) for samples in zip(*batch)]
        return collated if isinstance(elem, tuple) else _rebuild_sequence(elem, collated)
    raise TypeError(default_collate_err_msg_format.format(elem_type))


def collate_tensor_fn(batch, *, collate_fn_map=None):
    """The tensors stacked; in a DataLoader worker into an ``out=`` tensor of the first one's
    dtype, as PyTorch's (which allocates it in shared memory), so that a worker refuses tensors
    that require grad or a dtype the first one's cannot hold, with PyTorch's errors."""
    from .worker import get_worker_info
    if get_worker_info() is None:
        return stack(batch, 0)
    elem = batch[0]
    out = factories.empty((len(batch), *elem.shape), dtype=elem.dtype, device=elem.device)
    return functional.stack(batch, 0, out=out)


def collate_numpy_array_fn(batch, *, collate_fn_map=None):
    elem = batch[0]
    if np_str_obj_array_pattern.search(elem.dtype.str) is not None:
        raise TypeError(default_collate_err_msg_format.format(elem.dtype))
    return collate([factories.as_tensor(b) for b in batch], collate_fn_map=collate_fn_map)


def collate_numpy_scalar_fn(batch, *, collate_fn_map=None):
    return factories.as_tensor(batch)


def collate_float_fn(batch, *, collate_fn_map=None):
    return factories.tensor(batch, dtype=float64)


def collate_int_fn(batch, *, collate_fn_map=None):
    return factories.tensor(batch)


def collate_str_fn(batch, *, collate_fn_map=None):
    return batch


default_collate_fn_map = {
    Tensor: collate_tensor_fn,
    np.ndarray: collate_numpy_array_fn,
    (np.bool_, np.number, np.object_): collate_numpy_scalar_fn,
    float: collate_float_fn,
    int: collate_int_fn,
    str: collate_str_fn,
    bytes: collate_str_fn,
}


def default_collate(batch):
    """Stack a list of samples into a batch, as ``torch.utils.data.default_collate``."""
    return collate(batch, collate_fn_map=default_collate_fn_map)
