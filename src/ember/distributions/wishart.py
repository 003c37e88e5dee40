"""``Wishart``: distributions over positive-definite matrices, sampled by the Bartlett
decomposition."""

from __future__ import annotations

import math
import warnings
from numbers import Number

from .. import _op_namespace as ember
from .. import linalg
from .._tensor import Size
from ..ops.special import mvlgamma
from . import constraints
from ._scale_tril import ScaleTrilParams, check_one_matrix_given
from ._special import digamma
from .chi2 import Chi2
from .exp_family import ExponentialFamily
from .utils import finfo, lazy_property

__all__ = ["Wishart"]

LOG_2 = math.log(2)


def _mvdigamma(x, p: int):
    """Σ_{j<p} digamma(x - j/2), the derivative of mvlgamma."""
    if not bool(x.gt((p - 1) / 2).all()):
        raise ValueError("Wrong domain for multivariate digamma function.")
    half_steps = ember.arange(p, dtype=x.dtype, device=x.device) / 2
    return digamma(x.unsqueeze(-1) - half_steps).sum(-1)


def _cholesky_solve(B, L):
    """(L Lᵀ)⁻¹ B as a function of the whole of L, so that gradients reach every entry of L
    as PyTorch's cholesky_solve gives them."""
    return linalg.solve(L @ L.mT, B)


class Wishart(ScaleTrilParams, ExponentialFamily):
    """Wishart(df, covariance_matrix=None, precision_matrix=None, scale_tril=None): the
    distribution of Σ_k x_k x_kᵀ for ``df`` draws x_k ~ MultivariateNormal(0, Σ).

    Example::
        >>> d = ember.distributions.Wishart(ember.tensor(4.0), ember.eye(2))
        >>> d.mean
        tensor([[4., 0.],
                [0., 4.]])
    """

    support = constraints.positive_definite
    has_rsample = True
    _mean_carrier_measure = 0

    @property
    def arg_constraints(self) -> dict:
        return {
            "covariance_matrix": constraints.positive_definite,
            "precision_matrix": constraints.positive_definite,
            "scale_tril": constraints.lower_cholesky,
            "df": constraints.greater_than(self.event_shape[-1] - 1),
        }

    def __init__(
        self,
        df,
        covariance_matrix=None,
        precision_matrix=None,
        scale_tril=None,
        validate_args=None,
    ) -> None:
        check_one_matrix_given(covariance_matrix, precision_matrix, scale_tril)
        param = next(p for p in (covariance_matrix, precision_matrix, scale_tril) if p is not None)
        if param.dim() < 2:
            raise ValueError(
                "scale_tril must be at least two-dimensional, with optional leading batch "
                "dimensions"
            )
        if isinstance(df, Number):
            batch_shape = Size(param.shape[:-2])
            self.df = ember.tensor(float(df), dtype=param.dtype, device=param.device)
        else:
            batch_shape = Size(ember.broadcast_shapes(tuple(param.shape[:-2]), tuple(df.shape)))
            self.df = df.expand(tuple(batch_shape))
        event_shape = param.shape[-2:]
        p = event_shape[-1]
        if bool(self.df.le(p - 1).any()):
            raise ValueError(f"Value of df={df} expected to be greater than ndim - 1 = {p - 1}.")
        matrix = param.expand(tuple(batch_shape) + (-1, -1))
        if scale_tril is not None:
            self.scale_tril = matrix
        elif covariance_matrix is not None:
            self.covariance_matrix = matrix
        else:
            self.precision_matrix = matrix
        if bool(self.df.lt(p).any()):
            warnings.warn(
                "Low df values detected. Singular samples are highly likely to occur for "
                "ndim - 1 < df < ndim.",
                stacklevel=2,
            )
        super().__init__(batch_shape, event_shape, validate_args=validate_args)
        self._set_scale_tril(covariance_matrix, precision_matrix, scale_tril)
        self._dist_chi2 = self._bartlett_chi2(batch_shape)

    def _bartlett_chi2(self, batch_shape):
        # the squared diagonal of the Bartlett factor: Chi2(df - i), i = 0 .. p-1
        p = self._event_shape[-1]
        L = self._unbroadcasted_scale_tril
        steps = ember.arange(p, dtype=L.dtype, device=L.device).expand(tuple(batch_shape) + (-1,))
        return Chi2(df=self.df.unsqueeze(-1) - steps)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Wishart, _instance)
        batch_shape = Size(batch_shape)
        cov_shape = tuple(batch_shape) + tuple(self.event_shape)
        new._unbroadcasted_scale_tril = self._unbroadcasted_scale_tril.expand(cov_shape)
        new.df = self.df.expand(tuple(batch_shape))
        self._expand_matrices(new, cov_shape)
        super(Wishart, new).__init__(batch_shape, self.event_shape, validate_args=False)
        new._dist_chi2 = new._bartlett_chi2(batch_shape)
        new._validate_args = self._validate_args
        return new

    def _matrix_shape(self) -> tuple:
        return tuple(self._batch_shape) + tuple(self._event_shape)

    @lazy_property
    def precision_matrix(self):
        L = self._unbroadcasted_scale_tril
        identity = ember.eye(self._event_shape[-1], dtype=L.dtype, device=L.device)
        return _cholesky_solve(identity, L).expand(self._matrix_shape())

    def _df_matrix(self):
        return self.df.reshape(tuple(self._batch_shape) + (1, 1))

    @property
    def mean(self):
        return self._df_matrix() * self.covariance_matrix

    @property
    def mode(self):
        factor = self.df - self.covariance_matrix.shape[-1] - 1
        factor = ember.where(factor <= 0, math.nan, factor)
        return factor.reshape(tuple(self._batch_shape) + (1, 1)) * self.covariance_matrix

    @property
    def variance(self):
        V = self.covariance_matrix
        diag_v = V.diagonal(dim1=-2, dim2=-1)
        return self._df_matrix() * (V.pow(2) + diag_v.unsqueeze(-1) * diag_v.unsqueeze(-2))

    def _bartlett_sampling(self, sample_shape):
        # A lower triangular: √Chi2(df - i) on the diagonal, standard normals below it (drawn
        # row by row, as torch fills them); then L A (L A)ᵀ ~ Wishart(df, L Lᵀ)
        p = self._event_shape[-1]
        eps = float(finfo(self._unbroadcasted_scale_tril).eps)
        diag = self._dist_chi2.rsample(sample_shape).sqrt().clamp(min=eps)
        L = self._unbroadcasted_scale_tril
        below = ember.randn(
            tuple(sample_shape) + tuple(self._batch_shape) + (p * (p - 1) // 2,),
            dtype=L.dtype,
            device=L.device,
        )
        rows, cols = ember.tril_indices(p, p, -1)
        noise = ember.diag_embed(diag)
        noise[..., rows, cols] = below
        chol = L @ noise
        return chol @ chol.mT

    def rsample(self, sample_shape=Size(), max_try_correction=None):
        """Bartlett samples; singular ones (possible for df < ndim) are redrawn up to
        ``max_try_correction`` times (10 by default).

        The redraws follow torch's: its check marks the non-singular samples, so those are
        drawn once more (the stream advances as torch's), then the singular ones of each
        redraw again; the warning is given only when a sample really is singular.
        """
        max_try_correction = 10 if max_try_correction is None else max_try_correction
        sample = self._bartlett_sampling(Size(sample_shape))
        marked = self._per_sample(self.support.check(sample.detach()))
        truly_singular = bool((~marked).any())
        if bool(marked.any()):
            for _ in range(max_try_correction):
                fresh = self._bartlett_sampling(Size((int(marked.sum().item()),)))
                sample[marked.clone()] = fresh  # the mask changes below; backward keeps this one
                fresh_singular = self._per_sample(~self.support.check(fresh.detach()))
                truly_singular = truly_singular or bool(fresh_singular.any())
                marked[marked.clone()] = fresh_singular
                if not bool(marked.any()):
                    break
        if truly_singular:
            warnings.warn("Singular sample detected.", stacklevel=2)
        return sample

    def _per_sample(self, flags):
        """Reduce per-matrix flags over the batch dimensions (any), as torch does."""
        if len(self._batch_shape):
            flags = flags.amax(tuple(-(d + 1) for d in range(len(self._batch_shape))))
        return flags

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        nu = self.df
        p = self._event_shape[-1]
        L = self._unbroadcasted_scale_tril
        log_det_value = linalg.slogdet(value)[1]
        trace_term = _cholesky_solve(value, L).diagonal(dim1=-2, dim2=-1).sum(-1)
        return (
            -nu * (p * LOG_2 / 2 + L.diagonal(dim1=-2, dim2=-1).log().sum(-1))
            - mvlgamma(nu / 2, p)
            + (nu - p - 1) / 2 * log_det_value
            - trace_term / 2
        )

    def entropy(self):
        nu = self.df
        p = self._event_shape[-1]
        L = self._unbroadcasted_scale_tril
        return (
            (p + 1) * (p * LOG_2 / 2 + L.diagonal(dim1=-2, dim2=-1).log().sum(-1))
            + mvlgamma(nu / 2, p)
            - (nu - p - 1) / 2 * _mvdigamma(nu / 2, p)
            + nu * p / 2
        )

    @property
    def _natural_params(self):
        p = self._event_shape[-1]
        return -self.precision_matrix / 2, (self.df - p - 1) / 2

    def _log_normalizer(self, x, y):
        p = self._event_shape[-1]
        log_det = linalg.slogdet(-2 * x)[1]
        return (y + (p + 1) / 2) * (-log_det + LOG_2 * p) + mvlgamma(y + (p + 1) / 2, p)
