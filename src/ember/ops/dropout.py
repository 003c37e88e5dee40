"""Dropout: element-wise, channel-wise (dropout1d/2d/3d) and alpha dropout.

Each draws its keep-mask as torch does, ``noise.bernoulli_(1 - p)`` of an empty tensor (the
input's layout, or (N, C, 1, ...) per channel), so a seed gives torch's masks and leaves the
generator where torch leaves it. The output is ``input * noise`` (plus a shift for alpha
dropout), so the gradient is the same scaled mask.
"""

from __future__ import annotations

import math
import warnings

from .. import _creation
from .. import _dtype as dtypes
from .._tensor import Tensor

# SELU's scale · alpha: alpha dropout sets dropped units to minus this (SELU's saturation)
_ALPHA = 1.7580993408473766


def _check_p(p: float) -> None:
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


def _fill_order(shape: tuple, strides: tuple) -> list[int]:
    """The dims, outermost first, in which torch's ``empty_like(input)`` lays out memory (and
    so the order its in-place samplers fill): torch's infer_dense_strides, a stable insertion
    sort by stride (size breaks ties) in which a stride-0 dim keeps its place."""

    def should_swap(dim0: int, dim1: int) -> int:
        stride0, stride1 = strides[dim0], strides[dim1]
        if stride0 == 0 or stride1 == 0:
            return 0
        if stride0 != stride1:
            return -1 if stride0 < stride1 else 1
        return 1 if shape[dim0] > shape[dim1] else 0

    perm = list(range(len(shape) - 1, -1, -1))  # innermost first
    for i in range(1, len(shape)):
        dim1 = i
        for dim0 in range(i - 1, -1, -1):
            comparison = should_swap(perm[dim0], perm[dim1])
            if comparison > 0:
                perm[dim0], perm[dim1] = perm[dim1], perm[dim0]
                dim1 = dim0
            elif comparison < 0:
                break
    return perm[::-1]


def _bernoulli_noise(shape: tuple, p: float, input: Tensor) -> Tensor:
    # drawn on the host, where the generator lives: the same mask on every device for a seed;
    # a 0-d mask as one value reshaped (_creation.bernoulli of a 0-d tensor wraps a scalar)
    host = "meta" if input.device.type == "meta" else None  # (a meta mask draws nothing)
    empty = _creation.empty(shape or (1,), dtype=input.dtype, device=host)
    return _creation.bernoulli(empty, 1.0 - p).reshape(shape)


def _element_noise(input: Tensor, p: float) -> Tensor:
    """``empty_like(input).bernoulli_(1 - p)``: drawn in the order of the input's memory."""
    data = input._data
    order = _fill_order(data.shape, tuple(s // max(data.itemsize, 1) for s in data.strides))
    laid_out = _bernoulli_noise(tuple(data.shape[d] for d in order), p, input)
    inverse = sorted(range(len(order)), key=order.__getitem__)
    return laid_out.permute(*inverse) if order != sorted(order) else laid_out


def _feature_noise(input: Tensor, p: float) -> Tensor:
    """One draw per (sample, channel): ``empty((N, C, 1, ...)).bernoulli_(1 - p)``."""
    if input.dim() < 2:
        raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
    shape = tuple(input.shape[:2]) + (1,) * (input.dim() - 2)
    return _bernoulli_noise(shape, p, input)


def _with_number(noise: Tensor, op) -> Tensor:
    """``op(noise)`` for an op with a Python number, as torch computes it: in float32 for half
    floats, rounded once to the half type (ember's ops would round the number first)."""
    if noise.dtype in (dtypes.float16, dtypes.bfloat16):
        return op(noise.float()).to(noise.dtype)
    return op(noise)


def _dropout(input: Tensor, p: float, training: bool, inplace: bool, feature: bool, alpha: bool):
    _check_p(p)
    if p == 0.0 or not training or input.numel() == 0:
        return input
    if p == 1.0:
        zero = _creation.zeros((), dtype=input.dtype, device=input.device)
        return input.mul_(zero) if inplace else input * zero
    noise = _feature_noise(input, p) if feature else _element_noise(input, p)
    if not (input.is_floating_point() or input.is_complex()):
        raise RuntimeError(
            f"result type Float can't be cast to the desired output type {input.dtype.legacy_name}"
        )
    noise = noise.to(input.device)
    if not alpha:
        noise = _with_number(noise, lambda t: t / (1.0 - p))
        return input.mul_(noise) if inplace else input * noise
    # dropped units take SELU's saturation -_ALPHA; a and b restore zero mean and unit variance
    a = 1.0 / math.sqrt((_ALPHA * _ALPHA * p + 1) * (1 - p))
    b = _with_number(noise, lambda t: t - 1)
    b = _with_number(b, lambda t: t * (_ALPHA * a))
    b = _with_number(b, lambda t: t + _ALPHA * a * p)
    noise = _with_number(noise, lambda t: t * a)
    return input.mul_(noise).add_(b) if inplace else input * noise + b


def dropout(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False):
    """Zero each element with probability ``p`` and scale the rest by 1/(1-p) while training.

    >>> ember.manual_seed(3)
    >>> F.dropout(ember.ones(6), 0.5)
    tensor([2., 2., 0., 2., 0., 0.])
    """
    return _dropout(input, p, training, inplace, feature=False, alpha=False)


def feature_dropout(input: Tensor, p: float, train: bool, inplace: bool = False) -> Tensor:
    """Zero whole channels of (N, C, *S) input (torch.feature_dropout)."""
    return _dropout(input, p, train, inplace, feature=True, alpha=False)


def _unbatched_feature_dropout(input: Tensor, p: float, training: bool, inplace: bool):
    _check_p(p)
    batched = input.unsqueeze_(0) if inplace else input.unsqueeze(0)
    out = feature_dropout(batched, p, training, inplace)
    return out.squeeze_(0) if inplace else out.squeeze(0)


def dropout1d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False):
    """Zero whole channels of (N, C, L) or (C, L) input; scale the rest by 1/(1-p)."""
    _check_p(p)
    if input.dim() not in (2, 3):
        raise RuntimeError(
            f"dropout1d: Expected 2D or 3D input, but received a {input.dim()}D input. Note that "
            "dropout1d exists to provide channel-wise dropout on inputs with 1 spatial "
            "dimension, a channel dimension, and an optional batch dimension (i.e. 2D or 3D "
            "inputs)."
        )
    if input.dim() == 2:
        return _unbatched_feature_dropout(input, p, training, inplace)
    return feature_dropout(input, p, training, inplace)


_DROPOUT2D_DIM_WARNING = (
    "dropout2d: Received a {}-D input to dropout2d, which is deprecated and will result in an "
    "error in a future release. To retain the behavior and silence this warning, please use "
    "dropout instead. Note that dropout2d exists to provide channel-wise dropout on inputs with "
    "2 spatial dimensions, a channel dimension, and an optional batch dimension (i.e. 3D or 4D "
    "inputs)."
)
_DROPOUT2D_3D_WARNING = (
    "dropout2d: Received a 3D input to dropout2d and assuming that channel-wise 1D dropout "
    "behavior is desired - input is interpreted as shape (N, C, L), where C is the channel dim. "
    "This behavior will change in a future release to interpret the input as one without a "
    "batch dimension, i.e. shape (C, H, W). To maintain the 1D channel-wise dropout behavior, "
    "please switch to using dropout1d instead."
)


def dropout2d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False):
    """Zero whole channels of an (N, C, H, W) input. As PyTorch, a 3-D input is read as
    (N, C, L) (with a warning) and inputs of other ranks warn that they are deprecated."""
    _check_p(p)
    dim = input.dim()
    if dim not in (3, 4):
        warnings.warn(_DROPOUT2D_DIM_WARNING.format(dim), stacklevel=2)
    if dim == 3:
        warnings.warn(_DROPOUT2D_3D_WARNING, stacklevel=2)
    return feature_dropout(input, p, training, inplace)


def dropout3d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False):
    """Zero whole channels of (N, C, D, H, W) or (C, D, H, W) input."""
    _check_p(p)
    if input.dim() not in (4, 5):
        warnings.warn(
            f"dropout3d: Received a {input.dim()}-D input to dropout3d, which is deprecated and "
            "will result in an error in a future release. To retain the behavior and silence "
            "this warning, please use dropout instead. Note that dropout3d exists to provide "
            "channel-wise dropout on inputs with 3 spatial dimensions, a channel dimension, and "
            "an optional batch dimension (i.e. 4D or 5D inputs).",
            stacklevel=2,
        )
    if input.dim() != 5:
        return _unbatched_feature_dropout(input, p, training, inplace)
    return feature_dropout(input, p, training, inplace)


def alpha_dropout(input: Tensor, p: float = 0.5, training: bool = False, inplace: bool = False):
    """Dropout for SELU networks: keeps the input's mean and variance."""
    return _dropout(input, p, training, inplace, feature=False, alpha=True)


def feature_alpha_dropout(
    input: Tensor, p: float = 0.5, training: bool = False, inplace: bool = False
):
    """Alpha dropout of whole channels of (N, C, *S) input."""
    return _dropout(input, p, training, inplace, feature=True, alpha=True)
