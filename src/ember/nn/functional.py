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
from ..ops.distance import cosine_similarity, pairwise_distance, pdist
from ..ops.elementwise import clamp, where
from ..ops.elementwise import sigmoid as _sigmoid
from ..ops.elementwise import tanh as _tanh
from ..ops.indexing import pad
from ..ops.linalg import linear
from ..ops.loss import legacy_reduction
from ..ops.loss_classification import (
    binary_cross_entropy,
    binary_cross_entropy_with_logits,
    cross_entropy,
    multilabel_soft_margin_loss,
)
from ..ops.loss_ctc import ctc_loss
from ..ops.loss_margin import (
    cosine_embedding_loss,
    hinge_embedding_loss,
    margin_ranking_loss,
    multi_margin_loss,
    multilabel_margin_loss,
    soft_margin_loss,
    triplet_margin_loss,
    triplet_margin_with_distance_loss,
)
from ..ops.loss_regression import (
    gaussian_nll_loss,
    huber_loss,
    kl_div,
    l1_loss,
    mse_loss,
    poisson_nll_loss,
    smooth_l1_loss,
)
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


def normalize(input: Tensor, p: float = 2.0, dim: int = 1, eps: float = 1e-12) -> Tensor:
    return input / clamp(input.norm(p, dim, keepdim=True), min=eps)


# --- losses (in ember.ops.loss*, one node each where PyTorch has one) ---------------------
_legacy_reduction = legacy_reduction


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
    reduction = legacy_reduction(size_average, reduce, reduction)
    return _loss_ops.nll_loss(input, target, weight, ignore_index, reduction)


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
