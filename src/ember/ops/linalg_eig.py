"""The general (non-symmetric) eigendecomposition: ``linalg.eig`` and ``linalg.eigvals``.

Eigenvalues and eigenvectors are complex (complex64 for float32 input, complex128 for
float64), unit-norm eigenvectors as LAPACK's geev returns them, as in PyTorch. The gradient
follows PyTorch's formula for A = V diag(L) V⁻¹ (real inputs take its real part):

    gA = V⁻ᴴ (diag(gL) + (Vᴴ gV − Vᴴ V diag(Re(Vᴴ gV))) / conj(E)) Vᴴ,  E_ij = L_j − L_i

written with ember ops, so that it differentiates again (forward mode, double backward).
"""

from __future__ import annotations

from .. import _backend
from .._creation import eye
from .._tensor import Tensor
from ._dispatch import array_module
from ._linalg_common import MultiOutputNode, _result_type, check_matrix, record_outputs
from .linalg import solve

EigResult = _result_type("linalg_eig", "eigenvalues eigenvectors")


def _complex_of(np_dtype, xp):
    return xp.complex64 if np_dtype in (xp.float32, xp.complex64) else xp.complex128


def _eig_arrays(a, xp):
    ctype = _complex_of(a.dtype, xp)
    if a.size == 0:
        return xp.zeros(a.shape[:-1], dtype=ctype), xp.zeros(a.shape, dtype=ctype)
    # CuPy has no general eigensolver: LAPACK geev on the host (a no-op round trip on the CPU)
    host = _backend.to_host(a)
    w, v = array_module(host).linalg.eig(host)
    w, v = _backend.from_host(w, a), _backend.from_host(v, a)
    return w.astype(ctype, copy=False), v.astype(ctype, copy=False)


class LinalgEigBackward0(MultiOutputNode):
    def backward(self, gL, gV):
        L, V = self.saved_outputs()  # graph tensors: the formula differentiates again
        Vh = V.mH
        n = V.shape[-1]
        identity = eye(n, dtype=V.dtype, device=V.device)
        if gV is not None:
            VhgV = Vh @ gV
            # eigenvectors are normalised: only the part of gV that keeps their norm counts
            inner = VhgV - Vh @ (V * VhgV.diagonal(0, -2, -1).real.unsqueeze(-2))
            Lc = L.conj()
            E = Lc.unsqueeze(-2) - Lc.unsqueeze(-1)  # conj(λ_j - λ_i), off the diagonal
            inner = inner * (1 - identity) / (E + identity)
            if gL is not None:
                inner = inner + gL.diag_embed()
        else:
            inner = gL.diag_embed()
        gA = solve(Vh, inner @ Vh)  # V⁻ᴴ inner Vᴴ
        if self.real_input:
            gA = gA.real
        return gA


def eig(A: Tensor) -> tuple:
    """``(eigenvalues, eigenvectors)`` of a square ``A``, both complex."""
    op = "linalg.eig"
    check_matrix(op, A, "A", square=True, allow_complex=True)
    a = A._data
    xp = array_module(a)
    if a.dtype.kind == "f" and a.size and not bool(xp.isfinite(a).all()):
        raise RuntimeError("torch.linalg.eig: input tensor should not contain infs or NaNs.")
    w, v = _eig_arrays(a, xp)
    return EigResult(
        *record_outputs(
            LinalgEigBackward0,
            (w, v),
            (A,),
            real_input=not A.dtype.is_complex,
            input_dtype=a.dtype,
        )
    )


def eigvals(A: Tensor) -> Tensor:
    """The complex eigenvalues of a square ``A``."""
    return eig(A)[0]
