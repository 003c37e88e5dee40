"""Recurrent layers as one graph node per layer and direction: the whole sequence at once.

The forward pass projects every time step's input with one GEMM, then per step does one GEMM
with ``W_hh`` and the gate nonlinearities in place on preallocated arrays. The node saves the
activated gates and the states each step started from; its backward walks the steps in
reverse for the gate gradients only and then forms the weight gradients as one GEMM each over
the whole sequence. Under ``create_graph`` (or a transposed-VJP forward-mode rule) the
backward reruns the composite of ember ops on the saved inputs instead, so that gradients of
any order reach them.

The input is a (rows, features) matrix whose time step t occupies ``sizes[t]`` rows from
``offsets[t]``; the batch may only shrink over time (a PackedSequence), and rows of finished
sequences keep their last state.
"""

from __future__ import annotations

from .._tensor import Tensor
from ..autograd import _cuts, _watch
from ..autograd.node import Node
from ._dispatch import _new, array_module, grad_state, record, wrap

__all__ = ["rnn_sequence"]

_FUSED_DTYPES = ("float32", "float64")


def _special(xp):
    """scipy.special (or CuPy's) for the in-place logistic sigmoid ``expit``."""
    if xp.__name__.startswith("cupy"):
        import cupyx.scipy.special as special
    else:
        import scipy.special as special
    return special


# --------------------------------------------------------------------------------------------
# LSTM: gates i, f, g, o; c' = σ(f) c + σ(i) tanh(g), h' = σ(o) tanh(c') (then W_hr h')
# --------------------------------------------------------------------------------------------
def _lstm_forward(xp, arrays, steps, keep):
    x, h0, c0, w_ih, w_hh, b_ih, b_hh, w_hr = arrays
    hidden = w_hh.shape[0] // 4
    i_, f_, g_, o_ = (slice(k * hidden, (k + 1) * hidden) for k in range(4))
    sig = slice(0, 2 * hidden)  # i and f are adjacent: one sigmoid call for both
    expit = _special(xp).expit
    gates = x @ w_ih.T  # every step's input projection, activated in place below
    if b_ih is not None:
        gates += b_ih
        gates += b_hh
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
    w_hh_t = w_hh.T
    for start, n in steps:
        stop = start + n
        hp, cp = h[:n], c[:n]
        if keep:
            h_prev[start:stop] = hp
            c_prev[start:stop] = cp
        g = gates[start:stop]
        g += hp @ w_hh_t
        expit(g[:, sig], out=g[:, sig])
        xp.tanh(g[:, g_], out=g[:, g_])
        expit(g[:, o_], out=g[:, o_])
        cp *= g[:, f_]
        cp += g[:, i_] * g[:, g_]
        tc = xp.tanh(cp, out=tanh_c[start:stop]) if keep else xp.tanh(cp)
        hn = g[:, o_] * tc
        if w_hr is not None:
            if keep:
                h_cell[start:stop] = hn
            hn = hn @ w_hr.T
        hp[...] = hn
        out[start:stop] = hn
    return (out, h, c), (gates, h_prev, c_prev, tanh_c, h_cell)


def _lstm_backward(xp, arrays, kept, grads, steps, needs):
    x, h0, c0, w_ih, w_hh, b_ih, b_hh, w_hr = arrays
    gates, h_prev, c_prev, tanh_c, h_cell = kept
    g_out, g_h, g_c = grads
    hidden = w_hh.shape[0] // 4
    i_, f_, g_, o_ = (slice(k * hidden, (k + 1) * hidden) for k in range(4))
    dh = g_h.copy() if g_h is not None else xp.zeros_like(h0)
    dc = g_c.copy() if g_c is not None else xp.zeros_like(c0)
    d_gates = xp.empty_like(gates)
    d_hidden = xp.empty_like(h_prev) if w_hr is not None and needs[7] else None
    for start, n in reversed(steps):
        stop = start + n
        dhn = dh[:n]
        if g_out is not None:
            dhn += g_out[start:stop]
        if w_hr is not None:
            if d_hidden is not None:
                d_hidden[start:stop] = dhn
            dhn = dhn @ w_hr
        g = gates[start:stop]
        i, f, gg, o = g[:, i_], g[:, f_], g[:, g_], g[:, o_]
        tc = tanh_c[start:stop]
        dcn = dc[:n]
        dcn += dhn * o * (1 - tc * tc)  # d tanh = 1 - tanh²
        dg = d_gates[start:stop]
        xp.multiply(dhn * tc, o * (1 - o), out=dg[:, o_])  # d σ = σ (1 - σ)
        xp.multiply(dcn * gg, i * (1 - i), out=dg[:, i_])
        xp.multiply(dcn * c_prev[start:stop], f * (1 - f), out=dg[:, f_])
        xp.multiply(dcn * i, 1 - gg * gg, out=dg[:, g_])
        dcn *= f
        dh[:n] = dg @ w_hh
    result = _weight_grads(xp, arrays, needs, d_gates, d_gates, h_prev)
    result[1], result[2] = dh, dc
    if d_hidden is not None:
        result[7] = d_hidden.T @ h_cell
    return result


# --------------------------------------------------------------------------------------------
# GRU: gates r, z, n; n = tanh(x_n + r (W_hn h + b_hn)), h' = n + z (h - n)
# --------------------------------------------------------------------------------------------
def _gru_forward(xp, arrays, steps, keep):
    x, h0, _, w_ih, w_hh, b_ih, b_hh, _ = arrays
    hidden = w_hh.shape[0] // 3
    r_, z_, n_ = (slice(k * hidden, (k + 1) * hidden) for k in range(3))
    rz = slice(0, 2 * hidden)
    expit = _special(xp).expit
    gates = x @ w_ih.T  # becomes r, z, n in place
    if b_ih is not None:
        gates += b_ih
    rows = gates.shape[0]
    h = h0.copy()
    out = xp.empty((rows, hidden), dtype=gates.dtype)
    h_prev = hidden_n = None
    if keep:
        h_prev = xp.empty_like(out)
        hidden_n = xp.empty_like(out)  # W_hn h + b_hn, which the reset gate scales
    w_hh_t = w_hh.T
    for start, n in steps:
        stop = start + n
        hp = h[:n]
        if keep:
            h_prev[start:stop] = hp
        hh = hp @ w_hh_t
        if b_hh is not None:
            hh += b_hh
        g = gates[start:stop]
        g[:, rz] += hh[:, rz]
        expit(g[:, rz], out=g[:, rz])
        if keep:
            hidden_n[start:stop] = hh[:, n_]
        new = g[:, n_]
        new += g[:, r_] * hh[:, n_]
        xp.tanh(new, out=new)
        hn = hp - new
        hn *= g[:, z_]
        hn += new
        hp[...] = hn
        out[start:stop] = hn
    return (out, h, None), (gates, h_prev, hidden_n)


def _gru_backward(xp, arrays, kept, grads, steps, needs):
    gates, h_prev, hidden_n = kept
    w_hh = arrays[4]
    g_out, g_h, _ = grads
    hidden = w_hh.shape[0] // 3
    r_, z_, n_ = (slice(k * hidden, (k + 1) * hidden) for k in range(3))
    rz = slice(0, 2 * hidden)
    dh = g_h.copy() if g_h is not None else xp.zeros_like(arrays[1])
    d_x = xp.empty_like(gates)  # d (x W_ihᵀ + b_ih)
    d_hh = xp.empty_like(gates)  # d (h W_hhᵀ + b_hh)
    for start, n in reversed(steps):
        stop = start + n
        dhn = dh[:n]
        if g_out is not None:
            dhn += g_out[start:stop]
        g = gates[start:stop]
        r, z, new = g[:, r_], g[:, z_], g[:, n_]
        dx, dhh = d_x[start:stop], d_hh[start:stop]
        d_new = xp.multiply(dhn * (1 - z), 1 - new * new, out=dx[:, n_])
        xp.multiply(dhn * (h_prev[start:stop] - new), z * (1 - z), out=dx[:, z_])
        xp.multiply(d_new * hidden_n[start:stop], r * (1 - r), out=dx[:, r_])
        dhh[:, rz] = dx[:, rz]
        xp.multiply(d_new, r, out=dhh[:, n_])
        dh[:n] = dhn * z + dhh @ w_hh
    result = _weight_grads(xp, arrays, needs, d_x, d_hh, h_prev)
    result[1] = dh
    return result


# --------------------------------------------------------------------------------------------
# RNN: h' = tanh(x W_ihᵀ + b_ih + h W_hhᵀ + b_hh) (or relu)
# --------------------------------------------------------------------------------------------
def _rnn_forward(xp, arrays, steps, keep, relu):
    x, h0, _, w_ih, w_hh, b_ih, b_hh, _ = arrays
    act = xp.tanh if not relu else None
    states = x @ w_ih.T  # pre-activations, then the new hidden states in place
    if b_ih is not None:
        states += b_ih
        states += b_hh
    h = h0.copy()
    h_prev = xp.empty_like(states) if keep else None
    w_hh_t = w_hh.T
    for start, n in steps:
        stop = start + n
        hp = h[:n]
        if keep:
            h_prev[start:stop] = hp
        s = states[start:stop]
        s += hp @ w_hh_t
        if relu:
            xp.maximum(s, 0, out=s)
        else:
            act(s, out=s)
        hp[...] = s
    # the caller may write into the output: the node keeps its own states
    out = states.copy() if keep else states
    return (out, h, None), (states, h_prev)


def _rnn_backward(xp, arrays, kept, grads, steps, needs, relu):
    states, h_prev = kept
    w_hh = arrays[4]
    g_out, g_h, _ = grads
    dh = g_h.copy() if g_h is not None else xp.zeros_like(arrays[1])
    d_pre = xp.empty_like(states)
    for start, n in reversed(steps):
        stop = start + n
        dhn = dh[:n]
        if g_out is not None:
            dhn += g_out[start:stop]
        y = states[start:stop]
        if relu:
            xp.multiply(dhn, y > 0, out=d_pre[start:stop])
        else:
            xp.multiply(dhn, 1 - y * y, out=d_pre[start:stop])  # d tanh = 1 - tanh²
        dh[:n] = d_pre[start:stop] @ w_hh
    result = _weight_grads(xp, arrays, needs, d_pre, d_pre, h_prev)
    result[1] = dh
    return result


def _weight_grads(xp, arrays, needs, d_input_gates, d_hidden_gates, h_prev) -> list:
    """Input, W_ih, W_hh and bias gradients from the gate gradients of all steps: one GEMM
    (or one sum) each over the whole sequence."""
    x, _, _, w_ih = arrays[:4]
    result = [None] * 8
    if needs[0]:
        result[0] = d_input_gates @ w_ih
    if needs[3]:
        result[3] = d_input_gates.T @ x
    if needs[4]:
        result[4] = d_hidden_gates.T @ h_prev
    if needs[5]:
        result[5] = d_input_gates.sum(0)
    if needs[6]:
        # a separate array even when equal to b_ih's: leaves may keep gradients in place
        result[6] = d_hidden_gates.sum(0)
    return result


_KERNELS = {
    "LSTM": (_lstm_forward, _lstm_backward),
    "GRU": (_gru_forward, _gru_backward),
    "RNN_TANH": (
        lambda xp, a, s, k: _rnn_forward(xp, a, s, k, False),
        lambda xp, a, k, g, s, n: _rnn_backward(xp, a, k, g, s, n, False),
    ),
    "RNN_RELU": (
        lambda xp, a, s, k: _rnn_forward(xp, a, s, k, True),
        lambda xp, a, k, g, s, n: _rnn_backward(xp, a, k, g, s, n, True),
    ),
}


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
        saved = self.saved_tensors()  # raises PyTorch's errors (freed, modified in place)
        arrays = [t._data if t is not None else None for t in saved[:8]]
        kept = [t._data if t is not None else None for t in saved[8:]]
        grad_arrays = [g._data if g is not None else None for g in grads]
        grad_arrays += [None] * (3 - len(grad_arrays))
        needs = [e is not None for e in self._edges]
        xp = array_module(arrays[0])
        backward = _KERNELS[self.mode][1]
        result = backward(xp, arrays, kept, grad_arrays, self.steps, needs)
        return tuple(wrap(r) if r is not None and needs[i] else None for i, r in enumerate(result))

    def _composite_grads(self, grads: list) -> tuple:
        from ..autograd import grad as autograd_grad

        inputs = self.saved_tensors()[:8]
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
    forward-mode AD (whose tangents come from the composite's graph)."""
    from ..autograd import forward_ad

    if forward_ad._levels:
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
    outs, kept = _KERNELS[mode][0](xp, arrays, steps, needs)
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
        if data is None:
            continue
        out = _new(Tensor)
        out._data = data
        out._vc = [0]
        out._rg = True
        out._grad_fn = node
        out._out_nr = nr
        tensors.append(out)
        if _watch.watch.on:
            _watch.node_created(node, out, saved)
    node.num_outputs = len(tensors)
    node._meta = tuple((t._data.shape, t._data.dtype) for t in tensors)
    tensors += [None] * (3 - len(tensors))
    return tuple(tensors)
