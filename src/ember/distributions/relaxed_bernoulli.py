"""``RelaxedBernoulli``: a continuous, reparameterisable stand-in for a coin flip
(the binary Concrete / Gumbel-softmax distribution)."""

from __future__ import annotations

from .. import _op_namespace as ember
from .._tensor import Size
from . import constraints
from ._probs_or_logits import ProbsOrLogitsWithShape
from .distribution import Distribution
from .transformed_distribution import TransformedDistribution
from .transforms import SigmoidTransform
from .utils import broadcast_all, clamp_probs, forwarded_property

__all__ = ["LogitRelaxedBernoulli", "RelaxedBernoulli"]


class LogitRelaxedBernoulli(ProbsOrLogitsWithShape, Distribution):
    """The logit of a RelaxedBernoulli: (logit(u) + logits) / temperature, u ~ Uniform(0, 1)."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.real

    def __init__(self, temperature, probs=None, logits=None, validate_args=None) -> None:
        self.temperature = temperature
        self._set_probs_or_logits(probs, logits)
        super().__init__(self._param.size(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._expanded(LogitRelaxedBernoulli, batch_shape, _instance, share=("temperature",))
        self._expand_probs_or_logits(new, new.batch_shape)
        return new

    def rsample(self, sample_shape=Size()):
        shape = tuple(self._extended_shape(sample_shape))
        probs = clamp_probs(self.probs.expand(shape))
        uniforms = clamp_probs(ember.rand(shape, dtype=probs.dtype, device=probs.device))
        logistic = uniforms.log() - (-uniforms).log1p()
        return (logistic + probs.log() - (-probs).log1p()) / self.temperature

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        diff = logits - value.mul(self.temperature)
        return self.temperature.log() + diff - 2 * diff.exp().log1p()


class RelaxedBernoulli(TransformedDistribution):
    """RelaxedBernoulli(temperature, probs=None, logits=None): values in (0, 1) that approach
    a Bernoulli as ``temperature`` goes to 0; ``rsample`` gives gradients.

    Example::
        >>> d = RelaxedBernoulli(ember.tensor(0.5), probs=ember.tensor([0.3]))
        >>> d.rsample().shape
        ember.Size([1])
    """

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, temperature, probs=None, logits=None, validate_args=None) -> None:
        base_dist = LogitRelaxedBernoulli(temperature, probs, logits)
        super().__init__(base_dist, SigmoidTransform(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(RelaxedBernoulli, _instance)
        return super().expand(batch_shape, _instance=new)

    temperature = forwarded_property("base_dist.temperature")
    logits = forwarded_property("base_dist.logits")
    probs = forwarded_property("base_dist.probs")
