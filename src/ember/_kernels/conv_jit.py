"""Compiled col2im for 2-D convolutions (:mod:`ember._kernels.conv_pipeline`'s ``_Fold``).

NumPy's col2im adds each kernel offset's window into a padded image as one strided array
operation (kh·kw passes over the image, each with a short strided inner loop) and crops the
image afterwards; here each plane is written once, in place, with the windows added in the
same order (kernel row, then column), so the sums are NumPy's to the bit (plain additions,
each to its own element: no reassociation, whatever the vector width).
"""

from __future__ import annotations

import numpy as np

from . import jit


@jit.njit
def col2im_2d(cols, image, stride_h, stride_w, pad_h, pad_w, dilation_h, dilation_w):
    """``image`` (P, H, W) = Σ over kernel offsets of ``cols`` (P, kh, kw, oh, ow) added where
    each window element came from; positions in the padding are dropped.

    A window's elements land every ``stride_w``-th column, a scatter no SIMD unit does; they
    are added instead into ``stride_w`` phase rows (column c at phase c % stride_w, place
    c // stride_w), where consecutive elements of a window are consecutive (a vector add),
    and each plane's phases are interleaved into it once at the end."""
    planes, kh, kw, oh, ow = cols.shape
    height, width = image.shape[1], image.shape[2]
    places = (width + stride_w - 1) // stride_w
    phases = np.empty((stride_w, height, places), image.dtype)
    for p in range(planes):
        phases[:, :, :] = 0
        for i in range(kh):
            for y in range(oh):
                row = y * stride_h - pad_h + i * dilation_h
                if row < 0 or row >= height:
                    continue
                for j in range(kw):
                    offset = j * dilation_w - pad_w
                    first = max(0, (stride_w - 1 - offset) // stride_w)
                    end = min(ow, (width - offset + stride_w - 1) // stride_w)
                    if end <= first:  # no element of this window in the image
                        continue
                    phase = offset % stride_w
                    shift = offset // stride_w  # column x * stride_w + offset is at place x + shift
                    target = phases[phase, row]
                    source = cols[p, i, j, y]
                    # unsigned indices: numba checks signed ones for wraparound, which keeps
                    # LLVM from vectorising the loop
                    start = np.uint64(first + shift)
                    for x in range(np.uint64(first), np.uint64(end)):
                        target[start + (x - np.uint64(first))] += source[x]
        plane = image[p]
        for phase in range(stride_w):
            for row in range(height):
                for place in range(places):
                    column = place * stride_w + phase
                    if column < width:
                        plane[row, column] = phases[phase, row, place]
