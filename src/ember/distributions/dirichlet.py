"""``Dirichlet``: distributions over the probability simplex."""

from __future__ import annotations

from .. import _op_namespace as ember
from .._random_ops import _sample_dirichlet
from .._tensor import Size
from . import constraints
from ._special import digamma, lgamma, xlogy
from .exp_family import ExponentialFamily
from .utils import one_hot

__all__ = ["Dirichlet"]


class Dirichlet(ExponentialFamily):
    """Dirichlet(concentration): density ∏ x_i^(α_i - 1) / B(α) on the simplex.

    ``rsample`` draws torch's values; gradients reach ``concentration`` through the implicit
    reparameterisation of each coordinate's Beta marginal (as torch's ``_dirichlet_grad``).

    Example::
        >>> ember.distributions.Dirichlet(ember.tensor([1.0, 1.0])).mean
        tensor([0.5000, 0.5000])
    """

    arg_constraints = {"concentration": constraints.independent(constraints.positive, 1)}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, concentration, validate_args=None) -> None:
        if concentration.dim() < 1:
            raise ValueError("`concentration` parameter must be at least one-dimensional.")
        self.concentration = concentration
        batch_shape, event_shape = concentration.shape[:-1], concentration.shape[-1:]
        super().__init__(batch_shape, event_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Dirichlet, _instance)
        batch_shape = Size(batch_shape)
        new.concentration = self.concentration.expand(tuple(batch_shape) + tuple(self.event_shape))
        super(Dirichlet, new).__init__(batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def rsample(self, sample_shape=()):
        shape = tuple(self._extended_shape(sample_shape))
        return _sample_dirichlet(self.concentration.expand(shape))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        c = self.concentration
        return xlogy(c - 1.0, value).sum(-1) + lgamma(c.sum(-1)) - lgamma(c).sum(-1)

    @property
    def mean(self):
        return self.concentration / self.concentration.sum(-1, True)

    @property
    def mode(self):
        minus_one = (self.concentration - 1).clamp(min=0.0)
        # with every α < 1 the density peaks at a vertex: the largest α's (there the
        # denominator is 0, replaced by 1 so that no 0/0 reaches the gradient)
        at_vertex = (self.concentration < 1).all(-1, keepdim=True)
        mode = minus_one / ember.where(at_vertex, 1.0, minus_one.sum(-1, True))
        vertex = one_hot(mode.argmax(-1), minus_one.shape[-1], mode.dtype)
        return ember.where(at_vertex, vertex, mode)

    @property
    def variance(self):
        total = self.concentration.sum(-1, True)
        c = self.concentration
        return c * (total - c) / (total.pow(2) * (total + 1))

    def entropy(self):
        c = self.concentration
        k = c.size(-1)
        a0 = c.sum(-1)
        return (
            lgamma(c).sum(-1)
            - lgamma(a0)
            - (k - a0) * digamma(a0)
            - ((c - 1.0) * digamma(c)).sum(-1)
        )

    @property
    def _natural_params(self):
        return (self.concentration,)

    def _log_normalizer(self, x):
        return lgamma(x).sum(-1) - lgamma(x.sum(-1))
