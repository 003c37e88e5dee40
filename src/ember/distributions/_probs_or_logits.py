"""The ``probs`` / ``logits`` parameter pair of Bernoulli, Binomial, Categorical and their kin:
exactly one is given and stored, the other is derived from it on first use."""

from __future__ import annotations

from .._tensor import Size
from .utils import broadcast_all, lazy_property, logits_to_probs, probs_to_logits

__all__ = ["ProbsOrLogits", "ProbsOrLogitsWithShape", "probs_or_logits"]


def probs_or_logits(probs, logits) -> tuple:
    """``("probs", probs)`` or ``("logits", logits)``, whichever was given; giving both or
    neither is an error.

    Example::
        >>> probs_or_logits(None, ember.tensor(0.0))
        ('logits', tensor(0.))
    """
    if (probs is None) == (logits is None):
        raise ValueError("Either `probs` or `logits` must be specified, but not both.")
    return ("probs", probs) if probs is not None else ("logits", logits)


class ProbsOrLogits:
    """Mixin for a distribution given by ``probs`` or ``logits``: the one given is stored (and
    as ``_param``); the other is a lazy property computed from it."""

    # one event's probability (logits through the sigmoid) rather than K categories' (softmax)
    _binary = True

    def _set_param(self, name: str, value) -> None:
        setattr(self, name, value)
        self._param = value

    def _set_probs_or_logits(self, probs, logits, *others) -> tuple:
        """Store whichever of ``probs`` / ``logits`` is given, broadcast with ``others``; return
        ``others`` broadcast (numbers become tensors of the parameter's dtype)."""
        name, value = probs_or_logits(probs, logits)
        *others, param = broadcast_all(*others, value)
        self._set_param(name, param)
        return tuple(others)

    def _expand_probs_or_logits(self, new, shape) -> None:
        """Give ``new`` (an ``expand`` in progress) this one's stored probs / logits, expanded."""
        for name in ("probs", "logits"):
            if name in self.__dict__:
                new._set_param(name, self.__dict__[name].expand(shape))

    @lazy_property
    def logits(self):
        return probs_to_logits(self.probs, is_binary=self._binary)

    @lazy_property
    def probs(self):
        return logits_to_probs(self.logits, is_binary=self._binary)


class ProbsOrLogitsWithShape(ProbsOrLogits):
    """``ProbsOrLogits`` with PyTorch's ``param_shape``: all of the family but Geometric."""

    @property
    def param_shape(self) -> Size:
        return self._param.size()
