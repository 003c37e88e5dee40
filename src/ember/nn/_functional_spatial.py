"""Functional forms of the spatial layers (convolution, pooling, padding, resampling,
normalisation), re-exported by ember.nn.functional.
"""

from __future__ import annotations

from .._tensor import Tensor
from ..ops import aten as _aten  # noqa: F401  (ember.ops.aten, for torch.ops.aten.<op>)
from ..ops import pooling as _pool
from ..ops.conv import conv3d, conv_transpose1d, conv_transpose3d
from ..ops.dropout import alpha_dropout, dropout1d, dropout3d, feature_alpha_dropout
from ..ops.embedding_bag import embedding_bag
from ..ops.grid_sample import affine_grid, grid_sample
from ..ops.normalization import instance_norm, local_response_norm, rms_norm
from ..ops.pooling_2d import max_pool1d, max_pool2d
from ..ops.resample import channel_shuffle, interpolate, pixel_shuffle, pixel_unshuffle

__all__: list[str] = [
    "GRID_SAMPLE_INTERPOLATION_MODES",
    "GRID_SAMPLE_PADDING_MODES",
    "adaptive_avg_pool1d",
    "adaptive_avg_pool3d",
    "adaptive_max_pool1d",
    "adaptive_max_pool1d_with_indices",
    "adaptive_max_pool2d",
    "adaptive_max_pool2d_with_indices",
    "adaptive_max_pool3d",
    "adaptive_max_pool3d_with_indices",
    "affine_grid",
    "alpha_dropout",
    "avg_pool3d",
    "channel_shuffle",
    "conv3d",
    "conv_transpose1d",
    "conv_transpose3d",
    "dropout1d",
    "dropout3d",
    "embedding_bag",
    "feature_alpha_dropout",
    "fractional_max_pool2d",
    "fractional_max_pool2d_with_indices",
    "fractional_max_pool3d",
    "fractional_max_pool3d_with_indices",
    "grid_sample",
    "instance_norm",
    "interpolate",
    "local_response_norm",
    "lp_pool1d",
    "lp_pool2d",
    "lp_pool3d",
    "max_pool1d_with_indices",
    "max_pool2d_with_indices",
    "max_pool3d",
    "max_pool3d_with_indices",
    "max_unpool1d",
    "max_unpool2d",
    "max_unpool3d",
    "native_channel_shuffle",
    "pixel_shuffle",
    "pixel_unshuffle",
    "rms_norm",
    "upsample",
    "upsample_bilinear",
    "upsample_nearest",
]


# grid_sample's modes by the numbers PyTorch's kernels use for them
GRID_SAMPLE_INTERPOLATION_MODES = {"bilinear": 0, "nearest": 1, "bicubic": 2}
GRID_SAMPLE_PADDING_MODES = {"zeros": 0, "border": 1, "reflection": 2}
native_channel_shuffle = channel_shuffle


# --- max pooling ------------------------------------------------------------------------------
def max_pool3d(
    input: Tensor,
    kernel_size,
    stride=None,
    padding=0,
    dilation=1,
    ceil_mode: bool = False,
    return_indices: bool = False,
):
    """Max over 3-d windows of (N, C, D, H, W) or (C, D, H, W) input."""
    return _pool.max_pool_nd(
        input, kernel_size, stride, padding, dilation, ceil_mode, return_indices, 3, "max_pool3d"
    )


def _max_pool_with_indices(pool):
    """``pool`` (``max_pool1d``, ``2d`` or ``3d``) as its ``*_with_indices`` form."""

    def with_indices(
        input: Tensor,
        kernel_size,
        stride=None,
        padding=0,
        dilation=1,
        ceil_mode=False,
        return_indices=True,
    ):
        return pool(input, kernel_size, stride, padding, dilation, ceil_mode, True)

    with_indices.__name__ = with_indices.__qualname__ = f"{pool.__name__}_with_indices"
    with_indices.__doc__ = f"``{pool.__name__}`` returning (values, flat indices)."
    return with_indices


max_pool1d_with_indices = _max_pool_with_indices(max_pool1d)
max_pool2d_with_indices = _max_pool_with_indices(max_pool2d)
max_pool3d_with_indices = _max_pool_with_indices(max_pool3d)


def _adaptive_max(nd: int):
    op = f"adaptive_max_pool{nd}d"

    def with_indices(input: Tensor, output_size, return_indices: bool = True):
        return _pool.adaptive_max_pool(input, output_size, True, nd, op)

    def plain(input: Tensor, output_size, return_indices: bool = False):
        return _pool.adaptive_max_pool(input, output_size, return_indices, nd, op)

    with_indices.__name__ = with_indices.__qualname__ = f"{op}_with_indices"
    plain.__name__ = plain.__qualname__ = op
    plain.__doc__ = f"Max over PyTorch's adaptive windows in {nd} spatial dims."
    with_indices.__doc__ = f"``{op}`` returning (values, flat indices)."
    return plain, with_indices


adaptive_max_pool1d, adaptive_max_pool1d_with_indices = _adaptive_max(1)
adaptive_max_pool2d, adaptive_max_pool2d_with_indices = _adaptive_max(2)
adaptive_max_pool3d, adaptive_max_pool3d_with_indices = _adaptive_max(3)


def _fractional(nd: int):
    op = f"fractional_max_pool{nd}d"

    def plain(
        input: Tensor,
        kernel_size,
        output_size=None,
        output_ratio=None,
        return_indices: bool = False,
        _random_samples=None,
    ):
        return _pool.fractional_max_pool_nd(
            input, kernel_size, output_size, output_ratio, return_indices, _random_samples, nd, op
        )

    def with_indices(
        input: Tensor,
        kernel_size,
        output_size=None,
        output_ratio=None,
        return_indices: bool = False,
        _random_samples=None,
    ):
        return _pool.fractional_max_pool_nd(
            input, kernel_size, output_size, output_ratio, True, _random_samples, nd, op
        )

    plain.__name__ = plain.__qualname__ = op
    with_indices.__name__ = with_indices.__qualname__ = f"{op}_with_indices"
    plain.__doc__ = f"Fractional max pooling in {nd} spatial dims (pseudo-random windows)."
    with_indices.__doc__ = f"``{op}`` returning (values, flat indices)."
    return plain, with_indices


fractional_max_pool2d, fractional_max_pool2d_with_indices = _fractional(2)
fractional_max_pool3d, fractional_max_pool3d_with_indices = _fractional(3)


def _max_unpool(nd: int):
    op = f"max_unpool{nd}d"

    def unpool(
        input: Tensor, indices: Tensor, kernel_size, stride=None, padding=0, output_size=None
    ):
        return _pool.max_unpool_nd(
            input, indices, kernel_size, stride, padding, output_size, nd, op
        )

    unpool.__name__ = unpool.__qualname__ = op
    unpool.__doc__ = f"The partial inverse of max_pool{nd}d: values back at their indices."
    return unpool


max_unpool1d = _max_unpool(1)
max_unpool2d = _max_unpool(2)
max_unpool3d = _max_unpool(3)


# --- average pooling --------------------------------------------------------------------------
def avg_pool3d(
    input: Tensor,
    kernel_size,
    stride=None,
    padding=0,
    ceil_mode: bool = False,
    count_include_pad: bool = True,
    divisor_override=None,
) -> Tensor:
    """Mean over 3-d windows of (N, C, D, H, W) or (C, D, H, W) input."""
    return _pool.avg_pool_nd(
        input,
        kernel_size,
        stride,
        padding,
        ceil_mode,
        count_include_pad,
        divisor_override,
        3,
        "avg_pool3d",
    )


def adaptive_avg_pool1d(input: Tensor, output_size) -> Tensor:
    """Mean over PyTorch's adaptive windows of (N, C, L) or (C, L) input."""
    return _pool.adaptive_avg_pool(input, output_size, 1, "adaptive_avg_pool1d")


def adaptive_avg_pool3d(input: Tensor, output_size) -> Tensor:
    """Mean over PyTorch's adaptive windows of (N, C, D, H, W) or (C, D, H, W) input."""
    return _pool.adaptive_avg_pool(input, output_size, 3, "adaptive_avg_pool3d")


def lp_pool1d(input: Tensor, norm_type: float, kernel_size, stride=None, ceil_mode: bool = False):
    """Power-average pooling: (Σ x^p over each window)^(1/p)."""
    return _pool.lp_pool_nd(input, norm_type, kernel_size, stride, ceil_mode, 1, "lp_pool1d")


def lp_pool2d(input: Tensor, norm_type: float, kernel_size, stride=None, ceil_mode: bool = False):
    """Power-average pooling over 2-d windows."""
    return _pool.lp_pool_nd(input, norm_type, kernel_size, stride, ceil_mode, 2, "lp_pool2d")


def lp_pool3d(input: Tensor, norm_type: float, kernel_size, stride=None, ceil_mode: bool = False):
    """Power-average pooling over 3-d windows."""
    return _pool.lp_pool_nd(input, norm_type, kernel_size, stride, ceil_mode, 3, "lp_pool3d")


# --- resampling -------------------------------------------------------------------------------
def upsample(input: Tensor, size=None, scale_factor=None, mode="nearest", align_corners=None):
    """Deprecated alias of ``interpolate``."""
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(input: Tensor, size=None, scale_factor=None) -> Tensor:
    """Deprecated: ``interpolate(..., mode='nearest')``."""
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input: Tensor, size=None, scale_factor=None) -> Tensor:
    """Deprecated: ``interpolate(..., mode='bilinear', align_corners=True)``."""
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)
