"""Compiled row passes of the fused attention (numba; see :mod:`ember._kernels.jit`).

The products of attention (Q Kᵀ, P V and their gradients) are BLAS GEMMs; between them sit
passes over the (rows, keys) score matrix that NumPy runs as five or six whole-array passes
(scale, max, shift, exp, sum, divide; and the softmax backward's product, row sum, difference,
product). Here each row is read and written in one loop nest while it sits in the L1 cache.
Rows are split over ember's pool (:func:`jit.parallel_for`).

Both passes work in place on C-contiguous 2-D arrays that the caller allocated itself (the
scores of one attention call), so no index can leave them; callers check shapes and dtypes.
"""

from __future__ import annotations

import numpy as np

from . import jit

_FLOATS = (np.float32, np.float64)


# Reassociation lets LLVM vectorize the row sums and maxima; NaN and infinity keep their IEEE
# meaning (no "nnan"/"ninf"), so masked (-inf) scores and NaN rows behave as in NumPy.
_FAST = {"reassoc", "contract", "arcp", "nsz"}


@jit.njit(fastmath=_FAST)
def _softmax_rows_float32(start, stop, scores, scale):
    # scores[r] <- softmax(scale · scores[r]); a row of only -inf (fully masked) becomes 0.
    # e^x for x <= 0 in float32 (Cephes' expf: Cody-Waite reduction, degree-7 polynomial,
    # ~1 ulp; below -87, a float32 subnormal at most, 0; NaN stays NaN), in two loops that
    # vectorize (libm's expf does not, nor a table look-up of 2^n): the polynomial, with 2^n
    # written as float32 bits ((n + 127) << 23) into integers viewed as floats; then the
    # products and the row's sum
    width = scores.shape[1]
    bits = np.empty(width, np.int32)
    pow2 = bits.view(np.float32)
    for r in range(start, stop):
        row = scores[r]
        top = np.float32(-np.inf)
        for j in range(width):
            s = row[j] * scale
            row[j] = s
            top = max(top, s)
        if top == -np.inf:
            row[:] = 0
            continue
        for j in range(width):
            x = row[j] - top
            c = max(x, np.float32(-87.0))
            n = np.floor(c * np.float32(1.44269504) + np.float32(0.5))
            t = c - n * np.float32(0.693359375) + n * np.float32(2.12194440e-4)
            p = np.float32(1.9875691500e-4) * t + np.float32(1.3981999507e-3)
            p = p * t + np.float32(8.3334519073e-3)
            p = p * t + np.float32(4.1665795894e-2)
            p = p * t + np.float32(1.6666665459e-1)
            p = p * t + np.float32(5.0000001201e-1)
            p = p * t * t + t + np.float32(1.0)
            # n is in [-125, 0] (clamped in float32, the int32 steps vectorize; a NaN x gives
            # any bits, and NaN whatever 2^n is)
            k = min(max(n, np.float32(-126.0)), np.float32(0.0))
            bits[j] = (np.int32(k) + np.int32(127)) << np.int32(23)
            row[j] = np.float32(0.0) if x < np.float32(-87.0) else p
        total = np.float32(0.0)
        for j in range(width):
            e = row[j] * pow2[j]
            row[j] = e
            total += e
        inverse = np.float32(1.0) / total
        for j in range(width):
            row[j] *= inverse


@jit.njit(fastmath=_FAST)
def _softmax_rows(start, stop, scores, scale):
    # as _softmax_rows_float32, with libm's exp (float64)
    width = scores.shape[1]
    for r in range(start, stop):
        row = scores[r]
        top = -np.inf
        for j in range(width):
            s = row[j] * scale
            row[j] = s
            top = max(top, s)
        if top == -np.inf:
            row[:] = 0
            continue
        total = 0.0
        for j in range(width):
            e = np.exp(row[j] - top)
            row[j] = e
            total += e
        inverse = 1.0 / total
        for j in range(width):
            row[j] *= inverse


@jit.njit(fastmath=_FAST)
def _softmax_backward_rows(start, stop, grad, probs, scale):
    # grad[r] <- scale · p (g - Σ g p): the gradient of the scores from that of softmax's output
    width = grad.shape[1]
    for r in range(start, stop):
        g = grad[r]
        p = probs[r]
        dot = 0.0
        for j in range(width):
            dot += g[j] * p[j]
        for j in range(width):
            g[j] = scale * p[j] * (g[j] - dot)


@jit.njit(fastmath=_FAST)
def _dropout_softmax_backward_rows(start, stop, grad, probs, noise, scale):
    # as _softmax_backward_rows for softmax followed by dropout (the scaled keep-mask ``noise``)
    width = grad.shape[1]
    for r in range(start, stop):
        g = grad[r]
        p = probs[r]
        m = noise[r]
        dot = 0.0
        for j in range(width):
            gj = g[j] * m[j]
            g[j] = gj
            dot += gj * p[j]
        for j in range(width):
            g[j] = scale * p[j] * (g[j] - dot)


def _rows(array):
    return array.reshape(-1, array.shape[-1])


def _check(*arrays) -> None:
    first = arrays[0]
    for a in arrays:
        if a.dtype.type not in _FLOATS or not a.flags.c_contiguous or a.shape != first.shape:
            raise ValueError("attention_jit: expects C-contiguous float arrays of equal shapes")
        if a.dtype != first.dtype:
            raise ValueError("attention_jit: arrays of different dtypes")


def softmax_(scores, scale: float, parallel: bool = True) -> None:
    """``scores = softmax(scale · scores)`` over the last axis, in place (all -inf rows: 0);
    ``parallel`` False: on this thread only (a caller already running on ember's pool)."""
    _check(scores)
    if scores.size == 0:
        return
    rows = _rows(scores)
    kernel = _softmax_rows_float32 if scores.dtype == np.float32 else _softmax_rows
    if not parallel:
        kernel(0, rows.shape[0], rows, scores.dtype.type(scale))
        return
    jit.parallel_for(
        kernel,
        rows.shape[0],
        rows,
        scores.dtype.type(scale),
        min_chunk=max(1, jit.PARALLEL_MIN_ELEMENTS // rows.shape[1]),
    )


def softmax_backward_(grad, probs, scale: float, noise=None, parallel: bool = True) -> None:
    """``grad = scale · p (g·noise - Σ g·noise·p)`` over the last axis, in place: the scores'
    gradient from that of ``dropout(softmax(scale · scores))`` (``noise`` None: no dropout).
    ``parallel`` False: on this thread only (a caller already running on ember's pool)."""
    if noise is None:
        _check(grad, probs)
    else:
        _check(grad, probs, noise)
    if grad.size == 0:
        return
    rows, p = _rows(grad), _rows(probs)
    chunk = max(1, jit.PARALLEL_MIN_ELEMENTS // rows.shape[1])
    if not parallel:
        chunk = rows.shape[0]  # one span: parallel_for runs it on this thread
    s = grad.dtype.type(scale)
    if noise is None:
        jit.parallel_for(_softmax_backward_rows, rows.shape[0], rows, p, s, min_chunk=chunk)
    else:
        m = _rows(noise)
        jit.parallel_for(
            _dropout_softmax_backward_rows, rows.shape[0], rows, p, m, s, min_chunk=chunk
        )
