"""``torch.ops.aten``: the ATen operators that programs (and PyTorch's own tests) call by name,
``torch.ops.aten.<op>.default(...)``, for those ember has.

Each name is an overload packet as in PyTorch: calling it or its ``.default`` runs the op.
"""

from __future__ import annotations

from .. import _creation
from .._tensor import Tensor
from ..autograd import forward_rules
from ..autograd.node import Node
from ._dispatch import result
from .pooling_2d import max_unpool


class OpOverloadPacket:
    """One ATen operator: callable, with its ``default`` overload."""

    __slots__ = ("__name__", "default")

    def __init__(self, fn):
        self.default = fn
        self.__name__ = fn.__name__

    def __call__(self, *args, **kwargs):
        return self.default(*args, **kwargs)

    def __repr__(self) -> str:
        return f"ember.ops.aten.{self.__name__}"


class MaxPool2DWithIndicesBackwardBackward0(Node):
    """The gradient of max pooling's backward: for grad_output, the pooled positions of the
    incoming gradient (through max_unpool's own backward); for the input, zero (torch's
    ``zeros_like(self)``: the result does not depend on its values)."""

    def backward(self, g):
        return g, _creation.zeros(self.input_shape, dtype=self.input_dtype, device=g.device)


def _max_pool_backward_jvp(node, tangents):
    """The node passes input 0 through; a tangent of the input alone gives torch's zeros."""
    spread, of_input = tangents
    if spread is None and of_input is not None:
        return _creation.zeros(node.input_shape, dtype=node.input_dtype, device=of_input.device)
    return spread


forward_rules.RULES[MaxPool2DWithIndicesBackwardBackward0.__name__] = _max_pool_backward_jvp


def max_pool2d_with_indices_backward(
    grad_output: Tensor,
    self: Tensor,
    kernel_size,
    stride,
    padding,
    dilation,
    ceil_mode: bool,
    indices: Tensor,
) -> Tensor:
    """max_pool2d's gradient: each grad_output element added at the input position its
    maximum came from (``indices``); shaped like ``self`` ((N, C, H, W) or (C, H, W))."""
    unbatched = self.dim() == 3
    shape = (1, *self.shape) if unbatched else tuple(self.shape)
    grad = grad_output.unsqueeze(0) if unbatched else grad_output
    index = indices._data[None] if unbatched else indices._data
    spread = max_unpool(grad, index, shape, True)
    if unbatched:
        spread = spread.squeeze(0)
    return result(
        MaxPool2DWithIndicesBackwardBackward0,
        spread._data,
        (spread, self),
        input_shape=tuple(self.shape),
        input_dtype=self.dtype,
    )


max_pool2d_with_indices_backward = OpOverloadPacket(max_pool2d_with_indices_backward)
