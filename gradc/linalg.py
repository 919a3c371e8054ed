"""``torch.linalg``: inv, det, slogdet, solve (table ops whose forward is NumPy's LAPACK and whose
gradients are written with those ops, so they differentiate twice) and the vector / matrix
norms as compositions."""
from __future__ import annotations

from collections import namedtuple

from .ops.dispatch import apply

_Slogdet = namedtuple("linalg_slogdet", ["sign", "logabsdet"])
_Slogdet.__repr__ = lambda self: (f"torch.return_types.linalg_slogdet(\nsign={self.sign!r},\n"
                                  f"logabsdet={self.logabsdet!r})")


def inv(A):
    return apply("linalg_inv", A)


def det(A):
    return apply("linalg_det", A)


def slogdet(A):
    sign, logabs = apply("linalg_slogdet", A)
    return _Slogdet(sign, logabs)


def solve(A, B, *, left=True):
    if not left:
        return solve(A.transpose(-2, -1), B.transpose(-2, -1)).transpose(-2, -1)
    return apply("linalg_solve", A, B)


def vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None):
    if dtype is not None:
        x = x.to(dtype)
    return x.norm(ord, dim=dim, keepdim=keepdim)


def matrix_norm(A, ord="fro", dim=(-2, -1), keepdim=False, *, dtype=None):
    if ord != "fro":
        raise NotImplementedError(f"linalg.matrix_norm: ord={ord!r} is not supported in gradc (only 'fro')")
    return vector_norm(A, 2, dim, keepdim, dtype=dtype)


def norm(A, ord=None, dim=None, keepdim=False, *, dtype=None):
    if ord is None or (ord == "fro" and (dim is None or len(dim) == 2)):
        return vector_norm(A, 2, dim, keepdim, dtype=dtype)
    if isinstance(ord, str):
        return matrix_norm(A, ord, dim if dim is not None else (-2, -1), keepdim, dtype=dtype)
    return vector_norm(A, ord, dim, keepdim, dtype=dtype)
