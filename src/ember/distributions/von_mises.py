"""``VonMises``: the circular normal distribution on angles."""

from __future__ import annotations

import math

import numpy as np

from .. import _op_namespace as ember
from .._random import resolve_generator
from .._tensor import Size
from . import constraints
from ._special import i0e, i1e
from .distribution import Distribution
from .utils import broadcast_all, forwarded_property

__all__ = ["VonMises"]


def _log_i0(x):
    return i0e(x).log() + x  # I0(x) = i0e(x) · e^x, for x >= 0


def _log_i1(x):
    return i1e(x).log() + x


def _rejection_sample(loc: np.ndarray, kappa: np.ndarray, shape, rng) -> np.ndarray:
    """Best & Fisher (1979): a wrapped-Cauchy envelope, accepted per entry until all are."""
    loc = np.broadcast_to(loc, shape)
    kappa = np.broadcast_to(kappa, shape)
    with np.errstate(all="ignore"):
        tau = 1 + np.sqrt(1 + 4 * kappa**2)
        rho = (tau - np.sqrt(2 * tau)) / (2 * kappa)
        r = np.where(kappa < 1e-5, 1 / kappa + kappa, (1 + rho**2) / (2 * rho))
    x = np.zeros(shape)
    done = np.zeros(shape, dtype=bool)
    while not done.all():
        u1, u2, u3 = rng.random((3,) + tuple(shape), dtype=np.float64)  # torch's draws
        z = np.cos(math.pi * u1)
        with np.errstate(all="ignore"):
            f = (1 + r * z) / (r + z)
            c = kappa * (r - f)
            accept = ((c * (2 - c) - u2) > 0) | (np.log(c / u2) + 1 - c >= 0)
        # an entry accepted again in a later round takes the newer value, as in torch
        x = np.where(accept, np.sign(u3 - 0.5) * np.arccos(np.clip(f, -1, 1)), x)
        done |= accept
    return (x + math.pi + loc) % (2 * math.pi) - math.pi


class VonMises(Distribution):
    """VonMises(loc, concentration): density exp(κ cos(x - loc)) / (2π I0(κ)); angles are
    taken modulo 2π.

    Example::
        >>> ember.distributions.VonMises(0.0, 1.0).log_prob(ember.tensor(0.0))
        tensor(-1.0738)
    """

    arg_constraints = {"loc": constraints.real, "concentration": constraints.positive}
    support = constraints.real
    has_rsample = False

    def __init__(self, loc, concentration, validate_args=None) -> None:
        self.loc, self.concentration = broadcast_all(loc, concentration)
        super().__init__(self.loc.shape, Size(), validate_args)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        log_prob = self.concentration * ember.cos(value - self.loc)
        return log_prob - math.log(2 * math.pi) - _log_i0(self.concentration)

    def sample(self, sample_shape=Size()):
        shape = tuple(self._extended_shape(sample_shape))
        loc = self.loc.detach().cpu().numpy().astype(np.float64)
        kappa = self.concentration.detach().cpu().numpy().astype(np.float64)
        x = _rejection_sample(loc, kappa, shape, resolve_generator(None))
        return ember.tensor(x, dtype=self.loc.dtype, device=self.loc.device)

    def expand(self, batch_shape, _instance=None):
        validate_args = self.__dict__.get("_validate_args")
        loc = self.loc.expand(tuple(batch_shape))
        concentration = self.concentration.expand(tuple(batch_shape))
        return type(self)(loc, concentration, validate_args=validate_args)

    mean = mode = forwarded_property("loc")  # the circular mean, and the peak

    @property
    def variance(self):
        # the circular variance 1 - I1(κ) / I0(κ)
        k = self.concentration
        return 1 - (_log_i1(k) - _log_i0(k)).exp()
