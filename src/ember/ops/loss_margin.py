"""Margin and embedding losses: soft margin, multi-class and multi-label margin, hinge
embedding, cosine embedding, margin ranking, triplet margin.

``soft_margin_loss``, ``multi_margin_loss`` and ``multilabel_margin_loss`` are one node each
under PyTorch's names; the others are composed of ember ops, as in PyTorch.
"""

from __future__ import annotations

from .._tensor import Tensor
from ..autograd.node import Node
from ._dispatch import array_module, broadcast_error, grad_state, promote, result, wrap
from .distance import pairwise_distance
from .elementwise import clamp, minimum, sigmoid, where
from .loss import (
    PointwiseLossNode,
    check_reduction,
    legacy_reduction,
    pointwise_loss,
    reduce_array,
    refuse_grad,
)
from .loss import reduce as _reduce


class SoftMarginLossBackward0(PointwiseLossNode):
    def d_input(self, x, t):
        return -t * sigmoid(-t * x)  # d/dx log(1 + e^{-t x})


def soft_margin_loss(
    input: Tensor, target: Tensor, size_average=None, reduce=None, reduction: str = "mean"
) -> Tensor:
    """log(1 + exp(-y x)) for labels y in {-1, 1}, reduced."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    check_reduction(reduction)
    refuse_grad("soft_margin_loss", "target", target)
    input, target = promote("soft_margin_loss", input, target)
    x, t = input._data, target._data
    xp = array_module(x)
    if x.shape != t.shape:
        try:
            xp.broadcast_shapes(x.shape, t.shape)
        except ValueError:
            raise broadcast_error("soft_margin_loss", x, t) from None
    z = -t * x
    terms = xp.log1p(xp.exp(-xp.abs(z))) + xp.maximum(z, 0)
    return pointwise_loss(SoftMarginLossBackward0, input, target, terms, reduction)


def _check_margin_input(input: Tensor) -> None:
    """torch's rule: a 0-d input (one sample of one class), a non-empty (C,) or an (N, C) with
    C > 0."""
    if input.dim() > 2 or (input.dim() in (1, 2) and input.shape[-1] == 0):
        raise RuntimeError(
            "Expected non-empty vector or matrix with optional 0-dim batch size, but got: "
            f"{list(input.shape)}"
        )


def _check_class_target(op: str, input: Tensor, target: Tensor, weight: Tensor | None = None):
    """(N, C) input and (N,) target of class indices; a (C,) input takes a 0-d or (1,) one.
    torch's order: the shapes (input, target, weight), then the target's dtype."""
    _check_margin_input(input)
    n = input.shape[0] if input.dim() == 2 else 1
    if target.dim() > 1 or target.numel() != n:
        raise RuntimeError(
            f"{op}: target tensor should be 1-D with size equal to the number of input samples "
            f"(batch size). Expected target size [{n}], but got {list(target.shape)}. Input has "
            f"shape {list(input.shape)}."
        )
    classes = input.shape[-1] if input.dim() else 1
    if weight is not None and weight.numel() != classes:
        raise RuntimeError(
            f"inconsistent weight size, expected {classes} but got {list(weight.shape)}"
        )
    if target.dtype.name != "int64":
        raise RuntimeError(f"expected scalar type Long but found {target.dtype.legacy_name}")


class MultiMarginLossBackward0(Node):
    def backward(self, g):
        (x,) = self.unpack_saved()
        x2 = x.reshape(self.shape2d)
        mask = self.mask  # one-hot of the target class
        picked = (x2 * mask).sum(-1, keepdim=True)
        z = x2 - picked + self.margin
        active = (z > 0) & ~mask
        # d/dz of w_y relu(z)^p / C: w_y p relu(z)^(p-1) / C; the target class gets minus the sum
        slope = where(active, z * 2.0, 0.0) if self.p == 2 else active.to(x.dtype)
        coeff = slope * self.scale
        grad = coeff - mask * coeff.sum(-1, keepdim=True)
        if self.reduction == "none":
            g = g.reshape(-1, 1)
        elif self.reduction == "mean":
            g = g / max(self.shape2d[0], 1)
        return (grad * g).reshape(x.shape)


def multi_margin_loss(
    input: Tensor,
    target: Tensor,
    p: int = 1,
    margin: float = 1.0,
    weight: Tensor | None = None,
    size_average=None,
    reduce=None,
    reduction: str = "mean",
) -> Tensor:
    """Σ_{i≠y} w_y max(0, margin - x_y + x_i)^p / C per sample: the multi-class hinge loss."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    if p not in (1, 2):
        raise ValueError("only p == 1 and p == 2 supported")
    if weight is not None and weight.dim() != 1:
        raise ValueError("weight must be one-dimensional")
    if weight is not None and weight.dtype != input.dtype:
        raise RuntimeError(
            f"expected scalar type {input.dtype.legacy_name} but found {weight.dtype.legacy_name}"
        )
    check_reduction(reduction)
    refuse_grad("multi_margin_loss", "weight", weight)
    _check_class_target("multi_margin_loss", input, target, weight)
    data = input._data
    xp = array_module(data)
    classes = data.shape[-1] if data.ndim else 1
    x = data.reshape(-1, classes)
    y = target._data.reshape(-1)
    if y.size and bool(((y < 0) | (y >= classes)).any()):
        raise RuntimeError("target out of range")
    mask = xp.arange(classes) == y[:, None]
    picked = x[xp.arange(x.shape[0]), y][:, None]
    z = xp.maximum(x - picked + margin, 0)
    z = xp.where(mask, 0, z if p == 1 else z * z)
    scale = xp.full((x.shape[0], 1), 1.0 / classes, dtype=data.dtype)
    if weight is not None:
        scale = scale * weight._data.astype(data.dtype)[y][:, None]
    terms = (z * scale).sum(-1)
    if input.dim() == 0 or (input.dim() == 1 and target.dim() == 0):
        terms = terms.reshape(())
    out = reduce_array(xp, terms, reduction)
    return result(
        MultiMarginLossBackward0,
        out,
        (input,),
        (input,),
        shape2d=x.shape,
        mask=wrap(mask),
        scale=wrap(scale),
        margin=margin,
        p=p,
        reduction=reduction,
    )


class MultilabelMarginLossBackward0(Node):
    """The loss is piecewise linear in the input: its gradient is constant coefficients times
    the incoming gradient (differentiable again in the gradient only)."""

    def backward(self, g):
        if self.reduction == "none" and g.dim() > 0:
            g = g.unsqueeze(-1)
        return self.coeff * g


def multilabel_margin_loss(
    input: Tensor, target: Tensor, size_average=None, reduce=None, reduction: str = "mean"
) -> Tensor:
    """Σ_j Σ_{i not a target} max(0, 1 - (x[y_j] - x_i)) / C, where y lists each sample's
    target classes and ends at the first -1."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    check_reduction(reduction)
    _check_margin_input(input)
    if tuple(target.shape) != tuple(input.shape):
        raise RuntimeError(
            f"inconsistent target size: {list(target.shape)} for input of size: {list(input.shape)}"
        )
    if target.dtype.name != "int64":
        raise RuntimeError(f"expected scalar type Long but found {target.dtype.legacy_name}")
    data = input._data
    xp = array_module(data)
    classes = data.shape[-1] if data.ndim else 1
    x = data.reshape(-1, classes)
    y = target._data.reshape(-1, classes)
    if y.size and bool(((y < -1) | (y >= classes)).any()):
        raise RuntimeError("argument #2 'target' is out of range")
    # the targets of a row are the entries before its first -1
    valid = xp.cumprod(y != -1, axis=1).astype(bool)
    safe = xp.where(valid, y, 0)
    rows = xp.arange(x.shape[0])[:, None]
    is_target = xp.zeros(x.shape, dtype=bool)
    is_target[xp.broadcast_to(rows, y.shape)[valid], safe[valid]] = True
    picked = x[rows, safe]  # (N, J): x[y_j]
    margins = 1 - picked[:, :, None] + x[:, None, :]  # (N, J, I)
    active = valid[:, :, None] & ~is_target[:, None, :] & (margins > 0)
    terms = (margins * active).sum((1, 2)) / classes
    if input.dim() <= 1:
        terms = terms.reshape(())
    out = reduce_array(xp, terms.astype(data.dtype, copy=False), reduction)
    if not (input._rg and grad_state.enabled):
        return result(MultilabelMarginLossBackward0, out, (input,))
    count = active.astype(data.dtype)
    coeff = count.sum(1)  # +1 for each active pair at the non-target class i
    pulled = count.sum(2)  # -1 for each active pair at the target class y_j
    xp.add.at(coeff, (xp.broadcast_to(rows, y.shape), safe), -pulled)
    coeff = coeff / classes
    if reduction == "mean":
        coeff = coeff / max(x.shape[0] if input.dim() == 2 else 1, 1)
    return result(
        MultilabelMarginLossBackward0,
        out,
        (input,),
        coeff=wrap(coeff.reshape(data.shape).astype(data.dtype, copy=False)),
        reduction=reduction,
    )


def hinge_embedding_loss(
    input: Tensor,
    target: Tensor,
    margin: float = 1.0,
    size_average=None,
    reduce=None,
    reduction: str = "mean",
) -> Tensor:
    """x where y = 1, max(0, margin - x) where y = -1."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    check_reduction(reduction)
    margin_part = where(target != 1, clamp(margin - input, min=0.0), 0.0)
    self_part = where(target != -1, input, 0.0)
    return _reduce(margin_part + self_part, reduction)


def cosine_embedding_loss(
    input1: Tensor,
    input2: Tensor,
    target: Tensor,
    margin: float = 0.0,
    size_average=None,
    reduce=None,
    reduction: str = "mean",
) -> Tensor:
    """1 - cos(x1, x2) where y = 1, max(0, cos(x1, x2) - margin) where y = -1."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    check_reduction(reduction)
    if target.dim() not in (0, 1):
        raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
    want = 2 if target.dim() == 1 else 1
    if input1.dim() != want or input2.dim() != want:
        raise RuntimeError(
            f"{target.dim()}D target tensor expects {want}D input tensors, but found inputs "
            f"with sizes {list(input1.shape)} and {list(input2.shape)}."
        )
    eps = 1e-12  # added to each squared magnitude, as PyTorch does
    dim = want - 1
    dot = (input1 * input2).sum(dim)
    mag = ((input1 * input1).sum(dim) + eps) * ((input2 * input2).sum(dim) + eps)
    cos = dot / mag.sqrt()
    loss = where(target == 1, 1 - cos, 0.0) + where(target == -1, clamp(cos - margin, min=0.0), 0.0)
    return _reduce(loss, reduction)


def margin_ranking_loss(
    input1: Tensor,
    input2: Tensor,
    target: Tensor,
    margin: float = 0.0,
    size_average=None,
    reduce=None,
    reduction: str = "mean",
) -> Tensor:
    """max(0, -y (x1 - x2) + margin)."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    if input1.dim() != input2.dim() or input1.dim() != target.dim():
        raise RuntimeError(
            "margin_ranking_loss : All input tensors should have same dimension but got sizes: "
            f"input1: {input1.shape}, input2: {input2.shape}, target: {target.shape} "
        )
    check_reduction(reduction)
    return _reduce(clamp(-target * (input1 - input2) + margin, min=0.0), reduction)


def _check_triplet_dims(anchor: Tensor, positive: Tensor, negative: Tensor) -> None:
    a, p, n = anchor.dim(), positive.dim(), negative.dim()
    if not (a == p == n):
        raise RuntimeError(
            "The anchor, positive, and negative tensors are expected to have the same number "
            f"of dimensions, but got: anchor {a}D, positive {p}D, and negative {n}D inputs"
        )


def triplet_margin_loss(
    anchor: Tensor,
    positive: Tensor,
    negative: Tensor,
    margin: float = 1.0,
    p: float = 2,
    eps: float = 1e-6,
    swap: bool = False,
    size_average=None,
    reduce=None,
    reduction: str = "mean",
) -> Tensor:
    """max(0, d(a, p) - d(a, n) + margin) with d the pairwise p-norm distance."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    if margin <= 0:
        raise ValueError(f"margin must be greater than 0, got {margin}")
    check_reduction(reduction)
    _check_triplet_dims(anchor, positive, negative)
    dist_pos = pairwise_distance(anchor, positive, p, eps)
    dist_neg = pairwise_distance(anchor, negative, p, eps)
    if swap:
        dist_neg = minimum(dist_neg, pairwise_distance(positive, negative, p, eps))
    return _reduce(clamp(dist_pos - dist_neg + margin, min=0.0), reduction)


def triplet_margin_with_distance_loss(
    anchor: Tensor,
    positive: Tensor,
    negative: Tensor,
    *,
    distance_function=None,
    margin: float = 1.0,
    swap: bool = False,
    reduction: str = "mean",
) -> Tensor:
    """The triplet margin loss under any ``distance_function`` (pairwise distance by default)."""
    check_reduction(reduction)
    if margin <= 0:
        raise ValueError(f"margin must be greater than 0, got {margin}")
    _check_triplet_dims(anchor, positive, negative)
    distance = distance_function if distance_function is not None else pairwise_distance
    dist_pos = distance(anchor, positive)
    dist_neg = distance(anchor, negative)
    if swap:
        dist_neg = minimum(dist_neg, distance(positive, negative))
    return _reduce(clamp(dist_pos - dist_neg + margin, min=0.0), reduction)
