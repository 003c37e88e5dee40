"""``LowRankMultivariateNormal``: a Gaussian whose covariance is W Wᵀ + diag(D), handled
through the m × m capacitance matrix I + Wᵀ D⁻¹ W instead of the n × n covariance."""

from __future__ import annotations

import math

from .. import _op_namespace as ember
from .. import linalg
from .._tensor import Size
from . import constraints
from .distribution import Distribution
from .multivariate_normal import batch_mahalanobis, batch_mv
from .utils import forwarded_property, lazy_property, standard_normal

__all__ = ["LowRankMultivariateNormal"]


def capacitance_tril(W, D):
    """Cholesky factor of I + Wᵀ D⁻¹ W."""
    m = W.shape[-1]
    K = ember.matmul(W.mT / D.unsqueeze(-2), W)
    return linalg.cholesky(K + ember.eye(m, dtype=W.dtype, device=W.device))


def lowrank_logdet(W, D, cap_tril):
    # matrix determinant lemma: log|W Wᵀ + D| = log|C| + log|D|
    return 2 * cap_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1) + D.log().sum(-1)


def lowrank_mahalanobis(W, D, x, cap_tril):
    # Woodbury: (W Wᵀ + D)⁻¹ = D⁻¹ - D⁻¹ W C⁻¹ Wᵀ D⁻¹
    wt_dinv_x = batch_mv(W.mT / D.unsqueeze(-2), x)
    return (x.pow(2) / D).sum(-1) - batch_mahalanobis(cap_tril, wt_dinv_x)


class LowRankMultivariateNormal(Distribution):
    """LowRankMultivariateNormal(loc, cov_factor, cov_diag): covariance
    ``cov_factor @ cov_factor.mT + diag(cov_diag)``.

    Example::
        >>> W = ember.tensor([[1.0], [0.0]])
        >>> m = LowRankMultivariateNormal(ember.zeros(2), W, ember.ones(2))
        >>> m.variance
        tensor([2., 1.])
    """

    arg_constraints = {
        "loc": constraints.real_vector,
        "cov_factor": constraints.independent(constraints.real, 2),
        "cov_diag": constraints.independent(constraints.positive, 1),
    }
    support = constraints.real_vector
    has_rsample = True

    def __init__(self, loc, cov_factor, cov_diag, validate_args=None) -> None:
        if loc.dim() < 1:
            raise ValueError("loc must be at least one-dimensional.")
        event_shape = tuple(loc.shape[-1:])
        if cov_factor.dim() < 2:
            raise ValueError(
                "cov_factor must be at least two-dimensional, with optional leading batch "
                "dimensions"
            )
        if tuple(cov_factor.shape[-2:-1]) != event_shape:
            raise ValueError(
                f"cov_factor must be a batch of matrices with shape {event_shape[0]} x m"
            )
        if tuple(cov_diag.shape[-1:]) != event_shape:
            raise ValueError(f"cov_diag must be a batch of vectors with shape {Size(event_shape)}")
        try:
            loc_, self.cov_factor, cov_diag_ = ember.broadcast_tensors(
                loc.unsqueeze(-1), cov_factor, cov_diag.unsqueeze(-1)
            )
        except RuntimeError as e:
            raise ValueError(
                f"Incompatible batch shapes: loc {loc.shape}, cov_factor {cov_factor.shape}, "
                f"cov_diag {cov_diag.shape}"
            ) from e
        self.loc = loc_[..., 0]
        self.cov_diag = cov_diag_[..., 0]
        self._unbroadcasted_cov_factor = cov_factor
        self._unbroadcasted_cov_diag = cov_diag
        self._capacitance_tril = capacitance_tril(cov_factor, cov_diag)
        super().__init__(self.loc.shape[:-1], event_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(LowRankMultivariateNormal, _instance)
        batch_shape = Size(batch_shape)
        loc_shape = tuple(batch_shape) + tuple(self.event_shape)
        new.loc = self.loc.expand(loc_shape)
        new.cov_diag = self.cov_diag.expand(loc_shape)
        new.cov_factor = self.cov_factor.expand(loc_shape + tuple(self.cov_factor.shape[-1:]))
        new._unbroadcasted_cov_factor = self._unbroadcasted_cov_factor
        new._unbroadcasted_cov_diag = self._unbroadcasted_cov_diag
        new._capacitance_tril = self._capacitance_tril
        super(LowRankMultivariateNormal, new).__init__(
            batch_shape, self.event_shape, validate_args=False
        )
        new._validate_args = self._validate_args
        return new

    def _matrix_shape(self) -> tuple:
        return tuple(self._batch_shape) + tuple(self._event_shape) * 2

    mean = mode = forwarded_property("loc")  # symmetric and unimodal about loc

    @lazy_property
    def variance(self):
        W, D = self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag
        return (W.pow(2).sum(-1) + D).expand(tuple(self._batch_shape) + tuple(self._event_shape))

    @lazy_property
    def scale_tril(self):
        n = self._event_shape[0]
        d_sqrt = self._unbroadcasted_cov_diag.sqrt().unsqueeze(-1)
        scaled_w = self._unbroadcasted_cov_factor / d_sqrt
        K = ember.matmul(scaled_w, scaled_w.mT) + ember.eye(n, dtype=d_sqrt.dtype)
        return (d_sqrt * linalg.cholesky(K)).expand(self._matrix_shape())

    @lazy_property
    def covariance_matrix(self):
        W = self._unbroadcasted_cov_factor
        cov = ember.matmul(W, W.mT) + ember.diag_embed(self._unbroadcasted_cov_diag)
        return cov.expand(self._matrix_shape())

    @lazy_property
    def precision_matrix(self):
        W, D = self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag
        A = linalg.solve_triangular(self._capacitance_tril, W.mT / D.unsqueeze(-2), upper=False)
        precision = ember.diag_embed(D.reciprocal()) - A.mT @ A
        return precision.expand(self._matrix_shape())

    def rsample(self, sample_shape=Size()):
        shape = tuple(self._extended_shape(sample_shape))
        w_shape = shape[:-1] + tuple(self.cov_factor.shape[-1:])
        eps_w = standard_normal(w_shape, dtype=self.loc.dtype, device=self.loc.device)
        eps_d = standard_normal(shape, dtype=self.loc.dtype, device=self.loc.device)
        return (
            self.loc
            + batch_mv(self._unbroadcasted_cov_factor, eps_w)
            + self._unbroadcasted_cov_diag.sqrt() * eps_d
        )

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        W, D = self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag
        m = lowrank_mahalanobis(W, D, value - self.loc, self._capacitance_tril)
        log_det = lowrank_logdet(W, D, self._capacitance_tril)
        return -0.5 * (self._event_shape[0] * math.log(2 * math.pi) + log_det + m)

    def entropy(self):
        W, D = self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag
        log_det = lowrank_logdet(W, D, self._capacitance_tril)
        h = 0.5 * (self._event_shape[0] * (1.0 + math.log(2 * math.pi)) + log_det)
        if len(self._batch_shape) == 0:
            return h
        return h.expand(tuple(self._batch_shape))
