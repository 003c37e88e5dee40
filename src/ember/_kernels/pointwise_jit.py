"""Compiled one-pass kernels of the piecewise activations (leaky ReLU, hardswish, hardsigmoid,
ELU/SELU/CELU) and of their backward formulas, for C-contiguous float32/float64 NumPy arrays.

Each is ``kernel(start, stop, *arrays, out, *constants)`` over flat indices
(``_backend.compiled_map`` and ``jit.parallel_for`` split it over ember's pool). They compute
the NumPy paths' formulas in the same order and the same dtype (constants are cast to it
first, as NumPy casts a Python float against a float32 array), so the results are equal to
the bit, but for float32 ELU: NumPy (and the float64 kernels) call C's ``expm1``/``exp`` per
element, the float32 kernels compute them in float32 arithmetic, within 1.4 ulps.

A backward kernel ``<name>`` takes the output gradient ``g`` as an array; its twin
``<name>_constant_grad`` takes it as one value (``kernel(start, stop, x, out, g,
*constants)``), for the gradient ``sum()`` hands down, a broadcast of one number: a pass less
than making it an array first, and one array less to read. Both compute each element with the
same inline formula, so they give the same bits.
"""

from __future__ import annotations

import math

import numpy as np

from . import jit
from .activation_jit import (
    EXP_TAYLOR_F32,
    LOG2E_F32,
    MAGIC_BITS_F32,
    ROUND_MAGIC_F32,
    _bits_as_float32,
    _float32_as_bits,
    exp_f32,
    tanh_f32,
)
from .pointwise_backward import constant_value

F32 = np.float32


@jit.njit(error_model="numpy")
def leaky_relu(start, stop, x, out, slope):
    xs, os = x[start:stop], out[start:stop]
    for i in range(xs.size):
        v = xs[i]
        os[i] = v if v > 0 else v * slope


@jit.njit(inline="always", error_model="numpy")
def _leaky_relu_grad(g, v, slope):
    return g if v > 0 else g * slope


@jit.njit(error_model="numpy")
def leaky_relu_backward(start, stop, g, x, out, slope):
    gs, xs, os = g[start:stop], x[start:stop], out[start:stop]
    for i in range(xs.size):
        os[i] = _leaky_relu_grad(gs[i], xs[i], slope)


@jit.njit(error_model="numpy")
def leaky_relu_backward_constant_grad(start, stop, x, out, g, slope):
    xs, os = x[start:stop], out[start:stop]
    for i in range(xs.size):
        os[i] = _leaky_relu_grad(g, xs[i], slope)


@jit.njit(error_model="numpy")
def hardswish(start, stop, x, out, three, six, zero):
    xs, os = x[start:stop], out[start:stop]
    for i in range(xs.size):
        v = xs[i]
        r = v + three
        r = six if r > six else r  # clip(x + 3, 0, 6), NaN kept
        r = zero if r < zero else r
        os[i] = v * r / six


@jit.njit(inline="always", error_model="numpy")
def _hardswish_grad(g, v, three, half, zero, one):
    if v < -three:
        return g * zero
    if v <= three:
        return g * (v / three + half)
    return g * one  # and NaN, as the nested where gives


@jit.njit(error_model="numpy")
def hardswish_backward(start, stop, g, x, out, three, half, zero, one):
    gs, xs, os = g[start:stop], x[start:stop], out[start:stop]
    for i in range(xs.size):
        os[i] = _hardswish_grad(gs[i], xs[i], three, half, zero, one)


@jit.njit(error_model="numpy")
def hardswish_backward_constant_grad(start, stop, x, out, g, three, half, zero, one):
    xs, os = x[start:stop], out[start:stop]
    for i in range(xs.size):
        os[i] = _hardswish_grad(g, xs[i], three, half, zero, one)


@jit.njit(error_model="numpy")
def hardsigmoid(start, stop, x, out, three, six, zero):
    xs, os = x[start:stop], out[start:stop]
    for i in range(xs.size):
        r = xs[i] + three
        r = six if r > six else r
        r = zero if r < zero else r
        os[i] = r / six


@jit.njit(inline="always", error_model="numpy")
def _hardsigmoid_grad(g, v, three, six, zero, one):
    return g * (one if -three < v < three else zero) / six


@jit.njit(error_model="numpy")
def hardsigmoid_backward(start, stop, g, x, out, three, six, zero, one):
    gs, xs, os = g[start:stop], x[start:stop], out[start:stop]
    for i in range(xs.size):
        os[i] = _hardsigmoid_grad(gs[i], xs[i], three, six, zero, one)


@jit.njit(error_model="numpy")
def hardsigmoid_backward_constant_grad(start, stop, x, out, g, three, six, zero, one):
    xs, os = x[start:stop], out[start:stop]
    for i in range(xs.size):
        os[i] = _hardsigmoid_grad(g, xs[i], three, six, zero, one)


@jit.njit(error_model="numpy")
def elu(start, stop, x, out, alpha_scale, scale, input_scale, zero):
    """x·scale where x > 0, else expm1(min(x, 0)·input_scale)·alpha_scale (C's expm1)."""
    xs, os = x[start:stop], out[start:stop]
    for i in range(xs.size):
        v = xs[i]
        if v > 0:
            os[i] = v * scale
        else:
            m = v if v < 0 or v != v else zero  # NumPy's minimum(x, 0): +0 for -0
            os[i] = math.expm1(m * input_scale) * alpha_scale


@jit.njit(inline="always", error_model="numpy")
def _elu_grad(g, v, scale, input_scale, coefficient, zero):
    """g·scale where x > 0, else g·exp(min(x, 0)·input_scale)·coefficient (C's exp)."""
    if v > 0:
        return g * scale
    m = v if v < 0 or v != v else zero
    return g * (math.exp(m * input_scale) * coefficient)


@jit.njit(error_model="numpy")
def elu_backward(start, stop, g, x, out, scale, input_scale, coefficient, zero):
    gs, xs, os = g[start:stop], x[start:stop], out[start:stop]
    for i in range(xs.size):
        os[i] = _elu_grad(gs[i], xs[i], scale, input_scale, coefficient, zero)


@jit.njit(error_model="numpy")
def elu_backward_constant_grad(start, stop, x, out, g, scale, input_scale, coefficient, zero):
    xs, os = x[start:stop], out[start:stop]
    for i in range(xs.size):
        os[i] = _elu_grad(g, xs[i], scale, input_scale, coefficient, zero)


# float32: C's expm1f and expf are one library call per element (~20 ns here, 3x torch's whole
# ELU); these run in float32 arithmetic, 8 lanes a vector, within a few ulps of them
EXPM1_TAYLOR_F32 = tuple(F32(1.0 / math.factorial(n)) for n in range(2, 9))


@jit.njit(inline="always", error_model="numpy")
def expm1_f32(y):
    """e^y - 1 of a float32 y <= 0 in float32 arithmetic: the series to y^8 on [-0.5, 0]
    (no cancellation), e^y - 1 below."""
    c2, c3, c4, c5, c6, c7, c8 = EXPM1_TAYLOR_F32
    p = (((((c8 * y + c7) * y + c6) * y + c5) * y + c4) * y + c3) * y + c2
    small = y + y * y * p
    return small if y > F32(-0.5) else exp_f32(y) - F32(1.0)


@jit.njit(error_model="numpy")
def elu_float32(start, stop, x, out, alpha_scale, scale, input_scale, zero):
    xs, os = x[start:stop], out[start:stop]
    for i in range(xs.size):
        v = xs[i]
        m = v if v < zero or v != v else zero
        negative = expm1_f32(m * input_scale) * alpha_scale
        os[i] = v * scale if v > zero else negative


@jit.njit(inline="always", error_model="numpy")
def _elu_grad_f32(g, v, scale, input_scale, coefficient, zero):
    m = v if v < zero or v != v else zero
    negative = g * (exp_f32(m * input_scale) * coefficient)
    return g * scale if v > zero else negative


@jit.njit(error_model="numpy")
def elu_backward_float32(start, stop, g, x, out, scale, input_scale, coefficient, zero):
    gs, xs, os = g[start:stop], x[start:stop], out[start:stop]
    for i in range(xs.size):
        os[i] = _elu_grad_f32(gs[i], xs[i], scale, input_scale, coefficient, zero)


@jit.njit(error_model="numpy")
def elu_backward_float32_constant_grad(
    start, stop, x, out, g, scale, input_scale, coefficient, zero
):
    xs, os = x[start:stop], out[start:stop]
    for i in range(xs.size):
        os[i] = _elu_grad_f32(g, xs[i], scale, input_scale, coefficient, zero)


# log(m) = 2 artanh(s), s = (m - 1) / (m + 1), |s| <= 0.172 for m in [√½, √2]: to s^11
LOG_SERIES_F32 = tuple(F32(2.0 / n) for n in (3, 5, 7, 9, 11))
LN2_HI_F32, LN2_LO_F32 = F32(0.693359375), F32(-2.12194440e-4)
SQRT2_F32 = F32(math.sqrt(2.0))


@jit.njit(inline="always", error_model="numpy")
def log1p_f32(u):
    """log(1 + u) of a float32 u in [0, 1] in float32 arithmetic: w = 1 + u, log w from its
    mantissa's series, plus the rounding error of w (u - (w - 1)) / w."""
    w = F32(1.0) + u
    big = w > SQRT2_F32
    m = w * F32(0.5) if big else w
    k = F32(1.0) if big else F32(0.0)
    s = (m - F32(1.0)) / (m + F32(1.0))
    q = s * s
    c3, c5, c7, c9, c11 = LOG_SERIES_F32
    series = ((((c11 * q + c9) * q + c7) * q + c5) * q + c3) * q * s
    log_w = k * LN2_HI_F32 + (F32(2.0) * s + (series + k * LN2_LO_F32))
    return log_w + (u - (w - F32(1.0))) / w


@jit.njit(inline="always", error_model="numpy")
def exp_down_f32(y):
    """e^y of a float32 y <= 0 down to float32's subnormals (exp_f32 gives 0 below -87): exp_f32's
    steps, with 2^k applied as two normal halves so that the product rounds once; the same bits
    as exp_f32 wherever that is normal, 0 below -104, NaN for NaN."""
    z = y if y > F32(-104.0) else F32(-104.0)
    shifted = z * LOG2E_F32 + ROUND_MAGIC_F32
    k_bits = _float32_as_bits(shifted) - MAGIC_BITS_F32
    k = shifted - ROUND_MAGIC_F32
    r = (z - k * LN2_HI_F32) - k * LN2_LO_F32
    c0, c1, c2, c3, c4, c5, c6, c7 = EXP_TAYLOR_F32
    p = ((((((c7 * r + c6) * r + c5) * r + c4) * r + c3) * r + c2) * r + c1) * r + c0
    low = k_bits >> np.int32(1)
    high = k_bits - low
    bias = np.int32(127)
    e = p * _bits_as_float32((low + bias) << np.int32(23))
    e = e * _bits_as_float32((high + bias) << np.int32(23))
    return e if y == y else y


@jit.njit(inline="always", error_model="numpy")
def softplus_f32(z):
    """log(1 + e^z) as log1p(e^-|z|) + max(z, 0), the NumPy path's form."""
    a = -z if z > F32(0.0) else z
    return log1p_f32(exp_down_f32(a)) + (z if z > F32(0.0) else F32(0.0))


@jit.njit(inline="always", error_model="numpy")
def sigmoid_f32(v):
    positive = v >= F32(0.0)
    e = exp_f32(-v if positive else v)
    return F32(1.0) / (F32(1.0) + e) if positive else e / (F32(1.0) + e)


@jit.njit(error_model="numpy")
def softplus_float32(start, stop, x, out, beta, threshold):
    xs, os = x[start:stop], out[start:stop]
    for i in range(xs.size):
        v = xs[i]
        z = v * beta
        smooth = softplus_f32(z) / beta
        os[i] = v if z > threshold else (smooth if z == z else z)


@jit.njit(inline="always", error_model="numpy")
def _softplus_grad_f32(g, v, beta, threshold):
    z = v * beta
    smooth = g * (sigmoid_f32(z) if z == z else z)
    return g if z > threshold else smooth


@jit.njit(error_model="numpy")
def softplus_backward_float32(start, stop, g, x, out, beta, threshold):
    gs, xs, os = g[start:stop], x[start:stop], out[start:stop]
    for i in range(xs.size):
        os[i] = _softplus_grad_f32(gs[i], xs[i], beta, threshold)


@jit.njit(error_model="numpy")
def softplus_backward_float32_constant_grad(start, stop, x, out, g, beta, threshold):
    xs, os = x[start:stop], out[start:stop]
    for i in range(xs.size):
        os[i] = _softplus_grad_f32(g, xs[i], beta, threshold)


# --- log σ(x) = -softplus(-x): the NumPy path's operations (float32: its kernel's) ----------
@jit.njit(error_model="numpy")
def logsigmoid_float32(start, stop, x, out):
    xs, os = x[start:stop], out[start:stop]
    for i in range(xs.size):
        v = xs[i]
        os[i] = -softplus_f32(-v) if v == v else v


@jit.njit(error_model="numpy")
def logsigmoid_float64(start, stop, x, out):  # C's exp and log1p, as NumPy's float64 loops
    xs, os = x[start:stop], out[start:stop]
    for i in range(xs.size):
        z = -xs[i]
        os[i] = -(math.log1p(math.exp(-abs(z))) + (z if z > 0.0 else 0.0))


@jit.njit(inline="always", error_model="numpy")
def sigmoid_f64(v):  # ember's float64 sigmoid: from e^{-|x|} on both sides
    positive = v >= 0.0
    e = math.exp(-v if positive else v)
    return 1.0 / (1.0 + e) if positive else e / (1.0 + e)


@jit.njit(error_model="numpy")
def logsigmoid_backward_float32(start, stop, g, x, out):  # g σ(-x)
    gs, xs, os = g[start:stop], x[start:stop], out[start:stop]
    for i in range(xs.size):
        os[i] = gs[i] * sigmoid_f32(-xs[i])


@jit.njit(error_model="numpy")
def logsigmoid_backward_float32_constant_grad(start, stop, x, out, g):
    xs, os = x[start:stop], out[start:stop]
    for i in range(xs.size):
        os[i] = g * sigmoid_f32(-xs[i])


@jit.njit(error_model="numpy")
def logsigmoid_backward_float64(start, stop, g, x, out):
    gs, xs, os = g[start:stop], x[start:stop], out[start:stop]
    for i in range(xs.size):
        os[i] = gs[i] * sigmoid_f64(-xs[i])


@jit.njit(error_model="numpy")
def logsigmoid_backward_float64_constant_grad(start, stop, x, out, g):
    xs, os = x[start:stop], out[start:stop]
    for i in range(xs.size):
        os[i] = g * sigmoid_f64(-xs[i])


@jit.njit(error_model="numpy")
def mish_float32(start, stop, x, out):
    xs, os = x[start:stop], out[start:stop]
    for i in range(xs.size):
        v = xs[i]
        os[i] = v * tanh_f32(softplus_f32(v)) if v == v else v


@jit.njit(inline="always", error_model="numpy")
def _mish_grad_f32(g, v):
    """g (t + x σ(x) (1 - t²)), t = tanh(softplus(x))."""
    t = tanh_f32(softplus_f32(v))
    d = t + v * sigmoid_f32(v) * (F32(1.0) - t * t)
    return g * (d if v == v else v)


@jit.njit(error_model="numpy")
def mish_backward_float32(start, stop, g, x, out):
    gs, xs, os = g[start:stop], x[start:stop], out[start:stop]
    for i in range(xs.size):
        os[i] = _mish_grad_f32(gs[i], xs[i])


@jit.njit(error_model="numpy")
def mish_backward_float32_constant_grad(start, stop, x, out, g):
    xs, os = x[start:stop], out[start:stop]
    for i in range(xs.size):
        os[i] = _mish_grad_f32(g, xs[i])


@jit.njit(error_model="numpy")
def glu_float32(start, stop, x, out):
    """out[o] = a σ(b) for the halves a = x[o, 0], b = x[o, 1] of rows start <= o < stop."""
    for o in range(start, stop):
        a, b, y = x[o, 0], x[o, 1], out[o]
        for i in range(y.size):
            y[i] = a[i] * sigmoid_f32(b[i])


@jit.njit(error_model="numpy")
def glu_backward_float32(start, stop, g, x, out):
    """out[o, 0] = g σ(b), out[o, 1] = g a σ(b) (1 - σ(b)), as the Tensor formula rounds."""
    for o in range(start, stop):
        a, b, gs = x[o, 0], x[o, 1], g[o]
        ga, gb = out[o, 0], out[o, 1]
        for i in range(gs.size):
            s = sigmoid_f32(b[i])
            ga[i] = gs[i] * s
            gb[i] = gs[i] * a[i] * s * (F32(1.0) - s)


@jit.njit(error_model="numpy")
def glu_backward_float32_constant_grad(start, stop, x, out, g):
    for o in range(start, stop):
        a, b = x[o, 0], x[o, 1]
        ga, gb = out[o, 0], out[o, 1]
        for i in range(a.size):
            s = sigmoid_f32(b[i])
            ga[i] = g * s
            gb[i] = g * a[i] * s * (F32(1.0) - s)


def _glu_rows(x, dim: int):
    """``x`` as (outer, 2, half·inner) rows, and the rows a span of parallel_for takes."""
    outer, inner = math.prod(x.shape[:dim]), math.prod(x.shape[dim + 1 :])
    half = x.shape[dim] // 2
    rows = np.ascontiguousarray(x).reshape(outer, 2, half * inner)
    return rows, max(1, jit.PARALLEL_MIN_ELEMENTS // max(1, half * inner))


def glu(x, dim: int):
    """GLU of the float32 array ``x`` along ``dim`` (even): a new array."""
    rows, span = _glu_rows(x, dim)
    out = np.empty(x.shape[:dim] + (x.shape[dim] // 2,) + x.shape[dim + 1 :], x.dtype)
    jit.parallel_for(glu_float32, len(rows), rows, out.reshape(len(rows), -1), min_chunk=span)
    return out


def glu_backward(g, x, dim: int):
    """The gradient of :func:`glu` for the output gradient ``g``: a new array shaped as x. A
    ``g`` that is one value broadcast (``sum()``'s) is read as that value."""
    rows, span = _glu_rows(x, dim)
    out = np.empty(x.shape, x.dtype)
    grads = out.reshape(len(rows), 2, -1)
    constant = constant_value(g)
    if constant is not None:
        kernel, arrays = glu_backward_float32_constant_grad, (rows, grads, x.dtype.type(constant))
    else:
        g_rows = np.ascontiguousarray(g, dtype=x.dtype).reshape(len(rows), -1)
        kernel, arrays = glu_backward_float32, (g_rows, rows, grads)
    jit.parallel_for(kernel, len(rows), *arrays, min_chunk=span)
    return out


# --- x ** 2 and x ** 3 (ember.pow): torch's products, and their gradients e·x^(e-1) -------
@jit.njit(error_model="numpy")
def cube(start, stop, x, out):  # (x·x)·x, as the NumPy path's ad * ad * ad
    xs, os = x[start:stop], out[start:stop]
    for i in range(xs.size):
        v = xs[i]
        os[i] = v * v * v


@jit.njit(error_model="numpy")
def square_backward(start, stop, g, x, out, two):  # g · (x · 2), as g * (x ** 1 * 2)
    gs, xs, os = g[start:stop], x[start:stop], out[start:stop]
    for i in range(xs.size):
        os[i] = gs[i] * (xs[i] * two)


@jit.njit(error_model="numpy")
def square_backward_constant_grad(start, stop, x, out, g, two):
    xs, os = x[start:stop], out[start:stop]
    for i in range(xs.size):
        os[i] = g * (xs[i] * two)


@jit.njit(error_model="numpy")
def cube_backward(start, stop, g, x, out, three):  # g · (x·x · 3), as g * (x ** 2 * 3)
    gs, xs, os = g[start:stop], x[start:stop], out[start:stop]
    for i in range(xs.size):
        v = xs[i]
        os[i] = gs[i] * (v * v * three)


@jit.njit(error_model="numpy")
def cube_backward_constant_grad(start, stop, x, out, g, three):
    xs, os = x[start:stop], out[start:stop]
    for i in range(xs.size):
        v = xs[i]
        os[i] = g * (v * v * three)
