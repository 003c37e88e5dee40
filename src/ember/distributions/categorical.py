"""``Categorical``: one draw from K categories, parameterised by ``probs`` or ``logits``."""

from __future__ import annotations

from .. import _op_namespace as ember
from .._random_ops import categorical
from .._tensor import Size
from . import constraints
from ._probs_or_logits import ProbsOrLogitsWithShape, probs_or_logits
from .distribution import Distribution
from .utils import finfo

__all__ = ["Categorical"]


class Categorical(ProbsOrLogitsWithShape, Distribution):
    """Categorical(probs=None, logits=None): an index in [0, K) drawn with the (normalised)
    weights of the last dimension.

    Example::
        >>> ember.distributions.Categorical(ember.tensor([0.25, 0.75])).log_prob(ember.tensor(1))
        tensor(-0.2877)
    """

    arg_constraints = {
        "probs": constraints.simplex,
        "logits": constraints.independent(constraints.real, 1),
    }
    has_enumerate_support = True
    _binary = False

    def __init__(self, probs=None, logits=None, validate_args=None) -> None:
        name, param = probs_or_logits(probs, logits)
        if param.dim() < 1:
            raise ValueError(f"`{name}` parameter must be at least one-dimensional.")
        if name == "probs":
            self._set_param(name, param / param.sum(-1, keepdim=True))
        else:
            self._set_param(name, param - param.logsumexp(dim=-1, keepdim=True))
        self._num_events = self._param.size()[-1]
        batch_shape = self._param.size()[:-1] if self._param.dim() > 1 else Size()
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._expanded(Categorical, batch_shape, _instance, share=("_num_events",))
        self._expand_probs_or_logits(new, tuple(new.batch_shape) + (self._num_events,))
        return new

    @constraints.dependent_property(is_discrete=True, event_dim=0)
    def support(self):
        return constraints.integer_interval(0, self._num_events - 1)

    @property
    def mean(self):
        return self._full(float("nan"), self.probs)

    @property
    def mode(self):
        return self.probs.argmax(-1)

    @property
    def variance(self):
        return self.mean

    def sample(self, sample_shape=Size()):
        sample_shape = Size(sample_shape)
        n = 1
        for s in sample_shape:
            n *= s
        probs_2d = self.probs.reshape(-1, self._num_events)
        with ember.no_grad():
            if n == 0 or probs_2d.shape[0] == 0:
                return ember.zeros(tuple(self._extended_shape(sample_shape)), dtype=ember.int64)
            samples_2d = categorical(probs_2d, n).T
        return samples_2d.reshape(tuple(self._extended_shape(sample_shape)))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        value = value.long().unsqueeze(-1)
        value, log_pmf = ember.broadcast_tensors(value, self.logits)
        value = value[..., :1]
        return log_pmf.gather(-1, value).squeeze(-1)

    def entropy(self):
        # logits of zero-probability classes are -inf: clamp so 0 · -inf counts as 0
        logits = self.logits.clamp(min=float(finfo(self.logits).min))
        return -(logits * self.probs).sum(-1)

    def enumerate_support(self, expand: bool = True):
        values = ember.arange(self._num_events, dtype=ember.int64, device=self._param.device)
        values = values.view((-1,) + (1,) * len(self._batch_shape))
        if expand:
            values = values.expand((-1,) + tuple(self._batch_shape))
        return values
