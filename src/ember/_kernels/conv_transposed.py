"""Transposed convolutions of NumPy arrays as the adjoint of :mod:`conv_pipeline`'s convolution.

A transposed convolution of ``x`` by ``weight`` (C_in, O/groups, *K) is the input gradient of
the convolution whose weight is ``weight`` (C_in output channels, O input channels), taken
with ``x`` as that convolution's output gradient; its own backward is that convolution's
forward (the input gradient) and its weight gradient (the weight's). Both run chunk by chunk
on ember's threads, as the convolution does, instead of a col2im of the whole batch's columns.

``pads`` are the convolution's: (p, p - output_padding) per dim, the upper one negative where
output_padding exceeds padding (the convolution then ignores the output's last rows).
"""

from __future__ import annotations

import numpy as np

from . import conv_pipeline


def _stand_in(shape, dtype):
    """A zero-strided array of ``shape``: the convolution's input, whose values the input
    gradient alone never reads (only its shape and dtype)."""
    return np.broadcast_to(np.zeros((), dtype), shape)


def forward(x, weight, bias, kernel, stride, pads, dilation, groups, size):
    """(N, C_in, *S) ``x`` transposed-convolved to a new (N, O, *size) array (+ ``bias``)."""
    out_ch = weight.shape[1] * groups
    conv_input = _stand_in((x.shape[0], out_ch) + tuple(size), x.dtype)
    geometry = (kernel, stride, pads, dilation)
    (y,) = conv_pipeline.backward(conv_input, weight, x, *geometry, True, False, False, groups)
    if bias is not None:
        y += bias.reshape((out_ch,) + (1,) * len(kernel))
    return (y,)


def _cropped(g, pads):
    """``g`` without the rows a negative upper padding leaves out, and the padding then."""
    if all(hi >= 0 for _, hi in pads):
        return g, pads
    crop = tuple(slice(0, hi if hi < 0 else None) for _, hi in pads)
    return g[(slice(None), slice(None)) + crop], tuple((lo, max(hi, 0)) for lo, hi in pads)


def backward(x, weight, g, kernel, stride, pads, dilation, groups, need_input, need_weight, bias):
    """Gradients of :func:`forward` for the (N, O, *size) output gradient ``g``: a tuple of
    new arrays, d input, d weight and d bias, each only where wanted (``bias``: whether)."""
    conv_input, conv_pads = _cropped(g, pads)
    geometry = (kernel, stride, conv_pads, dilation)
    grads = []
    if need_input:
        wmat = weight.reshape(weight.shape[0], -1)
        grads.append(conv_pipeline.forward(conv_input, wmat, None, *geometry, groups)[0])
    if need_weight:
        args = (conv_input, weight, x, *geometry, False, True, False, groups)
        grads.append(conv_pipeline.backward(*args)[0])
    if bias:
        grads.append(g.sum(axis=(0,) + tuple(range(2, g.ndim))))
    return tuple(grads)
