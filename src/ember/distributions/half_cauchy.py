"""``HalfCauchy``: |X| for X ~ Cauchy(0, scale)."""

from __future__ import annotations

import math

from .. import _op_namespace as ember
from .._tensor import Size
from ._folded import FoldedDistribution
from .cauchy import Cauchy

__all__ = ["HalfCauchy"]


class HalfCauchy(FoldedDistribution):
    """HalfCauchy(scale): the Cauchy folded onto x >= 0.

    Example::
        >>> ember.distributions.HalfCauchy(1.0).cdf(ember.tensor(1.0))
        tensor(0.5000)
    """

    def __init__(self, scale, validate_args=None) -> None:
        super().__init__(Cauchy(0, scale, validate_args=False), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(HalfCauchy, _instance)
        return super().expand(Size(batch_shape), _instance=new)

    @property
    def mean(self):
        return self._full(math.inf, self.scale)

    @property
    def variance(self):
        return self.base_dist.variance

    def _as_value(self, value):
        # numbers and other dtypes take the scale's dtype, as in PyTorch's HalfCauchy
        scale = self.base_dist.scale
        return ember.as_tensor(value, dtype=scale.dtype, device=scale.device)
