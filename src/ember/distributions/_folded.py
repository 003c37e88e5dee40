"""What HalfNormal and HalfCauchy share: |X| for X from a distribution symmetric about 0, whose
density on x >= 0 is twice the base density."""

from __future__ import annotations

import math

from .. import _op_namespace as ember
from . import constraints
from .transformed_distribution import TransformedDistribution
from .transforms import AbsTransform
from .utils import forwarded_property

__all__ = ["FoldedDistribution"]


class FoldedDistribution(TransformedDistribution):
    """|X| for X ~ ``base_dist``, a location-scale distribution with ``loc`` 0.

    Example::
        >>> half = FoldedDistribution(ember.distributions.Normal(0.0, 1.0))
        >>> half.cdf(ember.tensor(0.0))
        tensor(0.)
    """

    arg_constraints = {"scale": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True

    def __init__(self, base_dist, validate_args=None) -> None:
        super().__init__(base_dist, AbsTransform(), validate_args=validate_args)

    scale = forwarded_property("base_dist.scale")

    @property
    def mode(self):
        return ember.zeros_like(self.scale)

    def _as_value(self, value):
        """``log_prob``'s value after validation (subclasses may convert it)."""
        return value

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        value = self._as_value(value)
        log_prob = self.base_dist.log_prob(value) + math.log(2)
        return ember.where(value >= 0, log_prob, -math.inf)

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return 2 * self.base_dist.cdf(value) - 1

    def icdf(self, prob):
        return self.base_dist.icdf((prob + 1) / 2)

    def entropy(self):
        return self.base_dist.entropy() - math.log(2)
