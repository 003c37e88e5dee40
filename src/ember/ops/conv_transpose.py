"""Transposed convolutions (``conv_transpose1d/2d/3d``): the adjoint of a convolution.

Of float32/float64 NumPy arrays, one node whose forward is the chunked pipeline's input
gradient and whose backward is its forward and weight gradient
(:mod:`ember._kernels.conv_transposed`); otherwise (CuPy, and double backward) a GEMM to
columns and their col2im (``fold_windows``), differentiated as a composite.
"""

from __future__ import annotations

import math

from .. import _backend, _dtype
from .._kernels import conv_transposed
from .._tensor import Tensor
from ._composite import composite
from ._dispatch import array_module, grad_state, record, wrap
from ._recorded import kernel_call as _kernel_call
from .conv import (
    HALF_TYPES,
    ConvolutionBackward0,
    ConvolutionOneGemmBackward0,
    _batched,
    _check_devices,
    _check_weight,
    _conv_param,
    _PipelineCall,
    _pipelined,
    check_conv_bias,
    check_conv_dilation,
    check_conv_params,
    fold_windows,
    in_float32,
)


def _conv_transpose_nd(
    input, weight, bias, stride, padding, output_padding, groups, dilation, nd: int, op: str
):
    x, unbatched = _batched(input, nd, op)
    _check_weight(x, weight, nd, op)
    _check_devices(x, weight, bias)
    if isinstance(padding, str):
        raise RuntimeError(f"{op}: padding='{padding}' is not supported for transposed convolution")
    in_ch, out_per_group = weight.shape[:2]
    kernel = tuple(weight.shape[2:])
    n, c = x.shape[:2]
    size = tuple(x.shape[2:])
    if c != in_ch:
        raise RuntimeError(
            f"Given transposed=1, weight of size {list(weight.shape)}, expected input"
            f"{list(x.shape)} to have {in_ch} channels, but got {c} channels instead"
        )
    if in_ch % groups:
        raise RuntimeError(
            f"Given groups={groups}, expected weight to be divisible by {groups} at dimension 0, "
            f"but got weight of size {list(weight.shape)} instead"
        )
    dim = weight.dim() - 2
    stride, dilation = (
        _conv_param(stride, nd, dim, "stride"),
        _conv_param(dilation, nd, dim, "dilation"),
    )
    pad = _conv_param(padding, nd, dim, "padding")
    out_pad = _conv_param(output_padding, nd, dim, "output_padding")
    check_conv_params(stride, pad, dilation, out_pad)
    check_conv_bias(weight, bias, out_per_group * groups, transposed=True)
    check_conv_dilation(dilation, transposed=True)
    for op_, s, d in zip(out_pad, stride, dilation):
        if op_ >= s and op_ >= d:
            raise RuntimeError(
                "output padding must be smaller than either stride or dilation, but got "
                f"output_padding: {list(out_pad)}, stride: {list(stride)}, "
                f"dilation: {list(dilation)}"
            )
    out = tuple(
        (sz - 1) * s - 2 * p + d * (k - 1) + op_ + 1
        for sz, s, p, d, k, op_ in zip(size, stride, pad, dilation, kernel, out_pad)
    )
    if any(o <= 0 for o in out):
        raise RuntimeError(
            f"Given input size per channel: {list(size)}. Calculated output size per channel: "
            f"{list(out)}. Output size is too small"
        )
    if x.dtype in HALF_TYPES and _rounds_once(x.dtype, stride, out_pad, groups, in_ch):
        arguments = (stride, pad, out_pad, groups, dilation, nd, op)
        return composite(
            ConvolutionBackward0,
            lambda *inputs: in_float32(_conv_transpose_nd, inputs, *arguments),
            (input, weight, bias),
        )
    taps = out_per_group * math.prod(kernel)
    pads = tuple((p, p - op_) for p, op_ in zip(pad, out_pad))

    def compute(input, weight, bias):
        x = input.unsqueeze(0) if unbatched else input
        xs = x.reshape(n, groups, in_ch // groups, math.prod(size))
        wmat = weight.reshape(groups, in_ch // groups, taps).transpose(1, 2)
        cols = (wmat @ xs).reshape((n, groups * out_per_group) + kernel + size)
        y = fold_windows(cols, out, kernel, stride, pads, dilation)
        if bias is not None:
            y = y + bias.reshape((1, -1) + (1,) * nd)
        return y.squeeze(0) if unbatched else y

    data = input._data[None] if unbatched else input._data
    if _pipelined(array_module(data), data, weight._data, bias):
        geometry = (kernel, stride, pads, dilation, groups)
        return _conv_transpose_pipelined(input, weight, bias, compute, unbatched, geometry, out)
    return composite(ConvolutionBackward0, compute, (input, weight, bias))


def _rounds_once(dtype, stride, output_padding, groups: int, in_channels: int) -> bool:
    """Whether torch's CPU transposed convolution of this half type rounds its result once:
    through oneDNN, where the CPU has oneDNN's kernels for the type (bfloat16: AVX-512 BW, VL
    and DQ; float16: AVX512-FP16) and the geometry is one oneDNN takes (no output padding of
    a stride or more, not depthwise). Its fallback adds col2im's windows in the half type,
    each sum rounded, which ember's composite does in the same order."""
    if any(p >= s for p, s in zip(output_padding, stride)):
        return False
    if groups > 1 and groups == in_channels:
        return False
    features = _backend.cpu_features()
    if dtype == _dtype.bfloat16:
        return all(features.get(f, False) for f in ("AVX512BW", "AVX512VL", "AVX512DQ"))
    return features.get("AVX512FP16", False)


class ConvolutionTransposeBackward0(ConvolutionOneGemmBackward0):
    """A transposed convolution as one node: its backward is a convolution of the output
    gradient (the input gradient) and a convolution's weight gradient, by
    :mod:`ember._kernels.conv_transposed`; under ``create_graph``, the composite's."""

    pipelined = True
    torch_name = "ConvolutionBackward0"
    torch_saved = {
        **ConvolutionOneGemmBackward0.torch_saved,
        "transposed": ("value", True),
        "output_padding": lambda node: getattr(node, "output_padding", (0,) * len(node.stride)),
    }

    def _pipeline_backward_call(self, x, weight, gd, needs) -> tuple:
        geometry = (self.kernel, self.stride, self.pads, self.dilation, self.groups)
        return _PipelineCall(conv_transposed.backward), (x, weight, gd, *geometry, *needs)


def _conv_transpose_pipelined(input, weight, bias, compute, unbatched, geometry, out):
    """A transposed convolution of float32/float64 NumPy arrays, chunk by chunk, as one
    node; ``geometry``: the kernel, stride, the convolution's pads, dilation and groups."""
    inputs = (input, weight, bias)
    x = input._data[None] if unbatched else input._data
    xp = array_module(x)
    b = None if bias is None else bias._data
    call = _PipelineCall(conv_transposed.forward)
    (y,) = _kernel_call(xp, call, x, weight._data, b, *geometry, out)
    if unbatched:
        y = y[0]
    if not (grad_state.enabled and any(t is not None and t._rg for t in inputs)):
        return wrap(y)
    node = ConvolutionTransposeBackward0()
    node.compute, node.unbatched = compute, unbatched
    node.kernel, node.stride, node.pads, node.dilation, node.groups = geometry
    return record(node, y, inputs, saved=inputs)


def conv_transpose1d(
    input: Tensor,
    weight: Tensor,
    bias: Tensor | None = None,
    stride=1,
    padding=0,
    output_padding=0,
    groups: int = 1,
    dilation=1,
) -> Tensor:
    """The adjoint of conv1d over (N, C, L): scatter each input position through the kernel."""
    return _conv_transpose_nd(
        input,
        weight,
        bias,
        stride,
        padding,
        output_padding,
        groups,
        dilation,
        1,
        "conv_transpose1d",
    )


def conv_transpose2d(
    input: Tensor,
    weight: Tensor,
    bias: Tensor | None = None,
    stride=1,
    padding=0,
    output_padding=0,
    groups: int = 1,
    dilation=1,
) -> Tensor:
    """The adjoint of conv2d: scatter each input pixel through the kernel (col2im)."""
    return _conv_transpose_nd(
        input,
        weight,
        bias,
        stride,
        padding,
        output_padding,
        groups,
        dilation,
        2,
        "conv_transpose2d",
    )


def conv_transpose3d(
    input: Tensor,
    weight: Tensor,
    bias: Tensor | None = None,
    stride=1,
    padding=0,
    output_padding=0,
    groups: int = 1,
    dilation=1,
) -> Tensor:
    """The adjoint of conv3d over (N, C, D, H, W)."""
    return _conv_transpose_nd(
        input,
        weight,
        bias,
        stride,
        padding,
        output_padding,
        groups,
        dilation,
        3,
        "conv_transpose3d",
    )
