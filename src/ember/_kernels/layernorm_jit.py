"""Compiled layer norm over the rows of a (rows, width) view (numba; see
:mod:`ember._kernels.jit`).

Forward, per row: the mean, the sum of squared deviations (two passes, as PyTorch, never the
cancelling E[x²] - E[x]²), then ``(x - mean)·rstd·w + b``, all while the row sits in the L1
cache (the NumPy path streams the whole array through five passes). Backward, per row: Σ g·w
and Σ g·w·x̂ in one pass and the input's gradient in a second; the weight and bias gradients
are summed per task into a row of partial sums, added up afterwards (in a fixed order, so a
result depends on the number of tasks, not on the threads' timing). Sums accumulate in
float64, reassociated (``fastmath``: vectorised with several partial sums).
"""

from __future__ import annotations

import numpy as np

from . import jit

_FAST = {"reassoc", "contract"}


@jit.njit(fastmath=_FAST)
def _normalize_row(row, o, w, b, eps):
    # o <- (row - mean)·rstd·w + b; returns (mean, rstd). One function for every caller, so
    # that a row normalises to the same bits whichever kernel runs it
    width = row.shape[0]
    total = 0.0
    for j in range(width):
        total += row[j]
    mu = total / width
    squares = 0.0
    for j in range(width):
        d = row[j] - mu
        squares += d * d
    rs = 1.0 / np.sqrt(squares / width + eps)
    for j in range(width):
        o[j] = (row[j] - mu) * rs * w[j] + b[j]
    return mu, rs


@jit.njit(fastmath=_FAST)
def _forward_rows(start, stop, x, out, w, b, eps, mean, rstd):
    for r in range(start, stop):
        mean[r], rstd[r] = _normalize_row(x[r], out[r], w, b, eps)


@jit.njit
def _add_residual(row, bias, residual):
    # row <- (row + bias) + residual, rounded as NumPy's two adds (no fastmath: not reassociated)
    for j in range(row.shape[0]):
        row[j] = (row[j] + bias[j]) + residual[j]


@jit.njit(fastmath=_FAST)
def _residual_rows(start, stop, x, bias, residual, out, w, b, eps):
    # x[r] <- x[r] + bias + residual[r], then out[r] <- layer norm of it (as _forward_rows)
    for r in range(start, stop):
        row = x[r]
        _add_residual(row, bias, residual[r])
        _normalize_row(row, out[r], w, b, eps)


@jit.njit(fastmath=_FAST)
def _backward_tasks(start, stop, rows_per_task, g, x, mean, rstd, w, need_input, gx, gw, gb):
    # tasks [start, stop), each rows [t·rows_per_task, (t+1)·rows_per_task): the input's
    # gradient rs·(gy - mean(gy) - x̂·mean(gy·x̂)), gy = g·w, and Σ g·x̂, Σ g into gw[t], gb[t]
    rows, width = x.shape
    for t in range(start, stop):
        part_w = gw[t]
        part_b = gb[t]
        for r in range(t * rows_per_task, min((t + 1) * rows_per_task, rows)):
            row = x[r]
            grad = g[r]
            mu = mean[r]
            rs = rstd[r]
            sum_gy = 0.0
            sum_gy_xhat = 0.0
            for j in range(width):
                xhat = (row[j] - mu) * rs
                gy = grad[j] * w[j]
                sum_gy += gy
                sum_gy_xhat += gy * xhat
                part_w[j] += grad[j] * xhat
                part_b[j] += grad[j]
            if need_input:
                a = sum_gy / width
                c = sum_gy_xhat / width
                out = gx[r]
                for j in range(width):
                    xhat = (row[j] - mu) * rs
                    out[j] = rs * (grad[j] * w[j] - a - xhat * c)


def _param(p, width: int, dtype, fill: float):
    if p is None:
        return np.full(width, fill, dtype)
    if p.dtype != dtype or p.size != width:
        raise ValueError(f"layernorm_jit: a parameter of {p.size} {p.dtype} for {width} {dtype}")
    return np.ascontiguousarray(p.reshape(width))


def _check(x) -> None:
    if x.ndim != 2 or x.dtype.type not in (np.float32, np.float64) or not x.flags.c_contiguous:
        raise ValueError("layernorm_jit: expects a C-contiguous 2-D float32/float64 array")


def _tasks(rows: int, width: int) -> int:
    from ember import _backend

    if rows * width < jit.PARALLEL_MIN_ELEMENTS:
        return 1
    return max(1, min(_backend.get_num_threads(), rows))


def layer_norm_forward(x, weight, bias, eps: float, parallel: bool = True):
    """``(out, mean, rstd)`` of layer norm over the rows of ``x`` (rows, width); ``weight`` and
    ``bias``: arrays of ``width`` elements of ``x``'s dtype, or None. Statistics: (rows,).
    ``parallel`` False: on this thread only (a caller already running on ember's pool)."""
    _check(x)
    rows, width = x.shape
    if width == 0:
        raise ValueError("layernorm_jit: rows of width 0")
    w = _param(weight, width, x.dtype, 1.0)
    b = _param(bias, width, x.dtype, 0.0)
    out = np.empty_like(x)
    mean = np.empty(rows, x.dtype)
    rstd = np.empty(rows, x.dtype)
    args = (x, out, w, b, float(eps), mean, rstd)
    if not parallel:
        _forward_rows(0, rows, *args)
    else:
        chunk = max(1, jit.PARALLEL_MIN_ELEMENTS // width)
        jit.parallel_for(_forward_rows, rows, *args, min_chunk=chunk)
    return out, mean, rstd


def residual_layer_norm_(x, bias, residual, weight, norm_bias, eps: float, out, parallel=True):
    """A residual block's end: ``x = x + bias + residual`` in place (added as NumPy adds, in
    that order), then ``out`` = its layer norm over the rows (as :func:`layer_norm_forward`).
    ``x``, ``residual``, ``out``: (rows, width), distinct; ``bias``, ``weight``, ``norm_bias``:
    ``width`` elements or None. ``parallel`` False: on this thread only."""
    for a in (x, residual, out):
        _check(a)
        if a.shape != x.shape or a.dtype != x.dtype:
            raise ValueError(f"layernorm_jit: arrays {a.shape} {a.dtype} and {x.shape} {x.dtype}")
    if x is residual or x is out or residual is out:
        raise ValueError("layernorm_jit: residual_layer_norm_ needs three distinct arrays")
    rows, width = x.shape
    if width == 0:
        raise ValueError("layernorm_jit: rows of width 0")
    args = (
        x,
        _param(bias, width, x.dtype, 0.0),
        residual,
        out,
        _param(weight, width, x.dtype, 1.0),
        _param(norm_bias, width, x.dtype, 0.0),
        float(eps),
    )
    if not parallel:
        _residual_rows(0, rows, *args)
    else:
        chunk = max(1, jit.PARALLEL_MIN_ELEMENTS // width)
        jit.parallel_for(_residual_rows, rows, *args, min_chunk=chunk)
    return out


def layer_norm_backward(g, x, mean, rstd, weight, need_input: bool):
    """``(gx, gw, gb)`` for layer norm's output gradient ``g``; ``mean``/``rstd`` as the forward
    returned them (any shape of ``rows`` elements); ``gx`` None unless ``need_input``."""
    _check(x)
    _check(g)
    rows, width = x.shape
    if g.shape != x.shape or g.dtype != x.dtype or width == 0:
        raise ValueError(f"layernorm_jit: gradient {g.shape} {g.dtype} for input {x.shape}")
    mean = np.ascontiguousarray(mean, x.dtype).reshape(rows)
    rstd = np.ascontiguousarray(rstd, x.dtype).reshape(rows)
    w = _param(weight, width, x.dtype, 1.0)
    tasks = _tasks(rows, width)
    per = -(-rows // tasks)
    gw = np.zeros((tasks, width))
    gb = np.zeros((tasks, width))
    gx = np.empty_like(x) if need_input else np.empty((0, width), x.dtype)
    jit.parallel_for(
        _backward_tasks, tasks, per, g, x, mean, rstd, w, need_input, gx, gw, gb, min_chunk=1
    )
    return (
        gx if need_input else None,
        gw.sum(axis=0).astype(x.dtype),
        gb.sum(axis=0).astype(x.dtype),
    )
