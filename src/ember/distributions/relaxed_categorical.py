"""``RelaxedOneHotCategorical``: a continuous, reparameterisable stand-in for a one-hot draw
(the Concrete / Gumbel-softmax distribution)."""

from __future__ import annotations

from .. import _op_namespace as ember
from .._tensor import Size
from . import constraints
from ._special import lgamma
from .categorical import Categorical
from .distribution import Distribution
from .transformed_distribution import TransformedDistribution
from .transforms import ExpTransform
from .utils import broadcast_all, clamp_probs, forwarded_property

__all__ = ["ExpRelaxedCategorical", "RelaxedOneHotCategorical"]


class ExpRelaxedCategorical(Distribution):
    """The log of a RelaxedOneHotCategorical sample: log_softmax((logits + g) / temperature)
    with Gumbel noise g."""

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    support = constraints.real_vector  # the true support is a submanifold of it
    has_rsample = True

    def __init__(self, temperature, probs=None, logits=None, validate_args=None) -> None:
        self._categorical = Categorical(probs, logits)
        self.temperature = temperature
        batch_shape = self._categorical.batch_shape
        event_shape = self._categorical.param_shape[-1:]
        super().__init__(batch_shape, event_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expanded(
            ExpRelaxedCategorical,
            batch_shape,
            _instance,
            expand=("_categorical",),
            share=("temperature",),
        )

    param_shape = forwarded_property("_categorical.param_shape")
    logits = forwarded_property("_categorical.logits")
    probs = forwarded_property("_categorical.probs")

    def rsample(self, sample_shape=Size()):
        shape = tuple(self._extended_shape(sample_shape))
        uniforms = clamp_probs(
            ember.rand(shape, dtype=self.logits.dtype, device=self.logits.device)
        )
        gumbels = -((-(uniforms.log())).log())
        scores = (self.logits + gumbels) / self.temperature
        return scores - scores.logsumexp(dim=-1, keepdim=True)

    def log_prob(self, value):
        k = self._categorical._num_events
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        temperature = ember.as_tensor(self.temperature, dtype=logits.dtype)
        # log Γ(K) + (K - 1) log τ
        log_scale = lgamma(ember.full_like(temperature, float(k))) + temperature.log() * (k - 1)
        score = logits - value.mul(temperature)
        score = (score - score.logsumexp(dim=-1, keepdim=True)).sum(-1)
        return score + log_scale


class RelaxedOneHotCategorical(TransformedDistribution):
    """RelaxedOneHotCategorical(temperature, probs=None, logits=None): points of the simplex
    that approach one-hot vectors as ``temperature`` goes to 0; ``rsample`` gives gradients.

    Example::
        >>> d = RelaxedOneHotCategorical(ember.tensor(0.5), probs=ember.tensor([0.3, 0.7]))
        >>> d.rsample().shape
        ember.Size([2])
    """

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, temperature, probs=None, logits=None, validate_args=None) -> None:
        base_dist = ExpRelaxedCategorical(temperature, probs, logits, validate_args=validate_args)
        super().__init__(base_dist, ExpTransform(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(RelaxedOneHotCategorical, _instance)
        return super().expand(batch_shape, _instance=new)

    temperature = forwarded_property("base_dist.temperature")
    logits = forwarded_property("base_dist.logits")
    probs = forwarded_property("base_dist.probs")
