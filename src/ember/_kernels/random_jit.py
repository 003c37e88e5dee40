"""Compiled loops of torch's CPU random transforms: Box-Muller on blocks of 16, and randperm's
shuffles.

The Box-Muller loops take the raw mt19937 words and do in one pass what the NumPy paths of
:mod:`ember._random` do in several: words to uniforms, the transform, ``* std + mean``. They
repeat those paths' arithmetic operation for operation (float32 values held in float64, each
fused multiply-add as an exact float64 product, one float64 add and a rounding to float32;
libm's ``log``/``cos``/``sin`` for float64), so both give the same bits, torch's. Blocks are
independent once the words are drawn, so :func:`~ember._kernels.jit.parallel_for` splits them
over ember's threads. The shuffles are torch's own swap loops: sequential, and a direct loop
is faster than any loop-free rewrite in NumPy.
"""

from __future__ import annotations

import math

import numpy as np
from llvmlite import ir
from numba.core import types
from numba.extending import intrinsic

from ember._kernels import jit

_f32 = np.float32
# float32 constants of torch's avx_mathfun.h (the same values as ember._random.cephes_float32,
# repeated as float64 globals, which numba freezes into the machine code)
_SQRT_HALF = float(_f32(0.707106781186547524))
_LOG_P = tuple(
    float(_f32(c))
    for c in (
        7.0376836292e-2,
        -1.1514610310e-1,
        1.1676998740e-1,
        -1.2420140846e-1,
        1.4249322787e-1,
        -1.6668057665e-1,
        2.0000714765e-1,
        -2.4999993993e-1,
        3.3333331174e-1,
    )
)
_LOG_P0, _LOG_P1, _LOG_P2, _LOG_P3, _LOG_P4, _LOG_P5, _LOG_P6, _LOG_P7, _LOG_P8 = _LOG_P
_LOG_Q1, _LOG_Q2 = float(_f32(-2.12194440e-4)), float(_f32(0.693359375))
_TWO_PI_32 = float(_f32(2.0 * np.pi))
_FOUR_OVER_PI = float(_f32(1.27323954473516))
_DP1, _DP2, _DP3 = (
    float(_f32(-0.78515625)),
    float(_f32(-2.4187564849853515625e-4)),
    float(_f32(-3.77489497744594108e-8)),
)
_COS_C0, _COS_C1, _COS_C2 = (
    float(_f32(c)) for c in (2.443315711809948e-5, -1.388731625493765e-3, 4.166664568298827e-2)
)
_SIN_S0, _SIN_S1, _SIN_S2 = (
    float(_f32(c)) for c in (-1.9515295891e-4, 8.3321608736e-3, -1.6666654611e-1)
)
_TWO_PI_64 = 2.0 * np.pi
_UNIFORM_24 = 2.0**-24
_UNIFORM_53 = 2.0**-53
_SPLITTER = 134217729.0  # 2^27 + 1: splits a double into two 26-bit halves
_LOW_29, _HALF_29 = (1 << 29) - 1, 1 << 28  # the bits a float32 drops from a double
_MANTISSA_BITS, _HALF_EXPONENT = (1 << 52) - 1, 0x3FE << 52  # a double's fraction; 0.5's exponent

# blocks of 16 values per thread below which a hand-off costs more than it saves
_MIN_BLOCKS = 1 << 11


@intrinsic
def _bits(typingctx, x):
    """The bits of a float64, as an int64."""

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.IntType(64))

    return types.int64(types.float64), codegen


@intrinsic
def _float(typingctx, bits):
    """The float64 of the given int64 bits."""

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.DoubleType())

    return types.float64(types.int64), codegen


@jit.njit(inline="always")
def _round32(x):
    """A float64 rounded to the nearest float32 (ties to even), kept as float64.

    Rounded on the bits: with ``float(np.float32(x))`` LLVM knows such values are floats and
    turns the exact float64 product of two of them into a rounded float32 product, which
    breaks the fused multiply-adds below. Valid for float32's normal range (Box-Muller's)."""
    bits = _bits(x)
    bits += _HALF_29 - 1 + ((bits >> 29) & 1)
    return _float(bits & ~_LOW_29)


@jit.njit(inline="always")
def _fma32(a, b, c):
    """float32 ``a*b + c`` as ember's fast Box-Muller rounds it (exact product, float64 sum,
    float32 rounding; no tie check, see ember._random.box_muller_float32)."""
    return _round32(a * b + c)


@jit.njit(inline="always")
def _fma32_exact(x, y, z):
    """float32 ``x*y + z`` rounded once (ember._random.fma.fma_float32): the float64 sum,
    corrected to round-to-odd where it lands on a float32 tie."""
    total = x * y + z
    mantissa, exponent = math.frexp(total)
    scaled = mantissa * 9007199254740992.0  # 2^53: the significand as an integer
    if (np.int64(abs(scaled)) & _LOW_29) == _HALF_29:
        product = x * y
        b_virtual = total - product
        err = (product - (total - b_virtual)) + (z - b_virtual)
        if err != 0.0:  # a tie in the float64 sum only: one ulp towards the exact value
            step = 1.0 if (err > 0.0) == (total > 0.0) else -1.0
            magnitude = math.ldexp(abs(scaled) + step, exponent - 53)
            total = magnitude if total > 0.0 else -magnitude
    return np.float32(total)


@jit.njit(inline="always")
def _fma64(x, y, z):
    """float64 ``x*y + z`` by error-free transformations (ember._random.fma.fma_float64)."""
    product = x * y
    scaled = _SPLITTER * x
    x_hi = scaled - (scaled - x)
    x_lo = x - x_hi
    scaled = _SPLITTER * y
    y_hi = scaled - (scaled - y)
    y_lo = y - y_hi
    product_err = ((x_hi * y_hi - product) + x_hi * y_lo + x_lo * y_hi) + x_lo * y_lo
    total = product + z
    b_virtual = total - product
    total_err = (product - (total - b_virtual)) + (z - b_virtual)
    return total + (total_err + product_err)


@jit.njit(inline="always")
def _log_of_one_minus(u):
    """``log(1 - u)`` of torch's float32 kernel (ember._random.box_muller_float32)."""
    bits = _bits(1.0 - u)  # exact: u is a multiple of 2^-24 in [0, 1)
    # 1 - u = mantissa * 2^exponent with mantissa in [0.5, 1), from the bits (no branches,
    # no libm call: the loop vectorises)
    mantissa = _float((bits & _MANTISSA_BITS) | _HALF_EXPONENT)
    small = mantissa < _SQRT_HALF
    m = mantissa - 1.0 + (mantissa if small else 0.0)  # exact
    e = float((bits >> 52) - 1022 - small)
    z = _round32(m * m)
    y = _fma32(m, _LOG_P0, _LOG_P1)
    y = _fma32(y, m, _LOG_P2)
    y = _fma32(y, m, _LOG_P3)
    y = _fma32(y, m, _LOG_P4)
    y = _fma32(y, m, _LOG_P5)
    y = _fma32(y, m, _LOG_P6)
    y = _fma32(y, m, _LOG_P7)
    y = _fma32(y, m, _LOG_P8)
    y = _round32(y * m)
    y = _fma32(y, z, _round32(e * _LOG_Q1))
    y = _round32(y - z * 0.5)
    y = _round32(y + m)
    return _round32(e * _LOG_Q2 + y)


@jit.njit(inline="always")
def _sincos_of_angle(u):
    """(sin, cos) of ``2π·u`` of torch's float32 kernel, as float32 values in float64."""
    x = _round32(_TWO_PI_32 * u)
    octant = np.int32(_round32(x * _FOUR_OVER_PI))
    octant = (octant + 1) & ~np.int32(1)
    y = float(octant)
    x = _fma32(y, _DP1, x)
    x = _fma32(y, _DP2, x)
    x = _fma32(y, _DP3, x)
    z = _round32(x * x)
    cos_poly = _fma32(z, _COS_C0, _COS_C1)
    cos_poly = _fma32(cos_poly, z, _COS_C2)
    cos_poly = _round32(cos_poly * z)
    cos_poly = _round32(_fma32(cos_poly, z, z * -0.5) + 1.0)
    sin_poly = _fma32(z, _SIN_S0, _SIN_S1)
    sin_poly = _fma32(sin_poly, z, _SIN_S2)
    sin_poly = _round32(sin_poly * z)
    sin_poly = _fma32(sin_poly, x, x)
    swap = (octant & 2) != 0
    sin = cos_poly if swap else sin_poly
    cos = sin_poly if swap else cos_poly
    # signs by the octant's bits (a product by ±1 is exact and branch-free)
    sin *= 1.0 - 0.5 * float(octant & 4)
    cos *= 1.0 - 0.5 * float(~(octant - 2) & 4)
    return sin, cos


@jit.njit
def _normal_float32_span(start, stop, words, out, mean, std, scaled):
    for block in range(start, stop):
        base = 16 * block
        for j in range(8):
            u1 = float(words[base + j] & 0xFFFFFF) * _UNIFORM_24
            u2 = float(words[base + 8 + j] & 0xFFFFFF) * _UNIFORM_24
            radius = _round32(math.sqrt(_round32(-2.0 * _log_of_one_minus(u1))))
            sin, cos = _sincos_of_angle(u2)
            # + 0: torch's fma(x, 1, 0) turns -0 into +0
            out[base + j] = np.float32(cos * radius) + np.float32(0)
            out[base + 8 + j] = np.float32(sin * radius) + np.float32(0)
        if scaled:  # a loop of its own: the one above stays free of the tie check's branch
            for j in range(base, base + 16):
                out[j] = _fma32_exact(float(out[j]), std, mean)


@jit.njit
def _normal_float64_span(start, stop, words, out, mean, std, scaled):
    for block in range(start, stop):
        base = 16 * block
        for j in range(8):
            # random64(): the first word is the high half; 53 low bits make the uniform
            at = 2 * (base + j)
            u1 = float(((np.uint64(words[at]) & 0x1FFFFF) << 32) | words[at + 1]) * _UNIFORM_53
            at = 2 * (base + 8 + j)
            u2 = float(((np.uint64(words[at]) & 0x1FFFFF) << 32) | words[at + 1]) * _UNIFORM_53
            radius = math.sqrt(-2.0 * math.log(1.0 - u1))
            theta = _TWO_PI_64 * u2
            first = radius * math.cos(theta)
            second = radius * math.sin(theta)
            if scaled:
                first = _fma64(first, std, mean)
                second = _fma64(second, std, mean)
            out[base + j] = first
            out[base + 8 + j] = second


def normal_blocks(words: np.ndarray, out: np.ndarray, mean: float, std: float) -> None:
    """torch's Box-Muller over whole blocks of 16 into ``out`` (float32 or float64, 1-d,
    contiguous, a multiple of 16 long) from mt19937 ``words`` (uint32): one word per float32
    value, two per float64 value."""
    per_value = 2 if out.dtype == np.float64 else 1
    if out.ndim != 1 or out.size % 16 or words.shape != (per_value * out.size,):
        raise ValueError(
            f"normal_blocks: {words.shape} words cannot fill {out.shape} values of "
            f"{out.dtype} in blocks of 16"
        )
    if not (out.flags.c_contiguous and words.flags.c_contiguous and words.dtype == np.uint32):
        raise ValueError("normal_blocks: contiguous uint32 words and output expected")
    scaled = std != 1.0 or mean != 0.0
    if out.dtype == np.float32:
        kernel, mean, std = _normal_float32_span, float(_f32(mean)), float(_f32(std))
    else:
        kernel, mean, std = _normal_float64_span, float(mean), float(std)
    jit.parallel_for(kernel, out.size // 16, words, out, mean, std, scaled, min_chunk=_MIN_BLOCKS)


@jit.njit
def _swap_shuffle(words, perm):
    n = perm.size
    for i in range(n - 1):
        j = i + np.int64(np.uint32(words[i]) % np.uint32(n - i))
        perm[i], perm[j] = perm[j], perm[i]


@jit.njit
def _inside_out_shuffle(words, perm):
    for i in range(perm.size):
        z = np.int64(words[i] % np.uint64(i + 1))
        perm[i] = perm[z]
        perm[z] = i


def fisher_yates(words: np.ndarray) -> np.ndarray:
    """torch's randperm(n) below 2^32 / 20 from ``n - 1`` uint32 words: the identity, then
    ``swap(p[i], p[i + words[i] % (n - i)])`` for i = 0..n-2."""
    if words.dtype != np.uint32 or words.ndim != 1:
        raise ValueError(f"fisher_yates: 1-d uint32 words expected, got {words.dtype}")
    perm = np.arange(words.size + 1, dtype=np.int64)
    _swap_shuffle(words, perm)
    return perm


def inside_out(words64: np.ndarray) -> np.ndarray:
    """torch's randperm(n) from 2^32 / 20 up, from ``n`` uint64 words: ``p[i] = p[z];
    p[z] = i`` with ``z = words64[i] % (i + 1)``."""
    if words64.dtype != np.uint64 or words64.ndim != 1:
        raise ValueError(f"inside_out: 1-d uint64 words expected, got {words64.dtype}")
    perm = np.empty(words64.size, dtype=np.int64)
    _inside_out_shuffle(words64, perm)
    return perm
