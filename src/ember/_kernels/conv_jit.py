"""Compiled col2im for 2-D convolutions (:mod:`ember._kernels.conv_pipeline`'s ``_Fold``).

NumPy's col2im adds each kernel offset's window into a padded image as one strided array
operation (kh·kw passes over the image, each with a short strided inner loop) and crops the
image afterwards; here each plane is written once, in place, with the windows added in the
same order (kernel row, then column), so the sums are NumPy's to the bit.
"""

from __future__ import annotations

from . import jit


@jit.njit
def col2im_2d(cols, image, stride_h, stride_w, pad_h, pad_w, dilation_h, dilation_w):
    """``image`` (P, H, W) = Σ over kernel offsets of ``cols`` (P, kh, kw, oh, ow) added where
    each window element came from; positions in the padding are dropped."""
    planes, kh, kw, oh, ow = cols.shape
    height, width = image.shape[1], image.shape[2]
    for p in range(planes):
        plane = image[p]
        plane[:, :] = 0
        for i in range(kh):
            for y in range(oh):
                row = y * stride_h - pad_h + i * dilation_h
                if row < 0 or row >= height:
                    continue
                for j in range(kw):
                    offset = j * dilation_w - pad_w
                    first = max(0, (stride_w - 1 - offset) // stride_w)
                    end = min(ow, (width - offset + stride_w - 1) // stride_w)
                    for x in range(first, end):
                        plane[row, x * stride_w + offset] += cols[p, i, j, y, x]
