"""``LKJCholesky``: the LKJ distribution over correlation matrices, on their Cholesky
factors (Lewandowski, Kurowicka & Joe, 2009), sampled by the onion method."""

from __future__ import annotations

import math

from .. import _op_namespace as ember
from .._tensor import Size
from ..ops.special import mvlgamma
from . import constraints
from ._special import lgamma
from .beta import Beta
from .distribution import Distribution
from .utils import broadcast_all, finfo

__all__ = ["LKJCholesky"]


class LKJCholesky(Distribution):
    """LKJCholesky(dim, concentration=1.0): density ∝ det(L Lᵀ)^(concentration - 1) over
    Cholesky factors L of dim × dim correlation matrices.

    Example::
        >>> d = ember.distributions.LKJCholesky(3, 0.5)
        >>> d.sample().shape
        ember.Size([3, 3])
    """

    arg_constraints = {"concentration": constraints.positive}
    support = constraints.corr_cholesky

    def __init__(self, dim: int, concentration=1.0, validate_args=None) -> None:
        if dim < 2:
            raise ValueError(
                f"Expected dim to be an integer greater than or equal to 2. Found dim={dim}."
            )
        self.dim = dim
        (self.concentration,) = broadcast_all(concentration)
        c = self.concentration
        # row i of L is √y_i times a uniform direction, y_i ~ Beta(i/2, η + (d - 2 - i)/2)
        marginal_conc = c + 0.5 * (dim - 2)
        offset = ember.arange(dim - 1, dtype=c.dtype, device=c.device)
        offset = ember.cat([ember.zeros(1, dtype=c.dtype, device=c.device), offset])
        self._beta = Beta(offset + 0.5, marginal_conc.unsqueeze(-1) - 0.5 * offset)
        super().__init__(c.size(), Size((dim, dim)), validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(LKJCholesky, _instance)
        batch_shape = Size(batch_shape)
        new.dim = self.dim
        new.concentration = self.concentration.expand(batch_shape)
        new._beta = self._beta.expand(tuple(batch_shape) + (self.dim,))
        super(LKJCholesky, new).__init__(batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def sample(self, sample_shape=Size()):
        with ember.no_grad():
            y = self._beta.sample(sample_shape).unsqueeze(-1)
            shape = tuple(self._extended_shape(sample_shape))
            u_normal = ember.randn(shape, dtype=y.dtype, device=y.device).tril(-1)
            norms = (u_normal**2).sum(-1, keepdim=True).sqrt()
            # row 0 has no off-diagonal entries: 0/0 there is replaced by 0
            u_hypersphere = ember.where(norms > 0, u_normal / norms.clamp(min=1e-300), 0.0)
            w = y.sqrt() * u_hypersphere
            tiny = float(finfo(w).tiny)
            diag = (1 - (w**2).sum(-1)).clamp(min=tiny).sqrt()
            return w + ember.diag_embed(diag)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        diag_elems = value.diagonal(dim1=-1, dim2=-2)[..., 1:]
        order = ember.arange(2, self.dim + 1, device=self.concentration.device)
        order = 2 * (self.concentration - 1).unsqueeze(-1) + self.dim - order
        unnormalized_log_pdf = (order * diag_elems.log()).sum(-1)
        dm1 = self.dim - 1
        alpha = self.concentration + 0.5 * dm1
        denominator = lgamma(alpha) * dm1
        numerator = mvlgamma(alpha - 0.5, dm1)
        normalize_term = 0.5 * dm1 * math.log(math.pi) + numerator - denominator
        return unnormalized_log_pdf - normalize_term
