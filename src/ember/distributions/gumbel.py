"""``Gumbel``: the distribution of the maximum of many samples (type-I extreme value)."""

from __future__ import annotations

import math
from numbers import Number

from .. import _op_namespace as ember
from .._tensor import Size
from . import constraints
from .transformed_distribution import TransformedDistribution
from .transforms import AffineTransform, ExpTransform
from .uniform import Uniform
from .utils import broadcast_all, euler_constant, finfo

__all__ = ["Gumbel"]

EULER_GAMMA = euler_constant


class Gumbel(TransformedDistribution):
    """Gumbel(loc, scale): X = loc - scale · log(-log U), U ~ Uniform(0, 1).

    Example::
        >>> ember.distributions.Gumbel(0.0, 1.0).log_prob(ember.tensor(0.0))
        tensor(-1.)
    """

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real

    def __init__(self, loc, scale, validate_args=None) -> None:
        self.loc, self.scale = broadcast_all(loc, scale)
        info = finfo(self.loc)
        if isinstance(loc, Number) and isinstance(scale, Number):
            base_dist = Uniform(float(info.tiny), 1 - float(info.eps), validate_args=validate_args)
        else:
            base_dist = Uniform(
                ember.full_like(self.loc, float(info.tiny)),
                ember.full_like(self.loc, 1 - float(info.eps)),
                validate_args=validate_args,
            )
        transforms = [
            ExpTransform().inv,
            AffineTransform(loc=0, scale=-ember.ones_like(self.scale)),
            ExpTransform().inv,
            AffineTransform(loc=self.loc, scale=-self.scale),
        ]
        super().__init__(base_dist, transforms, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Gumbel, _instance)
        new.loc = self.loc.expand(tuple(batch_shape))
        new.scale = self.scale.expand(tuple(batch_shape))
        return super().expand(Size(batch_shape), _instance=new)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        y = (self.loc - value) / self.scale
        return (y - y.exp()) - self.scale.log()

    @property
    def mean(self):
        return self.loc + self.scale * EULER_GAMMA

    @property
    def mode(self):
        return self.loc

    @property
    def stddev(self):
        return (math.pi / math.sqrt(6)) * self.scale

    @property
    def variance(self):
        return self.stddev.pow(2)

    def entropy(self):
        return self.scale.log() + (1 + EULER_GAMMA)
