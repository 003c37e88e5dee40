"""Identity, Linear and Bilinear layers."""

from __future__ import annotations

import math

from ... import _creation
from .. import functional as F
from .. import init
from ..parameter import Parameter
from .module import Module


def _empty_weight_and_bias(
    module: Module, weight_shape: tuple, bias_shape: tuple, bias: bool, device, dtype
) -> None:
    """Register an uninitialised ``weight`` and, if ``bias``, ``bias`` (else None in its place),
    in that order, for the layer's ``reset_parameters`` to fill."""
    module.weight = Parameter(_creation.empty(*weight_shape, device=device, dtype=dtype))
    if bias:
        module.bias = Parameter(_creation.empty(*bias_shape, device=device, dtype=dtype))
    else:
        module.register_parameter("bias", None)


class Identity(Module):
    """Returns its input unchanged (arguments are accepted and ignored)."""

    def __init__(self, *args, **kwargs):
        super().__init__()

    def forward(self, input):
        return input


class Linear(Module):
    """y = x Wᵀ + b, initialised as PyTorch initialises it.

    Example::
        >>> layer = ember.nn.Linear(3, 2)
        >>> layer(ember.ones(4, 3)).shape
        ember.Size([4, 2])
    """

    def __init__(
        self, in_features: int, out_features: int, bias: bool = True, device=None, dtype=None
    ):
        super().__init__()
        self.in_features = in_features
        self.out_features = out_features
        _empty_weight_and_bias(
            self, (out_features, in_features), (out_features,), bias, device, dtype
        )
        self.reset_parameters()

    def reset_parameters(self) -> None:
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in = self.in_features
            bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input):
        return F.linear(input, self.weight, self.bias)

    def extra_repr(self) -> str:
        return (
            f"in_features={self.in_features}, out_features={self.out_features}, "
            f"bias={self.bias is not None}"
        )


class NonDynamicallyQuantizableLinear(Linear):
    """PyTorch's name for the attention output projection (a plain Linear); it lives here as
    in torch, where checkpoints and ``torch.serialization.add_safe_globals`` name it."""


class Bilinear(Module):
    """y = x₁ᵀ A x₂ + b for each output feature."""

    def __init__(
        self,
        in1_features: int,
        in2_features: int,
        out_features: int,
        bias: bool = True,
        device=None,
        dtype=None,
    ):
        super().__init__()
        self.in1_features, self.in2_features = in1_features, in2_features
        self.out_features = out_features
        weight_shape = (out_features, in1_features, in2_features)
        _empty_weight_and_bias(self, weight_shape, (out_features,), bias, device, dtype)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        bound = 1 / math.sqrt(self.weight.shape[1])
        init.uniform_(self.weight, -bound, bound)
        if self.bias is not None:
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input1, input2):
        return F.bilinear(input1, input2, self.weight, self.bias)

    def extra_repr(self) -> str:
        return (
            f"in1_features={self.in1_features}, in2_features={self.in2_features}, "
            f"out_features={self.out_features}, bias={self.bias is not None}"
        )
