"""Window functions for spectral analysis: ``ember.hann_window`` and friends, as PyTorch's.

``periodic=True`` (the default) gives the window for a length-``N`` DFT: the symmetric window
of length ``N + 1`` without its last sample.
"""

from __future__ import annotations

import math

from . import _creation
from . import _dtype as dt
from ._tensor import Tensor


def _window(name: str, length: int, periodic: bool, dtype, device, requires_grad, values):
    if length < 0:
        raise RuntimeError(
            f"{name} requires non-negative window_length, got window_length={length}"
        )
    d = dt.to_dtype(dtype) if dtype is not None else dt.get_default_dtype()
    if d.category != dt.FLOAT:
        raise RuntimeError(f"{name} expects floating point dtypes, got: {d}")
    if length == 0:
        return _creation.empty(0, dtype=d, device=device, requires_grad=requires_grad)
    if length == 1:
        return _creation.ones(1, dtype=d, device=device, requires_grad=requires_grad)
    n = length + 1 if periodic else length
    out = values(_creation.arange(n, dtype=dt.float64, device=device), n)
    if periodic:
        out = out[:-1]
    return out.to(d).detach().requires_grad_(requires_grad)


def _cosine_sum(coefficients):
    def values(k: Tensor, n: int) -> Tensor:
        out = k * 0.0
        for i, a in enumerate(coefficients):
            out = out + ((-1) ** i) * a * (k * (2 * math.pi * i / (n - 1))).cos()
        return out

    return values


def hann_window(
    window_length: int,
    periodic: bool = True,
    *,
    dtype=None,
    layout=None,
    device=None,
    requires_grad: bool = False,
) -> Tensor:
    return _window(
        "hann_window",
        window_length,
        periodic,
        dtype,
        device,
        requires_grad,
        _cosine_sum((0.5, 0.5)),
    )


def hamming_window(
    window_length: int,
    periodic: bool = True,
    alpha: float = 0.54,
    beta: float = 0.46,
    *,
    dtype=None,
    layout=None,
    device=None,
    requires_grad: bool = False,
) -> Tensor:
    return _window(
        "hamming_window",
        window_length,
        periodic,
        dtype,
        device,
        requires_grad,
        _cosine_sum((alpha, beta)),
    )


def blackman_window(
    window_length: int,
    periodic: bool = True,
    *,
    dtype=None,
    layout=None,
    device=None,
    requires_grad: bool = False,
) -> Tensor:
    return _window(
        "blackman_window",
        window_length,
        periodic,
        dtype,
        device,
        requires_grad,
        _cosine_sum((0.42, 0.5, 0.08)),
    )


def bartlett_window(
    window_length: int,
    periodic: bool = True,
    *,
    dtype=None,
    layout=None,
    device=None,
    requires_grad: bool = False,
) -> Tensor:
    def values(k: Tensor, n: int) -> Tensor:
        return 1 - (k * (2.0 / (n - 1)) - 1).abs()

    return _window("bartlett_window", window_length, periodic, dtype, device, requires_grad, values)


def kaiser_window(
    window_length: int,
    periodic: bool = True,
    beta: float = 12.0,
    *,
    dtype=None,
    layout=None,
    device=None,
    requires_grad: bool = False,
) -> Tensor:
    def values(k: Tensor, n: int) -> Tensor:
        from .ops.special import i0

        ratio = k * (2.0 / (n - 1)) - 1
        return i0(beta * (1 - ratio * ratio).clamp_min(0).sqrt()) / i0(
            _creation.tensor(float(beta), dtype=dt.float64)
        )

    return _window("kaiser_window", window_length, periodic, dtype, device, requires_grad, values)


__all__ = ["bartlett_window", "blackman_window", "hamming_window", "hann_window", "kaiser_window"]
