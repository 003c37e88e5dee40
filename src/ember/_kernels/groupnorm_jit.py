"""Compiled group norm (numba; see :mod:`ember._kernels.jit`) over the canonical
(N·G, C/G, S) view: one task per (sample, group), whose C/G·S elements stay in the caches
between its passes; the tasks shared among ember's threads.

Forward, per group: the mean, the sum of squared deviations (two passes, as PyTorch, never
the cancelling E[x²] - E[x]²), then ``x·(rstd·w) + (b - mean·rstd·w)`` per channel in a
third pass that writes the output (PyTorch's form). Backward, per group: Σg and Σg·x per
channel in one pass, the input gradient ``(rstd·w)·g + p·x + q`` in a second (PyTorch's
closed form, p and q per group). The weight and bias gradients are kept per (sample,
channel) and summed over the samples afterwards in a fixed order, so a result does not
depend on the threads. Sums accumulate in float64, reassociated (``fastmath``: vectorised
with several partial sums).
"""

from __future__ import annotations

import math

import numba  # noqa: F401  (kernel modules load numba; ember's import does not)
import numpy as np

from . import jit

_FAST = {"reassoc", "contract"}


@jit.njit(fastmath=_FAST)
def _forward_groups(start, stop, x, out, w, b, groups, eps, mean, rstd):
    """Groups [start, stop) of the (N·G, C/G, S) ``x``: mean and 1/sqrt(var + eps) into
    ``mean``/``rstd``, the output into ``out``. ``w``/``b``: (C,) vectors, length 0 for none."""
    _, width, size = x.shape
    count = width * size
    for t in range(start, stop):
        first = (t % groups) * width  # the group's first channel
        total = 0.0
        for c in range(width):
            row = x[t, c]
            for i in range(size):
                total += row[i]
        mu = total / count
        squares = 0.0
        for c in range(width):
            row = x[t, c]
            for i in range(size):
                d = row[i] - mu
                squares += d * d
        rs = 1.0 / math.sqrt(squares / count + eps)
        mean[t] = mu
        rstd[t] = rs
        for c in range(width):
            scale = rs * (w[first + c] if w.size else 1.0)
            shift = (b[first + c] if b.size else 0.0) - mu * scale
            row = x[t, c]
            dst = out[t, c]
            for i in range(size):
                dst[i] = row[i] * scale + shift


@jit.njit(fastmath=_FAST)
def _backward_groups(start, stop, g, x, mean, rstd, w, groups, gx, gw_parts, gb_parts):
    """Groups [start, stop): per channel Σg into ``gb_parts`` and Σg·x̂ into ``gw_parts``
    (rows of (N, C)), and, when ``gx`` has elements, the input gradient
    r·w·g + p·x + q with p = (Σg·w·μ - Σg·w·x)·r³/M and q = -p·μ - Σg·w·r/M. A ``g`` of
    one column (S > 1) holds one value for each row."""
    _, width, size = x.shape
    count = width * size
    constant = g.shape[2] == 1 and size != 1  # one value a row: the gradient of a sum
    for t in range(start, stop):
        n = t // groups
        first = (t % groups) * width
        mu = mean[t]
        r = rstd[t]
        sum_gw = 0.0  # Σ_c w_c Σ g
        dot_gw = 0.0  # Σ_c w_c Σ g·x
        for c in range(width):
            grow = g[t, c]
            xrow = x[t, c]
            total = 0.0
            dot = 0.0
            if constant:
                for i in range(size):
                    dot += xrow[i]
                total = grow[0] * size
                dot *= grow[0]
            else:
                for i in range(size):
                    gi = grow[i]
                    total += gi
                    dot += gi * xrow[i]
            gb_parts[n, first + c] = total
            gw_parts[n, first + c] = (dot - mu * total) * r
            wc = w[first + c] if w.size else 1.0
            sum_gw += wc * total
            dot_gw += wc * dot
        if gx.size == 0:
            continue
        p = (sum_gw * mu - dot_gw) * r * r * r / count
        q = -p * mu - sum_gw * r / count
        for c in range(width):
            scale = r * (w[first + c] if w.size else 1.0)
            grow = g[t, c]
            xrow = x[t, c]
            dst = gx[t, c]
            if constant:
                shift = grow[0] * scale + q
                for i in range(size):
                    dst[i] = xrow[i] * p + shift
            else:
                for i in range(size):
                    dst[i] = grow[i] * scale + xrow[i] * p + q


def _groups_per_task(elements_per_group: int) -> int:
    return max(1, jit.PARALLEL_MIN_ELEMENTS // max(1, elements_per_group))


def _vector(p, dtype):
    """A weight or bias as a contiguous vector; length 0 for None."""
    if p is None:
        return np.empty(0, dtype)
    return np.ascontiguousarray(p.reshape(-1), dtype=dtype)


def _check_vector(name: str, vector, channels: int) -> None:
    if vector.size not in (0, channels):
        raise ValueError(f"group_norm: {name} of {vector.size} elements, C={channels}")


def group_norm_forward(x, groups: int, weight, bias, eps: float):
    """Group norm of the (N, C, S) array ``x`` in ``groups`` groups; returns
    (out, mean, rstd), the statistics as (N, groups) arrays of x's dtype."""
    batch, channels, size = x.shape
    if channels % groups or batch * channels * size == 0:
        raise ValueError(f"group_norm_forward: shape {x.shape} in {groups} groups")
    dtype = x.dtype
    x = np.ascontiguousarray(x).reshape(batch * groups, channels // groups, size)
    out = np.empty(x.shape, dtype)
    mean, rstd = np.empty(batch * groups, dtype), np.empty(batch * groups, dtype)
    w, b = _vector(weight, dtype), _vector(bias, dtype)
    _check_vector("weight", w, channels)
    _check_vector("bias", b, channels)
    jit.parallel_for(
        _forward_groups,
        batch * groups,
        x,
        out,
        w,
        b,
        groups,
        float(eps),
        mean,
        rstd,
        min_chunk=_groups_per_task(x.shape[1] * size),
    )
    shape = (batch, groups)
    return out.reshape(batch, channels, size), mean.reshape(shape), rstd.reshape(shape)


def group_norm_backward(g, x, mean, rstd, weight, need_input: bool):
    """Gradients of group norm over the (N, C, S) arrays ``g`` and ``x`` from the saved
    (N, G) ``mean`` and ``rstd``: (input gradient or None, Σg·x̂, Σg) in x's dtype. A ``g``
    broadcast along S (the gradient of a sum or a mean) is read as one value a row."""
    batch, channels, size = x.shape
    if g.shape != x.shape or mean.shape != rstd.shape or mean.shape[0] != batch:
        raise ValueError(f"group_norm_backward: gradient {g.shape}, input {x.shape}")
    groups = mean.shape[1]
    dtype = x.dtype
    split = (batch * groups, channels // groups, size)
    x = np.ascontiguousarray(x).reshape(split)
    if g.dtype != dtype:
        g = g.astype(dtype)
    g = g.reshape(split)  # a view where the strides allow one (a broadcast's zeros do)
    if size > 1 and g.strides[2] == 0:  # constant along S: its first column says it all
        g = g[:, :, :1]
    g = np.ascontiguousarray(g)
    mean = np.ascontiguousarray(mean.reshape(-1), dtype=dtype)
    rstd = np.ascontiguousarray(rstd.reshape(-1), dtype=dtype)
    w = _vector(weight, dtype)
    _check_vector("weight", w, channels)
    gx = np.empty(split if need_input else (0, 0, 0), dtype)
    gw_parts, gb_parts = np.empty((batch, channels), dtype), np.empty((batch, channels), dtype)
    jit.parallel_for(
        _backward_groups,
        batch * groups,
        g,
        x,
        mean,
        rstd,
        w,
        groups,
        gx,
        gw_parts,
        gb_parts,
        min_chunk=_groups_per_task(split[1] * size),
    )
    gx = gx.reshape(batch, channels, size) if need_input else None
    return gx, gw_parts.sum(axis=0), gb_parts.sum(axis=0)
