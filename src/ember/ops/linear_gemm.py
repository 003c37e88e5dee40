"""linear's forward GEMM ``x Wᵀ``, computed the way round that NumPy's OpenBLAS runs fastest.

OpenBLAS's AVX-512 single-precision kernels (core types SkylakeX, Cooperlake, SapphireRapids)
are slow for a row-major ``x Wᵀ`` with few rows: on a Zen 4 EPYC (SkylakeX kernels) a batch
of 32 through 784 -> 512 took 464 µs on one thread, where the transposed product
``(W xᵀ)ᵀ`` (one GEMM on the same operands, then a copy of the small result into C order)
took 301 µs; 32 x 512 -> 512: 282 against 200 µs; with 8-16 rows 0.3-0.55 of the time. The
AVX2 kernels (Haswell) run both ways alike (and ``W xᵀ`` is 3.8x slower at 8 x 1024 ->
4096), float64 gains nothing, and from ~96 rows the two are within 10 % (from 512 rows the
transposed way is slower). ``benchmarks/linear_gemm_layout.py`` measures the table.

So where the core type is one of those, the dtype float32, the rows at most
:data:`TRANSPOSED_MAX_ROWS` and both feature counts at least :data:`TRANSPOSED_MIN_FEATURES`,
the forward product is ``W xᵀ``; each output element is the same dot product, summed in the
BLAS's own order (a last-bit difference from ``x Wᵀ`` at most, as between two BLAS builds).
"""

from __future__ import annotations

from .. import _backend
from . import linalg  # it imports this module: read its gemm when called
from ._recorded import KernelCall, kernel_call, recorder

TRANSPOSED_MAX_ROWS = 64
TRANSPOSED_MIN_FEATURES = 128
_SLOW_ROW_MAJOR_NT = ("skylakex", "cooperlake", "sapphirerapids")
openblas_core_type = _backend.openblas_core_type


def _transposed_product(x, w):
    """``x Wᵀ`` as ``(W xᵀ)ᵀ`` in C order (x: rows x in, W: out x in)."""
    return (w @ x.T).T.copy()  # ndarray.copy: C order


_TRANSPOSED_PRODUCT = KernelCall(_transposed_product)


def linear_product(xp, x, w):
    """``x Wᵀ`` for 2-D ``x`` (rows, in) and ``W`` (out, in): :func:`linalg.gemm`, or on the
    OpenBLAS kernels that run it slowly the transposed product (see the module docstring);
    under ``ember.compile``'s recording, that product as one recorded step."""
    rows, features = x.shape
    if (
        rows <= TRANSPOSED_MAX_ROWS
        and features >= TRANSPOSED_MIN_FEATURES
        and w.shape[0] >= TRANSPOSED_MIN_FEATURES
        and x.dtype.char == "f"
        and w.dtype.char == "f"
        and (_backend.is_ndarray(x) or recorder(xp) is not None)
        and w.__class__ is x.__class__
        and openblas_core_type() in _SLOW_ROW_MAJOR_NT
    ):
        return kernel_call(xp, _TRANSPOSED_PRODUCT, x, w)
    return linalg.gemm(xp, x, w.T)
