"""Distances between rows: ``cdist`` and ``pdist`` (one node each, as in PyTorch), and the
composite ``pairwise_distance`` and ``cosine_similarity``.

The backward formulas share one rule, the gradient of a p-norm with respect to the difference
it measures, written with ember ops so that double backward works.
"""

from __future__ import annotations

import math

from .._tensor import Tensor
from ..autograd.node import Node
from ._dispatch import array_module, result, wrap
from .elementwise import clamp, where
from .indexing import index_add
from .reduction import vector_norm
from .shape import broadcast_tensors

COMPUTE_MODES = (
    "use_mm_for_euclid_dist_if_necessary",
    "use_mm_for_euclid_dist",
    "donot_use_mm_for_euclid_dist",
)


def _norm_array(xp, diff, p: float):
    """p-norms of ``diff`` along its last axis (PyTorch's conventions for p = 0 and ∞)."""
    a = xp.abs(diff)
    if p == 0:
        return (a != 0).sum(-1).astype(diff.dtype)
    if p == 1:
        return a.sum(-1)
    if p == 2:
        return xp.sqrt((a * a).sum(-1))
    if p == math.inf:
        return a.max(-1) if a.shape[-1] else a.sum(-1)
    return (a**p).sum(-1) ** (1.0 / p)


def norm_gradient(diff: Tensor, dist: Tensor, p: float) -> Tensor:
    """d ||diff||_p / d diff, with ``dist`` the norm broadcast against ``diff``; 0 where the
    norm is 0 (PyTorch's subgradient choice)."""
    if p == 0:
        return diff * 0
    if p == 1:
        return diff.sign()
    zero = dist == 0
    safe = where(zero, 1.0, dist)
    if p == 2:
        return where(zero, 0.0, diff / safe)
    if p == math.inf:
        return where(zero, 0.0, diff.sign() * (diff.abs() == dist))
    # d/dx (Σ|x|^p)^(1/p) = sign(x) |x|^(p-1) / ||x||^(p-1)
    return where(zero, 0.0, diff.sign() * (diff.abs() / safe) ** (p - 1))


class CdistBackward0(Node):
    def backward(self, g):
        x1, x2 = self.unpack_saved()
        d = self.saved_output()
        p = self.p
        need1, need2 = self._edges[0] is not None, self._edges[1] is not None
        if p == 2:
            # with G = g / d:  dL/dx1 = x1 Σ_r G - G x2,  dL/dx2 = x2 Σ_p Gᵀ - Gᵀ x1
            G = where(d == 0, 0.0, g / where(d == 0, 1.0, d))
            gx1 = x1 * G.sum(-1, keepdim=True) - G.matmul(x2) if need1 else None
            Gt = G.transpose(-1, -2)
            gx2 = x2 * Gt.sum(-1, keepdim=True) - Gt.matmul(x1) if need2 else None
            return gx1, gx2
        diff = x1.unsqueeze(-2) - x2.unsqueeze(-3)
        gdiff = norm_gradient(diff, d.unsqueeze(-1), p) * g.unsqueeze(-1)
        return (gdiff.sum(-2) if need1 else None), (-gdiff.sum(-3) if need2 else None)


def cdist(x1: Tensor, x2: Tensor, p: float = 2.0, compute_mode: str = COMPUTE_MODES[0]) -> Tensor:
    """p-norm distances between each row of ``x1`` (…, P, M) and each row of ``x2`` (…, R, M).

    >>> cdist(ember.tensor([[0.0, 0.0]]), ember.tensor([[3.0, 4.0]]))
    tensor([[5.]])
    """
    for name, x in (("X1", x1), ("X2", x2)):
        if x.dim() < 2:
            raise RuntimeError(f"cdist only supports at least 2D tensors, {name} got: {x.dim()}D")
        if not x.is_floating_point():
            raise RuntimeError(
                f"cdist only supports floating-point dtypes, {name} got: {x.dtype.legacy_name}"
            )
    if x1.shape[-1] != x2.shape[-1]:
        raise RuntimeError(
            f"X1 and X2 must have the same number of columns. X1: {x1.shape[-1]} X2: {x2.shape[-1]}"
        )
    if p < 0:
        raise RuntimeError("cdist only supports non-negative p values")
    if compute_mode not in COMPUTE_MODES:
        raise ValueError(f"{compute_mode} is not a valid value for compute_mode")
    if x1.dtype != x2.dtype:
        raise RuntimeError(
            f"cdist: X1 and X2 must have the same dtype, got {x1.dtype} and {x2.dtype}"
        )
    a, b = x1._data, x2._data
    xp = array_module(a)
    big = a.shape[-2] > 25 or b.shape[-2] > 25
    use_mm = p == 2 and (
        compute_mode == COMPUTE_MODES[1] or (compute_mode == COMPUTE_MODES[0] and big)
    )
    if use_mm:  # |a|² + |b|² - 2 a·b: no (P, R, M) temporary
        sq = (a * a).sum(-1)[..., :, None] + (b * b).sum(-1)[..., None, :]
        out = xp.sqrt(xp.maximum(sq - 2 * xp.matmul(a, xp.swapaxes(b, -1, -2)), 0))
    else:
        out = _norm_array(xp, a[..., :, None, :] - b[..., None, :, :], float(p))
    return result(CdistBackward0, out, (x1, x2), (x1, x2), True, p=float(p))


class PdistBackward0(Node):
    def backward(self, g):
        (x,) = self.unpack_saved()
        d = self.saved_output()
        rows, cols = self.rows, self.cols
        diff = x.index_select(0, rows) - x.index_select(0, cols)
        gdiff = norm_gradient(diff, d.unsqueeze(-1), self.p) * g.unsqueeze(-1)
        return index_add(index_add(x * 0, 0, rows, gdiff), 0, cols, -gdiff)


def pdist(input: Tensor, p: float = 2) -> Tensor:
    """p-norm distances between all pairs of rows i < j of an (N, M) input, in row-major
    order of the upper triangle: N (N - 1) / 2 values."""
    if input.dim() != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {input.dim()}D")
    if not input.is_floating_point():
        raise RuntimeError(
            f"pdist only supports floating-point dtypes, got: {input.dtype.legacy_name}"
        )
    if p < 0:
        raise RuntimeError("pdist only supports non-negative p values")
    data = input._data
    xp = array_module(data)
    n = data.shape[0]
    rows, cols = xp.triu_indices(n, 1)
    out = _norm_array(xp, data[rows] - data[cols], float(p))
    return result(
        PdistBackward0,
        out.astype(data.dtype, copy=False),
        (input,),
        (input,),
        True,
        p=float(p),
        rows=wrap(rows.astype(xp.int64)),
        cols=wrap(cols.astype(xp.int64)),
    )


def pairwise_distance(
    x1: Tensor, x2: Tensor, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False
) -> Tensor:
    """||x1 - x2 + eps||_p along the last dimension (the operands broadcast)."""
    last = max(x1.dim(), x2.dim()) - 1
    if last < 0:
        raise RuntimeError("pairwise_distance: expected at least 1-D inputs, got 0-D ones")
    return vector_norm(x1 - x2 + eps, p, last, keepdim)


def cosine_similarity(x1: Tensor, x2: Tensor, dim: int = 1, eps: float = 1e-8) -> Tensor:
    """Σ (x1/|x1|)(x2/|x2|) along ``dim``, each norm at least ``eps`` (the clamp changes the
    value only: as in PyTorch, no gradient is cut by it)."""
    if not x1.is_floating_point():
        x1 = x1.float()
    if not x2.is_floating_point():
        x2 = x2.float()
    x1, x2 = broadcast_tensors(x1, x2)
    n1 = vector_norm(x1, 2, dim, True)
    n2 = vector_norm(x2, 2, dim, True)
    n1 = n1 + (clamp(n1.detach(), min=eps) - n1.detach())
    n2 = n2 + (clamp(n2.detach(), min=eps) - n2.detach())
    return ((x1 / n1) * (x2 / n2)).sum(dim)
