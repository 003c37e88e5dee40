"""ember.nn.functional: the functional forms of layers, activations and losses.

Everything here composes differentiable ember ops (softmax and log-softmax have fused stable
kernels in ``ember.ops.activation``), so every loss supports double backward.
"""

from __future__ import annotations

import warnings

from .. import _creation
from .._tensor import Tensor
from ..ops import activation as _activation
from ..ops import loss as _loss_ops
from ..ops.activation import (
    celu,
    celu_,
    elu,
    elu_,
    gelu,
    glu,
    hardshrink,
    hardsigmoid,
    hardswish,
    hardtanh,
    hardtanh_,
    leaky_relu,
    leaky_relu_,
    logsigmoid,
    mish,
    prelu,
    relu,
    relu6,
    relu_,
    rrelu,
    rrelu_,
    selu,
    selu_,
    silu,
    softplus,
    softshrink,
    softsign,
    tanhshrink,
    threshold,
    threshold_,
)
from ..ops.conv import (
    adaptive_avg_pool2d,
    avg_pool1d,
    avg_pool2d,
    conv1d,
    conv2d,
    conv_transpose2d,
    fold,
    max_pool1d,
    max_pool2d,
    unfold,
)
from ..ops.elementwise import clamp, where
from ..ops.elementwise import sigmoid as _sigmoid
from ..ops.elementwise import tanh as _tanh
from ..ops.indexing import pad
from ..ops.linalg import linear
from ._functional_sequence import *  # noqa: F403  (attention, rnn helpers, ...)
from ._functional_spatial import *  # noqa: F403  (conv3d, pools, interpolate, ...)


def _softmax_dim(name: str, input: Tensor, dim):
    """PyTorch's legacy choice of dim when none is given, with its deprecation warning."""
    if dim is not None:
        return dim
    warnings.warn(
        f"Implicit dimension choice for {name} has been deprecated. Change the call to include "
        "dim=X as an argument.",
        stacklevel=3,
    )
    return 0 if input.dim() in (0, 1, 3) else 1


def softmax(input: Tensor, dim=None, _stacklevel: int = 3, dtype=None) -> Tensor:
    """exp(x) / Σ exp(x) along ``dim``."""
    return _activation.softmax(input, _softmax_dim("softmax", input, dim), dtype)


def softmin(input: Tensor, dim=None, _stacklevel: int = 3, dtype=None) -> Tensor:
    """softmax(-x) along ``dim``."""
    return _activation.softmin(input, _softmax_dim("softmin", input, dim), dtype)


def log_softmax(input: Tensor, dim=None, _stacklevel: int = 3, dtype=None) -> Tensor:
    """log(softmax(x)) along ``dim``, computed stably."""
    return _activation.log_softmax(input, _softmax_dim("log_softmax", input, dim), dtype)


def sigmoid(input: Tensor) -> Tensor:
    """1 / (1 + e^-x)."""
    return _sigmoid(input)


def tanh(input: Tensor) -> Tensor:
    """Hyperbolic tangent."""
    return _tanh(input)


def bilinear(input1: Tensor, input2: Tensor, weight: Tensor, bias: Tensor | None = None):
    from ..ops.linalg import einsum

    out = einsum("...i,oij,...j->...o", input1, weight, input2)
    return out + bias if bias is not None else out


def dropout(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False):
    """Zero each element with probability p and scale the rest by 1/(1-p) while training."""
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if not training or p == 0.0:
        return input
    if p == 1.0:
        out = input * 0.0
    else:
        keep = _creation.bernoulli(
            _creation.full(tuple(input.shape), 1.0 - p, dtype=input.dtype, device=input.device)
        )
        out = input * (keep / (1.0 - p))
    return input.copy_(out) if inplace else out


def dropout2d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False):
    """Zero whole channels (dim 1) of an (N, C, H, W) or (C, H, W) input."""
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if not training or p == 0.0:
        return input
    batched = input.dim() == 4
    shape = tuple(input.shape[:2]) + (1, 1) if batched else (input.shape[0], 1, 1)
    keep = _creation.bernoulli(_creation.full(shape, 1.0 - p, dtype=input.dtype))
    out = input * (keep / (1.0 - p)) if p < 1.0 else input * 0.0
    return input.copy_(out) if inplace else out


def one_hot(tensor: Tensor, num_classes: int = -1) -> Tensor:
    if tensor.dtype.name != "int64":
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    if num_classes == -1:
        num_classes = int(tensor.max().item()) + 1 if tensor.numel() else 0
    eye = _creation.eye(num_classes, dtype=tensor.dtype, device=tensor.device)
    return eye[tensor]


def cosine_similarity(x1: Tensor, x2: Tensor, dim: int = 1, eps: float = 1e-8) -> Tensor:
    dot = (x1 * x2).sum(dim)
    n1 = clamp(x1.norm(dim=dim), min=eps)
    n2 = clamp(x2.norm(dim=dim), min=eps)
    return dot / (n1 * n2)


def normalize(input: Tensor, p: float = 2.0, dim: int = 1, eps: float = 1e-12) -> Tensor:
    return input / clamp(input.norm(p, dim, keepdim=True), min=eps)


# --- losses -----------------------------------------------------------------------------------
def _legacy_reduction(size_average, reduce, reduction: str) -> str:
    """PyTorch's deprecated ``size_average``/``reduce`` pair, turned into ``reduction``."""
    if size_average is None and reduce is None:
        return reduction
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    if not reduce:
        return "none"
    return "mean" if size_average else "sum"


def _reduce(loss: Tensor, reduction: str) -> Tensor:
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    if reduction == "none":
        return loss
    raise ValueError(f"{reduction} is not a valid value for reduction")


def _check_same_size(op: str, input: Tensor, target: Tensor) -> None:
    if tuple(input.shape) != tuple(target.shape):
        import warnings

        warnings.warn(
            f"Using a target size ({target.shape}) that is different to the input size "
            f"({input.shape}). This will likely lead to incorrect results due to broadcasting. "
            "Please ensure they have the same size.",
            stacklevel=3,
        )


def mse_loss(input: Tensor, target: Tensor, reduction: str = "mean", weight=None) -> Tensor:
    _check_same_size("mse_loss", input, target)
    diff = input - target
    return _reduce(diff * diff, reduction)


def l1_loss(input: Tensor, target: Tensor, reduction: str = "mean") -> Tensor:
    _check_same_size("l1_loss", input, target)
    return _reduce((input - target).abs(), reduction)


def smooth_l1_loss(
    input: Tensor, target: Tensor, reduction: str = "mean", beta: float = 1.0
) -> Tensor:
    if beta < 0:
        raise RuntimeError("smooth_l1_loss does not support negative values for beta.")
    d = (input - target).abs()
    if beta == 0:
        return _reduce(d, reduction)
    return _reduce(where(d < beta, d * d * (0.5 / beta), d - 0.5 * beta), reduction)


def huber_loss(
    input: Tensor, target: Tensor, reduction: str = "mean", delta: float = 1.0
) -> Tensor:
    d = (input - target).abs()
    return _reduce(where(d < delta, d * d * 0.5, (d - 0.5 * delta) * delta), reduction)


def _class_dim_gather(log_probs: Tensor, target: Tensor) -> Tensor:
    """log_probs[n, target[n], ...]: the class axis is dim 1 (or 0 for a single sample)."""
    if log_probs.dim() == 1:
        return log_probs.gather(0, target.reshape(1)).reshape(())
    return log_probs.gather(1, target.unsqueeze(1)).squeeze(1)


def nll_loss(
    input: Tensor,
    target: Tensor,
    weight: Tensor | None = None,
    size_average=None,
    ignore_index: int = -100,
    reduce=None,
    reduction: str = "mean",
) -> Tensor:
    """Negative log-likelihood of ``target`` classes under log-probabilities ``input``."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    return _loss_ops.nll_loss(input, target, weight, ignore_index, reduction)


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
    """Softmax cross-entropy with class indices or class probabilities as ``target``."""
    if not 0.0 <= label_smoothing <= 1.0:
        raise ValueError(f"label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}")
    class_dim = 1 if input.dim() > 1 else 0
    log_probs = log_softmax(input, class_dim)
    classes = input.shape[class_dim]
    w_shape = [1] * input.dim()
    w_shape[class_dim] = classes
    if target.is_floating_point():  # class probabilities
        if tuple(target.shape) != tuple(input.shape):
            raise RuntimeError(
                f"Expected target size {list(input.shape)}, got {list(target.shape)}"
            )
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


def binary_cross_entropy(
    input: Tensor,
    target: Tensor,
    weight: Tensor | None = None,
    size_average=None,
    reduce=None,
    reduction: str = "mean",
) -> Tensor:
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(
            f"Using a target size ({target.shape}) that is different to the input size "
            f"({input.shape}) is deprecated. Please ensure they have the same size."
        )
    # PyTorch clamps the logs at -100 so that 0 and 1 give finite losses
    log_p = clamp(input.log(), min=-100.0)
    log_q = clamp((1 - input).log(), min=-100.0)
    loss = -(target * log_p + (1 - target) * log_q)
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


def binary_cross_entropy_with_logits(
    input: Tensor,
    target: Tensor,
    weight=None,
    size_average=None,
    reduce=None,
    reduction: str = "mean",
    pos_weight: Tensor | None = None,
) -> Tensor:
    """BCE on logits, computed as log(1 + e^-|x|) + max(-x, 0) so it never overflows."""
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(
            f"Target size ({target.shape}) must be the same as input size ({input.shape})"
        )
    softplus_neg = (-input.abs()).exp().log1p() + clamp(-input, min=0.0)
    if pos_weight is not None:
        log_weight = (pos_weight - 1) * target + 1
        loss = (1 - target) * input + log_weight * softplus_neg
    else:
        loss = (1 - target) * input + softplus_neg
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


def kl_div(
    input: Tensor,
    target: Tensor,
    size_average=None,
    reduce=None,
    reduction: str = "mean",
    log_target: bool = False,
) -> Tensor:
    if log_target:
        loss = target.exp() * (target - input)
    else:
        loss = where(target > 0, target * (target.clamp(min=1e-45).log() - input), target * 0.0)
    if reduction == "batchmean":
        return loss.sum() / (input.shape[0] if input.dim() else 1)
    return _reduce(loss, reduction)


def cosine_embedding_loss(
    input1: Tensor,
    input2: Tensor,
    target: Tensor,
    margin: float = 0.0,
    size_average=None,
    reduce=None,
    reduction: str = "mean",
) -> Tensor:
    eps = 1e-12  # PyTorch's EPSILON in this loss
    dim = input1.dim() - 1
    dot = (input1 * input2).sum(dim)
    mag = ((input1 * input1).sum(dim) + eps) * ((input2 * input2).sum(dim) + eps)
    cos = dot / mag.sqrt()
    loss = where(target == 1, 1 - cos, where(target == -1, clamp(cos - margin, min=0.0), cos * 0.0))
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
    return _reduce(clamp(-target * (input1 - input2) + margin, min=0.0), reduction)


# --- convolution, pooling, normalisation, embedding --------------------------------------


def batch_norm(
    input: Tensor,
    running_mean,
    running_var,
    weight=None,
    bias=None,
    training: bool = False,
    momentum: float = 0.1,
    eps: float = 1e-5,
) -> Tensor:
    """Normalise over the batch (and spatial) dims; in training, update the running stats."""
    from ..autograd.grad_mode import no_grad

    dims = (0,) + tuple(range(2, input.dim()))
    shape = [1] * input.dim()
    shape[1] = input.shape[1]
    if training:
        count = input.numel() // input.shape[1]
        if count <= 1:
            raise ValueError(
                f"Expected more than 1 value per channel when training, got input size "
                f"{list(input.shape)}"
            )
        mean = input.mean(dims)
        var = input.var(dims, correction=0)
        if running_mean is not None:
            with no_grad():
                running_mean.mul_(1 - momentum).add_(mean._detach() * momentum)
                running_var.mul_(1 - momentum).add_(
                    var._detach() * (momentum * count / (count - 1))
                )
    else:
        mean, var = running_mean, running_var
    out = (input - mean.reshape(shape)) / (var.reshape(shape) + eps).sqrt()
    if weight is not None:
        out = out * weight.reshape(shape)
    if bias is not None:
        out = out + bias.reshape(shape)
    return out


def layer_norm(
    input: Tensor, normalized_shape, weight=None, bias=None, eps: float = 1e-5
) -> Tensor:
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    if tuple(input.shape[input.dim() - len(shape) :]) != shape:
        raise RuntimeError(
            f"Given normalized_shape={list(shape)}, expected input with shape [*, "
            f"{', '.join(str(s) for s in shape)}], but got input of size{list(input.shape)}"
        )
    dims = tuple(range(input.dim() - len(shape), input.dim()))
    mean = input.mean(dims, keepdim=True)
    var = input.var(dims, keepdim=True, correction=0)
    out = (input - mean) / (var + eps).sqrt()
    if weight is not None:
        out = out * weight
    if bias is not None:
        out = out + bias
    return out


def group_norm(input: Tensor, num_groups: int, weight=None, bias=None, eps: float = 1e-5) -> Tensor:
    n, c = input.shape[:2]
    if c % num_groups:
        raise RuntimeError(
            f"Expected number of channels in input to be divisible by num_groups, but got input "
            f"of shape {list(input.shape)} and num_groups={num_groups}"
        )
    grouped = input.reshape(n, num_groups, -1)
    mean = grouped.mean(2, keepdim=True)
    var = grouped.var(2, keepdim=True, correction=0)
    out = ((grouped - mean) / (var + eps).sqrt()).reshape(input.shape)
    shape = [1] * input.dim()
    shape[1] = c
    if weight is not None:
        out = out * weight.reshape(shape)
    if bias is not None:
        out = out + bias.reshape(shape)
    return out


def embedding(
    input: Tensor,
    weight: Tensor,
    padding_idx=None,
    max_norm=None,
    norm_type: float = 2.0,
    scale_grad_by_freq: bool = False,
    sparse: bool = False,
) -> Tensor:
    """Rows of ``weight`` picked by ``input``; the padding row receives no gradient."""
    if input.dtype.name not in ("int64", "int32"):
        raise RuntimeError(
            "Expected tensor for argument #1 'indices' to have one of the following scalar "
            f"types: Long, Int; but got {input.dtype.legacy_name} instead"
        )
    if max_norm is not None:
        from ..autograd.grad_mode import no_grad

        with no_grad():
            rows = weight[input.reshape(-1)]
            norms = rows.norm(norm_type, dim=1, keepdim=True)
            scale = (max_norm / (norms + 1e-7)).clamp(max=1.0)
            weight[input.reshape(-1)] = rows * scale
    out = weight.index_select(0, input.reshape(-1)).reshape(tuple(input.shape) + (weight.shape[1],))
    if padding_idx is not None:
        if padding_idx < 0:
            padding_idx += weight.shape[0]
        keep = (input != padding_idx).unsqueeze(-1)
        out = where(keep, out, out._detach())
    return out
