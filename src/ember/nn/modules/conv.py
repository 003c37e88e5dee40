"""Convolution layers: Conv1d/2d/3d and ConvTranspose1d/2d/3d (PyTorch's init and repr)."""

from __future__ import annotations

import math

from ...ops import conv as conv_ops
from .. import functional as F
from .. import init
from .linear import _empty_weight_and_bias
from .module import Module


def _tuple(value, n: int) -> tuple:
    return tuple(value) if isinstance(value, (tuple, list)) else (value,) * n


class _ConvNd(Module):
    _dims = 2
    _transposed = False

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size,
        stride=1,
        padding=0,
        dilation=1,
        groups: int = 1,
        bias: bool = True,
        padding_mode: str = "zeros",
        device=None,
        dtype=None,
        *,
        output_padding=0,
    ):
        super().__init__()
        n = self._dims
        if in_channels % groups:
            raise ValueError("in_channels must be divisible by groups")
        if out_channels % groups:
            raise ValueError("out_channels must be divisible by groups")
        if groups <= 0:
            raise ValueError("groups must be a positive integer")
        if isinstance(padding, str):
            if padding not in ("same", "valid"):
                raise ValueError(
                    f"Invalid padding string {padding!r}, should be one of {{'valid', 'same'}}"
                )
            if padding == "same" and any(s != 1 for s in _tuple(stride, n)):
                raise ValueError("padding='same' is not supported for strided convolutions")
        if padding_mode not in ("zeros", "reflect", "replicate", "circular"):
            raise ValueError(
                f"padding_mode must be one of 'zeros', 'reflect', 'replicate' or "
                f"'circular', but got padding_mode='{padding_mode}'"
            )
        self.in_channels, self.out_channels, self.groups = in_channels, out_channels, groups
        self.kernel_size = _tuple(kernel_size, n)
        self.stride = _tuple(stride, n)
        self.padding = padding if isinstance(padding, str) else _tuple(padding, n)
        self.dilation = _tuple(dilation, n)
        self.output_padding = _tuple(output_padding, n)
        self.padding_mode = padding_mode
        self.transposed = self._transposed
        _empty_weight_and_bias(self, self._weight_shape(), (out_channels,), bias, device, dtype)
        self.reset_parameters()

    def _weight_shape(self) -> tuple:
        """(in, out / groups, *kernel) for a transposed convolution, else (out, in / groups,
        *kernel): PyTorch's layout of the weight."""
        if self._transposed:
            return (self.in_channels, self.out_channels // self.groups) + self.kernel_size
        return (self.out_channels, self.in_channels // self.groups) + self.kernel_size

    def reset_parameters(self) -> None:
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in, _ = init._calculate_fan_in_and_fan_out(self.weight)
            if fan_in:
                bound = 1 / math.sqrt(fan_in)
                init.uniform_(self.bias, -bound, bound)

    def _padded(self, input):
        """The input padded by ``padding_mode`` (non-zero modes) and the padding left to conv."""
        if self.padding_mode == "zeros":
            return input, self.padding
        if self.padding == "valid":
            return input, 0
        if self.padding == "same":
            pairs = []
            for k, d in zip(self.kernel_size, self.dilation):
                total = d * (k - 1)
                pairs.append((total // 2, total - total // 2))
        else:
            pairs = [(p, p) for p in self.padding]
        pads = []
        for lo, hi in reversed(pairs):
            pads += [lo, hi]
        return F.pad(input, pads, mode=self.padding_mode), 0

    def _conv_forward(self, input, weight, bias):
        x, padding = self._padded(input)
        return self._conv(x, weight, bias, self.stride, padding, self.dilation, self.groups)

    def forward(self, input):
        return self._conv_forward(input, self.weight, self.bias)

    def extra_repr(self) -> str:
        n = self._dims
        s = (
            f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
            f"stride={self.stride}"
        )
        if self.padding != (0,) * n:
            s += f", padding={self.padding}"
        if self.dilation != (1,) * n:
            s += f", dilation={self.dilation}"
        if self.output_padding != (0,) * n:
            s += f", output_padding={self.output_padding}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += f", padding_mode={self.padding_mode}"
        return s


class Conv1d(_ConvNd):
    """1-D convolution over (N, C, L); padding may be 'same' or 'valid'."""

    _dims = 1
    _conv = staticmethod(conv_ops.conv1d)


class Conv2d(_ConvNd):
    """2-D convolution over (N, C, H, W); padding may be 'same' or 'valid'."""

    _conv = staticmethod(conv_ops.conv2d)


class Conv3d(_ConvNd):
    """3-D convolution over (N, C, D, H, W); padding may be 'same' or 'valid'."""

    _dims = 3
    _conv = staticmethod(conv_ops.conv3d)


class _ConvTransposeNd(_ConvNd):
    _transposed = True

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size,
        stride=1,
        padding=0,
        output_padding=0,
        groups: int = 1,
        bias: bool = True,
        dilation=1,
        padding_mode: str = "zeros",
        device=None,
        dtype=None,
    ):
        if padding_mode != "zeros":
            raise ValueError(
                f'Only "zeros" padding mode is supported for {self.__class__.__name__}'
            )
        super().__init__(
            in_channels,
            out_channels,
            kernel_size,
            stride,
            padding,
            dilation,
            groups,
            bias,
            padding_mode,
            device,
            dtype,
            output_padding=output_padding,
        )

    def _output_padding(self, input, output_size) -> tuple:
        """The output_padding that makes the output ``output_size`` (PyTorch's rule)."""
        n = self._dims
        if output_size is None:
            return self.output_padding
        size = list(output_size)
        if len(size) == n + 2 or (len(size) == n + 1 and input.dim() == n + 1):
            size = size[-n:]
        if len(size) != n:
            raise ValueError(
                f"ConvTranspose{n}D: for {input.dim()}D input, output_size must have {n} or "
                f"{n + 2} elements (got {len(output_size)})"
            )
        extra = []
        for d in range(n):
            in_size = input.shape[input.dim() - n + d]
            smallest = (
                (in_size - 1) * self.stride[d]
                - 2 * self.padding[d]
                + self.dilation[d] * (self.kernel_size[d] - 1)
                + 1
            )
            largest = smallest + self.stride[d] - 1
            if not smallest <= size[d] <= largest:
                raise ValueError(
                    f"requested an output size of {size}, but valid sizes range from "
                    f"{smallest} to {largest} (for an input of {list(input.shape[2:])})"
                )
            extra.append(size[d] - smallest)
        return tuple(extra)

    def forward(self, input, output_size=None):
        output_padding = self._output_padding(input, output_size)
        return self._conv(
            input,
            self.weight,
            self.bias,
            self.stride,
            self.padding,
            output_padding,
            self.groups,
            self.dilation,
        )


class ConvTranspose1d(_ConvTransposeNd):
    """The adjoint of Conv1d (a "deconvolution") over (N, C, L)."""

    _dims = 1
    _conv = staticmethod(conv_ops.conv_transpose1d)


class ConvTranspose2d(_ConvTransposeNd):
    """The adjoint of Conv2d over (N, C, H, W)."""

    _conv = staticmethod(conv_ops.conv_transpose2d)


class ConvTranspose3d(_ConvTransposeNd):
    """The adjoint of Conv3d over (N, C, D, H, W)."""

    _dims = 3
    _conv = staticmethod(conv_ops.conv_transpose3d)
