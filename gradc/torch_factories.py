"""PyTorch's remaining tensor factories and process settings:

* ``empty_strided`` / ``empty_permuted`` (tensors with the strides asked for), ``fill``,
  ``asarray`` (sharing memory with a tensor or NumPy array where it can), ``frombuffer``,
  ``nonzero_static`` and the deprecated ``range`` (end included, with PyTorch's warning);
* the samplers ``poisson`` and ``binomial`` (NumPy's generators: PyTorch's distributions, not
  its streams of numbers);
* ``set_default_device`` (the CPU only), ``set_warn_always`` / ``is_warn_always_enabled``;
* the ``layout=`` and ``pin_memory=`` options of every factory (``with_factory_options``): strided
  tensors only, and no pinned memory without an accelerator, as PyTorch's CPU build.
"""
from __future__ import annotations

import array
import builtins
import math

import numpy as np

from . import dtypes, factories
from ._warnings import first_time, is_warn_always_enabled, set_warn_always, warn_at_user_code  # noqa: F401
from .autograd.node import grad_fn_named
from .compositions import bind_methods
from .tensor import Tensor
from .tensor_api import is_tensor_like, where


# ---- factory options ------------------------------------------------------------------------------
PIN_MEMORY_ERROR = ("pin_memory=True requires a CUDA or other accelerator backend; no pinned memory allocator is "
                    "available on this system.")

# the factories (gradc.*) that take PyTorch's layout= and pin_memory= options
OPTION_FACTORIES = ("empty", "zeros", "ones", "full", "rand", "randn", "randint", "randperm", "arange", "linspace",
                    "logspace", "eye", "tensor", "empty_like", "zeros_like", "ones_like", "full_like", "rand_like",
                    "randn_like", "randint_like", "scalar_tensor", "hann_window", "hamming_window", "blackman_window",
                    "bartlett_window", "kaiser_window")


def check_factory_options(name, layout=None, pin_memory=None):
    """A factory's ``layout`` (only ``torch.strided``) and ``pin_memory`` (refused: no accelerator)."""
    from .torch_functions import strided
    if layout is not None and layout is not strided:
        raise TypeError(f"{name}(): argument 'layout' must be torch.layout, not {type(layout).__name__}")
    if pin_memory:
        raise RuntimeError(PIN_MEMORY_ERROR)


def with_factory_options(fn, name):
    """``fn`` taking PyTorch's ``layout=`` (not ``tensor``: PyTorch's has none) and ``pin_memory=``
    keywords (checked, then dropped)."""
    import functools

    if name == "tensor":
        @functools.wraps(fn)
        def factory(*args, pin_memory=None, **kwargs):
            check_factory_options(name, None, pin_memory)
            return fn(*args, **kwargs)
        return factory

    @functools.wraps(fn)
    def factory(*args, layout=None, pin_memory=None, **kwargs):
        check_factory_options(name, layout, pin_memory)
        return fn(*args, **kwargs)
    return factory


# ---- strided empties -------------------------------------------------------------------------------
def empty_strided(size, stride, *, dtype=None, layout=None, device=None, pin_memory=False, requires_grad=False):
    """An uninitialised tensor of ``size`` whose elements lie ``stride`` apart in its own storage."""
    check_factory_options("empty_strided", layout, pin_memory)
    size, stride = [int(n) for n in size], [int(s) for s in stride]
    if len(size) != len(stride):
        raise RuntimeError(f"dimensionality of sizes ({len(size)}) must match dimensionality of strides "
                           f"({len(stride)})")
    dt = dtypes.as_dtype(dtype) if dtype is not None else dtypes.default_float
    storage = 0 if 0 in size else 1 + sum((n - 1) * s for n, s in zip(size, stride))
    if factories.check_device(device).type != "cpu":
        return factories.empty(size, dtype=dt, device=device, requires_grad=requires_grad)
    buffer = np.zeros(storage, dt.np)
    t = Tensor(np.lib.stride_tricks.as_strided(buffer, size, [s * dt.itemsize for s in stride]))
    return t.requires_grad_() if requires_grad else t


def empty_permuted(size, physical_layout, *, dtype=None, layout=None, device=None, pin_memory=False,
                   requires_grad=False):
    """An uninitialised tensor of ``size`` laid out in memory in the order of dims
    ``physical_layout`` (outermost first)."""
    check_factory_options("empty_permuted", layout, pin_memory)
    size, order = [int(n) for n in size], [int(d) for d in physical_layout]
    if len(order) != len(size):
        raise RuntimeError(f"Number of dimensions in size does not match the length of the physical_layout; i.e. "
                           f"len(size) = {len(size)} is not equal to len(physical_layout) = {len(order)}")
    if sorted(order) != list(builtins.range(len(size))):
        raise RuntimeError("Duplicate dim not allowed")
    stride, step = [0] * len(size), 1
    for d in reversed(order):
        stride[d], step = step, step * max(size[d], 1)
    return empty_strided(size, stride, dtype=dtype, device=device, requires_grad=requires_grad)


# ---- fill, asarray, frombuffer, nonzero_static, range ------------------------------------------------
def _fill_edges(input, value):
    return (input, value) if is_tensor_like(value) else (input,)


@grad_fn_named(lambda input, value: "FillBackward1" if is_tensor_like(value) else "FillBackward0", edges=_fill_edges)
def fill(input, value):
    """A tensor like ``input`` holding ``value`` (a number or a 0-d tensor) everywhere."""
    everywhere = factories.ones(input.shape, dtype=dtypes.bool_, device=input.device)
    if is_tensor_like(value):
        if value.ndim:
            raise RuntimeError(f"fill_ only supports 0-dimension value tensor but got tensor with {value.ndim} "
                               "dimensions.")
        return where(everywhere, value.to(input.dtype), input)
    return where(everywhere, factories.full_like(input, value), input)


_ASARRAY_REQUIRES_GRAD_WARNING = (
    "torch.asarray: unspecified requires_grad now defaults to obj.requires_grad instead of False. Pass "
    "requires_grad=False explicitly to get the old behavior and silence this warning. (Triggered internally at "
    "/__w/pytorch/pytorch/torch/csrc/utils/tensor_new.cpp:1737.)")


def asarray(obj, *, dtype=None, device=None, copy=None, requires_grad=None):
    """``obj`` as a tensor: a tensor or NumPy array shares its memory unless ``copy`` or a
    different dtype asks for a new one (``copy=False`` then raises); other data is copied."""
    dt = dtypes.as_dtype(dtype) if dtype is not None else None
    if isinstance(obj, Tensor):
        return _asarray_tensor(obj, dt, device, copy, requires_grad)
    if isinstance(obj, np.ndarray) and dtypes.from_numpy(obj.dtype).np == obj.dtype:
        t = _asarray_tensor(factories.from_numpy(obj), dt, device, copy, False)
    elif isinstance(obj, np.generic):
        t = factories.tensor(np.asarray(obj), dtype=dt, device=device)
    elif isinstance(obj, (bytes, bytearray, memoryview, array.array)):     # its memory, read as dtype
        t = frombuffer(obj, dtype=dt or dtypes.default_float)
        t = t.clone() if copy else t
    else:
        if copy is False and not isinstance(obj, np.ndarray):
            raise ValueError("can't alias arbitrary sequence into a tensor.")
        t = factories.tensor(obj, dtype=dt, device=device)
    return t.requires_grad_() if requires_grad else t


def _asarray_tensor(t, dt, device, copy, requires_grad):
    """``asarray`` of a tensor: ``t`` itself (its flag set as asked, as PyTorch's does), or a copy
    with history when a copy, another dtype or another device is asked for."""
    moved = device is not None and factories.check_device(device) != t.device
    if dt is not None and dt is not t.dtype or copy or moved:
        if copy is False:
            raise ValueError(f"can't alias tensor with dtype '{t.dtype.scalar_type}' into dtype "
                             f"'{(dt or t.dtype).scalar_type}'.")
        new = t.to(dt) if dt is not None and dt is not t.dtype else t.clone()
        new = new.to(device) if moved else new
        if requires_grad is None or bool(requires_grad) == new.requires_grad:
            return new
        return new.detach().requires_grad_(bool(requires_grad))
    if requires_grad is None:
        if t.requires_grad:
            warn_at_user_code(_ASARRAY_REQUIRES_GRAD_WARNING)
        return t
    if bool(requires_grad) == t.requires_grad:
        return t
    return t.requires_grad_(bool(requires_grad)) if t.is_leaf else t.detach()


_NOT_WRITABLE_WARNING = (
    "The given buffer is not writable, and PyTorch does not support non-writable tensors. This means you can write "
    "to the underlying (supposedly non-writable) buffer using the tensor. You may want to copy the buffer to protect "
    "its data or make it writable before converting it to a tensor. This type of warning will be suppressed for the "
    "rest of this program. (Triggered internally at /__w/pytorch/pytorch/torch/csrc/utils/tensor_new.cpp:1556.)")


def frombuffer(buffer, *, dtype, count=-1, offset=0, requires_grad=False):
    """A 1-D tensor over the memory of an object with Python's buffer protocol (shared: writes to
    either are seen by the other)."""
    dt = dtypes.as_dtype(dtype)
    view = memoryview(buffer)
    length = view.nbytes
    if offset < 0 or offset >= length:
        raise ValueError(f"offset ({offset} bytes) must be non-negative and no greater than buffer length "
                         f"({length} bytes) minus 1")
    if count < 0:
        if (length - offset) % dt.itemsize:
            raise ValueError(f"buffer length ({length - offset} bytes) after offset ({offset} bytes) must be a "
                             f"multiple of element size ({dt.itemsize})")
        count = (length - offset) // dt.itemsize
    elif count == 0:
        raise ValueError(f"both buffer length ({length}) and count ({count}) must not be 0")
    elif offset + count * dt.itemsize > length:
        raise ValueError(f"requested buffer length ({count} * {dt.itemsize} bytes) after offset ({offset} bytes) "
                         f"must not be greater than actual buffer length ({length} bytes)")
    if view.readonly and first_time("frombuffer"):
        warn_at_user_code(_NOT_WRITABLE_WARNING)
    t = Tensor(np.frombuffer(buffer, dtype=dt.np, count=count, offset=offset))
    return t.requires_grad_() if requires_grad else t


def nonzero_static(input, *, size, fill_value=-1):
    """``nonzero``'s rows, cut or padded with ``fill_value`` to exactly ``size`` rows."""
    if not isinstance(size, int) or size < 0:
        raise RuntimeError("nonzero_static: 'size' must be an non-negative integer")
    found = input.nonzero()
    if found.shape[0] >= size:
        return found[:size].clone()
    pad = factories.full((size - found.shape[0], found.shape[1]), fill_value, dtype=dtypes.int64,
                         device=input.device)
    from .tensor_api import cat
    return cat([found, pad])


_RANGE_WARNING = ("torch.range is deprecated and will be removed in a future release because its behavior is "
                  "inconsistent with Python's range builtin. Instead, use torch.arange, which produces values in "
                  "[start, end).")


def range(start, end, step=1, *, dtype=None, device=None, requires_grad=False):  # noqa: A001
    """``start, start + step, ...`` up to and including ``end`` (deprecated, with PyTorch's warning);
    of the default float dtype unless ``dtype`` says otherwise."""
    warn_at_user_code(_RANGE_WARNING)
    if step == 0:
        raise RuntimeError("step must be nonzero")
    if (end - start) * step < 0:
        raise RuntimeError("upper bound and lower bound inconsistent with step sign")
    dt = dtypes.as_dtype(dtype) if dtype is not None else dtypes.default_float
    n = int(math.floor((end - start) / step)) + 1
    values = start + np.arange(n, dtype=np.float64) * step
    return factories.tensor(values, dtype=dt, device=device, requires_grad=requires_grad)


# ---- samplers --------------------------------------------------------------------------------------
def _draw(fn, shape, generator):
    from .random_state import numpy_rng
    return fn(numpy_rng(generator), shape)


@grad_fn_named("PoissonBackward0", edges=lambda input, generator=None: (input,))
def poisson(input, generator=None):
    """A Poisson draw with each element of ``input`` as its rate (the gradient is zero)."""
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f"\"poisson_cpu\" not implemented for '{input.dtype.scalar_type}'")
    rates = input.detach().numpy().astype(np.float64)
    if rates.size and not (rates >= 0).all():
        raise RuntimeError("invalid Poisson rate, expected rate to be non-negative")
    drawn = _draw(lambda rng, shape: rng.poisson(rates, shape), rates.shape, generator)
    sample = factories.tensor(drawn, dtype=input.dtype, device=input.device)
    return where(factories.ones(input.shape, dtype=dtypes.bool_), sample, input)


def binomial(count, prob, generator=None):
    """A Binomial(count, prob) draw per element (float ``count`` and ``prob``, broadcast)."""
    for name, t in (("count", count), ("prob", prob)):
        if not t.dtype.is_floating_point:
            raise ValueError(f"binomial only supports floating-point dtypes for {name}, got: "
                             f"{t.dtype.scalar_type}")
    n, p = np.broadcast_arrays(count.detach().numpy(), prob.detach().numpy())
    drawn = _draw(lambda rng, shape: rng.binomial(n.astype(np.int64), p.astype(np.float64), shape), n.shape,
                  generator)
    return factories.tensor(drawn, dtype=count.dtype, device=count.device)


# ---- settings --------------------------------------------------------------------------------------
def set_default_device(device):
    """gradc's factories make CPU tensors: the CPU (or None) is the only default device."""
    from .tensor import device as as_device
    if device is not None and as_device(device).type != "cpu":
        raise RuntimeError(f"gradc: set_default_device supports only the CPU, not {device!r}")


METHODS = ("nonzero_static",)

FUNCTIONS = ("empty_strided", "empty_permuted", "fill", "asarray", "frombuffer", "nonzero_static", "range", "poisson",
             "binomial", "set_default_device", "set_warn_always", "is_warn_always_enabled")

bind_methods(globals(), METHODS)
