"""The ``covariance_matrix`` / ``precision_matrix`` / ``scale_tril`` trio of MultivariateNormal
and Wishart: exactly one is given, everything is computed through the lower Cholesky factor
of the covariance, and the other two are derived from it on first use."""

from __future__ import annotations

from .. import _op_namespace as ember
from .. import linalg
from .utils import lazy_property

__all__ = ["ScaleTrilParams", "check_one_matrix_given", "precision_to_scale_tril"]

MATRIX_NAMES = ("covariance_matrix", "scale_tril", "precision_matrix")


def check_one_matrix_given(covariance_matrix, precision_matrix, scale_tril) -> None:
    given = [m is not None for m in (covariance_matrix, scale_tril, precision_matrix)]
    if sum(given) != 1:
        raise ValueError(
            "Exactly one of covariance_matrix or precision_matrix or scale_tril may be specified."
        )


def precision_to_scale_tril(precision):
    """The lower Cholesky factor of P⁻¹ without forming P⁻¹: factor P with its rows and
    columns reversed, which gives an upper factor U of P = U Uᵀ; then L = U⁻ᵀ."""
    flipped = linalg.cholesky(ember.flip(precision, (-2, -1)))
    l_inv = ember.transpose(ember.flip(flipped, (-2, -1)), -2, -1)
    n = precision.shape[-1]
    identity = ember.eye(n, dtype=precision.dtype, device=precision.device)
    return linalg.solve_triangular(l_inv, identity, upper=False)


class ScaleTrilParams:
    """Mixin: ``_unbroadcasted_scale_tril`` (L, with Σ = L Lᵀ) from whichever matrix is given,
    ``scale_tril`` and ``covariance_matrix`` derived from it in ``_matrix_shape()``."""

    def _set_scale_tril(self, covariance_matrix, precision_matrix, scale_tril) -> None:
        if scale_tril is not None:
            self._unbroadcasted_scale_tril = scale_tril
        elif covariance_matrix is not None:
            self._unbroadcasted_scale_tril = linalg.cholesky(covariance_matrix)
        else:
            self._unbroadcasted_scale_tril = precision_to_scale_tril(precision_matrix)

    def _expand_matrices(self, new, shape) -> None:
        """Give ``new`` (an ``expand`` in progress) this one's stored matrices, expanded."""
        for name in MATRIX_NAMES:
            if name in self.__dict__:
                setattr(new, name, self.__dict__[name].expand(shape))

    def _matrix_shape(self) -> tuple:
        raise NotImplementedError

    @lazy_property
    def scale_tril(self):
        return self._unbroadcasted_scale_tril.expand(self._matrix_shape())

    @lazy_property
    def covariance_matrix(self):
        L = self._unbroadcasted_scale_tril
        return ember.matmul(L, L.mT).expand(self._matrix_shape())
