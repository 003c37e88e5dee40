"""``NegativeBinomial``: failures before ``total_count`` successes (success prob 1 - probs)."""

from __future__ import annotations

import ember

from .._tensor import Size
from ..ops.activation import logsigmoid
from . import constraints
from ._sampling import poisson
from ._special import lgamma
from .distribution import Distribution
from .gamma import Gamma
from .utils import broadcast_all, lazy_property, logits_to_probs, probs_to_logits

__all__ = ["NegativeBinomial"]


class NegativeBinomial(Distribution):
    """NegativeBinomial(total_count, probs=None, logits=None): a Gamma-Poisson mixture.

    Example::
        >>> ember.distributions.NegativeBinomial(2.0, ember.tensor(0.5)).mean
        tensor(2.)
    """

    arg_constraints = {
        "total_count": constraints.greater_than_eq(0),
        "probs": constraints.half_open_interval(0.0, 1.0),
        "logits": constraints.real,
    }
    support = constraints.nonnegative_integer

    def __init__(self, total_count, probs=None, logits=None, validate_args=None) -> None:
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        if probs is not None:
            self.total_count, self.probs = broadcast_all(total_count, probs)
            self.total_count = self.total_count.type_as(self.probs)
        else:
            self.total_count, self.logits = broadcast_all(total_count, logits)
            self.total_count = self.total_count.type_as(self.logits)
        self._param = self.probs if probs is not None else self.logits
        super().__init__(self._param.size(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(NegativeBinomial, _instance)
        batch_shape = Size(batch_shape)
        new.total_count = self.total_count.expand(batch_shape)
        if "probs" in self.__dict__:
            new.probs = self.probs.expand(batch_shape)
            new._param = new.probs
        if "logits" in self.__dict__:
            new.logits = self.logits.expand(batch_shape)
            new._param = new.logits
        super(NegativeBinomial, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def mean(self):
        return self.total_count * ember.exp(self.logits)

    @property
    def mode(self):
        return ((self.total_count - 1) * self.logits.exp()).floor().clamp(min=0.0)

    @property
    def variance(self):
        return self.mean / ember.sigmoid(-self.logits)

    @lazy_property
    def logits(self):
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self):
        return logits_to_probs(self.logits, is_binary=True)

    @property
    def param_shape(self) -> Size:
        return self._param.size()

    @lazy_property
    def _gamma(self):
        return Gamma(
            concentration=self.total_count, rate=ember.exp(-self.logits), validate_args=False
        )

    def sample(self, sample_shape=Size()):
        with ember.no_grad():
            return poisson(self._gamma.sample(sample_shape))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        log_unnormalized = self.total_count * logsigmoid(-self.logits) + value * logsigmoid(
            self.logits
        )
        log_normalization = (
            -lgamma(self.total_count + value) + lgamma(1.0 + value) + lgamma(self.total_count)
        )
        # r + k = 0 only at r = k = 0, a point mass of probability 1
        log_normalization = ember.where(self.total_count + value == 0.0, 0.0, log_normalization)
        return log_unnormalized - log_normalization
