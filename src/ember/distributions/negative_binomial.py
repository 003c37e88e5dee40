"""``NegativeBinomial``: failures before ``total_count`` successes (success prob 1 - probs)."""

from __future__ import annotations

from .. import _op_namespace as ember
from .._random_ops import poisson
from .._tensor import Size
from ..ops.activation import logsigmoid
from . import constraints
from ._probs_or_logits import ProbsOrLogitsWithShape
from ._special import lgamma
from .distribution import Distribution
from .gamma import Gamma
from .utils import lazy_property

__all__ = ["NegativeBinomial"]


class NegativeBinomial(ProbsOrLogitsWithShape, Distribution):
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
        (total_count,) = self._set_probs_or_logits(probs, logits, total_count)
        self.total_count = total_count.type_as(self._param)
        super().__init__(self._param.size(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._expanded(NegativeBinomial, batch_shape, _instance, expand=("total_count",))
        self._expand_probs_or_logits(new, new.batch_shape)
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
