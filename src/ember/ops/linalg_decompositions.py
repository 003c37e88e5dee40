"""Matrix decompositions: Cholesky, QR, symmetric eigen, SVD, LU and the log-determinant,
each with its derivative written with ember ops (so that double backward works).

Formulas (Xᴴ the conjugate transpose, Xᵀ for real matrices; ∘ the elementwise product,
k = min(m, n)); complex matrices follow PyTorch's convention (the conjugate Wirtinger
gradient of a real loss):
    cholesky  A = L Lᴴ:  gA = L⁻ᴴ Φ*(tril(Lᴴ gL)) L⁻¹, Φ*(X) = (X + Xᴴ - diag X) / 2
    qr        A = Q R:   gA = (gQ + Q copyltu(R gRᴴ - gQᴴ Q)) R⁻ᴴ          (m ≥ n)
    eigh      A = V Λ Vᴴ: gA = V (diag(gΛ) + F ∘ skew(Vᴴ gV)/2) Vᴴ, F_ij = 1/(λ_j - λ_i)
    svd       A = U S Vᴴ: gA = U (F∘[skew(UᴴgU) S + S skew(VᴴgV)] + diag(gS)
                                  + i Im diag(UᴴgU) / S) Vᴴ + projections
    lu        A = P L U: gA = P L⁻ᴴ (tril(Lᴴ gL, -1) + triu(gU Uᴴ)) U⁻ᴴ      (square part)
    slogdet   gA = (g_logabsdet - i Im(conj(g_sign) sign)) A⁻ᴴ  (the sign term: complex A)
"""

from __future__ import annotations

import math
import warnings

from .. import _dtype as dt
from .._backend import KernelLinAlgError, errstate, from_host, to_host
from .._creation import eye
from .._tensor import Tensor
from ..autograd import forward_rules
from ..autograd.node import Node
from ._dispatch import array_module, result, wrap
from ._linalg_common import (
    CholeskyExResult,
    EighResult,
    GeqrfResult,
    LdlFactorExResult,
    LdlFactorResult,
    LinAlgError,
    LuFactorExResult,
    LuFactorResult,
    LuResult,
    LuUnpackResult,
    MultiOutputNode,
    OldQrResult,
    OldSlogdetResult,
    OldSvdResult,
    QrResult,
    SlogdetResult,
    SvdResult,
    batch_prefix,
    check_matrix,
    first_failure,
    int_tensor,
    is_numpy,
    real_dtype,
    record_outputs,
    scipy_linalg,
    svd_kernel,
)
from .linalg_solvers import inv_ex, solve_triangular
from .shape import cat


def _eye_like(n: int, A: Tensor) -> Tensor:
    return eye(n, dtype=A.dtype, device=A.device)


def _off_diagonal_inverse(E: Tensor) -> Tensor:
    """1 / E off the diagonal, 0 on it (E's diagonal is zero by construction)."""
    identity = _eye_like(E.shape[-1], E)
    return (1 - identity) / (E + identity)


# --------------------------------------------------------------------------------------------
# Cholesky
# --------------------------------------------------------------------------------------------
def _cholesky_kernel(a, xp):
    """(lower factor, LAPACK potrf info per matrix)."""
    batch = a.shape[:-2]
    if a.size == 0:
        return xp.zeros(a.shape, dtype=a.dtype), xp.zeros(batch, dtype=dt.int32.np)
    try:
        L = xp.linalg.cholesky(a)
        if is_numpy(xp) or not bool(xp.isnan(L).any()):
            return L, xp.zeros(batch, dtype=dt.int32.np)
    except KernelLinAlgError:
        pass
    # a matrix is not positive-definite: LAPACK potrf, one matrix at a time on the host, says
    # which leading minor fails (the batched kernels only raise, or give NaN on CuPy)
    from scipy.linalg import lapack

    host = to_host(a)
    hxp = array_module(host)
    flat = host.reshape((-1,) + host.shape[-2:])
    potrf = lapack.get_lapack_funcs("potrf", (flat,))
    out = hxp.empty_like(flat)
    info = hxp.zeros(len(flat), dtype=dt.int32.np)
    for i, m in enumerate(flat):
        out[i], info[i] = potrf(m, lower=True, clean=True)
    L = hxp.tril(out).reshape(a.shape)
    return from_host(L, a), from_host(info.reshape(batch), a)


def _adjoint_copy(a, xp):
    """A contiguous conjugate transpose of a stack of matrices (U = Lᴴ)."""
    out = xp.swapaxes(a, -1, -2).copy()
    return xp.conj(out, out=out) if out.dtype.kind == "c" else out


class LinalgCholeskyExBackward0(Node):
    def backward(self, g):
        L = self.saved_output()
        if self.upper:  # the factor is U = Lᴴ
            L, g = L.mH, g.mH
        P = (L.mH @ g.tril()).tril()
        # Φ*(P) = (P + Pᴴ - diag P) / 2 for lower-triangular P (the diagonal kept complex)
        phi = 0.5 * (P + P.tril(-1).mH)
        # L⁻ᴴ Φ L⁻¹ through two triangular solves
        X = solve_triangular(L, phi, upper=False, left=False)
        return solve_triangular(L.mH, X, upper=True)


def cholesky_ex(A: Tensor, *, upper: bool = False, check_errors: bool = False) -> tuple:
    """``(L, info)``: the Cholesky factor and, per matrix, 0 or the order of the failing minor."""
    check_matrix("linalg.cholesky", A, "A", square=True)
    xp = array_module(A._data)
    L, info = _cholesky_kernel(A._data, xp)
    if check_errors and info.any():
        _raise_not_pd("linalg.cholesky", info)
    if upper:
        L = _adjoint_copy(L, xp)
    out = result(LinalgCholeskyExBackward0, L, (A,), save_output=True, upper=upper)
    return CholeskyExResult(out, int_tensor(info, xp))


def _raise_not_pd(op: str, info) -> None:
    idx, order = first_failure(info)
    raise LinAlgError(
        f"{op}: {batch_prefix(idx, info.ndim > 0)}The factorization could not be completed "
        f"because the input is not positive-definite (the leading minor of order {order} is "
        "not positive-definite)."
    )


def cholesky(A: Tensor, *, upper: bool = False) -> Tensor:
    """The Cholesky factor of a symmetric positive-definite ``A`` (lower unless ``upper``).

    >>> ember.linalg.cholesky(ember.tensor([[4.0, 2.0], [2.0, 2.0]]))
    tensor([[2., 0.],
            [1., 1.]])
    """
    op = "linalg.cholesky"
    check_matrix(op, A, "A", square=True)
    xp = array_module(A._data)
    L, info = _cholesky_kernel(A._data, xp)
    if info.any():
        _raise_not_pd(op, info)
    if upper:
        L = _adjoint_copy(L, xp)
    return result(LinalgCholeskyExBackward0, L, (A,), save_output=True, upper=upper)


def cholesky_legacy(input: Tensor, upper: bool = False) -> Tensor:
    """``torch.cholesky`` (deprecated in PyTorch): ``linalg.cholesky`` with ``upper``."""
    return cholesky(input, upper=upper)


# --------------------------------------------------------------------------------------------
# QR
# --------------------------------------------------------------------------------------------
def _copyltu(M: Tensor) -> Tensor:
    """The Hermitian matrix with M's strict lower triangle and the real part of its diagonal."""
    lower = M.tril(-1)
    diagonal = M.diagonal(0, -2, -1)
    if diagonal.is_complex():
        diagonal = diagonal.real
    return lower + lower.mH + diagonal.diag_embed()


def _qr_backward_tall(Q: Tensor, R: Tensor, gQ, gR) -> Tensor:
    """m ≥ n: gA = (gQ + Q copyltu(M)) R⁻ᴴ with M = R gRᴴ - gQᴴ Q."""
    M = None
    if gR is not None:
        M = R @ gR.mH
    if gQ is not None:
        M = -(gQ.mH @ Q) if M is None else M - gQ.mH @ Q
    rhs = Q @ _copyltu(M)
    if gQ is not None:
        rhs = rhs + gQ
    return solve_triangular(R.mH, rhs, upper=False, left=False)


class LinalgQrBackward0(MultiOutputNode):
    def backward(self, gQ, gR):
        if self.mode == "r":
            raise RuntimeError(
                "The derivative of linalg.qr depends on Q, which is not computed when "
                "mode='r'. Please use linalg.qr(A, mode='reduced') if you are going to "
                "differentiate through linalg.qr."
            )
        Q, R = self.saved_outputs()
        m, n = Q.shape[-2], R.shape[-1]
        if self.mode == "complete" and m > n:
            raise RuntimeError(
                "The QR decomposition is not differentiable when mode='complete' and nrows > ncols."
            )
        if m >= n:
            return _qr_backward_tall(Q, R, gQ, gR)
        # A = Q [U | V] with U square: X = A[:, :m] = Q U, Y = A[:, m:] = Q V
        (A,) = self.unpack_saved()
        Y = A[..., m:]
        U = R[..., :m]
        gU = gR[..., :m] if gR is not None else None
        gY = None
        if gR is not None:
            gV = gR[..., m:]
            gY = Q @ gV
            extra = Y @ gV.mH
            gQ = extra if gQ is None else gQ + extra
        gX = _qr_backward_tall(Q, U, gQ, gU)
        if gY is None:
            gY = (A[..., m:] * 0).detach()
        return cat([gX, gY], -1)


def qr(A: Tensor, mode: str = "reduced") -> tuple:
    """``(Q, R)`` with ``A = Q R``; ``mode`` is 'reduced', 'complete' or 'r' (Q empty)."""
    op = "linalg.qr"
    check_matrix(op, A, "A")
    if mode not in ("reduced", "complete", "r"):
        raise RuntimeError(
            f"qr received unrecognized mode '{mode}' but expected one of 'reduced' (default), "
            "'r', or 'complete'"
        )
    a = A._data
    xp = array_module(a)
    m, n = a.shape[-2:]
    k = min(m, n)
    if a.size == 0:
        cols = m if mode == "complete" else k
        q = xp.broadcast_to(xp.eye(m, cols, dtype=a.dtype), a.shape[:-2] + (m, cols)).copy()
        r = xp.zeros(a.shape[:-2] + (cols, n), dtype=a.dtype)
    else:
        q, r = xp.linalg.qr(a, mode="complete" if mode == "complete" else "reduced")
    Q, R = record_outputs(LinalgQrBackward0, (q, r), (A,), (A,), mode=mode)
    if mode == "r":  # Q is computed (LAPACK needs it for R) but not returned
        Q = wrap(xp.zeros((0,), dtype=a.dtype))
    return QrResult(Q, R)


def qr_legacy(input: Tensor, some: bool = True) -> tuple:
    """``torch.qr``: ``linalg.qr`` with ``some=False`` meaning mode='complete'."""
    Q, R = qr(input, "reduced" if some else "complete")
    return OldQrResult(Q, R)


# --------------------------------------------------------------------------------------------
# symmetric eigendecomposition
# --------------------------------------------------------------------------------------------
class LinalgEighBackward0(MultiOutputNode):
    def backward(self, gL, gV):
        L, V = self.saved_outputs()
        inner = None
        if gV is not None:
            X = V.mH @ gV
            # only the skew part of VᴴgV moves A along Hermitian matrices
            F = _off_diagonal_inverse(L.unsqueeze(-2) - L.unsqueeze(-1))
            inner = F * (X - X.mH) * 0.5
        if gL is not None:
            inner = gL.diag_embed() if inner is None else inner + gL.diag_embed()
        if inner.dtype != V.dtype:  # real eigenvalue gradients of complex eigenvectors
            inner = inner.to(V.dtype)
        return V @ inner @ V.mH


def _check_uplo(op: str, UPLO: str) -> None:
    if UPLO not in ("L", "U"):
        raise RuntimeError(f"{op}: Expected UPLO argument to be 'L' or 'U', but got {UPLO}")


def eigh(A: Tensor, UPLO: str = "L") -> tuple:
    """``(eigenvalues, eigenvectors)`` of a symmetric ``A``, eigenvalues ascending."""
    op = "linalg.eigh"
    check_matrix(op, A, "A", square=True)
    _check_uplo(op, UPLO)
    a = A._data
    xp = array_module(a)
    if a.size == 0:
        w = xp.zeros(a.shape[:-1], dtype=real_dtype(a.dtype, xp))
        v = xp.zeros(a.shape, dtype=a.dtype)
    else:
        w, v = xp.linalg.eigh(a, UPLO=UPLO)
    return EighResult(*record_outputs(LinalgEighBackward0, (w, v), (A,)))


def eigvalsh(A: Tensor, UPLO: str = "L") -> Tensor:
    """The eigenvalues of a symmetric ``A``, ascending."""
    op = "linalg.eigh"
    check_matrix(op, A, "A", square=True)
    _check_uplo(op, UPLO)
    return eigh(A, UPLO)[0]


# --------------------------------------------------------------------------------------------
# SVD
# --------------------------------------------------------------------------------------------
class LinalgSvdBackward0(MultiOutputNode):
    def backward(self, gU, gS, gVh):
        U, S, Vh = self.saved_outputs()
        k = S.shape[-1]
        if self.full_matrices:  # the extra columns carry no derivative (as in PyTorch)
            U, Vh = U[..., :k], Vh[..., :k, :]
            gU = gU[..., :k] if gU is not None else None
            gVh = gVh[..., :k, :] if gVh is not None else None
        m, n = U.shape[-2], Vh.shape[-1]
        if gU is None and gVh is None:
            return (U * gS.unsqueeze(-2)) @ Vh
        S_row, S_col = S.unsqueeze(-2), S.unsqueeze(-1)
        F = _off_diagonal_inverse(S_row * S_row - S_col * S_col)  # 1 / (s_j² - s_i²)
        inner = None
        if gU is not None:
            UhgU = U.mH @ gU
            inner = (UhgU - UhgU.mH) * S_row
        if gVh is not None:
            VhgV = Vh @ gVh.mH
            term = S_col * (VhgV - VhgV.mH)
            inner = term if inner is None else inner + term
        inner = F * inner
        if gS is not None:
            inner = inner + gS.diag_embed()
        if gU is not None and UhgU.is_complex():
            # the phase of each singular pair: i Im(diag(UᴴgU)) / S on the diagonal
            inner = inner + (1j * UhgU.diagonal(0, -2, -1).imag / S).diag_embed()
        gA = U @ inner @ Vh
        if m > k and gU is not None:
            gA = gA + ((gU - U @ UhgU) / S_row) @ Vh
        if n > k and gVh is not None:
            gA = gA + U @ ((gVh - VhgV.mH @ Vh) / S_col)
        return gA


def _svd_arrays(a, xp, full_matrices: bool):
    m, n = a.shape[-2:]
    k = min(m, n)
    if a.size == 0:
        ucols, vrows = (m, n) if full_matrices else (k, k)
        batch = a.shape[:-2]
        u = xp.broadcast_to(xp.eye(m, ucols, dtype=a.dtype), batch + (m, ucols)).copy()
        vh = xp.broadcast_to(xp.eye(vrows, n, dtype=a.dtype), batch + (vrows, n)).copy()
        return u, xp.zeros(batch + (k,), dtype=real_dtype(a.dtype, xp)), vh
    return svd_kernel(xp, a, full_matrices)


def svd(A: Tensor, full_matrices: bool = True, *, driver: str | None = None) -> tuple:
    """``(U, S, Vh)`` with ``A = U diag(S) Vh``; singular values descending.

    Gradients are well defined for losses that do not depend on the signs of the singular
    vectors (e.g. through ``U @ Vh`` or ``S``), as in PyTorch.
    """
    op = "linalg.svd"
    check_matrix(op, A, "A")
    if driver is not None:
        raise RuntimeError(
            "torch.linalg.svd: keyword argument `driver=` is only supported on CUDA inputs "
            "with cuSOLVER backend."
        )
    a = A._data
    xp = array_module(a)
    u, s, vh = _svd_arrays(a, xp, full_matrices)
    outs = record_outputs(LinalgSvdBackward0, (u, s, vh), (A,), full_matrices=full_matrices)
    return SvdResult(*outs)


def svdvals(A: Tensor, *, driver: str | None = None) -> Tensor:
    """The singular values of ``A``, descending (differentiable twice)."""
    check_matrix("linalg.svdvals", A, "A")
    return svd(A, full_matrices=False, driver=driver)[1]


def svd_legacy(input: Tensor, some: bool = True, compute_uv: bool = True) -> tuple:
    """``torch.svd``: returns ``V`` (not ``Vh``); zero U and V when ``compute_uv=False``."""
    if not compute_uv:
        S = svdvals(input)
        m, n = input.shape[-2:]
        batch = tuple(input.shape[:-2])
        xp = array_module(input._data)
        zeros_u = wrap(xp.zeros(batch + (m, m), dtype=input._data.dtype))
        zeros_v = wrap(xp.zeros(batch + (n, n), dtype=input._data.dtype))
        return OldSvdResult(zeros_u, S, zeros_v)
    U, S, Vh = svd(input, full_matrices=not some)
    return OldSvdResult(U, S, Vh.mT)


# --------------------------------------------------------------------------------------------
# determinants
# --------------------------------------------------------------------------------------------
class LinalgSlogdetBackward0(MultiOutputNode):
    def backward(self, g_sign, g_logabsdet):
        (A,) = self.unpack_saved()
        # a real sign is piecewise constant; a complex one turns with i Im tr(A⁻¹ dA)
        if g_sign is not None and A.is_complex():
            sign = self.saved_outputs()[0]
            turn = -1j * (g_sign.conj() * sign).imag
            g = turn if g_logabsdet is None else g_logabsdet + turn
        elif g_logabsdet is None:
            return None
        else:
            g = g_logabsdet
        # inv_ex: a singular A gives infinite gradients (as in PyTorch), not an error
        inverse = inv_ex(A)[0]
        return g.unsqueeze(-1).unsqueeze(-1) * inverse.mH  # d log|det A| = Re tr(A⁻¹ dA)


def _slogdet_jvp(node, tangents):
    """d log|det A| = Re tr(A⁻¹ dA); the sign turns by i Im tr(A⁻¹ dA) (zero for real A)."""
    (dA,) = tangents
    if dA is None:
        return None, None
    (A,) = node.unpack_saved()
    sign = node.saved_outputs()[0]
    trace = (inv_ex(A)[0] @ dA).diagonal(0, -2, -1).sum(-1)
    if trace.is_complex():
        return sign * (1j * trace.imag), trace.real
    return sign * 0, trace


forward_rules.RULES["LinalgSlogdetBackward0"] = _slogdet_jvp


def slogdet(A: Tensor) -> tuple:
    """``(sign, logabsdet)`` of each square matrix; ``logabsdet`` is differentiable."""
    op = "linalg.slogdet"
    check_matrix(op, A, "A", square=True)
    a = A._data
    xp = array_module(a)
    sign, logabs = xp.linalg.slogdet(a)
    sign = xp.asarray(sign, dtype=a.dtype)
    logabs = xp.asarray(logabs, dtype=real_dtype(a.dtype, xp))
    return SlogdetResult(*record_outputs(LinalgSlogdetBackward0, (sign, logabs), (A,), (A,)))


def slogdet_legacy(input: Tensor) -> tuple:
    """``torch.slogdet``."""
    return OldSlogdetResult(*slogdet(input))


def logdet(input: Tensor) -> Tensor:
    """log det A: nan where det A < 0, -inf where A is singular."""
    check_matrix("logdet", input, "A", square=True)
    sign, logabs = slogdet(input)
    if input.is_complex():  # log det = log|det| + i arg(det)
        return logabs + 1j * sign.angle()
    from .elementwise import where

    return where(sign < 0, float("nan"), logabs)


# --------------------------------------------------------------------------------------------
# LU
# --------------------------------------------------------------------------------------------
def _lu_arrays(a, xp):
    """(packed LU, 1-based int32 pivots, info) per matrix, as LAPACK getrf gives them."""
    m, n = a.shape[-2:]
    k = min(m, n)
    batch = a.shape[:-2]
    int32 = dt.int32.np
    if a.size == 0:
        piv = xp.broadcast_to(xp.arange(1, k + 1, dtype=int32), batch + (k,)).copy()
        return xp.zeros(a.shape, dtype=a.dtype), piv, xp.zeros(batch, dtype=int32)
    sl = scipy_linalg(xp)
    with errstate(xp, all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if is_numpy(xp):
            lu, piv = sl.lu_factor(a, check_finite=False)
        else:
            flat = a.reshape((-1, m, n))
            pairs = [sl.lu_factor(x, check_finite=False) for x in flat]
            lu = xp.stack([p[0] for p in pairs]).reshape(a.shape)
            piv = xp.stack([p[1] for p in pairs]).reshape(batch + (k,))
    piv = piv.astype(int32) + 1
    diag = xp.diagonal(lu, axis1=-2, axis2=-1)
    zero = diag == 0
    first = xp.argmax(zero, axis=-1)
    info = xp.where(zero.any(-1), first + 1, 0).astype(int32)
    return lu.astype(a.dtype, copy=False), piv, info


def _permutation_from_pivots(piv, m: int, dtype, like):
    """The permutation matrix P with A = P L U, from LAPACK's 1-based row swaps, on the
    device of ``like``. The swaps are applied in order, a Python loop over pivot columns, on
    the host."""
    piv = to_host(piv)
    hxp = array_module(piv)
    batch = piv.shape[:-1]
    perm = hxp.broadcast_to(hxp.arange(m), batch + (m,)).copy()
    count = math.prod(batch)
    flat_perm = perm.reshape(count, m)
    flat_piv = piv.reshape(count, piv.shape[-1]) - 1
    rows = hxp.arange(flat_perm.shape[0])
    for i in range(flat_piv.shape[-1]):
        j = flat_piv[:, i]
        a, b = flat_perm[rows, i].copy(), flat_perm[rows, j].copy()
        flat_perm[rows, i], flat_perm[rows, j] = b, a
    # row i of P Lᵀ... : (Pᵀ A)[i] = A[perm[i]]  =>  P[perm[i], i] = 1
    P = hxp.zeros(batch + (m, m), dtype=dtype)
    hxp.put_along_axis(P, perm[..., None, :], 1, axis=-2)
    return from_host(P, like)


def _lu_backward(P: Tensor, L: Tensor, U: Tensor, gL, gU) -> Tensor:
    m, k, n = L.shape[-2], L.shape[-1], U.shape[-1]

    def square(L1, U1, gL1, gU1):
        inner = None
        if gL1 is not None:
            inner = (L1.mH @ gL1).tril(-1)
        if gU1 is not None:
            term = (gU1 @ U1.mH).triu()
            inner = term if inner is None else inner + term
        X = solve_triangular(L1.mH, inner, upper=True, unitriangular=True)
        return solve_triangular(U1.mH, X, upper=False, left=False)

    if m == n:
        return P @ square(L, U, gL, gU)
    if m < n:  # A = P L [U1 | U2]
        U1, U2 = U[..., :k], U[..., k:]
        gU1 = gU[..., :k] if gU is not None else None
        parts = []
        if gU is not None:
            gU2 = gU[..., k:]
            gA2 = solve_triangular(L.mH, gU2, upper=True, unitriangular=True)
            extra = -(gA2 @ U2.mH)
            gL = extra if gL is None else gL + extra
        else:
            gA2 = (U2 * 0).detach()
        gA1 = square(L, U1, gL, gU1)
        parts = [gA1, gA2]
        return P @ cat(parts, -1)
    # m > n: Pᵀ A = [L1; L2] U
    L1, L2 = L[..., :k, :], L[..., k:, :]
    gL1 = gL[..., :k, :] if gL is not None else None
    if gL is not None:
        gB2 = solve_triangular(U.mH, gL[..., k:, :], upper=False, left=False)
        extra = -(L2.mH @ gB2)
        gU = extra if gU is None else gU + extra
    else:
        gB2 = (L2 * 0).detach()
    return P @ cat([square(L1, U, gL1, gU), gB2], -2)


def _check_lu_input(A: Tensor, pivot: bool) -> None:
    if A._data.ndim < 2:
        raise RuntimeError(
            f"torch.lu_factor: Expected tensor with 2 or more dimensions. Got size: "
            f"{list(A._data.shape)} instead"
        )
    check_matrix("torch.lu_factor", A, "A")
    if not pivot:
        raise RuntimeError("linalg.lu_factor: LU without pivoting is not implemented on the CPU")


class LinalgLuBackward0(MultiOutputNode):
    def backward(self, gL, gU):
        L, U = self.saved_outputs()
        return _lu_backward(self.P, L, U, gL, gU)


class LinalgLuFactorExBackward0(Node):
    def backward(self, g):
        LU = self.saved_output()
        P, L, U = lu_unpack(LU, self.pivots)
        k = min(LU.shape[-2], LU.shape[-1])
        gL = g.tril(-1)[..., :, :k]
        gU = g.triu()[..., :k, :]
        return _lu_backward(P, L, U, gL, gU)


def lu_factor_ex(A: Tensor, *, pivot: bool = True, check_errors: bool = False) -> tuple:
    """``(LU, pivots, info)``: LAPACK's packed LU with 1-based pivots and an info code."""
    _check_lu_input(A, pivot)
    a = A._data
    xp = array_module(a)
    lu, piv, info = _lu_arrays(a, xp)
    if check_errors and info.any():
        idx, value = first_failure(info)
        raise LinAlgError(
            f"torch.linalg.lu_factor_ex: {batch_prefix(idx, info.ndim > 0)}U[{value},{value}] "
            "is zero and using it on lu_solve would result in a division by zero. If you still "
            "want to perform the factorization, consider calling linalg.lu(A, pivot) or "
            "linalg.lu_factor_ex(A, pivot)"
        )
    pivots = int_tensor(piv, xp)
    LU = result(LinalgLuFactorExBackward0, lu, (A,), save_output=True, pivots=pivots)
    return LuFactorExResult(LU, pivots, int_tensor(info, xp))


def lu_factor(A: Tensor, *, pivot: bool = True) -> tuple:
    """``(LU, pivots)``; a zero pivot (singular matrix) raises as in PyTorch."""
    LU, pivots, info = lu_factor_ex(A, pivot=pivot)
    if info._data.any():
        idx, value = first_failure(info._data)
        raise RuntimeError(
            f"torch.linalg.lu_factor: {batch_prefix(idx, info.ndim > 0)}U[{value},{value}] is "
            "zero and using it on lu_solve would result in a division by zero. If you still "
            "want to perform the factorization, consider calling linalg.lu(A, pivot) or "
            "linalg.lu_factor_ex(A, pivot)"
        )
    return LuFactorResult(LU, pivots)


def lu(A: Tensor, *, pivot: bool = True) -> tuple:
    """``(P, L, U)`` with ``A = P L U``, L unit lower triangular, U upper triangular."""
    _check_lu_input(A, pivot)
    a = A._data
    xp = array_module(a)
    lu_, piv, _ = _lu_arrays(a, xp)
    m, n = a.shape[-2:]
    k = min(m, n)
    p = _permutation_from_pivots(piv, m, a.dtype, a)
    low = xp.tril(lu_, -1)[..., :, :k] + xp.eye(m, k, dtype=a.dtype)
    up = xp.triu(lu_)[..., :k, :]
    P = wrap(p)
    L, U = record_outputs(LinalgLuBackward0, (low, up), (A,), P=P)
    return LuResult(P, L, U)


def lu_unpack(
    LU_data: Tensor, LU_pivots: Tensor, unpack_data: bool = True, unpack_pivots: bool = True
) -> tuple:
    """``(P, L, U)`` from ``lu_factor``'s packed ``LU`` and pivots (differentiable in LU)."""
    check_matrix("lu_unpack", LU_data, "LU_data")
    m, n = LU_data.shape[-2:]
    k = min(m, n)
    xp = array_module(LU_data._data)
    empty = wrap(xp.zeros((0,), dtype=LU_data._data.dtype))
    if unpack_data:
        L = LU_data.tril(-1)[..., :, :k] + eye(m, k, dtype=LU_data.dtype, device=LU_data.device)
        U = LU_data.triu()[..., :k, :]
    else:
        L = U = empty
    if unpack_pivots:
        P = wrap(_permutation_from_pivots(LU_pivots._data, m, LU_data._data.dtype, LU_data._data))
    else:
        P = empty
    return LuUnpackResult(P, L, U)


def lu_legacy(A: Tensor, pivot: bool = True, get_infos: bool = False) -> tuple:
    """``torch.lu`` (deprecated in PyTorch): ``(LU, pivots)``, plus ``infos`` when asked."""
    LU, pivots, info = lu_factor_ex(A, pivot=pivot)
    return (LU, pivots, info) if get_infos else (LU, pivots)


# --------------------------------------------------------------------------------------------
# geqrf (LAPACK's packed QR; not differentiable in PyTorch either)
# --------------------------------------------------------------------------------------------
class GeqrfBackward0(Node):
    def backward(self, g):
        raise RuntimeError("the derivative for 'geqrf' is not implemented.")


def geqrf(input: Tensor) -> tuple:
    """``(a, tau)``: R on and above the diagonal of ``a``, Householder vectors below it."""
    op = "geqrf"
    if input._data.ndim < 2:
        raise RuntimeError("torch.geqrf: input must have at least 2 dimensions.")
    check_matrix(op, input, "input")
    a = input._data
    xp = array_module(a)
    m, n = a.shape[-2:]
    if a.size == 0:
        h = xp.zeros(a.shape, dtype=a.dtype)
        tau = xp.zeros(a.shape[:-2] + (min(m, n),), dtype=a.dtype)
    else:
        h, tau = xp.linalg.qr(a, mode="raw")
        h = xp.ascontiguousarray(xp.swapaxes(h, -1, -2))  # LAPACK's column-major result
    packed = result(GeqrfBackward0, h.astype(a.dtype, copy=False), (input,))
    return GeqrfResult(packed, wrap(tau.astype(a.dtype, copy=False)))


# --------------------------------------------------------------------------------------------
# LDLᵀ (LAPACK sytrf with Bunch-Kaufman pivots; not differentiable in PyTorch either)
# --------------------------------------------------------------------------------------------
class LinalgLdlFactorExBackward0(Node):
    def backward(self, g):
        raise RuntimeError("derivative for aten::linalg_ldl_factor_ex is not implemented")


def ldl_factor_ex(A: Tensor, *, hermitian: bool = False, check_errors: bool = False) -> tuple:
    """``(LD, pivots, info)``: LAPACK sytrf's compact LDLᵀ of a symmetric ``A`` (lower)."""
    op = "torch.linalg.ldl_factor_ex"
    check_matrix(op, A, "A", square=True)
    from scipy.linalg import lapack

    a = A._data
    xp = array_module(a)
    n = a.shape[-1]
    # sytrf (Bunch-Kaufman) has no CuPy counterpart: one matrix at a time on the host
    host = to_host(a)
    hxp = array_module(host)
    flat = host.reshape((math.prod(host.shape[:-2]),) + host.shape[-2:])  # -1 fails for n = 0
    int32 = dt.int32.np
    ld = hxp.zeros_like(flat)
    piv = hxp.broadcast_to(hxp.arange(1, n + 1, dtype=int32), (len(flat), n)).copy()
    info = hxp.zeros(len(flat), dtype=int32)
    if flat.size:
        # a Hermitian complex A factors as L D Lᴴ (hetrf), a symmetric one as L D Lᵀ
        kernel = "hetrf" if hermitian and flat.dtype.kind == "c" else "sytrf"
        sytrf = lapack.get_lapack_funcs(kernel, (flat,))
        for i, m in enumerate(flat):
            ldu, ipiv, inf = sytrf(m, lower=1)
            ld[i], piv[i], info[i] = hxp.tril(ldu), ipiv, inf
    info = info.reshape(a.shape[:-2])
    if check_errors and info.any():
        idx, value = first_failure(info)
        raise LinAlgError(
            f"torch.linalg.ldl_factor: {batch_prefix(idx, info.ndim > 0)}The factorization "
            f"could not be completed because D[{value},{value}] is exactly zero."
        )
    LD = result(LinalgLdlFactorExBackward0, from_host(ld.reshape(a.shape), a), (A,))
    pivots = int_tensor(piv.reshape(a.shape[:-1]), xp)
    return LdlFactorExResult(LD, pivots, int_tensor(info, xp))


def ldl_factor(A: Tensor, *, hermitian: bool = False) -> tuple:
    """``(LD, pivots)`` of ``ldl_factor_ex``; a zero pivot raises ``LinAlgError``."""
    LD, pivots, _ = ldl_factor_ex(A, hermitian=hermitian, check_errors=True)
    return LdlFactorResult(LD, pivots)
