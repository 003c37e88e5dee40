"""``ContinuousBernoulli``: a density on [0, 1] proportional to λ^x (1-λ)^(1-x)
(Loaiza-Ganem & Cunningham, 2019), used as a likelihood for values in [0, 1].

Near λ = 1/2 the closed forms are 0/0, so within ``lims`` the normaliser and moments switch
to their Taylor expansions around 1/2.
"""

from __future__ import annotations

import math

from .. import _op_namespace as ember
from .._tensor import Size
from . import constraints
from ._probs_or_logits import ProbsOrLogitsWithShape
from .exp_family import ExponentialFamily
from .utils import bce_with_logits, broadcast_all, clamp_probs, lazy_property, logits_to_probs

__all__ = ["ContinuousBernoulli"]


class ContinuousBernoulli(ProbsOrLogitsWithShape, ExponentialFamily):
    """ContinuousBernoulli(probs=None, logits=None, lims=(0.499, 0.501)).

    Example::
        >>> ember.distributions.ContinuousBernoulli(ember.tensor(0.5)).mean
        tensor(0.5000)
    """

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.unit_interval
    _mean_carrier_measure = 0
    has_rsample = True

    def __init__(self, probs=None, logits=None, lims=(0.499, 0.501), validate_args=None):
        self._set_probs_or_logits(probs, logits)
        if probs is not None:
            if validate_args is not None and not bool(
                self.arg_constraints["probs"].check(self.probs).all()
            ):
                raise ValueError("The parameter probs has invalid values")
            self._set_param("probs", clamp_probs(self.probs))
        self._lims = lims
        super().__init__(self._param.size(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._expanded(ContinuousBernoulli, batch_shape, _instance, share=("_lims",))
        self._expand_probs_or_logits(new, new.batch_shape)
        return new

    @lazy_property
    def probs(self):
        return clamp_probs(logits_to_probs(self.logits, is_binary=True))

    def _stable(self):
        """Where λ is far enough from 1/2 for the closed forms."""
        return (self.probs <= self._lims[0]) | (self.probs > self._lims[1])

    def _cut_probs(self):
        # λ moved off 1/2 where the Taylor branch is used, so the unused closed form stays
        # finite (a nan there would poison the gradient through where)
        return ember.where(self._stable(), self.probs, self._lims[0])

    def _cont_bern_log_norm(self):
        """log C(λ), C(λ) = log((1-λ)/λ) / (1 - 2λ)."""
        lam = self._cut_probs()
        below = ember.where(lam <= 0.5, lam, 0.0)
        above = ember.where(lam >= 0.5, lam, 1.0)
        log_norm = ember.log(ember.abs(ember.log1p(-lam) - ember.log(lam))) - ember.where(
            lam <= 0.5, ember.log1p(-2.0 * below), ember.log(2.0 * above - 1.0)
        )
        x = (self.probs - 0.5).pow(2)
        taylor = math.log(2.0) + (4.0 / 3.0 + 104.0 / 45.0 * x) * x
        return ember.where(self._stable(), log_norm, taylor)

    @property
    def mean(self):
        lam = self._cut_probs()
        closed = lam / (2.0 * lam - 1.0) + 1.0 / (ember.log1p(-lam) - ember.log(lam))
        x = self.probs - 0.5
        taylor = 0.5 + (1.0 / 3.0 + 16.0 / 45.0 * x.pow(2)) * x
        return ember.where(self._stable(), closed, taylor)

    @property
    def stddev(self):
        return ember.sqrt(self.variance)

    @property
    def variance(self):
        lam = self._cut_probs()
        closed = lam * (lam - 1.0) / (1.0 - 2.0 * lam).pow(2) + 1.0 / (
            ember.log1p(-lam) - ember.log(lam)
        ).pow(2)
        x = (self.probs - 0.5).pow(2)
        taylor = 1.0 / 12.0 - (1.0 / 15.0 - 128.0 / 945.0 * x) * x
        return ember.where(self._stable(), closed, taylor)

    def sample(self, sample_shape=Size()):
        with ember.no_grad():
            return self.rsample(sample_shape)

    def rsample(self, sample_shape=Size()):
        shape = tuple(self._extended_shape(sample_shape))
        u = ember.rand(shape, dtype=self.probs.dtype, device=self.probs.device)
        return self.icdf(u)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        return -bce_with_logits(logits, value) + self._cont_bern_log_norm()

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        lam = self._cut_probs()
        cdfs = (lam.pow(value) * (1.0 - lam).pow(1.0 - value) + lam - 1.0) / (2.0 * lam - 1.0)
        inside = ember.where(self._stable(), cdfs, value)
        return ember.where(value <= 0.0, 0.0, ember.where(value >= 1.0, 1.0, inside))

    def icdf(self, value):
        lam = self._cut_probs()
        closed = (ember.log1p(-lam + value * (2.0 * lam - 1.0)) - ember.log1p(-lam)) / (
            ember.log(lam) - ember.log1p(-lam)
        )
        return ember.where(self._stable(), closed, value)

    def entropy(self):
        log_probs0 = ember.log1p(-self.probs)
        log_probs1 = ember.log(self.probs)
        return self.mean * (log_probs0 - log_probs1) - self._cont_bern_log_norm() - log_probs0

    @property
    def _natural_params(self):
        return (self.logits,)
