"""PyTorch functions that gradc spells with its table ops (eagerly and under @gradc.compile alike).

Values, dtypes, shapes and gradients are PyTorch's; the ``grad_fn`` graph is that of the pieces
(``tril`` records a WhereBackward0 where PyTorch records TrilBackward0).  Importing this module
(``gradc.functional`` does) binds the ``METHODS`` on the shared tensor API (``x.tril()``);
``gradc.tril(x)`` is the same function.
"""
from __future__ import annotations

import math

import numpy as np

from . import dtypes
from .tensor_api import cat, norm_dim, where

# ---- tests on values (bool results, no gradient) -------------------------------------------------


def isnan(x):
    return x != x


def isinf(x):
    return x.abs() == math.inf if x.dtype.is_floating_point else x != x


def isfinite(x):
    return (x.abs() < math.inf) if x.dtype.is_floating_point else x == x


def any(x, dim=None, keepdim=False):
    return (x != 0).sum(dim, keepdim=keepdim) > 0


def all(x, dim=None, keepdim=False):
    return (x == 0).sum(dim, keepdim=keepdim) == 0


def count_nonzero(x, dim=None):
    return (x != 0).sum(dim)


def allclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False) -> bool:
    return bool(isclose(a, b, rtol, atol, equal_nan).all().item())


def isclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    close = (a - b).abs() <= atol + rtol * b.abs()
    if equal_nan:
        close = close | (isnan(a) & isnan(b))
    return close | (a == b)           # equal infinities


def equal(a, b) -> bool:
    return tuple(a.shape) == tuple(b.shape) and bool((a == b).all().item())


# ---- elementwise ---------------------------------------------------------------------------------
def nan_to_num(x, nan=0.0, posinf=None, neginf=None):
    if not x.dtype.is_floating_point:
        return x.clone()
    big = float(np.finfo(x.dtype.np).max)
    out = where(isnan(x), nan, x)
    out = where(out == math.inf, big if posinf is None else posinf, out)
    return where(out == -math.inf, -big if neginf is None else neginf, out)


def lerp(start, end, weight):
    return start + weight * (end - start)


def logaddexp(a, b):
    """log(exp(a) + exp(b)) = max(a, b) + log1p(exp(-|a - b|)) (equal infinities: that infinity)."""
    m = a.maximum(b)
    d = (a - b).abs()
    return where(d == d, m + (-d).exp().log1p(), a + b)


def hypot(a, b):
    """sqrt(a^2 + b^2) scaled by max(|a|, |b|), so that it does not overflow early."""
    s = a.abs().maximum(b.abs())
    safe = where(s == 0, 1.0, s)
    r = s * ((a / safe) ** 2 + (b / safe) ** 2).sqrt()
    return where(s == math.inf, math.inf, r)


# ---- triangles, diagonals, products -------------------------------------------------------------
def _triangle_mask(x, diagonal, lower):
    from . import factories
    rows, cols = x.shape[-2], x.shape[-1]
    r = factories.arange(rows, device=x.device).unsqueeze(1)
    c = factories.arange(cols, device=x.device).unsqueeze(0)
    return (c - r <= diagonal) if lower else (c - r >= diagonal)


def tril(x, diagonal=0):
    if x.ndim < 2:
        raise RuntimeError("tril: input tensor must have at least 2 dimensions")
    return where(_triangle_mask(x, diagonal, True), x, 0)


def triu(x, diagonal=0):
    if x.ndim < 2:
        raise RuntimeError("triu: input tensor must have at least 2 dimensions")
    return where(_triangle_mask(x, diagonal, False), x, 0)


def diagonal(x, offset=0, dim1=0, dim2=1):
    """The diagonal of dims ``dim1``/``dim2`` as the last dim (PyTorch's layout)."""
    d1, d2 = norm_dim(dim1, x.ndim), norm_dim(dim2, x.ndim)
    rest = [d for d in range(x.ndim) if d not in (d1, d2)]
    y = x.permute(*rest, d1, d2)
    n1, n2 = y.shape[-2], y.shape[-1]
    r0, c0 = (0, offset) if offset >= 0 else (-offset, 0)
    n = max(0, min(n1 - r0, n2 - c0))
    idx = [r0 + k for k in range(n)], [c0 + k for k in range(n)]
    from . import factories
    return y[(Ellipsis, factories.tensor(idx[0], dtype=dtypes.int64), factories.tensor(idx[1], dtype=dtypes.int64))]


def trace(x):
    if x.ndim != 2:
        raise RuntimeError(f"trace: expected a matrix, but got tensor with dim {x.ndim}")
    return diagonal(x).sum()


def outer(a, b):
    return a.unsqueeze(1) * b.unsqueeze(0)


def addmm(input, mat1, mat2, *, beta=1, alpha=1):
    prod = mat1 @ mat2
    return (input if beta == 1 else input * beta) + (prod if alpha == 1 else prod * alpha)


def var_mean(x, dim=None, unbiased=None, keepdim=False, *, correction=None):
    return x.var(dim, unbiased, keepdim, correction=correction), x.mean(dim, keepdim=keepdim)


def std_mean(x, dim=None, unbiased=None, keepdim=False, *, correction=None):
    return x.std(dim, unbiased, keepdim, correction=correction), x.mean(dim, keepdim=keepdim)


# ---- splitting, repeating, reordering ------------------------------------------------------------
def split(x, split_size_or_sections, dim=0):
    d = norm_dim(dim, x.ndim)
    n = x.shape[d]
    if isinstance(split_size_or_sections, int):
        step = split_size_or_sections
        sizes = [min(step, n - s) for s in range(0, n, step)] if n else [0]
    else:
        sizes = list(split_size_or_sections)
        if sum(sizes) != n:
            raise RuntimeError(f"split_with_sizes expects split_sizes to sum exactly to {n} (input tensor's size at "
                               f"dimension {d}), but got split_sizes={sizes}")
    out, start = [], 0
    for s in sizes:
        out.append(x.narrow(d, start, s))
        start += s
    return tuple(out)


def chunk(x, chunks, dim=0):
    d = norm_dim(dim, x.ndim)
    return split(x, max(1, -(-x.shape[d] // chunks)), d)


def unbind(x, dim=0):
    d = norm_dim(dim, x.ndim)
    return tuple(x.select(d, i) for i in range(x.shape[d]))


def repeat(x, *sizes):
    sizes = tuple(sizes[0]) if len(sizes) == 1 and isinstance(sizes[0], (list, tuple)) else sizes
    if len(sizes) < x.ndim:
        raise RuntimeError("Number of dimensions of repeat dims can not be smaller than number of dimensions of "
                           "tensor")
    shape = (1,) * (len(sizes) - x.ndim) + tuple(x.shape)
    y = x.reshape(*shape)
    inter = [v for n in shape for v in (1, n)]
    big = [v for r, n in zip(sizes, shape) for v in (r, n)]
    return y.reshape(*inter).expand(*big).reshape(*[r * n for r, n in zip(sizes, shape)])


def flip(x, dims):
    dims = [dims] if isinstance(dims, int) else list(dims)
    from . import factories
    for d in dims:
        d = norm_dim(d, x.ndim)
        x = x.index_select(d, factories.arange(x.shape[d] - 1, -1, -1, device=x.device))
    return x


def roll(x, shifts, dims=None):
    if dims is None:
        return roll(x.reshape(-1), shifts, 0).reshape(*x.shape)
    shifts = [shifts] if isinstance(shifts, int) else list(shifts)
    dims = [dims] if isinstance(dims, int) else list(dims)
    for s, d in zip(shifts, dims):
        d = norm_dim(d, x.ndim)
        n = x.shape[d]
        if n == 0:
            continue
        s %= n
        if s:
            x = cat([x.narrow(d, n - s, s), x.narrow(d, 0, n - s)], d)
    return x


def diff(x, n=1, dim=-1):
    d = norm_dim(dim, x.ndim)
    for _ in range(n):
        m = x.shape[d]
        x = x.narrow(d, 1, m - 1) - x.narrow(d, 0, m - 1)
    return x


def meshgrid(*tensors, indexing="ij"):
    tensors = list(tensors[0]) if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)) else list(tensors)
    if indexing not in ("ij", "xy"):
        raise ValueError(f"torch.meshgrid: indexing must be one of \"xy\" or \"ij\", but received: {indexing}")
    if indexing == "xy" and len(tensors) >= 2:
        tensors[0], tensors[1] = tensors[1], tensors[0]
    shape = [t.numel() for t in tensors]
    out = []
    for k, t in enumerate(tensors):
        view = [1] * len(tensors)
        view[k] = shape[k]
        out.append(t.reshape(*view).expand(*shape))
    if indexing == "xy" and len(out) >= 2:     # the grids of (y, x, ...) in 'ij' order, given back as (x, y, ...)
        out[0], out[1] = out[1], out[0]
    return tuple(out)


# methods too (``x.tril()``: each takes the tensor first), and the free functions (``gradc.tril``)
METHODS = ("isnan", "isinf", "isfinite", "any", "all", "count_nonzero", "allclose", "isclose", "equal",
           "nan_to_num", "lerp", "logaddexp", "hypot", "tril", "triu", "diagonal", "trace", "outer", "addmm",
           "split", "chunk", "unbind", "repeat", "flip", "roll", "diff")
FUNCTIONS = METHODS + ("var_mean", "std_mean", "meshgrid")


def _bind_methods():
    from .tensor_api import TensorAPI
    for name in METHODS:
        if not hasattr(TensorAPI, name):
            setattr(TensorAPI, name, globals()[name])


_bind_methods()
