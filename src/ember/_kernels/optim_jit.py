"""Compiled Adam/AdamW update (numba; see :mod:`ember._kernels.jit`): the whole step of a
parameter in one pass over its elements, in place on the parameter and its moment buffers,
instead of ``ember.optim._fused.adam_step``'s dozen NumPy passes (each one a loop of its own
over every element, ~0.1 ms of calls per parameter for a small model).

Each element is rounded as the NumPy path rounds it, step by step in the arrays' dtype, with
the scalars cast to that dtype the way NumPy casts a Python float next to an array:

- ``m.lerp_(g, w)`` and the L2 decay ``g + wd·p`` as fused multiply-adds (PyTorch's vectorised
  lerp; the NumPy path's BLAS axpy). One exception: OpenBLAS's axpy on this machine's kernels
  rounds the last ``n mod 32`` (float32) / ``n mod 16`` (float64) elements without the fused
  multiply-add, so those few elements can differ from the NumPy path in the last bit of
  ``m`` (and what follows from it); every other element, and every array whose size is a
  multiple of those blocks, agrees to the bit.
- ``v = β2·v + (1-β2)·g²`` with the two products rounded separately (OpenBLAS's axpby).
- ``denom = sqrt(v̂) / sqrt(1-β2^t) + eps`` and ``p += (-lr / (1-β1^t))·m / denom``.

The caller passes C-contiguous 1-D views of one dtype (float32 or float64) and one size;
:func:`adam_update` checks that (numba does not check bounds).
"""

from __future__ import annotations

import numpy as np
from numba.extending import intrinsic

from . import jit


@intrinsic
def _fma(typingctx, a, b, c):
    # a·b + c rounded once (llvm.fma: the CPU's instruction, correctly rounded either way)
    def codegen(context, builder, signature, args):
        return builder.fma(*args)

    return a(a, b, c), codegen


@jit.njit(error_model="numpy")
def _adam_span(
    start,
    stop,
    p,
    g,
    m,
    v,
    v_max,
    amsgrad,
    maximize,
    decay_mode,
    decay,
    lerp_small,
    lerp_weight,
    beta2,
    one_minus_beta2,
    bias2_sqrt,
    eps,
    step_size,
):
    # decay_mode 0: none; 1: decoupled (p *= decay); 2: L2 (g += decay·p). Scalars arrive
    # typed as the arrays, so float32 maths stays float32.
    for i in range(start, stop):
        grad = -g[i] if maximize else g[i]
        param = p[i]
        if decay_mode == 1:
            param = param * decay
        elif decay_mode == 2:
            grad = _fma(decay, param, grad)
        avg = m[i]
        diff = grad - avg
        # lerp: m + w·(g - m) for |w| < 0.5, else g + (w - 1)·(g - m)
        avg = _fma(lerp_weight, diff, avg if lerp_small else grad)
        m[i] = avg
        square = beta2 * v[i] + one_minus_beta2 * (grad * grad)
        v[i] = square
        if amsgrad:
            previous = v_max[i]
            # np.maximum(v_max, v): a NaN on either side wins, v_max's first; ties keep v_max
            if previous != previous or not (square > previous or square != square):
                square = previous
            v_max[i] = square
        denom = np.sqrt(square) / bias2_sqrt + eps
        p[i] = param + (avg * step_size) / denom


def adam_update(
    p: np.ndarray,
    g: np.ndarray,
    m: np.ndarray,
    v: np.ndarray,
    v_max: np.ndarray | None,
    *,
    lr: float,
    beta1: float,
    beta2: float,
    eps: float,
    weight_decay: float,
    decoupled: bool,
    maximize: bool,
    step: float,
) -> None:
    """One Adam (``decoupled=False``) or AdamW (``decoupled=True``) step in place on ``p``,
    ``m`` (exp_avg), ``v`` (exp_avg_sq) and ``v_max`` (max_exp_avg_sq; None without amsgrad),
    the same update as ``ember.optim._fused.adam_step``. ``step`` is the step count after
    this step's increment. All arrays: C-contiguous, 1-D, one float dtype, one size."""
    dtype = p.dtype
    arrays = (p, g, m, v) if v_max is None else (p, g, m, v, v_max)
    for a in arrays:
        if (
            type(a) is not np.ndarray
            or a.ndim != 1
            or a.dtype != dtype
            or a.size != p.size
            or not a.flags.c_contiguous
        ):
            raise ValueError(
                "adam_update: arrays must be C-contiguous 1-D of one dtype and size, got "
                f"{[(type(b).__name__, b.dtype.str, b.shape) for b in arrays]}"
            )
    for a in (p, m, v) + (() if v_max is None else (v_max,)):
        if not a.flags.writeable:
            raise ValueError("adam_update: parameter and state arrays must be writeable")
    if dtype.char not in "fd":
        raise ValueError(f"adam_update: float32 or float64 arrays only, got {dtype}")
    if p.size == 0:
        return
    scalar = dtype.type
    # the same Python-float scalars as the NumPy path, then cast as NumPy casts them
    if weight_decay == 0:
        decay_mode, decay = 0, 0.0
    elif decoupled:
        decay_mode, decay = 1, 1 - lr * weight_decay
    else:
        decay_mode, decay = 2, weight_decay
    weight = 1 - beta1
    lerp_small = abs(weight) < 0.5
    lerp_weight = weight if lerp_small else weight - 1
    jit.parallel_for(
        _adam_span,
        p.size,
        p,
        g,
        m,
        v,
        v if v_max is None else v_max,
        v_max is not None,
        bool(maximize),
        decay_mode,
        scalar(decay),
        lerp_small,
        scalar(lerp_weight),
        scalar(beta2),
        scalar(1 - beta2),
        scalar((1 - beta2**step) ** 0.5),
        scalar(eps),
        scalar(-lr / (1 - beta1**step)),
    )
