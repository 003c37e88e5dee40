"""One time step of the recurrent layers, and the cell modules RNNCell, LSTMCell and GRUCell.

The step functions take the input projection ``gates_x = x W_ihᵀ + b_ih`` already computed,
so the layers can project every time step with one matrix product; they are ember ops only,
so gradients of any order come from the op table.
"""

from __future__ import annotations

import math

from ... import _creation
from ..._tensor import Tensor
from ...ops.linalg import linear
from .. import init
from ..parameter import Parameter
from .module import Module


def rnn_step(gates_x: Tensor, h: Tensor, w_hh: Tensor, b_hh, relu: bool) -> Tensor:
    """h' = act(gates_x + h W_hhᵀ + b_hh)."""
    pre = gates_x + linear(h, w_hh, b_hh)
    return pre.relu() if relu else pre.tanh()


def lstm_step(gates_x: Tensor, h: Tensor, c: Tensor, w_hh: Tensor, b_hh, w_hr=None):
    """Gates i, f, g, o (PyTorch's order); c' = σ(f) c + σ(i) tanh(g), h' = σ(o) tanh(c')."""
    i, f, g, o = (gates_x + linear(h, w_hh, b_hh)).chunk(4, -1)
    c = f.sigmoid() * c + i.sigmoid() * g.tanh()
    h = o.sigmoid() * c.tanh()
    if w_hr is not None:
        h = linear(h, w_hr)
    return h, c


def gru_step(gates_x: Tensor, h: Tensor, w_hh: Tensor, b_hh) -> Tensor:
    """Gates r, z, n (PyTorch's order): the reset gate scales the hidden part of n only."""
    r_x, z_x, n_x = gates_x.chunk(3, -1)
    r_h, z_h, n_h = linear(h, w_hh, b_hh).chunk(3, -1)
    r, z = (r_x + r_h).sigmoid(), (z_x + z_h).sigmoid()
    n = (n_x + r * n_h).tanh()
    return n + z * (h - n)


def rnn_tanh_cell(input: Tensor, hx: Tensor, w_ih: Tensor, w_hh: Tensor, b_ih=None, b_hh=None):
    """``torch.rnn_tanh_cell``: one tanh RNN step on (N, I) input, (N, H) state."""
    return rnn_step(linear(input, w_ih, b_ih), hx, w_hh, b_hh, relu=False)


def rnn_relu_cell(input: Tensor, hx: Tensor, w_ih: Tensor, w_hh: Tensor, b_ih=None, b_hh=None):
    """``torch.rnn_relu_cell``: one ReLU RNN step."""
    return rnn_step(linear(input, w_ih, b_ih), hx, w_hh, b_hh, relu=True)


def lstm_cell(input: Tensor, hx, w_ih: Tensor, w_hh: Tensor, b_ih=None, b_hh=None):
    """``torch.lstm_cell``: one LSTM step; ``hx`` is (h, c); returns (h', c')."""
    if len(hx) != 2:
        raise RuntimeError("lstm_cell expects two hidden states")
    return lstm_step(linear(input, w_ih, b_ih), hx[0], hx[1], w_hh, b_hh)


def gru_cell(input: Tensor, hx: Tensor, w_ih: Tensor, w_hh: Tensor, b_ih=None, b_hh=None):
    """``torch.gru_cell``: one GRU step."""
    return gru_step(linear(input, w_ih, b_ih), hx, w_hh, b_hh)


def check_sizes(input_size: int, hidden_size: int, num_layers: int = 1) -> None:
    """PyTorch's constructor checks shared by the cells and the layers."""
    for name, value in (("input_size", input_size), ("hidden_size", hidden_size)):
        if not isinstance(value, int) or isinstance(value, bool):
            raise TypeError(f"{name} should be of type int, got: {type(value).__name__}")
    if hidden_size <= 0:
        raise ValueError("hidden_size must be greater than zero")
    if num_layers <= 0:
        raise ValueError("num_layers must be greater than zero")


class RNNCellBase(Module):
    """Parameters weight_ih (gates·H, I), weight_hh (gates·H, H), bias_ih, bias_hh."""

    def __init__(
        self, input_size: int, hidden_size: int, bias: bool, num_chunks: int, device, dtype
    ) -> None:
        super().__init__()
        check_sizes(input_size, hidden_size)
        self.input_size, self.hidden_size, self.bias = input_size, hidden_size, bias
        kw = dict(device=device, dtype=dtype)
        gates = num_chunks * hidden_size
        self.weight_ih = Parameter(_creation.empty(gates, input_size, **kw))
        self.weight_hh = Parameter(_creation.empty(gates, hidden_size, **kw))
        if bias:
            self.bias_ih = Parameter(_creation.empty(gates, **kw))
            self.bias_hh = Parameter(_creation.empty(gates, **kw))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        bound = 1.0 / math.sqrt(self.hidden_size)
        for p in self.parameters():
            init.uniform_(p, -bound, bound)

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if getattr(self, "nonlinearity", "tanh") != "tanh":
            s += f", nonlinearity={self.nonlinearity}"
        return s

    def _prepare(self, input: Tensor, hx, count: int):
        """Batch an unbatched input, check shapes, and make zero states; returns batched."""
        if input.dim() not in (1, 2):
            raise ValueError(
                f"{type(self).__name__}: Expected input to be 1D or 2D, got {input.dim()}D instead"
            )
        if input.shape[-1] != self.input_size:
            raise RuntimeError(
                f"input has inconsistent input_size: got {input.shape[-1]} "
                f"expected {self.input_size}"
            )
        unbatched = input.dim() == 1
        if unbatched:
            input = input.unsqueeze(0)
        batch = input.shape[0]
        if hx is None:
            zeros = _creation.zeros(batch, self.hidden_size, dtype=input.dtype, device=input.device)
            return input, [zeros] * count, unbatched
        states = list(hx) if count == 2 else [hx]
        if count == 2 and len(states) != 2:
            raise RuntimeError("lstm_cell expects two hidden states")
        for k, s in enumerate(states):
            if s.dim() not in (1, 2):
                name = f"hx[{k}]" if count == 2 else "hidden"
                raise ValueError(
                    f"{type(self).__name__}: Expected {name} to be 1D or 2D, got {s.dim()}D instead"
                )
        for k, s in enumerate(states):
            if s.dim() != input.dim() - (1 if unbatched else 0):
                raise ValueError(
                    f"{type(self).__name__}: Expected hidden to be "
                    f"{'1D' if unbatched else '2D'}, got {s.dim()}D instead"
                )
            s = s.unsqueeze(0) if unbatched else s
            if s.shape[0] != batch:
                raise RuntimeError(
                    f"Input batch size {batch} doesn't match hidden{k} batch size {s.shape[0]}"
                )
            if s.shape[1] != self.hidden_size:
                raise RuntimeError(
                    f"hidden{k} has inconsistent hidden_size: got {s.shape[1]}, "
                    f"expected {self.hidden_size}"
                )
            states[k] = s
        return input, states, unbatched


class RNNCell(RNNCellBase):
    """One Elman RNN step: h' = tanh(x W_ihᵀ + b_ih + h W_hhᵀ + b_hh) (or relu).

    Example::
        >>> cell = ember.nn.RNNCell(3, 4)
        >>> h = cell(ember.randn(2, 3))  # (2, 4)
    """

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        bias: bool = True,
        nonlinearity: str = "tanh",
        device=None,
        dtype=None,
    ) -> None:
        self.nonlinearity = nonlinearity
        super().__init__(input_size, hidden_size, bias, 1, device, dtype)

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:
        if self.nonlinearity not in ("tanh", "relu"):
            raise RuntimeError(f"Unknown nonlinearity: {self.nonlinearity}")
        x, (h,), unbatched = self._prepare(input, hx, 1)
        h = rnn_step(
            linear(x, self.weight_ih, self.bias_ih),
            h,
            self.weight_hh,
            self.bias_hh,
            self.nonlinearity == "relu",
        )
        return h.squeeze(0) if unbatched else h


class LSTMCell(RNNCellBase):
    """One LSTM step; returns ``(h', c')``.

    Example::
        >>> cell = ember.nn.LSTMCell(3, 4)
        >>> h, c = cell(ember.randn(2, 3))
    """

    def __init__(
        self, input_size: int, hidden_size: int, bias: bool = True, device=None, dtype=None
    ) -> None:
        super().__init__(input_size, hidden_size, bias, 4, device, dtype)

    def forward(self, input: Tensor, hx=None) -> tuple[Tensor, Tensor]:
        x, (h, c), unbatched = self._prepare(input, hx, 2)
        h, c = lstm_step(
            linear(x, self.weight_ih, self.bias_ih), h, c, self.weight_hh, self.bias_hh
        )
        return (h.squeeze(0), c.squeeze(0)) if unbatched else (h, c)


class GRUCell(RNNCellBase):
    """One GRU step.

    Example::
        >>> cell = ember.nn.GRUCell(3, 4)
        >>> h = cell(ember.randn(2, 3))
    """

    def __init__(
        self, input_size: int, hidden_size: int, bias: bool = True, device=None, dtype=None
    ) -> None:
        super().__init__(input_size, hidden_size, bias, 3, device, dtype)

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:
        x, (h,), unbatched = self._prepare(input, hx, 1)
        h = gru_step(linear(x, self.weight_ih, self.bias_ih), h, self.weight_hh, self.bias_hh)
        return h.squeeze(0) if unbatched else h
