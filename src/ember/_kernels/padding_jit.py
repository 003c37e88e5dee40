"""Compiled reflect, replicate and circular padding of the last two dims (or the last) of a
C-contiguous NumPy array, forward and backward, one pass each over ``(planes, H, W)``, split
over ember's pool by planes.

NumPy's ``pad`` copies the inside, then fills every border from the array itself one axis
after the other (the column borders are strided reads and writes); the backward folded each
border back one axis at a time through a copy of the whole gradient per axis. Here every
output row is read from its source row through a column map (forward), and every input row
sums the output rows that copied it, border columns folded in (backward).
"""

from __future__ import annotations

import numpy as np

from . import jit

_MODES = {"reflect": 0, "replicate": 1, "circular": 2}


@jit.njit(error_model="numpy", boundscheck=False, inline="always")
def _source(o, lo, n, mode):
    """The input position that output position ``o`` copies (``lo`` padded before, ``n`` long)."""
    i = o - lo
    if mode == 0:  # reflect: -1 copies 1, n copies n - 2
        if i < 0:
            i = -i
        if i >= n:
            i = 2 * (n - 1) - i
    elif mode == 1:  # replicate
        if i < 0:
            i = 0
        if i >= n:
            i = n - 1
    else:  # circular: amounts up to n
        if i < 0:
            i += n
        if i >= n:
            i -= n
    return i


@jit.njit(error_model="numpy", boundscheck=False)
def _pad_planes(start, stop, x, out, top, left, mode):
    """out[p, r, c] = x[p, source row of r, source column of c] for start <= p < stop (one
    gather loop a row: with rows of ~30 elements, splitting each row into its inside and its
    borders cost more in loop set-up than it saved)."""
    _, h, w = x.shape
    _, oh, ow = out.shape
    cols = np.empty(ow, np.int64)
    for c in range(ow):
        cols[c] = _source(c, left, w, mode)
    rows = np.empty(oh, np.int64)
    for r in range(oh):
        rows[r] = _source(r, top, h, mode)
    for p in range(start, stop):
        for r in range(oh):
            src = rows[r]
            for c in range(ow):
                out[p, r, c] = x[p, src, cols[c]]


@jit.njit(error_model="numpy", boundscheck=False, inline="always")
def _fold_row(g, p, r, out, i, left, w, cols, assign):
    """Output row ``r`` of ``g`` onto input row ``i`` of ``out``: its inside assigned (the
    first row onto ``i``) or added, then its border columns added where they were copied from."""
    gw = g.shape[2]
    if assign:
        for c in range(w):
            out[p, i, c] = g[p, r, left + c]
    else:
        for c in range(w):
            out[p, i, c] += g[p, r, left + c]
    for c in range(left):
        out[p, i, cols[c]] += g[p, r, c]
    for c in range(left + w, gw):
        out[p, i, cols[c]] += g[p, r, c]


@jit.njit(error_model="numpy", boundscheck=False)
def _fold_planes(start, stop, g, out, top, left, mode):
    """out[p] = the sum, over output positions, of g at each onto the input position it
    copied: the inside rows first (each input row once, assigned), then the border rows."""
    _, h, w = out.shape
    gh, gw = g.shape[1], g.shape[2]
    cols = np.empty(gw, np.int64)
    for c in range(gw):
        cols[c] = _source(c, left, w, mode)
    for p in range(start, stop):
        for i in range(h):
            _fold_row(g, p, i + top, out, i, left, w, cols, True)
        for r in range(top):
            _fold_row(g, p, r, out, _source(r, top, h, mode), left, w, cols, False)
        for r in range(top + h, gh):
            _fold_row(g, p, r, out, _source(r, top, h, mode), left, w, cols, False)


def _planes(shape, two_dims: bool):
    """The (planes, H, W) shape of an array padded in its last two dims (or its last)."""
    w = shape[-1]
    h = shape[-2] if two_dims else 1
    planes = 1
    for s in shape[: -2 if two_dims else -1]:
        planes *= s
    return planes, h, w


def _run(kernel, source, target, top: int, left: int, mode: str) -> None:
    span = max(1, jit.PARALLEL_MIN_ELEMENTS // max(1, target.shape[1] * target.shape[2]))
    jit.parallel_for(
        kernel, target.shape[0], source, target, top, left, _MODES[mode], min_chunk=span
    )


def pad(x, top: int, bottom: int, left: int, right: int, mode: str, two_dims: bool):
    """``x`` padded by (top, bottom) rows (``two_dims``: in its second-to-last dim) and (left,
    right) columns in its last; a new C-contiguous array. Amounts >= 0, reflect ones below the
    dim's size, circular ones at most it (checked by the caller); x C-contiguous."""
    planes, h, w = _planes(x.shape, two_dims)
    if two_dims:
        shape = x.shape[:-2] + (h + top + bottom, w + left + right)
    else:
        shape = x.shape[:-1] + (w + left + right,)
    out = np.empty(shape, x.dtype)
    target = out.reshape(planes, h + top + bottom, w + left + right)
    _run(_pad_planes, x.reshape(planes, h, w), target, top, left, mode)
    return out


def fold(g, top: int, bottom: int, left: int, right: int, mode: str, two_dims: bool):
    """The gradient of :func:`pad` for its output gradient ``g`` (C-contiguous): a new array
    of the unpadded shape."""
    planes, gh, gw = _planes(g.shape, two_dims)
    h, w = gh - top - bottom, gw - left - right
    shape = g.shape[:-2] + (h, w) if two_dims else g.shape[:-1] + (w,)
    out = np.empty(shape, g.dtype)
    _run(_fold_planes, g.reshape(planes, gh, gw), out.reshape(planes, h, w), top, left, mode)
    return out
