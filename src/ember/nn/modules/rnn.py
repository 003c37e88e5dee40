"""Recurrent layers: RNN, LSTM and GRU (multi-layer, bidirectional, batch_first, dropout,
LSTM projections, PackedSequence inputs).

Padded and packed inputs run through one loop: the input is a (rows, features) matrix whose
time step t occupies ``batch_sizes[t]`` consecutive rows (all of the batch when padded). Each
layer and direction is one graph node over the whole sequence (``ops.rnn.rnn_sequence``: NumPy
kernels forward and backward); its composite of ember step ops below gives double backward.
"""

from __future__ import annotations

import functools
import math
import numbers
import warnings

from ... import _creation
from ..._tensor import Tensor
from ...ops.indexing import index_select
from ...ops.linalg import linear
from ...ops.rnn import rnn_sequence
from ...ops.shape import cat, stack
from .. import functional as F
from .. import init
from .._packed_sequence import PackedSequence
from ..parameter import Parameter
from .module import Module
from .rnn_cells import (
    GRUCell,
    LSTMCell,
    RNNCell,
    RNNCellBase,
    check_sizes,
    gru_step,
    lstm_step,
    rnn_step,
)

__all__ = ["RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell"]

_GATES = {"RNN_TANH": 1, "RNN_RELU": 1, "LSTM": 4, "GRU": 3}


def _composite_direction(
    mode: str, batch_sizes, offsets, reverse: bool, data, h, c, w_ih, w_hh, b_ih, b_hh, w_hr
):
    """One layer in one direction as a loop of ember ops (the step functions): what the fused
    node differentiates under ``create_graph``, and the path for other dtypes."""
    proj = linear(data, w_ih, b_ih)  # every time step at once
    full = h.shape[0]
    steps = len(batch_sizes)
    outs = [None] * steps
    for t in reversed(range(steps)) if reverse else range(steps):
        rows = batch_sizes[t]
        gates_x = proj[offsets[t] : offsets[t] + rows]
        h_t = h if rows == full else h[:rows]
        if mode == "LSTM":
            c_t = c if rows == full else c[:rows]
            h_new, c_new = lstm_step(gates_x, h_t, c_t, w_hh, b_hh, w_hr)
            c = c_new if rows == full else cat([c_new, c[rows:]], 0)
        elif mode == "GRU":
            h_new = gru_step(gates_x, h_t, w_hh, b_hh)
        else:
            h_new = rnn_step(gates_x, h_t, w_hh, b_hh, mode == "RNN_RELU")
        outs[t] = h_new
        h = h_new if rows == full else cat([h_new, h[rows:]], 0)
    return cat(outs, 0), h, c


class RNNBase(Module):
    """Parameters and the shared forward of RNN, LSTM and GRU (PyTorch's names and layout)."""

    def __init__(
        self,
        mode: str,
        input_size: int,
        hidden_size: int,
        num_layers: int = 1,
        bias: bool = True,
        batch_first: bool = False,
        dropout: float = 0.0,
        bidirectional: bool = False,
        proj_size: int = 0,
        device=None,
        dtype=None,
    ) -> None:
        super().__init__()
        if mode not in _GATES:
            raise ValueError(f"Unrecognized RNN mode: {mode}")
        if (
            not isinstance(dropout, numbers.Number)
            or isinstance(dropout, bool)
            or not 0 <= dropout <= 1
        ):
            raise ValueError(
                "dropout should be a number in range [0, 1] representing the "
                "probability of an element being zeroed"
            )
        if dropout > 0 and num_layers == 1:
            warnings.warn(
                "dropout option adds dropout after all but last recurrent layer, so non-zero "
                f"dropout expects num_layers greater than 1, but got dropout={dropout} and "
                f"num_layers={num_layers}",
                stacklevel=2,
            )
        if not isinstance(bias, bool):
            raise TypeError(f"bias should be of type bool, got: {type(bias).__name__}")
        if not isinstance(batch_first, bool):
            raise TypeError(
                f"batch_first should be of type bool, got: {type(batch_first).__name__}"
            )
        check_sizes(input_size, hidden_size, num_layers)
        if input_size <= 0:  # the cells leave this to the weight's allocation, as torch's do
            raise ValueError("input_size must be greater than zero")
        if not isinstance(proj_size, int) or proj_size < 0:
            raise ValueError(
                "proj_size should be a positive integer or zero to disable projections"
            )
        if proj_size >= hidden_size:
            raise ValueError("proj_size has to be smaller than hidden_size")
        if proj_size and mode != "LSTM":
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        self.mode, self.input_size, self.hidden_size = mode, input_size, hidden_size
        self.num_layers, self.bias, self.batch_first = num_layers, bias, batch_first
        self.dropout, self.bidirectional = float(dropout), bidirectional
        self.proj_size = proj_size
        directions = 2 if bidirectional else 1
        real_hidden = proj_size or hidden_size
        gate = _GATES[mode] * hidden_size
        self._flat_weights_names: list[str] = []
        self._all_weights: list[list[str]] = []
        for layer in range(num_layers):
            for direction in range(directions):
                suffix = f"_l{layer}" + ("_reverse" if direction else "")
                width = input_size if layer == 0 else real_hidden * directions
                shapes = [("weight_ih", (gate, width)), ("weight_hh", (gate, real_hidden))]
                if bias:
                    shapes += [("bias_ih", (gate,)), ("bias_hh", (gate,))]
                if proj_size:
                    shapes.append(("weight_hr", (proj_size, hidden_size)))
                names = []
                for name, shape in shapes:
                    param = Parameter(_creation.empty(*shape, device=device, dtype=dtype))
                    setattr(self, name + suffix, param)
                    names.append(name + suffix)
                self._flat_weights_names.extend(names)
                self._all_weights.append(names)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        bound = 1.0 / math.sqrt(self.hidden_size)
        for p in self.parameters():
            init.uniform_(p, -bound, bound)

    def flatten_parameters(self) -> None:
        """A no-op: ember keeps no fused cuDNN weight buffer."""

    @property
    def _flat_weights(self) -> list:
        return [getattr(self, name) for name in self._flat_weights_names]

    @property
    def all_weights(self) -> list:
        return [[getattr(self, name) for name in names] for names in self._all_weights]

    def _check_state(self, state: Tensor, expected: tuple, label: str) -> None:
        if tuple(state.shape) != expected:
            raise RuntimeError(f"Expected {label} size {expected}, got {list(state.shape)}")

    def _initial_states(self, input: Tensor, hx, batch: int, unbatched: bool):
        is_lstm = self.mode == "LSTM"
        states = self.num_layers * (2 if self.bidirectional else 1)
        h_shape = (states, batch, self.proj_size or self.hidden_size)
        c_shape = (states, batch, self.hidden_size)
        if hx is None:
            kw = dict(dtype=input.dtype, device=input.device)
            h0 = _creation.zeros(*h_shape, **kw)
            return (h0, _creation.zeros(*c_shape, **kw)) if is_lstm else (h0, None)
        want = 2 if unbatched else 3
        kind = "unbatched 2-D" if unbatched else "batched 3-D"
        if is_lstm:
            h0, c0 = hx
            if h0.dim() != want or c0.dim() != want:
                raise RuntimeError(
                    f"For {kind} input, hx and cx should also be {want}-D but got "
                    f"({h0.dim()}-D, {c0.dim()}-D) tensors"
                )
        else:
            h0, c0 = hx, None
            if h0.dim() != want:
                raise RuntimeError(
                    f"For {kind} input, hx should also be {want}-D but got {h0.dim()}-D tensor"
                )
        if unbatched:
            h0 = h0.unsqueeze(1)
            c0 = c0.unsqueeze(1) if c0 is not None else None
        self._check_state(h0, h_shape, "hidden[0]" if is_lstm else "hidden")
        if is_lstm:
            self._check_state(c0, c_shape, "hidden[1]")
        return h0, c0

    def _run_direction(self, data, batch_sizes, offsets, h, c, suffix: str, reverse: bool):
        """One layer in one direction over the (rows, features) input; returns outputs and
        the final states (rows of finished sequences keep their last state)."""
        weights = (
            getattr(self, "weight_ih" + suffix),
            getattr(self, "weight_hh" + suffix),
            getattr(self, "bias_ih" + suffix) if self.bias else None,
            getattr(self, "bias_hh" + suffix) if self.bias else None,
            getattr(self, "weight_hr" + suffix) if self.proj_size else None,
        )
        composite = functools.partial(
            _composite_direction, self.mode, batch_sizes, offsets, reverse
        )
        return rnn_sequence(
            self.mode, data, h, c, weights, batch_sizes, offsets, reverse, composite
        )

    def forward(self, input: Tensor | PackedSequence, hx=None):
        """Run the layers over ``input`` (L, N, H_in) (or (N, L, H_in) with batch_first,
        (L, H_in) unbatched, or a PackedSequence); returns (output, h_n) — (output,
        (h_n, c_n)) for LSTM — with output of the same kind as the input."""
        name = type(self).__name__
        packed = isinstance(input, PackedSequence)
        if packed:
            data, sizes = input.data, [int(n) for n in input.batch_sizes.tolist()]
            batch, unbatched = sizes[0], False
            sorted_indices = input.sorted_indices
            if hx is not None and sorted_indices is not None:
                hx = (
                    tuple(index_select(s, 1, sorted_indices) for s in hx)
                    if self.mode == "LSTM"
                    else index_select(hx, 1, sorted_indices)
                )
        else:
            if input.dim() not in (2, 3):
                raise ValueError(
                    f"{name}: Expected input to be 2D or 3D, got {input.dim()}D instead"
                )
            unbatched = input.dim() == 2
            x = input.unsqueeze(1) if unbatched else input
            x = x.transpose(0, 1) if self.batch_first and not unbatched else x
            steps, batch = x.shape[0], x.shape[1]
            if steps == 0:
                raise RuntimeError("Expected sequence length to be larger than 0 in RNN")
            data, sizes = x.reshape(steps * batch, x.shape[2]), [batch] * steps
        if data.shape[-1] != self.input_size:
            raise RuntimeError(
                f"input.size(-1) must be equal to input_size. Expected "
                f"{self.input_size}, got {data.shape[-1]}"
            )
        weight_dtype = self.weight_ih_l0.dtype
        if data.dtype != weight_dtype:
            raise ValueError(
                f"RNN input dtype ({data.dtype}) does not match weight dtype ({weight_dtype}). "
                f"Convert input: input.to({weight_dtype}), or convert model: "
                f"model.to({data.dtype})"
            )
        h0, c0 = self._initial_states(data, hx, batch, unbatched)
        offsets = [0]
        for n in sizes[:-1]:
            offsets.append(offsets[-1] + n)
        directions = 2 if self.bidirectional else 1
        h_n, c_n = [], []
        for layer in range(self.num_layers):
            outputs = []
            for direction in range(directions):
                k = layer * directions + direction
                suffix = f"_l{layer}" + ("_reverse" if direction else "")
                out, h, c = self._run_direction(
                    data,
                    sizes,
                    offsets,
                    h0[k],
                    c0[k] if c0 is not None else None,
                    suffix,
                    reverse=direction == 1,
                )
                outputs.append(out)
                h_n.append(h)
                c_n.append(c)
            data = cat(outputs, -1) if directions == 2 else outputs[0]
            if self.dropout and self.training and layer < self.num_layers - 1:
                data = F.dropout(data, self.dropout, True)
        h_n = stack(h_n, 0)
        c_n = stack(c_n, 0) if self.mode == "LSTM" else None
        if packed:
            output = PackedSequence(data, input.batch_sizes, sorted_indices, input.unsorted_indices)
            if input.unsorted_indices is not None:
                h_n = index_select(h_n, 1, input.unsorted_indices)
                c_n = index_select(c_n, 1, input.unsorted_indices) if c_n is not None else None
        else:
            output = data.reshape(len(sizes), batch, data.shape[-1])
            if unbatched:
                output, h_n = output.squeeze(1), h_n.squeeze(1)
                c_n = c_n.squeeze(1) if c_n is not None else None
            elif self.batch_first:
                output = output.transpose(0, 1)
        return (output, (h_n, c_n)) if self.mode == "LSTM" else (output, h_n)

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"
        if self.proj_size != 0:
            s += f", proj_size={self.proj_size}"
        if self.num_layers != 1:
            s += f", num_layers={self.num_layers}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if self.batch_first is not False:
            s += f", batch_first={self.batch_first}"
        if self.dropout != 0:
            s += f", dropout={self.dropout}"
        if self.bidirectional is not False:
            s += f", bidirectional={self.bidirectional}"
        return s


class RNN(RNNBase):
    """Elman RNN: h' = tanh(x W_ihᵀ + b_ih + h W_hhᵀ + b_hh) (or relu), layer by layer.

    Example::
        >>> rnn = ember.nn.RNN(3, 4, num_layers=2)
        >>> out, h_n = rnn(ember.randn(5, 2, 3))  # out (5, 2, 4), h_n (2, 2, 4)
    """

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        num_layers: int = 1,
        nonlinearity: str = "tanh",
        bias: bool = True,
        batch_first: bool = False,
        dropout: float = 0.0,
        bidirectional: bool = False,
        device=None,
        dtype=None,
    ) -> None:
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(
                f"Unknown nonlinearity '{nonlinearity}'. Select from 'tanh' or 'relu'."
            )
        self.nonlinearity = nonlinearity
        super().__init__(
            "RNN_TANH" if nonlinearity == "tanh" else "RNN_RELU",
            input_size,
            hidden_size,
            num_layers,
            bias,
            batch_first,
            dropout,
            bidirectional,
            0,
            device,
            dtype,
        )


class LSTM(RNNBase):
    """Long short-term memory, gates i, f, g, o; ``proj_size`` adds h = W_hr h.

    Example::
        >>> lstm = ember.nn.LSTM(3, 4, batch_first=True)
        >>> out, (h_n, c_n) = lstm(ember.randn(2, 5, 3))
    """

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        num_layers: int = 1,
        bias: bool = True,
        batch_first: bool = False,
        dropout: float = 0.0,
        bidirectional: bool = False,
        proj_size: int = 0,
        device=None,
        dtype=None,
    ) -> None:
        super().__init__(
            "LSTM",
            input_size,
            hidden_size,
            num_layers,
            bias,
            batch_first,
            dropout,
            bidirectional,
            proj_size,
            device,
            dtype,
        )


class GRU(RNNBase):
    """Gated recurrent unit, gates r, z, n in PyTorch's order and layout.

    Example::
        >>> gru = ember.nn.GRU(3, 4, bidirectional=True)
        >>> out, h_n = gru(ember.randn(5, 2, 3))  # out (5, 2, 8)
    """

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        num_layers: int = 1,
        bias: bool = True,
        batch_first: bool = False,
        dropout: float = 0.0,
        bidirectional: bool = False,
        device=None,
        dtype=None,
    ) -> None:
        super().__init__(
            "GRU",
            input_size,
            hidden_size,
            num_layers,
            bias,
            batch_first,
            dropout,
            bidirectional,
            0,
            device,
            dtype,
        )
