"""Compiled time loops of the fused recurrent layers (``ember.ops.rnn``): one call per layer
and direction runs every time step, each step's recurrent GEMM and then its gate kernel
(``ember._kernels.rnn_jit``), instead of two Python calls and their dispatch per step.

The GEMMs call the OpenBLAS NumPy itself uses (``cblas_?gemm``, found through
``ember._backend.numpy_blas``) by its address, as a numba first-class function: the same
library and call as NumPy's ``matmul`` on these C-contiguous matrices, under the thread count
the caller set. (numba's own ``np.dot`` calls SciPy's OpenBLAS instead: measured 1.5x slower
on the (32, 128) x (128, 512) step of a 128-unit LSTM.) Where NumPy's BLAS cannot be reached,
:func:`gemm_for` is None and the caller keeps its per-step loop.

The loops take the steps as two int64 arrays (first row, rows) in the order they run. numba
does not check bounds: ``ember.ops.rnn`` checks the steps and shapes and makes every matrix
C-contiguous first.
"""

from __future__ import annotations

import ctypes

import numba
import numba.experimental.function_type  # noqa: F401  (registers typeof for the BLAS address)
import numpy as np
from numba import types
from numba.extending import overload

from . import jit
from .rnn_jit import (
    gru_backward_step,
    gru_forward_step,
    gru_forward_step_saving,
    lstm_backward_step,
    lstm_forward_step,
    lstm_forward_step_saving,
    rnn_backward_step,
    rnn_relu_backward_step,
    rnn_relu_forward_step,
    rnn_tanh_forward_step,
)

_ROW_MAJOR, _NO_TRANS = 101, 111  # CBLAS's enum values


class _BlasFunction(types.WrapperAddressProtocol):
    """A C function of NumPy's OpenBLAS as numba sees it: an address and a signature."""

    def __init__(self, address: int, signature) -> None:
        self._address, self._signature = address, signature

    def __wrapper_address__(self) -> int:
        return self._address

    def signature(self):
        return self._signature


_gemms: dict = {}


def gemm_for(dtype) -> _BlasFunction | None:
    """NumPy's OpenBLAS ``cblas_sgemm``/``cblas_dgemm`` for ``dtype`` (float32/float64) as a
    numba first-class function, or None where that library cannot be reached."""
    name = np.dtype(dtype).name
    if name not in _gemms:
        _gemms[name] = _find_gemm(name)
    return _gemms[name]


def _find_gemm(name: str) -> _BlasFunction | None:
    from .. import _backend

    blas = _backend.numpy_blas()
    if blas is None or name not in ("float32", "float64"):
        return None
    symbol = blas.prefix + ("cblas_sgemm" if name == "float32" else "cblas_dgemm") + blas.suffix
    function = getattr(ctypes.CDLL(blas.path), symbol, None)
    if function is None:
        return None
    address = ctypes.cast(function, ctypes.c_void_p).value
    integer = types.int64 if blas.int_type is ctypes.c_int64 else types.int32
    real = types.float32 if name == "float32" else types.float64
    pointer = types.uintp
    signature = types.void(
        integer, integer, integer, integer, integer, integer,
        real, pointer, integer, pointer, integer, real, pointer, integer,
    )  # fmt: skip
    return _BlasFunction(address, signature)


def product_rows(gemm, a, a_start, rows, b, out):
    """``out[:rows] = a[a_start:a_start + rows] @ b`` (all C-contiguous) through ``gemm``."""


@overload(product_rows, jit_options={"error_model": "numpy"})
def _product_rows(gemm, a, a_start, rows, b, out):
    for array in (a, b, out):  # the leading dimensions below are those of C layouts
        if not isinstance(array, types.Array) or array.layout != "C":
            raise numba.core.errors.TypingError(f"product_rows: {array} is not C-contiguous")
    integer = np.int64 if gemm.signature.args[0] == types.int64 else np.int32
    real = np.float32 if gemm.signature.args[6] == types.float32 else np.float64

    def product(gemm, a, a_start, rows, b, out):
        if rows == 0:
            return
        inner, width = b.shape[0], b.shape[1]
        gemm(
            integer(_ROW_MAJOR), integer(_NO_TRANS), integer(_NO_TRANS),
            integer(rows), integer(width), integer(inner),
            real(1), a.ctypes.data + np.uintp(a_start * a.strides[0]), integer(a.shape[1]),
            b.ctypes.data, integer(width), real(0), out.ctypes.data, integer(out.shape[1]),
        )  # fmt: skip

    return product


# --------------------------------------------------------------------------------------------
# LSTM (without projections)
# --------------------------------------------------------------------------------------------
@jit.njit(error_model="numpy")
def lstm_forward_loop(gemm, starts, sizes, gates, w_hh_t, h, c, out, recurrent, half):
    """Every step of :func:`rnn_jit.lstm_forward_step`, each after its h W_hhᵀ."""
    for s in range(starts.shape[0]):
        start, n = starts[s], sizes[s]
        product_rows(gemm, h, 0, n, w_hh_t, recurrent)
        lstm_forward_step(start, n, gates, recurrent, h, c, out, half)


@jit.njit(error_model="numpy")
def lstm_forward_loop_saving(
    gemm, starts, sizes, gates, w_hh_t, h, c, out, recurrent,
    h_prev, c_prev, tanh_c, slopes, out_slope, one, half,
):  # fmt: skip
    """Every step of :func:`rnn_jit.lstm_forward_step_saving`, each after its h W_hhᵀ."""
    for s in range(starts.shape[0]):
        start, n = starts[s], sizes[s]
        product_rows(gemm, h, 0, n, w_hh_t, recurrent)
        lstm_forward_step_saving(
            start, n, gates, recurrent, h, c, out, h_prev, c_prev, tanh_c, slopes, out_slope,
            one, half,
        )  # fmt: skip


@jit.njit(error_model="numpy")
def lstm_backward_loop(
    gemm, starts, sizes, dh, dc, g_out, gates, slopes, out_slope, tanh_c, c_prev, d_gates, w_hh
):
    """Every step of :func:`rnn_jit.lstm_backward_step` (steps in backward order), each
    followed by dh = d_gates W_hh for the step before."""
    for s in range(starts.shape[0]):
        start, n = starts[s], sizes[s]
        lstm_backward_step(
            start, n, dh, dc, g_out, gates, slopes, out_slope, tanh_c, c_prev, d_gates
        )
        product_rows(gemm, d_gates, start, n, w_hh, dh)


# --------------------------------------------------------------------------------------------
# GRU
# --------------------------------------------------------------------------------------------
@jit.njit(error_model="numpy")
def gru_forward_loop(gemm, starts, sizes, gates, w_hh_t, b_hn, h, out, recurrent, half):
    """Every step of :func:`rnn_jit.gru_forward_step`, each after its h W_hhᵀ."""
    for s in range(starts.shape[0]):
        start, n = starts[s], sizes[s]
        product_rows(gemm, h, 0, n, w_hh_t, recurrent)
        gru_forward_step(start, n, gates, recurrent, b_hn, h, out, half)


@jit.njit(error_model="numpy")
def gru_forward_loop_saving(
    gemm, starts, sizes, gates, w_hh_t, b_hn, h, out, recurrent,
    h_prev, new_slope, z_slope, r_slope, one, half,
):  # fmt: skip
    """Every step of :func:`rnn_jit.gru_forward_step_saving`, each after its h W_hhᵀ."""
    for s in range(starts.shape[0]):
        start, n = starts[s], sizes[s]
        product_rows(gemm, h, 0, n, w_hh_t, recurrent)
        gru_forward_step_saving(
            start, n, gates, recurrent, b_hn, h, out, h_prev, new_slope, z_slope, r_slope,
            one, half,
        )  # fmt: skip


@jit.njit(error_model="numpy")
def gru_backward_loop(
    gemm, starts, sizes, dh, g_out, gates, new_slope, z_slope, r_slope, d_x, d_hh, w_hh, product
):
    """Every step of :func:`rnn_jit.gru_backward_step` (steps in backward order), each
    followed by dh += d_hh W_hh (the product apart first: NumPy's rounding)."""
    hidden = dh.shape[1]
    for s in range(starts.shape[0]):
        start, n = starts[s], sizes[s]
        gru_backward_step(start, n, dh, g_out, gates, new_slope, z_slope, r_slope, d_x, d_hh)
        product_rows(gemm, d_hh, start, n, w_hh, product)
        for r in range(n):
            dhr, pr = dh[r], product[r]
            for j in range(hidden):
                dhr[j] += pr[j]


# --------------------------------------------------------------------------------------------
# RNN (tanh or relu)
# --------------------------------------------------------------------------------------------
@jit.njit(error_model="numpy")
def rnn_forward_loop(gemm, starts, sizes, states, w_hh_t, h, recurrent, h_prev, keep, relu, zero):
    """Every step of :func:`rnn_jit.rnn_tanh_forward_step` (or relu's), each after its
    h W_hhᵀ; with ``keep`` the state each step began from goes to ``h_prev``'s rows."""
    hidden = h.shape[1]
    for s in range(starts.shape[0]):
        start, n = starts[s], sizes[s]
        if keep:
            for r in range(n):
                hr, hp = h[r], h_prev[start + r]
                for j in range(hidden):
                    hp[j] = hr[j]
        product_rows(gemm, h, 0, n, w_hh_t, recurrent)
        if relu:
            rnn_relu_forward_step(start, n, states, recurrent, h, zero)
        else:
            rnn_tanh_forward_step(start, n, states, recurrent, h)


@jit.njit(error_model="numpy")
def rnn_backward_loop(gemm, starts, sizes, dh, g_out, slopes, d_pre, w_hh):
    """Every step of :func:`rnn_jit.rnn_backward_step` (steps in backward order), each
    followed by dh = d_pre W_hh for the step before."""
    for s in range(starts.shape[0]):
        start, n = starts[s], sizes[s]
        rnn_backward_step(start, n, dh, g_out, slopes, d_pre)
        product_rows(gemm, d_pre, start, n, w_hh, dh)


@jit.njit(error_model="numpy")
def rnn_relu_backward_loop(gemm, starts, sizes, dh, g_out, positive, d_pre, w_hh, one, zero):
    """As :func:`rnn_backward_loop` with relu's slopes as booleans (``states > 0``)."""
    for s in range(starts.shape[0]):
        start, n = starts[s], sizes[s]
        rnn_relu_backward_step(start, n, dh, g_out, positive, d_pre, one, zero)
        product_rows(gemm, d_pre, start, n, w_hh, dh)


__all__ = [
    "gemm_for",
    "gru_backward_loop",
    "gru_forward_loop",
    "gru_forward_loop_saving",
    "lstm_backward_loop",
    "lstm_forward_loop",
    "lstm_forward_loop_saving",
    "product_rows",
    "rnn_backward_loop",
    "rnn_forward_loop",
    "rnn_relu_backward_loop",
]
