"""Softmax, log-softmax and the activation functions of ember.nn, with their derivatives.

Softmax and log-softmax have fused, numerically stable kernels; their backward formulas are
written with ember ops so that double backward works. The other activations are compositions
of differentiable ops (one formula, no second table to keep in step).
"""

from __future__ import annotations

import math

from .._tensor import Tensor
from ..autograd.node import Node
from ._dispatch import array_module, float_result, result, wrap_dim
from .elementwise import clamp, erf, sigmoid, tanh, where

SQRT_HALF = math.sqrt(0.5)
SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)


def _softmax_dim(input: Tensor, dim, op: str) -> int:
    if dim is None:  # PyTorch's legacy implicit choice
        dim = 0 if input.ndim in (0, 1, 3) else 1
    return wrap_dim(dim, max(input.ndim, 1), op)


class SoftmaxBackward0(Node):
    def backward(self, g):
        y = self.saved_output()
        d = self.dim
        return y * (g - (g * y).sum(d, keepdim=True))  # J = diag(y) - y yᵀ


class LogSoftmaxBackward0(Node):
    def backward(self, g):
        y = self.saved_output()
        d = self.dim
        return g - y.exp() * g.sum(d, keepdim=True)  # d log softmax = I - softmax


def _stable_shift(xp, data, d):
    m = xp.max(data, axis=d, keepdims=True) if data.size else data
    return data - xp.where(xp.isfinite(m), m, 0) if data.size else data


def softmax(input: Tensor, dim=None, dtype=None) -> Tensor:
    """exp(x) / Σ exp(x) along ``dim``, computed without overflow."""
    if dtype is not None:
        input = input.to(dtype)
    input = float_result("softmax", input)
    d = _softmax_dim(input, dim, "softmax")
    data = input._data
    xp = array_module(data)
    if data.ndim == 0:
        out = xp.ones_like(data)
    else:
        e = xp.exp(_stable_shift(xp, data, d))
        out = e / e.sum(axis=d, keepdims=True)
    return result(SoftmaxBackward0, out, (input,), save_output=True, dim=d)


def log_softmax(input: Tensor, dim=None, dtype=None) -> Tensor:
    """x - log Σ exp(x) along ``dim``, finite for logits of ±1e4 and beyond."""
    if dtype is not None:
        input = input.to(dtype)
    input = float_result("log_softmax", input)
    d = _softmax_dim(input, dim, "log_softmax")
    data = input._data
    xp = array_module(data)
    if data.ndim == 0:
        out = xp.zeros_like(data)
    else:
        shifted = _stable_shift(xp, data, d)
        out = shifted - xp.log(xp.exp(shifted).sum(axis=d, keepdims=True))
    return result(LogSoftmaxBackward0, out, (input,), save_output=True, dim=d)


def relu(input: Tensor, inplace: bool = False) -> Tensor:
    return input.relu_() if inplace else input.relu()


def leaky_relu(input: Tensor, negative_slope: float = 0.01, inplace: bool = False) -> Tensor:
    out = where(input > 0, input, input * negative_slope)
    return input.copy_(out) if inplace else out


def elu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    out = where(input > 0, input, (clamp(input, max=0.0).exp() - 1) * alpha)
    return input.copy_(out) if inplace else out


def gelu(input: Tensor, approximate: str = "none") -> Tensor:
    """x Φ(x); ``approximate='tanh'`` uses PyTorch's tanh formula."""
    if approximate == "tanh":
        inner = (input + input * input * input * 0.044715) * SQRT_2_OVER_PI
        return input * 0.5 * (tanh(inner) + 1)
    if approximate != "none":
        raise RuntimeError(f"approximate argument must be either none or tanh, got {approximate}")
    return input * 0.5 * (erf(input * SQRT_HALF) + 1)


def silu(input: Tensor, inplace: bool = False) -> Tensor:
    out = input * sigmoid(input)
    return input.copy_(out) if inplace else out


def softplus(input: Tensor, beta: float = 1.0, threshold: float = 20.0) -> Tensor:
    """log(1 + exp(βx)) / β, linear where βx > threshold (as PyTorch)."""
    scaled = input * beta
    # log1p(exp(-|z|)) + max(z, 0) is the overflow-free form of log(1 + e^z)
    smooth = ((-scaled.abs()).exp().log1p() + clamp(scaled, min=0.0)) / beta
    return where(scaled > threshold, input, smooth)


def mish(input: Tensor, inplace: bool = False) -> Tensor:
    out = input * tanh(softplus(input))
    return input.copy_(out) if inplace else out


def hardtanh(input: Tensor, min_val: float = -1.0, max_val: float = 1.0, inplace=False) -> Tensor:
    out = clamp(input, min_val, max_val)
    return input.copy_(out) if inplace else out


def relu6(input: Tensor, inplace: bool = False) -> Tensor:
    return hardtanh(input, 0.0, 6.0, inplace)


def prelu(input: Tensor, weight: Tensor) -> Tensor:
    w = weight
    if input.ndim >= 2 and weight.numel() > 1:
        w = weight.reshape((1, -1) + (1,) * (input.ndim - 2))
    return where(input > 0, input, input * w)


def logsigmoid(input: Tensor) -> Tensor:
    return -softplus(-input)


def softsign(input: Tensor) -> Tensor:
    return input / (input.abs() + 1)


def tanhshrink(input: Tensor) -> Tensor:
    return input - tanh(input)


def threshold(input: Tensor, threshold: float, value: float, inplace: bool = False) -> Tensor:
    out = where(input > threshold, input, value)
    return input.copy_(out) if inplace else out


def glu(input: Tensor, dim: int = -1) -> Tensor:
    a, b = input.chunk(2, dim)
    return a * sigmoid(b)


def softmin(input: Tensor, dim=None, dtype=None) -> Tensor:
    return softmax(-input, dim, dtype)
