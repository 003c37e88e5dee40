"""Compiled ``scatter_add`` along one dim (gather's backward: grid_sample's taps, sort's and
topk's gradients, ``take_along_dim``) for NumPy arrays: the sums ``np.add.at`` makes, element
by element in the index's order (so the same bits), as one loop instead of ``add.at``'s
per-element dispatch, split over ember's pool by the dims before ``dim`` (each span writes its
own rows)."""

from __future__ import annotations

import math

import numpy as np

from . import jit


@jit.njit(error_model="numpy")
def _scatter_add(start, stop, out, index, src):
    """out[a, index[a, k, b], b] += src[a, k, b] for start <= a < stop, k and b in order."""
    for a in range(start, stop):
        for k in range(index.shape[1]):
            for b in range(index.shape[2]):
                out[a, index[a, k, b], b] += src[a, k, b]


def scatter_add_(out, dim: int, index, src) -> None:
    """Add ``src`` into the C-contiguous ``out`` at ``index`` along ``dim``, in place. The
    caller has checked the indices' bounds and that ``index`` and ``src`` have ``out``'s shape
    apart from ``dim``."""
    outer = math.prod(out.shape[:dim])
    inner = math.prod(out.shape[dim + 1 :])
    steps = index.shape[dim]
    target = out.reshape(outer, out.shape[dim], inner)
    where = np.ascontiguousarray(index).reshape(outer, steps, inner)
    values = np.ascontiguousarray(src, dtype=out.dtype).reshape(outer, steps, inner)
    span = max(1, jit.PARALLEL_MIN_ELEMENTS // max(1, steps * inner))
    jit.parallel_for(_scatter_add, outer, target, where, values, min_chunk=span)


@jit.njit(error_model="numpy")
def _gather(start, stop, data, index, out):
    """out[a, k, b] = data[a, index[a, k, b], b] for start <= a < stop."""
    for a in range(start, stop):
        for k in range(index.shape[1]):
            for b in range(index.shape[2]):
                out[a, k, b] = data[a, index[a, k, b], b]


def gather(data, dim: int, index):
    """``data``'s values at ``index`` along ``dim``: a new array of ``index``'s shape. The
    caller has checked the indices' bounds and that ``index`` has ``data``'s shape apart from
    ``dim``."""
    outer = math.prod(data.shape[:dim])
    inner = math.prod(data.shape[dim + 1 :])
    steps = index.shape[dim]
    source = np.ascontiguousarray(data).reshape(outer, data.shape[dim], inner)
    where = np.ascontiguousarray(index).reshape(outer, steps, inner)
    out = np.empty(index.shape, data.dtype)
    span = max(1, jit.PARALLEL_MIN_ELEMENTS // max(1, steps * inner))
    jit.parallel_for(
        _gather, outer, source, where, out.reshape(outer, steps, inner), min_chunk=span
    )
    return out
