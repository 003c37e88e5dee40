"""Direct 2-D convolutions at unit stride (numba, on :mod:`ember._kernels.packed_gemm_jit`'s
SIMD vectors): no columns, the image is read in place.

im2col writes ∏K copies of each image, and OpenBLAS multiplies the (O, C·∏K) weights by
them at 45-60 GFLOP/s a core for 32 output channels (a GEMM of few rows). Here an image is
laid out once with its zero frame, planes of ``Hp`` rows by ``Wp`` columns, and output
position (y, x) is computed at flat place q = y·Wp + x of that same grid: the input element
that kernel offset (i, j) multiplies with is then at q + i·d·Wp + j·d, so for every offset
consecutive outputs read consecutive inputs, and ``3·lanes`` outputs of a row take three vector
loads, whatever the image's width. (The grid's ``Wp - OW`` extra columns a row are computed
and dropped: (kw-1)·d of every Wp.) A register block is ``BLOCK`` output channels x 3 vectors
of places: per offset and channel, 3 loads, ``BLOCK`` broadcasts of packed weights and
3·``BLOCK`` fused multiply-adds, the sums kept in registers over all C·∏K terms, which are
added in (c, i, j) order: a result differs from the GEMM's by rounding only.

The input gradient of a unit-stride convolution is one too (the padded output gradient with
the flipped kernel, channels swapped), so the same kernel serves the backward.
"""

from __future__ import annotations

import numpy as np
from llvmlite import binding
from numba.core import config

from . import jit
from .packed_gemm_jit import VECTOR_BYTES, _broadcast, _load, _multiply_add, _store, _zero


def _target_has_fma_and_avx2() -> bool:
    """Whether numba compiles for a CPU with AVX2 and FMA (the host's, unless NUMBA_CPU_NAME
    names another)."""
    if config.CPU_NAME in (None, "host"):
        features = binding.get_host_cpu_features().flatten()
    else:
        features = config.CPU_FEATURES or ""
    return "+avx2" in features and "+fma" in features


# Without AVX2 and FMA (NUMBA_CPU_NAME=generic: SSE2, a multiply and an add) LLVM splits each
# vector in two and the 24 halves of the accumulators spill: 2.4-3x slower than OpenBLAS,
# which picks its kernels at run time. Callers then keep to the GEMM.
PAYS = _target_has_fma_and_avx2()
BLOCK = 4  # output channels per register block: 4 x 3 accumulators, 3 inputs, 1 broadcast
STEP_VECTORS = 3  # vectors of places per register block


def places_per_step(dtype) -> int:
    """Output places one register block covers: two SIMD vectors of ``dtype``."""
    return STEP_VECTORS * VECTOR_BYTES // np.dtype(dtype).itemsize


@jit.njit(error_model="numpy")
def pack_weights(weight, packed):
    """``packed`` (blocks, C, kh, kw, BLOCK) = the (O, C, kh, kw) ``weight``, output channels
    last in blocks of ``BLOCK`` (zeros past O): one step's weights are adjacent."""
    out_ch, channels, kh, kw = weight.shape
    for b in range(packed.shape[0]):
        for r in range(BLOCK):
            o = b * BLOCK + r
            for c in range(channels):
                for i in range(kh):
                    for j in range(kw):
                        packed[b, c, i, j, r] = weight[o, c, i, j] if o < out_ch else 0


@jit.njit(error_model="numpy")
def convolve_image(framed, plane, row, kh, kw, dilation_h, dilation_w, packed, out):
    """``out`` (blocks·BLOCK, L) at place q = Σ_{c,i,j} framed[c·plane + q + i·d_h·row +
    j·d_w] · w[o, c, i, j] for the flat (C·plane + slack) ``framed`` image (planes of
    ``plane`` elements, rows of ``row``) and :func:`pack_weights`'s ``packed``; L is a
    multiple of :func:`places_per_step`. Raises ValueError when the reads would leave
    ``framed``."""
    blocks, channels = packed.shape[0], packed.shape[1]
    places = out.shape[1]
    lanes = VECTOR_BYTES // framed.itemsize
    width = STEP_VECTORS * lanes
    last_read = (channels - 1) * plane + places - 1 + (kh - 1) * dilation_h * row
    last_read += (kw - 1) * dilation_w
    if (
        places % width != 0
        or packed.shape[2] != kh
        or packed.shape[3] != kw
        or packed.shape[4] != BLOCK
        or out.shape[0] < blocks * BLOCK
        or last_read >= framed.shape[0]
    ):
        raise ValueError("convolve_image: the image, weights and output do not fit")
    zero = _zero(framed)
    step_c = channels * kh * kw * BLOCK
    for b in range(blocks):
        w_block = b * step_c
        o = b * BLOCK * places
        for q in range(0, places, width):
            c00, c01, c02, c10, c11, c12 = zero, zero, zero, zero, zero, zero
            c20, c21, c22, c30, c31, c32 = zero, zero, zero, zero, zero, zero
            w = w_block
            for c in range(channels):
                base_c = c * plane + q
                for i in range(kh):
                    base = base_c + i * dilation_h * row
                    for j in range(kw):
                        at = base + j * dilation_w
                        v0 = _load(framed, at)
                        v1 = _load(framed, at + lanes)
                        v2 = _load(framed, at + 2 * lanes)
                        x = _broadcast(packed, w)
                        c00 = _multiply_add(x, v0, c00)
                        c01 = _multiply_add(x, v1, c01)
                        c02 = _multiply_add(x, v2, c02)
                        x = _broadcast(packed, w + 1)
                        c10 = _multiply_add(x, v0, c10)
                        c11 = _multiply_add(x, v1, c11)
                        c12 = _multiply_add(x, v2, c12)
                        x = _broadcast(packed, w + 2)
                        c20 = _multiply_add(x, v0, c20)
                        c21 = _multiply_add(x, v1, c21)
                        c22 = _multiply_add(x, v2, c22)
                        x = _broadcast(packed, w + 3)
                        c30 = _multiply_add(x, v0, c30)
                        c31 = _multiply_add(x, v1, c31)
                        c32 = _multiply_add(x, v2, c32)
                        w += BLOCK
            at = o + q
            _store(out, at, c00)
            _store(out, at + lanes, c01)
            _store(out, at + 2 * lanes, c02)
            at += places
            _store(out, at, c10)
            _store(out, at + lanes, c11)
            _store(out, at + 2 * lanes, c12)
            at += places
            _store(out, at, c20)
            _store(out, at + lanes, c21)
            _store(out, at + 2 * lanes, c22)
            at += places
            _store(out, at, c30)
            _store(out, at + lanes, c31)
            _store(out, at + 2 * lanes, c32)
