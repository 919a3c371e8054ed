"""PyTorch functions that arrange tensors, spelled with table ops: stacking (hstack, vstack,
dstack, column_stack, atleast_Nd), tiling, moving and splitting dims (tile, movedim, unflatten,
tensor_split, rot90, fliplr/flipud, Tensor.unfold), diagonal matrices (diag, diag_embed, eye) and index
factories (tril_indices, triu_indices).  Gradients come from the table ops they use."""
from __future__ import annotations

import numpy as np

from . import dtypes, factories
from .arg_parser import ArgumentError, int_arg, int_list, parses
from .autograd.node import grad_fn_named
from .compositions import _varargs, bind_methods, flip
from .tensor_api import cat, norm_dim


def atleast_1d(*tensors):
    out = [t.reshape(1) if t.ndim == 0 else t for t in _varargs(tensors)]
    return out[0] if len(out) == 1 else tuple(out)


def atleast_2d(*tensors):
    out = [t.reshape(1, -1) if t.ndim < 2 else t for t in _varargs(tensors)]
    return out[0] if len(out) == 1 else tuple(out)


def atleast_3d(*tensors):
    def lift(t):
        if t.ndim == 0:
            return t.reshape(1, 1, 1)
        if t.ndim == 1:
            return t.reshape(1, -1, 1)
        return t.unsqueeze(-1) if t.ndim == 2 else t
    out = [lift(t) for t in _varargs(tensors)]
    return out[0] if len(out) == 1 else tuple(out)


def hstack(tensors):
    ts = [atleast_1d(t) for t in tensors]
    return cat(ts, 0 if ts[0].ndim == 1 else 1)


def vstack(tensors):
    return cat([atleast_2d(t) for t in tensors], 0)


def dstack(tensors):
    return cat([atleast_3d(t) for t in tensors], 2)


def column_stack(tensors):
    return cat([t.reshape(-1, 1) if t.ndim <= 1 else t for t in tensors], 1)


row_stack = vstack


def tile(x, dims):
    dims = tuple(dims) if isinstance(dims, (tuple, list)) else (dims,)
    return x.repeat(*((1,) * (x.ndim - len(dims)) + dims))


_MOVEDIM = ("(int source, int destination)", "(tuple of ints source, tuple of ints destination)")


@parses("movedim", *_MOVEDIM)
def movedim(x, source, destination):
    src, dst = list(int_list((source,))), list(int_list((destination,)))
    if len(src) != len(dst):
        raise RuntimeError(f"movedim: Invalid source or destination dims: source ({src} dims) should contain the "
                           f"same number of dims as destination ({dst} dims)")
    src = [norm_dim(d, x.ndim) for d in src]
    dst = [norm_dim(d, x.ndim) for d in dst]
    for name, dims in (("source", src), ("destination", dst)):
        if len(set(dims)) != len(dims):
            raise RuntimeError(f"movedim: repeated dim in `{name}` ({dims})")
    if x.ndim == 0:
        from .ops.dispatch import apply
        return apply("reshape", x, shape=[], _name="AliasBackward0")
    order = [None] * x.ndim
    for s, d in zip(src, dst):
        order[d] = s
    rest = iter(d for d in range(x.ndim) if d not in src)
    return x.permute(*[o if o is not None else next(rest) for o in order])


@parses("moveaxis", *_MOVEDIM)
def moveaxis(x, source, destination):
    return movedim(x, source, destination)


@parses("swapdims", "(int dim0, int dim1)")
def swapdims(x, dim0, dim1):
    return x.transpose(dim0, dim1)


@parses("unflatten", "(int dim, tuple of ints sizes)")
def unflatten(x, dim, sizes):
    dim = norm_dim(dim, x.ndim)
    sizes = list(int_list((sizes,)))
    if -1 in sizes:
        known = int(np.prod([s for s in sizes if s != -1]))
        sizes[sizes.index(-1)] = x.shape[dim] // known if known else 0
    if int(np.prod(sizes)) != x.shape[dim]:
        raise RuntimeError(f"unflatten: Provided sizes {list(sizes)} don't multiply up to the size of dim {dim} "
                           f"({x.shape[dim]}) in the input tensor")
    return x.reshape(*x.shape[:dim], *sizes, *x.shape[dim + 1:])


@parses("tensor_split", "(tuple of ints indices, int dim = 0)", "(Tensor tensor_indices_or_sections, int dim = 0)",
        "(int sections, int dim = 0)")
def tensor_split(x, indices_or_sections, dim=0):
    """Sections of near-equal size (the first ``n % sections`` one longer), or cuts at indices."""
    dim = norm_dim(dim, x.ndim)
    if not isinstance(indices_or_sections, (int, tuple, list)) and not hasattr(indices_or_sections, "ndim"):
        raise ArgumentError("tensor_split's indices_or_sections")
    n = x.shape[dim]
    if isinstance(indices_or_sections, int):
        k = indices_or_sections
        if k <= 0:
            raise RuntimeError(f"number of sections must be larger than 0, got {k}")
        sizes = [n // k + (1 if i < n % k else 0) for i in range(k)]
        cuts = np.cumsum([0] + sizes)
    else:
        # negative indices count from the end, as Python's slices (and PyTorch's)
        cuts = [0] + [min(max(int(i) + n if int(i) < 0 else int(i), 0), n) for i in indices_or_sections] + [n]
    return tuple(x.narrow(dim, int(a), max(int(b) - int(a), 0)) for a, b in zip(cuts[:-1], cuts[1:]))


@grad_fn_named("Rot90Backward0")
def rot90(x, k=1, dims=(0, 1)):
    if len(dims) != 2:
        raise RuntimeError(f"expected total rotation dims == 2, but got dims = {len(dims)}")
    d0, d1 = (norm_dim(d, x.ndim) for d in dims)
    if d0 == d1:
        raise RuntimeError(f"expected rotation dims to be different, but got dim0 = {d0} and dim1 = {d1}")
    k %= 4
    if k == 1:
        return flip(x, d1).transpose(d0, d1)
    if k == 2:
        return flip(x, (d0, d1))
    if k == 3:
        return flip(x, d0).transpose(d0, d1)
    return x.clone()


def fliplr(x):
    if x.ndim < 2:
        raise RuntimeError("Input must be >= 2-d.")
    return flip(x, 1)


def flipud(x):
    if x.ndim < 1:
        raise RuntimeError("Input must be >= 1-d.")
    return flip(x, 0)


@parses("eye", *factories._EYE, method=False)
def eye(n, m=None, dtype=None, device=None, requires_grad=False):
    n = int_arg(n)
    m = n if m is None else int_arg(m)
    factories._options(dtype, device, requires_grad)
    for name, v in (("n", n), ("m", m)):
        if v < 0:
            raise RuntimeError(f"{name} must be greater or equal to 0, got {v}")
    from . import dtypes
    dt = dtypes.as_dtype(dtype) if dtype is not None else dtypes.default_float
    return factories.tensor(np.eye(n, m, dtype=dt.np), dtype=dt, device=device, requires_grad=requires_grad)


def diag_embed(x, offset=0, dim1=-2, dim2=-1):
    """Each last-dim vector of ``x`` on the ``offset`` diagonal of a square matrix (dims -2, -1)."""
    if (dim1, dim2) not in ((-2, -1), (x.ndim - 1, x.ndim)):
        raise NotImplementedError("diag_embed: only the last two dims (dim1=-2, dim2=-1) in gradc")
    n = x.shape[-1] + abs(offset)
    rows = np.arange(x.shape[-1]) + max(-offset, 0)
    cols = np.arange(x.shape[-1]) + max(offset, 0)
    place = np.zeros((x.shape[-1], n, n))
    place[np.arange(x.shape[-1]), rows, cols] = 1
    if x.dtype.is_floating_point:
        sel = factories.tensor(place.reshape(x.shape[-1], n * n), dtype=x.dtype, device=x.device)
        return (x @ sel).reshape(*x.shape[:-1], n, n)
    # integers and bools through float64: each output is one input or a zero, exact below 2**53
    return diag_embed(x.to(dtypes.float64), offset, dim1, dim2).to(x.dtype)


def diag(x, diagonal=0):
    """A 1-D tensor on the ``diagonal``-th diagonal of a square matrix; of a 2-D one, that diagonal."""
    if x.ndim == 1:
        return diag_embed(x, diagonal)
    if x.ndim == 2:                 # a copy, as PyTorch's
        from .compositions import diagonal_index
        return diagonal_index(x, diagonal, 0, 1, as_view=False, name="DiagonalBackward0_copy")
    raise RuntimeError(f"diag(): Supports 1D or 2D tensors. Got {x.ndim}D")


def _triangle_indices(rows, cols, offset, lower, dtype, device):
    r, c = np.nonzero(np.tri(rows, cols, offset, dtype=bool) if lower else ~np.tri(rows, cols, offset - 1, dtype=bool))
    from . import dtypes
    return factories.tensor(np.stack([r, c]).astype(np.int64), dtype=dtype or dtypes.int64, device=device)


def tril_indices(row, col, offset=0, dtype=None, device=None):
    return _triangle_indices(row, col, offset, True, dtype, device)


def triu_indices(row, col, offset=0, dtype=None, device=None):
    return _triangle_indices(row, col, offset, False, dtype, device)


@grad_fn_named("UnsafeViewBackward0")
def kron(a, b):
    """The Kronecker product: a's elements each scaling a copy of b."""
    from .tensor_api import _tensor_argument
    _tensor_argument("kron", b, 2)
    nd = max(a.ndim, b.ndim)
    a = a.reshape(*((1,) * (nd - a.ndim) + tuple(a.shape)))
    b = b.reshape(*((1,) * (nd - b.ndim) + tuple(b.shape)))
    inter_a = [v for n in a.shape for v in (n, 1)]
    inter_b = [v for n in b.shape for v in (1, n)]
    out = a.reshape(*inter_a) * b.reshape(*inter_b)
    return out.reshape(*[p * q for p, q in zip(a.shape, b.shape)])


@parses("unfold", "(int dimension, int size, int step)")
@grad_fn_named("UnfoldBackward0")
def unfold(x, dimension, size, step):
    """``Tensor.unfold``: the windows of ``size`` elements every ``step`` along ``dimension``, as
    a new last dim.  Eagerly a view of ``x``'s memory, as PyTorch's (``as_strided``: writes
    through it reach ``x``); traced, one index_select.  The gradient adds overlapping windows back."""
    if x.ndim == 0:                  # a scalar is one window of itself, shape (size,)
        norm_dim(dimension, 1)
        return unfold(x.reshape(1), 0, size, step).reshape(size)
    d = norm_dim(dimension, x.ndim)
    length = x.shape[d]
    if size < 0:
        raise RuntimeError(f"size is {size} but must be >= 0")
    if size > length:
        raise RuntimeError(f"maximum size for tensor at dimension {d} is {length} but size is {size}")
    if step <= 0:
        raise RuntimeError(f"step is {step} but must be > 0")
    n = (length - size) // step + 1
    data = getattr(x, "_data", None)
    root = x._base if getattr(x, "_base", None) is not None else x
    if isinstance(data, np.ndarray) and isinstance(getattr(root, "_data", None), np.ndarray) and \
            root._data.flags.c_contiguous and data.size:
        strides = [st // data.itemsize for st in data.strides]
        shape = list(x.shape[:d]) + [n] + list(x.shape[d + 1:]) + [size]
        return x.as_strided(shape, strides[:d] + [strides[d] * step] + strides[d + 1:] + [strides[d]])
    index = (np.arange(n)[:, None] * step + np.arange(size)[None, :]).reshape(-1)
    picked = x.index_select(d, factories.tensor(index, device=x.device))
    windows = picked.reshape(*x.shape[:d], n, size, *x.shape[d + 1:])
    return windows.movedim(d + 1, -1)


METHODS = ("tile", "movedim", "moveaxis", "swapdims", "unflatten", "tensor_split", "rot90", "fliplr", "flipud",
           "diag", "diag_embed", "kron")
FUNCTIONS = METHODS + ("atleast_1d", "atleast_2d", "atleast_3d", "hstack", "vstack", "dstack", "column_stack",
                       "row_stack", "eye", "tril_indices", "triu_indices")
bind_methods(globals(), METHODS + ("unfold",))          # (Tensor.unfold only: F.unfold is im2col)
