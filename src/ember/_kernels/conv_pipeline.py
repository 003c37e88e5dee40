"""groups=1 convolutions of NumPy arrays a few images at a time, so that columns stay in cache.

One im2col of the whole batch writes columns nine times the input's size (75 MB for 64 x 32
channels x 32 x 32 and a 3x3 kernel) to main memory, and the GEMM reads them back. Here each
chunk of images (columns of about ``CHUNK_BYTES``) is unfolded and multiplied at once, into
its slice of the (N, O, *O) result: no transpose afterwards, and 20-30 % less CPU time for the
forward pass. The backward keeps no columns: chunk by chunk, it unfolds the output gradient
(padded) where the input gradient is its unit-stride convolution with the flipped kernel,
and takes the weight gradient from those columns too; otherwise it unfolds the input again
for the weight gradient and gets the input gradient as a GEMM to columns and their col2im.

The chunks are shared among ember's intra-op threads, one span of images each, with OpenBLAS
on one thread meanwhile: one hand-off per span instead of one per GEMM, and im2col and col2im
(plain NumPy copies) run on every core as well.

With compiled kernels on, unit-stride 2-D convolutions skip the columns where no weight
gradient needs them: :mod:`ember._kernels.conv_direct_jit` convolves each image in place (the
forward pass, and an input gradient wanted alone as the padded output gradient's convolution
with the flipped kernel), ~1.45x the GEMM's speed for 32 -> 32 channels at 32x32.
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from .. import _backend
from . import jit

# columns per chunk: an image or a few (the L2 is 512 KB a core, the L3 32 MB shared here)
CHUNK_BYTES = 1 << 20


def supports(x, weight) -> bool:
    """Whether the pipeline takes this convolution: plain float32/float64 NumPy arrays."""
    return (
        type(x) is np.ndarray
        and type(weight) is np.ndarray
        and x.dtype == weight.dtype
        and x.dtype.char in "fd"
    )


def output_size(size, kernel, stride, pads, dilation) -> tuple:
    return tuple(
        (sz + lo + hi - d * (k - 1) - 1) // s + 1
        for sz, k, s, (lo, hi), d in zip(size, kernel, stride, pads, dilation)
    )


class _Unfold:
    """im2col of chunks of images into one reused (nb, C, *K, *O) buffer; the zero frame of
    the padded copy is written once, only its inside is overwritten per chunk."""

    def __init__(self, nb, channels, size, kernel, stride, pads, dilation, dtype):
        self.out = output_size(size, kernel, stride, pads, dilation)
        padded = tuple(s + lo + hi for s, (lo, hi) in zip(size, pads))
        self.framed = None
        if any(lo or hi for lo, hi in pads):
            self.framed = np.zeros((nb, channels) + padded, dtype)
            self.inside = tuple(slice(lo, lo + s) for s, (lo, _) in zip(size, pads))
        self.cols = np.empty((nb, channels) + tuple(kernel) + self.out, dtype)
        self.windows = [
            (
                where,
                tuple(
                    slice(i * d, i * d + s * (n - 1) + 1, s)
                    for i, d, s, n in zip(where, dilation, stride, self.out)
                ),
            )
            for where in itertools.product(*(range(k) for k in kernel))
        ]

    def __call__(self, x):
        """(nb, C·∏K, ∏O) columns of the (nb, C, *S) chunk ``x``."""
        nb = x.shape[0]
        source = x
        if self.framed is not None:
            source = self.framed[:nb]
            source[(slice(None), slice(None)) + self.inside] = x
        cols = self.cols[:nb]
        for where, window in self.windows:
            cols[(slice(None), slice(None)) + where] = source[(slice(None), slice(None)) + window]
        return cols.reshape(nb, -1, math.prod(self.out))


def _chunk_images(per_image_bytes: int) -> int:
    return max(1, CHUNK_BYTES // max(1, per_image_bytes))


def _over_images(work, n: int, nb: int) -> list:
    """``work(start, stop, nb)`` over spans of the batch, one span per intra-op thread (each
    span at least one chunk), with OpenBLAS on one thread; returns the spans' results."""
    threads = min(_backend.get_num_threads(), -(-n // nb))
    if threads > 1 and _backend.numpy_blas() is None:
        threads = 1  # a BLAS we cannot hold to one thread: its own threads split each GEMM
    if threads < 2:
        return [work(0, n, nb)]
    step = -(-n // threads)
    spans = [(start, min(start + step, n), nb) for start in range(0, n, step)]
    return _backend.run_spans(work, spans)


class _DirectImage:
    """One image at a time through :func:`ember._kernels.conv_direct_jit.convolve_image`:
    the image is copied into a reused flat buffer inside its zero frame (written once), and
    the result is cropped from the kernel's grid of padded rows."""

    def __init__(self, module, channels, size, kernel, pads, dilation, packed, out_ch, dtype):
        self.module, self.kernel, self.dilation, self.out_ch = module, kernel, dilation, out_ch
        self.padded = tuple(s + lo + hi for s, (lo, hi) in zip(size, pads))
        self.out = output_size(size, kernel, (1, 1), pads, dilation)
        step = module.places_per_step(dtype)
        self.places = -(-self.out[0] * self.padded[1] // step) * step
        self.plane = math.prod(self.padded)
        slack = self.places - self.out[0] * self.padded[1] + (kernel[1] - 1) * dilation[1]
        self.framed = np.zeros(channels * self.plane + slack, dtype)
        frame = self.framed[: channels * self.plane].reshape((channels,) + self.padded)
        self.inside = frame[
            (slice(None),) + tuple(slice(lo, lo + s) for s, (lo, _) in zip(size, pads))
        ]
        self.packed = packed
        self.result = np.empty((packed.shape[0] * packed.shape[4], self.places), dtype)

    def __call__(self, image, out):
        """``out`` (O, *O) = the (C, *S) ``image`` convolved."""
        self.inside[...] = image
        row = self.padded[1]
        self.module.convolve_image(
            self.framed, self.plane, row, *self.kernel, *self.dilation, self.packed, self.result
        )
        rows = self.result[: self.out_ch, : self.out[0] * self.padded[1]]
        out[...] = rows.reshape(self.out_ch, self.out[0], self.padded[1])[:, :, : self.out[1]]


def _direct_module(x, kernel, stride, pads, groups, work):
    """conv_direct_jit where it takes this convolution (2-D, more than one tap, unit stride,
    groups=1, no negative padding, compiled kernels on and the call large enough), else None.
    Measured on 2 threads (AVX2 EPYC), forward: 1.45x the GEMM's speed for 32 -> 32 channels
    at 32x32, 1.1x for 64 -> 64 at 28x28; 1-D (64 -> 64, k=3, length 512) only equal, and
    1x1 kernels (whose columns are the input itself) half the GEMM's speed."""
    if groups != 1 or len(kernel) != 2 or math.prod(kernel) == 1 or any(s != 1 for s in stride):
        return None
    if any(lo < 0 or hi < 0 for lo, hi in pads) or x.dtype.char not in "fd":
        return None
    module = jit.module("conv_direct_jit", work)
    return module if module is not None and module.PAYS else None


def _as_2d(kernel, pads, dilation):
    """A 1-D convolution's geometry as a 2-D one's of height 1."""
    if len(kernel) == 2:
        return tuple(kernel), tuple(pads), tuple(dilation)
    return (1,) + tuple(kernel), ((0, 0),) + tuple(pads), (1,) + tuple(dilation)


def _pack_direct(module, weight4d):
    out_ch, channels = weight4d.shape[:2]
    blocks = -(-out_ch // module.BLOCK)
    packed = np.empty((blocks, channels) + weight4d.shape[2:] + (module.BLOCK,), weight4d.dtype)
    module.pack_weights(np.ascontiguousarray(weight4d), packed)
    return packed


def _direct_forward(module, x, weight4d, bias, kernel, pads, dilation, y):
    """``y`` = x convolved by the direct kernel, image by image over the intra-op threads."""
    n, c = x.shape[:2]
    packed = _pack_direct(module, weight4d)
    size = x.shape[2:] if x.ndim == 4 else (1,) + x.shape[2:]
    x4 = x.reshape((n, c) + size)
    y4 = y.reshape(y.shape[:2] + ((1,) if y.ndim == 3 else ()) + y.shape[2:])

    def work(start, stop, nb):
        direct = _DirectImage(module, c, size, kernel, pads, dilation, packed, y.shape[1], x.dtype)
        for i in range(start, stop):
            direct(x4[i], y4[i])
            if bias is not None:
                y4[i] += bias.reshape(-1, 1, 1)

    _over_images(work, n, 1)


def forward(x, wmat, bias, kernel, stride, pads, dilation, groups=1):
    """(N, C, *S) ``x`` convolved with the (O, C/groups·∏K) matrix ``wmat`` (+ ``bias``, (O,)
    or None): a new (N, O, *O) array. With ``groups``, the columns of each group's channels
    (a contiguous block of rows) meet their group's rows of ``wmat`` in one stacked GEMM."""
    n, c = x.shape[:2]
    out_ch, taps = wmat.shape
    out = output_size(x.shape[2:], kernel, stride, pads, dilation)
    y = np.empty((n, out_ch) + out, x.dtype)
    positions = math.prod(out)
    rows = y.reshape(n, groups, out_ch // groups, positions)
    wmats = wmat.reshape(groups, out_ch // groups, taps)
    module = _direct_module(x, kernel, stride, pads, groups, y.size)
    if module is not None:
        geometry = _as_2d(kernel, pads, dilation)
        weight4d = wmat.reshape((out_ch, c) + geometry[0])
        _direct_forward(module, x, weight4d, bias, *geometry, y)
        return (y,)
    nb = _chunk_images(groups * taps * positions * x.itemsize)

    def work(start, stop, nb):
        unfold = _Unfold(
            min(nb, stop - start), c, x.shape[2:], kernel, stride, pads, dilation, x.dtype
        )
        for s in range(start, stop, nb):
            e = min(s + nb, stop)
            cols = unfold(x[s:e]).reshape(e - s, groups, taps, positions)
            np.matmul(wmats, cols, out=rows[s:e])
            if bias is not None:
                rows[s:e] += bias.reshape(groups, -1, 1)

    _over_images(work, n, nb)
    return (y,)


def _unit_stride_transpose(stride, pads, dilation, kernel) -> bool:
    """Whether the output gradient, padded by d·(k-1) - p on each side (never negative),
    convolved at unit stride with the flipped kernel gives the input gradient."""
    return all(s == 1 for s in stride) and all(
        lo <= d * (k - 1) and hi <= d * (k - 1) for (lo, hi), d, k in zip(pads, dilation, kernel)
    )


def gradient_columns_pay(weight_shape, size, out, stride, pads, dilation, need_input) -> bool:
    """Whether the backward unfolds the output gradient (O·∏K rows over the input's
    positions) rather than the input (C·∏K rows over the output's). Measured, one thread:
    with the input gradient wanted, whenever the input has 16 channels or as many as the
    output (32 -> 32 at 32x32: 0.65x the time; 3 -> 32: 3.5x, its GEMM has 3 rows); for the
    weight gradient alone, when the gradient's columns are no larger."""
    out_ch, channels = weight_shape[:2]
    kernel = weight_shape[2:]
    if not _unit_stride_transpose(stride, pads, dilation, kernel):
        return False
    if need_input:
        return channels >= min(out_ch, 16)
    return out_ch * math.prod(size) <= channels * math.prod(out)


def backward(
    x, weight, g, kernel, stride, pads, dilation, need_input, need_weight, need_bias, groups=1
):
    """Gradients of :func:`forward` for the (N, O, *O) output gradient ``g``: a tuple of
    new arrays, d input, d weight and d bias, each only where its ``need_`` flag is set.

    Where the input gradient is a unit-stride convolution of ``g`` (padded), the columns of
    ``g`` give the weight gradient as well: dW[o, c, k] = Σ_q x[c, q] · gcols[o, flip(k), q]
    over input positions q, so the input is never unfolded again. With ``groups``, every
    GEMM is stacked over the groups (each a block of channels of ``x`` and of ``g``)."""
    nd = len(kernel)
    n, c = x.shape[:2]
    size = x.shape[2:]
    out_ch, group_in = weight.shape[:2]
    group_out = out_ch // groups
    taps = group_in * math.prod(kernel)
    out = tuple(g.shape[2:])
    g = np.ascontiguousarray(g)
    g_rows = g.reshape(n, groups, group_out, math.prod(out))
    wmats = weight.reshape(groups, group_out, taps)
    gx = np.empty(x.shape, x.dtype) if need_input else None
    gx_rows = gx.reshape(n, groups, group_in, math.prod(size)) if need_input else None
    group_shape = (group_out,) + tuple(weight.shape[1:])
    from_g = gradient_columns_pay(group_shape, size, out, stride, pads, dilation, need_input)
    g_taps = group_out * math.prod(kernel)
    if from_g:
        flipped = weight[(slice(None), slice(None)) + (slice(None, None, -1),) * nd]
        flipped = flipped.reshape((groups, group_out, group_in) + tuple(kernel)).swapaxes(1, 2)
        wflip = np.ascontiguousarray(flipped).reshape(groups, group_in, g_taps)  # (G, C/G, O/G·∏K)
        grad_pads = tuple(
            (d * (k - 1) - lo, d * (k - 1) - hi) for (lo, hi), d, k in zip(pads, dilation, kernel)
        )
    # the input gradient alone: g (padded) convolved with the flipped kernel, no columns; with
    # the weight gradient wanted too, g's columns are made anyway, and their GEMM for the input
    # gradient costs less than the direct kernel (measured: 22.4 vs 23.3 ms for conv2d-32)
    module = None
    if need_input and not need_weight:
        module = _direct_module(x, kernel, stride, pads, groups, x.size)
    if module is not None and from_g:
        geometry = _as_2d(kernel, grad_pads, dilation)
        wflip4d = wflip.reshape((c, out_ch) + geometry[0])
        _direct_forward(module, g, wflip4d, None, *geometry, gx)
        need_input = False
        if not need_weight:
            gb = g.reshape(n, out_ch, math.prod(out)).sum(axis=(0, 2)) if need_bias else None
            return tuple(a for a in (gx, gb) if a is not None)
    per_image = groups * (g_taps * math.prod(size) if from_g else taps * math.prod(out))
    nb = _chunk_images(per_image * x.itemsize)

    def work(start, stop, nb):
        nb = max(1, min(nb, stop - start))
        gw = np.zeros((groups,) + ((g_taps, group_in) if from_g else (group_out, taps)), np.float64)
        if from_g:
            unfold_g = _Unfold(nb, out_ch, out, kernel, (1,) * nd, grad_pads, dilation, x.dtype)
        elif need_weight:
            unfold = _Unfold(nb, c, size, kernel, stride, pads, dilation, x.dtype)
        if need_input and not from_g:
            fold = _Fold(nb, c, size, kernel, stride, pads, dilation, out, x.dtype)
            fold_cols = fold.cols.reshape(nb, groups, taps, -1)
        products = np.empty((nb,) + gw.shape, x.dtype)
        for s in range(start, stop, nb):
            e = min(s + nb, stop)
            if from_g:
                g_cols = unfold_g(g[s:e]).reshape(e - s, groups, g_taps, -1)  # (nb, G, ·, ∏S)
            if need_input and from_g:
                np.matmul(wflip, g_cols, out=gx_rows[s:e])
            elif need_input:
                cols = np.matmul(wmats.swapaxes(1, 2), g_rows[s:e], out=fold_cols[: e - s])
                fold(cols.reshape(e - s, c * math.prod(kernel), -1), gx[s:e])
            if not need_weight:
                continue
            if from_g:  # Σ over the chunk's images of gcols (O·∏K, ∏S) @ x.T (∏S, C)
                x_rows = x[s:e].reshape(e - s, groups, group_in, -1)
                part = np.matmul(g_cols, x_rows.swapaxes(2, 3), out=products[: e - s])
            else:  # Σ of g (O, ∏O) @ columns.T (∏O, C·∏K)
                cols = unfold(x[s:e]).reshape(e - s, groups, taps, -1)
                part = np.matmul(g_rows[s:e], cols.swapaxes(2, 3), out=products[: e - s])
            gw += part.sum(axis=0, dtype=np.float64) if e - s > 1 else part[0]
        return gw

    parts = _over_images(work, n, nb) if (need_input or need_weight) else []
    gw = None
    if need_weight:
        gw = parts[0]
        for part in parts[1:]:
            gw += part
        if from_g:  # (G, O/G, *K flipped, C/G) -> (O, C/G, *K)
            gw = gw.reshape((out_ch,) + tuple(kernel) + (group_in,))
            gw = np.moveaxis(gw[(slice(None),) + (slice(None, None, -1),) * nd], -1, 1)
        gw = np.ascontiguousarray(gw, dtype=x.dtype).reshape(weight.shape)
    gb = g.reshape(n, out_ch, math.prod(out)).sum(axis=(0, 2)) if need_bias else None
    return tuple(a for a in (gx, gw, gb) if a is not None)


class _Fold:
    """col2im of chunks of (nb, C·∏K, ∏O) columns into (nb, C, *S) input gradients, through
    one reused padded buffer."""

    def __init__(self, nb, channels, size, kernel, stride, pads, dilation, out, dtype):
        self.kernel, self.out = kernel, out
        self.compiled = None
        if len(kernel) == 2 and stride[1] > 1:  # unit stride: NumPy's contiguous adds are faster
            self.compiled = jit.module("conv_jit", nb * channels * math.prod(kernel + out))
            self.stride, self.dilation = tuple(stride), tuple(dilation)
            self.low = tuple(lo for lo, _ in pads)
        # a negative upper padding (a transposed convolution's output_padding beyond its
        # padding): the windows end before the input does, its last rows get zeros
        padded = tuple(s + lo + max(hi, 0) for s, (lo, hi) in zip(size, pads))
        self.image = np.empty((nb, channels) + padded, dtype)
        self.inside = tuple(slice(lo, lo + s) for s, (lo, _) in zip(size, pads))
        self.cols = np.empty((nb, channels * math.prod(kernel), math.prod(out)), dtype)
        self.windows = [
            (
                where,
                tuple(
                    slice(i * d, i * d + s * (n - 1) + 1, s)
                    for i, d, s, n in zip(where, dilation, stride, out)
                ),
            )
            for where in itertools.product(*(range(k) for k in kernel))
        ]

    def __call__(self, cols, gx):
        nb, channels = gx.shape[:2]
        if self.compiled is not None and gx.flags.c_contiguous:  # in place, one pass a plane
            blocks = cols.reshape((nb * channels,) + tuple(self.kernel) + tuple(self.out))
            image = gx.reshape((nb * channels,) + gx.shape[2:])
            self.compiled.col2im_2d(blocks, image, *self.stride, *self.low, *self.dilation)
            return
        image = self.image[:nb]
        image.fill(0)
        blocks = cols.reshape((nb, channels) + tuple(self.kernel) + tuple(self.out))
        lead = (slice(None), slice(None))
        for where, window in self.windows:
            image[lead + window] += blocks[lead + where]
        gx[...] = image[lead + self.inside]
