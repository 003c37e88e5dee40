"""Randomized leaky ReLU, drawing its slopes as torch's CPU kernel does.

In training, torch walks the input in C order and draws one float64 uniform on
[lower, upper) for each element <= 0 (``u * (upper - lower) + lower``, rounded twice, the
bounds first cast to the input's compute type); other elements keep slope 1. The slopes are
the ``noise`` the gradient is multiplied by. In evaluation it is a leaky ReLU with slope
(lower + upper) / 2.
"""

from __future__ import annotations

import numpy as np

from .._kernels.blocked import compute_dtype
from .._random.generator import resolve_generator
from .._tensor import Tensor
from ..ops import activation as _activation
from ..ops._dispatch import array_module, result, wrap


def _check_bounds(lower: float, upper: float) -> None:
    if lower > upper:
        raise RuntimeError(
            f"Lower bound should be less than or equal to the upper bound, but got lower="
            f"{lower} and upper={upper}"
        )


def _slopes(data, lower: float, upper: float):
    """torch's noise for ``data`` (an array): a drawn slope where ``data <= 0``, else 1."""
    xp = array_module(data)
    compute = compute_dtype(np.dtype(data.dtype))
    non_positive = data <= 0
    low, high = float(compute.type(lower)), float(compute.type(upper))
    u = resolve_generator(None).unit(int(non_positive.sum()), np.float64)
    drawn = (u * (high - low) + low).astype(compute)
    noise = xp.ones(data.shape, dtype=compute)
    noise[non_positive] = xp.asarray(drawn)
    return noise


def rrelu(
    input: Tensor,
    lower: float = 1.0 / 8,
    upper: float = 1.0 / 3,
    training: bool = False,
    inplace: bool = False,
) -> Tensor:
    """Leaky ReLU whose negative slope is drawn from U(lower, upper) in training and is
    (lower + upper) / 2 in evaluation.

    >>> ember.manual_seed(0)
    >>> F.rrelu(ember.tensor([-1.0, 2.0, -3.0]), training=True)
    tensor([-0.3271,  2.0000, -0.8174])
    """
    if inplace:
        return _activation._in_place(input, lambda t: rrelu(t, lower, upper, training))
    _activation._floating(input, "rrelu_with_noise")
    if training and input.dtype.name in ("float16", "complex64", "complex128"):
        raise NotImplementedError(
            f"\"rrelu_with_noise_out_cpu\" not implemented for '{input.dtype.legacy_name}'"
        )
    _check_bounds(lower, upper)
    data = input._data
    if training:
        noise = _slopes(data, lower, upper)
    else:  # torch's leaky_relu: the mean slope where x <= 0, its gradient at 0 included
        compute = compute_dtype(np.dtype(data.dtype))
        slope = compute.type((lower + upper) / 2)
        noise = array_module(data).where(data > 0, compute.type(1), slope)
    out = (data.astype(noise.dtype, copy=False) * noise).astype(data.dtype, copy=False)
    noise = noise.astype(data.dtype, copy=False)
    return result(_activation.RreluWithNoiseBackward0, out, (input,), noise=wrap(noise))


def rrelu_(
    input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3, training: bool = False
) -> Tensor:
    return rrelu(input, lower, upper, training, inplace=True)


__all__ = ["rrelu", "rrelu_"]
