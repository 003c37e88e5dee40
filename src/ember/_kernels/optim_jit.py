"""Compiled Adam/AdamW update (numba; see :mod:`ember._kernels.jit`): the whole step of a
parameter in one pass over its elements, in place on the parameter and its moment buffers,
instead of ``ember.optim._fused.adam_step``'s dozen NumPy passes (each one a loop of its own
over every element, ~0.1 ms of calls per parameter for a small model).

Each element is rounded as the NumPy path rounds it, step by step in the arrays' dtype, with
the scalars cast to that dtype the way NumPy casts a Python float next to an array:

- ``m.lerp_(g, w)`` and the L2 decay ``g + wd·p`` as the NumPy path's BLAS axpy rounds them:
  a fused multiply-add (as PyTorch's vectorised lerp) on the elements where the BLAS fuses,
  ``y + a·x`` on the rest. OpenBLAS's x86-64 kernels leave the last ``n mod 32`` (float32) /
  ``n mod 16`` (float64) elements unfused; :func:`_blas_fused_stop` measures this once per
  size on the BLAS NumPy loaded, so the results agree to the bit with the NumPy path (and
  with ``ember.compile``'s replays of it).
- ``v = β2·v + (1-β2)·g²`` as the NumPy path's BLAS axpby rounds it, which depends on the CPU
  kind OpenBLAS picked: its AVX2 (Haswell) kernel rounds both products separately, its
  AVX-512 (SkylakeX) kernel rounds ``β2·v`` and fuses the rest; :func:`_blas_axpby_rounding`
  measures which once per size.
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


# a thread's least share. Measured (2 cores): a 512x128 weight (2^16 elements, ~50 us) took
# 130 us over two threads, the hand-off dearer than the half it saves; 2^19 elements gain.
SPAN_MIN_ELEMENTS = jit.PARALLEL_MIN_ELEMENTS
# flags of a step (loop-invariant: LLVM turns the branches into selects and vectorises)
MAXIMIZE, DECOUPLED, L2, LERP_SMALL = 1, 2, 4, 8
# the coefficients' order in the array the kernels take (one argument: numba's dispatch
# types each argument, ~0.1 us apiece)
DECAY, LERP_WEIGHT, BETA2, ONE_MINUS_BETA2, BIAS2_SQRT, EPS, STEP_SIZE = range(7)
# how a BLAS axpby rounds y = a·x + b·y: both products rounded, or one of them fused into the add
UNFUSED, FUSED_AX, FUSED_BY = range(3)


@jit.njit(inline="always")
def _scalars(coefficients):
    # into registers before the loop: the arrays' stores could alias an array's loads, which
    # LLVM would then repeat for every element (and not vectorise)
    return (
        coefficients[DECAY],
        coefficients[LERP_WEIGHT],
        coefficients[BETA2],
        coefficients[ONE_MINUS_BETA2],
        coefficients[BIAS2_SQRT],
        coefficients[EPS],
        coefficients[STEP_SIZE],
    )


@jit.njit(inline="always", error_model="numpy")
def _moments(param, grad, avg, square, flags, c, fused, axpby_rounding):
    # (decayed parameter, exp_avg, exp_avg_sq) of one element; decay is 1 - lr·wd (AdamW's
    # p *= decay) or wd (Adam's g += wd·p)
    grad = -grad if flags & MAXIMIZE else grad
    if flags & L2:
        grad = _fma(c[DECAY], param, grad) if fused else grad + param * c[DECAY]
    if flags & DECOUPLED:
        param = param * c[DECAY]
    # lerp: m + w·(g - m) for |w| < 0.5, else g + (w - 1)·(g - m)
    base = avg if flags & LERP_SMALL else grad
    diff = grad - avg
    avg = _fma(c[LERP_WEIGHT], diff, base) if fused else base + diff * c[LERP_WEIGHT]
    if axpby_rounding == FUSED_AX:
        square = _fma(c[ONE_MINUS_BETA2], grad * grad, c[BETA2] * square)
    elif axpby_rounding == FUSED_BY:
        square = _fma(c[BETA2], square, c[ONE_MINUS_BETA2] * (grad * grad))
    else:
        square = c[BETA2] * square + c[ONE_MINUS_BETA2] * (grad * grad)
    return param, avg, square


@jit.njit(inline="always", error_model="numpy")
def _stepped(param, avg, second, c):
    # p + (-lr / (1 - β1^t))·m / (sqrt(v) / sqrt(1 - β2^t) + eps)
    return param + (avg * c[STEP_SIZE]) / (np.sqrt(second) / c[BIAS2_SQRT] + c[EPS])


@jit.njit(error_model="numpy")
def _adam_span(start, stop, p, g, m, v, coefficients, flags, fused_stop, axpby_rounding):
    # slices and range(size): an index LLVM knows is >= 0 (no wraparound), so it vectorises
    p, g, m, v = p[start:stop], g[start:stop], m[start:stop], v[start:stop]
    c = _scalars(coefficients)
    for i in range(p.size):
        param, avg, square = _moments(
            p[i], g[i], m[i], v[i], flags, c, i < fused_stop - start, axpby_rounding
        )
        m[i] = avg
        v[i] = square
        p[i] = _stepped(param, avg, square, c)


@jit.njit(error_model="numpy")
def _amsgrad_span(start, stop, p, g, m, v, v_max, coefficients, flags, fused_stop, axpby_rounding):
    p, g, m, v, v_max = (
        p[start:stop],
        g[start:stop],
        m[start:stop],
        v[start:stop],
        v_max[start:stop],
    )
    c = _scalars(coefficients)
    for i in range(p.size):
        param, avg, square = _moments(
            p[i], g[i], m[i], v[i], flags, c, i < fused_stop - start, axpby_rounding
        )
        m[i] = avg
        v[i] = square
        # np.maximum(v_max, v): a NaN on either side wins, v_max's first; ties keep v_max
        previous = v_max[i]
        if previous == previous and (square > previous or square != square):
            previous = square
        v_max[i] = previous
        p[i] = _stepped(param, avg, previous, c)


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
    arrays = (p, g, m, v) if v_max is None else (p, g, m, v, v_max)
    if not _alike_flat_arrays(arrays, g):
        raise ValueError(
            "adam_update: p, g, m, v (and v_max) must be C-contiguous 1-D float32 or float64 "
            "arrays of one dtype and size (all but g writeable), got "
            f"{[(type(a).__name__, a.dtype.str, a.shape, a.flags.c_contiguous) for a in arrays]}"
        )
    size = p.shape[0]
    if size == 0:
        return
    # the same Python-float scalars as the NumPy path, then cast as NumPy casts them
    flags = MAXIMIZE if maximize else 0
    decay = 0.0
    if weight_decay != 0:
        flags |= DECOUPLED if decoupled else L2
        decay = 1 - lr * weight_decay if decoupled else weight_decay
    weight = 1 - beta1
    if abs(weight) < 0.5:
        flags |= LERP_SMALL
    else:
        weight -= 1
    coefficients = np.array(
        [
            decay,
            weight,
            beta2,
            1 - beta2,
            (1 - beta2**step) ** 0.5,
            eps,
            -lr / (1 - beta1**step),
        ],
        p.dtype,
    )
    fused_stop = _blas_fused_stop(p.dtype, size)
    axpby_rounding = _blas_axpby_rounding(p.dtype, size)
    if size < 2 * SPAN_MIN_ELEMENTS:  # one thread's work: no hand-off to the pool
        if v_max is None:
            _adam_span(0, size, p, g, m, v, coefficients, flags, fused_stop, axpby_rounding)
        else:
            _amsgrad_span(
                0, size, p, g, m, v, v_max, coefficients, flags, fused_stop, axpby_rounding
            )
    elif v_max is None:
        jit.parallel_for(
            _adam_span,
            size,
            p,
            g,
            m,
            v,
            coefficients,
            flags,
            fused_stop,
            axpby_rounding,
            min_chunk=SPAN_MIN_ELEMENTS,
        )
    else:
        jit.parallel_for(
            _amsgrad_span,
            size,
            p,
            g,
            m,
            v,
            v_max,
            coefficients,
            flags,
            fused_stop,
            axpby_rounding,
            min_chunk=SPAN_MIN_ELEMENTS,
        )


def _alike_flat_arrays(arrays, read_only) -> bool:
    # numba does not check bounds: every array must be as long as the first (~1 us)
    shape, dtype = arrays[0].shape, arrays[0].dtype
    if len(shape) != 1 or dtype.char not in "fd":
        return False
    for a in arrays:
        if type(a) is not np.ndarray or a.shape != shape or a.dtype != dtype:
            return False
        a_flags = a.flags
        if not a_flags.c_contiguous or not (a_flags.writeable or a is read_only):
            return False
    return True


_fused_stops: dict = {}


def _blas_fused_stop(dtype: np.dtype, size: int) -> int:
    """How many leading elements NumPy's BLAS axpy (the NumPy path's lerp and L2 decay) rounds
    with a fused multiply-add on arrays of ``size``; it rounds the rest as ``y + a·x``.

    Measured once per (dtype, size, thread count) on the BLAS itself: with ``y = -(a·x)``
    rounded, an unfused element comes out exactly 0 and a fused one as a·x's rounding error.
    OpenBLAS's x86-64 kernels fuse a prefix (all but the last n mod 32 float32 / n mod 16
    float64 elements); a pattern other than a prefix keeps the fused multiply-add everywhere
    (then a few elements may differ from the NumPy path by a few ulp)."""
    from ember import _backend

    key = (dtype.char, size, _backend.get_num_threads())
    found = _fused_stops.get(key)
    if found is None:
        blas = _backend.numpy_blas()
        if blas is None:
            found = 0  # NumPy's ufuncs: y + a·x everywhere
        else:
            x = np.random.default_rng(0).uniform(1.0, 2.0, size).astype(dtype)
            alpha = dtype.type(0.1)
            y = -(x * alpha)
            blas.axpy(float(alpha), x, y)
            fused = y != 0
            found = int(np.count_nonzero(fused))
            if not fused[:found].all():
                found = size
        _fused_stops[key] = found
    return found


_axpby_roundings: dict = {}


@jit.njit(error_model="numpy")
def _axpby_candidates(a, x, b, y, out):
    # out[k]: y = a·x + b·y rounded as UNFUSED, FUSED_AX, FUSED_BY
    for i in range(x.size):
        out[UNFUSED, i] = a * x[i] + b * y[i]
        out[FUSED_AX, i] = _fma(a, x[i], b * y[i])
        out[FUSED_BY, i] = _fma(b, y[i], a * x[i])


def _blas_axpby_rounding(dtype: np.dtype, size: int) -> int:
    """How NumPy's BLAS axpby (the NumPy path's ``v.mul_(β2).addcmul_(g, g, value=1 - β2)``)
    rounds ``y = a·x + b·y`` on arrays of ``size``: UNFUSED, FUSED_AX or FUSED_BY.

    OpenBLAS's axpby is a C loop whose compiler contracts it into a fused multiply-add on some
    CPU kinds (its AVX-512 build) and not on others (its AVX2 build), so it is measured on the
    BLAS itself, once per (dtype, size, thread count): random data until one rounding alone
    matches every element (a few elements may by chance agree with several)."""
    from ember import _backend

    key = (dtype.char, size, _backend.get_num_threads())
    found = _axpby_roundings.get(key)
    if found is None:
        blas = _backend.numpy_blas()
        found = UNFUSED
        if blas is not None and blas.has_axpby and size > 0:
            rng = np.random.default_rng(0)
            a, b = dtype.type(0.001), dtype.type(0.999)  # Adam's default 1 - β2 and β2
            possible = [True, True, True]
            candidates = np.empty((3, size), dtype)
            for _ in range(16):
                x = rng.uniform(0.0, 4.0, size).astype(dtype)
                y = rng.uniform(0.0, 0.01, size).astype(dtype)
                _axpby_candidates(a, x, b, y, candidates)
                blas.axpby(float(a), x, float(b), y)
                for k in range(3):
                    possible[k] = possible[k] and bool(np.array_equal(candidates[k], y))
                if sum(possible) <= 1:
                    break
            found = possible.index(True) if any(possible) else FUSED_AX
        _axpby_roundings[key] = found
    return found
