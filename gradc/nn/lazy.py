"""PyTorch's lazy modules: LazyLinear, LazyConv1d/2d/3d, LazyConvTranspose1d/2d/3d,
LazyBatchNorm1d/2d/3d and LazyInstanceNorm1d/2d/3d.

A lazy module is its ``cls_to_become`` (Linear, Conv2d, ...) built without the size of its input
features: its parameters (and the running statistics of the norms) are ``UninitializedParameter`` /
``UninitializedBuffer`` until the first call, which reads that size from the input, materialises
them in place (the same objects, so an optimizer made before the call holds them) with the values
the full class's constructor gives, and turns the module into a ``cls_to_become``.
"""
from __future__ import annotations

import inspect

from .extra import InstanceNorm1d, InstanceNorm2d, InstanceNorm3d
from .modules import (BatchNorm1d, BatchNorm2d, BatchNorm3d, Conv1d, Conv2d, Conv3d, ConvTranspose1d, ConvTranspose2d,
                      ConvTranspose3d, Linear)
from .parameter import UninitializedBuffer, UninitializedParameter, is_lazy


class LazyModuleMixin:
    """Builds ``cls_to_become`` with a stand-in size for ``_in_name`` (its first argument), then
    makes the size-dependent parameters and buffers uninitialized; ``initialize_parameters``
    (run by the first call) gives them their shapes and values."""
    cls_to_become = None
    _in_name = "in_features"
    _defaults: dict = {}            # (where the lazy class's defaults differ from cls_to_become's)
    # (PyTorch's LazyLinear takes in_features from the input even when load_state_dict made the
    # parameters or there are none; the other lazy modules then keep 0)
    _sized_without_parameters_to_make = False

    def __init__(self, *args, **kwargs):
        signature = inspect.signature(self.cls_to_become.__init__)
        bound = signature.bind(self, None, *args, **kwargs)
        options = {**self._defaults, **{k: v for k, v in bound.arguments.items() if k != "self"}}
        options[self._in_name] = options.get("groups", 1)            # (a size every check accepts)
        self.cls_to_become.__init__(self, **options)
        object.__setattr__(self, "_lazy_options", options)
        dtype = options.get("dtype")
        for name, p in list(self._parameters.items()):
            if p is not None:
                setattr(self, name, UninitializedParameter(dtype=dtype))
        for name, b in list(self._buffers.items()):
            if b is not None and b.ndim:                              # (num_batches_tracked keeps its value)
                self._buffers[name] = UninitializedBuffer(dtype=dtype)
                object.__setattr__(self, name, self._buffers[name])
        setattr(self, self._in_name, 0)
        self.register_load_state_dict_pre_hook(_materialize_from_state)

    def has_uninitialized_params(self) -> bool:
        return any(is_lazy(t) for t in list(self._parameters.values()) + list(self._buffers.values()))

    def _input_size(self, input) -> int:
        return input.shape[1]

    def initialize_parameters(self, input, *args, **kwargs):
        """Shape and fill the uninitialized tensors for ``input`` (those ``load_state_dict`` has
        not), and become ``cls_to_become``."""
        size = int(self._input_size(input))
        if self.has_uninitialized_params():
            full = self.cls_to_become(**{**self._lazy_options, self._in_name: size})
            for table, made in ((self._parameters, full._parameters), (self._buffers, full._buffers)):
                for name, t in table.items():
                    if is_lazy(t):       # (in its own dtype: .double() may have changed it)
                        t.materialize(made[name].shape)
                        t._data[...] = made[name]._data
            setattr(self, self._in_name, size)
        elif self._sized_without_parameters_to_make:
            setattr(self, self._in_name, size)
        del self._lazy_options
        self.__class__ = self.cls_to_become

    def forward(self, input, *args, **kwargs):
        self.initialize_parameters(input)
        return self.forward(input, *args, **kwargs)


def _materialize_from_state(module, state, prefix, *args):
    """load_state_dict's pre-hook: each uninitialized tensor with an entry takes the entry's shape
    (the load then copies the values in), as PyTorch's lazy modules do."""
    for table in (module._parameters, module._buffers):
        for name, t in table.items():
            value = state.get(prefix + name)
            if is_lazy(t) and value is not None and not is_lazy(value):
                t.materialize(value.shape)


class LazyLinear(LazyModuleMixin, Linear):
    """Linear whose ``in_features`` is the last dim of the first input."""
    cls_to_become = Linear
    _sized_without_parameters_to_make = True

    def _input_size(self, input):
        return input.shape[-1]


class _LazyConv(LazyModuleMixin):
    _in_name = "in_channels"
    _spatial = 1

    def _input_size(self, input):
        return input.shape[0 if input.ndim == self._spatial + 1 else 1]     # (unbatched: channels first)


class LazyConv1d(_LazyConv, Conv1d):
    cls_to_become = Conv1d


class LazyConv2d(_LazyConv, Conv2d):
    cls_to_become, _spatial = Conv2d, 2


class LazyConv3d(_LazyConv, Conv3d):
    cls_to_become, _spatial = Conv3d, 3


class LazyConvTranspose1d(_LazyConv, ConvTranspose1d):
    cls_to_become = ConvTranspose1d


class LazyConvTranspose2d(_LazyConv, ConvTranspose2d):
    cls_to_become, _spatial = ConvTranspose2d, 2


class LazyConvTranspose3d(_LazyConv, ConvTranspose3d):
    cls_to_become, _spatial = ConvTranspose3d, 3


class _LazyNorm(LazyModuleMixin):
    _in_name = "num_features"


class LazyBatchNorm1d(_LazyNorm, BatchNorm1d):
    cls_to_become = BatchNorm1d


class LazyBatchNorm2d(_LazyNorm, BatchNorm2d):
    cls_to_become = BatchNorm2d


class LazyBatchNorm3d(_LazyNorm, BatchNorm3d):
    cls_to_become = BatchNorm3d


class _LazyInstanceNorm(_LazyNorm):
    """(PyTorch's lazy instance norms default to affine=True, track_running_stats=True; they read
    the size at dim 1 of an unbatched input too, and then refuse the input)"""
    _defaults = {"affine": True, "track_running_stats": True}


class LazyInstanceNorm1d(_LazyInstanceNorm, InstanceNorm1d):
    cls_to_become = InstanceNorm1d


class LazyInstanceNorm2d(_LazyInstanceNorm, InstanceNorm2d):
    cls_to_become = InstanceNorm2d


class LazyInstanceNorm3d(_LazyInstanceNorm, InstanceNorm3d):
    cls_to_become = InstanceNorm3d
