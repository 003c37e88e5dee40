"""``MultivariateNormal``: the Gaussian over vectors, parameterised by a covariance, a
precision or a lower Cholesky factor (all computations go through the factor)."""

from __future__ import annotations

import math

from .. import _op_namespace as ember
from .. import linalg
from .._tensor import Size
from . import constraints
from ._scale_tril import ScaleTrilParams, check_one_matrix_given
from .distribution import Distribution
from .utils import forwarded_property, lazy_property, standard_normal

__all__ = ["MultivariateNormal"]


def batch_mv(matrices, vectors):
    """Matrix-vector products broadcast over leading dims."""
    return ember.matmul(matrices, vectors.unsqueeze(-1)).squeeze(-1)


def batch_mahalanobis(scale_tril, x):
    """xᵀ (L Lᵀ)⁻¹ x = |L⁻¹ x|², by one triangular solve broadcast over the batch dims."""
    n = x.shape[-1]
    batch = ember.broadcast_shapes(tuple(scale_tril.shape[:-2]), tuple(x.shape[:-1]))
    L = scale_tril.expand(tuple(batch) + (n, n))
    rhs = x.expand(tuple(batch) + (n,)).unsqueeze(-1)
    solution = linalg.solve_triangular(L, rhs, upper=False).squeeze(-1)
    return solution.pow(2).sum(-1)


def half_log_det(scale_tril):
    """log √det(L Lᵀ) = Σ log diag(L)."""
    return scale_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)


class MultivariateNormal(ScaleTrilParams, Distribution):
    """MultivariateNormal(loc, covariance_matrix=None, precision_matrix=None, scale_tril=None).

    Example::
        >>> m = ember.distributions.MultivariateNormal(ember.zeros(2), ember.eye(2))
        >>> m.log_prob(ember.zeros(2))
        tensor(-1.8379)
    """

    arg_constraints = {
        "loc": constraints.real_vector,
        "covariance_matrix": constraints.positive_definite,
        "precision_matrix": constraints.positive_definite,
        "scale_tril": constraints.lower_cholesky,
    }
    support = constraints.real_vector
    has_rsample = True

    def __init__(
        self,
        loc,
        covariance_matrix=None,
        precision_matrix=None,
        scale_tril=None,
        validate_args=None,
    ) -> None:
        if loc.dim() < 1:
            raise ValueError("loc must be at least one-dimensional.")
        check_one_matrix_given(covariance_matrix, precision_matrix, scale_tril)
        matrix, name = next(
            (m, n)
            for m, n in (
                (scale_tril, "scale_tril"),
                (covariance_matrix, "covariance_matrix"),
                (precision_matrix, "precision_matrix"),
            )
            if m is not None
        )
        if matrix.dim() < 2:
            label = "scale_tril matrix" if name == "scale_tril" else name
            raise ValueError(
                f"{label} must be at least two-dimensional, with optional leading batch dimensions"
            )
        batch_shape = Size(ember.broadcast_shapes(tuple(matrix.shape[:-2]), tuple(loc.shape[:-1])))
        setattr(self, name, matrix.expand(tuple(batch_shape) + (-1, -1)))
        self.loc = loc.expand(tuple(batch_shape) + (-1,))
        super().__init__(batch_shape, self.loc.shape[-1:], validate_args=validate_args)
        self._set_scale_tril(covariance_matrix, precision_matrix, scale_tril)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(MultivariateNormal, _instance)
        batch_shape = Size(batch_shape)
        loc_shape = tuple(batch_shape) + tuple(self.event_shape)
        cov_shape = loc_shape + tuple(self.event_shape)
        new.loc = self.loc.expand(loc_shape)
        new._unbroadcasted_scale_tril = self._unbroadcasted_scale_tril
        self._expand_matrices(new, cov_shape)
        super(MultivariateNormal, new).__init__(batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def _matrix_shape(self) -> tuple:
        return tuple(self._batch_shape) + tuple(self._event_shape) + tuple(self._event_shape)

    @lazy_property
    def precision_matrix(self):
        # (L Lᵀ)⁻¹ as a function of the whole of L, so that gradients reach every entry of L
        # as PyTorch's cholesky_inverse gives them
        L = self._unbroadcasted_scale_tril
        return linalg.inv(ember.matmul(L, L.mT)).expand(self._matrix_shape())

    mean = mode = forwarded_property("loc")  # symmetric and unimodal about loc

    @property
    def variance(self):
        shape = tuple(self._batch_shape) + tuple(self._event_shape)
        return self._unbroadcasted_scale_tril.pow(2).sum(-1).expand(shape)

    def rsample(self, sample_shape=Size()):
        shape = self._extended_shape(sample_shape)
        eps = standard_normal(shape, dtype=self.loc.dtype, device=self.loc.device)
        return self.loc + batch_mv(self._unbroadcasted_scale_tril, eps)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        diff = value - self.loc
        m = batch_mahalanobis(self._unbroadcasted_scale_tril, diff)
        n = self._event_shape[0]
        return -0.5 * (n * math.log(2 * math.pi) + m) - half_log_det(self._unbroadcasted_scale_tril)

    def entropy(self):
        n = self._event_shape[0]
        h = 0.5 * n * (1.0 + math.log(2 * math.pi)) + half_log_det(self._unbroadcasted_scale_tril)
        if len(self._batch_shape) == 0:
            return h
        return h.expand(tuple(self._batch_shape))
