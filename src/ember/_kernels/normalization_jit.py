"""Compiled batch norm (numba; see :mod:`ember._kernels.jit`): forward and backward over the
canonical (N, C, S) view, each one task per channel (a channel's N·S elements stay in the
caches between its passes), the channels shared among ember's threads.

Forward in training: the mean, then the sum of squared deviations (two passes, as PyTorch,
never the cancelling E[x²] - E[x]²), then ``(x - mean)·(rstd·w) + b`` in a third pass that
writes the output. Backward: Σg and Σg·(x - mean) in one pass, the input gradient in one more.
Sums are accumulated in float64, reassociated (``fastmath``: the compiler vectorises them
with several partial sums; a channel's result does not depend on the threads).
"""

from __future__ import annotations

import math

import numba  # noqa: F401  (kernel modules load numba; ember's import does not)
import numpy as np

from . import jit


@jit.njit(fastmath={"reassoc", "contract"})
def _forward_channels(start, stop, x, out, w, b, eps, batch_stats, mean, var, rstd):
    """Channels [start, stop): with ``batch_stats`` the batch mean, biased variance and
    1/sqrt(var + eps) into ``mean``/``var``/``rstd``; else those given are used. Then the
    output. ``w``/``b`` of length 0 stand for no weight / no bias."""
    batch, _, size = x.shape
    count = batch * size
    for c in range(start, stop):
        if batch_stats:
            total = 0.0
            for n in range(batch):
                row = x[n, c]
                for i in range(size):
                    total += row[i]
            mu = total / count
            squares = 0.0
            for n in range(batch):
                row = x[n, c]
                for i in range(size):
                    d = row[i] - mu
                    squares += d * d
            sigma2 = squares / count
            mean[c] = mu
            var[c] = sigma2
            rstd[c] = 1.0 / math.sqrt(sigma2 + eps)
        mu = mean[c]
        scale = rstd[c] * (w[c] if w.size else 1.0)
        shift = b[c] if b.size else 0.0
        for n in range(batch):
            row = x[n, c]
            dst = out[n, c]
            for i in range(size):
                dst[i] = (row[i] - mu) * scale + shift


@jit.njit(fastmath={"reassoc", "contract"})
def _backward_channels(start, stop, g, x, mean, rstd, w, batch_stats, gx, gw, gb):
    """Channels [start, stop): Σg into ``gb``, Σg·x̂ into ``gw`` (x̂ = (x - mean)·rstd), and,
    when ``gx`` has elements, the input gradient: r·w·(g - Σg/M - (x - mean)·r²·Σg(x - mean)/M)
    with batch statistics, else r·w·g."""
    batch, _, size = x.shape
    count = batch * size
    for c in range(start, stop):
        mu = mean[c]
        r = rstd[c]
        total = 0.0
        dot = 0.0
        for n in range(batch):
            grow = g[n, c]
            xrow = x[n, c]
            for i in range(size):
                gi = grow[i]
                total += gi
                dot += gi * (xrow[i] - mu)
        gb[c] = total
        gw[c] = dot * r
        if gx.size == 0:
            continue
        scale = r * (w[c] if w.size else 1.0)
        if batch_stats:
            mean_g = total / count
            proj = dot * r * r / count
            for n in range(batch):
                grow = g[n, c]
                xrow = x[n, c]
                dst = gx[n, c]
                for i in range(size):
                    dst[i] = (grow[i] - mean_g - (xrow[i] - mu) * proj) * scale
        else:
            for n in range(batch):
                grow = g[n, c]
                dst = gx[n, c]
                for i in range(size):
                    dst[i] = grow[i] * scale


# below this row length (S) a channel's elements are scattered in short pieces: the NumPy
# path, whose passes run along the channels (BatchNorm1d on (N, C)), is the faster one
SHORT_ROWS = 16


def _channels_per_task(elements_per_channel: int) -> int:
    return max(1, jit.PARALLEL_MIN_ELEMENTS // max(1, elements_per_channel))


def _vector(p, dtype):
    """A weight or bias as a contiguous vector; length 0 for None."""
    if p is None:
        return np.empty(0, dtype)
    return np.ascontiguousarray(p.reshape(-1), dtype=dtype)


def batch_norm_forward(x, weight, bias, eps: float, mean=None, rstd=None):
    """Batch norm of the (N, C, S) array ``x``; returns (out, mean, var, rstd), the statistics
    as (C,) arrays of x's dtype. ``mean``/``rstd`` given (evaluation): those are used and
    ``var`` is None."""
    batch, channels, size = x.shape
    if batch * size == 0 and mean is None:
        raise ValueError("batch_norm_forward: no elements to take statistics over")
    dtype = x.dtype
    x = np.ascontiguousarray(x)
    out = np.empty(x.shape, dtype)
    batch_stats = mean is None
    if batch_stats:
        mean, var, rstd = (np.empty(channels, dtype) for _ in range(3))
    else:
        mean = np.ascontiguousarray(mean.reshape(-1), dtype=dtype)
        rstd = np.ascontiguousarray(rstd.reshape(-1), dtype=dtype)
        var = np.empty(0, dtype)
    for name, vector in (("mean", mean), ("rstd", rstd)):
        if vector.shape != (channels,):
            raise ValueError(f"batch_norm_forward: {name} of shape {vector.shape}, C={channels}")
    w, b = _vector(weight, dtype), _vector(bias, dtype)
    for name, vector in (("weight", w), ("bias", b)):
        if vector.size not in (0, channels):
            raise ValueError(f"batch_norm_forward: {name} of {vector.size} elements, C={channels}")
    jit.parallel_for(
        _forward_channels,
        channels,
        x,
        out,
        w,
        b,
        float(eps),
        batch_stats,
        mean,
        var,
        rstd,
        min_chunk=_channels_per_task(batch * size),
    )
    return out, mean, (var if batch_stats else None), rstd


def batch_norm_backward(g, x, mean, rstd, weight, batch_stats: bool, need_input: bool):
    """Gradients of batch norm over the (N, C, S) arrays ``g`` and ``x`` from the saved (C,)
    ``mean`` and ``rstd``: (input gradient or None, Σg·x̂, Σg) in x's dtype."""
    batch, channels, size = x.shape
    if g.shape != x.shape:
        raise ValueError(f"batch_norm_backward: gradient {g.shape} for input {x.shape}")
    dtype = x.dtype
    g = np.ascontiguousarray(g, dtype=dtype)
    x = np.ascontiguousarray(x)
    mean = np.ascontiguousarray(mean.reshape(-1), dtype=dtype)
    rstd = np.ascontiguousarray(rstd.reshape(-1), dtype=dtype)
    w = _vector(weight, dtype)
    if mean.shape != (channels,) or rstd.shape != (channels,) or w.size not in (0, channels):
        raise ValueError("batch_norm_backward: statistics or weight do not match the channels")
    gx = np.empty(x.shape if need_input else (0, 0, 0), dtype)
    gw, gb = np.empty(channels, dtype), np.empty(channels, dtype)
    jit.parallel_for(
        _backward_channels,
        channels,
        g,
        x,
        mean,
        rstd,
        w,
        bool(batch_stats),
        gx,
        gw,
        gb,
        min_chunk=_channels_per_task(batch * size),
    )
    return (gx if need_input else None), gw, gb
