"""``Geometric``: the number of failures before the first success."""

from __future__ import annotations

from .. import _op_namespace as ember
from .._tensor import Size
from . import constraints
from ._probs_or_logits import ProbsOrLogits
from .distribution import Distribution
from .utils import bce_with_logits, broadcast_all, finfo

__all__ = ["Geometric"]


class Geometric(ProbsOrLogits, Distribution):
    """Geometric(probs=None, logits=None): P(k) = (1 - p)^k p for k = 0, 1, ...

    Example::
        >>> ember.distributions.Geometric(ember.tensor(0.5)).log_prob(ember.tensor(1.0))
        tensor(-1.3863)
    """

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.nonnegative_integer

    def __init__(self, probs=None, logits=None, validate_args=None) -> None:
        self._set_probs_or_logits(probs, logits)
        super().__init__(self._param.size(), validate_args=validate_args)
        if self._validate_args and probs is not None:
            value = self.probs
            if not bool((value > 0).all()):
                raise ValueError(
                    f"Expected parameter probs ({type(value).__name__} of shape "
                    f"{tuple(value.shape)}) of distribution {self!r} to satisfy the "
                    f"constraint {constraints.interval(0.0, 1.0)!r} with probs > 0, but found "
                    f"invalid values:\n{value}"
                )

    def expand(self, batch_shape, _instance=None):
        new = self._expanded(Geometric, batch_shape, _instance)
        self._expand_probs_or_logits(new, new.batch_shape)
        return new

    @property
    def mean(self):
        return 1.0 / self.probs - 1.0

    @property
    def mode(self):
        return ember.zeros_like(self.probs)

    @property
    def variance(self):
        return (1.0 / self.probs - 1.0) / self.probs

    def sample(self, sample_shape=Size()):
        shape = self._extended_shape(sample_shape)
        tiny = float(finfo(self.probs).tiny)
        with ember.no_grad():
            u = ember.rand(tuple(shape), dtype=self.probs.dtype, device=self.probs.device)
            u = u.clamp(min=tiny)
            return (u.log() / (-self.probs).log1p()).floor()

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        value, probs = broadcast_all(value, self.probs)
        probs = probs.clone()
        # k · log(1 - p) with 0 · log 0 = 0 when p = 1 and k = 0
        probs = ember.where((probs == 1) & (value == 0), 0.0, probs)
        return value * (-probs).log1p() + self.probs.log()

    def entropy(self):
        return bce_with_logits(self.logits, self.probs) / self.probs
