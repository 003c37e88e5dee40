"""``Chi2``: the sum of ``df`` squared standard normals, a Gamma(df/2, 1/2)."""

from __future__ import annotations

from .._tensor import Size
from . import constraints
from .gamma import Gamma

__all__ = ["Chi2"]


class Chi2(Gamma):
    """Chi2(df): Gamma(df / 2, 1 / 2).

    Example::
        >>> ember.distributions.Chi2(ember.tensor(2.0)).mean
        tensor(2.)
    """

    arg_constraints = {"df": constraints.positive}

    def __init__(self, df, validate_args=None) -> None:
        super().__init__(0.5 * df, 0.5, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Chi2, _instance)
        return super().expand(Size(batch_shape), new)

    @property
    def df(self):
        return self.concentration * 2
