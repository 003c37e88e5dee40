"""``Poisson``: counts of events at rate ``rate``."""

from __future__ import annotations

from .. import _op_namespace as ember
from .._random_ops import poisson
from .._tensor import Size
from . import constraints
from ._special import lgamma, xlogy
from .exp_family import ExponentialFamily
from .utils import broadcast_all

__all__ = ["Poisson"]


class Poisson(ExponentialFamily):
    """Poisson(rate): P(k) = rate^k e^(-rate) / k!.

    Example::
        >>> ember.distributions.Poisson(ember.tensor(2.0)).log_prob(ember.tensor(0.0))
        tensor(-2.)
    """

    arg_constraints = {"rate": constraints.nonnegative}
    support = constraints.nonnegative_integer

    @property
    def mean(self):
        return self.rate

    @property
    def mode(self):
        return self.rate.floor()

    @property
    def variance(self):
        return self.rate

    def __init__(self, rate, validate_args=None) -> None:
        (self.rate,) = broadcast_all(rate)
        super().__init__(self.rate.size(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expanded(Poisson, batch_shape, _instance, expand=("rate",))

    def sample(self, sample_shape=Size()):
        shape = tuple(self._extended_shape(sample_shape))
        with ember.no_grad():
            return poisson(self.rate.expand(shape))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        rate, value = broadcast_all(self.rate, value)
        return xlogy(value, rate) - rate - lgamma(value + 1)

    @property
    def _natural_params(self):
        return (ember.log(self.rate),)

    def _log_normalizer(self, x):
        return ember.exp(x)
