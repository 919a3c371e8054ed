"""``torch.linalg``: inv, det, slogdet, solve and the decompositions svd, eigh, cholesky, qr, pinv
(table ops whose forward is NumPy's LAPACK and whose gradients are written with gradc ops, so
they differentiate twice: ops/linalg.py, ops/decompositions.py); the vector / matrix norms,
svdvals, eigvalsh, matrix_rank, cond, cross, vecdot, multi_dot as compositions."""
from __future__ import annotations

import math
from collections import namedtuple

import numpy as np

from .ops.decompositions import LinAlgError, cutoff  # noqa: F401  (torch.linalg.LinAlgError)
from .ops.dispatch import apply


def _return_type(name, fields):
    cls = namedtuple(name, fields)
    cls.__repr__ = lambda self: (f"torch.return_types.{name}(\n"
                                 + ",\n".join(f"{f}={getattr(self, f)!r}" for f in fields) + ")")
    return cls


_Slogdet = _return_type("linalg_slogdet", ["sign", "logabsdet"])
_Slogdet_legacy = _return_type("slogdet", ["sign", "logabsdet"])    # torch.slogdet / Tensor.slogdet
_Svd = _return_type("linalg_svd", ["U", "S", "Vh"])
_Eigh = _return_type("linalg_eigh", ["eigenvalues", "eigenvectors"])
_Qr = _return_type("linalg_qr", ["Q", "R"])


def inv(A):
    return apply("linalg_inv", A)


def det(A):
    return apply("linalg_det", A)


def slogdet(A):
    sign, logabs = apply("linalg_slogdet", A)
    return _Slogdet(sign, logabs)


def matrix_exp(A):
    """The matrix exponential (table op ``linalg_matrix_exp``: Padé scaling and squaring)."""
    return apply("linalg_matrix_exp", A)


def solve(A, B, *, left=True):
    if not left:
        return solve(A.transpose(-2, -1), B.transpose(-2, -1)).transpose(-2, -1)
    return apply("linalg_solve", A, B)


# ---- decompositions -----------------------------------------------------------------------------
def svd(A, full_matrices=True, *, driver=None):
    """Full matrices as PyTorch's default; the extra columns of U / rows of Vh get no gradient
    (as in PyTorch)."""
    U, S, Vh = apply("linalg_svd", A, full_matrices=bool(full_matrices))
    return _Svd(U, S, Vh)


def svdvals(A, *, driver=None):
    return apply("linalg_svd", A, full_matrices=False)[1]


def eigh(A, UPLO="L"):
    if UPLO not in ("L", "U"):
        raise RuntimeError(f"Expected UPLO argument to be 'L' or 'U', but got {UPLO}")
    L, V = apply("linalg_eigh", A, UPLO=UPLO)
    return _Eigh(L, V)


def eigvalsh(A, UPLO="L"):
    return eigh(A, UPLO).eigenvalues


def cholesky(A, *, upper=False):
    return apply("linalg_cholesky", A, upper=bool(upper))


def qr(A, mode="reduced"):
    if mode not in ("reduced", "r", "complete"):
        raise RuntimeError(f"qr received unrecognized mode '{mode}' but expected one of 'reduced' (default), 'r', "
                           f"or 'complete'")
    Q, R = apply("linalg_qr", A, mode=mode)
    return _Qr(Q, R)


def pinv(A, *, atol=None, rtol=None, hermitian=False):
    """``hermitian`` is not used: the SVD's result, the same as PyTorch's for a symmetric A."""
    return apply("linalg_pinv", A, atol=None if atol is None else float(atol),
                 rtol=None if rtol is None else float(rtol))


def matrix_rank(A, *, atol=None, rtol=None, hermitian=False):
    """An int64 tensor computed from the values (no graph); ``hermitian`` is not used."""
    from . import dtypes
    from .factories import tensor
    if A.ndim < 2:
        raise RuntimeError("torch.linalg.matrix_rank: The input tensor input must have at least 2 dimensions.")
    a = A.detach().numpy()
    s = np.linalg.svd(a, compute_uv=False)
    return tensor((s > cutoff(s, atol, rtol, a.shape)).sum(-1).astype(np.int64), dtype=dtypes.int64)


def solve_triangular(A, B, *, upper, left=True, unitriangular=False):
    """A composition: solve with the triangle of A (its diagonal taken as ones if unitriangular), so
    A's gradient is that triangle's."""
    from .compositions import tril, triu
    T = triu(A) if upper else tril(A)
    if unitriangular:
        from .arrangement import eye
        I = eye(A.shape[-1], dtype=A.dtype)
        T = T * (1 - I) + I
    if not left:
        return solve(T.transpose(-2, -1), B.transpose(-2, -1)).transpose(-2, -1)
    return solve(T, B)


# ---- norms --------------------------------------------------------------------------------------
def vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None):
    if isinstance(ord, str):
        raise TypeError("linalg_vector_norm(): argument 'ord' (position 2) must be Number, not str")
    if dtype is not None:
        x = x.to(dtype)
    return x.norm(ord, dim=dim, keepdim=keepdim)


def _matrix_norm_ord(ord):
    if ord not in ("fro", "nuc") and (isinstance(ord, str) or ord not in (2, -2, 1, -1, math.inf, -math.inf)):
        raise RuntimeError(f"linalg.matrix_norm: Order {ord} not supported.")


def matrix_norm(A, ord="fro", dim=(-2, -1), keepdim=False, *, dtype=None):
    """'fro' a vector 2-norm; 1 / -1 / inf / -inf the max / min absolute column / row sum; 2 / -2 /
    'nuc' the largest / smallest / sum of the singular values (PyTorch's compositions)."""
    from .tensor_api import norm_dim
    if A.ndim < 2:
        raise RuntimeError("linalg.matrix_norm: The input tensor A must have at least 2 dimensions.")
    dim = tuple(dim) if isinstance(dim, (tuple, list)) else (dim,)
    if len(dim) != 2:
        raise RuntimeError(f"linalg.matrix_norm: dim must be a 2-tuple. Got {' '.join(map(str, dim))}")
    _matrix_norm_ord(ord)
    if dtype is not None:
        A = A.to(dtype)
    d0, d1 = norm_dim(dim[0], A.ndim), norm_dim(dim[1], A.ndim)
    if d0 == d1:
        raise RuntimeError(f"linalg.matrix_norm: dims must be different. Got ({dim[0]}, {dim[1]})")
    if ord == "fro":
        return vector_norm(A, 2, (d0, d1), keepdim)
    if ord in ("nuc", 2, -2):
        rest = [d for d in range(A.ndim) if d not in (d0, d1)]
        perm = rest + [d0, d1]
        s = svdvals(A.permute(*perm))
        r = s.sum(-1) if ord == "nuc" else s.amax(-1) if ord == 2 else s.amin(-1)
        if keepdim:
            r = r.unsqueeze(-1).unsqueeze(-1).permute(*np.argsort(perm).tolist())
        return r
    if abs(ord) == math.inf:
        d0, d1 = d1, d0
    sums = vector_norm(A, 1, d0, keepdim)
    if not keepdim and d1 > d0:
        d1 -= 1
    return sums.amax(d1, keepdim) if ord > 0 else sums.amin(d1, keepdim)


def norm(A, ord=None, dim=None, keepdim=False, *, dtype=None):
    """PyTorch's rules: an int or 1-tuple dim, or a 1-D input with ord, a vector norm; a 2-tuple
    dim, or a 2-D input with ord, a matrix norm; no dim and no ord the 2-norm of all elements."""
    if dim is not None:
        dims = tuple(dim) if isinstance(dim, (tuple, list)) else (dim,)
        if len(dims) == 2:
            return matrix_norm(A, "fro" if ord is None else ord, dims, keepdim, dtype=dtype)
        if len(dims) != 1:
            raise RuntimeError(f"linalg.norm: If dim is specified, it must be of length 1 or 2. Got {list(dims)}")
        if isinstance(ord, str):
            return matrix_norm(A, ord, dims, keepdim, dtype=dtype)
        return vector_norm(A, 2 if ord is None else ord, dims, keepdim, dtype=dtype)
    if ord is None:
        return vector_norm(A, 2, None, keepdim, dtype=dtype)
    if A.ndim not in (1, 2):
        raise RuntimeError(f"linalg.norm: If dim is not specified but ord is, the input must be 1D or 2D. "
                           f"Got {A.ndim}D.")
    if A.ndim == 2:
        return matrix_norm(A, ord, (-2, -1), keepdim, dtype=dtype)
    if isinstance(ord, str):
        return matrix_norm(A, ord, (-2, -1), keepdim, dtype=dtype)      # (PyTorch's error for a 1-D A)
    return vector_norm(A, ord, None, keepdim, dtype=dtype)


def cond(A, p=None):
    """2 / -2 / None: the ratio of the extreme singular values; others norm(A) * norm(inv(A))."""
    if p in (None, 2, -2):
        s = svdvals(A)
        big, small = s.narrow(-1, 0, 1), s.narrow(-1, s.shape[-1] - 1, 1)
        return (big / small if p != -2 else small / big).squeeze(-1)
    if p not in ("fro", "nuc", 1, -1, math.inf, -math.inf):
        raise RuntimeError(f"linalg.cond got an invalid norm type: {p}")
    return matrix_norm(A, p) * matrix_norm(inv(A), p)


# ---- products -----------------------------------------------------------------------------------
def vecdot(x, y, *, dim=-1):
    return (x * y).sum(dim)


def cross(input, other, *, dim=-1):
    from .aliases import broadcast_tensors
    from .arithmetic import cross as _cross
    if input.ndim != other.ndim:
        raise RuntimeError("linalg.cross: inputs must have the same number of dimensions.")
    a, b = broadcast_tensors(input, other)
    return _cross(a, b, dim)


def multi_dot(tensors):
    tensors = list(tensors)
    if len(tensors) < 2:
        raise RuntimeError(f"multi_dot(): expected at least 2 tensors but got {len(tensors)}")
    out = tensors[0]
    for t in tensors[1:]:
        out = out @ t
    return out


def matrix_power(A, n):
    from .aliases import matrix_power as _matrix_power
    return _matrix_power(A, n)


def diagonal(A, *, offset=0, dim1=-2, dim2=-1):
    from .compositions import diagonal as _diagonal
    return _diagonal(A, offset, dim1, dim2)


def matmul(input, other):
    return input @ other
