"""``Laplace``: the double-exponential distribution."""

from __future__ import annotations

from .. import _op_namespace as ember
from .._tensor import Size
from . import constraints
from .distribution import Distribution
from .utils import broadcast_all, finfo, forwarded_property

__all__ = ["Laplace"]


class Laplace(Distribution):
    """Laplace(loc, scale): density exp(-|x - loc| / scale) / (2 scale).

    Example::
        >>> ember.distributions.Laplace(0.0, 1.0).log_prob(ember.tensor(0.0))
        tensor(-0.6931)
    """

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    mean = mode = forwarded_property("loc")  # symmetric and unimodal about loc

    @property
    def variance(self):
        return 2 * self.scale.pow(2)

    @property
    def stddev(self):
        return (2**0.5) * self.scale

    def __init__(self, loc, scale, validate_args=None) -> None:
        self.loc, self.scale = broadcast_all(loc, scale)
        super().__init__(self.loc.size(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expanded(Laplace, batch_shape, _instance, expand=("loc", "scale"))

    def rsample(self, sample_shape=Size()):
        shape = self._extended_shape(sample_shape)
        eps = float(finfo(self.loc).eps)
        # u uniform on (-1, 1): x = loc - scale · sign(u) · log(1 - |u|)
        u = ember.empty(tuple(shape), dtype=self.loc.dtype, device=self.loc.device)
        u = u.uniform_(eps - 1, 1)
        return self.loc - self.scale * u.sign() * ember.log1p(-u.abs())

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return -ember.log(2 * self.scale) - ember.abs(value - self.loc) / self.scale

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        z = value - self.loc
        return 0.5 - 0.5 * z.sign() * ember.expm1(-z.abs() / self.scale)

    def icdf(self, value):
        term = value - 0.5
        return self.loc - self.scale * term.sign() * ember.log1p(-2 * term.abs())

    def entropy(self):
        return 1 + ember.log(2 * self.scale)
