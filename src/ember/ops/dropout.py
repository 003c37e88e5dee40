"""Channel-wise and alpha dropout: dropout1d/3d, alpha_dropout, feature_alpha_dropout.

Each draws a Bernoulli keep-mask (per element, or per channel broadcast over the spatial dims)
and multiplies by it, so the gradient is the same mask times the same scale.
"""

from __future__ import annotations

import math

from .. import _creation
from .._tensor import Tensor

# SELU's negative saturation value, -scale · alpha: alpha dropout sets dropped units to it
_SELU_SATURATION = -1.0507009873554804934193349852946 * 1.6732632423543772848170429916717


def _check_p(p: float) -> None:
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


def _keep_mask(input: Tensor, p: float, per_channel: bool) -> Tensor:
    """1 with probability 1 - p: per element, or per (sample, channel) of (N, C, *S)."""
    shape = tuple(input.shape)
    if per_channel:
        shape = shape[:2] + (1,) * (len(shape) - 2)
    # drawn on the host, where the generator lives: the same mask on every device for a seed
    probs = _creation.full(shape, 1.0 - p, dtype=input.dtype)
    return _creation.bernoulli(probs).to(input.device)


def _feature_dropout(input: Tensor, p: float, training: bool, inplace: bool, unbatched: bool):
    _check_p(p)
    if not training or p == 0.0:
        return input
    x = input.unsqueeze(0) if unbatched else input
    if p == 1.0:
        out = x * 0.0
    else:
        out = x * (_keep_mask(x, p, per_channel=True) / (1.0 - p))
    if unbatched:
        out = out.squeeze(0)
    return input.copy_(out) if inplace else out


def dropout1d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False):
    """Zero whole channels of (N, C, L) or (C, L) input; scale the rest by 1/(1-p)."""
    if input.dim() not in (2, 3):
        raise RuntimeError(
            f"dropout1d: Expected 2D or 3D input, but received a {input.dim()}D input. Note that "
            "dropout1d exists to provide channel-wise dropout on inputs with 1 spatial "
            "dimension, a channel dimension, and an optional batch dimension (i.e. 2D or 3D "
            "inputs)."
        )
    return _feature_dropout(input, p, training, inplace, input.dim() == 2)


def dropout3d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False):
    """Zero whole channels of (N, C, D, H, W) or (C, D, H, W) input."""
    if input.dim() not in (4, 5):
        import warnings

        warnings.warn(
            f"dropout3d: Received a {input.dim()}-D input to dropout3d, which is deprecated and "
            "will result in an error in a future release. To retain the behavior and silence "
            "this warning, please use dropout instead. Note that dropout3d exists to provide "
            "channel-wise dropout on inputs with 3 spatial dimensions, a channel dimension, and "
            "an optional batch dimension (i.e. 4D or 5D inputs).",
            stacklevel=2,
        )
    return _feature_dropout(input, p, training, inplace, input.dim() == 4)


def _alpha_dropout(input: Tensor, p: float, training: bool, inplace: bool, per_channel: bool):
    _check_p(p)
    if not training or p == 0.0:
        return input
    if p == 1.0:
        out = input * 0.0
    else:
        # dropped units take SELU's saturation value; a and b restore zero mean, unit variance
        a = 1.0 / math.sqrt((1.0 - p) * (1.0 + p * _SELU_SATURATION**2))
        b = -a * _SELU_SATURATION * p
        keep = _keep_mask(input, p, per_channel)
        out = (input * keep + _SELU_SATURATION * (1.0 - keep)) * a + b
    return input.copy_(out) if inplace else out


def alpha_dropout(input: Tensor, p: float = 0.5, training: bool = False, inplace: bool = False):
    """Dropout for SELU networks: keeps the input's mean and variance."""
    return _alpha_dropout(input, p, training, inplace, per_channel=False)


def feature_alpha_dropout(
    input: Tensor, p: float = 0.5, training: bool = False, inplace: bool = False
):
    """Alpha dropout of whole channels of (N, C, *S) input."""
    return _alpha_dropout(input, p, training, inplace, per_channel=True)
