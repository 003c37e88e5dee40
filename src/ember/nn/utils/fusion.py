"""Fold an eval-mode BatchNorm into the convolution or linear layer before it."""

from __future__ import annotations

import copy

from ... import _creation
from ..._tensor import Tensor
from ...autograd.grad_mode import no_grad
from ..modules.module import Module
from ..parameter import Parameter

__all__ = [
    "fuse_conv_bn_eval",
    "fuse_conv_bn_weights",
    "fuse_linear_bn_eval",
    "fuse_linear_bn_weights",
]


def _as_fused_parameters(
    fused_w: Tensor, fused_b: Tensor, layer_w: Tensor, layer_b: Tensor | None
) -> tuple[Parameter, Parameter]:
    """The fused weight and bias as Parameters that require grad as PyTorch's do: the weight
    as the layer's weight did, the bias where the layer's weight or bias did."""
    bias_requires_grad = layer_b is not None and layer_b.requires_grad
    return (
        Parameter(fused_w, layer_w.requires_grad),
        Parameter(fused_b, bias_requires_grad or layer_w.requires_grad),
    )


def _copy_with_bn_folded_in(layer: Module, bn: Module, fuse_weights, *options) -> Module:
    """A copy of ``layer`` whose weight and bias ``fuse_weights`` has folded ``bn`` into."""
    if bn.running_mean is None or bn.running_var is None:
        raise AssertionError("BatchNorm without running statistics cannot be fused")
    fused = copy.deepcopy(layer)
    fused.weight, fused.bias = fuse_weights(
        fused.weight,
        fused.bias,
        bn.running_mean,
        bn.running_var,
        bn.eps,
        bn.weight,
        bn.bias,
        *options,
    )
    return fused


def fuse_conv_bn_weights(
    conv_w: Tensor,
    conv_b: Tensor | None,
    bn_rm: Tensor,
    bn_rv: Tensor,
    bn_eps: float,
    bn_w: Tensor | None,
    bn_b: Tensor | None,
    transpose: bool = False,
) -> tuple[Parameter, Parameter]:
    """Weight and bias of one conv equal to conv followed by BatchNorm (running stats)."""
    weight_dtype = conv_w.dtype
    bias_dtype = conv_b.dtype if conv_b is not None else weight_dtype
    with no_grad():
        bias = conv_b if conv_b is not None else _creation.zeros_like(bn_rm)
        bn_w = bn_w if bn_w is not None else _creation.ones_like(bn_rm)
        bn_b = bn_b if bn_b is not None else _creation.zeros_like(bn_rm)
        inv_std = (bn_rv + bn_eps).rsqrt()
        # out channels are dim 0 of a conv weight, dim 1 of a transposed conv's
        shape = ([1, -1] if transpose else [-1, 1]) + [1] * (conv_w.dim() - 2)
        fused_w = (conv_w * (bn_w * inv_std).reshape(shape)).to(weight_dtype)
        fused_b = ((bias - bn_rm) * inv_std * bn_w + bn_b).to(bias_dtype)
    return _as_fused_parameters(fused_w, fused_b, conv_w, conv_b)


def fuse_conv_bn_eval(conv: Module, bn: Module, transpose: bool = False) -> Module:
    """A copy of ``conv`` whose output equals ``bn(conv(x))`` in eval mode.

    Example::
        >>> conv, bn = ember.nn.Conv2d(3, 8, 3).eval(), ember.nn.BatchNorm2d(8).eval()
        >>> fused = fuse_conv_bn_eval(conv, bn)
    """
    if conv.training or bn.training:
        raise AssertionError("Fusion only for eval!")
    return _copy_with_bn_folded_in(conv, bn, fuse_conv_bn_weights, transpose)


def fuse_linear_bn_weights(
    linear_w: Tensor,
    linear_b: Tensor | None,
    bn_rm: Tensor,
    bn_rv: Tensor,
    bn_eps: float,
    bn_w: Tensor,
    bn_b: Tensor,
) -> tuple[Parameter, Parameter]:
    """Weight and bias of one Linear equal to Linear followed by BatchNorm (running stats)."""
    weight_dtype = linear_w.dtype
    bias_dtype = linear_b.dtype if linear_b is not None else weight_dtype
    with no_grad():
        bias = linear_b if linear_b is not None else _creation.zeros_like(bn_rm)
        scale = bn_w * (bn_rv + bn_eps).rsqrt()
        fused_w = linear_w * scale.unsqueeze(-1).to(weight_dtype)
        fused_b = ((bias - bn_rm) * scale + bn_b).to(bias_dtype)
    return _as_fused_parameters(fused_w, fused_b, linear_w, linear_b)


def fuse_linear_bn_eval(linear: Module, bn: Module) -> Module:
    """A copy of ``linear`` whose output equals ``bn(linear(x))`` in eval mode."""
    if linear.training or bn.training:
        raise AssertionError("Fusion only for eval!")
    if not (linear.out_features == bn.num_features or bn.num_features == 1):
        raise AssertionError(
            "To fuse, linear.out_features == bn.num_features or bn.num_features == 1"
        )
    return _copy_with_bn_folded_in(linear, bn, fuse_linear_bn_weights)
