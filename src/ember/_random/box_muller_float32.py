"""torch's float32 Box-Muller for 16 values or more, bit for bit, in NumPy (the fallback of
the compiled loop in :mod:`ember._kernels.random_jit`, and its reference in the tests).

torch's ``normal_fill_16_AVX2`` evaluates Cephes' float32 ``log`` and ``sincos`` with fused
multiply-adds (:mod:`.cephes_float32` replays them for any input). Here the same arithmetic
runs on float64 arrays that hold float32 values: a product of two float32 values is exact in
float64, so ``a * b + c`` rounds once in float64 and once more to float32. That second
rounding is wrong only when the float64 sum lands on a float32 tie it did not reach exactly;
Box-Muller's inputs are the 2^24 uniforms k·2^-24, and for every one of them no step does
(tests/test_random_box_muller.py checks all of them against :mod:`.cephes_float32`), so the
tie check is left out. Buffers are reused across blocks: fresh large arrays cost page faults.
"""

from __future__ import annotations

import numpy as np

from .cephes_float32 import (
    _COS_POLY,
    _FOUR_OVER_PI,
    _LOG_POLY,
    _LOG_Q1,
    _LOG_Q2,
    _PI_OVER_4_PARTS,
    _SIN_POLY,
    _SQRT_HALF,
    _fma,
)

_f32, _f64 = np.float32, np.float64
_LOG_POLY_32 = [_f32(c) for c in _LOG_POLY]
_TWO_PI = _f32(2.0 * np.pi)
_CHUNK = 1 << 15  # normals per block of work: its float64 temporaries stay in the L2 cache


class _Workspace:
    """float64 buffers of one chunk's half (8 of every 16 values, as (blocks, 8)) and a
    float32 scratch of the same shape."""

    def __init__(self, blocks: int):
        self.scratch = np.empty((blocks, 8), dtype=_f32)
        self.a, self.b, self.c, self.d, self.e = (np.empty((blocks, 8)) for _ in range(5))

    def head(self, blocks: int) -> _Workspace:
        """The same buffers cut to the first ``blocks`` rows (the last, shorter chunk)."""
        part = object.__new__(_Workspace)
        for name in ("scratch", "a", "b", "c", "d", "e"):
            setattr(part, name, getattr(self, name)[:blocks])
        return part

    def round(self, t: np.ndarray) -> np.ndarray:
        """``t`` rounded to float32, in place (held as float64)."""
        np.copyto(self.scratch, t, casting="same_kind")
        np.copyto(t, self.scratch)
        return t

    def fma(self, a: np.ndarray, b, c, out: np.ndarray) -> np.ndarray:
        """float32 ``a*b + c`` into ``out`` (which may be ``a``, not ``c``), without the tie
        check."""
        np.multiply(a, b, out=out)
        out += c
        return self.round(out)


def _log_of_one_minus(u: np.ndarray, w: _Workspace, out: np.ndarray) -> None:
    """``log(1 - u)`` as torch computes it, into ``out`` (float32)."""
    x = _f32(1) - u
    bits = x.view(np.int32)
    mantissa = ((bits & ~np.int32(0x7F800000)) | np.int32(0x3F000000)).view(_f32)  # [0.5, 1)
    small = mantissa < _SQRT_HALF
    exponent = ((bits >> 23) - (0x7F - 1) - small).astype(_f32)
    m32 = mantissa - _f32(1)
    m32 += mantissa * small  # np.where is several times slower
    m, z, y, e = w.a, w.b, w.c, w.d
    np.copyto(m, m32)
    np.multiply(m32, m32, out=w.scratch)
    np.copyto(z, w.scratch)
    w.fma(m, _LOG_POLY_32[0], _LOG_POLY_32[1], y)
    for coefficient in _LOG_POLY_32[2:]:
        w.fma(y, m, coefficient, y)
    y *= m
    w.round(y)
    np.multiply(exponent, _LOG_Q1, out=w.scratch)
    np.copyto(e, w.scratch)
    w.fma(y, z, e, y)
    z *= 0.5  # exact
    y -= z
    w.round(y)
    y += m
    w.round(y)
    np.copyto(e, exponent)
    e *= _LOG_Q2  # exact: a small integer times a short constant
    e += y
    np.copyto(out, e, casting="same_kind")


def _sincos_of_angle(u: np.ndarray, w: _Workspace, sin: np.ndarray, cos: np.ndarray) -> None:
    """``sin`` and ``cos`` of ``2π·u`` as torch computes them (non-negative angles)."""
    x32 = _TWO_PI * u
    octant = (x32 * _FOUR_OVER_PI).astype(np.int32)
    octant += 1
    octant &= ~np.int32(1)
    x, z, spare, sin_poly, y = w.a, w.b, w.c, w.d, w.e
    np.copyto(y, octant)
    np.copyto(x, x32)
    for part in _PI_OVER_4_PARTS:  # x reduced by y·π/4, into the spare buffer (out ≠ c)
        w.fma(y, _f64(part), x, spare)
        x, spare = spare, x
    cos_poly = spare
    np.multiply(x, x, out=z)
    w.round(z)
    w.fma(z, _f64(_COS_POLY[0]), _COS_POLY[1], cos_poly)
    w.fma(cos_poly, z, _COS_POLY[2], cos_poly)
    cos_poly *= z
    w.round(cos_poly)
    np.multiply(z, -0.5, out=y)  # exact
    w.fma(cos_poly, z, y, cos_poly)
    cos_poly += 1.0
    w.fma(z, _f64(_SIN_POLY[0]), _SIN_POLY[1], sin_poly)
    w.fma(sin_poly, z, _SIN_POLY[2], sin_poly)
    sin_poly *= z
    w.round(sin_poly)
    w.fma(sin_poly, x, x, sin_poly)
    # select and sign with bit operations: np.where and masked negation are far slower
    np.copyto(cos, cos_poly, casting="same_kind")
    np.copyto(sin, sin_poly, casting="same_kind")
    cos_bits, sin_bits = cos.view(np.int32), sin.view(np.int32)
    swap = -((octant >> 1) & 1)  # all ones where sin takes the cos polynomial
    swap &= sin_bits ^ cos_bits
    sin_bits ^= swap
    cos_bits ^= swap
    sin_bits ^= (octant & 4) << 29  # bit 2 of the octant to the sign bit
    octant -= 2
    np.invert(octant, out=octant)
    octant &= 4
    octant <<= 29
    cos_bits ^= octant


def standard_normal_blocks(uniform: np.ndarray, out: np.ndarray) -> None:
    """Box-Muller on blocks of 16 float32 uniforms into ``out``: radius from the first 8 (as
    1 - u), angle from the last 8; cos values first, then sin values."""
    blocks = uniform.reshape(-1, 2, 8)
    normals = out.reshape(-1, 2, 8)
    per_chunk = _CHUNK // 16
    w = _Workspace(min(len(blocks), per_chunk))
    radius = np.empty_like(w.scratch)
    for start in range(0, len(blocks), per_chunk):
        stop = min(start + per_chunk, len(blocks))
        part = w if stop - start == per_chunk else w.head(stop - start)
        r = radius[: stop - start]
        _log_of_one_minus(blocks[start:stop, 0], part, r)
        r *= _f32(-2)
        np.sqrt(r, out=r)
        cos, sin = normals[start:stop, 0], normals[start:stop, 1]
        _sincos_of_angle(blocks[start:stop, 1], part, sin, cos)
        sin *= r
        cos *= r
    out += _f32(0)  # fma(x, 1, 0) is x + 0: exact, and -0 becomes +0


def box_muller_16_float32(
    uniform: np.ndarray, mean: float, std: float, out: np.ndarray | None = None
) -> np.ndarray:
    """torch's float32 normals from blocks of 16 uniforms, ``* std + mean`` fused."""
    normals = np.empty_like(uniform) if out is None else out
    standard_normal_blocks(uniform, normals)
    if std != 1.0 or mean != 0.0:
        normals[...] = _fma(normals, _f32(std), _f32(mean))
    return normals
