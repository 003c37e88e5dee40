"""Randomized low-rank factorizations: ``torch.svd_lowrank`` and ``torch.pca_lowrank``.

Halko, Martinsson and Tropp's range finder: a random projection, a few power iterations with
re-orthonormalization, then an exact SVD of the small projected matrix. Written with ember
ops, so the result is differentiable like the ops it is made of. The random stream is
ember's, so the factors match PyTorch's only where the answer is unique (rank ≤ q).
"""

from __future__ import annotations

from .._tensor import Tensor
from ._linalg_common import OldSvdResult, check_matrix
from .linalg_decompositions import qr, svd


def _centered(A: Tensor, M) -> Tensor:
    return A if M is None else A - M


def _approximate_basis(A: Tensor, q: int, niter: int, M=None) -> Tensor:
    """An orthonormal (m, q) basis whose span nearly holds A's range."""
    from .._creation import randn

    n = A.shape[-1]
    R = randn(n, q, dtype=A.dtype, device=A.device)
    Q = qr(_centered(A, M) @ R).Q
    for _ in range(niter):
        Q = qr(_centered(A, M).mT @ Q).Q
        Q = qr(_centered(A, M) @ Q).Q
    return Q


def svd_lowrank(A: Tensor, q: int | None = 6, niter: int = 2, M: Tensor | None = None) -> tuple:
    """``(U, S, V)`` with ``A - M ≈ U diag(S) Vᵀ`` of rank ``q`` (randomized)."""
    check_matrix("svd_lowrank", A, "A")
    q = 6 if q is None else q
    m, n = A.shape[-2:]
    if m < n or n > q:
        # factor the transpose, so that the small SVD is of a (n, q) matrix
        At = A.mT
        Mt = None if M is None else M.mT
        Q = _approximate_basis(At, q, niter, Mt)
        B_t = _centered(A, M) @ Q
        U, S, Vh = svd(B_t, full_matrices=False)
        return OldSvdResult(U, S, Q @ Vh.mT)
    Q = _approximate_basis(A, q, niter, M)
    B = Q.mT @ _centered(A, M)
    U, S, Vh = svd(B, full_matrices=False)
    return OldSvdResult(Q @ U, S, Vh.mT)


def pca_lowrank(A: Tensor, q: int | None = None, center: bool = True, niter: int = 2) -> tuple:
    """``(U, S, V)`` of the principal components of ``A``'s rows (columns centred first)."""
    check_matrix("pca_lowrank", A, "A")
    m, n = A.shape[-2:]
    q = min(6, m, n) if q is None else q
    if not 0 <= q <= min(m, n):
        raise ValueError(
            f"q(={q}) must be non-negative integer and not greater than min(m, n)={min(m, n)}"
        )
    if niter < 0:
        raise ValueError(f"niter(={niter}) must be non-negative integer")
    if center:
        A = A - A.mean(-2, keepdim=True)
    return svd_lowrank(A, q, niter)
