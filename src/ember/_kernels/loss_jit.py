"""Compiled one-pass kernels of the pointwise losses (smooth L1, binary cross-entropy on
logits) and of the row-wise log-softmax cross-entropy stands on, with their backward
formulas, for C-contiguous float32/float64 NumPy arrays.

The losses' forward kernels come in two forms: ``*_terms`` writes each element's loss (the
``none`` reduction) and ``*_sums`` writes one float64 partial sum per ``BLOCK`` elements (the
caller adds the partials and divides for the mean), so a reduced loss reads its inputs once
and writes nothing of their size. The terms of a block go through a block-sized scratch row
(in cache), then :func:`block_sum` adds them: a reassociated float64 sum, the one place
reassociation is allowed (the float32 exp's rounding trick must not be rewritten), so LLVM
vectorises it. Partials of fixed blocks make the total the same for every thread count.

Each kernel computes the NumPy path's formula in its dtype (constants cast to it first, as
NumPy casts a Python float against a float32 array); float32 exp / softplus / sigmoid are the
arithmetic-only ones of ``activation_jit``/``pointwise_jit`` (within 2 ulps), float64 calls
libm. Sums are reassociated, so totals agree with NumPy's pairwise sums to rounding, not to
the bit.
"""

from __future__ import annotations

import math

import numpy as np
from numba import types
from numba.extending import overload

from . import jit
from .activation_jit import (
    LN2_HI_F32,
    LN2_LO_F32,
    LOG2E_F32,
    MAGIC_BITS_F32,
    ROUND_MAGIC_F32,
    _bits_as_float32,
    _float32_as_bits,
)
from .pointwise_jit import log1p_f32, sigmoid_f32

F32 = np.float32
BLOCK = 2048  # elements per partial sum
# Cephes' expf polynomial: e^r ≈ 1 + r + r² P(r) on |r| <= ln2/2
EXP_POLY_F32 = tuple(
    F32(c)
    for c in (1.9875691500e-4, 1.3981999507e-3, 8.3334519073e-3, 4.1665795894e-2,
              1.6666665459e-1, 5.0000001201e-1)
)  # fmt: skip


@jit.njit(inline="always", error_model="numpy")
def exp_nonpositive_f32(y):
    """e^y of a float32 y <= 0 (log-softmax's shifted logits, -|x|): as activation_jit's
    exp_f32 without the overflow and NaN branches and with a degree-5 polynomial, within 1
    float32 ulp on [-87, 0], 25 % faster; 0 below -87 (and for -inf). A NaN gives a tiny
    number: callers that may see one check it."""
    z = y if y > F32(-87.0) else F32(-87.0)
    shifted = z * LOG2E_F32 + ROUND_MAGIC_F32
    k_bits = _float32_as_bits(shifted) - MAGIC_BITS_F32
    k = shifted - ROUND_MAGIC_F32
    r = (z - k * LN2_HI_F32) - k * LN2_LO_F32
    c5, c4, c3, c2, c1, c0 = EXP_POLY_F32
    p = (((((c5 * r + c4) * r + c3) * r + c2) * r + c1) * r + c0) * (r * r) + r + F32(1.0)
    e = p * _bits_as_float32((k_bits + np.int32(127)) << np.int32(23))
    return F32(0.0) if y < F32(-87.0) else e


@jit.njit(error_model="numpy", fastmath={"reassoc"})
def block_sum(a, n):
    """Σ a[:n] in float64, reassociated (vectorised)."""
    acc = 0.0
    for i in range(n):
        acc += np.float64(a[i])
    return acc


# --- smooth L1: 0.5 z² / β where z = |x - y| < β, else z - β/2 --------------------------------


@jit.njit(inline="always", error_model="numpy")
def _smooth_l1(a, b, beta, half, half_beta):
    z = abs(a - b)
    return half * z * z / beta if z < beta else z - half_beta


@jit.njit(error_model="numpy")
def smooth_l1_terms(start, stop, x, t, out, beta, half, half_beta):
    xs, ts, os = x[start:stop], t[start:stop], out[start:stop]
    for i in range(xs.size):
        os[i] = _smooth_l1(xs[i], ts[i], beta, half, half_beta)


@jit.njit(error_model="numpy")
def smooth_l1_sums(start, stop, x, t, partial, beta, half, half_beta):
    scratch = np.empty(BLOCK, x.dtype)
    for b in range(start, stop):
        lo = b * BLOCK
        n = min(BLOCK, x.size - lo)
        xs, ts = x[lo : lo + n], t[lo : lo + n]
        for i in range(n):
            scratch[i] = _smooth_l1(xs[i], ts[i], beta, half, half_beta)
        partial[b] = block_sum(scratch, n)


@jit.njit(inline="always", error_model="numpy")
def _smooth_l1_slope(d, beta, one, zero):
    # d/β inside (-β, β), sign(d) outside; NaN stays NaN
    if abs(d) < beta:
        return d / beta
    if d > zero:
        return one
    if d < zero:
        return -one
    return d


@jit.njit(error_model="numpy")
def smooth_l1_backward(start, stop, x, t, g, out, beta, one, zero):
    """out = slope(x - t) · g, ``g`` an array of x's size."""
    xs, ts, gs, os = x[start:stop], t[start:stop], g[start:stop], out[start:stop]
    for i in range(xs.size):
        os[i] = _smooth_l1_slope(xs[i] - ts[i], beta, one, zero) * gs[i]


@jit.njit(error_model="numpy")
def smooth_l1_backward_scalar(start, stop, x, t, out, g, beta, one, zero):
    """out = slope(x - t) · g, ``g`` one number (the reduced loss's gradient)."""
    xs, ts, os = x[start:stop], t[start:stop], out[start:stop]
    for i in range(xs.size):
        os[i] = _smooth_l1_slope(xs[i] - ts[i], beta, one, zero) * g


# --- binary cross-entropy on logits: (1 - y) x + softplus(-x), times the weight ---------------


@jit.njit(inline="always", error_model="numpy")
def _softplus_f32(z):
    # one exp (pointwise_jit's softplus_f32 takes two to reach e^z's subnormals): below
    # z = -87 e^-|z| is 0 here, so at most 1.2e-38 of the value is lost
    a = -z if z > F32(0.0) else z
    s = log1p_f32(exp_nonpositive_f32(a)) + (z if z > F32(0.0) else F32(0.0))
    return s if z == z else z


def softplus(z):
    """log(1 + e^z) as log1p(e^-|z|) + max(z, 0): float32 arithmetic for a float32, libm for a
    float64 (numba picks by the argument's type)."""
    raise NotImplementedError  # only called from compiled code


@overload(softplus, inline="always")
def _softplus_overload(z):
    if z == types.float32:
        return lambda z: _softplus_f32(z)
    return lambda z: math.log1p(math.exp(-abs(z))) + (z if z > 0.0 else 0.0)


def sigmoid(v):
    """1 / (1 + e^-v) from e^-|v| (no overflow), by the argument's type as :func:`softplus`."""
    raise NotImplementedError


@overload(sigmoid, inline="always")
def _sigmoid_overload(v):
    if v == types.float32:
        return lambda v: sigmoid_f32(v)

    def float64(v):
        positive = v >= 0.0
        e = math.exp(-v if positive else v)
        return 1.0 / (1.0 + e) if positive else e / (1.0 + e)

    return float64


@jit.njit(inline="always", error_model="numpy")
def _bce_logits(v, y, w, pw, one, has_pw):
    s = softplus(-v)
    if has_pw:
        return ((one - y) * v + ((pw - one) * y + one) * s) * w
    return ((one - y) * v + s) * w


@jit.njit(error_model="numpy")
def bce_logits_terms(start, stop, x, t, out, one):
    xs, ts, os = x[start:stop], t[start:stop], out[start:stop]
    for i in range(xs.size):
        os[i] = _bce_logits(xs[i], ts[i], one, one, one, False)


@jit.njit(error_model="numpy")
def bce_logits_sums(start, stop, x, t, partial, one):
    scratch = np.empty(BLOCK, x.dtype)
    for b in range(start, stop):
        lo = b * BLOCK
        n = min(BLOCK, x.size - lo)
        xs, ts = x[lo : lo + n], t[lo : lo + n]
        for i in range(n):
            scratch[i] = _bce_logits(xs[i], ts[i], one, one, one, False)
        partial[b] = block_sum(scratch, n)


@jit.njit(inline="always", error_model="numpy")
def _bce_logits_keeping_sigmoid(v, y, one):
    # the term and σ(v) of a float32 from one e^-|v|
    zero = F32(0.0)
    e = exp_nonpositive_f32(-v if v >= zero else v)
    positive = v >= zero
    sig = one / (one + e) if positive else e / (one + e)
    s = log1p_f32(e) + (-v if -v > zero else zero)
    if v != v:
        return v, v
    return (one - y) * v + s, sig


@jit.njit(error_model="numpy")
def bce_logits_keep_terms(start, stop, x, t, out, sig, one):
    """As bce_logits_terms, also writing σ(x) into ``sig`` (float32: the backward reads it
    instead of computing an exp again)."""
    xs, ts, os, ss = x[start:stop], t[start:stop], out[start:stop], sig[start:stop]
    for i in range(xs.size):
        os[i], ss[i] = _bce_logits_keeping_sigmoid(xs[i], ts[i], one)


@jit.njit(error_model="numpy")
def bce_logits_keep_sums(start, stop, x, t, partial, sig, one):
    scratch = np.empty(BLOCK, x.dtype)
    for b in range(start, stop):
        lo = b * BLOCK
        n = min(BLOCK, x.size - lo)
        xs, ts, ss = x[lo : lo + n], t[lo : lo + n], sig[lo : lo + n]
        for i in range(n):
            scratch[i], ss[i] = _bce_logits_keeping_sigmoid(xs[i], ts[i], one)
        partial[b] = block_sum(scratch, n)


@jit.njit(error_model="numpy")
def bce_logits_saved_backward(start, stop, sig, t, g, out):
    """out = (σ(x) - y) · g from the σ(x) the forward kept."""
    ss, ts, gs, os = sig[start:stop], t[start:stop], g[start:stop], out[start:stop]
    for i in range(ss.size):
        os[i] = (ss[i] - ts[i]) * gs[i]


@jit.njit(error_model="numpy")
def bce_logits_saved_backward_scalar(start, stop, sig, t, out, g):
    ss, ts, os = sig[start:stop], t[start:stop], out[start:stop]
    for i in range(ss.size):
        os[i] = (ss[i] - ts[i]) * g


@jit.njit(error_model="numpy")
def weighted_bce_logits_terms(start, stop, x, t, w, pw, out, one, has_pw):
    """``w``, ``pw``: arrays of x's size (``pw`` read only when ``has_pw``)."""
    xs, ts, ws, ps, os = (
        x[start:stop],
        t[start:stop],
        w[start:stop],
        pw[start:stop],
        out[start:stop],
    )
    for i in range(xs.size):
        os[i] = _bce_logits(xs[i], ts[i], ws[i], ps[i], one, has_pw)


@jit.njit(error_model="numpy")
def weighted_bce_logits_sums(start, stop, x, t, w, pw, partial, one, has_pw):
    scratch = np.empty(BLOCK, x.dtype)
    for b in range(start, stop):
        lo = b * BLOCK
        n = min(BLOCK, x.size - lo)
        xs, ts, ws, ps = x[lo : lo + n], t[lo : lo + n], w[lo : lo + n], pw[lo : lo + n]
        for i in range(n):
            scratch[i] = _bce_logits(xs[i], ts[i], ws[i], ps[i], one, has_pw)
        partial[b] = block_sum(scratch, n)


@jit.njit(inline="always", error_model="numpy")
def _bce_logits_slope(v, y, w, pw, one, has_pw):
    # d/dx: σ(x) - y; with pos_weight (1 - y) - ((pw - 1) y + 1) σ(-x)
    if has_pw:
        return ((one - y) - ((pw - one) * y + one) * sigmoid(-v)) * w
    return (sigmoid(v) - y) * w


@jit.njit(error_model="numpy")
def bce_logits_backward(start, stop, x, t, g, out, one):
    """out = (σ(x) - y) · g, ``g`` an array of x's size."""
    xs, ts, gs, os = x[start:stop], t[start:stop], g[start:stop], out[start:stop]
    for i in range(xs.size):
        os[i] = _bce_logits_slope(xs[i], ts[i], one, one, one, False) * gs[i]


@jit.njit(error_model="numpy")
def bce_logits_backward_scalar(start, stop, x, t, out, g, one):
    xs, ts, os = x[start:stop], t[start:stop], out[start:stop]
    for i in range(xs.size):
        os[i] = _bce_logits_slope(xs[i], ts[i], one, one, one, False) * g


@jit.njit(error_model="numpy")
def weighted_bce_logits_backward(start, stop, x, t, w, pw, g, out, one, has_pw):
    xs, ts, ws, ps = x[start:stop], t[start:stop], w[start:stop], pw[start:stop]
    gs, os = g[start:stop], out[start:stop]
    for i in range(xs.size):
        os[i] = _bce_logits_slope(xs[i], ts[i], ws[i], ps[i], one, has_pw) * gs[i]


@jit.njit(error_model="numpy")
def weighted_bce_logits_backward_scalar(start, stop, x, t, w, pw, out, g, one, has_pw):
    xs, ts, ws, ps = x[start:stop], t[start:stop], w[start:stop], pw[start:stop]
    os = out[start:stop]
    for i in range(xs.size):
        os[i] = _bce_logits_slope(xs[i], ts[i], ws[i], ps[i], one, has_pw) * g


# --- log-softmax over the rows of a (rows, classes) array --------------------------------------


@jit.njit(error_model="numpy")
def log_softmax_rows_float32(start, stop, x, top, out, probs, keep):
    """out[r] = (x[r] - top[r]) - log Σ e^(x[r] - top[r]) (top: the rows' finite maxima);
    with ``keep``, probs[r] = e^(x[r] - top[r]) / Σ (the softmax, for the backward)."""
    for r in range(start, stop):
        xr, orow, m = x[r], out[r], top[r]
        for i in range(xr.size):
            orow[i] = exp_nonpositive_f32(xr[i] - m)
        total = block_sum(orow, orow.size)
        if keep:
            prow, inverse = probs[r], F32(1.0 / total)
            for i in range(xr.size):
                prow[i] = orow[i] * inverse
        lse = F32(math.log(total))
        for i in range(xr.size):
            orow[i] = (xr[i] - m) - lse


@jit.njit(error_model="numpy")
def log_softmax_rows_float64(start, stop, x, top, out, probs, keep):
    for r in range(start, stop):
        xr, orow, m = x[r], out[r], top[r]
        for i in range(xr.size):
            orow[i] = math.exp(xr[i] - m)
        total = block_sum(orow, orow.size)
        if keep:
            prow, inverse = probs[r], 1.0 / total
            for i in range(xr.size):
                prow[i] = orow[i] * inverse
        lse = math.log(total)
        for i in range(xr.size):
            orow[i] = (xr[i] - m) - lse


@jit.njit(error_model="numpy")
def log_softmax_backward_rows(start, stop, g, probs, out):
    """out[r] = g[r] - softmax[r] Σ g[r]: the gradient of the logits from that of
    log-softmax, with the softmax the forward kept."""
    total = np.empty(1, g.dtype)  # Σ g rounded to g's dtype
    for r in range(start, stop):
        gr, pr, orow = g[r], probs[r], out[r]
        total[0] = block_sum(gr, gr.size)
        s = total[0]
        for i in range(gr.size):
            orow[i] = gr[i] - pr[i] * s
