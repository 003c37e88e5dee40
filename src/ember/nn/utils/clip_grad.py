"""Gradient clipping: by total norm and by value."""

from __future__ import annotations

import math

from ..._tensor import Tensor
from ...autograd.grad_mode import no_grad
from ...ops.reduction import vector_norm
from ...ops.shape import stack


def _grads(parameters) -> list:
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    return [p._grad for p in parameters if p._grad is not None]


@no_grad()
def clip_grad_norm_(
    parameters,
    max_norm: float,
    norm_type: float = 2.0,
    error_if_nonfinite: bool = False,
    foreach=None,
) -> Tensor:
    """Scale gradients so that their joint norm is at most ``max_norm``; returns the norm.

    Example::
        >>> total = ember.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
    """
    from ... import _creation

    grads = _grads(parameters)
    norm_type = float(norm_type)
    if not grads:
        return _creation.tensor(0.0)
    norms = stack([vector_norm(g, norm_type) for g in grads])
    total = norms.amax() if math.isinf(norm_type) else vector_norm(norms, norm_type)
    if error_if_nonfinite and not bool(total.isfinite()):
        raise RuntimeError(
            f"The total norm of order {norm_type} for gradients from `parameters` is non-finite, "
            "so it cannot be clipped. To disable this error and scale the gradients by the "
            "non-finite norm anyway, set `error_if_nonfinite=False`"
        )
    coef = float(max_norm) / (float(total) + 1e-6)
    if coef < 1:
        for g in grads:
            g.mul_(coef)
    return total


clip_grad_norm = clip_grad_norm_


@no_grad()
def clip_grad_value_(parameters, clip_value: float, foreach=None) -> None:
    """Clamp every gradient element into [-clip_value, clip_value]."""
    for g in _grads(parameters):
        g.clamp_(-float(clip_value), float(clip_value))


def get_total_norm(
    tensors, norm_type: float = 2.0, error_if_nonfinite: bool = False, foreach=None
) -> Tensor:
    from ... import _creation

    tensors = [tensors] if isinstance(tensors, Tensor) else list(tensors)
    if not tensors:
        return _creation.tensor(0.0)
    norms = stack([vector_norm(t, float(norm_type)) for t in tensors])
    return norms.amax() if math.isinf(float(norm_type)) else vector_norm(norms, float(norm_type))


@no_grad()
def clip_grads_with_norm_(parameters, max_norm: float, total_norm: Tensor, foreach=None) -> None:
    """Scale gradients by ``max_norm / (total_norm + 1e-6)`` when that is below 1.

    ``total_norm`` is usually ``get_total_norm`` of the same gradients (as in
    ``clip_grad_norm_``, which is these two steps).
    """
    coef = min(float(max_norm) / (float(total_norm) + 1e-6), 1.0)
    for g in _grads(parameters):
        g.mul_(coef)
