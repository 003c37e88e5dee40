"""ember.nn.init: PyTorch's weight initialisation functions (all in place, without grad).

Random values come from ember's generators (``generator=`` or the default one) and are
PyTorch's: under the same ``manual_seed`` every function here, and every layer's default
initialisation, fills the same values (QR-based ``orthogonal_`` to LAPACK's rounding).
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from .. import _creation
from .._random import resolve_generator
from .._tensor import Tensor
from ..autograd.grad_mode import no_grad

__all__ = [
    "calculate_gain",
    "uniform_",
    "normal_",
    "trunc_normal_",
    "constant_",
    "ones_",
    "zeros_",
    "eye_",
    "dirac_",
    "xavier_uniform_",
    "xavier_normal_",
    "kaiming_uniform_",
    "kaiming_normal_",
    "orthogonal_",
    "sparse_",
    "uniform",
    "normal",
    "constant",
    "eye",
    "dirac",
    "xavier_uniform",
    "xavier_normal",
    "kaiming_uniform",
    "kaiming_normal",
    "orthogonal",
    "sparse",
]

_LINEAR_GAIN = (
    "linear",
    "conv1d",
    "conv2d",
    "conv3d",
    "conv_transpose1d",
    "conv_transpose2d",
    "conv_transpose3d",
    "sigmoid",
)


def calculate_gain(nonlinearity: str, param: float | None = None) -> float:
    """The recommended gain for a nonlinearity (``param`` is leaky_relu's negative slope).

    Example::
        >>> ember.nn.init.calculate_gain("tanh")
        1.6666666666666667
    """
    if nonlinearity in _LINEAR_GAIN:
        return 1
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        if param is None:
            slope = 0.01
        elif isinstance(param, (int, float)) and not isinstance(param, bool):
            slope = param
        else:
            raise ValueError(f"negative_slope {param} not a valid number")
        return math.sqrt(2.0 / (1 + slope**2))
    if nonlinearity == "selu":
        return 3.0 / 4  # keeps the self-normalising fixed point (PyTorch's choice)
    raise ValueError(f"Unsupported nonlinearity {nonlinearity}")


def _calculate_fan_in_and_fan_out(tensor: Tensor) -> tuple[int, int]:
    if tensor.dim() < 2:
        raise ValueError(
            "Fan in and fan out can not be computed for tensor with fewer than 2 dimensions"
        )
    receptive = 1
    for s in tensor.shape[2:]:
        receptive *= s
    return tensor.shape[1] * receptive, tensor.shape[0] * receptive


def _calculate_correct_fan(tensor: Tensor, mode: str) -> int:
    mode = mode.lower()
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"Mode {mode} not supported, please use one of ['fan_in', 'fan_out']")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return fan_in if mode == "fan_in" else fan_out


def _fill_from(tensor: Tensor, values: np.ndarray) -> Tensor:
    """Copy host values (any float dtype) into ``tensor`` in place."""
    with no_grad():
        return tensor.copy_(_creation.tensor(values.reshape(tuple(tensor.shape))))


def uniform_(tensor: Tensor, a: float = 0.0, b: float = 1.0, generator=None) -> Tensor:
    """Fill with U(a, b)."""
    with no_grad():
        return tensor.uniform_(a, b, generator=generator)


def normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0, generator=None) -> Tensor:
    """Fill with N(mean, std²)."""
    with no_grad():
        return tensor.normal_(mean, std, generator=generator)


def trunc_normal_(
    tensor: Tensor,
    mean: float = 0.0,
    std: float = 1.0,
    a: float = -2.0,
    b: float = 2.0,
    generator=None,
) -> Tensor:
    """Fill with N(mean, std²) truncated to [a, b], drawing PyTorch's values.

    When [a, b] holds more than 30 % of the mass, whole-tensor normal draws replace the
    values that fall outside it until none do; otherwise uniform candidates on [a, b] are
    accepted with probability exp(-(x - mean)² / 2std² - log_peak), again redrawn for the
    whole tensor each round. Either way the stream advances as PyTorch's does.

    Example::
        >>> w = ember.nn.init.trunc_normal_(ember.empty(3, 5), std=0.02)
    """
    if mean < a - 2 * std or mean > b + 2 * std:
        warnings.warn(
            "mean is more than 2 std from [a, b] in nn.init.trunc_normal_. "
            "The distribution of values may be incorrect.",
            stacklevel=2,
        )
    if tensor.is_meta:  # no values to draw or redraw
        return tensor
    mass = _normal_cdf((b - mean) / std) - _normal_cdf((a - mean) / std)
    with no_grad():
        if mass > 0.3:
            values = _redraw_normal_outside(tensor, mean, std, a, b, generator)
        else:
            values = _accept_uniform_candidates(tensor, mean, std, a, b, generator)
        if values is not tensor:
            tensor.copy_(values)
    return tensor


def _normal_cdf(x: float) -> float:
    return (1.0 + math.erf(x / math.sqrt(2.0))) / 2.0


def _redraw_normal_outside(tensor: Tensor, mean, std, a, b, generator) -> Tensor:
    low = _creation.tensor(a, dtype=tensor.dtype).item()  # the bounds in the tensor's dtype
    high = _creation.tensor(b, dtype=tensor.dtype).item()
    values = tensor.normal_(mean, std, generator=generator)
    while True:
        outside = (values < low) | (values > high)
        if not outside.any():
            return values
        fresh = _creation.empty_like(values).normal_(mean, std, generator=generator)
        values = _where(outside, fresh, values)


def _accept_uniform_candidates(tensor: Tensor, mean, std, a, b, generator) -> Tensor:
    log_peak = -0.5 * ((max(a, min(mean, b)) - mean) / std) ** 2

    def log_ratio(x: Tensor) -> Tensor:  # log density relative to its peak on [a, b]
        return ((x - mean) / std).pow(2).mul(-0.5).sub(log_peak)

    def rejected(x: Tensor) -> Tensor:
        u = _creation.empty_like(tensor).uniform_(generator=generator)
        return u.log_().gt(log_ratio(x))

    values = tensor.uniform_(a, b, generator=generator)
    pending = rejected(values)
    while pending.any():
        candidates = _creation.empty_like(tensor).uniform_(a, b, generator=generator)
        values = _where(pending, candidates, values)
        pending = _where(pending, rejected(candidates), pending)
    return values


def _where(condition: Tensor, x: Tensor, y: Tensor) -> Tensor:
    from ..ops.elementwise import where

    return where(condition, x, y)


def constant_(tensor: Tensor, val: float) -> Tensor:
    """Fill with ``val``."""
    with no_grad():
        return tensor.fill_(val)


def ones_(tensor: Tensor) -> Tensor:
    """Fill with ones."""
    return constant_(tensor, 1.0)


def zeros_(tensor: Tensor) -> Tensor:
    """Fill with zeros."""
    return constant_(tensor, 0.0)


def eye_(tensor: Tensor) -> Tensor:
    """Fill a 2-D tensor with the identity (ones on the main diagonal)."""
    if tensor.dim() != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    return _fill_from(tensor, np.eye(*tensor.shape))


def dirac_(tensor: Tensor, groups: int = 1) -> Tensor:
    """Fill a 3-, 4- or 5-D conv weight so the convolution is the identity (per group)."""
    if tensor.dim() not in (3, 4, 5):
        raise ValueError("Only tensors with 3, 4, or 5 dimensions are supported")
    sizes = tuple(tensor.shape)
    if sizes[0] % groups != 0:
        raise ValueError("dim 0 must be divisible by groups")
    per_group = sizes[0] // groups
    values = np.zeros(sizes)
    centre = tuple(s // 2 for s in sizes[2:])
    for g in range(groups):
        for d in range(min(per_group, sizes[1])):
            values[(g * per_group + d, d) + centre] = 1
    return _fill_from(tensor, values)


def xavier_uniform_(tensor: Tensor, gain: float = 1.0, generator=None) -> Tensor:
    """Glorot uniform: U(-b, b) with b = gain·√(6 / (fan_in + fan_out))."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    # √3·std, rounded as PyTorch computes it (gain·√(6/n) can differ in the last bit)
    bound = math.sqrt(3.0) * (gain * math.sqrt(2.0 / float(fan_in + fan_out)))
    return uniform_(tensor, -bound, bound, generator)


def xavier_normal_(tensor: Tensor, gain: float = 1.0, generator=None) -> Tensor:
    """Glorot normal: N(0, std²) with std = gain·√(2 / (fan_in + fan_out))."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return normal_(tensor, 0.0, gain * math.sqrt(2.0 / float(fan_in + fan_out)), generator)


def _kaiming_std(tensor: Tensor, a: float, mode: str, nonlinearity: str) -> float | None:
    if 0 in tuple(tensor.shape):
        warnings.warn("Initializing zero-element tensors is a no-op", stacklevel=3)
        return None
    fan = _calculate_correct_fan(tensor, mode)
    return calculate_gain(nonlinearity, a) / math.sqrt(fan)


def kaiming_uniform_(
    tensor: Tensor,
    a: float = 0,
    mode: str = "fan_in",
    nonlinearity: str = "leaky_relu",
    generator=None,
) -> Tensor:
    """He uniform: U(-b, b) with b = gain·√(3 / fan)."""
    std = _kaiming_std(tensor, a, mode, nonlinearity)
    if std is None:
        return tensor
    bound = math.sqrt(3.0) * std
    return uniform_(tensor, -bound, bound, generator)


def kaiming_normal_(
    tensor: Tensor,
    a: float = 0,
    mode: str = "fan_in",
    nonlinearity: str = "leaky_relu",
    generator=None,
) -> Tensor:
    """He normal: N(0, std²) with std = gain / √fan."""
    std = _kaiming_std(tensor, a, mode, nonlinearity)
    if std is None:
        return tensor
    return normal_(tensor, 0.0, std, generator)


def orthogonal_(tensor: Tensor, gain: float = 1.0, generator=None) -> Tensor:
    """A (semi-)orthogonal matrix (dims after the first flattened), scaled by ``gain``."""
    if tensor.dim() < 2:
        raise ValueError("Only tensors with 2 or more dimensions are supported")
    if tensor.numel() == 0:
        return tensor
    rows = tensor.shape[0]
    cols = tensor.numel() // rows
    with no_grad():
        drawn = _creation.empty((rows, cols), dtype=tensor.dtype).normal_(generator=generator)
    flat = drawn.numpy()
    if rows < cols:
        flat = flat.T
    q, r = np.linalg.qr(flat)
    q = q * np.sign(np.diag(r))  # sign fix: makes Q Haar-distributed
    if rows < cols:
        q = q.T
    return _fill_from(tensor, q * gain)


def sparse_(tensor: Tensor, sparsity: float, std: float = 0.01, generator=None) -> Tensor:
    """N(0, std²) values with ``ceil(sparsity · rows)`` zeros in every column."""
    if tensor.dim() != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    rows, cols = tensor.shape
    zeros_per_column = int(math.ceil(sparsity * rows))
    with no_grad():
        values = tensor.normal_(0.0, std, generator=generator).detach().cpu().numpy().copy()
    default = resolve_generator(None)
    for col in range(cols):
        # the positions come from the default generator even when ``generator`` is given,
        # as PyTorch draws them
        values[default.randperm(rows)[:zeros_per_column], col] = 0
    return _fill_from(tensor, values)


def _deprecated(new):
    old_name = new.__name__[:-1]

    def old(*args, **kwargs):
        warnings.warn(
            f"`nn.init.{old_name}` is now deprecated in favor of `nn.init.{new.__name__}`.",
            FutureWarning,
            stacklevel=2,
        )
        return new(*args, **kwargs)

    old.__name__ = old.__qualname__ = old_name
    old.__doc__ = f"Deprecated alias of :func:`{new.__name__}`."
    return old


uniform = _deprecated(uniform_)
normal = _deprecated(normal_)
constant = _deprecated(constant_)
eye = _deprecated(eye_)
dirac = _deprecated(dirac_)
xavier_uniform = _deprecated(xavier_uniform_)
xavier_normal = _deprecated(xavier_normal_)
kaiming_uniform = _deprecated(kaiming_uniform_)
kaiming_normal = _deprecated(kaiming_normal_)
orthogonal = _deprecated(orthogonal_)
sparse = _deprecated(sparse_)
