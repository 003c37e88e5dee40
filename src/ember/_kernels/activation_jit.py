"""Compiled one-pass kernels of GELU (exact and tanh), SiLU, tanh, sigmoid and erf, with
their fused backward formulas, for C-contiguous float32/float64 NumPy arrays.

Each kernel is ``kernel(start, stop, *arrays)`` over flat indices (``jit.parallel_for`` splits
it over ember's pool); callers check dtypes, shapes and contiguity first (numba does not
bounds-check). NumPy's float32 ``tanh``/``exp`` are SIMD loops and a call to libm per element
is 5x slower, so the transcendental functions here are written with arithmetic only (LLVM
vectorises the loops, with ``error_model="numpy"``: Python's division check would stop it).
tanh, sigmoid, SiLU and tanh-GELU run the NumPy path's float32 operations in its order (8
lanes a vector), with their own float32 tanh/exp (within 1.4 and 2 ulps, as NumPy's); exact
GELU's float32 erf is ember's fit evaluated in float64 (bit for bit the NumPy path's), and
float64 GELU uses libm (``math.erf``, ``math.exp``).
"""

from __future__ import annotations

import math

import numpy as np
from llvmlite import ir
from numba import types
from numba.extending import intrinsic

from . import jit
from .blocked import _ERF_P, _ERF_Q, GELU_TANH_A, INV_SQRT_2PI, SQRT_2_OVER_PI, SQRT_HALF

P0, P1, P2, P3, P4, P5, P6 = _ERF_P
Q1, Q2, Q3, Q4, Q5 = _ERF_Q[1:]
# tanh-GELU's constants in float32, as the NumPy path's float32 arithmetic uses them
TANH_K0_F32 = np.float32(SQRT_2_OVER_PI)
TANH_K1_F32 = np.float32(GELU_TANH_A * SQRT_2_OVER_PI)
TANH_DK1_F32 = np.float32(3 * GELU_TANH_A * SQRT_2_OVER_PI)


@intrinsic
def _bits_as_float32(typingctx, bits):
    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.FloatType())

    return types.float32(types.int32), codegen


@intrinsic
def _float32_as_bits(typingctx, value):
    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.IntType(32))

    return types.int32(types.float32), codegen


# float32 constants of the float32 exp and tanh (numba keeps NumPy scalars' types; Python
# floats are float64)
F32 = np.float32
ROUND_MAGIC_F32 = F32(12582912.0)  # 1.5·2^23: adding it rounds to an integer in the low bits
MAGIC_BITS_F32 = np.int32(F32(12582912.0).view(np.int32))
LOG2E_F32 = F32(1.4426950408889634)
LN2_HI_F32, LN2_LO_F32 = F32(0.693359375), F32(-2.12194440e-4)  # Cephes' split of ln 2
EXP_TAYLOR_F32 = tuple(F32(1.0 / math.factorial(n)) for n in range(8))
# tanh(a) = a + a³ P(a²) on [0, 0.625]: a least-squares fit, within 5e-10 relative
TANH_SERIES_F32 = tuple(
    F32(c)
    for c in (
        -0.33333331285643725,
        0.13333226063576106,
        -0.05394939666627448,
        0.021715552693808034,
        -0.008214972289862881,
        0.0021780235210107557,
    )
)


@jit.njit(inline="always", error_model="numpy")
def exp_f32(y):
    """e^y of a float32 in float32 arithmetic (8 lanes a vector): 2^k e^r, |r| <= ln2/2, e^r to
    r^7; within 2 float32 ulps on [-87, 88]. Made for 1 + e^y and 1 - 2 / (1 + e^y): 0 below
    -87 (NumPy's exp gives subnormals there, which 1 + e^y rounds away), e^88 from 88 to 88.72
    (1 / (1 + e^y) is subnormal there either way), inf above; NaN for NaN."""
    z = y if y < F32(88.0) else F32(88.0)
    z = z if z > F32(-87.0) else F32(-87.0)
    shifted = z * LOG2E_F32 + ROUND_MAGIC_F32
    k_bits = _float32_as_bits(shifted) - MAGIC_BITS_F32
    k = shifted - ROUND_MAGIC_F32
    r = (z - k * LN2_HI_F32) - k * LN2_LO_F32
    c0, c1, c2, c3, c4, c5, c6, c7 = EXP_TAYLOR_F32
    p = ((((((c7 * r + c6) * r + c5) * r + c4) * r + c3) * r + c2) * r + c1) * r + c0
    e = p * _bits_as_float32((k_bits + np.int32(127)) << np.int32(23))
    e = F32(0.0) if y < F32(-87.0) else e
    e = F32(np.inf) if y > F32(88.72) else e
    return e if y == y else y


@jit.njit(inline="always", error_model="numpy")
def tanh_f32(u):
    """tanh of a float32 in float32 arithmetic (8 lanes a vector, as NumPy's SIMD loop), within
    1.4 float32 ulps (NumPy's: 1.4): on a = |u|, the fitted series below 0.625, else
    1 - 2 / (e^{2a} + 1) (no cancellation there); the sign put back from u's sign bit (so -0
    stays -0)."""
    negative = _float32_as_bits(u) < np.int32(0)
    a = -u if negative else u
    e = exp_f32((a if a < F32(10.0) else F32(10.0)) * F32(2.0))  # tanh(10) is 1 in float32
    large = F32(1.0) - F32(2.0) / (e + F32(1.0))
    square = a * a
    t0, t1, t2, t3, t4, t5 = TANH_SERIES_F32
    q = ((((t5 * square + t4) * square + t3) * square + t2) * square + t1) * square + t0
    small = a + a * square * q
    t = small if square < F32(0.390625) else large
    t = -t if negative else t
    return t if u == u else u


@jit.njit(inline="always", error_model="numpy")
def erf_fit(c):
    """erf(c) for a float64 ``c``: ember's float32 fit (blocked._erf_block, the same
    operations in the same order, so the same bits)."""
    c = c if c > -4.0 else -4.0
    c = c if c < 4.0 else 4.0
    t = c * c
    p = t * P6 + P5
    p = p * t + P4
    p = p * t + P3
    p = p * t + P2
    p = p * t + P1
    p = p * t + P0
    q = t * Q5 + Q4
    q = q * t + Q3
    q = q * t + Q2
    q = q * t + Q1
    q = q * t + 1.0
    return (p * c) / q


# --- exact GELU: x Φ(x), Φ(x) = (1 + erf(x/√2)) / 2 ----------------------------------------
@jit.njit(error_model="numpy")
def gelu_float32(start, stop, x, out):
    xs, os = x[start:stop], out[start:stop]
    half, one, sqrt_half = np.float32(0.5), np.float32(1.0), np.float32(SQRT_HALF)
    for i in range(xs.size):
        v = xs[i]
        c = np.float64(v * sqrt_half)  # x/√2 in float32, as the NumPy path
        e = np.float32(erf_fit(c)) if c == c else np.float32(c)
        # erf rounded to float32 before 1 + erf, as the NumPy path (and PyTorch) round it
        os[i] = (e + one) * half * v


@jit.njit(error_model="numpy")
def gelu_backward_float32(start, stop, g, x, out):  # Φ(x) + x φ(x)
    gs, xs, os = g[start:stop], x[start:stop], out[start:stop]
    half, one, sqrt_half = np.float32(0.5), np.float32(1.0), np.float32(SQRT_HALF)
    inv_sqrt_2pi = np.float32(INV_SQRT_2PI)
    for i in range(xs.size):
        v = xs[i]
        c = np.float64(v * sqrt_half)  # x/√2 in float32, as the NumPy path
        e = np.float32(erf_fit(c)) if c == c else np.float32(c)
        cdf = (e + one) * half
        # x φ(x) in float32 (the NumPy path: in float64), a quarter less time, within an ulp
        pdf = exp_f32(v * v * F32(-0.5)) * inv_sqrt_2pi * v
        os[i] = (cdf + pdf) * gs[i]


@jit.njit(error_model="numpy")
def gelu_float64(start, stop, x, out):
    xs, os = x[start:stop], out[start:stop]
    for i in range(xs.size):
        v = xs[i]
        os[i] = (math.erf(v * SQRT_HALF) + 1.0) * v * 0.5


@jit.njit(error_model="numpy")
def gelu_backward_float64(start, stop, g, x, out):
    gs, xs, os = g[start:stop], x[start:stop], out[start:stop]
    for i in range(xs.size):
        v = xs[i]
        cdf = (math.erf(v * SQRT_HALF) + 1.0) * 0.5
        os[i] = (math.exp(v * v * -0.5) * (v * INV_SQRT_2PI) + cdf) * gs[i]


# --- tanh GELU: x (1 + tanh(k(x))) / 2, k(x) = √(2/π)(x + a x³) -------------------------
@jit.njit(error_model="numpy")
def gelu_tanh_float32(start, stop, x, out):
    # the NumPy path's float32 operations in its order (blocked._gelu_tanh_block), tanh_f32 for
    # NumPy's tanh: the same results up to tanh's last-bit differences
    xs, os = x[start:stop], out[start:stop]
    for i in range(xs.size):
        v = xs[i]
        inner = (v * v * TANH_K1_F32 + TANH_K0_F32) * v
        os[i] = (tanh_f32(inner) + F32(1.0)) * v * F32(0.5)


@jit.njit(error_model="numpy")
def gelu_tanh_backward_float32(start, stop, g, x, out):
    # (1 + t) / 2 + x (1 - t²) k'(x) / 2 with t = tanh(k(x)), k' = √(2/π)(1 + 3a x²), in the
    # NumPy path's float32 operations and order (blocked._gelu_tanh_backward_block)
    gs, xs, os = g[start:stop], x[start:stop], out[start:stop]
    for i in range(xs.size):
        v = xs[i]
        square = v * v
        slope = square * TANH_DK1_F32 + TANH_K0_F32
        t = tanh_f32((square * TANH_K1_F32 + TANH_K0_F32) * v)
        o = slope * v * F32(0.5) * (F32(1.0) - t)
        o = o * (t + F32(1.0)) + (t + F32(1.0)) * F32(0.5)
        os[i] = o * gs[i]


# --- SiLU: x σ(x) -----------------------------------------------------------------------
@jit.njit(error_model="numpy")
def silu_float32(start, stop, x, out):  # x / (1 + e^-x), the NumPy path's float32 operations
    xs, os = x[start:stop], out[start:stop]
    for i in range(xs.size):
        v = xs[i]
        os[i] = v / (exp_f32(-v) + F32(1.0))


@jit.njit(error_model="numpy")
def silu_backward_float32(start, stop, g, x, out):  # σ (1 + x (1 - σ)), as the NumPy path
    gs, xs, os = g[start:stop], x[start:stop], out[start:stop]
    for i in range(xs.size):
        v = xs[i]
        s = F32(1.0) / (exp_f32(-v) + F32(1.0))
        os[i] = ((F32(1.0) - s) * v + F32(1.0)) * s * gs[i]


# --- float32 unary ops (ember.tanh, sigmoid, erf) and fused backward formulas -----------
@jit.njit(error_model="numpy")
def tanh_float32(start, stop, x, out):
    xs, os = x[start:stop], out[start:stop]
    for i in range(xs.size):
        os[i] = tanh_f32(xs[i])


@jit.njit(error_model="numpy")
def sigmoid_float32(start, stop, x, out):
    # from e = e^{-|x|} on both sides, no overflow: the NumPy path's float32 operations
    xs, os = x[start:stop], out[start:stop]
    for i in range(xs.size):
        v = xs[i]
        positive = v >= F32(0.0)
        e = exp_f32(-v if positive else v)
        os[i] = F32(1.0) / (F32(1.0) + e) if positive else e / (F32(1.0) + e)


@jit.njit(error_model="numpy")
def erf_float32(start, stop, x, out):
    xs, os = x[start:stop], out[start:stop]
    for i in range(xs.size):
        v = np.float64(xs[i])
        os[i] = erf_fit(v) if v == v else v


@jit.njit(error_model="numpy")
def tanh_backward(start, stop, g, y, out, one):  # g (1 - y²), rounded as the NumPy path
    gs, ys, os = g[start:stop], y[start:stop], out[start:stop]
    for i in range(ys.size):
        os[i] = gs[i] * (one - ys[i] * ys[i])


@jit.njit(error_model="numpy")
def sigmoid_backward(start, stop, g, y, out, one):  # g y (1 - y), rounded as the NumPy path
    gs, ys, os = g[start:stop], y[start:stop], out[start:stop]
    for i in range(ys.size):
        os[i] = gs[i] * ((one - ys[i]) * ys[i])


@jit.njit(error_model="numpy")
def relu(start, stop, x, out):  # np.maximum(x, 0): NaN kept, -0 made +0 (one pass, 5x faster)
    xs, os = x[start:stop], out[start:stop]
    for i in range(xs.size):
        v = xs[i]
        os[i] = v if (v > 0 or v != v) else 0


@jit.njit(error_model="numpy")
def relu_backward(start, stop, g, y, out, one):  # 0 where y <= 0, else g (NaN y lets g through)
    gs, ys, os = g[start:stop], y[start:stop], out[start:stop]
    zero = one - one
    for i in range(ys.size):
        os[i] = zero if ys[i] <= 0 else gs[i]
