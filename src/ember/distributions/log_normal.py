"""``LogNormal``: exp of a Normal."""

from __future__ import annotations

from .._tensor import Size
from . import constraints
from .normal import Normal
from .transformed_distribution import TransformedDistribution
from .transforms import ExpTransform
from .utils import forwarded_property

__all__ = ["LogNormal"]


class LogNormal(TransformedDistribution):
    """LogNormal(loc, scale): X = exp(Y) with Y ~ Normal(loc, scale).

    Example::
        >>> ember.distributions.LogNormal(0.0, 1.0).log_prob(ember.tensor(1.0))
        tensor(-0.9189)
    """

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.positive
    has_rsample = True

    def __init__(self, loc, scale, validate_args=None) -> None:
        base_dist = Normal(loc, scale, validate_args=validate_args)
        super().__init__(base_dist, ExpTransform(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(LogNormal, _instance)
        return super().expand(Size(batch_shape), _instance=new)

    loc = forwarded_property("base_dist.loc")
    scale = forwarded_property("base_dist.scale")

    @property
    def mean(self):
        return (self.loc + self.scale.pow(2) / 2).exp()

    @property
    def mode(self):
        return (self.loc - self.scale.square()).exp()

    @property
    def variance(self):
        scale_sq = self.scale.pow(2)
        return scale_sq.expm1() * (2 * self.loc + scale_sq).exp()

    def entropy(self):
        return self.base_dist.entropy() + self.loc
