"""``Bernoulli``: one coin flip, parameterised by ``probs`` or ``logits``."""

from __future__ import annotations

from .. import _op_namespace as ember
from .._tensor import Size
from . import constraints
from ._probs_or_logits import ProbsOrLogitsWithShape
from .exp_family import ExponentialFamily
from .utils import bce_with_logits, broadcast_all

__all__ = ["Bernoulli"]


class Bernoulli(ProbsOrLogitsWithShape, ExponentialFamily):
    """Bernoulli(probs=None, logits=None): 1 with probability ``probs``, else 0.

    Example::
        >>> ember.distributions.Bernoulli(ember.tensor(0.3)).log_prob(ember.tensor(1.0))
        tensor(-1.2040)
    """

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.boolean
    has_enumerate_support = True
    _mean_carrier_measure = 0

    def __init__(self, probs=None, logits=None, validate_args=None) -> None:
        self._set_probs_or_logits(probs, logits)
        super().__init__(self._param.size(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._expanded(Bernoulli, batch_shape, _instance)
        self._expand_probs_or_logits(new, new.batch_shape)
        return new

    @property
    def mean(self):
        return self.probs

    @property
    def mode(self):
        mode = (self.probs >= 0.5).to(self.probs.dtype)
        return ember.where(self.probs == 0.5, float("nan"), mode)

    @property
    def variance(self):
        return self.probs * (1 - self.probs)

    def sample(self, sample_shape=Size()):
        shape = self._extended_shape(sample_shape)
        with ember.no_grad():
            return ember.bernoulli(self.probs.expand(shape))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        return -bce_with_logits(logits, value)

    def entropy(self):
        return bce_with_logits(self.logits, self.probs)

    def enumerate_support(self, expand: bool = True):
        values = ember.arange(2, dtype=self._param.dtype, device=self._param.device)
        values = values.view((-1,) + (1,) * len(self._batch_shape))
        if expand:
            values = values.expand((-1,) + tuple(self._batch_shape))
        return values

    @property
    def _natural_params(self):
        return (ember.logit(self.probs),)

    def _log_normalizer(self, x):
        return ember.log1p(ember.exp(x))
