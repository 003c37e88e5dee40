"""Compiled gate kernels of the fused recurrent layers (``ember.ops.rnn``): one pass per time
step over a step's rows for all the gate nonlinearities and state updates, forward and
backward, instead of NumPy's several passes (each ``tanh``, ``*`` and ``+`` a loop of its own).

The caller (``ember.ops.rnn``) keeps the layouts of its NumPy path: the gates of a step are
the rows ``start:start + n`` of a (rows, k·hidden) matrix whose sigmoid blocks were computed
with halved weights, so that σ(x) = ½ tanh(x/2) + ½ comes from one ``tanh``; the recurrent
product of the step (rows 0:n) comes from BLAS before the kernel runs. The kernels save the
same arrays as the NumPy path, so either backward can follow either forward. Scalars ``one``
and ``half`` arrive typed as the arrays (a Python ``1`` would widen float32 maths to float64).

The time loops (``gru_forward_loop`` and the like) run every step of a layer and direction
in one call: each step's recurrent GEMM, then its gate kernel, instead of two Python calls and
their dispatch per step. LSTM's and GRU's loops multiply by ``W_hh`` packed once per layer
(``packed_gemm_jit``: ~1.4x OpenBLAS on a step's few rows), and without saving
(:func:`lstm_inference_loop`) add the step's input projection and bias in the same product.
The other GEMMs call the OpenBLAS NumPy itself uses (``cblas_?gemm``,
found through ``ember._backend.numpy_blas``) by its address, as a numba first-class function:
the same library and call as NumPy's ``matmul`` on these C-contiguous matrices, under the
thread count the caller set. (numba's own ``np.dot`` calls SciPy's OpenBLAS instead: measured
1.5x slower on the (32, 128) x (128, 512) step of a 128-unit LSTM.) Where NumPy's BLAS cannot
be reached, :func:`gemm_for` is None and the caller keeps its per-step loop. The loops live in
this file with the kernels they inline: numba's disk cache is keyed on the file of the cached
function, so loops in another file would keep stale copies of edited kernels (for the packed
products they inline, see ``PACKED_GEMM_SOURCE``).

numba does not check bounds: ``ember.ops.rnn`` checks the steps against the arrays and makes
every matrix a loop's GEMM reads or writes C-contiguous first.
"""

from __future__ import annotations

import ctypes
import math

import numba
import numba.experimental.function_type  # noqa: F401  (registers typeof for the BLAS address)
import numpy as np
from numba import types
from numba.extending import overload

from . import jit
from .packed_gemm_jit import pack, packed_affine_pair, packed_product

# numba keys a function's disk cache on the content of its own file only, so the loops here
# would keep stale copies of edited packed products: this names the packed_gemm_jit.py they
# were written against (its SHA-256, first 16 hex digits); a test fails when that file
# changes, and updating the digest changes this file, which recompiles the loops
PACKED_GEMM_SOURCE = "77559f259312be56"

# Eigen's float32 tanh (the one torch's CPU kernels follow): odd rational 13/6, clamped where
# tanh rounds to ±1 in float32; a few ulp from the true value, and vectorisable (no libm call)
_CLAMP32 = np.float32(7.90531110763549805)
_P32 = tuple(
    np.float32(v)
    for v in (
        -2.76076847742355e-16,
        2.00018790482477e-13,
        -8.60467152213735e-11,
        5.12229709037114e-08,
        1.48572235717979e-05,
        6.37261928875436e-04,
        4.89352455891786e-03,
    )
)
_Q32 = tuple(
    np.float32(v)
    for v in (
        1.19825839466702e-06,
        1.18534705686654e-04,
        2.26843463243900e-03,
        4.89352518554385e-03,
    )
)
_P0, _P1, _P2, _P3, _P4, _P5, _P6 = _P32
_Q0, _Q1, _Q2, _Q3 = _Q32


def gate_tanh(x):  # replaced by the overload inside compiled code
    return np.tanh(x)


# "contract": the polynomials' multiply-adds fused where the CPU has FMA (a float32 LSTM step's
# gates ~12 % faster; float64 has no arithmetic here to fuse, its results stay NumPy's)
@overload(gate_tanh, jit_options={"error_model": "numpy", "fastmath": {"contract"}})
def _gate_tanh(x):
    if x == types.float32:

        def tanh32(x):
            v = x
            if v > _CLAMP32:  # NaN fails both tests and stays NaN
                v = _CLAMP32
            elif v < -_CLAMP32:
                v = -_CLAMP32
            v2 = v * v
            p = v2 * _P0 + _P1
            p = v2 * p + _P2
            p = v2 * p + _P3
            p = v2 * p + _P4
            p = v2 * p + _P5
            p = v2 * p + _P6
            q = v2 * _Q0 + _Q1
            q = v2 * q + _Q2
            q = v2 * q + _Q3
            return v * p / q

        return tanh32
    # float64: libm's tanh (NumPy's too), so that float64 results equal the NumPy path's
    return lambda x: math.tanh(x)


# --------------------------------------------------------------------------------------------
# LSTM: gate blocks i, f, o, g (i, f, o halved); c' = σf c + σi tanh g, h' = σo tanh c'
# --------------------------------------------------------------------------------------------
@jit.njit(error_model="numpy")
def lstm_forward_step(start, n, gates, recurrent, h, c, out, half):
    """One step without saving for backward: ``h``/``c`` rows 0:n and ``out``'s rows
    ``start:start+n`` become the new states."""
    hidden = c.shape[1]
    for r in range(n):
        row = start + r
        g = gates[row]
        rec = recurrent[r]
        cr, hr, o_row = c[r], h[r], out[row]
        # each gate block its own view: plain j indexes vectorise, offsets j + k·hidden not
        g_i, g_f = g[:hidden], g[hidden : 2 * hidden]
        g_o, g_g = g[2 * hidden : 3 * hidden], g[3 * hidden :]
        r_i, r_f = rec[:hidden], rec[hidden : 2 * hidden]
        r_o, r_g = rec[2 * hidden : 3 * hidden], rec[3 * hidden :]
        for j in range(hidden):
            si = gate_tanh(g_i[j] + r_i[j]) * half + half
            sf = gate_tanh(g_f[j] + r_f[j]) * half + half
            so = gate_tanh(g_o[j] + r_o[j]) * half + half
            tg = gate_tanh(g_g[j] + r_g[j])
            c_new = cr[j] * sf + si * tg
            cr[j] = c_new
            h_new = so * gate_tanh(c_new)
            o_row[j] = h_new
            hr[j] = h_new


@jit.njit(error_model="numpy")
def lstm_cell_step(start, n, pre, h, c, out, half):
    """:func:`lstm_forward_step` from whole pre-activations: ``pre`` rows 0:n hold the
    step's input and state products and biases summed (:func:`lstm_inference_loop`)."""
    hidden = c.shape[1]
    for r in range(n):
        p = pre[r]
        cr, hr, o_row = c[r], h[r], out[start + r]
        p_i, p_f = p[:hidden], p[hidden : 2 * hidden]
        p_o, p_g = p[2 * hidden : 3 * hidden], p[3 * hidden : 4 * hidden]
        for j in range(hidden):
            si = gate_tanh(p_i[j]) * half + half
            sf = gate_tanh(p_f[j]) * half + half
            so = gate_tanh(p_o[j]) * half + half
            c_new = cr[j] * sf + si * gate_tanh(p_g[j])
            cr[j] = c_new
            h_new = so * gate_tanh(c_new)
            o_row[j] = h_new
            hr[j] = h_new


@jit.njit(error_model="numpy")
def lstm_forward_step_saving(
    start, n, gates, recurrent, h, c, out, h_prev, c_prev, tanh_c, slopes, out_slope, one, half
):
    """As :func:`lstm_forward_step`, also saving the states the step began from, the activated
    gates (in place), their slopes (σ(1 - σ), 1 - tanh²), tanh(c') and σo·tanh'(c') at rows
    ``start:start+n``. Short loops over few arrays each: LLVM vectorises those."""
    hidden = c.shape[1]
    sigmoids = 3 * hidden
    for r in range(n):
        row = start + r
        g = gates[row]
        rec = recurrent[r]
        slope = slopes[row]
        hr, cr = h[r], c[r]
        hp, cp = h_prev[row], c_prev[row]
        for j in range(hidden):  # (a loop: numba's slice assignment is ~3x slower)
            hp[j] = hr[j]
            cp[j] = cr[j]
        for j in range(sigmoids):
            s = gate_tanh(g[j] + rec[j]) * half + half
            g[j] = s
            slope[j] = s * (one - s)  # d σ = σ (1 - σ)
        # each gate block its own view: loops over plain j from 0 vectorise, others not
        g_i, g_f = g[:hidden], g[hidden : 2 * hidden]
        g_o, g_g = g[2 * hidden : sigmoids], g[sigmoids:]
        rec_g, slope_g = rec[sigmoids:], slope[sigmoids:]
        for j in range(hidden):
            t = gate_tanh(g_g[j] + rec_g[j])
            g_g[j] = t
            slope_g[j] = one - t * t  # d tanh = 1 - tanh²
        tc = tanh_c[row]
        for j in range(hidden):
            c_new = cr[j] * g_f[j] + g_i[j] * g_g[j]
            cr[j] = c_new
            tc[j] = gate_tanh(c_new)
        o_slope = out_slope[row]
        o_row = out[row]
        for j in range(hidden):
            so = g_o[j]
            t = tc[j]
            o_slope[j] = so * (one - t * t)
            h_new = so * t
            o_row[j] = h_new
            hr[j] = h_new


@jit.njit(error_model="numpy")
def lstm_backward_step(start, n, dh, dc, g_out, gates, slopes, out_slope, tanh_c, c_prev, d_gates):
    """One step back: ``d_gates[start:start+n]`` from dh (rows 0:n, the recurrent part) plus
    ``g_out``'s rows (zeros when the output had no gradient); ``dc`` rows 0:n carried on to
    the step before (dc' σf)."""
    hidden = dc.shape[1]
    for r in range(n):  # short loops over few arrays each: LLVM vectorises those
        row = start + r
        g, slope, dg = gates[row], slopes[row], d_gates[row]
        dhr, dcr, g_row, o_slope = dh[r], dc[r], g_out[row], out_slope[row]
        for j in range(hidden):
            dhn = dhr[j] + g_row[j]
            dhr[j] = dhn  # dh rows are free: the caller's GEMM overwrites them next
            dcr[j] = dcr[j] + dhn * o_slope[j]
        # each gate block its own view: plain j indexes vectorise, offsets j + k·hidden not
        g_i, g_f, g_g = g[:hidden], g[hidden : 2 * hidden], g[3 * hidden :]
        s_i, s_f = slope[:hidden], slope[hidden : 2 * hidden]
        s_o, s_g = slope[2 * hidden : 3 * hidden], slope[3 * hidden :]
        d_i, d_f = dg[:hidden], dg[hidden : 2 * hidden]
        d_o, d_g = dg[2 * hidden : 3 * hidden], dg[3 * hidden :]
        tc = tanh_c[row]
        for j in range(hidden):
            d_o[j] = dhr[j] * tc[j] * s_o[j]
        cp = c_prev[row]
        for j in range(hidden):
            dcn = dcr[j]
            d_i[j] = dcn * g_g[j] * s_i[j]
            d_f[j] = dcn * cp[j] * s_f[j]
            d_g[j] = dcn * g_i[j] * s_g[j]
            dcr[j] = dcn * g_f[j]


# --------------------------------------------------------------------------------------------
# GRU: gate blocks r, z, n (r, z halved); n = tanh(x_n + r (W_hn h + b_hn)), h' = n + z (h - n)
# --------------------------------------------------------------------------------------------
@jit.njit(error_model="numpy")
def gru_forward_step(start, n, gates, recurrent, b_hn, h, out, half):
    """One step without saving for backward: ``h`` rows 0:n and ``out``'s rows become the
    new state (``b_hn``: zeros when the layer has no bias)."""
    hidden = h.shape[1]
    for r in range(n):
        row = start + r
        g = gates[row]
        rec = recurrent[r]
        hr, o_row = h[r], out[row]
        # each gate block its own view: plain j indexes vectorise, offsets j + k·hidden not
        g_r, g_z, g_n = g[:hidden], g[hidden : 2 * hidden], g[2 * hidden :]
        rec_r, rec_z, rec_n = rec[:hidden], rec[hidden : 2 * hidden], rec[2 * hidden :]
        for j in range(hidden):
            reset = gate_tanh(g_r[j] + rec_r[j]) * half + half
            update = gate_tanh(g_z[j] + rec_z[j]) * half + half
            new = gate_tanh(g_n[j] + (rec_n[j] + b_hn[j]) * reset)
            h_new = (hr[j] - new) * update + new
            o_row[j] = h_new
            hr[j] = h_new


@jit.njit(error_model="numpy")
def gru_forward_step_saving(
    start, n, gates, recurrent, b_hn, h, out, h_prev, new_slope, z_slope, r_slope, one, half
):
    """As :func:`gru_forward_step`, also turning ``gates[start:start+n]`` into r, z, n and
    saving the state the step began from and the backward's factors at rows ``start:``:
    d h'/d n, d h'/d z and d n/d r, each with respect to the pre-activation. Short loops over
    few arrays each: LLVM vectorises those."""
    hidden = h.shape[1]
    for r in range(n):
        row = start + r
        g = gates[row]
        rec = recurrent[r]
        hr = h[r]
        hp = h_prev[row]
        for j in range(hidden):  # (a loop: numba's slice assignment is ~3x slower)
            hp[j] = hr[j]
        for j in range(2 * hidden):
            g[j] = gate_tanh(g[j] + rec[j]) * half + half
        g_r, g_z, g_n = g[:hidden], g[hidden : 2 * hidden], g[2 * hidden :]
        rec_n = rec[2 * hidden :]
        r_row = r_slope[row]
        for j in range(hidden):
            reset = g_r[j]
            hidden_n = rec_n[j] + b_hn[j]
            r_row[j] = hidden_n * reset * (one - reset)
            g_n[j] = gate_tanh(g_n[j] + hidden_n * reset)
        n_row, z_row, o_row = new_slope[row], z_slope[row], out[row]
        for j in range(hidden):
            update = g_z[j]
            new = g_n[j]
            h_old = hr[j]
            n_row[j] = (one - update) * (one - new * new)
            z_row[j] = (h_old - new) * update * (one - update)
            h_new = (h_old - new) * update + new
            o_row[j] = h_new
            hr[j] = h_new


@jit.njit(error_model="numpy")
def gru_backward_step(start, n, dh, g_out, gates, new_slope, z_slope, r_slope, d_x, d_hh):
    """One step back: the gradients of the input part (``d_x``) and of the recurrent part
    (``d_hh``) of the pre-activations at rows ``start:``, from dh rows 0:n plus ``g_out``'s
    rows; ``dh`` rows 0:n become dh'·z, to which the caller adds ``d_hh``'s rows times W_hh."""
    hidden = dh.shape[1]
    for r in range(n):
        row = start + r
        g_r, g_z = gates[row, :hidden], gates[row, hidden : 2 * hidden]
        dx, dhh = d_x[row], d_hh[row]
        dx_r, dx_z, dx_n = dx[:hidden], dx[hidden : 2 * hidden], dx[2 * hidden :]
        dhh_r, dhh_z, dhh_n = dhh[:hidden], dhh[hidden : 2 * hidden], dhh[2 * hidden :]
        dhr, g_row = dh[r], g_out[row]
        n_row, z_row, r_row = new_slope[row], z_slope[row], r_slope[row]
        for j in range(hidden):
            dhn = dhr[j] + g_row[j]
            d_new = dhn * n_row[j]
            dx_n[j] = d_new
            d_z = dhn * z_row[j]
            dx_z[j] = d_z
            dhh_z[j] = d_z
            d_r = d_new * r_row[j]
            dx_r[j] = d_r
            dhh_r[j] = d_r
            dhh_n[j] = d_new * g_r[j]
            dhr[j] = dhn * g_z[j]


# --------------------------------------------------------------------------------------------
# RNN: h' = tanh(x W_ihᵀ + b + h W_hhᵀ) (or relu)
# --------------------------------------------------------------------------------------------
@jit.njit(error_model="numpy")
def rnn_tanh_forward_step(start, n, states, recurrent, h):
    """One step: ``states[start:start+n]`` (pre-activations from the input) plus the
    recurrent rows, through tanh in place, and copied to ``h`` rows 0:n."""
    hidden = h.shape[1]
    for r in range(n):
        s = states[start + r]
        rec = recurrent[r]
        hr = h[r]
        for j in range(hidden):
            v = gate_tanh(s[j] + rec[j])
            s[j] = v
            hr[j] = v


@jit.njit(error_model="numpy")
def rnn_relu_forward_step(start, n, states, recurrent, h, zero):
    """As :func:`rnn_tanh_forward_step` with relu (NaN stays NaN, as NumPy's maximum)."""
    hidden = h.shape[1]
    for r in range(n):
        s = states[start + r]
        rec = recurrent[r]
        hr = h[r]
        for j in range(hidden):
            v = s[j] + rec[j]
            v = zero if v < zero else v
            s[j] = v
            hr[j] = v


@jit.njit(error_model="numpy")
def rnn_backward_step(start, n, dh, g_out, slopes, d_pre):
    """One step back: ``d_pre[start:start+n]`` = (dh rows 0:n + ``g_out``'s rows) · slope."""
    hidden = dh.shape[1]
    for r in range(n):
        row = start + r
        for j in range(hidden):
            d_pre[row, j] = (dh[r, j] + g_out[row, j]) * slopes[row, j]


@jit.njit(error_model="numpy")
def rnn_relu_backward_step(start, n, dh, g_out, positive, d_pre, one, zero):
    """As :func:`rnn_backward_step` with relu's slopes as booleans (``states > 0``)."""
    hidden = dh.shape[1]
    for r in range(n):
        row = start + r
        for j in range(hidden):
            d_pre[row, j] = (dh[r, j] + g_out[row, j]) * (one if positive[row, j] else zero)


# --------------------------------------------------------------------------------------------
# time loops: one call per layer and direction runs every step, its GEMM then its gate kernel
# --------------------------------------------------------------------------------------------
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
def lstm_inference_loop(packed, starts, sizes, x, bias, h, c, out, pre, half):
    """Every step of a layer without saving for backward: the step's pre-activations
    [x rows, h] [W_ih; W_hh]ᵀ + b in one packed product (``packed_gemm_jit``), then
    :func:`lstm_cell_step`; no (rows, 4·hidden) array of projected inputs is formed."""
    for s in range(starts.shape[0]):
        start, n = starts[s], sizes[s]
        packed_affine_pair(x, start, h, n, packed, bias, pre)
        lstm_cell_step(start, n, pre, h, c, out, half)


@jit.njit(error_model="numpy")
def lstm_forward_loop_saving(
    packed, starts, sizes, gates, h, c, out, recurrent,
    h_prev, c_prev, tanh_c, slopes, out_slope, one, half,
):  # fmt: skip
    """Every step of :func:`lstm_forward_step_saving`, each after its h W_hhᵀ from W_hhᵀ
    packed once (``packed_gemm_jit``); ``recurrent`` has the packed (padded) width."""
    for s in range(starts.shape[0]):
        start, n = starts[s], sizes[s]
        packed_product(h, 0, n, packed, recurrent)
        lstm_forward_step_saving(
            start, n, gates, recurrent, h, c, out, h_prev, c_prev, tanh_c, slopes, out_slope,
            one, half,
        )  # fmt: skip


@jit.njit(error_model="numpy")
def lstm_backward_loop(
    packed, starts, sizes, dh, dc, g_out, gates, slopes, out_slope, tanh_c, c_prev, d_gates,
    product,
):  # fmt: skip
    """Every step of :func:`lstm_backward_step` (steps in backward order), each
    followed by dh = d_gates W_hh for the step before, from W_hh packed once
    (``packed_gemm_jit``) into ``product`` (the packed, padded width) and copied to dh."""
    hidden = dh.shape[1]
    for s in range(starts.shape[0]):
        start, n = starts[s], sizes[s]
        lstm_backward_step(
            start, n, dh, dc, g_out, gates, slopes, out_slope, tanh_c, c_prev, d_gates
        )
        packed_product(d_gates, start, n, packed, product)
        for r in range(n):
            dhr, pr = dh[r], product[r]
            for j in range(hidden):
                dhr[j] = pr[j]


# --------------------------------------------------------------------------------------------
# GRU
# --------------------------------------------------------------------------------------------
@jit.njit(error_model="numpy")
def gru_forward_loop(packed, starts, sizes, gates, b_hn, h, out, recurrent, half):
    """Every step of :func:`gru_forward_step`, each after its h W_hhᵀ from W_hhᵀ packed once
    (``packed_gemm_jit``); ``recurrent`` has the packed (padded) width."""
    for s in range(starts.shape[0]):
        start, n = starts[s], sizes[s]
        packed_product(h, 0, n, packed, recurrent)
        gru_forward_step(start, n, gates, recurrent, b_hn, h, out, half)


@jit.njit(error_model="numpy")
def gru_forward_loop_saving(
    packed, starts, sizes, gates, b_hn, h, out, recurrent,
    h_prev, new_slope, z_slope, r_slope, one, half,
):  # fmt: skip
    """Every step of :func:`gru_forward_step_saving`, each after its h W_hhᵀ from W_hhᵀ
    packed once (``packed_gemm_jit``); ``recurrent`` has the packed (padded) width."""
    for s in range(starts.shape[0]):
        start, n = starts[s], sizes[s]
        packed_product(h, 0, n, packed, recurrent)
        gru_forward_step_saving(
            start, n, gates, recurrent, b_hn, h, out, h_prev, new_slope, z_slope, r_slope,
            one, half,
        )  # fmt: skip


@jit.njit(error_model="numpy")
def gru_backward_loop(
    packed, starts, sizes, dh, g_out, gates, new_slope, z_slope, r_slope, d_x, d_hh, product
):
    """Every step of :func:`gru_backward_step` (steps in backward order), each
    followed by dh += d_hh W_hh (the product apart first, into ``product`` of the packed
    width: NumPy's rounding) from W_hh packed once (``packed_gemm_jit``)."""
    hidden = dh.shape[1]
    for s in range(starts.shape[0]):
        start, n = starts[s], sizes[s]
        gru_backward_step(start, n, dh, g_out, gates, new_slope, z_slope, r_slope, d_x, d_hh)
        packed_product(d_hh, start, n, packed, product)
        for r in range(n):
            dhr, pr = dh[r], product[r]
            for j in range(hidden):
                dhr[j] += pr[j]


# --------------------------------------------------------------------------------------------
# RNN (tanh or relu)
# --------------------------------------------------------------------------------------------
@jit.njit(error_model="numpy")
def rnn_forward_loop(gemm, starts, sizes, states, w_hh_t, h, recurrent, h_prev, keep, relu, zero):
    """Every step of :func:`rnn_tanh_forward_step` (or relu's), each after its
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
    """Every step of :func:`rnn_backward_step` (steps in backward order), each
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
    "gate_tanh",
    "gemm_for",
    "gru_backward_loop",
    "gru_backward_step",
    "gru_forward_loop",
    "gru_forward_loop_saving",
    "gru_forward_step",
    "gru_forward_step_saving",
    "lstm_backward_loop",
    "lstm_backward_step",
    "lstm_cell_step",
    "lstm_forward_loop_saving",
    "lstm_forward_step",
    "lstm_forward_step_saving",
    "lstm_inference_loop",
    "pack",
    "packed_affine_pair",
    "packed_product",
    "product_rows",
    "rnn_backward_loop",
    "rnn_backward_step",
    "rnn_forward_loop",
    "rnn_relu_backward_loop",
    "rnn_relu_backward_step",
    "rnn_relu_forward_step",
    "rnn_tanh_forward_step",
]
