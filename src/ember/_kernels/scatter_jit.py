"""Compiled ``gather`` and ``scatter_add`` along one dim for NumPy arrays (gather's forward and
backward: sort's, topk's and cummax's values and gradients, ``take_along_dim``).

Both work on the 3-d view ``(outer, size, inner)`` of an array around ``dim`` (a 2-d one when
``dim`` is the last), split over ember's pool by the rows before ``dim`` (each span reads and
writes its own rows). Each row's indices are checked against ``[0, size)`` in one vectorised
pass before the row is used (an index outside it stops the kernel and the caller raises
PyTorch's error), so the caller needs no bounds pass of its own; an index is then read as
unsigned, with no branch for negative indices.

``scatter_add_`` makes the sums ``np.add.at`` makes, element by element in the index's order
(so the same bits). ``gather`` copies bytes: any dtype of 1, 2, 4 or 8 bytes runs as the
unsigned integer of its width (one compiled loop for float32, int32 and friends).
"""

from __future__ import annotations

import math

import numpy as np

from . import jit

_UNSIGNED = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


@jit.njit(error_model="numpy", boundscheck=False)
def _row_in_bounds(where, size) -> bool:
    """Every index of the 1-d ``where`` in [0, size) (a branch-free loop: it vectorises)."""
    bad = False
    for k in range(where.shape[0]):
        bad |= np.uint64(where[k]) >= size
    return not bad


@jit.njit(error_model="numpy", boundscheck=False)
def _gather_rows(start, stop, data, index, out, failed):
    """out[a, k] = data[a, index[a, k]] for start <= a < stop."""
    size = np.uint64(data.shape[1])
    for a in range(start, stop):
        where = index[a]
        if not _row_in_bounds(where, size):
            failed[0] = True
            return
        row, dest = data[a], out[a]
        for k in range(where.shape[0]):
            dest[k] = row[np.uint64(where[k])]


@jit.njit(error_model="numpy", boundscheck=False)
def _gather_planes(start, stop, data, index, out, failed):
    """out[a, k, b] = data[a, index[a, k, b], b] for start <= a < stop."""
    size = np.uint64(data.shape[1])
    for a in range(start, stop):
        for k in range(index.shape[1]):
            if not _row_in_bounds(index[a, k], size):
                failed[0] = True
                return
        for k in range(index.shape[1]):
            for b in range(index.shape[2]):
                out[a, k, b] = data[a, np.uint64(index[a, k, b]), b]


@jit.njit(error_model="numpy", boundscheck=False)
def _scatter_add_rows(start, stop, out, index, src, failed):
    """out[a, index[a, k]] += src[a, k] for start <= a < stop, k in order."""
    size = np.uint64(out.shape[1])
    for a in range(start, stop):
        where = index[a]
        if not _row_in_bounds(where, size):
            failed[0] = True
            return
        row, values = out[a], src[a]
        for k in range(where.shape[0]):
            row[np.uint64(where[k])] += values[k]


@jit.njit(error_model="numpy", boundscheck=False)
def _scatter_add_planes(start, stop, out, index, src, failed):
    """out[a, index[a, k, b], b] += src[a, k, b] for start <= a < stop, k and b in order."""
    size = np.uint64(out.shape[1])
    for a in range(start, stop):
        for k in range(index.shape[1]):
            if not _row_in_bounds(index[a, k], size):
                failed[0] = True
                return
        for k in range(index.shape[1]):
            for b in range(index.shape[2]):
                out[a, np.uint64(index[a, k, b]), b] += src[a, k, b]


def _around(shape, dim: int, steps: int):
    """(outer, steps, inner) of ``shape`` around ``dim``: the 3-d view's shape, or the 2-d
    one's when nothing follows ``dim``."""
    outer = math.prod(shape[:dim])
    inner = math.prod(shape[dim + 1 :])
    return (outer, steps) if inner == 1 else (outer, steps, inner)


def _run(rows, planes, first, second, third, row_work: int) -> bool:
    """``rows`` (2-d operands) or ``planes`` (3-d) over the outer rows, split over the pool;
    False when an index was out of bounds."""
    failed = np.zeros(1, np.bool_)
    kernel = rows if first.ndim == 2 else planes
    span = max(1, jit.PARALLEL_MIN_ELEMENTS // max(1, row_work))
    jit.parallel_for(kernel, first.shape[0], first, second, third, failed, min_chunk=span)
    return not failed[0]


def scatter_add_(out, dim: int, index, src) -> bool:
    """Add ``src`` into the C-contiguous ``out`` at ``index`` along ``dim``, in place; False
    (``out`` partly written) when an index is outside ``[0, out.shape[dim])``. ``index`` and
    ``src`` (any strides, broadcast views too) have ``out``'s shape apart from ``dim``."""
    if index.size == 0:
        return True  # nothing to add (and no first row to size the spans by)
    steps = index.shape[dim]
    target = out.reshape(_around(out.shape, dim, out.shape[dim]))
    view = _around(out.shape, dim, steps)
    where = index.reshape(view)  # a view where the strides allow it, else a copy
    values = src.astype(out.dtype, copy=False).reshape(view)
    return _run(_scatter_add_rows, _scatter_add_planes, target, where, values, where[0].size)


def gather(data, dim: int, index):
    """``data``'s values at ``index`` along ``dim`` (a new array of ``index``'s shape), or None
    when an index is outside ``[0, data.shape[dim])``. ``index`` has ``data``'s shape apart
    from ``dim``; ``data`` has 1, 2, 4 or 8 bytes an element."""
    bits = _UNSIGNED[data.dtype.itemsize]
    source = np.ascontiguousarray(data).view(bits)
    source = source.reshape(_around(data.shape, dim, data.shape[dim]))
    view = _around(data.shape, dim, index.shape[dim])
    where = index.reshape(view)
    out = np.empty(index.shape, data.dtype)
    if out.size == 0:
        return out
    if not _run(
        _gather_rows, _gather_planes, source, where, out.view(bits).reshape(view), where[0].size
    ):
        return None
    return out
