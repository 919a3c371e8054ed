"""``torch.linalg``: inv, det, slogdet, solve and the decompositions svd, eigh, cholesky, qr, pinv
(table ops whose forward is NumPy's LAPACK and whose gradients are written with gradc ops, so
they differentiate twice: ops/linalg.py, ops/decompositions.py); the vector / matrix norms,
svdvals, eigvalsh, matrix_rank, cond, cross, vecdot, multi_dot as compositions.  LU (lu_factor[_ex],
lu: table ops with LAPACK getrf's pivots, computed in NumPy), lu_solve, the _ex variants, lstsq,
tensorinv, tensorsolve, vander and householder_product at the end."""
from __future__ import annotations

import math

import numpy as np

from .ops.decompositions import LinAlgError, cutoff  # noqa: F401  (torch.linalg.LinAlgError)
from .autograd.node import grad_fn_named
from .autocast_state import float32_precision, lower_precision
from .return_types import return_type as _return_type
from .ops.dispatch import apply


_Slogdet = _return_type("linalg_slogdet", ["sign", "logabsdet"])
_Slogdet_legacy = _return_type("slogdet", ["sign", "logabsdet"])    # torch.slogdet / Tensor.slogdet
_Svd = _return_type("linalg_svd", ["U", "S", "Vh"])
_Eigh = _return_type("linalg_eigh", ["eigenvalues", "eigenvectors"])
_Qr = _return_type("linalg_qr", ["Q", "R"])


@float32_precision
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


@float32_precision
def solve(A, B, *, left=True):
    if not left:
        return grad_fn_named("LinalgSolveExBackward0")(
            lambda: solve(A.transpose(-2, -1), B.transpose(-2, -1)).transpose(-2, -1))()
    return apply("linalg_solve", A, B)


# ---- decompositions -----------------------------------------------------------------------------
@float32_precision
def svd(A, full_matrices=True, *, driver=None):
    """Full matrices as PyTorch's default; the extra columns of U / rows of Vh get no gradient
    (as in PyTorch)."""
    U, S, Vh = apply("linalg_svd", A, full_matrices=bool(full_matrices))
    return _Svd(U, S, Vh)


@float32_precision
def svdvals(A, *, driver=None):
    return apply("linalg_svd", A, full_matrices=False)[1]


@float32_precision
def eigh(A, UPLO="L"):
    if UPLO not in ("L", "U"):
        raise RuntimeError(f"Expected UPLO argument to be 'L' or 'U', but got {UPLO}")
    L, V = apply("linalg_eigh", A, UPLO=UPLO)
    return _Eigh(L, V)


@float32_precision
def eigvalsh(A, UPLO="L"):
    return eigh(A, UPLO).eigenvalues


@float32_precision
def cholesky(A, *, upper=False):
    return apply("linalg_cholesky", A, upper=bool(upper))


@float32_precision
def qr(A, mode="reduced"):
    if mode not in ("reduced", "r", "complete"):
        raise RuntimeError(f"qr received unrecognized mode '{mode}' but expected one of 'reduced' (default), 'r', "
                           f"or 'complete'")
    Q, R = apply("linalg_qr", A, mode=mode)
    return _Qr(Q, R)


@float32_precision
def pinv(A, *, atol=None, rtol=None, hermitian=False):
    """``hermitian`` is not used: the SVD's result, the same as PyTorch's for a symmetric A."""
    return apply("linalg_pinv", A, atol=None if atol is None else float(atol),
                 rtol=None if rtol is None else float(rtol))


@float32_precision
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
_VECTOR_NORM = ("(Tensor input, Number ord = 2, tuple of ints[1]? dim = None, bool keepdim = False, *, "
                "torch.dtype dtype = None)",)


def vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None):
    from .arg_parser import ArgumentError, bool_arg, dtype_arg, reparse
    from .tensor_api import reduction_dims
    try:
        if isinstance(ord, str) or ord is None:
            raise ArgumentError("ord")
        dt = None if dtype is None else dtype_arg(dtype)
        dims, keepdim = reduction_dims(dim, x.ndim), bool_arg(keepdim)
    except ArgumentError:
        reparse("linalg_vector_norm", _VECTOR_NORM, (x, ord, dim, keepdim), {"dtype": dtype} if dtype else {})
        raise
    x = _vector_norm_input(x, dt)
    return apply("norm", x, p=float(ord), dims=dims, keepdim=keepdim, _name="LinalgVectorNormBackward0")


def _vector_norm_input(x, dt):
    """``x`` in the ``dtype=`` asked for, with PyTorch's checks: a floating point input, a
    floating point dtype it converts to without narrowing."""
    if not x.dtype.is_floating_point:
        raise RuntimeError("linalg.vector_norm: Expected a floating point or complex tensor as input. Got "
                           f"{x.dtype.scalar_type}")
    if dt is None or dt is x.dtype:
        return x
    if not dt.is_floating_point:
        raise RuntimeError(f"linalg.vector_norm: dtype should be floating point or complex, but got {dt.scalar_type}")
    if dt.itemsize < x.dtype.itemsize:
        raise RuntimeError(f"linalg.vector_norm: the dtype of the input ({x.dtype.scalar_type}) should be "
                           f"convertible without narrowing to the specified dtype ({dt.scalar_type})")
    return x.to(dt)


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


@float32_precision
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
@lower_precision
def vecdot(x, y, *, dim=-1):
    return (x * y).sum(dim)


@grad_fn_named("LinalgCrossBackward0")
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


# ---- LU, the _ex variants, least squares, tensorinv / tensorsolve, vander, householder_product -------
_LuFactor = _return_type("linalg_lu_factor", ["LU", "pivots"])
_LuFactorEx = _return_type("linalg_lu_factor_ex", ["LU", "pivots", "info"])
_Lu = _return_type("linalg_lu", ["P", "L", "U"])
_InvEx = _return_type("linalg_inv_ex", ["inverse", "info"])
_CholeskyEx = _return_type("linalg_cholesky_ex", ["L", "info"])
_SolveEx = _return_type("linalg_solve_ex", ["result", "info"])
_Lstsq = _return_type("linalg_lstsq", ["solution", "residuals", "rank", "singular_values"])


def _int32(a):
    from . import dtypes
    from .factories import tensor
    return tensor(np.asarray(a, np.int32), dtype=dtypes.int32)


def _batch_prefix(info):
    """PyTorch's '(Batch element i): ' for the first failing matrix of a batch ('' unbatched)."""
    flat = np.asarray(info).reshape(-1)
    i = int(np.flatnonzero(flat)[0])
    return (f"(Batch element {i}): " if np.ndim(info) else ""), int(flat[i])


def _no_pivot(name, pivot):
    if not pivot:
        raise RuntimeError(f"linalg.{name}: LU without pivoting is not implemented on the CPU")


def lu_factor_ex(A, *, pivot=True, check_errors=False):
    """(LU, pivots, info): LAPACK getrf's partial pivoting (NumPy, ops/decompositions.py); pivots
    1-based int32, info the first zero pivot (1-based, 0 when none).  LU is differentiable."""
    _no_pivot("lu_factor", pivot)
    LU, piv, info, _ = apply("linalg_lu_factor", A)
    if check_errors and info.numpy().any():
        batch, k = _batch_prefix(info.numpy())
        raise RuntimeError(f"torch.linalg.lu_factor_ex: {batch}U[{k},{k}] is zero and using it on lu_solve would "
                          "result in a division by zero. If you still want to perform the factorization, consider "
                          "calling linalg.lu(A, pivot) or linalg.lu_factor_ex(A, pivot)")
    return _LuFactorEx(LU, piv, info)


def lu_factor(A, *, pivot=True):
    _no_pivot("lu_factor", pivot)
    LU, piv, info, _ = apply("linalg_lu_factor", A)
    if info.numpy().any():
        batch, k = _batch_prefix(info.numpy())
        raise RuntimeError(f"torch.linalg.lu_factor: {batch}U[{k},{k}] is zero and using it on lu_solve would "
                          "result in a division by zero. If you still want to perform the factorization, consider "
                          "calling linalg.lu(A, pivot) or linalg.lu_factor_ex(A, pivot)")
    return _LuFactor(LU, piv)


def lu(A, *, pivot=True):
    _no_pivot("lu_factor", pivot)
    P, L, U = apply("linalg_lu", A)
    return _Lu(P, L, U)


def lu_solve(LU, pivots, B, *, left=True, adjoint=False):
    """A composition: A = P L U with L, U the triangles of LU (so LU's gradient is theirs, as
    PyTorch's), P from the pivots (data, not differentiable)."""
    from . import dtypes
    from .compositions import tril, triu
    from .factories import tensor
    from .ops.decompositions import permutation_np
    if LU.ndim < 2 or LU.shape[-1] != LU.shape[-2]:
        raise RuntimeError(f"torch.linalg.lu_solve: A must be batches of square matrices, but they are "
                           f"{LU.shape[-2] if LU.ndim >= 2 else 1} by {LU.shape[-1] if LU.ndim else 1} matrices")
    if B.ndim < 2:
        raise RuntimeError("linalg.lu_solve: The input tensor B must have at least 2 dimensions.")
    if pivots.dtype is not dtypes.int32:
        raise RuntimeError("linalg.lu_solve: pivots should be a Tensor of scalar type torch.int32")
    n = LU.shape[-1]
    rows = B.shape[-2] if left else B.shape[-1]
    if rows != n:
        eq = "AX = B" if left else "XA = B"
        shape = f"{n}x{n} and {B.shape[-2]}x{B.shape[-1]}"
        raise RuntimeError(f"linalg.lu_solve: Incompatible shapes of A and B for the equation {eq} ({shape})")
    P = tensor(permutation_np(pivots.numpy(), n, np.dtype(LU.dtype.name)), dtype=LU.dtype)

    def body():
        from .arrangement import eye
        I = eye(n, dtype=LU.dtype)
        L = tril(LU, -1) + I
        U = triu(LU)
        X = B if left else B.mT
        if left != adjoint:          # A X = B:  X = U^-1 L^-1 P^T B
            return _finish(solve(U, solve(L, P.mT @ X)), left)
        return _finish(P @ solve(L.mT, solve(U.mT, X)), left)   # A^T X = B

    return grad_fn_named("LinalgLuSolveBackward0")(body)()


def _finish(X, left):
    return X if left else X.mT


def _info_or_raise(info, check_errors, message):
    if check_errors and np.asarray(info).any():
        batch, k = _batch_prefix(info)
        raise LinAlgError(message.format(batch=batch, k=k))
    return _int32(info)


def _unchecked(values, dtype):
    """The result where some matrix failed: NumPy's values (inf / nan), no graph."""
    from .factories import tensor
    return tensor(values, dtype=dtype)


def inv_ex(A, *, check_errors=False):
    """(inverse, info): info the first zero pivot of LU (1-based, 0 when invertible).  Where a
    matrix is singular the inverse is NumPy's LU substitution (inf / nan, no graph)."""
    from .ops.decompositions import lu_factor_np
    if A.ndim >= 2 and A.shape[-1] == A.shape[-2] and A.dtype.is_floating_point:
        info = lu_factor_np(A.detach().numpy())[2]
        if info.any():
            _info_or_raise(info, check_errors, "linalg.inv_ex: {batch}The diagonal element {k} is zero, the "
                           "inversion could not be completed because the input matrix is singular.")
            a = A.detach().numpy()
            return _InvEx(_unchecked(_lu_substitute(a, np.broadcast_to(np.eye(a.shape[-1], dtype=a.dtype),
                                                                                  a.shape)), A.dtype), _int32(info))
    return _InvEx(inv(A), _int32(np.zeros(A.shape[:-2], np.int32)))


def _lu_substitute(a, b):
    """X = A^-1 B by LU and plain substitution (inf / nan where a pivot is zero)."""
    from .ops.decompositions import _unpack_np, lu_factor_np, permutation_np
    lu, piv, _ = lu_factor_np(a)
    L, U = _unpack_np(lu)
    x = np.swapaxes(permutation_np(piv, a.shape[-1], a.dtype), -1, -2) @ b
    n = a.shape[-1]
    with np.errstate(all="ignore"):
        for i in range(n):
            x[..., i, :] -= (L[..., i, :i, None] * x[..., :i, :]).sum(-2)
        for i in reversed(range(n)):
            x[..., i, :] = (x[..., i, :] - (U[..., i, i + 1:, None] * x[..., i + 1:, :]).sum(-2)) / U[..., i, i, None]
    return x


def _cholesky_info(a):
    """LAPACK potrf's info for each matrix: the order of the first leading minor that is not
    positive-definite (0 when none), and the partial factor it leaves (lower)."""
    flat = np.array(a.reshape((-1,) + a.shape[-2:]), copy=True)
    info = np.zeros(flat.shape[0], np.int32)
    for b, m in enumerate(flat):
        L = np.tril(m)
        for j in range(m.shape[0]):
            ajj = L[j, j] - L[j, :j] @ L[j, :j]
            if not ajj > 0:
                L[j, j] = ajj
                info[b] = j + 1
                break
            L[j, j] = np.sqrt(ajj)
            L[j + 1:, j] = (L[j + 1:, j] - L[j + 1:, :j] @ L[j, :j]) / L[j, j]
        flat[b] = L
    return info.reshape(a.shape[:-2]), flat.reshape(a.shape)


def cholesky_ex(A, *, upper=False, check_errors=False):
    """(L, info): info potrf's (the order of the first leading minor that is not positive-definite).
    Where a matrix fails, L is the partial factor LAPACK's unblocked potrf leaves (no graph)."""
    if A.ndim >= 2 and A.shape[-1] == A.shape[-2] and A.dtype.is_floating_point:
        a = A.detach().numpy()
        info, partial = _cholesky_info(np.swapaxes(a, -1, -2) if upper else a)     # potrf reads that triangle
        if info.any():
            _info_or_raise(info, check_errors, "linalg.cholesky_ex: {batch}The factorization could not be completed "
                           "because the input is not positive-definite (the leading minor of order {k} is not "
                           "positive-definite).")
            if upper:
                partial = np.swapaxes(partial, -1, -2)
            return _CholeskyEx(_unchecked(partial, A.dtype), _int32(info))
    return _CholeskyEx(cholesky(A, upper=upper), _int32(np.zeros(A.shape[:-2], np.int32)))


def solve_ex(A, B, *, left=True, check_errors=False):
    """(result, info): info the first zero pivot of A's LU.  Where a matrix is singular the result
    is NumPy's LU substitution (inf / nan, no graph)."""
    from .ops.decompositions import lu_factor_np
    if A.ndim >= 2 and A.shape[-1] == A.shape[-2] and A.dtype.is_floating_point:
        info = lu_factor_np(A.detach().numpy())[2]
        if info.any():
            _info_or_raise(info, check_errors, "torch.linalg.solve_ex: {batch}The solver failed because the input "
                           "matrix is singular.")
            a, b = A.detach().numpy(), B.detach().numpy()
            vector = b.ndim == 1 or (b.ndim == a.ndim - 1 and b.shape == a.shape[:-1])
            if not left:
                a, b = np.swapaxes(a, -1, -2), np.swapaxes(b, -1, -2)
            bb = b[..., None] if vector else b
            shape = np.broadcast_shapes(a.shape[:-2], bb.shape[:-2])
            x = _lu_substitute(np.broadcast_to(a, shape + a.shape[-2:]).copy(),
                               np.broadcast_to(bb, shape + bb.shape[-2:]).copy())
            x = x[..., 0] if vector else (x if left else np.swapaxes(x, -1, -2))
            return _SolveEx(_unchecked(x, A.dtype), _int32(info))
    return _SolveEx(solve(A, B, left=left), _int32(np.zeros(A.shape[:-2], np.int32)))


_DRIVERS = ("gels", "gelsy", "gelsd", "gelss")


@float32_precision
def lstsq(A, B, rcond=None, *, driver=None):
    """solution = pinv(A) B (the minimum-norm least-squares solution: PyTorch's for the rank-revealing
    drivers, and its gradient is PyTorch's pinv-based one); residuals (m > n, full rank, not
    gelsy), rank (not gels) and singular values (gelsd / gelss) as PyTorch's drivers return them."""
    from . import dtypes
    from .factories import tensor
    if A.ndim < 2:
        raise RuntimeError("torch.linalg.lstsq: input must have at least 2 dimensions.")
    if not (A.ndim >= B.ndim and A.ndim - B.ndim <= 1):
        raise RuntimeError("torch.linalg.lstsq: input.dim() must be greater or equal to other.dim() and "
                           "(input.dim() - other.dim()) <= 1")
    if A.dtype is not B.dtype:
        raise RuntimeError(f"torch.linalg.lstsq: Expected input and other to have the same dtype, but got input's "
                           f"dtype {A.dtype.tensor_type[:-6]} and other's dtype {B.dtype.tensor_type[:-6]}")
    driver = "gelsy" if driver is None else driver
    if driver not in _DRIVERS:
        raise RuntimeError("torch.linalg.lstsq: parameter `driver` should be one of (gels, gelsy, gelsd, gelss)")
    vector = B.ndim == A.ndim - 1
    rows = B.shape[-1] if vector else B.shape[-2]
    if rows != A.shape[-2]:
        raise RuntimeError("torch.linalg.lstsq: input.size(-2) should match other.size(-2)")
    m, n = A.shape[-2:]
    a = A.detach().numpy()
    s = np.linalg.svd(a, compute_uv=False)
    if rcond is None or rcond < 0:
        rcond = float(np.finfo(a.dtype).eps) * max(m, n)
    tol = rcond * (s[..., :1] if s.shape[-1] else np.zeros(s.shape[:-1] + (1,), s.dtype))
    ranks = (s > tol).sum(-1).astype(np.int64)
    Bm = B.unsqueeze(-1) if vector else B

    def solution():
        return pinv(A, rtol=rcond) @ Bm

    X = grad_fn_named("LinalgLstsqBackward0")(solution)()
    empty = tensor(np.zeros(0, a.dtype), dtype=A.dtype)
    residuals = empty
    if m > n and driver != "gelsy" and bool((ranks == n).all()):
        residuals = grad_fn_named("LinalgLstsqBackward0")(lambda: ((A @ X - Bm) ** 2).sum(-2))()
    if vector:
        X = grad_fn_named("LinalgLstsqBackward0")(lambda: X.squeeze(-1))()
    rank = tensor(np.zeros(0, np.int64), dtype=dtypes.int64) if driver == "gels" else \
        tensor(ranks, dtype=dtypes.int64)
    sv = tensor(s, dtype=A.dtype) if driver in ("gelsd", "gelss") else empty
    return _Lstsq(X, residuals, rank, sv)


def tensorinv(A, ind=2):
    import math as _m
    if ind <= 0:
        raise RuntimeError(f"Expected a strictly positive integer for 'ind', but got {ind}")
    outer, inner = tuple(A.shape[:ind]), tuple(A.shape[ind:])
    po, pi = _m.prod(outer), _m.prod(inner)
    if po != pi:
        raise RuntimeError(f"Expected self to satisfy the requirement prod(self.shape[ind:]) == "
                           f"prod(self.shape[:ind]), but got {pi} != {po}")
    try:
        return grad_fn_named("ReshapeAliasBackward0")(lambda: inv(A.reshape(po, pi)).reshape(inner + outer))()
    except LinAlgError as e:
        raise LinAlgError(str(e).replace("linalg.inv:", "inv:", 1)) from None


def tensorsolve(A, B, dims=None):
    import math as _m
    if dims is not None:
        nd = A.ndim
        dims = [d % nd for d in dims]
        rest = [d for d in range(nd) if d not in dims]
        A = A.permute(*(rest + dims))
    result_shape = tuple(A.shape[B.ndim:])
    pr, pb = _m.prod(result_shape), B.numel()
    if pr != pb:
        raise RuntimeError(f"Expected self to satisfy the requirement prod(self.shape[other.ndim:]) == "
                           f"prod(self.shape[:other.ndim]), but got {pr} != {pb}")
    return solve(A.reshape(pb, pr), B.reshape(pb)).reshape(result_shape)


def vander(x, *, N=None):
    """PyTorch's composition: a column of ones and the cumulative products of x (CatBackward0)."""
    from . import dtypes
    from .tensor_api import cat
    if x.dtype is dtypes.bool_ or not (x.dtype.is_floating_point or x.dtype.name.startswith(("int", "uint"))):
        raise RuntimeError(f"linalg.vander supports floating point, complex, and integer tensors, but got "
                           f"{x.dtype.tensor_type[:-6]}")
    x_ = x.unsqueeze(-1) if x.ndim == 0 else x
    n = x_.shape[-1] if N is None else N
    if n <= 1:
        raise RuntimeError("N must be greater than 1.")
    powers = x_.unsqueeze(-1).expand(*x_.shape, n - 1).cumprod(-1)
    from .factories import ones
    return cat([ones(*x_.shape, 1, dtype=powers.dtype), powers], -1)


@float32_precision
def householder_product(A, tau):
    """Q = H_1 ... H_k (first n columns), H_i = I - tau_i v_i v_i^T with v_i the i-th column of
    A's strict lower triangle and a 1 at i: a composition, so differentiable (twice)."""
    name = "torch.linalg.householder_product"
    if A.ndim < 2:
        raise RuntimeError(f"{name}: input must have at least 2 dimensions.")
    m, n = A.shape[-2:]
    if m < n:
        raise RuntimeError(f"{name}: input.shape[-2] must be greater than or equal to input.shape[-1]")
    if n < tau.shape[-1]:
        raise RuntimeError(f"{name}: input.shape[-1] must be greater than or equal to tau.shape[-1]")
    if tau.ndim != A.ndim - 1:
        raise RuntimeError(f"{name}: Expected tau to have one dimension less than input, but got tau.ndim equal to "
                           f"{tau.ndim} and input.ndim is equal to {A.ndim}")
    if tuple(tau.shape[:-1]) != tuple(A.shape[:-2]):
        raise RuntimeError(f"{name}: Expected batch dimensions of tau to be equal to input.shape[:-2], but got "
                           f"{list(tau.shape[:-1])}")
    if tau.dtype is not A.dtype:
        raise RuntimeError(f"{name}: tau dtype {tau.dtype.tensor_type[:-6]} does not match input dtype "
                           f"{A.dtype.tensor_type[:-6]}")

    def body():
        from .arrangement import eye
        from .compositions import tril
        V = tril(A, -1) + eye(m, n, dtype=A.dtype)
        Q = eye(m, dtype=A.dtype).expand(*A.shape[:-2], m, m)
        for i in range(tau.shape[-1]):
            v = V.narrow(-1, i, 1)
            Q = Q - (Q @ v) * tau.narrow(-1, i, 1).unsqueeze(-1) @ v.mT
        return Q.narrow(-1, 0, n)

    return grad_fn_named("LinalgHouseholderProductBackward0")(body)()
