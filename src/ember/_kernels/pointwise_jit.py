"""Compiled one-pass kernels of the piecewise activations (leaky ReLU, hardswish, hardsigmoid,
ELU/SELU/CELU) and of their backward formulas, for C-contiguous float32/float64 NumPy arrays.

Each is ``kernel(start, stop, *arrays, out, *constants)`` over flat indices
(``_backend.compiled_map`` and ``jit.parallel_for`` split it over ember's pool). They compute
the NumPy paths' formulas in the same order and the same dtype (constants are cast to it
first, as NumPy casts a Python float against a float32 array), so the results are equal to
the bit, but for float32 ELU: NumPy (and the float64 kernels) call C's ``expm1``/``exp`` per
element, the float32 kernels compute them in float32 arithmetic, within 1.4 ulps.
"""

from __future__ import annotations

import math

import numpy as np

from . import jit
from .activation_jit import exp_f32

F32 = np.float32


@jit.njit(error_model="numpy")
def leaky_relu(start, stop, x, out, slope):
    for i in range(start, stop):
        v = x[i]
        out[i] = v if v > 0 else v * slope


@jit.njit(error_model="numpy")
def leaky_relu_backward(start, stop, g, x, out, slope):
    for i in range(start, stop):
        out[i] = g[i] if x[i] > 0 else g[i] * slope


@jit.njit(error_model="numpy")
def hardswish(start, stop, x, out, three, six, zero):
    for i in range(start, stop):
        v = x[i]
        r = v + three
        r = six if r > six else r  # clip(x + 3, 0, 6), NaN kept
        r = zero if r < zero else r
        out[i] = v * r / six


@jit.njit(error_model="numpy")
def hardswish_backward(start, stop, g, x, out, three, half, zero, one):
    for i in range(start, stop):
        v = x[i]
        if v < -three:
            out[i] = g[i] * zero
        elif v <= three:
            out[i] = g[i] * (v / three + half)
        else:  # and NaN, as the nested where gives
            out[i] = g[i] * one


@jit.njit(error_model="numpy")
def hardsigmoid(start, stop, x, out, three, six, zero):
    for i in range(start, stop):
        r = x[i] + three
        r = six if r > six else r
        r = zero if r < zero else r
        out[i] = r / six


@jit.njit(error_model="numpy")
def hardsigmoid_backward(start, stop, g, x, out, three, six, zero, one):
    for i in range(start, stop):
        v = x[i]
        out[i] = g[i] * (one if -three < v < three else zero) / six


@jit.njit(error_model="numpy")
def elu(start, stop, x, out, alpha_scale, scale, input_scale, zero):
    """x·scale where x > 0, else expm1(min(x, 0)·input_scale)·alpha_scale (C's expm1)."""
    for i in range(start, stop):
        v = x[i]
        if v > 0:
            out[i] = v * scale
        else:
            m = v if v < 0 or v != v else zero  # NumPy's minimum(x, 0): +0 for -0
            out[i] = math.expm1(m * input_scale) * alpha_scale


@jit.njit(error_model="numpy")
def elu_backward(start, stop, g, x, out, scale, input_scale, coefficient, zero):
    """g·scale where x > 0, else g·exp(min(x, 0)·input_scale)·coefficient (C's exp)."""
    for i in range(start, stop):
        v = x[i]
        if v > 0:
            out[i] = g[i] * scale
        else:
            m = v if v < 0 or v != v else zero
            out[i] = g[i] * (math.exp(m * input_scale) * coefficient)


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


@jit.njit(error_model="numpy")
def elu_backward_float32(start, stop, g, x, out, scale, input_scale, coefficient, zero):
    gs, xs, os = g[start:stop], x[start:stop], out[start:stop]
    for i in range(xs.size):
        v = xs[i]
        m = v if v < zero or v != v else zero
        negative = gs[i] * (exp_f32(m * input_scale) * coefficient)
        os[i] = gs[i] * scale if v > zero else negative
