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

import math

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
    new arrays, d input, d weight and d bias, each only where wanted (``bias``: whether).

    Both come from the columns of ``g`` (the convolution's input), unfolded once per chunk:
    d input = W @ columns (the convolution's forward), d W = Σ x @ columns.T."""
    conv_input, conv_pads = _cropped(g, pads)
    grads = []
    if need_input or need_weight:
        geometry = (kernel, stride, conv_pads, dilation)
        grads += _from_columns(x, weight, conv_input, geometry, groups, need_input, need_weight)
    if bias:
        grads.append(g.sum(axis=(0,) + tuple(range(2, g.ndim))))
    return tuple(grads)


def _from_columns(x, weight, conv_input, geometry, groups, need_input, need_weight):
    n, in_ch = x.shape[:2]
    group_in = in_ch // groups
    taps = weight[0].size
    positions = math.prod(x.shape[2:])
    wmats = weight.reshape(groups, group_in, taps)
    x_rows = x.reshape(n, groups, group_in, positions)
    gx = np.empty(x.shape, x.dtype) if need_input else None
    gx_rows = gx.reshape(n, groups, group_in, positions) if need_input else None
    nb = conv_pipeline._chunk_images(groups * taps * positions * x.itemsize)
    channels = conv_input.shape[1]

    def work(start, stop, nb):
        nb = max(1, min(nb, stop - start))
        unfold = conv_pipeline._Unfold(nb, channels, conv_input.shape[2:], *geometry, x.dtype)
        gw = np.zeros((groups, group_in, taps), np.float64)
        products = np.empty((nb,) + gw.shape, x.dtype)
        for s in range(start, stop, nb):
            e = min(s + nb, stop)
            cols = unfold(conv_input[s:e]).reshape(e - s, groups, taps, positions)
            if need_input:
                np.matmul(wmats, cols, out=gx_rows[s:e])
            if need_weight:
                part = np.matmul(x_rows[s:e], cols.swapaxes(2, 3), out=products[: e - s])
                gw += part.sum(axis=0, dtype=np.float64) if e - s > 1 else part[0]
        return gw

    parts = conv_pipeline._over_images(work, n, nb)
    grads = [gx] if need_input else []
    if need_weight:
        gw = parts[0]
        for part in parts[1:]:
            gw += part
        grads.append(gw.astype(x.dtype).reshape(weight.shape))
    return grads
