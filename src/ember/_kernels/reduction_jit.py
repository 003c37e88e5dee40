"""A compiled sum over one axis that is not the last: ``(outer, n, inner) -> (outer, inner)``.

NumPy's ``add.reduce`` over such an axis adds one row of ``inner`` numbers at a time, a
ufunc inner-loop call per row: for a mean over the 32 tokens of a (256, 32, 128) embedding
output that is 8192 calls of 128 adds, ~3x the time of the adds themselves. Here each output
row is summed in one vectorized loop, in NumPy's order (the first row, then each next row
added in turn: NumPy does not sum pairwise along an axis that is not the innermost), so the
result is NumPy's to the bit.
"""

from __future__ import annotations

import numpy as np

from . import jit

# memory-bound: a second thread only from this many elements per thread (as embedding_jit)
PARALLEL_FROM = 1 << 20
# With fewer numbers after the axis, NumPy may reduce along the innermost loop (pairwise, in
# another order); and a row this short gains little from the kernel.
MIN_INNER = 8


@jit.njit
def _sum_rows_outer(start, stop, x, out):
    # out[o] = x[o, 0] + x[o, 1] + ... for o in [start, stop)
    n, inner = x.shape[1], x.shape[2]
    for o in range(start, stop):
        dst = out[o]
        first = x[o, 0]
        for j in range(inner):
            dst[j] = first[j]
        for b in range(1, n):
            src = x[o, b]
            for j in range(inner):
                dst[j] += src[j]


@jit.njit
def _sum_rows_columns(start, stop, x, out):
    # the same over columns [start, stop) of every o (outer too short to split)
    n = x.shape[1]
    width = stop - start
    for o in range(x.shape[0]):
        dst = out[o, start:stop]
        first = x[o, 0, start:stop]
        for j in range(width):
            dst[j] = first[j]
        for b in range(1, n):
            src = x[o, b, start:stop]
            for j in range(width):
                dst[j] += src[j]


def sum_axis(data, axis: int, keepdim: bool):
    """``np.add.reduce(data, axis, keepdims=keepdim)`` of a C-contiguous float32/float64 NumPy
    array over ``axis`` (not the last, of length at least 1), or None where the kernel does not
    apply (the caller's NumPy path runs)."""
    if type(data) is not np.ndarray or data.dtype.type not in (np.float32, np.float64):
        return None
    shape = data.shape
    if not data.flags.c_contiguous or not 0 <= axis < len(shape) - 1 or shape[axis] == 0:
        return None
    outer = 1
    for s in shape[:axis]:
        outer *= s
    inner = 1
    for s in shape[axis + 1 :]:
        inner *= s
    if inner < MIN_INNER:
        return None
    x = data.reshape(outer, shape[axis], inner)
    out = np.empty((outer, inner), dtype=data.dtype)
    if out.size:
        per_row = shape[axis] * inner  # elements one outer index reads
        if outer * per_row < 2 * PARALLEL_FROM or outer >= 2 * -(-PARALLEL_FROM // per_row):
            chunk = -(-PARALLEL_FROM // per_row)  # outer indices per thread
            jit.parallel_for(_sum_rows_outer, outer, x, out, min_chunk=chunk)
        else:  # few outer indices (a sum over the first axis): split the columns
            chunk = -(-PARALLEL_FROM // (shape[axis] * outer))
            jit.parallel_for(_sum_rows_columns, inner, x, out, min_chunk=chunk)
    kept = shape[:axis] + ((1,) if keepdim else ()) + shape[axis + 1 :]
    return out.reshape(kept)
