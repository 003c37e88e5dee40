"""The torch.* product helpers around matmul: addmv, addr, baddbmm, addbmm, kron, block_diag
and trace. All are compositions of differentiable ops."""

from __future__ import annotations

from .. import _dtype as dt
from .._creation import zeros
from .._tensor import Tensor
from .linalg import bmm, mv, outer
from .shape import cat


def _scaled_sum(input: Tensor, product: Tensor, beta, alpha) -> Tensor:
    """β·input + α·product; β = 0 ignores input (nan and inf in it do not propagate)."""
    if alpha != 1:
        product = product * alpha
    if beta == 0:
        return product + (input * 0).nan_to_num(0.0, 0.0, 0.0)
    return (input if beta == 1 else input * beta) + product


def addmv(input: Tensor, mat: Tensor, vec: Tensor, *, beta=1, alpha=1) -> Tensor:
    """β·input + α·(mat @ vec)."""
    return _scaled_sum(input, mv(mat, vec), beta, alpha)


def addr(input: Tensor, vec1: Tensor, vec2: Tensor, *, beta=1, alpha=1) -> Tensor:
    """β·input + α·outer(vec1, vec2)."""
    if vec1.ndim != 1 or vec2.ndim != 1:
        raise RuntimeError(
            f"addr: Expected 1-D argument vec1, but got {vec1.ndim}-D"
            if vec1.ndim != 1
            else f"addr: Expected 1-D argument vec2, but got {vec2.ndim}-D"
        )
    return _scaled_sum(input, outer(vec1, vec2), beta, alpha)


def baddbmm(input: Tensor, batch1: Tensor, batch2: Tensor, *, beta=1, alpha=1) -> Tensor:
    """β·input + α·(batch1 @ batch2), batch by batch."""
    return _scaled_sum(input, bmm(batch1, batch2), beta, alpha)


def addbmm(input: Tensor, batch1: Tensor, batch2: Tensor, *, beta=1, alpha=1) -> Tensor:
    """β·input + α·Σ_b batch1[b] @ batch2[b]."""
    return _scaled_sum(input, bmm(batch1, batch2).sum(0), beta, alpha)


def kron(input: Tensor, other: Tensor) -> Tensor:
    """The Kronecker product: blocks input[i] · other."""
    nd = max(input.ndim, other.ndim)
    a = input.reshape((1,) * (nd - input.ndim) + tuple(input.shape))
    b = other.reshape((1,) * (nd - other.ndim) + tuple(other.shape))
    # interleave: a's dims at even places, b's at odd places, then merge each pair
    a_view = a.reshape(tuple(s for d in a.shape for s in (d, 1)))
    b_view = b.reshape(tuple(s for d in b.shape for s in (1, d)))
    return (a_view * b_view).reshape(tuple(x * y for x, y in zip(a.shape, b.shape)))


def block_diag(*tensors: Tensor) -> Tensor:
    """The block-diagonal matrix of 0-, 1- or 2-D tensors (0-D as 1×1, 1-D as one row)."""
    mats = []
    for i, t in enumerate(tensors):
        if t.ndim > 2:
            raise RuntimeError(
                f"torch.block_diag: Input tensors must have 2 or fewer dimensions. Input {i} "
                f"has {t.ndim} dimensions"
            )
        mats.append(t.reshape(1, 1) if t.ndim == 0 else (t.reshape(1, -1) if t.ndim == 1 else t))
    if not mats:
        return zeros(1, 0)
    out_dtype = mats[0].dtype
    for m in mats[1:]:
        out_dtype = dt.result_type(_dtype_probe(out_dtype), m)
    mats = [m.to(out_dtype) for m in mats]
    width = sum(m.shape[1] for m in mats)
    rows, left = [], 0
    device = mats[0].device
    for m in mats:
        r, c = m.shape
        parts = []
        if left:
            parts.append(zeros(r, left, dtype=out_dtype, device=device))
        parts.append(m)
        if width - left - c:
            parts.append(zeros(r, width - left - c, dtype=out_dtype, device=device))
        rows.append(cat(parts, 1) if len(parts) > 1 else m)
        left += c
    return cat(rows, 0)


def _dtype_probe(dtype) -> Tensor:
    return zeros(0, dtype=dtype)


def trace(input: Tensor) -> Tensor:
    """The sum of the main diagonal of a matrix."""
    if input.ndim != 2:
        raise RuntimeError(f"trace: expected a matrix, but got tensor with dim {input.ndim}")
    return input.diagonal().sum()
