"""The float32 ``log`` and ``sincos`` of torch's AVX2 normal kernel, for any input.

On x86 CPUs with AVX2 (and AVX-512) torch's ``normal_`` on a float32 tensor runs
``normal_fill_16_AVX2``: ``log`` and ``sincos`` are the Cephes single-precision polynomials of
``avx_mathfun.h``, evaluated in float32, and the compiler fuses each ``a * b + c`` into one
fused multiply-add (the first product feeding an add, where two do). The functions below
replay that arithmetic step by step in float32; ``_fma`` rounds ``a * b + c`` once, with the
tie check that makes it exact for every input. They are the reference that the faster
Box-Muller of :mod:`.box_muller_float32` is checked against over all of its inputs.
"""

from __future__ import annotations

import numpy as np

from .fma import fma_float32

_f32 = np.float32
_SQRT_HALF = _f32(0.707106781186547524)
_LOG_POLY = [
    7.0376836292e-2,
    -1.1514610310e-1,
    1.1676998740e-1,
    -1.2420140846e-1,
    1.4249322787e-1,
    -1.6668057665e-1,
    2.0000714765e-1,
    -2.4999993993e-1,
    3.3333331174e-1,
]
_LOG_Q1, _LOG_Q2 = _f32(-2.12194440e-4), _f32(0.693359375)  # ln 2 split in two parts
_FOUR_OVER_PI = _f32(1.27323954473516)
_PI_OVER_4_PARTS = (
    _f32(-0.78515625),
    _f32(-2.4187564849853515625e-4),
    _f32(-3.77489497744594108e-8),
)
_COS_POLY = (_f32(2.443315711809948e-5), _f32(-1.388731625493765e-3), _f32(4.166664568298827e-2))
_SIN_POLY = (_f32(-1.9515295891e-4), _f32(8.3321608736e-3), _f32(-1.6666654611e-1))


def _fma(a, b, c) -> np.ndarray:
    return fma_float32(np.asarray(a, dtype=_f32), b, c)


def log_float32(x: np.ndarray) -> np.ndarray:
    """Natural log of positive float32 values: x = m·2^e with m in [√½, √2), a degree-9
    polynomial in m - 1, and e·ln 2 added in two parts."""
    x = np.maximum(x, _f32(np.finfo(_f32).tiny))
    bits = x.view(np.int32)
    exponent = ((bits >> 23) - 0x7F).astype(_f32) + _f32(1)
    mantissa = ((bits & ~np.int32(0x7F800000)) | np.int32(0x3F000000)).view(_f32)  # [0.5, 1)
    small = mantissa < _SQRT_HALF
    exponent = exponent - np.where(small, _f32(1), _f32(0))
    m = (mantissa - _f32(1)) + np.where(small, mantissa, _f32(0))
    z = m * m
    y = np.full_like(m, _f32(_LOG_POLY[0]))
    for coefficient in _LOG_POLY[1:]:
        y = _fma(y, m, _f32(coefficient))
    y = y * m
    y = _fma(y, z, exponent * _LOG_Q1)
    y = y - z * _f32(0.5)  # exact product: fused or not, the same
    return _fma(exponent, _LOG_Q2, m + y)


def sincos_float32(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(sin x, cos x) for float32 x: reduce by multiples of π/4 (π/4 in three parts), then
    Cephes' sin and cos polynomials, swapped and signed by the octant."""
    sin_negative = np.signbit(x)
    x = np.abs(x)
    octant = (x * _FOUR_OVER_PI).astype(np.int32)
    octant = (octant + 1) & ~np.int32(1)
    y = octant.astype(_f32)
    for part in _PI_OVER_4_PARTS:
        x = _fma(y, part, x)
    sin_negative = sin_negative ^ ((octant & 4) != 0)
    cos_negative = (~(octant - 2) & 4) != 0
    use_sin_poly = (octant & 2) == 0
    z = x * x
    cos_poly = np.full_like(x, _COS_POLY[0])
    for coefficient in _COS_POLY[1:]:
        cos_poly = _fma(cos_poly, z, coefficient)
    cos_poly = cos_poly * z
    cos_poly = _fma(cos_poly, z, -(z * _f32(0.5))) + _f32(1)
    sin_poly = np.full_like(x, _SIN_POLY[0])
    for coefficient in _SIN_POLY[1:]:
        sin_poly = _fma(sin_poly, z, coefficient)
    sin_poly = _fma(sin_poly * z, x, x)
    sin = np.where(use_sin_poly, sin_poly, cos_poly)
    cos = np.where(use_sin_poly, cos_poly, sin_poly)
    return np.where(sin_negative, -sin, sin), np.where(cos_negative, -cos, cos)
