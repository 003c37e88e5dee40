"""Compiled 2-D max pooling of float32/float64 NumPy arrays and its backward, in PyTorch's CPU
order, one span of (image, channel) planes per thread of ember's pool.

In a window, the running maximum starts at -inf with the first element inside the input as
its position; an element replaces it when it is greater, or when it is NaN (so the last NaN
wins, and a window of -inf keeps its first element inside the input), as ATen's loop does.
The backward adds each output gradient at its recorded position of a zeroed plane: windows
that overlap can pick one element twice.
"""

from __future__ import annotations

import math

import numpy as np

from . import jit

# planes per span: at least this many input elements, so that a hand-off pays
_SPAN_ELEMENTS = 1 << 15


@jit.njit(inline="always")
def _taps_inside(origin, dilation, taps, size):
    """The taps ``[lo, hi)`` of a window starting at ``origin``, ``dilation`` apart, that fall
    inside ``[0, size)``."""
    lo = 0
    while origin + lo * dilation < 0:
        lo += 1
    hi = taps
    while hi > lo and origin + (hi - 1) * dilation >= size:
        hi -= 1
    return lo, hi


@jit.njit(error_model="numpy")
def _forward(start, stop, x, best, index, kh, kw, sh, sw, ph, pw, dh, dw, nan, exact):
    """best/index[p] of the planes x[p], start <= p < stop. Without ``exact``, a window starts
    at its first element inside the input and takes greater elements only: a comparison with
    a NaN is false, so NaN is never picked there, but a plane holding one is flagged in
    ``nan`` (its windows are redone ``exact``: from -inf, taking greater elements or NaN)."""
    h, w = x.shape[1], x.shape[2]
    oh, ow = best.shape[1], best.shape[2]
    for p in range(start, stop):
        seen = False
        for oy in range(oh):
            y0 = oy * sh - ph
            i0, i1 = _taps_inside(y0, dh, kh, h)
            for ox in range(ow):
                x0 = ox * sw - pw
                j0, j1 = _taps_inside(x0, dw, kw, w)
                y, c = y0 + i0 * dh, x0 + j0 * dw
                m = -math.inf if exact else x[p, y, c]
                at = y * w + c
                for i in range(i0, i1):
                    y = y0 + i * dh
                    for j in range(j0, j1):
                        c = x0 + j * dw
                        v = x[p, y, c]
                        seen |= v != v
                        if v > m or (exact and v != v):
                            m = v
                            at = y * w + c
                seen |= m != m
                best[p, oy, ox] = m
                index[p, oy, ox] = at
        nan[p] = seen


@jit.njit(error_model="numpy")
def _forward_separable(start, stop, x, best, index, kh, kw, sh, sw, ph, pw, dh, dw, nan):
    """:func:`_forward` (not exact) in two passes: each input row's maximum over each output's
    columns (the first greatest), then each output's maximum over its rows of those (the
    first greatest row): the same window element, row-major first, as one pass picks."""
    h, w = x.shape[1], x.shape[2]
    oh, ow = best.shape[1], best.shape[2]
    across = np.empty((h, ow), x.dtype)
    column = np.empty((h, ow), np.int64)
    for p in range(start, stop):
        seen = False
        for y in range(h):
            row = x[p, y]
            for ox in range(ow):
                c0 = ox * sw - pw
                j0 = 0
                while c0 + j0 * dw < 0:
                    j0 += 1
                at = c0 + j0 * dw
                m = row[at]
                seen |= m != m
                for j in range(j0 + 1, kw):
                    c = c0 + j * dw
                    if c >= w:
                        break
                    v = row[c]
                    seen |= v != v
                    if v > m:
                        m, at = v, c
                across[y, ox] = m
                column[y, ox] = at
        for oy in range(oh):
            y0 = oy * sh - ph
            i0 = 0
            while y0 + i0 * dh < 0:
                i0 += 1
            y = y0 + i0 * dh
            values, where = best[p, oy], index[p, oy]
            for ox in range(ow):
                values[ox] = across[y, ox]
                where[ox] = y * w + column[y, ox]
            for i in range(i0 + 1, kh):
                y = y0 + i * dh
                if y >= h:
                    break
                for ox in range(ow):
                    v = across[y, ox]
                    if v > values[ox]:
                        values[ox] = v
                        where[ox] = y * w + column[y, ox]
        nan[p] = seen


@jit.njit(error_model="numpy")
def _forward_2x2(start, stop, x, best, index, nan):
    """:func:`_forward` (not exact) for 2x2 windows at stride 2 inside the input, unrolled."""
    w = x.shape[2]
    oh, ow = best.shape[1], best.shape[2]
    for p in range(start, stop):
        seen = False
        for oy in range(oh):
            y = 2 * oy
            for ox in range(ow):
                c = 2 * ox
                m = x[p, y, c]
                at = y * w + c
                v = x[p, y, c + 1]
                seen |= v != v
                if v > m:
                    m, at = v, y * w + c + 1
                v = x[p, y + 1, c]
                seen |= v != v
                if v > m:
                    m, at = v, (y + 1) * w + c
                v = x[p, y + 1, c + 1]
                seen |= v != v
                if v > m:
                    m, at = v, (y + 1) * w + c + 1
                seen |= m != m
                best[p, oy, ox] = m
                index[p, oy, ox] = at
        nan[p] = seen


@jit.njit(error_model="numpy")
def _backward(start, stop, g, index, out):
    """out[p] = zeros with g[p] added at index[p], over planes p; index is max pooling's own."""
    for p in range(start, stop):
        plane = out[p]
        plane[:] = 0
        grads = g[p]
        picked = index[p]
        for o in range(grads.shape[0]):
            plane[picked[o]] += grads[o]


def _planes_per_span(plane_elements: int) -> int:
    return max(1, _SPAN_ELEMENTS // max(1, plane_elements))


def max_pool2d(x, kernel, stride, padding, dilation, out_size) -> tuple:
    """Max pooling of the (N, C, H, W) array ``x``: new (N, C, oh, ow) values and int64 indices
    into each H·W plane (PyTorch's ``return_indices``). The geometry is checked by the caller:
    every window holds an element of the input."""
    n, c, h, w = x.shape
    oh, ow = out_size
    planes = np.ascontiguousarray(x).reshape(n * c, h, w)
    best = np.empty((n * c, oh, ow), x.dtype)
    index = np.empty((n * c, oh, ow), np.int64)
    nan = np.empty(n * c, np.bool_)
    span = _planes_per_span(h * w)
    geometry = (*kernel, *stride, *padding, *dilation)
    if geometry == (2, 2, 2, 2, 0, 0, 1, 1) and 2 * oh <= h and 2 * ow <= w:
        jit.parallel_for(_forward_2x2, n * c, planes, best, index, nan, min_chunk=span)
    else:
        jit.parallel_for(
            _forward_separable, n * c, planes, best, index, *geometry, nan, min_chunk=span
        )
    for p in np.flatnonzero(nan):  # NaN: PyTorch's order, the last NaN of a window wins
        _forward(p, p + 1, planes, best, index, *geometry, nan, True)
    return best.reshape(n, c, oh, ow), index.reshape(n, c, oh, ow)


def max_pool2d_backward(g, index, shape) -> tuple:
    """The (N, C, H, W) input gradient of :func:`max_pool2d` for the output gradient ``g``."""
    n, c, h, w = shape
    planes = n * c
    grads = np.ascontiguousarray(g).reshape(planes, -1)
    out = np.empty((planes, h * w), g.dtype)
    jit.parallel_for(
        _backward,
        planes,
        grads,
        np.ascontiguousarray(index).reshape(planes, -1),
        out,
        min_chunk=_planes_per_span(h * w),
    )
    return (out.reshape(shape),)


@jit.njit(inline="always")
def _avg_window(o, k, s, p, size):
    """A window's first and end position inside the input, and its length counting padding
    (not ceil_mode's overflow past it), as ATen's average pooling counts them."""
    lo = o * s - p
    hi = min(lo + k, size + p)
    return max(lo, 0), min(hi, size), hi - lo


@jit.njit(error_model="numpy")
def _avg_forward(start, stop, x, out, kh, kw, sh, sw, ph, pw, divisor, count_pad):
    """out[p] = window sums / divisor over planes p, each sum in window order as ATen's loop
    (in the array's dtype); ``divisor`` 0: the window's count (with padding if ``count_pad``)."""
    h, w = x.shape[1], x.shape[2]
    oh, ow = out.shape[1], out.shape[2]
    typed = np.zeros(1, x.dtype)  # a count and a sum in the array's dtype, as C++ has them
    for p in range(start, stop):
        for oy in range(oh):
            ya, yb, rows = _avg_window(oy, kh, sh, ph, h)
            for ox in range(ow):
                xa, xb, cols = _avg_window(ox, kw, sw, pw, w)
                typed[0] = 0
                total = typed[0]
                for y in range(ya, yb):
                    for c in range(xa, xb):
                        total += x[p, y, c]
                if ya >= yb or xa >= xb:
                    out[p, oy, ox] = 0
                    continue
                typed[0] = divisor or (rows * cols if count_pad else (yb - ya) * (xb - xa))
                out[p, oy, ox] = total / typed[0]


@jit.njit(error_model="numpy")
def _avg_backward(start, stop, g, gx, kh, kw, sh, sw, ph, pw, divisor, count_pad):
    """gx[p]: each output gradient / its window's count, added over the window's elements."""
    h, w = gx.shape[1], gx.shape[2]
    oh, ow = g.shape[1], g.shape[2]
    typed = np.zeros(1, g.dtype)
    for p in range(start, stop):
        plane = gx[p]
        plane[:] = 0
        for oy in range(oh):
            ya, yb, rows = _avg_window(oy, kh, sh, ph, h)
            for ox in range(ow):
                xa, xb, cols = _avg_window(ox, kw, sw, pw, w)
                typed[0] = divisor or (rows * cols if count_pad else (yb - ya) * (xb - xa))
                delta = g[p, oy, ox] / typed[0]
                for y in range(ya, yb):
                    for c in range(xa, xb):
                        plane[y, c] += delta


def avg_pool2d(x, kernel, stride, padding, out_size, divisor: int, count_pad: bool) -> tuple:
    """Average pooling of the (N, C, H, W) array ``x`` as ATen computes it: a new (N, C, oh, ow)
    array. ``divisor`` 0: each window's count."""
    n, c, h, w = x.shape
    oh, ow = out_size
    planes = np.ascontiguousarray(x).reshape(n * c, h, w)
    out = np.empty((n * c, oh, ow), x.dtype)
    geometry = (*kernel, *stride, *padding, divisor, count_pad)
    jit.parallel_for(_avg_forward, n * c, planes, out, *geometry, min_chunk=_planes_per_span(h * w))
    return (out.reshape(n, c, oh, ow),)


def avg_pool2d_backward(g, shape, kernel, stride, padding, divisor: int, count_pad: bool):
    """The (N, C, H, W) input gradient of :func:`avg_pool2d` for the output gradient ``g``."""
    n, c, h, w = shape
    grads = np.ascontiguousarray(g).reshape((n * c,) + g.shape[2:])
    gx = np.empty((n * c, h, w), g.dtype)
    geometry = (*kernel, *stride, *padding, divisor, count_pad)
    jit.parallel_for(_avg_backward, n * c, grads, gx, *geometry, min_chunk=_planes_per_span(h * w))
    return (gx.reshape(shape),)
