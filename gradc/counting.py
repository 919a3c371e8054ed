"""Functions that count a tensor's values: mode (the most frequent value along a dim: the op
``mode`` of ``ops/reduce.py``, with PyTorch's index and its gradient routed there, eager and
compiled), histc and unique_consecutive. Which run unique_consecutive and histc find depends on
the values, so they run eagerly in NumPy and raise a clear error under ``@gradc.compile``; renorm
(rescaling slices to a maximum norm) is spelled with table ops and works in both."""
from __future__ import annotations

import numpy as np

from . import factories
from .autograd.node import grad_fn_named
from .compositions import bind_methods
from .arg_parser import bool_arg, parses
from .return_types import return_type
from .tensor_api import norm_dim, where

_ModeResult = return_type("mode", ("values", "indices"))


def _host(t, name):
    if getattr(t, "_data", None) is None:
        from .ir.errors import TraceError
        raise TraceError(f"{name} under @gradc.compile: which element it picks depends on the tensor's values, "
                           "which are unknown while tracing; compute it outside the compiled function")
    return t._host()


@parses("mode", "(int dim = -1, bool keepdim = False)")
@grad_fn_named("ModeBackward0")
def mode(input, dim=-1, keepdim=False):
    """(values, indices): the most frequent value along ``dim`` (the smallest of equally frequent
    ones) and the index PyTorch's CPU kernel gives it (``ops/reduce.py``); values' gradient goes to
    that index."""
    from .ops.dispatch import apply
    keepdim = bool_arg(keepdim)
    d = norm_dim(dim, max(input.ndim, 1))
    values, indices = apply("mode", input, dim=d)
    if not keepdim and input.ndim:
        values, indices = values.squeeze(d), indices.squeeze(d)
    return _ModeResult(values, indices)


def histc(input, bins=100, min=0, max=0):  # noqa: A002  (PyTorch's argument names)
    """Counts of ``input``'s values in ``bins`` equal bins over [min, max] (the data's range when
    both are 0, widened by 1 each side when that range is one value); values outside are left
    out, the last bin includes max. No gradient."""
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f"\"histogram_cpu\" not implemented for '{input.dtype.tensor_type[:-6]}'")
    if bins <= 0:
        raise RuntimeError(f"torch.histc(): bins must be > 0, but got {bins} for dimension 0")
    data = _host(input, "histc").astype(np.float64).ravel()
    lo, hi = float(min), float(max)
    if lo == hi and data.size:
        lo, hi = float(data.min()), float(data.max())
    if lo == hi:
        lo, hi = lo - 1, hi + 1
    if lo > hi:
        raise RuntimeError("torch.histc: max must be larger than min")
    counts, _ = np.histogram(data[(data >= lo) & (data <= hi)], bins=bins, range=(lo, hi))
    return factories.tensor(counts.astype(input.dtype.np), device=input.device)


def unique_consecutive(input, return_inverse=False, return_counts=False, dim=None):
    """The values with each run of equal consecutive elements (or slices along ``dim``) kept once."""
    from .scatter import unique_dim
    data = _host(input, "unique_consecutive")
    dim = unique_dim(input, dim)
    if dim is None:
        flat = data.ravel()
        change = np.ones(flat.shape, dtype=bool)
        change[1:] = flat[1:] != flat[:-1]
        values = flat[change]
        inverse_shape = data.shape
    else:
        d = norm_dim(dim, input.ndim)
        moved = np.moveaxis(data, d, 0)
        change = np.ones(moved.shape[0], dtype=bool)
        if moved.shape[0] > 1:
            change[1:] = (moved[1:] != moved[:-1]).reshape(moved.shape[0] - 1, -1).any(axis=1)
        values = np.moveaxis(moved[change], 0, d)
        inverse_shape = (moved.shape[0],)
    inverse = np.cumsum(change) - 1
    counts = np.diff(np.append(np.flatnonzero(change), change.size))
    out = [factories.tensor(values, dtype=input.dtype, device=input.device)]
    if return_inverse:
        out.append(factories.tensor(inverse.reshape(inverse_shape).astype(np.int64), device=input.device))
    if return_counts:
        out.append(factories.tensor(counts.astype(np.int64), device=input.device))
    return out[0] if len(out) == 1 else tuple(out)


@grad_fn_named("RenormBackward0")
def renorm(input, p, dim, maxnorm):
    """Each slice along ``dim`` whose p-norm exceeds ``maxnorm`` scaled to norm maxnorm (PyTorch's
    maxnorm / (norm + 1e-7)); the others unchanged."""
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"renorm: expected a floating point tensor, got {input.dtype}")
    if p <= 0:
        raise RuntimeError("renorm: non-positive-norm not supported")
    if maxnorm < 0:
        raise RuntimeError(f"renorm: expected maxnorm to be >= 0 but got {maxnorm:g}")
    d = norm_dim(dim, max(input.ndim, 1))
    others = [k for k in range(input.ndim) if k != d]
    norm = input.norm(p, dim=others, keepdim=True) if others else input.abs()
    factor = where(norm > maxnorm, maxnorm / (norm + 1e-7), 1.0)
    return input * factor


def renorm_(input, p, dim, maxnorm):
    return input._inplace(renorm(input, p, dim, maxnorm))


METHODS = ("mode", "histc", "unique_consecutive", "renorm", "renorm_")
FUNCTIONS = ("mode", "histc", "unique_consecutive", "renorm")
bind_methods(globals(), METHODS)
