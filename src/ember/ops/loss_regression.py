"""Regression losses: MSE, L1, smooth L1, Huber, Poisson and Gaussian NLL, KL divergence.

MSE, smooth L1 and Huber are one node each under PyTorch's names; the others are composed of
ember ops as PyTorch composes them (their ``grad_fn`` is the last op, e.g. ``MeanBackward0``).
"""

from __future__ import annotations

import math
import warnings

from .._tensor import Tensor
from ..autograd.node import Node
from ._dispatch import array_module, grad_state, promote, result, wrap
from .elementwise import clamp, where
from .loss import (
    CHEAP_SPAN,
    PointwiseLossNode,
    _fused_loss_backward,
    _fused_loss_forward,
    _loss_kernels,
    check_reduction,
    legacy_reduction,
    pointwise_loss,
    reduce,
    warn_if_sizes_differ,
)
from .special import xlogy

_reduce = reduce  # inside the losses ``reduce`` is PyTorch's legacy argument


def _floating_pair(op: str, input: Tensor, target: Tensor):
    """Both operands in their common dtype; integer inputs are refused as PyTorch does."""
    input, target = promote(op, input, target)
    if not (input.is_floating_point() or input.is_complex()):
        raise NotImplementedError(f"\"{op}_cpu\" not implemented for '{input.dtype.legacy_name}'")
    return input, target


def _broadcast_arrays(op: str, input: Tensor, target: Tensor):
    if input._data.shape == target._data.shape:  # nothing to broadcast (xp's call: ~5 us)
        return input._data, target._data
    xp = array_module(input._data)
    try:
        return xp.broadcast_arrays(input._data, target._data)
    except ValueError:
        from ._dispatch import broadcast_error

        raise broadcast_error(op, input._data, target._data) from None


def _weighted(op: str, terms: Tensor, weight: Tensor, input: Tensor, reduction: str, mean):
    """PyTorch's weighted form of MSE / L1 / Huber, composed of ops."""
    if tuple(weight.shape) != tuple(input.shape):
        raise ValueError("Weights and input must have the same size.")
    weighted = terms * weight
    if reduction == "none":
        return weighted
    if reduction == "sum":
        return weighted.sum()
    if reduction == "mean":
        return mean(weighted)
    raise ValueError(f"Invalid reduction mode: {reduction}. Expected one of 'none', 'mean', 'sum'.")


class MseLossBackward0(PointwiseLossNode):
    def d_input(self, x, t):
        return (x - t) * 2  # d/dx (x - t)²

    def d_target(self, x, t):
        return (t - x) * 2

    def backward(self, g):
        x, t = self.unpack_saved()
        if x._data.dtype.kind == "c":
            return super().backward(g)
        if self.reduction == "mean":
            g = g / max(self.count, 1)
        edges = self._edges
        # one op each (PyTorch's mse_loss_backward), not three: double backward runs one node
        gx = mse_loss_backward(g, x, t) if edges[0] is not None else None
        gt = mse_loss_backward(g, t, x) if edges[1] is not None else None
        return gx, gt


class MseLossBackwardBackward0(Node):
    """out = (a - b) · 2 · g: d/dg = (a - b) · 2 · gg (summed to g's shape by the engine),
    d/da = gg · g · 2 = -d/db."""

    def backward(self, gg):
        g, a, b = self.unpack_saved()
        edges = self._edges
        if not grad_state.enabled:  # no graph to record: the same roundings on the arrays
            gg_data, g_data = gg._data, g._data
            dg = da = None
            if edges[0] is not None:
                dg = a._data - b._data
                dg *= 2
                dg = dg * gg_data
            if edges[1] is not None or edges[2] is not None:
                da = gg_data * g_data
                da = da * 2
            db = -da if edges[2] is not None else None
            return (
                _wrap_or_none(dg),
                _wrap_or_none(da if edges[1] is not None else None),
                _wrap_or_none(db),
            )
        dg = (a - b) * 2 * gg if edges[0] is not None else None
        da = gg * g * 2 if edges[1] is not None or edges[2] is not None else None
        return dg, (da if edges[1] is not None else None), (-da if edges[2] is not None else None)


def _wrap_or_none(data):
    return None if data is None else wrap(data)


def mse_loss_backward(g: Tensor, a: Tensor, b: Tensor) -> Tensor:
    """(a - b) · 2 · g, the gradient of mse_loss in ``a`` (``g`` already divided by the count
    for the mean), as one op (the roundings of the three ops it replaces)."""
    data = a._data - b._data
    data *= 2
    data = data * g._data
    return result(MseLossBackwardBackward0, data, (g, a, b), (g, a, b))


def mse_loss(
    input: Tensor,
    target: Tensor,
    size_average=None,
    reduce=None,
    reduction: str = "mean",
    weight: Tensor | None = None,
) -> Tensor:
    """Mean squared error (x - y)², reduced.

    >>> mse_loss(ember.tensor([1.0, 2.0]), ember.tensor([1.0, 4.0]))
    tensor(2.)
    """
    warn_if_sizes_differ(input, target)
    reduction = legacy_reduction(size_average, reduce, reduction)
    input, target = _floating_pair("mse", input, target)
    if weight is not None:
        diff = input - target
        return _weighted(
            "mse_loss", diff * diff, weight, input, reduction, _sum_over_weight(weight)
        )
    check_reduction(reduction)
    x, t = _broadcast_arrays("mse_loss", input, target)
    diff = x - t
    return pointwise_loss(MseLossBackward0, input, target, diff * diff, reduction)


def _sum_over_weight(weight: Tensor):
    return lambda weighted: weighted.sum() / weight.sum()


def l1_loss(
    input: Tensor,
    target: Tensor,
    size_average=None,
    reduce=None,
    reduction: str = "mean",
    weight: Tensor | None = None,
) -> Tensor:
    """Mean absolute error |x - y|, reduced (composed of ops, as in PyTorch)."""
    warn_if_sizes_differ(input, target)
    reduction = legacy_reduction(size_average, reduce, reduction)
    terms = (input - target).abs()
    if weight is not None:
        return _weighted("l1_loss", terms, weight, input, reduction, _sum_over_weight(weight))
    return _reduce(terms, reduction)


def _smooth_l1_constants(dtype, beta: float) -> tuple:
    """β, 0.5 and β/2 in the array's dtype, as NumPy casts the Python floats of the formula."""
    cast = dtype.type
    return cast(beta), cast(0.5), cast(0.5 * beta)


class SmoothL1LossBackward0(PointwiseLossNode):
    def d_input(self, x, t):
        # d/dd: d/β inside (-β, β), sign(d) outside (so clamped); NaN stays NaN, as torch's
        return clamp((x - t) / self.beta, -1.0, 1.0)

    def d_target(self, x, t):
        return -self.d_input(x, t)

    def backward(self, g):
        if grad_state.enabled:  # create_graph: the formula in ember ops, differentiable again
            return super().backward(g)
        x, t = self.unpack_saved()
        kernels = _loss_kernels(x._data, t._data)
        if kernels is None:
            return super().backward(g)
        dtype = x._data.dtype
        cast = dtype.type
        constants = (cast(self.beta), cast(1), cast(0))
        gx = _fused_loss_backward(
            self, kernels, "smooth_l1", (x._data, t._data), constants, g, CHEAP_SPAN
        )
        if gx is None:
            return super().backward(g)
        edges = self._edges
        return (
            wrap(gx) if edges[0] is not None else None,
            wrap(-gx) if edges[1] is not None else None,
        )


def _in_float32_if_half(array):
    """Half-type elements computed in float32 (rounded once at the end), as torch's kernels."""
    return (
        array.astype("float32")
        if array.dtype.itemsize == 2 and array.dtype.kind not in "iub"
        else array
    )


def smooth_l1_loss(
    input: Tensor,
    target: Tensor,
    size_average=None,
    reduce=None,
    reduction: str = "mean",
    beta: float = 1.0,
) -> Tensor:
    """0.5 d²/β where |d| < β, else |d| - β/2, with d = x - y; L1 when β = 0."""
    warn_if_sizes_differ(input, target)
    reduction = legacy_reduction(size_average, reduce, reduction)
    if beta < 0:
        raise RuntimeError("smooth_l1_loss does not support negative values for beta.")
    if beta == 0:
        return l1_loss(input, target, reduction=reduction)
    input, target = _floating_pair("smooth_l1", input, target)
    check_reduction(reduction)
    x, t = _broadcast_arrays("smooth_l1_loss", input, target)
    kernels = _loss_kernels(x, t)
    if kernels is not None:  # one pass, no temporaries
        constants = _smooth_l1_constants(x.dtype, beta)
        out = _fused_loss_forward(kernels, "smooth_l1", (x, t), constants, reduction, CHEAP_SPAN)
        attrs = {"reduction": reduction, "count": x.size, "beta": beta}
        return result(SmoothL1LossBackward0, out, (input, target), (input, target), **attrs)
    xp = array_module(x)
    d = xp.abs(_in_float32_if_half(x) - _in_float32_if_half(t))
    terms = xp.where(d < beta, 0.5 * d * d / beta, d - 0.5 * beta).astype(x.dtype, copy=False)
    return pointwise_loss(SmoothL1LossBackward0, input, target, terms, reduction, beta=beta)


class HuberLossBackward0(PointwiseLossNode):
    def d_input(self, x, t):
        d = x - t  # d inside (-δ, δ), δ·sign(d) outside
        return where(d.abs() < self.delta, d, d.sign() * self.delta)

    def d_target(self, x, t):
        return -self.d_input(x, t)


def huber_loss(
    input: Tensor,
    target: Tensor,
    reduction: str = "mean",
    delta: float = 1.0,
    weight: Tensor | None = None,
) -> Tensor:
    """0.5 d² where |d| < δ, else δ(|d| - δ/2), with d = x - y."""
    warn_if_sizes_differ(input, target)
    if delta <= 0:
        raise RuntimeError("huber_loss does not support non-positive values for delta.")
    if not (input.is_floating_point() or input.is_complex()):
        raise NotImplementedError(f"\"huber_cpu\" not implemented for '{input.dtype.legacy_name}'")
    if target.dtype != input.dtype:  # PyTorch computes in the input's dtype
        target = target.to(input.dtype)
    if weight is not None:
        terms = huber_loss(input, target, "none", delta)
        return _weighted("huber_loss", terms, weight, input, reduction, lambda w: w.mean())
    check_reduction(reduction)
    x, t = _broadcast_arrays("huber_loss", input, target)
    xp = array_module(x)
    d = xp.abs(_in_float32_if_half(x) - _in_float32_if_half(t))
    terms = xp.where(d < delta, 0.5 * d * d, delta * (d - 0.5 * delta)).astype(x.dtype, copy=False)
    return pointwise_loss(HuberLossBackward0, input, target, terms, reduction, delta=delta)


def poisson_nll_loss(
    input: Tensor,
    target: Tensor,
    log_input: bool = True,
    full: bool = False,
    size_average=None,
    eps: float = 1e-8,
    reduce=None,
    reduction: str = "mean",
) -> Tensor:
    """Poisson negative log-likelihood: e^x - y x (log input) or x - y log(x + eps)."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    check_reduction(reduction)
    if log_input:
        loss = input.exp() - target * input
    else:
        loss = input - target * (input + eps).log()
    if full:
        # Stirling's approximation of log(y!), used only where y > 1
        safe = where(target > 1, target, 2.0)
        stirling = safe * safe.log() - safe + (safe * (2 * math.pi)).log() * 0.5
        loss = loss + where(target > 1, stirling, 0.0)
    return _reduce(loss, reduction)


def gaussian_nll_loss(
    input: Tensor,
    target: Tensor,
    var,
    full: bool = False,
    eps: float = 1e-6,
    reduction: str = "mean",
) -> Tensor:
    """0.5 (log var + (x - y)² / var), with var clamped at ``eps`` (gradient passes through)."""
    if isinstance(var, (int, float)):
        if var < 0:
            raise ValueError("var has negative entry/entries")
        var = input.detach() * 0 + float(var)
    elif bool((var < 0).any()):
        raise ValueError("var has negative entry/entries")
    in_shape, var_shape = tuple(input.shape), tuple(var.shape)
    if var_shape != in_shape:
        if in_shape[:-1] == var_shape:
            var = var.unsqueeze(-1)
        elif len(in_shape) == len(var_shape) and (
            sum(v for i, v in zip(in_shape, var_shape) if i != v) == 1
        ):
            pass  # one broadcast dimension of size 1: homoscedastic over it
        else:
            raise ValueError("var is of incorrect size")
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(reduction + " is not valid")
    # the clamp changes the value only: PyTorch clamps a clone under no_grad
    fixed = var.detach()
    var = var + (clamp(fixed, min=eps) - fixed)
    diff = input - target
    loss = (var.log() + diff * diff / var) * 0.5
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _reduce(loss, reduction)


def kl_div(
    input: Tensor,
    target: Tensor,
    size_average=None,
    reduce=None,
    reduction: str = "mean",
    log_target: bool = False,
) -> Tensor:
    """Pointwise KL divergence y (log y - x) with ``input`` x given as log-probabilities."""
    if size_average is not None or reduce is not None:
        reduction = legacy_reduction(size_average, reduce, reduction)
    elif reduction == "mean":
        warnings.warn(
            "reduction: 'mean' divides the total loss by both the batch size and the support "
            "size.'batchmean' divides only by the batch size, and aligns with the KL div math "
            "definition.'mean' will be changed to behave the same as 'batchmean' in the next "
            "major release.",
            stacklevel=2,
        )
    if not input.is_floating_point() or not target.is_floating_point():
        raise RuntimeError("kl_div: Integral inputs not supported.")
    if log_target:
        loss = target.exp() * (target - input)
    else:  # torch's formula: y log y is 0 at y = 0, NaN for a negative target
        loss = xlogy(target, target) - target * input
    if reduction == "batchmean":
        total = loss.sum()
        return total / input.shape[0] if input.dim() else total
    return _reduce(loss, reduction)
