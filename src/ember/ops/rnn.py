"""Recurrent layers as one graph node per layer and direction: the whole sequence at once.

The forward pass projects every time step's input with one GEMM, then per step does one GEMM
with ``W_hh`` and the gate nonlinearities in place on preallocated arrays. The node saves the
activated gates and the states each step started from; its backward walks the steps in
reverse for the gate gradients only and then forms the weight gradients as one GEMM each over
the whole sequence. Under ``create_graph`` (or a transposed-VJP forward-mode rule) the
backward reruns the composite of ember ops on the saved inputs instead, so that gradients of
any order reach them.

On NumPy arrays, when kernels are on, one compiled call (``ember._kernels.rnn_jit``, numba)
runs all steps of a layer and direction, each step's GEMM (through NumPy's own OpenBLAS, or
for LSTM and GRU against ``W_hh`` packed once per layer: ``_kernels.packed_gemm_jit``) and
its gate nonlinearities and state updates in one pass; where that BLAS cannot be reached, each
step is a NumPy GEMM and a compiled pass; else NumPy calls. All of these save the
same arrays, so either backward follows either forward. An LSTM layer that saves nothing
(no_grad) computes each step's input projection inside its loop (``_lstm_inference``).
``ember.compile`` records each pass of a layer as one call (``_one_call``) rather than its
~20 array calls per time step.

The input is a (rows, features) matrix whose time step t occupies ``sizes[t]`` rows from
``offsets[t]``; the batch may only shrink over time (a PackedSequence), and rows of finished
sequences keep their last state.
"""

from __future__ import annotations

from .. import _backend
from .._kernels import jit
from .._tensor import Tensor
from ..autograd import _cuts
from ..autograd.node import Node
from ._dispatch import array_module, grad_state, record, record_output, wrap
from ._recorded import recorder

__all__ = ["rnn_sequence"]

_FUSED_DTYPES = ("float32", "float64")


def _halved(xp, w, rows: int):
    """A copy of ``w`` with its first ``rows`` rows (the sigmoid gates' blocks) times ½.

    σ(x) = ½ tanh(x / 2) + ½: with the sigmoid gates' weights and biases halved (exact in
    binary floating point) one ``tanh`` over all gates of a step activates them, and two cheap
    in-place ops finish the sigmoids (scipy's ``expit`` costs several times a ``tanh``)."""
    if w is None:
        return None
    w = xp.array(w, copy=True)
    w[:rows] *= 0.5
    return w


def _lstm_blocks(xp, w, hidden: int):
    """``w``'s gate blocks i, f, g, o as i, f, o, g (the sigmoid gates adjacent), a copy; the
    reordering is its own inverse."""
    if w is None:
        return None
    i, f, g, o = (w[k * hidden : (k + 1) * hidden] for k in range(4))
    return xp.concatenate([i, f, o, g])


def _bias_sum(b_ih, b_hh):
    """b_ih + b_hh (either may be absent): both add to every step's gates in LSTM and RNN."""
    if b_ih is None or b_hh is None:
        return b_hh if b_ih is None else b_ih
    return b_ih + b_hh


def _transposed(xp, w):
    """``w.T`` laid out contiguously: the per-step GEMM h @ W_hhᵀ runs ~25 % faster so."""
    return xp.ascontiguousarray(w.T)


def _compiled(xp, work: int | None = None):
    """The compiled gate kernels (``ember._kernels.rnn_jit``) for NumPy arrays when kernels are
    on and the layer's gates (``work`` elements, the same count forward and backward, so both
    take the same path) are large enough, else None (the NumPy/CuPy path; ``ember.compile``'s
    recording module has no name)."""
    if getattr(xp, "__name__", "") != "numpy":
        return None
    return jit.module("rnn_jit", work)


def _contiguous_rows(xp, g_out, like):
    """The output's gradient for the backward kernels: C-contiguous, and zeros (of ``like``'s
    shape) when the output got none (adding 0 keeps the kernels free of branches)."""
    if g_out is None:
        return xp.zeros_like(like)
    return xp.ascontiguousarray(g_out)


# below this many multiply-adds a step's recurrent GEMM (batch × state by state × gates) runs
# on one thread: OpenBLAS's hand-off to a second thread costs about what it saves at this
# size, and on a busy machine a descheduled worker stalls every step (measured: 7x slower)
SERIAL_STEP_MACS = 1 << 22


def _blas_threads(xp, arrays):
    """NumPy's OpenBLAS on one thread while a layer's steps run, when each step's recurrent
    GEMM is small (``SERIAL_STEP_MACS``); the thread count is restored afterwards."""
    small = arrays[1].shape[0] * arrays[4].size <= SERIAL_STEP_MACS
    return _backend.one_blas_thread(getattr(xp, "__name__", "") == "numpy" and small)


def _serial(xp, steps, arrays):
    """``steps``, iterated under :func:`_blas_threads`."""
    if not steps:
        return
    with _blas_threads(xp, arrays):
        yield from steps


def _loops(xp, dtype):
    """The compiled kernels (with their time loops) and NumPy's GEMM for ``dtype`` when kernels
    are on and that BLAS can be called from them, else (None, None): the per-step path."""
    kernels = _compiled(xp)
    gemm = kernels.gemm_for(dtype) if kernels is not None else None
    return (kernels, gemm) if gemm is not None else (None, None)


def _step_arrays(xp, steps):
    """The steps (first row, rows) as two int64 arrays, for the compiled loops."""
    table = xp.asarray(steps, dtype=xp.int64).reshape(-1, 2)
    return xp.ascontiguousarray(table[:, 0]), xp.ascontiguousarray(table[:, 1])


class _Batch:
    """A time loop's argument whose rows are batch rows (a state or a per-step scratch), not
    rows of the whole sequence: :func:`_time_loop` gives each thread its own span of them."""

    __slots__ = ("array",)

    def __init__(self, array):
        self.array = array


# a thread's span of the batch has at least this many rows (OpenBLAS's float32 GEMM kernel
# works on 16-row blocks), and a split needs this many multiply-adds over the whole sequence
# to repay the hand-off to the pool (~20-50 us)
SPLIT_MIN_ROWS = 8
SPLIT_MIN_MACS = 1 << 22


def _batch_spans(batch: int, work: int) -> list:
    """The (first, end) batch rows each thread's time loop takes: one span unless the sequence
    has ``SPLIT_MIN_MACS`` of recurrent work and the batch gives each of ember's threads
    ``SPLIT_MIN_ROWS`` rows."""
    parts = min(_backend.get_num_threads(), batch // SPLIT_MIN_ROWS)
    if parts < 2 or work < SPLIT_MIN_MACS:
        return [(0, batch)]
    step = -(-batch // parts)
    return [(lo, min(lo + step, batch)) for lo in range(0, batch, step)]


def _splits(xp) -> bool:
    """Whether work on ``xp``'s arrays may be split over ember's threads: NumPy arrays, with a
    BLAS that :func:`ember._backend.one_blas_thread` can hold to one thread meanwhile."""
    return getattr(xp, "__name__", "") == "numpy" and _backend.numpy_blas() is not None


def _product(xp, a, b, bias=None):
    """``a @ b`` (``+ bias`` when given); a large NumPy product is split by rows over ember's
    threads, each part on one BLAS thread and adding the bias to its rows while they are in
    cache, like the time loops: after a GEMM on OpenBLAS's own threads its worker spins for a
    while and takes a core from the split loop that follows (measured: a 2-layer LSTM's split
    loops went from 20 % faster to 10 % slower)."""
    rows = a.shape[0]
    parts = min(_backend.get_num_threads(), rows // 16)
    if not _splits(xp) or parts < 2 or rows * a.shape[1] * b.shape[1] < SPLIT_MIN_MACS:
        out = a @ b
        if bias is not None:
            out += bias
        return out
    out = xp.empty((rows, b.shape[1]), dtype=xp.result_type(a, b))
    step = -(-rows // parts)

    def run(lo: int) -> None:
        part = xp.matmul(a[lo : lo + step], b, out=out[lo : lo + step])
        if bias is not None:
            part += bias

    _backend.run_spans(run, [(lo,) for lo in range(0, rows, step)])
    return out


def _time_loop(xp, arrays, loop, gemm, steps, *args) -> None:
    """``loop(gemm, starts, sizes, *args)`` over ``steps`` (first row, rows), the arguments
    marked :class:`_Batch` given as batch rows; ``gemm`` is NumPy's BLAS function or, for the
    loops that use none, the packed weights.

    A sequence's batch rows never meet (each row's recurrence reads only its own state), so
    with enough work the batch is split into spans, each span's loop on its own thread of
    ember's pool with OpenBLAS on one thread: the per-step GEMM of a small recurrent layer
    (e.g. 32 x 128 by 128 x 512) does not split across BLAS threads without costing more than
    it saves, but two loops over half the batch each run at one core's full speed."""
    starts, sizes = _step_arrays(xp, steps)
    batch = arrays[1].shape[0]
    work = int(sizes.sum()) * arrays[4].size
    spans = _batch_spans(batch, work)
    if len(spans) == 1:
        plain = [a.array if isinstance(a, _Batch) else a for a in args]
        with _blas_threads(xp, arrays):
            loop(gemm, starts, sizes, *plain)
        return

    def run(lo: int, hi: int) -> None:
        part = [a.array[lo:hi] if isinstance(a, _Batch) else a for a in args]
        loop(gemm, starts + lo, xp.clip(sizes - lo, 0, hi - lo), *part)

    _backend.run_spans(run, spans)


def _finish_sigmoid(xp, v) -> None:
    """½ t + ½ in place: the sigmoid from t = tanh(x / 2)."""
    xp.multiply(v, 0.5, out=v)
    xp.add(v, 0.5, out=v)


# --------------------------------------------------------------------------------------------
# LSTM: gates i, f, g, o; c' = σ(f) c + σ(i) tanh(g), h' = σ(o) tanh(c') (then W_hr h')
# --------------------------------------------------------------------------------------------
def _lstm_inference(xp, arrays, steps):
    """The layer without saving for backward through one compiled loop whose every step sums
    its input and state products and bias in one packed product (``rnn_jit.
    lstm_inference_loop``), or None where the compiled loops do not run."""
    x, h0, c0, w_ih, w_hh, b_ih, b_hh, _ = arrays
    hidden = w_hh.shape[0] // 4
    loops = _compiled(xp, x.shape[0] * w_hh.shape[0])
    if loops is None or _loops(xp, x.dtype)[0] is None:
        return None
    # [W_ih W_hh] with the gates as i, f, o, g and the sigmoid gates halved, as _lstm_forward's
    weights = _halved(xp, _lstm_blocks(xp, xp.concatenate([w_ih, w_hh], 1), hidden), 3 * hidden)
    packed = loops.pack(weights.T)
    width = packed.shape[0] * packed.shape[2]
    bias = xp.zeros(width, dtype=x.dtype)
    summed = _bias_sum(b_ih, b_hh)
    if summed is not None:
        bias[: 4 * hidden] = _halved(xp, _lstm_blocks(xp, summed, hidden), 3 * hidden)
    h, c = h0.copy(), c0.copy()
    out = xp.empty((x.shape[0], hidden), dtype=x.dtype)
    pre = xp.empty((c.shape[0], width), dtype=x.dtype)  # one step's pre-activations
    _time_loop(
        xp, arrays, loops.lstm_inference_loop, packed, steps, xp.ascontiguousarray(x), bias,
        _Batch(h), _Batch(c), out, _Batch(pre), x.dtype.type(0.5),
    )  # fmt: skip
    return (out, h, c), ()


def _lstm_forward(xp, arrays, steps, keep):
    x, h0, c0, w_ih, w_hh, b_ih, b_hh, w_hr = arrays
    if not keep and w_hr is None:
        fused = _lstm_inference(xp, arrays, steps)
        if fused is not None:
            return fused
    hidden = w_hh.shape[0] // 4
    # the kernels keep the gates in the order i, f, o, g: one call finishes the sigmoids
    i_, f_, o_, g_ = (slice(k * hidden, (k + 1) * hidden) for k in range(4))
    sig = slice(0, 3 * hidden)
    bias = _bias_sum(b_ih, b_hh)
    if bias is not None:
        bias = _halved(xp, _lstm_blocks(xp, bias, hidden), sig.stop)
    # activated in place
    gates = _product(xp, x, _halved(xp, _lstm_blocks(xp, w_ih, hidden), sig.stop).T, bias)
    w_hh_blocks = _halved(xp, _lstm_blocks(xp, w_hh, hidden), sig.stop)
    w_hh_t = _transposed(xp, w_hh_blocks)
    w_hr_t = w_hr.T if w_hr is not None else None
    rows = gates.shape[0]
    h, c = h0.copy(), c0.copy()
    out = xp.empty((rows, h.shape[1]), dtype=gates.dtype)
    h_prev = c_prev = tanh_c = h_cell = None
    if keep:
        h_prev = xp.empty_like(out)
        c_prev = xp.empty((rows, hidden), dtype=gates.dtype)
        tanh_c = xp.empty_like(c_prev)
        if w_hr is not None:
            h_cell = xp.empty_like(c_prev)
    # per-step scratch, reused: h W_hhᵀ, σ(i) tanh(g), and tanh(c') when nothing is kept
    recurrent = xp.empty((c.shape[0], 4 * hidden), dtype=gates.dtype)
    kernels = _compiled(xp, gates.size) if w_hr is None else None
    if kernels is not None:  # one compiled pass per step does all the gates
        half = gates.dtype.type(0.5)
        slopes = out_slope = None
        if keep:
            slopes = xp.empty_like(gates)
            out_slope = xp.empty_like(c_prev)
        loops, gemm = _loops(xp, gates.dtype)
        if loops is not None and keep:  # one compiled call runs every step (else: inference)
            packed = loops.pack(w_hh_blocks.T)  # once, for the layer's many few-row products
            recurrent = xp.empty((c.shape[0], packed.shape[0] * packed.shape[2]), gates.dtype)
            _time_loop(
                xp, arrays, loops.lstm_forward_loop_saving, packed, steps, gates, _Batch(h),
                _Batch(c), out, _Batch(recurrent), h_prev, c_prev, tanh_c, slopes, out_slope,
                gates.dtype.type(1), half,
            )  # fmt: skip
            steps = ()
        for start, n in _serial(xp, steps, arrays):
            rec = xp.matmul(h[:n], w_hh_t, out=recurrent[:n])
            if keep:
                kernels.lstm_forward_step_saving(
                    start, n, gates, rec, h, c, out, h_prev, c_prev, tanh_c, slopes,
                    out_slope, gates.dtype.type(1), half,
                )  # fmt: skip
            else:
                kernels.lstm_forward_step(start, n, gates, rec, h, c, out, half)
        kept = (gates, h_prev, c_prev, tanh_c, None, slopes, out_slope) if keep else ()
        return (out, h, c), kept
    product = xp.empty_like(c)
    tanh_now = None if keep else xp.empty_like(c)
    for start, n in _serial(xp, steps, arrays):
        stop = start + n
        hp, cp = h[:n], c[:n]
        if keep:
            h_prev[start:stop] = hp
            c_prev[start:stop] = cp
        g = gates[start:stop]
        g += xp.matmul(hp, w_hh_t, out=recurrent[:n])
        xp.tanh(g, out=g)
        _finish_sigmoid(xp, g[:, sig])
        cp *= g[:, f_]
        cp += xp.multiply(g[:, i_], g[:, g_], out=product[:n])
        tc = xp.tanh(cp, out=tanh_c[start:stop] if keep else tanh_now[:n])
        if w_hr is None:
            hn = xp.multiply(g[:, o_], tc, out=out[start:stop])
        else:
            cell = xp.multiply(g[:, o_], tc, out=h_cell[start:stop] if keep else None)
            hn = xp.matmul(cell, w_hr_t, out=out[start:stop])
        hp[...] = hn
    kept = (gates, h_prev, c_prev, tanh_c, h_cell)
    if keep:  # the derivatives of the activations, over the whole sequence at once
        slopes = 1 - gates * gates  # d tanh = 1 - tanh²
        slopes[:, sig] = gates[:, sig] * (1 - gates[:, sig])  # d σ = σ (1 - σ)
        out_slope = gates[:, o_] * (1 - tanh_c * tanh_c)  # d h / d c' = σ(o) tanh'(c')
        kept += (slopes, out_slope)
    return (out, h, c), kept


def _lstm_backward(xp, arrays, kept, grads, steps, needs):
    x, h0, c0, w_ih, w_hh, b_ih, b_hh, w_hr = arrays
    gates, h_prev, c_prev, tanh_c, h_cell, slopes, out_slope = kept
    g_out, g_h, g_c = grads
    hidden = w_hh.shape[0] // 4
    i_, f_, o_, g_ = (slice(k * hidden, (k + 1) * hidden) for k in range(4))  # as forward's
    w_hh = _lstm_blocks(xp, w_hh, hidden)
    # C-contiguous (not zeros_like a transposed h0): the compiled loops' GEMMs write its rows
    dh = g_h.copy() if g_h is not None else xp.zeros(h0.shape, dtype=h0.dtype)
    dc = g_c.copy() if g_c is not None else xp.zeros(c0.shape, dtype=c0.dtype)
    d_gates = xp.empty_like(gates)
    d_hidden = xp.empty_like(h_prev) if w_hr is not None and needs[7] else None
    kernels = _compiled(xp, gates.size) if w_hr is None else None
    if kernels is not None:
        g_rows = _contiguous_rows(xp, g_out, h_prev)
        loops, gemm = _loops(xp, gates.dtype)
        if loops is not None:  # one compiled call runs every step, GEMMs included
            packed = loops.pack(w_hh)  # once, for the layer's many few-row products
            product = xp.empty((dh.shape[0], packed.shape[0] * packed.shape[2]), dh.dtype)
            _time_loop(
                xp, arrays, loops.lstm_backward_loop, packed, steps[::-1], _Batch(dh),
                _Batch(dc), g_rows, gates, slopes, out_slope, tanh_c, c_prev, d_gates,
                _Batch(product),
            )  # fmt: skip
            steps = ()
        for start, n in _serial(xp, steps[::-1], arrays):
            kernels.lstm_backward_step(
                start, n, dh, dc, g_rows, gates, slopes, out_slope, tanh_c, c_prev, d_gates
            )
            xp.matmul(d_gates[start : start + n], w_hh, out=dh[:n])
        steps = ()  # the kernels ran every step: the NumPy loop below has none left
    for start, n in _serial(xp, steps[::-1], arrays):
        stop = start + n
        dhn = dh[:n]
        if g_out is not None:
            dhn += g_out[start:stop]
        if w_hr is not None:
            if d_hidden is not None:
                d_hidden[start:stop] = dhn
            dhn = dhn @ w_hr
        g = gates[start:stop]
        dcn = dc[:n]
        dcn += dhn * out_slope[start:stop]
        dg = d_gates[start:stop]
        xp.multiply(dhn, tanh_c[start:stop], out=dg[:, o_])
        xp.multiply(dcn, g[:, g_], out=dg[:, i_])
        xp.multiply(dcn, c_prev[start:stop], out=dg[:, f_])
        xp.multiply(dcn, g[:, i_], out=dg[:, g_])
        dg *= slopes[start:stop]
        dcn *= g[:, f_]
        xp.matmul(dg, w_hh, out=dh[:n])
    internal = list(arrays)
    internal[3] = _lstm_blocks(xp, w_ih, hidden) if needs[0] else w_ih
    result = _weight_grads(xp, internal, needs, d_gates, d_gates, h_prev)
    for k in (3, 4, 5, 6):  # back to PyTorch's gate order
        if result[k] is not None:
            result[k] = _lstm_blocks(xp, result[k], hidden)
    result[1], result[2] = dh, dc
    if d_hidden is not None:
        result[7] = _product(xp, d_hidden.T, h_cell)
    return result


# --------------------------------------------------------------------------------------------
# GRU: gates r, z, n; n = tanh(x_n + r (W_hn h + b_hn)), h' = n + z (h - n)
# --------------------------------------------------------------------------------------------
def _gru_forward(xp, arrays, steps, keep):
    x, h0, _, w_ih, w_hh, b_ih, b_hh, _ = arrays
    hidden = w_hh.shape[0] // 3
    r_, z_, n_ = (slice(k * hidden, (k + 1) * hidden) for k in range(3))
    rz = slice(0, 2 * hidden)
    bias = _halved(xp, b_ih, rz.stop)
    b_hn = None
    if b_hh is not None:  # b_hr, b_hz add to every step's gates; b_hn is scaled by r
        if bias is None:
            bias = xp.zeros_like(b_hh)
        bias[rz] += _halved(xp, b_hh[rz], rz.stop)
        b_hn = b_hh[n_]
    gates = _product(xp, x, _halved(xp, w_ih, rz.stop).T, bias)  # becomes r, z, n in place
    w_hh_halved = _halved(xp, w_hh, rz.stop)
    w_hh_t = _transposed(xp, w_hh_halved)
    rows = gates.shape[0]
    h = h0.copy()
    out = xp.empty((rows, hidden), dtype=gates.dtype)
    recurrent = xp.empty((h.shape[0], 3 * hidden), dtype=gates.dtype)  # h W_hhᵀ, reused
    h_prev = hidden_n = None
    if keep:
        h_prev = xp.empty_like(out)
        hidden_n = xp.empty_like(out)  # W_hn h + b_hn, which the reset gate scales
    kernels = _compiled(xp, gates.size)
    if kernels is not None:  # one compiled pass per step does all the gates
        one, half = gates.dtype.type(1), gates.dtype.type(0.5)
        if b_hn is None:
            b_hn = xp.zeros(hidden, dtype=gates.dtype)
        slopes = [xp.empty_like(out) for _ in range(3)] if keep else []
        loops, gemm = _loops(xp, gates.dtype)
        if loops is not None:  # one compiled call runs every step, GEMMs included
            b_hn = xp.ascontiguousarray(b_hn)
            packed = loops.pack(w_hh_halved.T)  # once, for the layer's many few-row products
            recurrent = xp.empty((h.shape[0], packed.shape[0] * packed.shape[2]), gates.dtype)
            states = (_Batch(h), out, _Batch(recurrent))
            if keep:
                _time_loop(
                    xp, arrays, loops.gru_forward_loop_saving, packed, steps, gates, b_hn,
                    *states, h_prev, *slopes, one, half,
                )  # fmt: skip
            else:
                _time_loop(
                    xp, arrays, loops.gru_forward_loop, packed, steps, gates, b_hn, *states,
                    half,
                )  # fmt: skip
            steps = ()
        for start, n in _serial(xp, steps, arrays):
            rec = xp.matmul(h[:n], w_hh_t, out=recurrent[:n])
            if keep:
                kernels.gru_forward_step_saving(
                    start, n, gates, rec, b_hn, h, out, h_prev, *slopes, one, half
                )
            else:
                kernels.gru_forward_step(start, n, gates, rec, b_hn, h, out, half)
        return (out, h, None), ((gates, h_prev, *slopes) if keep else ())
    for start, n in _serial(xp, steps, arrays):
        stop = start + n
        hp = h[:n]
        if keep:
            h_prev[start:stop] = hp
        hh = xp.matmul(hp, w_hh_t, out=recurrent[:n])
        g = gates[start:stop]
        g[:, rz] += hh[:, rz]
        xp.tanh(g[:, rz], out=g[:, rz])
        _finish_sigmoid(xp, g[:, rz])
        reset = hh[:, n_]
        if b_hn is not None:
            reset += b_hn
        if keep:
            hidden_n[start:stop] = reset
        reset *= g[:, r_]
        new = g[:, n_]
        new += reset
        xp.tanh(new, out=new)
        hn = xp.subtract(hp, new, out=out[start:stop])
        hn *= g[:, z_]
        hn += new
        hp[...] = hn
    if not keep:
        return (out, h, None), ()
    # the backward's per-step factors, over the whole sequence at once
    r, z, new = gates[:, r_], gates[:, z_], gates[:, n_]
    new_slope = (1 - z) * (1 - new * new)  # d h' / d (pre-activation of n)
    z_slope = (h_prev - new) * z * (1 - z)  # d h' / d (pre-activation of z)
    r_slope = hidden_n * r * (1 - r)  # d (pre-activation of n) / d (pre-activation of r)
    return (out, h, None), (gates, h_prev, new_slope, z_slope, r_slope)


def _gru_backward(xp, arrays, kept, grads, steps, needs):
    gates, h_prev, new_slope, z_slope, r_slope = kept
    w_hh = arrays[4]
    g_out, g_h, _ = grads
    hidden = w_hh.shape[0] // 3
    r_, z_, n_ = (slice(k * hidden, (k + 1) * hidden) for k in range(3))
    rz = slice(0, 2 * hidden)
    dh = g_h.copy() if g_h is not None else xp.zeros(arrays[1].shape, dtype=arrays[1].dtype)
    d_x = xp.empty_like(gates)  # d (x W_ihᵀ + b_ih)
    d_hh = xp.empty_like(gates)  # d (h W_hhᵀ + b_hh)
    kernels = _compiled(xp, gates.size)
    if kernels is not None:
        g_rows = _contiguous_rows(xp, g_out, h_prev)
        product = xp.empty_like(dh)
        loops, gemm = _loops(xp, gates.dtype)
        if loops is not None:  # one compiled call runs every step, GEMMs included
            packed = loops.pack(w_hh)  # once, for the layer's many few-row products
            wide = xp.empty((dh.shape[0], packed.shape[0] * packed.shape[2]), dh.dtype)
            _time_loop(
                xp, arrays, loops.gru_backward_loop, packed, steps[::-1], _Batch(dh), g_rows,
                gates, new_slope, z_slope, r_slope, d_x, d_hh, _Batch(wide),
            )  # fmt: skip
            steps = ()
        for start, n in _serial(xp, steps[::-1], arrays):
            kernels.gru_backward_step(
                start, n, dh, g_rows, gates, new_slope, z_slope, r_slope, d_x, d_hh
            )
            dh[:n] += xp.matmul(d_hh[start : start + n], w_hh, out=product[:n])
        steps = ()  # the kernels ran every step: the NumPy loop below has none left
    for start, n in _serial(xp, steps[::-1], arrays):
        stop = start + n
        dhn = dh[:n]
        if g_out is not None:
            dhn += g_out[start:stop]
        g = gates[start:stop]
        dx, dhh = d_x[start:stop], d_hh[start:stop]
        d_new = xp.multiply(dhn, new_slope[start:stop], out=dx[:, n_])
        xp.multiply(dhn, z_slope[start:stop], out=dx[:, z_])
        xp.multiply(d_new, r_slope[start:stop], out=dx[:, r_])
        dhh[:, rz] = dx[:, rz]
        xp.multiply(d_new, g[:, r_], out=dhh[:, n_])
        dhn *= g[:, z_]
        dhn += dhh @ w_hh
    result = _weight_grads(xp, arrays, needs, d_x, d_hh, h_prev)
    result[1] = dh
    return result


# --------------------------------------------------------------------------------------------
# RNN: h' = tanh(x W_ihᵀ + b_ih + h W_hhᵀ + b_hh) (or relu)
# --------------------------------------------------------------------------------------------
def _rnn_forward(xp, arrays, steps, keep, relu):
    x, h0, _, w_ih, w_hh, b_ih, b_hh, _ = arrays
    # pre-activations, then the new hidden states in place
    states = _product(xp, x, w_ih.T, _bias_sum(b_ih, b_hh))
    h = h0.copy()
    h_prev = xp.empty_like(states) if keep else None
    w_hh_t = _transposed(xp, w_hh)
    kernels = _compiled(xp, states.size)
    if kernels is not None:  # the recurrent sum and the activation in one compiled pass
        recurrent = xp.empty_like(h)
        zero = states.dtype.type(0)
        loops, gemm = _loops(xp, states.dtype)
        if loops is not None:  # one compiled call runs every step, GEMMs included
            _time_loop(
                xp, arrays, loops.rnn_forward_loop, gemm, steps, states, w_hh_t, _Batch(h),
                _Batch(recurrent), h_prev if keep else h, keep, relu, zero,
            )  # fmt: skip
            steps = ()
        for start, n in _serial(xp, steps, arrays):
            if keep:
                h_prev[start : start + n] = h[:n]
            rec = xp.matmul(h[:n], w_hh_t, out=recurrent[:n])
            if relu:
                kernels.rnn_relu_forward_step(start, n, states, rec, h, zero)
            else:
                kernels.rnn_tanh_forward_step(start, n, states, rec, h)
        steps = ()  # the kernels ran every step: the NumPy loop below has none left
    for start, n in _serial(xp, steps, arrays):
        stop = start + n
        hp = h[:n]
        if keep:
            h_prev[start:stop] = hp
        s = states[start:stop]
        s += hp @ w_hh_t
        if relu:
            xp.maximum(s, 0, out=s)
        else:
            xp.tanh(s, out=s)
        hp[...] = s
    if not keep:
        return (states, h, None), ()
    slopes = states > 0 if relu else 1 - states * states  # d tanh = 1 - tanh²
    # the caller may write into the output: the node keeps only what it derived from it
    return (states, h, None), (slopes, h_prev)


def _rnn_backward(xp, arrays, kept, grads, steps, needs):
    slopes, h_prev = kept
    w_hh = arrays[4]
    g_out, g_h, _ = grads
    dh = g_h.copy() if g_h is not None else xp.zeros(arrays[1].shape, dtype=arrays[1].dtype)
    d_pre = xp.empty(h_prev.shape, dtype=h_prev.dtype)
    kernels = _compiled(xp, h_prev.size)
    if kernels is not None:
        g_rows = _contiguous_rows(xp, g_out, h_prev)
        one, zero = d_pre.dtype.type(1), d_pre.dtype.type(0)
        loops, gemm = _loops(xp, d_pre.dtype)
        if loops is not None:  # one compiled call runs every step, GEMMs included
            w_hh = xp.ascontiguousarray(w_hh)
            if slopes.dtype.kind == "b":  # relu: states > 0
                _time_loop(
                    xp, arrays, loops.rnn_relu_backward_loop, gemm, steps[::-1], _Batch(dh),
                    g_rows, slopes, d_pre, w_hh, one, zero,
                )  # fmt: skip
            else:
                _time_loop(
                    xp, arrays, loops.rnn_backward_loop, gemm, steps[::-1], _Batch(dh), g_rows,
                    slopes, d_pre, w_hh,
                )  # fmt: skip
            steps = ()
        for start, n in _serial(xp, steps[::-1], arrays):
            if slopes.dtype.kind == "b":  # relu: states > 0
                kernels.rnn_relu_backward_step(start, n, dh, g_rows, slopes, d_pre, one, zero)
            else:
                kernels.rnn_backward_step(start, n, dh, g_rows, slopes, d_pre)
            xp.matmul(d_pre[start : start + n], w_hh, out=dh[:n])
        steps = ()  # the kernels ran every step: the NumPy loop below has none left
    for start, n in _serial(xp, steps[::-1], arrays):
        stop = start + n
        dhn = dh[:n]
        if g_out is not None:
            dhn += g_out[start:stop]
        dp = xp.multiply(dhn, slopes[start:stop], out=d_pre[start:stop])
        xp.matmul(dp, w_hh, out=dh[:n])
    result = _weight_grads(xp, arrays, needs, d_pre, d_pre, h_prev)
    result[1] = dh
    return result


def _weight_grads(xp, arrays, needs, d_input_gates, d_hidden_gates, h_prev) -> list:
    """Input, W_ih, W_hh and bias gradients from the gate gradients of all steps: one GEMM
    (or one sum) each over the whole sequence."""
    x, _, _, w_ih = arrays[:4]
    result = [None] * 8
    if needs[0]:
        result[0] = _product(xp, d_input_gates, w_ih)
    if needs[3]:
        result[3] = _product(xp, d_input_gates.T, x)
    if needs[4]:
        result[4] = _product(xp, d_hidden_gates.T, h_prev)
    if needs[5]:
        result[5] = d_input_gates.sum(0)
    if needs[6]:
        # a separate array even when equal to b_ih's: leaves may keep gradients in place
        if needs[5] and d_hidden_gates is d_input_gates:  # LSTM, RNN: one sum, copied
            result[6] = result[5].copy()
        else:
            result[6] = d_hidden_gates.sum(0)
    return result


_KERNELS = {
    "LSTM": (_lstm_forward, _lstm_backward),
    "GRU": (_gru_forward, _gru_backward),
    "RNN_TANH": (lambda xp, a, s, k: _rnn_forward(xp, a, s, k, False), _rnn_backward),
    "RNN_RELU": (lambda xp, a, s, k: _rnn_forward(xp, a, s, k, True), _rnn_backward),
}


_GATE_BLOCKS = {"LSTM": 4, "GRU": 3, "RNN_TANH": 1, "RNN_RELU": 1}


def _check_layout(mode: str, steps: list, arrays: list) -> None:
    """The states, biases and steps fit the weights and the input: the compiled kernels index
    without bounds checks, and NumPy would broadcast some mismatches silently."""
    x, h0, c0, w_ih, w_hh, b_ih, b_hh, w_hr = arrays
    rows, batch = x.shape[0], h0.shape[0]
    gates = w_hh.shape[0]
    hidden = gates // _GATE_BLOCKS[mode]
    state = w_hr.shape[0] if w_hr is not None else hidden
    wanted = [("h0", h0, (batch, state)), ("W_hh", w_hh, (gates, state))]
    wanted += [("W_ih", w_ih, (gates, x.shape[1])), ("b_ih", b_ih, (gates,))]
    wanted += [("b_hh", b_hh, (gates,)), ("c0", c0, (batch, hidden))]
    wanted += [("W_hr", w_hr, (state, hidden))]
    if gates != hidden * _GATE_BLOCKS[mode]:
        wanted[1] = ("W_hh", w_hh, (hidden * _GATE_BLOCKS[mode], state))
    for name, array, shape in wanted:
        if array is not None and array.shape != shape:
            raise ValueError(f"rnn ({mode}): {name} has shape {array.shape}, expected {shape}")
    for start, n in steps:
        if start < 0 or n < 0 or n > batch or start + n > rows:
            raise ValueError(
                f"rnn: a time step of {n} rows from row {start} does not fit an input of {rows} "
                f"rows and a batch of {batch}"
            )


class _FlatResults:
    """``function(xp, *args)`` as a function of plain arrays that returns its arrays as one
    flat tuple, and remembers where they (and the Nones) sat in ``layout``: the form in which
    ``ember.compile`` records a whole kernel as one call. Its results are new arrays, never
    views of its arguments (``fresh_outputs``: the recording may reuse its inputs' memory)."""

    fresh_outputs = True

    def __init__(self, function):
        self.function = function
        self.layout = None

    def __call__(self, arrays, *args):
        leaves = []
        self.layout = _flatten(self.function(array_module(arrays[0]), arrays, *args), leaves)
        return tuple(leaves)


def _flatten(value, leaves: list):
    if isinstance(value, (tuple, list)):
        return type(value)(_flatten(v, leaves) for v in value)
    if value is None:
        return None
    leaves.append(value)
    return len(leaves) - 1


def _unflatten(layout, leaves):
    if isinstance(layout, (tuple, list)):
        return type(layout)(_unflatten(part, leaves) for part in layout)
    return None if layout is None else leaves[layout]


def _one_call(xp, function, arrays, *args):
    """``function(xp, arrays, *args)``; while ``ember.compile`` records a step (its backend
    module has ``record_call``) one recorded call, so that a replay runs the kernel as eager
    code does instead of its ~20 array calls per time step one by one."""
    record = recorder(xp)
    if record is None:
        return function(xp, arrays, *args)
    flat = _FlatResults(function)
    leaves = record(flat, arrays, *args)
    return _unflatten(flat.layout, leaves)


# --------------------------------------------------------------------------------------------
# the graph node
# --------------------------------------------------------------------------------------------
class _SequenceBackward(Node):
    """One layer in one direction over the whole sequence. Inputs: (input rows, h0, c0, W_ih,
    W_hh, b_ih, b_hh, W_hr); outputs: (output rows, h_n) and c_n for LSTM. Saved: the inputs,
    then the kernel's arrays (wrapped, so that the engine frees them with the graph)."""

    _fast = False
    mode = ""

    def apply(self, grads: list) -> tuple:
        if grad_state.enabled:  # create_graph: differentiate the composite on the real inputs
            return self._composite_grads(grads)
        saved = self.unpack_saved()  # raises PyTorch's errors (freed, modified in place)
        arrays = [t._data if t is not None else None for t in saved[:8]]
        kept = [t._data if t is not None else None for t in saved[8:]]
        grad_arrays = [g._data if g is not None else None for g in grads]
        grad_arrays += [None] * (3 - len(grad_arrays))
        needs = [e is not None for e in self._edges]
        xp = array_module(arrays[0])
        backward = _KERNELS[self.mode][1]
        result = _one_call(xp, backward, arrays, kept, grad_arrays, self.steps, needs)
        return tuple(wrap(r) if r is not None and needs[i] else None for i, r in enumerate(result))

    def _composite_grads(self, grads: list) -> tuple:
        from ..autograd import grad as autograd_grad

        inputs = self.unpack_saved()[:8]
        wanted = [i for i, edge in enumerate(self._edges) if edge is not None]
        outs = self.compute(*inputs)
        pairs = [(o, g) for o, g in zip(outs, grads) if o is not None and g is not None]
        result = [None] * len(self._edges)
        if not pairs or not wanted:
            return tuple(result)
        found = autograd_grad(
            [o for o, _ in pairs],
            [inputs[i] for i in wanted],
            [g for _, g in pairs],
            create_graph=True,
            allow_unused=True,
        )
        for i, g in zip(wanted, found):
            result[i] = g
        return tuple(result)


class LSTMSequenceBackward0(_SequenceBackward):
    mode = "LSTM"


class GRUSequenceBackward0(_SequenceBackward):
    mode = "GRU"


class RNNTanhSequenceBackward0(_SequenceBackward):
    mode = "RNN_TANH"


class RNNReluSequenceBackward0(_SequenceBackward):
    mode = "RNN_RELU"


_NODES = {
    "LSTM": LSTMSequenceBackward0,
    "GRU": GRUSequenceBackward0,
    "RNN_TANH": RNNTanhSequenceBackward0,
    "RNN_RELU": RNNReluSequenceBackward0,
}


def _fusable(inputs: tuple) -> bool:
    """The NumPy/CuPy kernels cover float32/float64 tensors of one dtype and device, outside
    forward-mode AD (whose tangents come from the composite's graph) and autocast (whose
    casts the composite's matrix products follow)."""
    from .._autocast_state import state as autocast_state
    from ..autograd import forward_ad

    if forward_ad._levels or autocast_state.enabled["cpu"] or autocast_state.enabled["cuda"]:
        return False
    first = inputs[0]._data
    if first.dtype.name not in _FUSED_DTYPES or first.ndim != 2:
        return False
    for t in inputs[1:]:
        if t is not None and (t._data.dtype != first.dtype or type(t._data) is not type(first)):
            return False
    return True


def rnn_sequence(
    mode: str,
    input: Tensor,
    h0: Tensor,
    c0: Tensor | None,
    weights: tuple,
    sizes: list,
    offsets: list,
    reverse: bool,
    composite,
) -> tuple:
    """Run one layer in one direction over ``input`` (rows, features) with time step t in
    ``sizes[t]`` rows from ``offsets[t]``; ``weights`` is (W_ih, W_hh, b_ih, b_hh, W_hr), the
    biases and W_hr None when absent. Returns (output rows, h_n, c_n or None).

    ``composite(*inputs)`` computes the same with ember ops: it runs where the kernels do not
    apply, and it is what the node differentiates under ``create_graph``.
    """
    inputs = (input, h0, c0) + tuple(weights)
    if not _fusable(inputs):
        return composite(*inputs)
    arrays = [t._data if t is not None else None for t in inputs]
    xp = array_module(arrays[0])
    order = range(len(sizes) - 1, -1, -1) if reverse else range(len(sizes))
    steps = [(offsets[t], sizes[t]) for t in order]
    needs = grad_state.enabled and any(t is not None and t._rg for t in inputs)
    _check_layout(mode, steps, arrays)
    outs, kept = _one_call(xp, _KERNELS[mode][0], arrays, steps, needs)
    if not needs:
        tensors = tuple(wrap(o) if o is not None else None for o in outs)
        if any(t is not None and t._rg for t in inputs):
            _cuts.note_inputs("no_grad", _NODES[mode], inputs, tensors[0], out_site=False)
        return tensors
    node = _NODES[mode]()
    node.compute, node.steps = composite, steps
    saved = inputs + tuple(wrap(a) if a is not None else None for a in kept)
    first = record(node, outs[0], inputs, saved)
    tensors = [first]
    for nr, data in enumerate(outs[1:], 1):
        if data is not None:
            tensors.append(record_output(node, data, nr, saved))
    node.num_outputs = len(tensors)
    node._meta = tuple((t._data.shape, t._data.dtype) for t in tensors)
    tensors += [None] * (3 - len(tensors))
    return tuple(tensors)
