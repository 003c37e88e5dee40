"""Checks shared by the spatial ops (pooling, resampling, normalisation, grid sampling)."""

from __future__ import annotations

from .._tensor import Tensor


def require_floating(input: Tensor, op: str) -> None:
    """Averaging and interpolating ops fold fractional weights into their kernels: on integer
    input they would silently truncate, so they refuse it (as PyTorch does for most of them)."""
    if not (input.is_floating_point() or input.is_complex()):
        raise NotImplementedError(f"\"{op}\" not implemented for '{input.dtype.legacy_name}'")
