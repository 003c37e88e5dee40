"""Compiled passes around the GEMM of ``relu(x Wᵀ + b)`` (numba; see :mod:`ember._kernels.jit`).

NumPy runs the bias add, the ReLU and, in backward, the ReLU's mask and the bias gradient's
column sum as four whole-array passes; here the forward is one pass over the GEMM's output
(bias add and ReLU while the row sits in the L1 cache) and the backward one pass over the
output gradient. Every value is computed as the NumPy path computes it, in the same order
(the column sums row after row, as NumPy's ``sum(0)`` of a C-contiguous array), so the
results are equal to the bit: threads split the rows in forward and the columns in backward.
"""

from __future__ import annotations

import numpy as np

from . import jit

_FLOATS = (np.float32, np.float64)


@jit.njit
def _bias_relu_rows(start, stop, out, bias):
    # out[r] <- max(out[r] + bias, 0), NaN kept (as np.maximum), -0 made +0
    width = out.shape[1]
    for r in range(start, stop):
        row = out[r]
        for j in range(width):
            v = row[j] + bias[j]
            row[j] = v if (v > 0 or v != v) else 0


@jit.njit
def _relu_backward_columns(start, stop, grad, out, one, zero, grad_in, grad_bias):
    # grad_in = 0 where out <= 0 else grad (a NaN output lets grad through, as torch's
    # threshold_backward) and grad_bias = Σ_rows grad_in, for the columns [start, stop);
    # ``zero`` in the arrays' dtype. Each row through 1-D views indexed from 0, so that LLVM
    # vectorizes the loop
    width = stop - start
    total = grad_bias[start:stop]
    total[:] = 0
    for r in range(grad.shape[0]):
        g = grad[r, start:stop]
        y = out[r, start:stop]
        z = grad_in[r, start:stop]
        for j in range(width):
            v = zero if y[j] <= 0 else g[j]
            z[j] = v
            total[j] += v


def _check(*arrays) -> None:
    first = arrays[0]
    for a in arrays:
        if a.dtype.type not in _FLOATS or a.dtype != first.dtype or not a.flags.c_contiguous:
            raise ValueError("linear_jit: expects C-contiguous float arrays of one dtype")


def bias_relu_(out, bias, parallel: bool = True) -> None:
    """``out = relu(out + bias)`` in place: ``out`` (rows, width), ``bias`` (width,);
    ``parallel`` False: on this thread only (a caller already running on ember's pool)."""
    _check(out, bias)
    if out.ndim != 2 or bias.shape != (out.shape[1],):
        raise ValueError(f"linear_jit: bias {bias.shape} for output {out.shape}")
    if out.size == 0:
        return
    if not parallel:
        _bias_relu_rows(0, out.shape[0], out, bias)
        return
    chunk = max(1, jit.PARALLEL_MIN_ELEMENTS // out.shape[1])
    jit.parallel_for(_bias_relu_rows, out.shape[0], out, bias, min_chunk=chunk)


def relu_backward(grad, out):
    """``(grad · (out > 0), its column sums)``: the gradients of a ReLU's input and of the bias
    added before it, from the output gradient ``grad`` and the output ``out`` (rows, width)."""
    _check(grad, out)
    if grad.ndim != 2 or grad.shape != out.shape:
        raise ValueError(f"linear_jit: gradient {grad.shape} for output {out.shape}")
    grad_in = np.empty_like(grad)
    grad_bias = np.zeros(grad.shape[1], grad.dtype)
    if grad.size:
        chunk = max(1, jit.PARALLEL_MIN_ELEMENTS // grad.shape[0])
        jit.parallel_for(
            _relu_backward_columns,
            grad.shape[1],
            grad,
            out,
            grad.dtype.type(1),
            grad.dtype.type(0),
            grad_in,
            grad_bias,
            min_chunk=chunk,
        )
    return grad_in, grad_bias
