"""Softmax, log-softmax and the activation functions of ember.nn, with their derivatives.

Softmax and log-softmax have fused, numerically stable kernels. Each pointwise activation is
one node under PyTorch's name (``HardswishBackward0``, ...): its forward runs on arrays, its
backward is written with ember ops next to it, so double backward works.
"""

from __future__ import annotations

import math

from .. import _backend
from .._kernels import blocked as _blocked
from .._kernels.jit import module as jit_module
from .._kernels.pointwise_backward import backward_map as _piecewise_backward
from .._tensor import Tensor
from ..autograd.node import Node, torch_int
from ._dispatch import array_module, float_result, grad_state, result, wrap, wrap_dim
from .elementwise import clamp, erf, sigmoid, tanh, threshold_backward, where
from .shape import cat

SQRT_HALF = math.sqrt(0.5)
SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
GELU_TANH_A = 0.044715


def _fast(t: Tensor) -> bool:
    """Real floating NumPy tensors take the blocked kernels. Complex and CuPy tensors take the
    generic formulas, and so do the arrays ember.compile records (a NumPy subclass): the
    blocked kernels call ``np.ascontiguousarray``/``np.empty``, which hand back plain arrays,
    so a recording would keep their results as constants."""
    data = t._data
    return _blocked.is_plain_numpy(data) and data.dtype.kind in "fV"


# the compiled kernels (ember._kernels.activation_jit) of each activation, by dtype
_GELU_KERNELS = {
    ("none", "f"): ("gelu_float32", "gelu_backward_float32"),
    ("none", "d"): ("gelu_float64", "gelu_backward_float64"),
    ("tanh", "f"): ("gelu_tanh_float32", "gelu_tanh_backward_float32"),
}  # float64 tanh-GELU and SiLU keep NumPy's float64 tanh/exp: their kernels are float32


def _compiled(name: str, data, *others, dtypes: str = "fd"):
    """``activation_jit.<name>`` run over ``data`` (and ``others`` of its shape and dtype) when
    the compiled kernels are on and apply (NumPy arrays of a dtype in ``dtypes``), else None."""
    kernels = _backend.compiled_kernels("activation_jit", data, *others, dtypes=dtypes)
    if kernels is None:
        return None
    return _backend.compiled_map(getattr(kernels, name), data, *others)


def _piecewise(name: str, data, *others, constants: tuple = (), dtypes: str = "fd"):
    """``pointwise_jit.<name>`` over ``data`` (and ``others`` of its shape and dtype, one of
    ``dtypes``), its ``constants`` cast to ``data``'s dtype first (as NumPy casts a Python
    float against a float32 array), when the compiled kernels are on and apply; else None."""
    kernels = _backend.compiled_kernels("pointwise_jit", data, *others, dtypes=dtypes)
    if kernels is None:
        return None
    typed = tuple(data.dtype.type(c) for c in constants)
    return _backend.compiled_map(getattr(kernels, name), data, *others, constants=typed)


def _cuda_kernels(data):
    """``ember._kernels.cuda_fused`` when ``data`` is a CuPy array (its fused kernels may
    apply), else None: on the CPU one attribute read and a comparison."""
    cupy = _backend._cupy
    if cupy is None or data.__class__ is not cupy.ndarray:
        return None
    from .._kernels import cuda_fused

    return cuda_fused


def _softmax_dim(input: Tensor, dim, op: str) -> int:
    if dim is None:  # PyTorch's legacy implicit choice
        dim = 0 if input.ndim in (0, 1, 3) else 1
    return wrap_dim(dim, max(input.ndim, 1), op)


def _saved_softmax_dim(node):
    """The dim as torch's node saves it: as given (negative ones as uint64), else the one
    chosen for dim=None."""
    return node.dim if node.dim_arg is None else torch_int(node.dim_arg)


class _SoftmaxFamilyBackward(Node):
    """softmax's and log_softmax's backward (``log``): the blocked or the fused kernel when
    no graph is built, else the subclass's ``formula`` in ember ops."""

    torch_saved = {"dim": _saved_softmax_dim, "result": "result"}
    dim_arg = None
    log = False

    def backward(self, g):
        y = self.saved_output()
        d = self.dim
        if not grad_state.enabled and y._data.ndim:
            if _fast(y):
                return wrap(_blocked.softmax_backward(g._data, y._data, d, log=self.log))
            fused = _fused_softmax_grad(g._data, y._data, d, log=self.log)
            if fused is not None:
                return wrap(fused)
        return self.formula(g, y, d)


class SoftmaxBackward0(_SoftmaxFamilyBackward):
    def formula(self, g, y, d):
        return y * (g - (g * y).sum(d, keepdim=True))  # J = diag(y) - y yᵀ


class LogSoftmaxBackward0(_SoftmaxFamilyBackward):
    log = True

    def formula(self, g, y, d):
        return g - y.exp() * g.sum(d, keepdim=True)  # d log softmax = I - softmax


def _fused_softmax(data, d: int, log: bool):
    """The fused CUDA softmax over the last dim of a CuPy array, or None."""
    kernels = _cuda_kernels(data)
    if kernels is None or d != data.ndim - 1:
        return None
    return kernels.fused_softmax(array_module(data), data, log=log)


def _fused_softmax_grad(g, y, d: int, log: bool):
    """The fused CUDA backward over the last dim of CuPy arrays, or None."""
    kernels = _cuda_kernels(y)
    if kernels is None or d != y.ndim - 1 or g.__class__ is not y.__class__:
        return None
    return kernels.fused_softmax_backward(array_module(y), y, g, log=log)


def _stable_shift(xp, data, d):
    m = xp.max(data, axis=d, keepdims=True) if data.size else data
    return data - xp.where(xp.isfinite(m), m, 0) if data.size else data


def _softmax_any(input: Tensor, dim, dtype, log: bool) -> Tensor:
    op = "log_softmax" if log else "softmax"
    if dtype is not None:
        input = input.to(dtype)
    if not (input.dtype.is_floating_point or input.dtype.is_complex):
        # torch has no integer or bool kernel (pass dtype= to compute in a float type); an
        # empty tensor returns as it is, after the dim is checked
        d = _softmax_dim(input, dim, op)
        if input.numel() == 0:
            return input.clone()
        kernel = f"{op}_lastdim_kernel_impl" if d == max(input.ndim, 1) - 1 else f"{op}_kernel_impl"
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{input.dtype.legacy_name}'")
    input = float_result(op, input)
    d = _softmax_dim(input, dim, op)
    data = input._data
    xp = array_module(data)
    if data.ndim == 0:
        out = xp.zeros_like(data) if log else xp.ones_like(data)
    elif _fast(input):
        out = _blocked.softmax(data, d, log).astype(data.dtype, copy=False)
    else:
        out = _fused_softmax(data, d, log)  # one CUDA kernel per row, where it applies
        if out is None:  # complex, CuPy over another dim, or recorded by ember.compile
            shifted = _stable_shift(xp, data, d)
            if log:
                out = shifted - xp.log(xp.exp(shifted).sum(axis=d, keepdims=True))
            else:
                e = xp.exp(shifted)
                out = e / e.sum(axis=d, keepdims=True)
    node_cls = LogSoftmaxBackward0 if log else SoftmaxBackward0
    return result(node_cls, out, (input,), save_output=True, dim=d, dim_arg=dim)


def softmax(input: Tensor, dim=None, dtype=None) -> Tensor:
    """exp(x) / Σ exp(x) along ``dim``, computed without overflow."""
    return _softmax_any(input, dim, dtype, log=False)


def log_softmax(input: Tensor, dim=None, dtype=None) -> Tensor:
    """x - log Σ exp(x) along ``dim``, finite for logits of ±1e4 and beyond."""
    return _softmax_any(input, dim, dtype, log=True)


# --------------------------------------------------------------------------------------------
# Pointwise activations: one node each under PyTorch's name, forward on arrays, backward
# written with ember ops (so double backward works).
# --------------------------------------------------------------------------------------------
def _floating(input: Tensor, op: str) -> None:
    if not (input.is_floating_point() or input.is_complex()):
        # PyTorch's error for a dtype a kernel lacks (a subclass of RuntimeError)
        raise NotImplementedError(f"\"{op}_cpu\" not implemented for '{input.dtype.legacy_name}'")


def _pointwise(node_cls, input: Tensor, op: str, kernel, **attrs) -> Tensor:
    """``kernel(xp, data)`` as the output of one ``node_cls`` node that saves ``input``."""
    _floating(input, op)
    data = input._data
    out = kernel(array_module(data), data)
    return result(node_cls, out.astype(data.dtype, copy=False), (input,), (input,), **attrs)


def _in_place(input: Tensor, fn) -> Tensor:
    """Run ``fn`` and write its result into ``input``; the graph sees a copy of the old value
    (a saved input overwritten in place could not be unpacked in backward)."""
    source = input.clone() if input.requires_grad else input
    return input.copy_(fn(source))


class LeakyReluBackward0(Node):
    torch_saved = {"negative_slope": "negative_slope", "self": 0}

    def backward(self, g):
        (x,) = self.unpack_saved()
        if not grad_state.enabled:
            slope = (self.negative_slope,)
            fused = _piecewise_backward("leaky_relu_backward", g._data, x._data, slope)
            if fused is not None:
                return wrap(fused)
        return where(x > 0, g, g * self.negative_slope)


def leaky_relu(input: Tensor, negative_slope: float = 0.01, inplace: bool = False) -> Tensor:
    """x where x > 0, else ``negative_slope * x``."""
    if inplace:
        return _in_place(input, lambda t: leaky_relu(t, negative_slope))
    _floating(input, "leaky_relu")
    out = _piecewise("leaky_relu", input._data, constants=(negative_slope,))
    if out is not None:
        attrs = {"negative_slope": negative_slope}
        return result(LeakyReluBackward0, out, (input,), (input,), **attrs)
    kernel = lambda xp, x: _backend.select(x > 0, x, x * negative_slope)
    return _pointwise(
        LeakyReluBackward0, input, "leaky_relu", kernel, negative_slope=negative_slope
    )


def leaky_relu_(input: Tensor, negative_slope: float = 0.01) -> Tensor:
    return leaky_relu(input, negative_slope, inplace=True)


class EluBackward0(Node):
    torch_saved = {"alpha": "alpha", "input_scale": "input_scale", "scale": "scale", "self": 0}

    def backward(self, g):
        (x,) = self.unpack_saved()
        a, s, k = self.alpha, self.scale, self.input_scale
        if not grad_state.enabled:
            constants = (s, k, s * a * k, 0)
            name = "elu_backward_float32" if x._data.dtype.char == "f" else "elu_backward"
            fused = _piecewise_backward(name, g._data, x._data, constants)
            if fused is not None:
                return wrap(fused)
        # d/dx s·α(e^{kx} - 1) = s·α·k·e^{kx}; clamp keeps exp finite on the unused branch
        negative = (clamp(x, max=0.0) * k).exp() * (s * a * k)
        return where(x > 0, g * s, g * negative)


class CeluBackward0(EluBackward0):
    torch_saved = {"alpha": "alpha", "self": 0}


def _elu(input, alpha, scale, input_scale, op, node_cls=EluBackward0) -> Tensor:
    def kernel(xp, x):
        negative = xp.expm1(xp.minimum(x, 0) * input_scale) * (alpha * scale)
        return _backend.select(x > 0, x * scale, negative.astype(x.dtype, copy=False))

    attrs = dict(alpha=alpha, scale=scale, input_scale=input_scale)
    _floating(input, op)
    name = "elu_float32" if input._data.dtype.char == "f" else "elu"
    out = _piecewise(name, input._data, constants=(alpha * scale, scale, input_scale, 0))
    if out is not None:
        return result(node_cls, out, (input,), (input,), **attrs)
    return _pointwise(node_cls, input, op, kernel, **attrs)


def elu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    """x where x > 0, else α(eˣ - 1)."""
    if inplace:
        return _in_place(input, lambda t: elu(t, alpha))
    return _elu(input, alpha, 1.0, 1.0, "elu")


def elu_(input: Tensor, alpha: float = 1.0) -> Tensor:
    return elu(input, alpha, inplace=True)


SELU_ALPHA = 1.6732632423543772848170429916717
SELU_SCALE = 1.0507009873554804934193349852946


def selu(input: Tensor, inplace: bool = False) -> Tensor:
    """scale · elu(x, α) with the self-normalising constants of Klambauer et al."""
    if inplace:
        return _in_place(input, selu)
    return _elu(input, SELU_ALPHA, SELU_SCALE, 1.0, "elu")


def selu_(input: Tensor) -> Tensor:
    return selu(input, inplace=True)


def celu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    """max(0, x) + min(0, α(e^{x/α} - 1))."""
    if alpha == 0:
        raise RuntimeError("ZeroDivisionError: alpha cannot be 0 for CELU")
    if inplace:
        return _in_place(input, lambda t: celu(t, alpha))
    return _elu(input, alpha, 1.0, 1.0 / alpha, "elu", CeluBackward0)


def celu_(input: Tensor, alpha: float = 1.0) -> Tensor:
    return celu(input, alpha, inplace=True)


class RreluWithNoiseBackward0(Node):
    def backward(self, g):
        return g * self.noise  # the slope each element got in forward


class HardtanhBackward0(Node):
    torch_saved = {"max_val": "max_val", "min_val": "min_val", "self": 0}

    def backward(self, g):
        (x,) = self.unpack_saved()
        return g * ((x > self.min_val) & (x < self.max_val))


def hardtanh(input: Tensor, min_val: float = -1.0, max_val: float = 1.0, inplace=False) -> Tensor:
    """x clamped to [min_val, max_val]."""
    if min_val > max_val:
        raise ValueError("min_val cannot be greater than max_val")
    if inplace:
        return _in_place(input, lambda t: hardtanh(t, min_val, max_val))
    data = input._data
    if data.dtype.kind == "b":
        raise NotImplementedError("\"hardtanh_cpu\" not implemented for 'Bool'")
    if data.dtype.kind == "u" and (min_val < 0 or max_val < 0):
        raise RuntimeError("cannot do hardtanh on an unsigned type with negative limits")
    out = array_module(data).clip(data, min_val, max_val).astype(data.dtype, copy=False)
    # integer inputs are clamped too (as PyTorch); they never carry a gradient
    attrs = dict(min_val=min_val, max_val=max_val)
    return result(HardtanhBackward0, out, (input,), (input,), **attrs)


def hardtanh_(input: Tensor, min_val: float = -1.0, max_val: float = 1.0) -> Tensor:
    return hardtanh(input, min_val, max_val, inplace=True)


def relu6(input: Tensor, inplace: bool = False) -> Tensor:
    """min(max(0, x), 6)."""
    return hardtanh(input, 0.0, 6.0, inplace)


def relu(input: Tensor, inplace: bool = False) -> Tensor:
    return input.relu_() if inplace else input.relu()


def relu_(input: Tensor) -> Tensor:
    return input.relu_()


class HardswishBackward0(Node):
    torch_saved = {"self": 0}

    def backward(self, g):
        (x,) = self.unpack_saved()
        # d/dx x·relu6(x + 3)/6 = 0 below -3, x/3 + 1/2 in between, 1 above 3
        if not grad_state.enabled:
            constants = (3, 0.5, 0, 1)
            fused = _piecewise_backward("hardswish_backward", g._data, x._data, constants)
            if fused is not None:
                return wrap(fused)
        return g * where(x < -3, 0.0, where(x <= 3, x / 3 + 0.5, 1.0))


def hardswish(input: Tensor, inplace: bool = False) -> Tensor:
    """x · relu6(x + 3) / 6."""
    if inplace:
        return _in_place(input, hardswish)
    _floating(input, "hardswish")
    out = _piecewise("hardswish", input._data, constants=(3, 6, 0))
    if out is not None:
        return result(HardswishBackward0, out, (input,), (input,))
    kernel = lambda xp, x: x * xp.clip(x + 3, 0, 6) / 6
    return _pointwise(HardswishBackward0, input, "hardswish", kernel)


class HardsigmoidBackward0(Node):
    torch_saved = {"self": 0}

    def backward(self, g):
        (x,) = self.unpack_saved()
        if not grad_state.enabled:
            constants = (3, 6, 0, 1)
            fused = _piecewise_backward("hardsigmoid_backward", g._data, x._data, constants)
            if fused is not None:
                return wrap(fused)
        return g * ((x > -3) & (x < 3)) / 6


def hardsigmoid(input: Tensor, inplace: bool = False) -> Tensor:
    """relu6(x + 3) / 6."""
    if inplace:
        return _in_place(input, hardsigmoid)
    _floating(input, "hardsigmoid")
    out = _piecewise("hardsigmoid", input._data, constants=(3, 6, 0))
    if out is not None:
        return result(HardsigmoidBackward0, out, (input,), (input,))
    kernel = lambda xp, x: xp.clip(x + 3, 0, 6) / 6
    return _pointwise(HardsigmoidBackward0, input, "hardsigmoid", kernel)


def _check_lambd(input: Tensor, lambd: float) -> None:
    if lambd < 0:
        raise RuntimeError(
            f"lambda must be in range [0, 3.40282e+38] for input dtype "
            f"{input.dtype.legacy_name}, but found {lambd:g}"
        )


class SoftshrinkBackward0(Node):
    torch_saved = {"lambd": "lambd", "self": 0}

    def backward(self, g):
        (x,) = self.unpack_saved()
        return g * (x.abs() > self.lambd)


def softshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    """x - λ above λ, x + λ below -λ, 0 in between."""
    _check_lambd(input, lambd)
    # x * 0 in between, as torch: NaN stays NaN
    kernel = lambda xp, x: xp.where(x > lambd, x - lambd, xp.where(x < -lambd, x + lambd, x * 0))
    return _pointwise(SoftshrinkBackward0, input, "softshrink", kernel, lambd=lambd)


class HardshrinkBackward0(SoftshrinkBackward0):
    pass


def hardshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    """x where |x| > λ, else 0."""
    kernel = lambda xp, x: xp.where((x >= -lambd) & (x <= lambd), 0, x)
    return _pointwise(HardshrinkBackward0, input, "hardshrink", kernel, lambd=lambd)


class ThresholdBackward0(Node):
    torch_saved = {"self": 0, "threshold": "threshold"}

    def backward(self, g):
        (x,) = self.unpack_saved()
        return threshold_backward(g, x, self.threshold)


def threshold(input: Tensor, threshold: float, value: float, inplace: bool = False) -> Tensor:
    """``value`` where x <= threshold, else x (NaN stays NaN, as torch)."""
    if inplace:
        return _in_place(input, lambda t: _threshold(t, threshold, value))
    return _threshold(input, threshold, value)


def _threshold(input: Tensor, threshold: float, value: float) -> Tensor:
    data = input._data
    xp = array_module(data)
    out = _backend.select(data <= threshold, xp.asarray(value).astype(data.dtype), data)
    return result(ThresholdBackward0, out, (input,), (input,), threshold=threshold)


def threshold_(input: Tensor, threshold: float, value: float) -> Tensor:
    return _in_place(input, lambda t: _threshold(t, threshold, value))


class SoftplusBackward0(Node):
    torch_saved = {"beta": "beta", "self": 0, "threshold": "threshold"}

    def backward(self, g):
        (x,) = self.unpack_saved()
        if not grad_state.enabled:
            constants = (self.beta, self.threshold)
            name = "softplus_backward_float32"
            fused = _piecewise_backward(name, g._data, x._data, constants, dtypes="f")
            if fused is not None:
                return wrap(fused)
        z = x * self.beta
        return where(z > self.threshold, g, g * sigmoid(z))


def softplus(input: Tensor, beta: float = 1.0, threshold: float = 20.0) -> Tensor:
    """log(1 + exp(βx)) / β, linear where βx > threshold (as PyTorch)."""

    def kernel(xp, x):
        z = x * beta
        # log1p(exp(-|z|)) + max(z, 0) is the overflow-free form of log(1 + e^z)
        smooth = (xp.log1p(xp.exp(-xp.abs(z))) + xp.maximum(z, 0)) / beta
        return xp.where(z > threshold, x, smooth)

    _floating(input, "softplus")
    constants = (beta, threshold)
    out = _piecewise("softplus_float32", input._data, constants=constants, dtypes="f")
    if out is not None:
        attrs = {"beta": beta, "threshold": threshold}
        return result(SoftplusBackward0, out, (input,), (input,), **attrs)
    return _pointwise(SoftplusBackward0, input, "softplus", kernel, beta=beta, threshold=threshold)


class LogSigmoidBackward0(Node):
    def backward(self, g):
        (x,) = self.unpack_saved()
        if not grad_state.enabled:
            float32 = x._data.dtype.char == "f"
            name = "logsigmoid_backward_float32" if float32 else "logsigmoid_backward_float64"
            fused = _piecewise_backward(name, g._data, x._data)
            if fused is not None:
                return wrap(fused)
        return g * sigmoid(-x)  # d/dx -log(1 + e^-x) = σ(-x)


def softplus_array(xp, z):
    """log(1 + e^z) of an array (or a 0-d result), as log1p(e^-|z|) + max(z, 0): the float32
    kernel where it applies (C's log1p is one call per element), else ``xp``'s functions."""
    out = _piecewise("softplus_float32", z, constants=(1.0, math.inf), dtypes="f")
    if out is not None:
        return out
    return xp.log1p(xp.exp(-xp.abs(z))) + xp.maximum(z, 0)


def logsigmoid(input: Tensor) -> Tensor:
    """log σ(x) = -softplus(-x), finite for large |x|."""
    _floating(input, "log_sigmoid_forward")
    data = input._data
    name = "logsigmoid_float32" if data.dtype.char == "f" else "logsigmoid_float64"
    out = _piecewise(name, data)  # one pass
    if out is None:
        out = -softplus_array(array_module(data), -data)
    return result(LogSigmoidBackward0, out.astype(data.dtype, copy=False), (input,), (input,))


class SiluBackward0(Node):
    torch_saved = {"self": 0}

    def backward(self, g):
        (x,) = self.unpack_saved()
        if not grad_state.enabled and _fast(x):
            fused = _compiled("silu_backward_float32", g._data, x._data, dtypes="f")
            if fused is not None:
                return wrap(fused)
            return wrap(_blocked.silu_backward(g._data, x._data))
        s = sigmoid(x)
        return g * s * (x * (1 - s) + 1)  # d/dx x σ(x) = σ (1 + x (1 - σ))


def _sigmoid_array(xp, x):
    if x.dtype.kind == "c":  # no sign to split on: 1 / (1 + e^-x) directly
        return 1 / (1 + xp.exp(-x))
    e = xp.exp(-xp.abs(x))
    return xp.where(x >= 0, 1 / (1 + e), e / (1 + e))


def silu(input: Tensor, inplace: bool = False) -> Tensor:
    """x σ(x)."""
    if inplace:
        return _in_place(input, silu)
    if _fast(input):
        out = _compiled("silu_float32", input._data, dtypes="f")
        if out is None:
            out = _blocked.silu(input._data)
        return result(SiluBackward0, out, (input,), (input,))
    return _pointwise(SiluBackward0, input, "silu", lambda xp, x: x * _sigmoid_array(xp, x))


class MishBackward0(Node):
    torch_saved = {"self": 0}

    def backward(self, g):
        (x,) = self.unpack_saved()
        if not grad_state.enabled:
            fused = _piecewise_backward("mish_backward_float32", g._data, x._data, dtypes="f")
            if fused is not None:
                return wrap(fused)
        t = tanh(softplus(x))
        return g * (t + x * sigmoid(x) * (1 - t * t))  # d/dx x tanh(sp(x)), sp' = σ


def mish(input: Tensor, inplace: bool = False) -> Tensor:
    """x tanh(softplus(x))."""
    if inplace:
        return _in_place(input, mish)

    def kernel(xp, x):
        return x * xp.tanh(xp.log1p(xp.exp(-xp.abs(x))) + xp.maximum(x, 0))

    _floating(input, "mish")
    out = _piecewise("mish_float32", input._data, dtypes="f")
    if out is not None:
        return result(MishBackward0, out, (input,), (input,))
    return _pointwise(MishBackward0, input, "mish", kernel)


class GeluBackward0(Node):
    torch_saved = {"approximate": "approximate", "self": 0}

    def backward(self, g):
        (x,) = self.unpack_saved()
        if not grad_state.enabled:
            if _fast(x):
                names = _GELU_KERNELS.get((self.approximate, x._data.dtype.char))
                fused = names and _compiled(names[1], g._data, x._data)
                if fused is not None:
                    return wrap(fused)
                return wrap(_blocked.gelu_backward(g._data, x._data, self.approximate))
            kernels = _cuda_kernels(x._data)
            if kernels is not None and g._data.__class__ is x._data.__class__:
                xp = array_module(x._data)
                fused = kernels.fused_gelu_backward(xp, x._data, g._data, self.approximate)
                if fused is not None:
                    return wrap(fused)
        if self.approximate == "tanh":
            inner = (x + x * x * x * 0.044715) * SQRT_2_OVER_PI
            t = tanh(inner)
            d_inner = (x * x * (3 * 0.044715) + 1) * SQRT_2_OVER_PI
            return g * ((t + 1) * 0.5 + x * 0.5 * (1 - t * t) * d_inner)
        cdf = (erf(x * SQRT_HALF) + 1) * 0.5
        pdf = (x * x * -0.5).exp() * INV_SQRT_2PI
        return g * (cdf + x * pdf)  # d/dx x Φ(x) = Φ + x φ


def gelu(input: Tensor, approximate: str = "none") -> Tensor:
    """x Φ(x); ``approximate='tanh'`` uses the tanh approximation."""
    if approximate not in ("none", "tanh"):
        raise RuntimeError(f"approximate argument must be either none or tanh, got {approximate}")

    def kernel(xp, x):
        if approximate == "tanh":
            inner = (x + x * x * x * 0.044715) * SQRT_2_OVER_PI
            return x * 0.5 * (xp.tanh(inner) + 1)
        return x * 0.5 * (_backend.erf(xp, x * SQRT_HALF) + 1)

    if _fast(input):
        names = _GELU_KERNELS.get((approximate, input._data.dtype.char))
        out = names and _compiled(names[0], input._data)
        if out is None:
            out = _blocked.gelu(input._data, approximate)
        return result(GeluBackward0, out, (input,), (input,), approximate=approximate)
    kernels = _cuda_kernels(input._data)
    if kernels is not None:
        out = kernels.fused_gelu(array_module(input._data), input._data, approximate)
        if out is not None:  # one CUDA kernel
            return result(GeluBackward0, out, (input,), (input,), approximate=approximate)
    return _pointwise(GeluBackward0, input, "gelu", kernel, approximate=approximate)


class PreluKernelBackward0(Node):
    def backward(self, g):
        x, w = self.unpack_saved()
        wb = self.broadcast(w)
        positive = x > 0
        gx = where(positive, g, g * wb) if self._edges[0] is not None else None
        gw = None
        if self._edges[1] is not None:
            per_element = where(positive, 0.0, g * x)
            if w.numel() == 1:
                gw = per_element.sum().reshape(w.shape)
            else:
                dims = tuple(d for d in range(x.dim()) if d != 1)
                gw = per_element.sum(dims).reshape(w.shape)
        return gx, gw


def prelu(input: Tensor, weight: Tensor) -> Tensor:
    """x where x > 0, else ``weight[c] * x`` with c the channel (dim 1)."""
    _floating(input, "prelu")
    if weight.dim() > 1:
        raise RuntimeError(
            f"prelu: Expected `weight` to be a scalar or 1D tensor, but got: ndim = {weight.dim()}"
        )
    if weight.numel() != 1:
        if input.dim() == 0:
            raise RuntimeError("Not allow zero-dim input tensor.")
        channels = input.shape[1] if input.dim() >= 2 else 1
        if weight.numel() != channels:
            raise RuntimeError(
                "Mismatch of parameter numbers and input channel size. Found parameter numbers "
                f"= {weight.numel()} and channel size = {channels}."
            )
    ndim = input.dim()

    def broadcast(w):
        if w.numel() == 1:
            return w.reshape(())
        return w.reshape((1, -1) + (1,) * (ndim - 2))

    data = input._data
    w = broadcast(weight)._data.astype(data.dtype, copy=False)
    out = _backend.select(data > 0, data, data * w)
    return result(PreluKernelBackward0, out, (input, weight), (input, weight), broadcast=broadcast)


class GluBackward0(Node):
    def backward(self, g):
        (x,) = self.unpack_saved()
        if not grad_state.enabled:
            kernels = _glu_kernels(x._data, g._data)
            if kernels is not None:
                return wrap(kernels.glu_backward(g._data, x._data, self.dim))
        half = x.shape[self.dim] // 2
        a, b = x.narrow(self.dim, 0, half), x.narrow(self.dim, half, half)
        s = sigmoid(b)
        return cat([g * s, g * a * s * (1 - s)], self.dim)


def _glu_kernels(data, *others):
    """ember._kernels.pointwise_jit for float32 NumPy arrays, when the kernels are on."""
    for array in (data, *others):
        if array.__class__ is not data.__class__ or not _blocked.is_plain_numpy(array):
            return None
        if array.dtype.char != "f":
            return None
    return jit_module("pointwise_jit", data.size)


def glu(input: Tensor, dim: int = -1) -> Tensor:
    """a σ(b), where a and b are the two halves of ``input`` along ``dim``."""
    if input.dim() == 0:
        raise RuntimeError("glu does not support scalars because halving size must be even")
    d = wrap_dim(dim, input.dim(), "glu")
    size = input.shape[d]
    if size % 2:
        raise RuntimeError(f"Halving dimension must be even, but dimension {d} is size {size}")
    _floating(input, "glu")
    data = input._data
    kernels = _glu_kernels(data)
    if kernels is not None:
        return result(GluBackward0, kernels.glu(data, d), (input,), (input,), dim=d)
    xp = array_module(data)
    half = size // 2
    lead = (slice(None),) * d
    a, b = data[lead + (slice(0, half),)], data[lead + (slice(half, None),)]
    return result(GluBackward0, a * _sigmoid_array(xp, b), (input,), (input,), dim=d)


def softsign(input: Tensor) -> Tensor:
    """x / (1 + |x|)."""
    return input / (input.abs() + 1)


def tanhshrink(input: Tensor) -> Tensor:
    """x - tanh(x)."""
    return input - tanh(input)


def softmin(input: Tensor, dim=None, dtype=None) -> Tensor:
    """softmax(-x); with ``dtype``, -x is cast (as torch: an unsigned input's negation wraps
    around first)."""
    negated = -input
    return softmax(negated if dtype is None else negated.to(dtype), dim)
