"""Matrix decompositions as table ops: svd, eigh, cholesky, qr, pinv and the matrix exponential.

The forward is NumPy's LAPACK (eager, and a NumPy step in compiled code); each VJP is written
with gradc ops (matmul, elementwise, linalg_inv/linalg_solve and these ops' own outputs), so it
differentiates again.  The formulas are the standard ones PyTorch uses (svd_backward,
linalg_eig_backward for the Hermitian case, cholesky_backward, linalg_qr_backward,
pinv_backward), re-derived for real matrices.
"""
from __future__ import annotations

import numpy as np

from .dispatch import apply
from .registry import PURE, ShapeError, TypeInfo, defop
from .linalg import LinAlgError, _mT, _square, first_failure




# ---- helpers: masks built from ops on a tensor, so they work eagerly, traced and in IR autodiff --
def _index_grids(x):
    """Row and column index (from 1) of each element of the matrices of ``x``, as ``x``'s dtype."""
    ones = apply("fill", x, value=1.0)
    return ones.cumsum(-2), ones.cumsum(-1)


def _eye_like(x):
    r, c = _index_grids(x)
    return (r == c).to(x.dtype)


def _skew(x):
    return x - _mT(x)


def _matrix_input(name, t, square=False):
    if square:
        _square(name, t)
        return
    if t.ndim < 2:
        raise ShapeError(f"linalg.{name}: The input tensor A must have at least 2 dimensions.")
    if not t.dtype.is_floating_point:
        raise ShapeError(f"linalg.{name}: Expected a floating point or complex tensor as input. Got "
                         f"{t.dtype.tensor_type[:-6]}")


# ---- SVD ------------------------------------------------------------------------------------------
def _svd_infer(types, attrs):
    a = types[0]
    _matrix_input("svd", a)
    m, n = a.shape[-2:]
    k = min(m, n)
    full = attrs.get("full_matrices", False)
    b = tuple(a.shape[:-2])
    return [TypeInfo(b + (m, m if full else k), a.dtype), TypeInfo(b + (k,), a.dtype),
            TypeInfo(b + (n if full else k, n), a.dtype)]


def _svd_forward(a, full_matrices=False):
    u, s, vh = np.linalg.svd(a, full_matrices=bool(full_matrices))
    return u, s, vh


def _svd_vjp(ctx, g):
    """Gauge-invariant SVD backward: A = U diag(S) Vh with E_ij = S_j^2 - S_i^2 off the diagonal,
    gA = U [sym parts / E + diag(gS)] Vh plus the terms from the complements of U / V when A is
    not square.  With full_matrices only the first k columns of U (rows of Vh) carry gradient."""
    gU, gS, gVh = g
    U, S, Vh = ctx.output(0), ctx.output(1), ctx.output(2)
    m, n = ctx.input_shape(0)[-2:]
    k = min(m, n)
    if ctx.attrs.get("full_matrices", False):
        U, Vh = U.narrow(-1, 0, k), Vh.narrow(-2, 0, k)
        gU = None if gU is None else gU.narrow(-1, 0, k)
        gVh = None if gVh is None else gVh.narrow(-2, 0, k)
    if gU is None and gVh is None:
        if gS is None:
            return [None]
        return [(U * gS.unsqueeze(-2)) @ Vh]
    S2 = S * S
    eye = _eye_like(S.unsqueeze(-1) * S.unsqueeze(-2))
    E = S2.unsqueeze(-2) - S2.unsqueeze(-1) + eye
    gV = None if gVh is None else _mT(gVh)
    if gU is not None and gV is not None:
        inner = (_skew(_mT(U) @ gU) * S.unsqueeze(-2) + S.unsqueeze(-1) * _skew(Vh @ gV)) / E
    elif gU is not None:
        inner = (_skew(_mT(U) @ gU) / E) * S.unsqueeze(-2)
    else:
        inner = S.unsqueeze(-1) * (_skew(Vh @ gV) / E)
    if gS is not None:
        inner = inner + eye * gS.unsqueeze(-2)
    if m > k and gU is not None:
        gA = U @ inner
        gUSinv = gU / S.unsqueeze(-2)
        gA = (gA + gUSinv - U @ (_mT(U) @ gUSinv)) @ Vh
    elif n > k and gV is not None:
        gA = inner @ Vh
        SinvgVh = gVh / S.unsqueeze(-1)
        gA = U @ (gA + SinvgVh - (SinvgVh @ _mT(Vh)) @ Vh)
    else:
        gA = U @ (inner @ Vh) if m >= n else (U @ inner) @ Vh
    return [gA]


defop("linalg_svd", infer=_svd_infer, forward=_svd_forward, vjp=_svd_vjp, saves=("out0", "out1", "out2"),
      traits=frozenset({PURE}), num_outputs=3, differentiable_outputs=(0, 1, 2), attr_names=("full_matrices",),
      node_name="LinalgSvdBackward0")


# ---- symmetric eigendecomposition -----------------------------------------------------------------
def _eigh_infer(types, attrs):
    a = types[0]
    _matrix_input("eigh", a, square=True)
    return [TypeInfo(tuple(a.shape[:-1]), a.dtype), a]


def _eigh_forward(a, UPLO="L"):
    w, v = np.linalg.eigh(a, UPLO=UPLO)
    return w.astype(a.dtype, copy=False), v.astype(a.dtype, copy=False)


def _eigh_vjp(ctx, g):
    """gA = V (skew(V^T gV) / 2 / E + diag(gL)) V^T with E_ij = L_j - L_i (PyTorch's, unsymmetrized)."""
    gL, gV = g
    L, V = ctx.output(0), ctx.output(1)
    if gV is None:
        if gL is None:
            return [None]
        return [(V * gL.unsqueeze(-2)) @ _mT(V)]
    eye = _eye_like(V)
    E = L.unsqueeze(-2) - L.unsqueeze(-1) + eye
    inner = (_skew(_mT(V) @ gV) * 0.5) / E
    if gL is not None:
        inner = inner + eye * gL.unsqueeze(-2)
    return [V @ (inner @ _mT(V))]


defop("linalg_eigh", infer=_eigh_infer, forward=_eigh_forward, vjp=_eigh_vjp, saves=("out0", "out1"),
      traits=frozenset({PURE}), num_outputs=2, differentiable_outputs=(0, 1), attr_names=("UPLO",),
      node_name="LinalgEighBackward0")


# ---- Cholesky ---------------------------------------------------------------------------------------
def _cholesky_infer(types, attrs):
    _matrix_input("cholesky", types[0], square=True)
    return [types[0]]


def _not_pd_order(a):
    """The order of the first leading minor of ``a`` that is not positive-definite."""
    for k in range(1, a.shape[-1] + 1):
        try:
            np.linalg.cholesky(a[:k, :k])
        except np.linalg.LinAlgError:
            return k
    return a.shape[-1]


def _cholesky_forward(a, upper=False):
    try:
        L = np.linalg.cholesky(a)
    except np.linalg.LinAlgError:
        batch, m = first_failure(a, np.linalg.cholesky)
        raise LinAlgError(f"linalg.cholesky: {batch}The factorization could not be completed because the input is not "
                          f"positive-definite (the leading minor of order {_not_pd_order(m)} is not "
                          "positive-definite).") from None
    return np.swapaxes(L, -1, -2).copy() if upper else L


def _cholesky_vjp(ctx, g):
    """gA = sym(L^-T Phi(L^T gL) L^-1), Phi the lower triangle with its diagonal halved."""
    L, gL = ctx.output(0), g[0]
    if ctx.attrs.get("upper", False):
        L, gL = _mT(L), _mT(gL)
    r, c = _index_grids(L)
    half_lower = (r > c).to(L.dtype) + (r == c).to(L.dtype) * 0.5
    phi = (_mT(L) @ gL) * half_lower
    Linv = apply("linalg_inv", L)
    gA = _mT(Linv) @ (phi @ Linv)
    return [(gA + _mT(gA)) * 0.5]


defop("linalg_cholesky", infer=_cholesky_infer, forward=_cholesky_forward, vjp=_cholesky_vjp, saves=("out0",),
      traits=frozenset({PURE}), attr_names=("upper",), node_name="LinalgCholeskyExBackward0")


# ---- QR (reduced) -----------------------------------------------------------------------------------
def _qr_infer(types, attrs):
    a = types[0]
    _matrix_input("qr", a)
    m, n = a.shape[-2:]
    mode = attrs.get("mode", "reduced")
    k = m if mode == "complete" else min(m, n)
    b = tuple(a.shape[:-2])
    q = TypeInfo((0,), a.dtype) if mode == "r" else TypeInfo(b + (m, k), a.dtype)
    return [q, TypeInfo(b + (k, n), a.dtype)]


def _qr_forward(a, mode="reduced"):
    if mode == "r":
        return np.empty(0, a.dtype), np.linalg.qr(a, mode="r")
    q, r = np.linalg.qr(a, mode=mode)
    return q, r


def _qr_tall_vjp(gQ, gR, Q, R):
    """m >= n: gA = (gQ + Q copyltu(M)) R^-T with M = gR R^T - Q^T gQ and copyltu(M) its upper
    triangle (with the diagonal) plus the strict upper triangle's transpose."""
    M = None
    if gR is not None:
        M = gR @ _mT(R)
    if gQ is not None:
        M = -(_mT(Q) @ gQ) if M is None else M - _mT(Q) @ gQ
    r, c = _index_grids(M)
    gA = Q @ (M * (r <= c).to(M.dtype) + _mT(M * (r < c).to(M.dtype)))
    if gQ is not None:
        gA = gA + gQ
    return _mT(apply("linalg_solve", R, _mT(gA)))      # gA R^-T


def _qr_vjp(ctx, g):
    """Tall or square: ``_qr_tall_vjp``.  Wide (m < n): A = [X | Y], R = [U | V] with X = QU the
    square QR and V = Q^T Y, so gQ gains Y gV^T, gY = Q gV and gX is the square case."""
    gQ, gR = g
    if gQ is None and gR is None:
        return [None]
    m, n = ctx.input_shape(0)[-2:]
    mode = ctx.attrs.get("mode", "reduced")
    if mode == "r":
        raise RuntimeError("The derivative of linalg.qr depends on Q, which is not computed when mode='r'. Please use "
                           "linalg.qr(A, mode='reduced') if you are going to differentiate through linalg.qr.")
    if mode == "complete" and m > n:
        raise RuntimeError("The QR decomposition is not differentiable when mode='complete' and nrows > ncols.")
    Q, R = ctx.output(0), ctx.output(1)
    if m >= n:
        return [_qr_tall_vjp(gQ, gR, Q, R)]
    A = ctx.input(0)
    Y = A.narrow(-1, m, n - m)
    gU = None if gR is None else gR.narrow(-1, 0, m)
    parts = []
    if gR is not None:
        gV = gR.narrow(-1, m, n - m)
        yg = Y @ _mT(gV)
        gQ = yg if gQ is None else gQ + yg
        parts = [Q @ gV]
    else:
        parts = [apply("fill", Y, value=0.0)]
    gX = _qr_tall_vjp(gQ, gU, Q, R.narrow(-1, 0, m))
    return [apply("cat", gX, *parts, dim=len(ctx.input_shape(0)) - 1)]


defop("linalg_qr", infer=_qr_infer, forward=_qr_forward, vjp=_qr_vjp, saves=("in0", "out0", "out1"),
      traits=frozenset({PURE}), num_outputs=2, differentiable_outputs=(0, 1), attr_names=("mode",),
      node_name="LinalgQrBackward0")


# ---- pseudo-inverse -----------------------------------------------------------------------------------
def _pinv_infer(types, attrs):
    a = types[0]
    if a.ndim < 2 or not a.dtype.is_floating_point:
        raise ShapeError(f"linalg.pinv({a.dtype.tensor_type[:-6]}{{{list(a.shape)}}}): expected a tensor with 2 or "
                         f"more dimensions of float, double, cfloat or cdouble types")
    return [TypeInfo(tuple(a.shape[:-2]) + (a.shape[-1], a.shape[-2]), a.dtype)]


def cutoff(s, atol, rtol, shape):
    """PyTorch's tolerance for pinv / matrix_rank: max(atol, rtol * largest singular value), rtol
    defaulting to eps * max(m, n) when neither is given (0 when only atol is)."""
    if rtol is None:
        rtol = np.finfo(s.dtype).eps * max(shape[-2:]) if not atol else 0.0
    smax = s[..., :1] if s.shape[-1] else np.zeros(s.shape[:-1] + (1,), s.dtype)
    return np.maximum(atol or 0.0, rtol * smax)


def _pinv_forward(a, atol=None, rtol=None):
    u, s, vh = np.linalg.svd(a, full_matrices=False)
    keep = s > cutoff(s, atol, rtol, a.shape)
    sinv = np.where(keep, 1.0 / np.where(keep, s, 1.0), 0.0).astype(a.dtype)
    return np.swapaxes(vh, -1, -2) @ (sinv[..., None] * np.swapaxes(u, -1, -2))


def _pinv_vjp(ctx, g):
    """P = A^+: gA = -P^T G P^T + (I - A P) G^T P P^T + P^T P G^T (I - P A) (constant rank)."""
    A, P, G = ctx.input(0), ctx.output(0), g[0]
    Pt, Gt = _mT(P), _mT(G)
    gA = -(Pt @ G @ Pt)
    gA = gA + (Gt - A @ (P @ Gt)) @ (P @ Pt)
    gA = gA + (Pt @ P) @ (Gt - (Gt @ P) @ A)
    return [gA]


defop("linalg_pinv", infer=_pinv_infer, forward=_pinv_forward, vjp=_pinv_vjp, saves=("in0", "out0"),
      traits=frozenset({PURE}), attr_names=("atol", "rtol"), node_name="LinalgPinvBackward0")


# ---- matrix exponential -------------------------------------------------------------------------------
def _matrix_exp_infer(types, attrs):
    _square("matrix_exp", types[0])
    return [types[0]]


# Padé(13) coefficients and the 1-norm bound under which it is accurate to double precision
# (Higham 2005, "The scaling and squaring method for the matrix exponential revisited")
_PADE13 = (64764752532480000., 32382376266240000., 7771770303897600., 1187353796428800., 129060195264000.,
           10559470521600., 670442572800., 33522128640., 1323241920., 40840800., 960960., 16380., 182., 1.)
_THETA13 = 5.371920351148152


def _matrix_exp_forward(a):
    """Scaling and squaring with a degree-13 Padé approximant, in float64 (NumPy only)."""
    x = np.asarray(a, dtype=np.float64)
    n = x.shape[-1]
    if x.size == 0 or n == 0:
        return np.array(a, copy=True)
    norm = np.abs(x).sum(-2).max(-1)              # 1-norm of each matrix
    s = np.maximum(0, np.ceil(np.log2(np.maximum(norm, 1e-300) / _THETA13))).astype(np.int64)
    s = np.where(np.isfinite(norm), s, 0)
    x = x / (2.0 ** s)[..., None, None]
    b = _PADE13
    eye = np.broadcast_to(np.eye(n), x.shape)
    x2 = x @ x
    x4 = x2 @ x2
    x6 = x4 @ x2
    u = x @ (x6 @ (b[13] * x6 + b[11] * x4 + b[9] * x2) + b[7] * x6 + b[5] * x4 + b[3] * x2 + b[1] * eye)
    v = x6 @ (b[12] * x6 + b[10] * x4 + b[8] * x2) + b[6] * x6 + b[4] * x4 + b[2] * x2 + b[0] * eye
    r = np.linalg.solve(v - u, v + u)
    for k in range(int(s.max()) if s.size else 0):          # square each matrix s times
        r = np.where((s > k)[..., None, None], r @ r, r)
    return r.astype(a.dtype)


def _matrix_exp_vjp(ctx, g):
    """The adjoint of exp at A applied to G is the top-right block of exp([[A^T, G], [0, A^T]])
    (Fréchet derivative of exp at A^T in direction G), written with this op, so it differentiates
    again."""
    A, G = ctx.input(0), g[0]
    n, r = ctx.input_types[0].shape[-1], ctx.input_types[0].ndim
    At = _mT(A)
    zeros = apply("fill", At, value=0.0)
    top = apply("cat", At, G, dim=r - 1)
    bottom = apply("cat", zeros, At, dim=r - 1)
    big = apply("linalg_matrix_exp", apply("cat", top, bottom, dim=r - 2))
    return [big.narrow(-2, 0, n).narrow(-1, n, n)]


defop("linalg_matrix_exp", infer=_matrix_exp_infer, forward=_matrix_exp_forward, vjp=_matrix_exp_vjp,
      saves=("in0",), traits=frozenset({PURE}), node_name="LinalgMatrixExpBackward0")


# ---- LU with partial pivoting (LAPACK getrf's choices: the first largest |a| of the column) ------------
def lu_factor_np(a):
    """(LU packed, 1-based int32 pivots, int32 info) of each matrix of ``a``, as LAPACK's getrf:
    right-looking elimination, the pivot the first largest absolute value of the column, no
    scaling of a column whose pivot is zero (info: the first such column, 1-based)."""
    a = np.asarray(a)
    m, n = a.shape[-2:]
    k = min(m, n)
    u = np.array(a.reshape((-1, m, n)), copy=True)
    nb = u.shape[0]
    piv = np.zeros((nb, k), np.int32)
    info = np.zeros(nb, np.int32)
    rows = np.arange(nb)
    with np.errstate(all="ignore"):
        for j in range(k):
            p = j + np.argmax(np.abs(u[:, j:, j]), axis=1)
            piv[:, j] = p + 1
            top, pivot_row = u[rows, j].copy(), u[rows, p].copy()
            u[rows, p] = top
            u[rows, j] = pivot_row
            pv = u[:, j, j]
            zero = pv == 0
            info = np.where(zero & (info == 0), j + 1, info).astype(np.int32)
            scale = np.where(zero, 1.0, 1.0 / np.where(zero, 1.0, pv)).astype(u.dtype)
            u[:, j + 1:, j] *= scale[:, None]
            u[:, j + 1:, j + 1:] -= u[:, j + 1:, j:j + 1] * u[:, j:j + 1, j + 1:]
    b = a.shape[:-2]
    return u.reshape(a.shape), piv.reshape(b + (k,)), info.reshape(b)


def permutation_np(piv, m, dtype):
    """P (m x m, ``dtype``) with A = P L U from getrf's 1-based pivots."""
    k = piv.shape[-1]
    flat = piv.reshape((-1, k)).astype(np.int64) - 1
    perm = np.broadcast_to(np.arange(m), (flat.shape[0], m)).copy()
    rows = np.arange(flat.shape[0])
    for j in range(k):
        pj, pp = perm[:, j].copy(), perm[rows, flat[:, j]].copy()
        perm[:, j] = pp
        perm[rows, flat[:, j]] = pj
    P = np.zeros((flat.shape[0], m, m), dtype)
    P[rows[:, None], perm, np.arange(m)[None, :]] = 1      # row perm[i] of A is row i of L U
    return P.reshape(piv.shape[:-1] + (m, m))


def _unpack_np(lu):
    m, n = lu.shape[-2:]
    k = min(m, n)
    L = np.tril(lu[..., :, :k], -1)
    L[..., np.arange(k), np.arange(k)] = 1         # (keeping LAPACK's signed zeros below it)
    U = np.triu(lu[..., :k, :])
    return L, U


def _band(x, k, lower):
    """x's lower (c - r <= k) or upper (c - r >= k) band, with masks built from ops on x."""
    r, c = _index_grids(x)
    keep = (c - r <= k) if lower else (c - r >= k)
    return x * keep.to(x.dtype)


def _solve_right(T, B):
    """B T^-1."""
    return _mT(apply("linalg_solve", _mT(T), _mT(B)))


def _lu_backward(gL, gU, P, L, U, m, n):
    """PyTorch's linalg_lu_backward for A = P L U (real case), written with gradc ops."""
    k = min(m, n)
    if m == n:
        X = None if gL is None else _band(_mT(L) @ gL, -1, True)
        if gU is not None:
            t = _band(gU @ _mT(U), 0, False)
            X = t if X is None else X + t
        X = _solve_right(_mT(U), X)
        return P @ apply("linalg_solve", _mT(L), X)
    if m < n:
        U1 = U.narrow(-1, 0, k)
        X = None if gL is None else _mT(L) @ gL
        if gU is not None:
            t = _band(gU, 0, False) @ _mT(U)
            X = -t if X is None else X - t
        X = _solve_right(_mT(U1), _band(X, -1, True))
        nd = len(U.shape) - 1
        if gU is not None:
            X = apply("cat", X + _band(gU.narrow(-1, 0, k), 0, False), gU.narrow(-1, k, n - k), dim=nd)
        X = apply("linalg_solve", _mT(L), X)
        if gU is None:
            X = apply("cat", X, apply("fill", U.narrow(-1, k, n - k), value=0.0), dim=nd)
        return P @ X
    L1 = L.narrow(-2, 0, k)
    X = None if gU is None else gU @ _mT(U)
    if gL is not None:
        t = _mT(L) @ _band(gL, -1, True)
        X = -t if X is None else X - t
    X = apply("linalg_solve", _mT(L1), _band(X, 0, False))
    nd = len(L.shape) - 2
    if gL is not None:
        X = apply("cat", X + _band(gL.narrow(-2, 0, k), -1, True), gL.narrow(-2, k, m - k), dim=nd)
    X = _solve_right(_mT(U), X)
    if gL is None:
        X = apply("cat", X, apply("fill", L.narrow(-2, k, m - k), value=0.0), dim=nd)
    return P @ X


def _lu_input(name, t):
    if t.ndim < 2:
        who = "torch.lu_factor" if name == "lu_factor" else "linalg." + name
        raise ShapeError(f"{who}: Expected tensor with 2 or more dimensions. Got size: "
                         f"{list(t.shape)} instead")
    if not t.dtype.is_floating_point:
        raise ShapeError(f'"lu_cpu" not implemented for \'{t.dtype.tensor_type[:-6]}\'')


def _lu_factor_infer(types, attrs):
    from .. import dtypes
    a = types[0]
    _lu_input("lu_factor", a)
    m, n = a.shape[-2:]
    b = tuple(a.shape[:-2])
    return [a, TypeInfo(b + (min(m, n),), dtypes.int32), TypeInfo(b, dtypes.int32), TypeInfo(b + (m, m), a.dtype)]


def _lu_factor_forward(a):
    lu, piv, info = lu_factor_np(a)
    return lu, piv, info, permutation_np(piv, a.shape[-2], a.dtype)


def _lu_factor_vjp(ctx, g):
    """The packed LU's gradient: its strict lower part L's, its upper part U's (PyTorch's)."""
    gLU = g[0]
    LU, P = ctx.output(0), ctx.output(3)
    m, n = ctx.input_shape(0)[-2:]
    k = min(m, n)
    Lp = LU.narrow(-1, 0, k)
    L = _band(Lp, -1, True) + _eye_like(Lp)
    U = _band(LU.narrow(-2, 0, k), 0, False)
    gL = _band(gLU.narrow(-1, 0, k), -1, True)
    gU = _band(gLU.narrow(-2, 0, k), 0, False)
    return [_lu_backward(gL, gU, P, L, U, m, n)]


defop("linalg_lu_factor", infer=_lu_factor_infer, forward=_lu_factor_forward, vjp=_lu_factor_vjp,
      saves=("out0", "out3"), traits=frozenset({PURE}), num_outputs=4, differentiable_outputs=(0,),
      node_name="LinalgLuFactorExBackward0")


def _lu_infer(types, attrs):
    a = types[0]
    _lu_input("lu", a)
    m, n = a.shape[-2:]
    k = min(m, n)
    b = tuple(a.shape[:-2])
    return [TypeInfo(b + (m, m), a.dtype), TypeInfo(b + (m, k), a.dtype), TypeInfo(b + (k, n), a.dtype)]


def _lu_forward(a):
    lu, piv, _ = lu_factor_np(a)
    L, U = _unpack_np(lu)
    return permutation_np(piv, a.shape[-2], a.dtype), L, U


def _lu_vjp(ctx, g):
    _, gL, gU = g
    if gL is None and gU is None:
        return [None]
    m, n = ctx.input_shape(0)[-2:]
    return [_lu_backward(gL, gU, ctx.output(0), ctx.output(1), ctx.output(2), m, n)]


defop("linalg_lu", infer=_lu_infer, forward=_lu_forward, vjp=_lu_vjp, saves=("out0", "out1", "out2"),
      traits=frozenset({PURE}), num_outputs=3, differentiable_outputs=(1, 2), node_name="LinalgLuBackward0")
