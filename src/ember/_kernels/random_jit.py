"""Compiled loops of torch's CPU random transforms: Box-Muller on blocks of 16, and randperm's
shuffles.

The Box-Muller loops take the raw mt19937 words and do in one pass what the NumPy paths of
:mod:`ember._random` do in several: words to uniforms, the transform, ``* std + mean``.
float32 runs torch's own arithmetic (``normal_fill_16_AVX2``): float32 operations and fused
multiply-adds (``llvm.fma``, one instruction on CPUs with FMA), which the NumPy path emulates
in float64 and is checked against for every uniform (tests/test_random_box_muller.py);
written as one flat loop per block half, it vectorises 8 wide. float64 repeats the NumPy
path's operations (libm's ``log``/``cos``/``sin``, the error-free ``* std + mean``). Either
way the bits are torch's. Blocks are independent once the words are drawn, so
:func:`~ember._kernels.jit.parallel_for` splits them over ember's threads. The shuffles are
torch's own swap loops: sequential, and a direct loop beats any loop-free rewrite in NumPy.
"""

from __future__ import annotations

import math

import numpy as np
from llvmlite import ir
from numba.core import types
from numba.extending import intrinsic

from ember._kernels import jit
from ember._random import cephes_float32

_f32 = np.float32
# torch's avx_mathfun.h constants, from the NumPy path (numba reads module globals as constants)
_SQRT_HALF = cephes_float32._SQRT_HALF
_LOG_P0, _LOG_P1, _LOG_P2, _LOG_P3, _LOG_P4, _LOG_P5, _LOG_P6, _LOG_P7, _LOG_P8 = (
    _f32(c) for c in cephes_float32._LOG_POLY
)
_LOG_Q1, _LOG_Q2 = cephes_float32._LOG_Q1, cephes_float32._LOG_Q2  # ln 2 in two parts
_TWO_PI_32 = _f32(2.0 * np.pi)
_FOUR_OVER_PI = _f32(1.27323954473516)
_DP1, _DP2, _DP3 = (  # -π/4 in three parts
    _f32(-0.78515625),
    _f32(-2.4187564849853515625e-4),
    _f32(-3.77489497744594108e-8),
)
_COS_C0, _COS_C1, _COS_C2 = (
    _f32(c) for c in (2.443315711809948e-5, -1.388731625493765e-3, 4.166664568298827e-2)
)
_SIN_S0, _SIN_S1, _SIN_S2 = (_f32(c) for c in (-1.9515295891e-4, 8.3321608736e-3, -1.6666654611e-1))
_ZERO, _HALF, _ONE, _MINUS_TWO = _f32(0), _f32(0.5), _f32(1), _f32(-2)
_UNIFORM_24 = _f32(2.0**-24)
_TWO_PI_64 = 2.0 * np.pi
_UNIFORM_53 = 2.0**-53
_SPLITTER = 134217729.0  # 2^27 + 1: splits a double into two 26-bit halves

# blocks of 16 values per thread below which a hand-off costs more than it saves
_MIN_BLOCKS = 1 << 11


@intrinsic
def _fma(typingctx, a, b, c):
    """float32 ``a*b + c`` rounded once (``llvm.fma.f32``)."""
    if not all(arg == types.float32 for arg in (a, b, c)):
        return None

    def codegen(context, builder, signature, args):
        return builder.fma(*args)

    return types.float32(types.float32, types.float32, types.float32), codegen


@intrinsic
def _bits(typingctx, x):
    """The bits of a float32, as an int32."""
    if x != types.float32:
        return None

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.IntType(32))

    return types.int32(types.float32), codegen


@intrinsic
def _float(typingctx, bits):
    """The float32 of the given int32 bits."""
    if bits != types.int32:
        return None

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.FloatType())

    return types.float32(types.int32), codegen


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
    """``log(1 - u)`` of torch's float32 kernel (Cephes' polynomial, see
    ember._random.cephes_float32)."""
    bits = _bits(_ONE - u)  # exact: u is a multiple of 2^-24 in [0, 1)
    mantissa = _float(np.int32((bits & np.int32(~0x7F800000)) | np.int32(0x3F000000)))
    small = mantissa < _SQRT_HALF  # [0.5, 1) -> [√½, √2)
    m = mantissa - _ONE
    m += mantissa if small else _ZERO  # exact
    e = np.float32(np.int32((bits >> 23) - 126 - np.int32(small)))
    z = m * m
    y = _fma(m, _LOG_P0, _LOG_P1)
    y = _fma(y, m, _LOG_P2)
    y = _fma(y, m, _LOG_P3)
    y = _fma(y, m, _LOG_P4)
    y = _fma(y, m, _LOG_P5)
    y = _fma(y, m, _LOG_P6)
    y = _fma(y, m, _LOG_P7)
    y = _fma(y, m, _LOG_P8)
    y = y * m
    y = _fma(y, z, e * _LOG_Q1)
    y = y - z * _HALF
    return _fma(e, _LOG_Q2, y + m)


@jit.njit(inline="always")
def _sincos_of_angle(u):
    """(sin, cos) of ``2π·u`` of torch's float32 kernel (non-negative angles)."""
    x = _TWO_PI_32 * u
    octant = np.int32(x * _FOUR_OVER_PI)
    octant = np.int32((octant + 1) & np.int32(~1))
    y = np.float32(octant)
    x = _fma(y, _DP1, x)
    x = _fma(y, _DP2, x)
    x = _fma(y, _DP3, x)
    z = x * x
    cos_poly = _fma(z, _COS_C0, _COS_C1)
    cos_poly = _fma(cos_poly, z, _COS_C2)
    cos_poly = cos_poly * z
    cos_poly = _fma(cos_poly, z, -(z * _HALF)) + _ONE
    sin_poly = _fma(z, _SIN_S0, _SIN_S1)
    sin_poly = _fma(sin_poly, z, _SIN_S2)
    sin_poly = sin_poly * z
    sin_poly = _fma(sin_poly, x, x)
    swap = (octant & 2) != 0
    sin = cos_poly if swap else sin_poly
    cos = sin_poly if swap else cos_poly
    # the signs: bit 2 of the octant for sin, of ~(octant - 2) for cos
    sin = _float(np.int32(_bits(sin) ^ ((octant & 4) << 29)))
    cos = _float(np.int32(_bits(cos) ^ ((~(octant - 2) & 4) << 29)))
    return sin, cos


@jit.njit
def _normal_float32_span(start, stop, words, out, mean, std, scaled, half):
    # ``half`` is 8, an argument so that LLVM vectorises the loop instead of unrolling it
    first_half = np.empty(half, dtype=np.float32)
    second_half = np.empty(half, dtype=np.float32)
    for block in range(start, stop):
        base = 16 * block
        for j in range(half):
            u1 = np.float32(np.int32(words[base + j] & 0xFFFFFF)) * _UNIFORM_24
            u2 = np.float32(np.int32(words[base + 8 + j] & 0xFFFFFF)) * _UNIFORM_24
            radius = np.float32(math.sqrt(_MINUS_TWO * _log_of_one_minus(u1)))
            sin, cos = _sincos_of_angle(u2)
            # + 0: torch's fma(x, 1, 0) turns -0 into +0
            first_half[j] = cos * radius + _ZERO
            second_half[j] = sin * radius + _ZERO
        if scaled:
            for j in range(half):
                first_half[j] = _fma(first_half[j], std, mean)
                second_half[j] = _fma(second_half[j], std, mean)
        for j in range(8):
            out[base + j] = first_half[j]
            out[base + 8 + j] = second_half[j]


@jit.njit(inline="always")
def _uniform53(words, at):
    """torch's float64 uniform from random64() = words[at] (high half), words[at + 1]."""
    return float(((np.uint64(words[at]) & 0x1FFFFF) << 32) | words[at + 1]) * _UNIFORM_53


@jit.njit
def _normal_float64_span(start, stop, words, out, mean, std, scaled):
    for block in range(start, stop):
        base = 16 * block
        for j in range(8):
            u1 = _uniform53(words, 2 * (base + j))
            u2 = _uniform53(words, 2 * (base + 8 + j))
            radius = math.sqrt(-2.0 * math.log(1.0 - u1))
            theta = _TWO_PI_64 * u2
            first = radius * math.cos(theta)
            second = radius * math.sin(theta)
            if scaled:
                first = _fma64(first, std, mean)
                second = _fma64(second, std, mean)
            out[base + j] = first
            out[base + 8 + j] = second


@jit.njit
def _scalar_normal_pairs_span(start, stop, words, out):
    for pair in range(start, stop):
        theta = _TWO_PI_64 * _uniform53(words, 4 * pair)
        radius = math.sqrt(-2.0 * math.log1p(-_uniform53(words, 4 * pair + 2)))
        out[2 * pair] = radius * math.cos(theta)
        out[2 * pair + 1] = radius * math.sin(theta)


def scalar_normal_pairs(words: np.ndarray) -> np.ndarray:
    """torch's scalar normal sampler (``at::normal_distribution<double>``), two values per
    pair of random64() draws (four uint32 ``words``): ``u1`` the angle, ``u2`` the radius
    (``sqrt(-2 log1p(-u2))``), cos value first."""
    if words.dtype != np.uint32 or words.ndim != 1 or words.size % 4:
        raise ValueError(
            f"scalar_normal_pairs: 1-d uint32 words in fours expected, got {words.dtype} "
            f"{words.shape}"
        )
    words = np.ascontiguousarray(words)
    out = np.empty(words.size // 2, dtype=np.float64)
    jit.parallel_for(_scalar_normal_pairs_span, words.size // 4, words, out, min_chunk=1 << 14)
    return out


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
    blocks = out.size // 16
    if out.dtype == np.float32:
        jit.parallel_for(
            _normal_float32_span,
            blocks,
            *(words, out, _f32(mean), _f32(std), scaled, 8),
            min_chunk=_MIN_BLOCKS,
        )
    else:
        jit.parallel_for(
            _normal_float64_span,
            blocks,
            *(words, out, float(mean), float(std), scaled),
            min_chunk=_MIN_BLOCKS,
        )


@jit.njit
def _swap_targets(start, stop, words, targets):
    n = targets.size + 1
    for i in range(start, stop):
        targets[i] = np.int32(i + np.int64(np.uint32(words[i]) % np.uint32(n - i)))


@jit.njit
def _swap_shuffle(targets, perm):
    for i in range(targets.size):
        j = targets[i]
        perm[i], perm[j] = perm[j], perm[i]


@jit.njit
def _inside_out_shuffle(words, perm):
    for i in range(perm.size):
        z = np.int64(words[i] % np.uint64(i + 1))
        perm[i] = perm[z]
        perm[z] = i


def fisher_yates(words: np.ndarray) -> np.ndarray:
    """torch's randperm(n) for n below 2^32 / 20 from ``n - 1`` uint32 words: the identity,
    then ``swap(p[i], p[i + words[i] % (n - i)])`` for i = 0..n-2.

    The targets first (independent divisions, split over threads), then the swaps on int32
    values: the loop's random accesses touch half the memory, and no division waits on them.
    """
    if words.dtype != np.uint32 or words.ndim != 1:
        raise ValueError(f"fisher_yates: 1-d uint32 words expected, got {words.dtype}")
    if words.size >= 2**31 - 1:
        raise ValueError(f"fisher_yates: {words.size + 1} values do not fit int32")
    targets = np.empty(words.size, dtype=np.int32)
    jit.parallel_for(_swap_targets, words.size, words, targets)
    perm = np.arange(words.size + 1, dtype=np.int32)
    _swap_shuffle(targets, perm)
    return perm.astype(np.int64)


def inside_out(words64: np.ndarray) -> np.ndarray:
    """torch's randperm(n) from 2^32 / 20 up, from ``n`` uint64 words: ``p[i] = p[z];
    p[z] = i`` with ``z = words64[i] % (i + 1)``."""
    if words64.dtype != np.uint64 or words64.ndim != 1:
        raise ValueError(f"inside_out: 1-d uint64 words expected, got {words64.dtype}")
    perm = np.empty(words64.size, dtype=np.int64)
    _inside_out_shuffle(words64, perm)
    return perm


# --- mt19937 ----------------------------------------------------------------------------------
_STATE_WORDS, _SHIFT = 624, 397
_UPPER, _LOWER, _MATRIX = np.uint32(0x80000000), np.uint32(0x7FFFFFFF), np.uint32(0x9908B0DF)
_TEMPER_B, _TEMPER_C = np.uint32(0x9D2C5680), np.uint32(0xEFC60000)


@jit.njit(inline="always")
def _twisted(key, i, j, k):
    """Matsumoto & Nishimura's recurrence for word i (j = i + 1, k = i + 397, mod 624)."""
    y = np.uint32((key[i] & _UPPER) | (key[j] & _LOWER))
    return np.uint32(key[k] ^ (y >> 1) ^ ((y & np.uint32(1)) * _MATRIX))


@jit.njit
def _twist(key):
    for i in range(_STATE_WORDS - _SHIFT):
        key[i] = _twisted(key, i, i + 1, i + _SHIFT)
    for i in range(_STATE_WORDS - _SHIFT, _STATE_WORDS - 1):
        key[i] = _twisted(key, i, i + 1, i + _SHIFT - _STATE_WORDS)
    last = _STATE_WORDS - 1
    key[last] = _twisted(key, last, 0, _SHIFT - 1)


@jit.njit
def _mt19937_fill(key, position, out):
    done = 0
    while done < out.size:
        if position >= _STATE_WORDS:
            _twist(key)
            position = 0
        take = min(_STATE_WORDS - position, out.size - done)
        for i in range(take):
            y = key[position + i]
            y = np.uint32(y ^ (y >> 11))
            y = np.uint32(y ^ ((y << 7) & _TEMPER_B))
            y = np.uint32(y ^ ((y << 15) & _TEMPER_C))
            out[done + i] = y ^ (y >> 18)
        done += take
        position += take
    return position


def mt19937_words(key: np.ndarray, position: int, n: int) -> tuple[np.ndarray, int]:
    """``n`` tempered words of the Mersenne Twister whose 624-word ``key`` (uint32, advanced
    in place) is read from ``position`` (624: a twist is due), and the position after them;
    NumPy's MT19937 gives the same words from the same state."""
    if key.shape != (_STATE_WORDS,) or key.dtype != np.uint32 or not key.flags.c_contiguous:
        raise ValueError(
            f"mt19937_words: a contiguous uint32 key of 624 words expected, got "
            f"{key.dtype} {key.shape}"
        )
    if not 0 <= position <= _STATE_WORDS:
        raise ValueError(f"mt19937_words: position {position} is outside [0, 624]")
    out = np.empty(n, dtype=np.uint32)
    return out, int(_mt19937_fill(key, position, out))


# --- the C library's float64 functions, elementwise ---------------------------------------------
def _libm_span(function):
    """A compiled ``out[i] = function(x[i])`` over ``[start, stop)`` for one of libm's functions
    (numba reads the captured ``function`` as a constant: each span is a direct call)."""

    @jit.njit
    def span(start, stop, x, out):
        for i in range(start, stop):
            out[i] = function(x[i])

    return span


_LIBM_SPANS = {
    name: _libm_span(getattr(math, name)) for name in ("log", "log1p", "tan", "exp", "cos", "sin")
}


def libm(name: str, values: np.ndarray) -> np.ndarray:
    """The C library's ``name`` (log, log1p, tan, exp, cos or sin) of float64 ``values``, element by
    element: the values torch's CPU kernels get (NumPy's SIMD versions differ by an ulp now
    and then)."""
    flat = np.ascontiguousarray(values, dtype=np.float64).reshape(-1)
    out = np.empty_like(flat)
    jit.parallel_for(_LIBM_SPANS[name], flat.size, flat, out, min_chunk=1 << 14)
    return out.reshape(np.shape(values))
