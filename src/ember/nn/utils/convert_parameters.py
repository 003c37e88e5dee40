"""Flatten parameters into one vector and back."""

from __future__ import annotations

from ..._tensor import Tensor
from ...autograd.grad_mode import no_grad
from ...ops.shape import cat


def parameters_to_vector(parameters) -> Tensor:
    """All parameters, flattened and concatenated (differentiable)."""
    return cat([p.reshape(-1) for p in parameters])


def vector_to_parameters(vec: Tensor, parameters) -> None:
    """Copy consecutive slices of ``vec`` into the parameters (shapes taken from them)."""
    if not isinstance(vec, Tensor):
        raise TypeError(f"expected Tensor, but got: {type(vec).__name__}")
    start = 0
    with no_grad():
        for p in parameters:
            n = p.numel()
            p.copy_(vec[start : start + n].reshape(p.shape))
            start += n
