"""``StudentT``: heavy-tailed location-scale family with ``df`` degrees of freedom."""

from __future__ import annotations

import math

from .. import _op_namespace as ember
from .._tensor import Size
from . import constraints
from ._special import digamma, lgamma
from .chi2 import Chi2
from .distribution import Distribution
from .utils import broadcast_all, standard_normal

__all__ = ["StudentT"]


class StudentT(Distribution):
    """StudentT(df, loc=0.0, scale=1.0).

    Example::
        >>> ember.distributions.StudentT(ember.tensor(2.0)).log_prob(ember.tensor(0.0))
        tensor(-1.0397)
    """

    arg_constraints = {
        "df": constraints.positive,
        "loc": constraints.real,
        "scale": constraints.positive,
    }
    support = constraints.real
    has_rsample = True

    @property
    def mean(self):
        return ember.where(self.df <= 1, math.nan, self.loc)

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        df = self.df
        finite = self.scale.pow(2) * df / (df - 2)
        m = ember.where(df > 2, finite, ember.where(df > 1, math.inf, math.nan))
        return m.to(df.dtype)

    def __init__(self, df, loc=0.0, scale=1.0, validate_args=None) -> None:
        self.df, self.loc, self.scale = broadcast_all(df, loc, scale)
        self._chi2 = Chi2(self.df)
        super().__init__(self.df.size(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expanded(
            StudentT, batch_shape, _instance, expand=("df", "loc", "scale", "_chi2")
        )

    def rsample(self, sample_shape=Size()):
        # X ~ Normal(0, 1), Z ~ Chi2(df): X / √(Z / df) ~ StudentT(df)
        shape = self._extended_shape(sample_shape)
        x = standard_normal(shape, dtype=self.df.dtype, device=self.df.device)
        z = self._chi2.rsample(sample_shape)
        y = x * ember.rsqrt(z / self.df)
        return self.loc + self.scale * y

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        y = (value - self.loc) / self.scale
        z = (
            self.scale.log()
            + 0.5 * self.df.log()
            + 0.5 * math.log(math.pi)
            + lgamma(0.5 * self.df)
            - lgamma(0.5 * (self.df + 1.0))
        )
        return -0.5 * (self.df + 1.0) * ember.log1p(y**2.0 / self.df) - z

    def entropy(self):
        lbeta = lgamma(0.5 * self.df) + math.lgamma(0.5) - lgamma(0.5 * (self.df + 1))
        return (
            self.scale.log()
            + 0.5 * (self.df + 1) * (digamma(0.5 * (self.df + 1)) - digamma(0.5 * self.df))
            + 0.5 * self.df.log()
            + lbeta
        )
