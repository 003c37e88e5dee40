"""ember.nn.functional: the functional forms of layers, activations and losses.

Everything here is built on differentiable ember ops, so every function supports double
backward. Some are one fused node with its own kernels: softmax, log-softmax and the
activations (``ember.ops.activation``), layer, batch and group norm
(``ember.ops.normalization``); their backward formulas are written again in ember ops for
``create_graph``.
"""

from __future__ import annotations

import math
import warnings

from .. import _creation
from .._tensor import Tensor
from ..ops import activation as _activation
from ..ops import normalization as _normalization
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
from ..ops.conv import conv1d, conv2d, conv_transpose2d, fold, unfold
from ..ops.distance import cosine_similarity, pairwise_distance, pdist
from ..ops.dropout import dropout, dropout2d
from ..ops.elementwise import clamp, where
from ..ops.elementwise import sigmoid as _sigmoid
from ..ops.elementwise import tanh as _tanh
from ..ops.indexing import pad
from ..ops.linalg import linear
from ..ops.loss import legacy_reduction, nll_loss
from ..ops.loss_classification import (
    binary_cross_entropy,
    binary_cross_entropy_with_logits,
    cross_entropy,
    linear_cross_entropy,
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
from ..ops.pooling_2d import adaptive_avg_pool2d, avg_pool1d, avg_pool2d, max_pool1d, max_pool2d
from ._functional_random import rrelu, rrelu_

# The losses and distances live in ember.ops (one file per family), rrelu in
# _functional_random; like PyTorch's, they present themselves under their public module,
# where tools that walk this namespace (the profiler's op list) look for them.
for _fn in (
    rrelu,
    rrelu_,
    binary_cross_entropy,
    binary_cross_entropy_with_logits,
    cross_entropy,
    linear_cross_entropy,
    multilabel_soft_margin_loss,
    nll_loss,
    ctc_loss,
    cosine_embedding_loss,
    hinge_embedding_loss,
    margin_ranking_loss,
    multi_margin_loss,
    multilabel_margin_loss,
    soft_margin_loss,
    triplet_margin_loss,
    triplet_margin_with_distance_loss,
    gaussian_nll_loss,
    huber_loss,
    kl_div,
    l1_loss,
    mse_loss,
    poisson_nll_loss,
    smooth_l1_loss,
    cosine_similarity,
    pairwise_distance,
    pdist,
):
    _fn.__module__ = __name__
del _fn

from ._functional_sequence import *  # noqa: F403, E402  (attention, rnn helpers, ...)
from ._functional_spatial import *  # noqa: F403, E402  (conv3d, pools, interpolate, ...)


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
    """y[..., o] = Σ_ij x1[..., i] W[o, i, j] x2[..., j] + b[o]."""
    from ..ops.linalg import einsum

    if input1.dim() != input2.dim():
        raise RuntimeError(
            f"bilinear(): input dimensions do not match: got {input1.dim()} and {input2.dim()}"
        )
    for d in range(input1.dim() - 1):
        if input1.shape[d] != input2.shape[d]:
            raise RuntimeError(
                f"bilinear(): input batch dimensions do not match at dim {d}: got "
                f"{input1.shape[d]} and {input2.shape[d]}"
            )
    if weight.dim() != 3:
        raise RuntimeError(f"bilinear(): weight must be 3-dimensional, got {weight.dim()}")
    if input1.shape[-1] != weight.shape[1]:
        raise RuntimeError(
            f"bilinear(): input1 size does not match weight size: got {input1.shape[-1]} but "
            f"expected {weight.shape[1]}"
        )
    if input2.shape[-1] != weight.shape[2]:
        raise RuntimeError(
            f"bilinear(): input2 size does not match weight size: got {input2.shape[-1]} but "
            f"expected {weight.shape[2]}"
        )
    if bias is not None and bias.numel() != weight.shape[0]:
        raise RuntimeError(
            f"bilinear(): bias size does not match weight size: got {bias.numel()} but "
            f"expected {weight.shape[0]}"
        )
    if input1.dtype.name == "bfloat16":  # NumPy's einsum has no bfloat16: float32, rounded once
        out = einsum("...i,oij,...j->...o", input1.float(), weight.float(), input2.float())
        out = out + bias.float() if bias is not None else out
        return out.to(input1.dtype)
    out = einsum("...i,oij,...j->...o", input1, weight, input2)
    return out + bias if bias is not None else out


def one_hot(tensor: Tensor, num_classes: int = -1) -> Tensor:
    """int64 one-hot vectors of ``num_classes`` (inferred as max + 1 when -1) along a new last
    dim."""
    if tensor.dtype.name != "int64":
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    if tensor.is_meta and num_classes > 0:  # no values to check (as torch)
        pass
    elif tensor.numel():
        if int(tensor.min().item()) < 0:
            raise RuntimeError("Class values must be non-negative.")
        largest = int(tensor.max().item())
        if num_classes == -1:
            num_classes = largest + 1
        elif largest >= num_classes:
            raise RuntimeError("Class values must be smaller than num_classes.")
    elif num_classes <= 0:
        raise RuntimeError("Can not infer total number of classes from empty tensor.")
    eye = _creation.eye(num_classes, dtype=tensor.dtype, device=tensor.device)
    return eye[tensor]


def gumbel_softmax(
    logits: Tensor, tau: float = 1, hard: bool = False, eps: float = 1e-10, dim: int = -1
) -> Tensor:
    """Samples from the Gumbel-softmax distribution; ``hard=True`` gives one-hot samples whose
    gradient is that of the soft sample (straight-through)."""
    if eps != 1e-10:
        warnings.warn("`eps` parameter is deprecated and has no effect.", stacklevel=2)
    # -log(E) with E ~ Exp(1) is Gumbel(0, 1); drawn as torch draws it, into a C-contiguous
    # tensor (its legacy_contiguous_format) whatever the logits' strides
    noise = _creation.empty(tuple(logits.shape), dtype=logits.dtype, device=logits.device)
    gumbels = -noise.exponential_().log()
    y_soft = _activation.softmax((logits + gumbels) / tau, dim)
    if not hard:
        return y_soft
    index = y_soft.max(dim, keepdim=True)[1]
    y_hard = _creation.zeros_like(logits).scatter(dim, index, value=1.0)
    return y_hard - y_soft.detach() + y_soft


def normalize(
    input: Tensor, p: float = 2.0, dim: int = 1, eps: float = 1e-12, out: Tensor | None = None
) -> Tensor:
    """input / max(||input||_p, eps) along ``dim``."""
    # torch's steps (and so its graph): norm, clamp_min, expand_as, div
    result = input / input.norm(p, dim, keepdim=True).clamp_min(eps).expand_as(input)
    return out.copy_(result) if out is not None else result


# the losses live in ember.ops.loss*; the loss modules read the legacy arguments through this
_legacy_reduction = legacy_reduction


# --- convolution, pooling, normalisation, embedding --------------------------------------


def batch_norm(
    input: Tensor,
    running_mean: Tensor | None,
    running_var: Tensor | None,
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    training: bool = False,
    momentum: float = 0.1,
    eps: float = 1e-5,
) -> Tensor:
    """Normalise over the batch (and spatial) dims; in training, update the running stats.

    >>> x = ember.tensor([[1.0], [3.0]])
    >>> F.batch_norm(x, None, None, training=True)
    tensor([[-1.0000],
            [ 1.0000]])
    """
    if training:
        size = input.shape
        if math.prod(tuple(size)[:1] + tuple(size)[2:]) == 1:  # one value per channel
            raise ValueError(
                f"Expected more than 1 value per channel when training, got input size {size}"
            )
    if training and eps <= 0.0:
        raise ValueError(f"batch_norm eps must be positive during training, but got {eps}")
    if eps < 0.0:
        raise ValueError(f"batch_norm eps must be non-negative, but got {eps}")
    if input.numel() == 0:  # as torch: a copy (not a view, so the graph goes on), no statistics
        out = input.clone()
        if weight is not None:
            out = out * weight[0]
        return out + bias[0] if bias is not None else out
    out, _, _ = _normalization.native_batch_norm(
        input, weight, bias, running_mean, running_var, training, momentum, eps
    )
    return out


def layer_norm(
    input: Tensor,
    normalized_shape,
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    eps: float = 1e-5,
) -> Tensor:
    """Normalise over the trailing ``normalized_shape`` dims, then scale and shift.

    >>> F.layer_norm(ember.tensor([[1.0, 3.0]]), (2,), eps=0.0)
    tensor([[-1.,  1.]])
    """
    return _normalization.native_layer_norm(input, normalized_shape, weight, bias, eps)[0]


def group_norm(
    input: Tensor,
    num_groups: int,
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    eps: float = 1e-5,
) -> Tensor:
    """Normalise each group of ``C // num_groups`` channels of (N, C, *) input per sample.

    >>> F.group_norm(ember.tensor([[1.0, 3.0]]), 1, eps=0.0)
    tensor([[-1.,  1.]])
    """
    if input.dim() < 2:
        raise RuntimeError(
            f"Expected at least 2 dimensions for input tensor but received {input.dim()}"
        )
    n, c = input.shape[:2]
    if c % num_groups:
        raise RuntimeError(
            f"Expected number of channels in input to be divisible by num_groups, but got input "
            f"of shape {list(input.shape)} and num_groups={num_groups}"
        )
    # PyTorch names the weight's shape in both messages ([0] when there is no weight)
    shown = list(weight.shape) if weight is not None else [0]
    for name, p in (("weight", weight), ("bias", bias)):
        if p is not None and (p.dim() != 1 or p.numel() != c):
            raise RuntimeError(
                f"Expected {name} to be a vector of size equal to the number of channels in "
                f"input, but got {name} of shape {shown} and input of shape {list(input.shape)}"
            )
    hw = input.numel() // (n * c) if n * c else math.prod(input.shape[2:])
    return _normalization.native_group_norm(input, weight, bias, n, c, hw, num_groups, eps)[0]


def embedding(
    input: Tensor,
    weight: Tensor,
    padding_idx: int | None = None,
    max_norm: float | None = None,
    norm_type: float = 2.0,
    scale_grad_by_freq: bool = False,
    sparse: bool = False,
) -> Tensor:
    """Rows of ``weight`` picked by ``input``; the padding row receives no gradient, and
    ``sparse=True`` gives ``weight`` a sparse gradient (see ``ember.ops.embedding``)."""
    from ..ops.embedding import embedding as _embedding

    if sparse:
        from .. import sparse as _sparse  # noqa: F401 - installs the sparse gradient's constructor
    return _embedding(input, weight, padding_idx, max_norm, norm_type, scale_grad_by_freq, sparse)


from .. import _out  # noqa: E402

_out.install(globals(), _out.NN_FUNCTIONAL_OUT_FUNCTIONS)  # out= where torch takes it
