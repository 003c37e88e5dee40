"""``LogisticNormal``: a Normal pushed onto the simplex by stick breaking."""

from __future__ import annotations

from . import constraints
from .normal import Normal
from .transformed_distribution import TransformedDistribution
from .transforms import StickBreakingTransform
from .utils import forwarded_property

__all__ = ["LogisticNormal"]


class LogisticNormal(TransformedDistribution):
    """LogisticNormal(loc, scale): X = StickBreaking(Y), Y ~ Normal(loc, scale) over K - 1
    coordinates, giving points of the K-simplex.

    Example::
        >>> d = ember.distributions.LogisticNormal(ember.zeros(2), ember.ones(2))
        >>> d.sample().shape
        ember.Size([3])
    """

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, loc, scale, validate_args=None) -> None:
        base_dist = Normal(loc, scale, validate_args=validate_args)
        if not base_dist.batch_shape:
            base_dist = base_dist.expand([1])
        super().__init__(base_dist, StickBreakingTransform(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(LogisticNormal, _instance)
        return super().expand(batch_shape, _instance=new)

    loc = forwarded_property("base_dist.base_dist.loc")
    scale = forwarded_property("base_dist.base_dist.scale")
