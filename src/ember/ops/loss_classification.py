"""Classification losses: binary cross-entropy (on probabilities and on logits), cross-entropy
with indices or probabilities and label smoothing, multi-label soft margin.

``binary_cross_entropy`` and ``binary_cross_entropy_with_logits`` are one node each under
PyTorch's names; cross-entropy is log-softmax then ``nll_loss`` as in PyTorch.
"""

from __future__ import annotations

import math

from .. import _backend
from .._backend import errstate
from .._kernels import jit
from .._tensor import Tensor
from ._dispatch import (
    array_module,
    check_same_device,
    grad_state,
    named,
    promote,
    result,
    wrap,
)
from .activation import LogSoftmaxBackward0, log_softmax, logsigmoid, softplus_array
from .elementwise import clamp, sigmoid
from .loss import (
    CHEAP_SPAN,
    COSTLY_SPAN,
    PointwiseLossNode,
    _fused_loss_backward,
    _fused_loss_forward,
    _loss_kernels,
    check_reduction,
    legacy_reduction,
    nll_loss,
    pointwise_loss,
    refuse_grad,
)
from .loss import reduce as _reduce
from .shape import broadcast_shapes


def _expand_weight(weight: Tensor | None, target: Tensor):
    if weight is None:
        return None
    shape = broadcast_shapes(tuple(weight.shape), tuple(target.shape))
    if shape != tuple(target.shape):
        raise RuntimeError(
            f"The size of tensor a ({weight.shape[-1]}) must match the size of tensor b "
            f"({target.shape[-1]}) at non-singleton dimension {len(shape) - 1}"
        )
    return weight.detach()


class BinaryCrossEntropyBackward0(PointwiseLossNode):
    def d_input(self, x, t):
        # d/dx -(t log x + (1-t) log(1-x)) = (x - t) / (x (1 - x)), guarded at 0 and 1
        d = (x - t) / clamp((1 - x) * x, min=1e-12)
        return d * self.weight if self.weight is not None else d

    def d_target(self, x, t):
        d = clamp((1 - x).log(), min=-100.0) - clamp(x.log(), min=-100.0)
        return d * self.weight if self.weight is not None else d


def binary_cross_entropy(
    input: Tensor,
    target: Tensor,
    weight: Tensor | None = None,
    size_average=None,
    reduce=None,
    reduction: str = "mean",
) -> Tensor:
    """-w (y log x + (1 - y) log(1 - x)) for probabilities x, logs clamped at -100."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(
            f"Using a target size ({target.shape}) that is different to the input size "
            f"({input.shape}) is deprecated. Please ensure they have the same size."
        )
    if target.dtype != input.dtype:
        raise RuntimeError(
            f"Found dtype {target.dtype.legacy_name} but expected {input.dtype.legacy_name}"
        )
    check_reduction(reduction)
    refuse_grad("binary_cross_entropy", "weight", weight)
    weight = _expand_weight(weight, target)
    x, t = input._data, target._data
    xp = array_module(x)
    if x.size and bool(((x < 0) | (x > 1)).any()):
        raise RuntimeError("all elements of input should be between 0 and 1")
    with errstate(xp, divide="ignore"):
        log_p = xp.maximum(xp.log(x), -100)
        log_q = xp.maximum(xp.log1p(-x), -100)
    terms = -(t * log_p + (1 - t) * log_q)
    if weight is not None:
        terms = terms * weight._data
    return pointwise_loss(
        BinaryCrossEntropyBackward0, input, target, terms, reduction, weight=weight
    )


def _bce_logits_fused(x, t, weight: Tensor | None, pos_weight: Tensor | None):
    """(kernels, name, arrays, has_pw) of the compiled BCE-on-logits for ``x`` and ``t``, with
    ``weight`` / ``pos_weight`` broadcast to x's shape (of x's dtype), or None: the formula."""
    kernels = _loss_kernels(x, t)
    if kernels is None:
        return None
    if weight is None and pos_weight is None:
        return kernels, "bce_logits", (x, t), ()
    xp = array_module(x)
    full = []
    for extra in (weight, pos_weight):
        if extra is None:
            full.append(x)  # a stand-in the kernel does not read (pos_weight) / ones (weight)
            continue
        data = extra._data
        if data.__class__ is not x.__class__ or data.dtype != x.dtype or data.ndim > x.ndim:
            return None
        if broadcast_shapes(data.shape, x.shape) != x.shape:
            return None
        full.append(data if data.shape == x.shape else xp.broadcast_to(data, x.shape))
    if weight is None:
        full[0] = xp.ones(x.shape, x.dtype)
    return kernels, "weighted_bce_logits", (x, t, *full), (pos_weight is not None,)


class BinaryCrossEntropyWithLogitsBackward0(PointwiseLossNode):
    sigmoid_of_x = None  # σ(x), kept by the compiled float32 forward

    def backward(self, g):
        if grad_state.enabled:  # create_graph: the formula in ember ops, differentiable again
            return super().backward(g)
        x, t = self.unpack_saved()
        fused = _bce_logits_fused(x._data, t._data, self.weight, self.pos_weight)
        if fused is None:
            return super().backward(g)
        kernels, name, arrays, flags = fused
        one = x._data.dtype.type(1)
        if self.sigmoid_of_x is not None:  # σ(x) from the forward: one cheap pass
            arrays = (self.sigmoid_of_x, t._data)
            gx = _fused_loss_backward(self, kernels, "bce_logits_saved", arrays, (), g, CHEAP_SPAN)
        else:
            gx = _fused_loss_backward(self, kernels, name, arrays, (one, *flags), g, COSTLY_SPAN)
        if gx is None:
            return super().backward(g)
        gt = None
        if self._edges[1] is not None:  # rare: the target's formula in ember ops
            gt = super().backward(g)[1]
        return wrap(gx), gt

    def d_input(self, x, t):
        pw = self.pos_weight
        if pw is None:
            d = sigmoid(x) - t
        else:  # d/dx (1-t) x + (1 + (pw-1) t) softplus(-x)
            d = (1 - t) - ((pw - 1) * t + 1) * sigmoid(-x)
        return d * self.weight if self.weight is not None else d

    def d_target(self, x, t):
        pw = self.pos_weight
        d = -x
        if pw is not None:
            d = d + (pw - 1) * ((-x.abs()).exp().log1p() + clamp(-x, min=0.0))
        return d * self.weight if self.weight is not None else d


def binary_cross_entropy_with_logits(
    input: Tensor,
    target: Tensor,
    weight: Tensor | None = None,
    size_average=None,
    reduce=None,
    reduction: str = "mean",
    pos_weight: Tensor | None = None,
) -> Tensor:
    """BCE on logits, computed as (1-y) x + softplus(-x) so it never overflows."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(
            f"Target size ({target.shape}) must be the same as input size ({input.shape})"
        )
    if not target.is_floating_point():
        raise RuntimeError(
            f"result type {input.dtype.legacy_name} can't be cast to the desired output type "
            f"{target.dtype.legacy_name}"
        )
    check_reduction(reduction)
    refuse_grad("binary_cross_entropy_with_logits", "weight", weight)
    refuse_grad("binary_cross_entropy_with_logits", "pos_weight", pos_weight)
    input, target = promote("binary_cross_entropy_with_logits", input, target)
    x, t = input._data, target._data
    fused = _bce_logits_fused(x, t, weight, pos_weight)
    if fused is not None:  # one pass, no temporaries
        kernels, name, arrays, flags = fused
        one = x.dtype.type(1)
        sigmoid_of_x, outputs = None, ()
        if name == "bce_logits" and x.dtype.char == "f" and input._rg and grad_state.enabled:
            # float32: keep σ(x), so the backward computes no exp
            name, sigmoid_of_x = "bce_logits_keep", array_module(x).empty(x.shape, x.dtype)
            outputs = (sigmoid_of_x.reshape(-1),)
        out = _fused_loss_forward(
            kernels, name, arrays, (one, *flags), reduction, COSTLY_SPAN, outputs
        )
        return result(
            BinaryCrossEntropyWithLogitsBackward0,
            out,
            (input, target),
            (input, target),
            reduction=reduction,
            count=x.size,
            weight=None if weight is None else weight.detach(),
            pos_weight=None if pos_weight is None else pos_weight.detach(),
            sigmoid_of_x=sigmoid_of_x,
        )
    softplus_neg = softplus_array(array_module(x), -x)
    if pos_weight is not None:
        pos_weight = pos_weight.detach()
        terms = (1 - t) * x + ((pos_weight._data - 1) * t + 1) * softplus_neg
    else:
        terms = (1 - t) * x + softplus_neg
    if weight is not None:
        weight = weight.detach()
        terms = terms * weight._data
    return pointwise_loss(
        BinaryCrossEntropyWithLogitsBackward0,
        input,
        target,
        terms.astype(x.dtype, copy=False),
        reduction,
        weight=weight,
        pos_weight=pos_weight,
    )


class LogSoftmaxRowsBackward(LogSoftmaxBackward0):
    """log-softmax over the classes of (N, C) logits computed by ``loss_jit``'s row kernels
    (cross-entropy's first node, under torch's name). The forward keeps the softmax
    (``probs``, one array of the logits' size) so that the backward, one row kernel when no
    graph is built, needs no exp; with a graph it is log-softmax's formula."""

    torch_name = "LogSoftmaxBackward0"

    def backward(self, g):
        y = self.saved_output()._data  # raises if the output was modified in place
        if not grad_state.enabled:
            probs = self.probs
            kernels = _loss_kernels(g._data, probs)
            if kernels is not None:
                xp = array_module(probs)
                out = xp.empty(probs.shape, probs.dtype)
                grad = xp.ascontiguousarray(g._data)
                jit.parallel_for(
                    kernels.log_softmax_backward_rows, y.shape[0], grad, probs, out,
                    min_chunk=_row_span(y, cheap=True),
                )  # fmt: skip
                return wrap(out)
        return super().backward(g)


def _row_span(array, cheap: bool = False) -> int:
    """Rows a thread takes at least (a pass with an exp an element is costly, one without is
    cheap)."""
    return max(1, (CHEAP_SPAN if cheap else COSTLY_SPAN) // max(array.shape[1], 1))


def log_softmax_classes(input: Tensor, class_dim: int) -> Tensor:
    """``log_softmax(input, class_dim)``: for (N, C) float logits of finite row maxima, one
    compiled pass a row (exp, sum, log, shift) instead of NumPy's six."""
    data = input._data
    if data.ndim == 2 and class_dim == 1:
        kernels = _loss_kernels(data)
        if kernels is not None:
            xp = array_module(data)
            top = data.max(axis=1)
            if xp.isfinite(top).all():  # else the general path's infinities and NaNs
                logits = xp.ascontiguousarray(data)
                out = xp.empty(data.shape, data.dtype)
                keep = bool(input._rg and grad_state.enabled)
                probs = xp.empty(data.shape if keep else (1, 1), data.dtype)
                kernel = getattr(kernels, f"log_softmax_rows_{data.dtype.name}")
                jit.parallel_for(
                    kernel, data.shape[0], logits, top, out, probs, keep,
                    min_chunk=_row_span(data),
                )  # fmt: skip
                return result(
                    LogSoftmaxRowsBackward,
                    out,
                    (input,),
                    save_output=True,
                    dim=1,
                    dim_arg=1,
                    probs=probs,
                )
    return log_softmax(input, class_dim)


# the profiler shows it as "log_softmax" inside cross_entropy, as torch's shows aten::log_softmax
named(log_softmax_classes, "log_softmax")


def cross_entropy(
    input: Tensor,
    target: Tensor,
    weight: Tensor | None = None,
    size_average=None,
    ignore_index: int = -100,
    reduce=None,
    reduction: str = "mean",
    label_smoothing: float = 0.0,
) -> Tensor:
    """Softmax cross-entropy with class indices or class probabilities as ``target``.

    The class axis is dim 1 (dim 0 for a single unbatched sample); any further dims are
    spatial (K-dimensional loss)."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    check_reduction(reduction)
    if not 0.0 <= label_smoothing <= 1.0:
        raise RuntimeError(f"label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}")
    data = input._data
    if target._data.__class__ is not data.__class__:
        check_same_device("cross_entropy", input, target)
    if weight is not None and weight._data.__class__ is not data.__class__:
        check_same_device("cross_entropy", input, weight)
    cupy = _backend._cupy
    if cupy is not None and data.__class__ is cupy.ndarray:
        from . import cuda_fused as fused_ops

        fused = fused_ops.cross_entropy(
            input, target, weight, ignore_index, reduction, label_smoothing
        )
        if fused is not None:  # (N, C) logits and class indices: one CUDA kernel
            return fused
    class_dim = 1 if input.dim() > 1 else 0
    classes = input.shape[class_dim] if input.dim() else 1
    if weight is not None and (weight.dim() != 1 or weight.numel() != classes):
        raise RuntimeError(
            f"weight tensor should be defined either for all {classes} classes or no classes "
            f"but got weight tensor of shape: {list(weight.shape)}"
        )
    # as torch: a target of the input's shape holds class probabilities, any other class indices
    if tuple(target.shape) == tuple(input.shape):
        if not target.is_floating_point():
            raise RuntimeError(
                "Expected floating point type for target with class probabilities, got "
                f"{target.dtype.legacy_name}"
            )
        if ignore_index >= 0:
            raise RuntimeError("ignore_index is not supported for floating point target")
    log_probs = log_softmax_classes(input, class_dim)
    w_shape = [1] * input.dim()
    w_shape[class_dim] = classes
    if tuple(target.shape) == tuple(input.shape):  # class probabilities
        if label_smoothing > 0:
            target = target * (1 - label_smoothing) + label_smoothing / classes
        terms = log_probs * target
        if weight is not None:
            terms = terms * weight.reshape(w_shape)
        loss = -terms.sum(class_dim)
        if reduction == "mean":
            return loss.sum() / (input.numel() // classes if input.numel() else 1)
        return _reduce(loss, reduction)
    nll = nll_loss(log_probs, target, weight, ignore_index=ignore_index, reduction=reduction)
    if label_smoothing == 0:
        return nll
    ignored = target == ignore_index
    terms = log_probs * weight.reshape(w_shape) if weight is not None else log_probs
    smooth = (-terms.sum(class_dim)).masked_fill(ignored, 0.0)
    if reduction == "mean":
        if weight is not None:
            smooth = smooth.sum() / weight[target.masked_select(~ignored)].sum()
        else:
            smooth = smooth.sum() / (~ignored).sum()
    else:
        smooth = _reduce(smooth, reduction)
    return nll * (1 - label_smoothing) + smooth * (label_smoothing / classes)


def multilabel_soft_margin_loss(
    input: Tensor,
    target: Tensor,
    weight: Tensor | None = None,
    size_average=None,
    reduce=None,
    reduction: str = "mean",
) -> Tensor:
    """Per-class logistic loss, averaged over the classes (the last dim)."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    loss = -(target * logsigmoid(input) + (1 - target) * logsigmoid(-input))
    if weight is not None:
        loss = loss * weight
    class_dim = input.dim() - 1
    loss = loss.sum(class_dim) / input.shape[class_dim]
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(reduction + " is not valid")
    return _reduce(loss, reduction)


def linear_cross_entropy(
    input: Tensor,
    linear_weight: Tensor,
    target: Tensor,
    *,
    linear_bias: Tensor | None = None,
    weight: Tensor | None = None,
    reduction: str = "mean",
    ignore_index: int | None = None,
    label_smoothing: float = 0.0,
    options=None,
) -> Tensor:
    """``cross_entropy(linear(input, linear_weight, linear_bias), target, ...)``.

    A (C, d1, ..., dK, in_features) weight gives K-dimensional logits. ``options`` (PyTorch's
    chunking, which saves memory and gives the same values) is accepted; ember always computes
    the reference form."""
    from .linalg import linear

    if input.dim() < 1 or input.dim() > 2:
        raise RuntimeError(f"expected input with dimensionality 1 or 2, got {input.dim()}")
    if linear_weight.dim() < 2:
        raise RuntimeError(
            f"expected linear_weight with dimensionality at least 2, got {linear_weight.dim()}"
        )
    batches, in_features = tuple(input.shape[:-1]), input.shape[-1]
    if in_features != linear_weight.shape[-1]:
        raise RuntimeError(
            "expected equal input and linear_weight last dimensions (in_features), got "
            f"{in_features} and {linear_weight.shape[-1]}, respectively"
        )
    classes = linear_weight.shape[0]
    out_features = tuple(linear_weight.shape[1:-1])
    if linear_bias is not None and tuple(linear_bias.shape) != (classes, *out_features):
        raise RuntimeError(
            f"expected linear_bias shape {(classes, *out_features)}, got {tuple(linear_bias.shape)}"
        )
    if out_features and not batches:
        raise RuntimeError(
            f"K-dimensional loss defined by linear_weight shape {tuple(linear_weight.shape)} "
            f"requires batched input, (N, {in_features}), got unbatched input with shape "
            f"{tuple(input.shape)}"
        )
    logits_shape = (*batches, classes, *out_features)
    if tuple(target.shape) == logits_shape and ignore_index is not None:
        raise RuntimeError("ignore_index cannot be specified when target contains probabilities")
    rows = classes * math.prod(out_features)
    logits = linear(
        input,
        linear_weight.reshape(rows, in_features),
        linear_bias.reshape(rows) if linear_bias is not None else None,
    ).reshape(logits_shape)
    return cross_entropy(
        logits,
        target,
        weight=weight,
        reduction=reduction,
        ignore_index=-100 if ignore_index is None else ignore_index,
        label_smoothing=label_smoothing,
    )
