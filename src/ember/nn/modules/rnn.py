"""Recurrent layers: RNN, LSTM and GRU (multi-layer, bidirectional, batch_first, dropout).

The input projections of all time steps are one matrix product; the recurrence is a loop
over time steps of ember ops, so gradients (and higher ones) come from the op table.
"""

from __future__ import annotations

import math

from ... import _creation
from ...ops.shape import cat, stack
from .. import functional as F
from .. import init
from ..parameter import Parameter
from .module import Module

_GATES = {"RNN_TANH": 1, "RNN_RELU": 1, "LSTM": 4, "GRU": 3}


class RNNBase(Module):
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
        device=None,
        dtype=None,
    ):
        super().__init__()
        if not 0 <= dropout <= 1:
            raise ValueError(
                "dropout should be a number in range [0, 1] representing the "
                "probability of an element being zeroed"
            )
        self.mode, self.input_size, self.hidden_size = mode, input_size, hidden_size
        self.num_layers, self.bias, self.batch_first = num_layers, bias, batch_first
        self.dropout, self.bidirectional = float(dropout), bidirectional
        directions = 2 if bidirectional else 1
        gate = _GATES[mode] * hidden_size
        self._flat_weights_names = []
        for layer in range(num_layers):
            for direction in range(directions):
                suffix = f"_l{layer}" + ("_reverse" if direction else "")
                width = input_size if layer == 0 else hidden_size * directions
                shapes = [("weight_ih", (gate, width)), ("weight_hh", (gate, hidden_size))]
                if bias:
                    shapes += [("bias_ih", (gate,)), ("bias_hh", (gate,))]
                for name, shape in shapes:
                    setattr(
                        self,
                        name + suffix,
                        Parameter(_creation.empty(*shape, device=device, dtype=dtype)),
                    )
                    self._flat_weights_names.append(name + suffix)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        bound = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for p in self.parameters():
            init.uniform_(p, -bound, bound)

    def _cell(self, x_proj, h, c, w_hh, b_hh):
        gates_h = h @ w_hh.t()
        if b_hh is not None:
            gates_h = gates_h + b_hh
        if self.mode == "LSTM":
            i, f, g, o = (x_proj + gates_h).chunk(4, -1)
            c = f.sigmoid() * c + i.sigmoid() * g.tanh()
            return o.sigmoid() * c.tanh(), c
        if self.mode == "GRU":
            r_i, z_i, n_i = x_proj.chunk(3, -1)
            r_h, z_h, n_h = gates_h.chunk(3, -1)
            r, z = (r_i + r_h).sigmoid(), (z_i + z_h).sigmoid()
            n = (n_i + r * n_h).tanh()
            return (1 - z) * n + z * h, None
        pre = x_proj + gates_h
        return (pre.tanh() if self.mode == "RNN_TANH" else pre.relu()), None

    def _run_direction(self, x, h, c, suffix: str, reverse: bool):
        w_ih = getattr(self, "weight_ih" + suffix)
        w_hh = getattr(self, "weight_hh" + suffix)
        b_ih = getattr(self, "bias_ih" + suffix) if self.bias else None
        b_hh = getattr(self, "bias_hh" + suffix) if self.bias else None
        proj = x @ w_ih.t()  # every time step at once: (L, N, gates)
        if b_ih is not None:
            proj = proj + b_ih
        steps = range(x.shape[0] - 1, -1, -1) if reverse else range(x.shape[0])
        outs = [None] * x.shape[0]
        for t in steps:
            h, c = self._cell(proj[t], h, c, w_hh, b_hh)
            outs[t] = h
        return stack(outs, 0), h, c

    def forward(self, input, hx=None):
        is_lstm = self.mode == "LSTM"
        unbatched = input.dim() == 2
        if input.dim() not in (2, 3):
            raise ValueError(
                f"{type(self).__name__}: Expected input to be 2D or 3D, got {input.dim()}D instead"
            )
        x = (
            input.unsqueeze(1)
            if unbatched
            else (input.transpose(0, 1) if self.batch_first else input)
        )
        if x.shape[-1] != self.input_size:
            raise RuntimeError(
                f"input.size(-1) must be equal to input_size. Expected "
                f"{self.input_size}, got {x.shape[-1]}"
            )
        directions = 2 if self.bidirectional else 1
        batch = x.shape[1]
        if hx is None:
            zeros = _creation.zeros(
                self.num_layers * directions,
                batch,
                self.hidden_size,
                dtype=x.dtype,
                device=x.device,
            )
            h0, c0 = zeros, zeros if is_lstm else None
        else:
            h0, c0 = hx if is_lstm else (hx, None)
            if unbatched:
                h0 = h0.unsqueeze(1)
                c0 = c0.unsqueeze(1) if c0 is not None else None
        h_n, c_n = [], []
        for layer in range(self.num_layers):
            outputs = []
            for direction in range(directions):
                k = layer * directions + direction
                suffix = f"_l{layer}" + ("_reverse" if direction else "")
                out, h, c = self._run_direction(
                    x, h0[k], c0[k] if c0 is not None else None, suffix, reverse=direction == 1
                )
                outputs.append(out)
                h_n.append(h)
                c_n.append(c)
            x = cat(outputs, -1) if directions == 2 else outputs[0]
            if self.dropout and self.training and layer < self.num_layers - 1:
                x = F.dropout(x, self.dropout, True)
        h_n = stack(h_n, 0)
        out = x.squeeze(1) if unbatched else (x.transpose(0, 1) if self.batch_first else x)
        if unbatched:
            h_n = h_n.squeeze(1)
        if is_lstm:
            c_n = stack(c_n, 0)
            return out, (h_n, c_n.squeeze(1) if unbatched else c_n)
        return out, h_n

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"
        if self.num_layers != 1:
            s += f", num_layers={self.num_layers}"
        if self.mode == "RNN_RELU":
            s += ", nonlinearity=relu"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if self.batch_first:
            s += ", batch_first=True"
        if self.dropout:
            s += f", dropout={self.dropout}"
        if self.bidirectional:
            s += ", bidirectional=True"
        return s


class RNN(RNNBase):
    """Elman RNN: h' = tanh(W_ih x + b_ih + W_hh h + b_hh) (or relu)."""

    def __init__(
        self,
        input_size,
        hidden_size,
        num_layers=1,
        nonlinearity="tanh",
        bias=True,
        batch_first=False,
        dropout=0.0,
        bidirectional=False,
        device=None,
        dtype=None,
    ):
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(
                f"Unknown nonlinearity '{nonlinearity}'. Select from 'tanh' or 'relu'."
            )
        super().__init__(
            "RNN_TANH" if nonlinearity == "tanh" else "RNN_RELU",
            input_size,
            hidden_size,
            num_layers,
            bias,
            batch_first,
            dropout,
            bidirectional,
            device,
            dtype,
        )


class LSTM(RNNBase):
    """Long short-term memory: gates i, f, g, o in PyTorch's order and layout."""

    def __init__(
        self,
        input_size,
        hidden_size,
        num_layers=1,
        bias=True,
        batch_first=False,
        dropout=0.0,
        bidirectional=False,
        proj_size=0,
        device=None,
        dtype=None,
    ):
        if proj_size:
            raise NotImplementedError("LSTM proj_size is not supported by ember yet")
        super().__init__(
            "LSTM",
            input_size,
            hidden_size,
            num_layers,
            bias,
            batch_first,
            dropout,
            bidirectional,
            device,
            dtype,
        )


class GRU(RNNBase):
    """Gated recurrent unit: gates r, z, n in PyTorch's order and layout."""

    def __init__(
        self,
        input_size,
        hidden_size,
        num_layers=1,
        bias=True,
        batch_first=False,
        dropout=0.0,
        bidirectional=False,
        device=None,
        dtype=None,
    ):
        super().__init__(
            "GRU",
            input_size,
            hidden_size,
            num_layers,
            bias,
            batch_first,
            dropout,
            bidirectional,
            device,
            dtype,
        )
