"""Linear solvers: triangular, Cholesky and LU based solves, inverses with an info code,
least squares and the pseudo-inverse, each with its derivative.

Formulas (X the result, G its gradient, Aᴴ the conjugate transpose, Aᵀ for real matrices):
    solve_triangular  A X = B:   gB = A⁻ᴴ G,   gA = -gB Xᴴ on A's triangle
    pinv              P = A⁺:    gA = -Pᴴ G Pᴴ + (I - A P) Gᴴ P Pᴴ + Pᴴ P Gᴴ (I - P A)
Composite solvers (cholesky_solve, lu_solve, lstsq, tensorsolve) get their derivative from
the ops they are written with.
"""

from __future__ import annotations

import math
import warnings

from .. import _dtype as dt
from .._backend import KernelLinAlgError, errstate, from_host, to_host
from .._creation import eye
from .._tensor import Tensor
from ..autograd.grad_mode import no_grad
from ..autograd.node import Node
from ._dispatch import array_module, result, wrap
from ._linalg_common import (
    InvExResult,
    LinAlgError,
    LstsqResult,
    SolveExResult,
    TriangularSolveResult,
    batch_prefix,
    check_matrix,
    check_same_dtype,
    first_failure,
    int_tensor,
    is_numpy,
    real_dtype,
    shape_str,
    svd_kernel,
)
from .linalg import LinalgInvExBackward0, LinalgSolveExBackward0
from .linalg import solve as _solve
from .shape import broadcast_shapes

# --------------------------------------------------------------------------------------------
# triangular solve
# --------------------------------------------------------------------------------------------


def _triangle(A, upper: bool, unitriangular: bool, xp):
    T = xp.triu(A) if upper else xp.tril(A)
    if unitriangular:
        n = A.shape[-1]
        T = T * (1 - xp.eye(n, dtype=A.dtype)) + xp.eye(n, dtype=A.dtype)
    return T


def _substitute(T, B, upper: bool, xp):
    """Row-by-row substitution: singular triangles give inf/nan as LAPACK's trsm does."""
    n = T.shape[-1]
    X = xp.zeros(xp.broadcast_shapes(T.shape[:-2], B.shape[:-2]) + B.shape[-2:], dtype=B.dtype)
    order = range(n - 1, -1, -1) if upper else range(n)
    with errstate(xp, divide="ignore", invalid="ignore"):
        for i in order:
            acc = B[..., i, :] - (T[..., i, None, :] @ X)[..., 0, :]
            X[..., i, :] = acc / T[..., i, i, None]
    return X


def _triangular_kernel(A, B, upper: bool, unitriangular: bool):
    """Solve T X = B for the triangle T of A (batched, broadcast over batch dims)."""
    xp = array_module(A)
    batch = xp.broadcast_shapes(A.shape[:-2], B.shape[:-2])
    A = xp.broadcast_to(A, batch + A.shape[-2:])
    B = xp.broadcast_to(B, batch + B.shape[-2:])
    if A.size == 0 or B.size == 0:
        return xp.zeros(batch + B.shape[-2:], dtype=B.dtype)
    T = _triangle(A, upper, unitriangular, xp)
    if bool((xp.diagonal(T, axis1=-2, axis2=-1) != 0).all()):
        # LU of a triangle keeps its rows in place: as accurate as trsm, and one batched call
        # (scipy's solve_triangular costs milliseconds per call)
        return xp.linalg.solve(T, B)
    return _substitute(T, B, upper, xp)


class LinalgSolveTriangularBackward0(Node):
    def backward(self, g):
        A, _ = self.unpack_saved()
        X = self.saved_output()
        upper, left, unit = self.upper, self.left, self.unitriangular
        # A X = B  =>  gB = A⁻ᴴ G (a triangle of the other kind);  X A = B  =>  gB = G A⁻ᴴ
        gB = solve_triangular(A.mH, g, upper=not upper, left=left, unitriangular=unit)
        gA = None
        if self._edges[0] is not None:
            gA = -(gB @ X.mH) if left else -(X.mH @ gB)
            gA = gA.triu(1 if unit else 0) if upper else gA.tril(-1 if unit else 0)
        return gA, gB if self._edges[1] is not None else None


def solve_triangular(
    A: Tensor, B: Tensor, *, upper: bool, left: bool = True, unitriangular: bool = False
) -> Tensor:
    """Solve ``A X = B`` (or ``X A = B`` when ``left=False``) for a triangular ``A``.

    >>> A = ember.tensor([[2.0, 0.0], [1.0, 1.0]])
    >>> ember.linalg.solve_triangular(A, ember.tensor([[2.0], [3.0]]), upper=False)
    tensor([[1.],
            [2.]])
    """
    op = "linalg.solve_triangular"
    check_matrix(op, A, "A")
    check_matrix(op, B, "B")
    if B._data.dtype != A._data.dtype:  # PyTorch computes in A's dtype
        B = B.to(A.dtype)
    n, m = A._data.shape[-2:]
    if n != m:
        raise RuntimeError(
            f"{op}: A must be batches of square matrices, but they are {n} by {m} matrices"
        )
    rows = B._data.shape[-2] if left else B._data.shape[-1]
    if rows != n:
        raise RuntimeError(
            f"{op}: Incompatible shapes of A and B for the equation "
            f"{'AX = B' if left else 'XA = B'} ({shape_str(A)} and {shape_str(B)})"
        )
    a, b = A._data, B._data
    xp = array_module(a)
    try:
        xp.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    except ValueError:
        raise RuntimeError(
            f"{op}: batch dimensions of A {tuple(a.shape[:-2])} and B {tuple(b.shape[:-2])} "
            "cannot be broadcast"
        ) from None
    if left:
        out = _triangular_kernel(a, b, upper, unitriangular)
    else:  # X A = B  <=>  Aᵀ Xᵀ = Bᵀ, and Aᵀ is a triangle of the other kind
        out = _triangular_kernel(
            xp.swapaxes(a, -1, -2), xp.swapaxes(b, -1, -2), not upper, unitriangular
        )
        out = xp.swapaxes(out, -1, -2)
    return result(
        LinalgSolveTriangularBackward0,
        out,
        (A, B),
        (A, B),
        save_output=True,
        upper=upper,
        left=left,
        unitriangular=unitriangular,
    )


def triangular_solve(
    b: Tensor, A: Tensor, upper: bool = True, transpose: bool = False, unitriangular: bool = False
) -> tuple:
    """``torch.triangular_solve`` (legacy): (solution, cloned_coefficient) of ``op(A) X = b``."""
    M = A.mT if transpose else A
    X = solve_triangular(M, b, upper=upper != transpose, unitriangular=unitriangular)
    return TriangularSolveResult(X, A.clone())


# --------------------------------------------------------------------------------------------
# Cholesky and LU based solves (composites: their derivatives come from the triangular solves)
# --------------------------------------------------------------------------------------------
class CholeskySolveBackward0(Node):
    def backward(self, g):
        B, L = self.unpack_saved()
        X = self.saved_output()
        upper = self.upper
        gB = cholesky_solve(g, L, upper)  # A X = B  =>  gB = A⁻¹ G (A is Hermitian)
        gL = None
        if self._edges[1] is not None:
            # dA = -(gB Xᴴ + X gBᴴ) as a Hermitian whole, through A = L Lᴴ (or Uᴴ U)
            common = gB @ X.mH
            common = common + common.mH
            gL = -(L @ common) if upper else -(common @ L)
        return gB if self._edges[0] is not None else None, gL


def cholesky_solve(B: Tensor, L: Tensor, upper: bool = False) -> Tensor:
    """Solve ``A X = B`` given the Cholesky factor of ``A`` (lower, or upper when asked)."""
    op = "cholesky_solve"
    check_matrix(op, B, "B")
    check_matrix(op, L, "A")
    check_same_dtype("", B, L, "b", "A", end=".")
    with no_grad():
        if upper:  # A = Uᴴ U
            Y = solve_triangular(L.mH, B, upper=False)
            X = solve_triangular(L, Y, upper=True)
        else:  # A = L Lᴴ
            Y = solve_triangular(L, B, upper=False)
            X = solve_triangular(L.mH, Y, upper=True)
    # one node with PyTorch's formula: the gradient of L is that of A = L Lᴴ, not L's triangle
    return result(CholeskySolveBackward0, X._data, (B, L), (B, L), save_output=True, upper=upper)


def cholesky_inverse(L: Tensor, upper: bool = False) -> Tensor:
    """The inverse of ``A`` given its Cholesky factor."""
    check_matrix("cholesky_inverse", L, "input", square=True)
    n = L._data.shape[-1]
    identity = eye(n, dtype=L.dtype, device=L.device)
    return cholesky_solve(identity, L, upper)


def lu_solve(
    LU: Tensor, pivots: Tensor, B: Tensor, *, left: bool = True, adjoint: bool = False
) -> Tensor:
    """Solve ``A X = B`` from ``lu_factor``'s packed ``LU`` and 1-based ``pivots``."""
    from .linalg_decompositions import lu_unpack

    op = "linalg.lu_solve"
    check_matrix(op, LU, "LU", square=True)
    check_matrix(op, B, "B")
    check_same_dtype(op, LU, B, "LU", "B")
    n = LU._data.shape[-1]
    if (B._data.shape[-2] if left else B._data.shape[-1]) != n:
        raise RuntimeError(
            f"{op}: Incompatible shapes of A and B for the equation "
            f"{'AX = B' if left else 'XA = B'} ({shape_str(LU)} and {shape_str(B)})"
        )
    P, L, U = lu_unpack(LU, pivots)
    # A = P L U; the adjoint and right-sided cases become left solves with adjoint factors
    if not left:
        # X A = B  <=>  Aᴴ Xᴴ = Bᴴ;  X Aᴴ = B  <=>  A Xᴴ = Bᴴ
        return lu_solve(LU, pivots, B.mH, left=True, adjoint=not adjoint).mH
    if adjoint:  # Aᴴ X = B: Uᴴ Lᴴ Pᵀ X = B
        Y = solve_triangular(U.mH, B, upper=False)
        Z = solve_triangular(L.mH, Y, upper=True, unitriangular=True)
        return P @ Z
    Y = solve_triangular(L, P.mT @ B, upper=False, unitriangular=True)
    return solve_triangular(U, Y, upper=True)


# --------------------------------------------------------------------------------------------
# inverse and solve with an info code
# --------------------------------------------------------------------------------------------
def _lu_info(a, xp):
    """LAPACK getrf's info per matrix: 1 + the index of U's first zero pivot, or 0.

    Only computed once a batched kernel has failed: one LU per matrix, on the host (CuPy's
    batched kernels report no per-matrix info)."""
    import scipy.linalg

    host = to_host(a)
    hxp = array_module(host)
    flat = host.reshape((-1,) + host.shape[-2:])
    info = hxp.zeros(len(flat), dtype=dt.int32.np)
    with errstate(hxp, all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a singular matrix is an answer here, not a warning
        for i, m in enumerate(flat):
            lu_, _ = scipy.linalg.lu_factor(m, check_finite=False)
            zeros = hxp.flatnonzero(hxp.diagonal(lu_) == 0)
            info[i] = zeros[0] + 1 if zeros.size else 0
    return from_host(info.reshape(a.shape[:-2]), a)


def _no_failures(a, xp):
    """An all-zero info array: one per matrix of ``a``."""
    return xp.zeros(a.shape[:-2], dtype=dt.int32.np)


def _inverse_or_info(op: str, A: Tensor, check_errors: bool):
    a = A._data
    xp = array_module(a)
    if a.size == 0:
        return xp.zeros(a.shape, dtype=a.dtype), _no_failures(a, xp)
    try:  # the common case in one batched call; the per-matrix info only when it fails
        out = xp.linalg.inv(a)
        if is_numpy(xp) or not bool(xp.isnan(out).any()):
            return out, _no_failures(a, xp)
    except KernelLinAlgError:
        pass
    info = _lu_info(a, xp)
    if info.any():
        if check_errors:
            idx, value = first_failure(info)
            raise LinAlgError(
                f"{op}: {batch_prefix(idx, info.ndim > 0)}The diagonal element {value} is zero, "
                "the inversion could not be completed because the input matrix is singular."
            )
        # LAPACK's inf/nan inverse of a singular matrix, one matrix at a time on the host
        import scipy.linalg

        host = to_host(a)
        hxp = array_module(host)
        with errstate(hxp, all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            flat = host.reshape((-1,) + host.shape[-2:])
            eye_n = hxp.eye(a.shape[-1], dtype=a.dtype)
            out = hxp.stack(
                [scipy.linalg.lu_solve(scipy.linalg.lu_factor(m), eye_n) for m in flat]
            ).reshape(a.shape)
        return from_host(out, a), info
    return xp.linalg.inv(a), info


def inv_ex(A: Tensor, *, check_errors: bool = False) -> tuple:
    """``(inverse, info)``: ``info`` is nonzero where a matrix is singular."""
    op = "linalg.inv_ex"
    check_matrix(op, A, "A", square=True)
    out, info = _inverse_or_info(op, A, check_errors)
    inverse = result(LinalgInvExBackward0, out, (A,), save_output=True)
    return InvExResult(inverse, int_tensor(info, array_module(A._data)))


def inv(A: Tensor) -> Tensor:
    """The inverse of each square matrix in ``A``; singular input raises ``LinAlgError``."""
    op = "linalg.inv"
    check_matrix(op, A, "A", square=True)
    out, _ = _inverse_or_info(op, A, True)
    return result(LinalgInvExBackward0, out, (A,), save_output=True)


def solve_ex(A: Tensor, B: Tensor, *, left: bool = True, check_errors: bool = False) -> tuple:
    """``(result, info)`` of ``solve``; ``info`` is nonzero where ``A`` is singular."""
    op = "linalg.solve_ex"
    check_matrix(op, A, "A", square=True)
    check_same_dtype("linalg.solve", A, B)
    if not left:  # X A = B  <=>  Aᵀ Xᵀ = Bᵀ
        res, info = solve_ex(A.mT, B.mT, check_errors=check_errors)
        return SolveExResult(res.mT, info)
    xp = array_module(A._data)
    try:  # the common case: one batched solve, info all zero
        return SolveExResult(_solve(A, B), int_tensor(_no_failures(A._data, xp), xp))
    except RuntimeError as exc:
        if "singular" not in str(exc):
            raise
    info = _lu_info(A._data, xp)
    if info.any():
        if check_errors:
            idx, _ = first_failure(info)
            raise LinAlgError(
                f"torch.linalg.solve_ex: {batch_prefix(idx, info.ndim > 0)}The solver failed "
                "because the input matrix is singular."
            )
        check_same_dtype(op, A, B)
        inverse, _ = _inverse_or_info(op, A, False)
        vector = B._data.ndim == 1 or B._data.shape == A._data.shape[:-1]
        with errstate(xp, all="ignore"):
            out = inverse @ (B._data[..., None] if vector else B._data)
        out = out[..., 0] if vector else out
        res = result(LinalgSolveExBackward0, out, (A, B), (A, B), save_output=True, vector=vector)
        return SolveExResult(res, int_tensor(info, xp))
    return SolveExResult(_solve(A, B, left=left), int_tensor(info, xp))


def solve(A: Tensor, B: Tensor, *, left: bool = True) -> Tensor:
    """Solve ``A X = B`` (``X A = B`` when ``left=False``); singular ``A`` raises."""
    check_matrix("linalg.solve", A, "A", square=True)
    check_same_dtype("linalg.solve", A, B)
    try:
        return _solve(A, B, left=left)
    except RuntimeError as exc:
        if "singular" not in str(exc):
            raise
    info = _singular_info(A, array_module(A._data))
    idx, _ = first_failure(info)
    raise LinAlgError(
        f"torch.linalg.solve: {batch_prefix(idx, info.ndim > 0)}The solver failed because the "
        "input matrix is singular."
    )


def _singular_info(A: Tensor, xp):
    """getrf's info per matrix, computed only when a batched factorization reports failure."""
    a = A._data
    if a.size == 0:
        return _no_failures(a, xp)
    try:
        factors = xp.linalg.inv(a)
        if is_numpy(xp) or not bool(xp.isnan(factors).any()):
            return _no_failures(a, xp)
    except KernelLinAlgError:
        pass
    return _lu_info(a, xp)


# --------------------------------------------------------------------------------------------
# pseudo-inverse and least squares
# --------------------------------------------------------------------------------------------
class LinalgPinvBackward0(Node):
    def backward(self, g):
        (A,) = self.unpack_saved()
        P = self.saved_output()
        # dP = -P dA P + P Pᴴ dAᴴ (I - A P) + (I - P A) dAᴴ Pᴴ P   (Golub & Pereyra)
        m, n = A.shape[-2], A.shape[-1]
        eye_m = eye(m, dtype=A.dtype, device=A.device)
        eye_n = eye(n, dtype=A.dtype, device=A.device)
        Ph, gh = P.mH, g.mH
        return -(Ph @ g @ Ph) + (eye_m - A @ P) @ gh @ (P @ Ph) + (Ph @ P) @ gh @ (eye_n - P @ A)


def _tolerances(s_max, atol, rtol, m: int, n: int, eps: float, xp):
    if rtol is None:
        rtol = 0.0 if (atol is not None and _nonzero(atol)) else eps * max(m, n)
    atol = 0.0 if atol is None else atol
    atol = atol._data if isinstance(atol, Tensor) else atol
    rtol = rtol._data if isinstance(rtol, Tensor) else rtol
    return xp.maximum(xp.asarray(atol)[..., None], xp.asarray(rtol)[..., None] * s_max)


def _nonzero(value) -> bool:
    if isinstance(value, Tensor):
        return True
    return value != 0


def pinv(A: Tensor, *, atol=None, rtol=None, hermitian: bool = False, rcond=None) -> Tensor:
    """The Moore-Penrose pseudo-inverse; singular values below max(atol, rtol·σ₁) count as 0.

    ``rcond`` is PyTorch's older name for ``rtol``.
    """
    if rcond is not None:
        rtol = rcond
    op = "linalg.pinv"
    if A._data.ndim < 2 or A._data.dtype.kind not in "fc":
        raise RuntimeError(
            f"{op}({A.dtype.legacy_name}{{{list(A._data.shape)}}}): expected a tensor with 2 or "
            "more dimensions of float, double, cfloat or cdouble types"
        )
    check_matrix(op, A, "A", square=hermitian)
    a = A._data
    xp = array_module(a)
    m, n = a.shape[-2:]
    eps = float(xp.finfo(a.dtype).eps)
    if a.size == 0:
        out = xp.zeros(a.shape[:-2] + (n, m), dtype=a.dtype)
    elif hermitian:
        w, v = xp.linalg.eigh(a)
        cutoff = _tolerances(xp.abs(w).max(-1, keepdims=True), atol, rtol, m, n, eps, xp)
        keep = xp.abs(w) > cutoff
        inv_w = xp.where(keep, 1 / xp.where(keep, w, 1), 0)
        out = (v * inv_w[..., None, :]) @ xp.conj(xp.swapaxes(v, -1, -2))
    else:
        u, s, vh = svd_kernel(xp, a)
        cutoff = _tolerances(s[..., :1], atol, rtol, m, n, eps, xp)
        keep = s > cutoff
        inv_s = xp.where(keep, 1 / xp.where(keep, s, 1), 0)
        vh_h, u_h = xp.conj(xp.swapaxes(vh, -1, -2)), xp.conj(xp.swapaxes(u, -1, -2))
        out = (vh_h * inv_s[..., None, :]) @ u_h
    return result(LinalgPinvBackward0, out.astype(a.dtype, copy=False), (A,), (A,), True)


def pinverse(input: Tensor, rcond: float = 1e-15) -> Tensor:
    """``torch.pinverse``: ``pinv`` with a relative cutoff ``rcond``."""
    return pinv(input, rtol=rcond)


_LSTSQ_DRIVERS = ("gels", "gelsy", "gelsd", "gelss")


def lstsq(A: Tensor, B: Tensor, rcond: float | None = None, *, driver: str | None = None):
    """Least-squares solution of ``A X = B``: (solution, residuals, rank, singular_values)."""
    op = "linalg.lstsq"
    check_matrix(op, A, "A")
    if B._data.ndim < 1:
        raise RuntimeError(f"{op}: other must have at least 1 dimension.")
    if A._data.dtype != B._data.dtype:
        raise RuntimeError(
            f"torch.linalg.lstsq: Expected input and other to have the same dtype, but got "
            f"input's dtype {A.dtype.legacy_name} and other's dtype {B.dtype.legacy_name}"
        )
    driver = "gelsy" if driver is None else driver
    if driver not in _LSTSQ_DRIVERS:
        raise RuntimeError(
            "torch.linalg.lstsq: parameter `driver` should be one of (gels, gelsy, gelsd, gelss)"
        )
    vector = B._data.ndim == A._data.ndim - 1
    Bm = B.unsqueeze(-1) if vector else B
    m, n = A._data.shape[-2:]
    if Bm._data.shape[-2] != m:
        raise RuntimeError(
            f"torch.linalg.lstsq: input.size(-2) should match other.size(-2) ({shape_str(A)} "
            f"and {shape_str(B)})"
        )
    a = A._data
    xp = array_module(a)
    eps = float(xp.finfo(a.dtype).eps)
    rtol = eps * max(m, n) if rcond is None or rcond < 0 else rcond
    if a.size:
        s = svd_kernel(xp, a, compute_uv=False)
        rank = (s > rtol * s[..., :1]).sum(-1)
    else:
        s = xp.zeros(a.shape[:-2] + (0,), dtype=real_dtype(a.dtype, xp))
        rank = xp.zeros(a.shape[:-2], dtype=dt.int64.np)
    if driver == "gels":
        solution = _solve_full_rank(A, Bm, m, n)
    else:
        solution = pinv(A, rtol=rtol) @ Bm
    # PyTorch's empty residuals still belong to the graph
    residuals = solution.reshape(-1)[:0]
    if residuals.is_complex():  # squared norms: real
        residuals = residuals.real
    if driver != "gelsy" and m > n and (driver == "gels" or bool((rank == n).all())):
        residuals = ((A @ solution - Bm).abs() ** 2).sum(-2)
    empty_sv = xp.zeros((0,), dtype=real_dtype(a.dtype, xp))
    sv = wrap(s if driver in ("gelsd", "gelss") else empty_sv)
    int64 = dt.int64.np
    rank_t = wrap(xp.asarray(rank, dtype=int64) if driver != "gels" else xp.zeros(0, int64))
    return LstsqResult(solution.squeeze(-1) if vector else solution, residuals, rank_t, sv)


def _solve_full_rank(A: Tensor, B: Tensor, m: int, n: int) -> Tensor:
    """gels: QR for tall A, the minimum-norm solution through A Aᵀ for wide A."""
    if m >= n:
        from .linalg_decompositions import qr

        Q, R = qr(A)
        return solve_triangular(R, Q.mH @ B, upper=True)
    return A.mH @ _solve(A @ A.mH, B)


# --------------------------------------------------------------------------------------------
# tensor solves
# --------------------------------------------------------------------------------------------
def tensorinv(A: Tensor, ind: int = 2) -> Tensor:
    """The inverse of ``A`` seen as a linear map from its first ``ind`` dims to the rest."""
    if ind <= 0:
        raise RuntimeError(f"Expected a strictly positive integer for 'ind', but got {ind}")
    out_shape = tuple(A.shape[ind:]) + tuple(A.shape[:ind])
    rows = math.prod(A.shape[:ind])
    cols = math.prod(A.shape[ind:])
    if rows != cols:
        raise RuntimeError(
            f"Expected self to satisfy the requirement prod(self.shape[ind:]) == "
            f"prod(self.shape[:ind]), but got {cols} != {rows}"
        )
    return inv(A.reshape(rows, cols)).reshape(out_shape)


def tensorsolve(A: Tensor, B: Tensor, dims=None) -> Tensor:
    """Solve ``tensordot(A, X, X.ndim) = B`` for ``X``."""
    if dims is not None:
        nd = A.ndim
        dims = [d % nd for d in dims]
        A = A.permute([d for d in range(nd) if d not in dims] + dims)
    result_shape = tuple(A.shape[B.ndim :])
    rows = math.prod(B.shape)
    cols = math.prod(result_shape)
    if rows != cols:
        raise RuntimeError(
            f"Expected self to satisfy the requirement prod(self.shape[other.ndim:]) == "
            f"prod(self.shape[:other.ndim]), but got {cols} != {rows}"
        )
    return _solve(A.reshape(rows, cols), B.reshape(rows)).reshape(result_shape)


def lu_solve_legacy(b: Tensor, LU_data: Tensor, LU_pivots: Tensor) -> Tensor:
    """``torch.lu_solve`` (deprecated in PyTorch): ``linalg.lu_solve`` with b first."""
    return lu_solve(LU_data, LU_pivots, b)


class LinalgLdlSolveBackward0(Node):
    def backward(self, g):
        raise RuntimeError("derivative for aten::linalg_ldl_solve is not implemented")


def ldl_solve(LD: Tensor, pivots: Tensor, B: Tensor, *, hermitian: bool = False) -> Tensor:
    """Solve ``A X = B`` from ``ldl_factor``'s ``(LD, pivots)`` (LAPACK sytrs)."""
    op = "torch.linalg.ldl_solve"
    check_matrix(op, LD, "LD", square=True)
    check_matrix(op, B, "B")
    check_same_dtype(op, LD, B, "LD", "B")
    n = LD._data.shape[-1]
    if B._data.shape[-2] != n:
        raise RuntimeError(
            f"{op}: Incompatible shapes of A and B for the equation AX = B ({shape_str(LD)} "
            f"and {shape_str(B)})"
        )
    from scipy.linalg import lapack

    # sytrs has no CuPy counterpart: one matrix at a time on the host
    ld_h, piv_h, b_h = (to_host(x) for x in (LD._data, pivots._data, B._data))
    hxp = array_module(b_h)
    batch = tuple(broadcast_shapes(ld_h.shape[:-2], b_h.shape[:-2]))
    count = math.prod(batch)  # not -1: a reshape cannot infer it when n = 0
    ld = hxp.broadcast_to(ld_h, batch + (n, n)).reshape(count, n, n)
    piv = hxp.broadcast_to(piv_h, batch + (n,)).reshape(count, n)
    b = hxp.broadcast_to(b_h, batch + b_h.shape[-2:]).reshape((count,) + b_h.shape[-2:])
    out = hxp.empty_like(b)
    if b.size:
        kernel = "hetrs" if hermitian and ld.dtype.kind == "c" else "sytrs"
        sytrs = lapack.get_lapack_funcs(kernel, (ld,))
        for i in range(len(b)):
            out[i], _ = sytrs(ld[i], piv[i], b[i], lower=1)
    out = from_host(out.reshape(batch + b_h.shape[-2:]), LD._data)
    return result(LinalgLdlSolveBackward0, out, (LD, B))
