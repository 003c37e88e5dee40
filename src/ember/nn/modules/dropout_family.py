"""Channel-wise and alpha dropout layers: Dropout1d, Dropout3d, AlphaDropout,
FeatureAlphaDropout."""

from __future__ import annotations

from ...ops import dropout as ops
from .module import Module


class _DropoutNd(Module):
    _fn = None

    def __init__(self, p: float = 0.5, inplace: bool = False) -> None:
        super().__init__()
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p, self.inplace = p, inplace

    def forward(self, input):
        return type(self)._fn(input, self.p, self.training, self.inplace)

    def extra_repr(self) -> str:
        return f"p={self.p}, inplace={self.inplace}"


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
