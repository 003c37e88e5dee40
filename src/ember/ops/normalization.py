"""Normalisations beyond batch/layer/group norm: instance, RMS and local response norm.

All are composed of differentiable ember ops (means, variances, rsqrt, a band matrix over
channels), so gradients of every order follow from those ops' formulas.
"""

from __future__ import annotations

from .._tensor import Tensor
from ._dispatch import array_module, wrap
from ._spatial_checks import require_floating


def instance_norm(
    input: Tensor,
    running_mean: Tensor | None = None,
    running_var: Tensor | None = None,
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    use_input_stats: bool = True,
    momentum: float = 0.1,
    eps: float = 1e-5,
) -> Tensor:
    """Normalise each (sample, channel) plane of (N, C, *S) over its spatial dims.

    With running stats and ``use_input_stats``, they are updated with the batch average of the
    per-instance statistics (unbiased variance), as PyTorch does."""
    from ..autograd.grad_mode import no_grad

    if input.dim() < 2:
        raise ValueError(f"instance_norm expects at least 2D input, got {input.dim()}D")
    require_floating(input, "instance_norm")
    channels = input.shape[1]
    shape = (1, channels) + (1,) * (input.dim() - 2)
    dims = tuple(range(2, input.dim()))
    if use_input_stats:
        count = 1
        for s in input.shape[2:]:
            count *= s
        if count <= 1:
            raise ValueError(
                "Expected more than 1 spatial element when training, got input size "
                f"{list(input.shape)}"
            )
        mean = input.mean(dims, keepdim=True)
        var = input.var(dims, keepdim=True, correction=0)
        if running_mean is not None or running_var is not None:
            with no_grad():
                if running_mean is not None:
                    batch_mean = mean._detach().reshape(input.shape[0], channels).mean(0)
                    running_mean.mul_(1 - momentum).add_(batch_mean * momentum)
                if running_var is not None:
                    unbiased = var._detach() * (count / (count - 1))
                    batch_var = unbiased.reshape(input.shape[0], channels).mean(0)
                    running_var.mul_(1 - momentum).add_(batch_var * momentum)
    else:
        if running_mean is None or running_var is None:
            raise ValueError(
                "Expected running_mean and running_var to be defined when use_input_stats is false"
            )
        mean, var = running_mean.reshape(shape), running_var.reshape(shape)
    out = (input - mean) * (var + eps).rsqrt()
    if weight is not None:
        out = out * weight.reshape(shape)
    if bias is not None:
        out = out + bias.reshape(shape)
    return out


def rms_norm(
    input: Tensor, normalized_shape, weight: Tensor | None = None, eps: float | None = None
) -> Tensor:
    """x / sqrt(mean(x²) + eps) over the trailing ``normalized_shape`` dims, times ``weight``;
    ``eps`` defaults to the machine epsilon of the input's dtype."""
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    if tuple(input.shape[input.dim() - len(shape) :]) != shape or input.dim() < len(shape):
        raise RuntimeError(
            f"Given normalized_shape={list(shape)}, expected input with shape "
            f"[*{', '.join(str(s) for s in shape)}], but got input of size{list(input.shape)}"
        )
    require_floating(input, "rms_norm")
    if eps is None:
        eps = float(array_module(input._data).finfo(input._data.dtype).eps)
    dims = tuple(range(input.dim() - len(shape), input.dim()))
    out = input * ((input * input).mean(dims, keepdim=True) + eps).rsqrt()
    return out * weight if weight is not None else out


def _channel_window_matrix(channels: int, size: int, xp, dtype):
    """(C, C) band: channel c averages squares of channels c - size//2 .. c + (size-1)//2,
    dividing by ``size`` whether or not the window runs off the ends (zero padding)."""
    c = xp.arange(channels)
    offset = c[None, :] - c[:, None]
    band = (offset >= -(size // 2)) & (offset <= (size - 1) // 2)
    return xp.asarray(band / size, dtype=dtype)


def local_response_norm(
    input: Tensor, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1.0
) -> Tensor:
    """x / (k + alpha · mean of x² over ``size`` neighbouring channels)^beta (AlexNet)."""
    if input.dim() < 3:
        raise ValueError(
            f"Expected 3D or higher dimensionality input (got {input.dim()} dimensions)"
        )
    require_floating(input, "local_response_norm")
    if input.numel() == 0:
        return input
    xp = array_module(input._data)
    band = wrap(_channel_window_matrix(input.shape[1], size, xp, input._data.dtype))
    squares = (input * input).movedim(1, -1)
    div = (squares @ band.mT).movedim(-1, 1)
    return input / (div * alpha + k).pow(beta)


def _cross_map_band(channels: int, size: int, xp):
    """(C, C) 0/1 mask of the channels each output channel sums in the legacy Lua-Torch
    CrossMapLRN2d. Its running window adds channel c + pre - 1 and drops channel c - pre only
    once c > pre, so row c holds channels c - pre + 1 .. c + pre - 1 and channel 0 is never
    dropped (windows are not centred; kept for compatibility)."""
    pre = int((size - 1) / 2 + 1)
    c = xp.arange(channels)[:, None]
    j = xp.arange(channels)[None, :]
    return (j <= c + pre - 1) & ((j >= c - pre + 1) | (j == 0))


def cross_map_lrn2d(
    input: Tensor, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1.0
) -> Tensor:
    """Lua-Torch's cross-channel LRN of (N, C, H, W) input: x · (k + alpha/size · Σ x²)^-beta.

    Values match PyTorch's CrossMapLRN2d; the gradient is the exact one of this forward
    (PyTorch's hand-written backward for the layer does not pass gradcheck)."""
    if input.dim() != 4:
        raise ValueError(f"CrossMapLRN2d: Expected input to be 4D, got {input.dim()}D instead.")
    require_floating(input, "cross_map_lrn2d")
    xp = array_module(input._data)
    band = xp.where(_cross_map_band(input.shape[1], size, xp), alpha / size, 0.0)
    weights = wrap(band.astype(input._data.dtype))
    sums = ((input * input).movedim(1, -1) @ weights.mT).movedim(-1, 1)
    return input * (sums + k).pow(-beta)
