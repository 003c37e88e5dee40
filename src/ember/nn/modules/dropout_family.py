"""Channel-wise and alpha dropout layers: Dropout1d, Dropout3d, AlphaDropout,
FeatureAlphaDropout."""

from __future__ import annotations

from ...ops import dropout as ops
from .dropout import _DropoutNd


class Dropout1d(_DropoutNd):
    """Zero whole channels of (N, C, L) input while training."""

    _fn = staticmethod(ops.dropout1d)


class Dropout3d(_DropoutNd):
    """Zero whole channels of (N, C, D, H, W) input while training."""

    _fn = staticmethod(ops.dropout3d)


class AlphaDropout(_DropoutNd):
    """Dropout that keeps zero mean and unit variance (for SELU networks)."""

    _fn = staticmethod(ops.alpha_dropout)


class FeatureAlphaDropout(_DropoutNd):
    """Alpha dropout of whole channels."""

    _fn = staticmethod(ops.feature_alpha_dropout)
