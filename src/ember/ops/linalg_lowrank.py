"""Randomized low-rank factorizations: ``torch.svd_lowrank`` and ``torch.pca_lowrank``.

Halko, Martinsson and Tropp's range finder: a random projection, a few power iterations with
re-orthonormalization, then an exact SVD of the small projected matrix. Written with ember
ops, so the result is differentiable like the ops it is made of. The steps and the random
draws are torch's (ember's generator gives torch's stream for a seed), so with the same seed
the factors agree with PyTorch's up to the signs of singular vectors.
"""

from __future__ import annotations

from .._tensor import Tensor
from ._linalg_common import OldSvdResult, check_matrix
from .linalg_decompositions import qr, svd


def _approximate_basis(A: Tensor, q: int, niter: int, M=None) -> Tensor:
    """An orthonormal (m, q) basis whose span nearly holds the range of A - M (M is never
    subtracted from A: it may be a dense low-rank stand-in)."""
    from .._creation import randn

    def times(B):  # (A - M) B
        return A @ B if M is None else A @ B - M @ B

    def adjoint_times(B):  # (A - M)ᴴ B
        return A.mH @ B if M is None else A.mH @ B - M.mH @ B

    # the same draws from the generator as torch's: one (n, q) normal matrix
    R = randn(A.shape[-1], q, dtype=A.dtype, device=A.device)
    Q = qr(times(R)).Q
    for _ in range(niter):
        Q = qr(adjoint_times(Q)).Q
        Q = qr(times(Q)).Q
    return Q


def svd_lowrank(A: Tensor, q: int | None = 6, niter: int = 2, M: Tensor | None = None) -> tuple:
    """``(U, S, V)`` with ``A - M ≈ U diag(S) Vᴴ`` of rank ``q`` (randomized)."""
    check_matrix("svd_lowrank", A, "A")
    q = 6 if q is None else q
    niter = 2 if niter is None else niter
    m, n = A.shape[-2:]
    if M is not None:
        M = M.broadcast_to(A.shape)
    wide = m < n
    if wide:  # factor Aᴴ, so that the small SVD is of a (q, m) matrix
        A = A.mH
        M = None if M is None else M.mH
    Q = _approximate_basis(A, q, niter, M)
    B = Q.mH @ A if M is None else Q.mH @ A - Q.mH @ M
    U, S, Vh = svd(B, full_matrices=False)
    U, V = Q @ U, Vh.mH
    return OldSvdResult(V, S, U) if wide else OldSvdResult(U, S, V)


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
