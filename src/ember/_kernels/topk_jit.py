"""Compiled ``topk`` for a few of many (k small beside the dim) on NumPy arrays: one pass over
each line along the dim, keeping the best k so far in a sorted buffer, split over ember's pool
by lines.

A first pass takes each block's best (a branch-free loop); the k-th best of those is no better
than the k-th best element, so only the (at most k) blocks that reach it are searched. An
element that beats the k-th best is inserted after every kept element at least as good, so
among equal values the lower index comes first and is the one kept at the boundary: the order
of torch's (and ember's) stable descending or ascending argsort, cut to k. A NaN stops the
kernel (the caller sorts instead: argsort orders NaNs).
"""

from __future__ import annotations

import numpy as np

from . import jit

_BLOCK = 32  # elements a block: its best stands for it in the first pass


def _make_kernel(better):
    @jit.njit(error_model="numpy", boundscheck=False, inline="always")
    def pick(a, b):
        return a if better(a, b) else b

    @jit.njit(error_model="numpy", boundscheck=False, inline="always")
    def peak(line, lo):
        """The best of line[lo:lo + 32] (no NaN there) in four independent chains of eight
        (one chain would wait on each comparison in turn)."""
        a = pick(pick(line[lo], line[lo + 4]), pick(line[lo + 8], line[lo + 12]))
        b = pick(pick(line[lo + 1], line[lo + 5]), pick(line[lo + 9], line[lo + 13]))
        c = pick(pick(line[lo + 2], line[lo + 6]), pick(line[lo + 10], line[lo + 14]))
        d = pick(pick(line[lo + 3], line[lo + 7]), pick(line[lo + 11], line[lo + 15]))
        a = pick(a, pick(pick(line[lo + 16], line[lo + 20]), pick(line[lo + 24], line[lo + 28])))
        b = pick(b, pick(pick(line[lo + 17], line[lo + 21]), pick(line[lo + 25], line[lo + 29])))
        c = pick(c, pick(pick(line[lo + 18], line[lo + 22]), pick(line[lo + 26], line[lo + 30])))
        d = pick(d, pick(pick(line[lo + 19], line[lo + 23]), pick(line[lo + 27], line[lo + 31])))
        return pick(pick(a, b), pick(c, d))

    @jit.njit(error_model="numpy", boundscheck=False, inline="always")
    def peak_of(line, lo, hi):
        best = line[lo]
        for i in range(lo + 1, hi):
            best = pick(line[i], best)
        return best

    @jit.njit(error_model="numpy", boundscheck=False, inline="always")
    def take(line, positions, hi, k, best, where):
        """The k best of line[:hi] (at ``positions``) sorted into ``best`` and ``where``; the
        number kept (k, or fewer when hi < k), or -1 at a NaN."""
        count = 0
        for i in range(hi):
            v = line[i]
            if v != v:
                return -1
            if count < k or better(v, best[k - 1]):
                p = count if count < k else k - 1
                while p > 0 and better(v, best[p - 1]):
                    best[p] = best[p - 1]
                    where[p] = where[p - 1]
                    p -= 1
                best[p] = v
                where[p] = positions[i]
                if count < k:
                    count += 1
        return count

    @jit.njit(error_model="numpy", boundscheck=False)
    def top_lines(start, stop, lines, k, values, indices, failed):
        """values[r], indices[r]: the k best of lines[r] in order, for start <= r < stop.

        The k-th best of the blocks' bests (the bar) is no better than the k-th best element,
        so only elements that reach the bar, in blocks whose best does, can be among the k:
        those are gathered (in index order) and sorted in."""
        size = lines.shape[1]
        blocks = (size + _BLOCK - 1) // _BLOCK
        peaks = np.empty(blocks, lines.dtype)
        order = np.arange(size)
        chosen = np.empty(size, lines.dtype)
        chosen_at = np.empty(size, np.int64)
        best = np.empty(k, lines.dtype)
        where = np.empty(k, np.int64)
        for r in range(start, stop):
            line = lines[r]
            nan = False
            for i in range(size):
                nan |= line[i] != line[i]
            if nan or blocks <= k:  # every element in turn (a NaN stops it)
                count = take(line, order, size, k, best, where)
            else:
                for b in range(size // _BLOCK):
                    peaks[b] = peak(line, b * _BLOCK)
                if size % _BLOCK:
                    peaks[blocks - 1] = peak_of(line, (blocks - 1) * _BLOCK, size)
                take(peaks, order, blocks, k, best, where)
                bar = best[k - 1]
                n = 0
                for b in range(blocks):
                    if not better(bar, peaks[b]):
                        for i in range(b * _BLOCK, min((b + 1) * _BLOCK, size)):
                            v = line[i]
                            if not better(bar, v):
                                chosen[n] = v
                                chosen_at[n] = i
                                n += 1
                count = take(chosen, chosen_at, n, k, best, where)
            if count < 0:
                failed[0] = True
                return
            values[r] = best
            indices[r] = where

    return top_lines


@jit.njit(inline="always")
def _greater(a, b):
    return a > b


@jit.njit(inline="always")
def _less(a, b):
    return a < b


_top_largest = _make_kernel(_greater)
_top_smallest = _make_kernel(_less)


def topk(data, dim: int, k: int, largest: bool):
    """(values, int64 indices) of the ``k`` largest (or smallest) along ``dim``, in order, or
    None when a NaN is found. ``data`` is 1-d or more, float32/64 or integer, 0 < k <= its
    size along ``dim``."""
    moved = np.moveaxis(data, dim, -1)
    size = moved.shape[-1]
    lines = np.ascontiguousarray(moved).reshape(-1, size)  # a copy unless dim is the last
    values = np.empty((lines.shape[0], k), data.dtype)
    indices = np.empty((lines.shape[0], k), np.int64)
    failed = np.zeros(1, np.bool_)
    kernel = _top_largest if largest else _top_smallest
    span = max(1, jit.PARALLEL_MIN_ELEMENTS // size)
    jit.parallel_for(kernel, lines.shape[0], lines, k, values, indices, failed, min_chunk=span)
    if failed[0]:
        return None
    shape = moved.shape[:-1] + (k,)
    if dim == data.ndim - 1:
        return values.reshape(shape), indices.reshape(shape)
    back = [np.ascontiguousarray(np.moveaxis(a.reshape(shape), -1, dim)) for a in (values, indices)]
    return back[0], back[1]
