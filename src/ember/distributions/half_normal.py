"""``HalfNormal``: |X| for X ~ Normal(0, scale)."""

from __future__ import annotations

import math

from .._tensor import Size
from ._folded import FoldedDistribution
from .normal import Normal

__all__ = ["HalfNormal"]


class HalfNormal(FoldedDistribution):
    """HalfNormal(scale): the normal folded onto x >= 0.

    Example::
        >>> ember.distributions.HalfNormal(1.0).log_prob(ember.tensor(0.0))
        tensor(-0.2258)
    """

    def __init__(self, scale, validate_args=None) -> None:
        super().__init__(Normal(0, scale, validate_args=False), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(HalfNormal, _instance)
        return super().expand(Size(batch_shape), _instance=new)

    @property
    def mean(self):
        return self.scale * math.sqrt(2 / math.pi)

    @property
    def variance(self):
        return self.scale.pow(2) * (1 - 2 / math.pi)
