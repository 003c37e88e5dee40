"""Transforms over structured values: correlation Cholesky factors, positive-definite
matrices, and transforms applied slice by slice (CatTransform, StackTransform).
Re-exported by ``transforms``."""

from __future__ import annotations

import math

from .. import _op_namespace as ember
from ..ops.activation import softplus
from . import constraints
from .transforms import (
    LowerCholeskyTransform,
    Transform,
    _check_event_dims,
    _ParameterFreeTransform,
)
from .utils import finfo, sum_rightmost, tril_matrix_to_vec, vec_to_tril_matrix

__all__ = ["CatTransform", "CorrCholeskyTransform", "PositiveDefiniteTransform", "StackTransform"]


def _shift_right(x):
    """x[..., :-1] with a 1 put in front along the last dim."""
    one = ember.ones(tuple(x.shape[:-1]) + (1,), dtype=x.dtype, device=x.device)
    return ember.cat([one, x[..., :-1]], -1)


class CorrCholeskyTransform(_ParameterFreeTransform):
    """R^(D(D-1)/2) -> Cholesky factors of D × D correlation matrices: tanh gives partial
    correlations in (-1, 1), and stick breaking row by row makes each row a unit vector."""

    domain = constraints.real_vector
    codomain = constraints.corr_cholesky
    bijective = True

    def _call(self, x):
        eps = float(finfo(x).eps)
        x = ember.tanh(x).clamp(min=-1 + eps, max=1 - eps)
        r = vec_to_tril_matrix(x, diag=-1)
        # row i: y_ij = r_ij · √(1 - Σ_{k<j} y_ik²), and the diagonal takes what is left
        z1m_cumprod_sqrt = (1 - r**2).sqrt().cumprod(-1)
        r = r + ember.eye(r.shape[-1], dtype=r.dtype, device=r.device)
        return r * _shift_right(z1m_cumprod_sqrt)

    def _inverse(self, y):
        y_cumsum = 1 - ember.cumsum(y * y, -1)
        y_vec = tril_matrix_to_vec(y, diag=-1)
        y_cumsum_vec = tril_matrix_to_vec(_shift_right(y_cumsum), diag=-1)
        t = y_vec / y_cumsum_vec.sqrt()
        return (t.log1p() - t.neg().log1p()) / 2  # atanh

    def log_abs_det_jacobian(self, x, y, intermediates=None):
        y1m_cumsum = 1 - (y * y).cumsum(-1)
        stick_breaking_logdet = 0.5 * tril_matrix_to_vec(y1m_cumsum, diag=-2).log().sum(-1)
        tanh_logdet = -2 * (x + softplus(-2 * x) - math.log(2.0)).sum(-1)
        return stick_breaking_logdet + tanh_logdet

    def forward_shape(self, shape):
        _check_event_dims(shape, 1)
        n = shape[-1]
        d = round((0.25 + 2 * n) ** 0.5 + 0.5)
        if d * (d - 1) // 2 != n:
            raise ValueError("Input is not a flattened lower-diagonal number")
        return ember.Size(tuple(shape[:-1]) + (d, d))

    def inverse_shape(self, shape):
        _check_event_dims(shape, 2)
        if shape[-2] != shape[-1]:
            raise ValueError("Input is not square")
        d = shape[-1]
        return ember.Size(tuple(shape[:-2]) + (d * (d - 1) // 2,))


class PositiveDefiniteTransform(_ParameterFreeTransform):
    """Unconstrained square matrices -> positive-definite ones, L Lᵀ with L from
    LowerCholeskyTransform."""

    domain = constraints.independent(constraints.real, 2)
    codomain = constraints.positive_definite

    def _call(self, x):
        x = LowerCholeskyTransform()(x)
        return x @ x.mT

    def _inverse(self, y):
        from .. import linalg

        return LowerCholeskyTransform().inv(linalg.cholesky(y))


def _check_dim(name: str, t, dim: int, size: int, what: str) -> None:
    if not -t.dim() <= dim < t.dim():
        raise ValueError(f"dim {dim} out of range for {name} with {t.dim()} dimensions")
    if t.shape[dim] != size:
        raise ValueError(f"{name}.size({dim}) = {t.shape[dim]} must equal {what} {size}")


def _transforms_with_cache(tseq, cache_size: int) -> list:
    """The parts of a Cat/StackTransform, each with the whole's cache size."""
    if not all(isinstance(t, Transform) for t in tseq):
        raise TypeError("All elements of tseq must be Transform instances")
    return [t.with_cache(cache_size) for t in tseq] if cache_size else list(tseq)


class CatTransform(Transform):
    """``tseq[i]`` applied to consecutive slices of ``dim`` of sizes ``lengths[i]``, in the
    manner of ``cat``."""

    def __init__(self, tseq, dim: int = 0, lengths=None, cache_size: int = 0) -> None:
        transforms = _transforms_with_cache(tseq, cache_size)
        super().__init__(cache_size=cache_size)
        self.transforms = transforms
        self.lengths = [1] * len(self.transforms) if lengths is None else list(lengths)
        if len(self.lengths) != len(self.transforms):
            raise ValueError(
                f"lengths ({len(self.lengths)}) must match transforms ({len(self.transforms)})"
            )
        self.dim = dim

    @property
    def event_dim(self) -> int:
        return max(t.event_dim for t in self.transforms)

    @property
    def length(self) -> int:
        return sum(self.lengths)

    def with_cache(self, cache_size: int = 1) -> Transform:
        if self._cache_size == cache_size:
            return self
        return CatTransform(self.transforms, self.dim, self.lengths, cache_size)

    def _pieces(self, t):
        start = 0
        for length in self.lengths:
            yield t.narrow(self.dim, start, length)
            start += length

    def _call(self, x):
        _check_dim("x", x, self.dim, self.length, "length")
        return ember.cat([t(p) for t, p in zip(self.transforms, self._pieces(x))], self.dim)

    def _inverse(self, y):
        _check_dim("y", y, self.dim, self.length, "length")
        return ember.cat([t.inv(p) for t, p in zip(self.transforms, self._pieces(y))], self.dim)

    def log_abs_det_jacobian(self, x, y):
        _check_dim("x", x, self.dim, self.length, "length")
        _check_dim("y", y, self.dim, self.length, "length")
        terms = []
        for t, xs, ys in zip(self.transforms, self._pieces(x), self._pieces(y)):
            term = t.log_abs_det_jacobian(xs, ys)
            if t.event_dim < self.event_dim:
                term = sum_rightmost(term, self.event_dim - t.event_dim)
            terms.append(term)
        dim = self.dim - x.dim() if self.dim >= 0 else self.dim
        dim += self.event_dim
        # the concatenated dim survives in the log-det only while it is a batch dim
        return ember.cat(terms, dim) if dim < 0 else sum(terms)

    @property
    def bijective(self) -> bool:
        return all(t.bijective for t in self.transforms)

    @constraints.dependent_property
    def domain(self):
        return constraints.cat([t.domain for t in self.transforms], self.dim, self.lengths)

    @constraints.dependent_property
    def codomain(self):
        return constraints.cat([t.codomain for t in self.transforms], self.dim, self.lengths)


class StackTransform(Transform):
    """``tseq[i]`` applied to slice i of ``dim``, in the manner of ``stack``."""

    def __init__(self, tseq, dim: int = 0, cache_size: int = 0) -> None:
        transforms = _transforms_with_cache(tseq, cache_size)
        super().__init__(cache_size=cache_size)
        self.transforms = transforms
        self.dim = dim

    def with_cache(self, cache_size: int = 1) -> Transform:
        if self._cache_size == cache_size:
            return self
        return StackTransform(self.transforms, self.dim, cache_size)

    def _slice(self, z):
        return [z.select(self.dim, i) for i in range(z.shape[self.dim])]

    def _call(self, x):
        _check_dim("x", x, self.dim, len(self.transforms), "len(transforms)")
        return ember.stack([t(s) for s, t in zip(self._slice(x), self.transforms)], self.dim)

    def _inverse(self, y):
        _check_dim("y", y, self.dim, len(self.transforms), "len(transforms)")
        return ember.stack([t.inv(s) for s, t in zip(self._slice(y), self.transforms)], self.dim)

    def log_abs_det_jacobian(self, x, y):
        _check_dim("x", x, self.dim, len(self.transforms), "len(transforms)")
        _check_dim("y", y, self.dim, len(self.transforms), "len(transforms)")
        terms = [
            t.log_abs_det_jacobian(xs, ys)
            for xs, ys, t in zip(self._slice(x), self._slice(y), self.transforms)
        ]
        return ember.stack(terms, self.dim)

    @property
    def bijective(self) -> bool:
        return all(t.bijective for t in self.transforms)

    @constraints.dependent_property
    def domain(self):
        return constraints.stack([t.domain for t in self.transforms], self.dim)

    @constraints.dependent_property
    def codomain(self):
        return constraints.stack([t.codomain for t in self.transforms], self.dim)
