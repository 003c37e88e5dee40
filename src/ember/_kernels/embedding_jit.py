"""Compiled scatter-adds for embedding gradients and sparse-gradient optimizer steps.

``out[index[k]] += rows[k]`` is the whole of an embedding's weight gradient (and of an SGD step
with its sparse gradient). NumPy's ``add.at`` runs it one element at a time, and the CSR-matrix
product that replaces it (``ember.ops.embedding``) first builds and sorts a matrix; here it is
one pass over the lookups. For large sums the threads of
:func:`ember._kernels.jit.parallel_for` each take a span of the row's columns and walk every
lookup in order, so duplicate indices need no locks and every sum is added in lookup order
(the NumPy paths' order: equal results, bit for bit).

numba does not bounds-check: each entry point checks every index against the output's rows
first and, for an index outside them, hands back to the NumPy path, which raises its error.
"""

from __future__ import annotations

import numpy as np

from . import jit

_FLOATS = (np.float32, np.float64)
# A scatter-add is memory-bound: a second thread saves little, and on a busy machine a
# descheduled worker stalls the whole call (measured on 2 loaded cores: 8192 lookups of 128
# columns took 2.0 ms on one thread, 4.5 ms split over two). Split only from this many
# elements per thread.
PARALLEL_FROM = 1 << 20


# Each loop adds one row slice to another through 1-D views indexed from 0: LLVM then proves
# the index non-negative (no wraparound test per element) and vectorizes the loop (measured
# 10x faster than indexing ``out[r, j]`` directly).


@jit.njit
def _scatter_add(start, stop, index, rows, skip, out):
    # out[index[a, b], start:stop] += rows[a, b, start:stop], skipping the row ``skip``
    width = stop - start
    for a in range(rows.shape[0]):
        for b in range(rows.shape[1]):
            r = index[a, b]
            if r == skip:
                continue
            dst = out[r, start:stop]
            src = rows[a, b, start:stop]
            for j in range(width):
                dst[j] += src[j]


@jit.njit
def _scatter_add_repeated(start, stop, index, rows, skip, out):
    # out[index[a, b], start:stop] += rows[a, start:stop] for every b: the gradient of a mean
    # (or sum) over the lookups' dim, expanded with a zero stride, read once per a
    width = stop - start
    for a in range(index.shape[0]):
        src = rows[a, start:stop]
        for b in range(index.shape[1]):
            r = index[a, b]
            if r == skip:
                continue
            dst = out[r, start:stop]
            for j in range(width):
                dst[j] += src[j]


@jit.njit
def _scatter_add_scaled(start, stop, index, rows, factors, out):
    # out[index[a, b], start:stop] += factors[a, b] * rows[a, b, start:stop]
    width = stop - start
    for a in range(rows.shape[0]):
        for b in range(rows.shape[1]):
            f = factors[a, b]
            dst = out[index[a, b], start:stop]
            src = rows[a, b, start:stop]
            for j in range(width):
                dst[j] += f * src[j]


@jit.njit(fastmath={"contract"})
def _scatter_axpy(start, stop, index, alpha, rows, out):
    # out[index[k], start:stop] += alpha * rows[k, start:stop] (alpha in out's dtype), one
    # fused multiply-add per element ("contract"), as PyTorch's sparse add_ / index_add_ round
    width = stop - start
    for k in range(rows.shape[0]):
        dst = out[index[k], start:stop]
        src = rows[k, start:stop]
        for j in range(width):
            dst[j] += alpha * src[j]


@jit.njit
def _sparse_adam_rows(start, stop, index, values, m, v, w, keep1, keep2, eps, neg_step):
    # Adam on the rows index[k] (distinct): each operation in the parameter's dtype, in the
    # order of the NumPy path (sparse_adam._sparse_rows_step), so the results are equal
    width = stop - start
    for k in range(values.shape[0]):
        r = index[k]
        mr, vr, wr = m[r, start:stop], v[r, start:stop], w[r, start:stop]
        g = values[k, start:stop]
        for j in range(width):
            mr[j] += (g[j] - mr[j]) * keep1
            vr[j] += (g[j] * g[j] - vr[j]) * keep2
            wr[j] += neg_step * (mr[j] / (np.sqrt(vr[j]) + eps))


@jit.njit
def _adagrad_rows(start, stop, index, values, total, w, eps, neg_clr):
    # Adagrad on the rows index[k] (distinct), PyTorch's sparse rule: sum += g², then
    # w += -clr · g / (√sum + eps), each operation in the parameter's dtype
    width = stop - start
    for k in range(values.shape[0]):
        r = index[k]
        sr, wr = total[r, start:stop], w[r, start:stop]
        g = values[k, start:stop]
        for j in range(width):
            sr[j] += g[j] * g[j]
            wr[j] += neg_clr * (g[j] / (np.sqrt(sr[j]) + eps))


def _suits(rows, *others) -> bool:
    """Plain NumPy float32/float64 arrays (not ember.compile's recording subclass, not CuPy)."""
    if type(rows) is not np.ndarray or rows.dtype.type not in _FLOATS:
        return False
    return all(type(a) is np.ndarray for a in others)


def _in_range(index, num_rows: int) -> bool:
    return index.size == 0 or (int(index.min()) >= 0 and int(index.max()) < num_rows)


def _min_chunk(lookups: int) -> int:
    # columns per thread so that each thread adds at least PARALLEL_FROM numbers
    return max(1, -(-PARALLEL_FROM // max(1, lookups)))


def _as_3d(a, width: int):
    """``a`` (..., width) as (outer, lookups, width) without a copy where NumPy can view it
    (an expanded gradient, e.g. a mean's, has a zero stride that a 2-D view cannot hold)."""
    if a.ndim == 3:
        return a
    if a.ndim < 3:
        return a.reshape((1, -1, width))
    return a.reshape((-1, a.shape[-2], width))


def sum_rows_by_index(index, grad, num_rows: int, padding_idx=None, factors=None):
    """``out[r] = Σ factors[k] · grad_rows[k]`` over the lookups ``k`` with ``index[k] == r``:
    the dense ``(num_rows, width)`` gradient, the padding row left at zero (or with
    ``factors``, the lookups' shares, 0 at the padding lookups). ``grad`` is the output's
    gradient, shaped ``index.shape + (width,)`` or ``(index.size, width)``; None when the
    arrays do not suit the kernel or an index is out of range (the caller then runs its NumPy
    path)."""
    if not _suits(grad, index, *(() if factors is None else (factors,))):
        return None
    if (index.dtype != np.int64 and index.dtype != np.int32) or not _in_range(index, num_rows):
        return None
    width = grad.shape[-1]
    rows = _as_3d(grad, width)
    lookups = rows.shape[0] * rows.shape[1]
    if lookups != index.size:
        raise ValueError(f"embedding backward: {index.size} indices but {lookups} gradient rows")
    index = index.reshape(rows.shape[:2])
    out = np.zeros((num_rows, width), dtype=grad.dtype)
    if lookups == 0 or width == 0:
        return out
    if factors is None:
        skip = -1 if padding_idx is None else int(padding_idx)
        chunk = _min_chunk(lookups)
        repeated = rows[:, 0] if rows.shape[1] and rows.strides[1] == 0 else None
        if repeated is not None and repeated.flags.c_contiguous:
            # an expanded gradient: each row once, in C layout (vectorized adds), no copy
            jit.parallel_for(
                _scatter_add_repeated, width, index, repeated, skip, out, min_chunk=chunk
            )
        else:
            jit.parallel_for(_scatter_add, width, index, rows, skip, out, min_chunk=chunk)
    else:
        factors = factors.reshape(rows.shape[:2]).astype(grad.dtype, copy=False)
        jit.parallel_for(
            _scatter_add_scaled, width, index, rows, factors, out, min_chunk=_min_chunk(lookups)
        )
    return out


def index_axpy(index, alpha: float, rows, out) -> bool:
    """``out[index[k]] += alpha · rows[k]`` in place, lookup by lookup in order, each a fused
    multiply-add (duplicates added one after another, as PyTorch adds a sparse gradient to a
    dense tensor: its results to the bit); False when
    the arrays do not suit the kernel or an index is out of range. ``out`` and ``rows`` are
    (n, ...) arrays of one float dtype."""
    if not _suits(rows, index, out) or out.dtype != rows.dtype or not out.flags.writeable:
        return False
    if index.ndim != 1 or index.dtype.kind not in "iu" or rows.shape[0] != index.shape[0]:
        return False
    if out.shape[1:] != rows.shape[1:] or not out.flags.c_contiguous:
        return False
    if not _in_range(index, out.shape[0]):
        return False
    width = 1
    for s in out.shape[1:]:
        width *= s
    if index.size == 0 or width == 0:
        return True
    flat_out = out.reshape(out.shape[0], width)
    flat_rows = rows.reshape(rows.shape[0], width)
    alpha = out.dtype.type(alpha)  # PyTorch casts the scalar to the tensor's type
    chunk = _min_chunk(index.size)
    jit.parallel_for(_scatter_axpy, width, index, alpha, flat_rows, flat_out, min_chunk=chunk)
    return True


def _row_update_arrays(index, values, *states):
    """(flat gradient rows, flat states) when a row update may run in the kernels: ``states``
    (the parameter and its state, one shape, C-contiguous, writeable) and ``values``
    (distinct rows ``index``) all of the parameter's float dtype; else None."""
    w = states[-1]
    if not _suits(values, index, *states) or index.ndim != 1 or index.dtype.kind not in "iu":
        return None
    for a in (values,) + states:
        if a.dtype != w.dtype:
            return None
        if a is not values and (
            a.shape != w.shape or not a.flags.c_contiguous or not a.flags.writeable
        ):
            return None
    if w.ndim == 0 or values.shape != (index.shape[0],) + w.shape[1:]:
        return None
    if not _in_range(index, w.shape[0]):
        return None
    width = 1
    for s in w.shape[1:]:
        width *= s
    rows = values.reshape(values.shape[0], width)
    return rows, [a.reshape(a.shape[0], width) for a in states]


def sparse_adam_rows(index, values, m, v, w, beta1, beta2, eps, step_size) -> bool:
    """SparseAdam's update of the rows ``index`` (distinct: a coalesced gradient's) of the
    parameter ``w`` and its moments ``m``, ``v`` from the gradient rows ``values``, in place;
    False when the arrays do not suit the kernel or an index is out of range."""
    found = _row_update_arrays(index, values, m, v, w)
    if found is None:
        return False
    rows, flat = found
    if index.size and rows.shape[1]:
        # NumPy rounds each Python scalar to the arrays' dtype before using it: so do we
        scalars = [w.dtype.type(x) for x in (1 - beta1, 1 - beta2, eps, -step_size)]
        chunk = _min_chunk(index.size)
        width = rows.shape[1]
        jit.parallel_for(_sparse_adam_rows, width, index, rows, *flat, *scalars, min_chunk=chunk)
    return True


def adagrad_rows(index, values, total, w, eps, clr) -> bool:
    """Adagrad's update of the rows ``index`` (distinct) of the parameter ``w`` and its sum of
    squares ``total`` from the gradient rows ``values``, in place, as PyTorch updates with a
    sparse gradient; False when the arrays do not suit the kernel or an index is out of range."""
    found = _row_update_arrays(index, values, total, w)
    if found is None:
        return False
    rows, flat = found
    if index.size and rows.shape[1]:
        scalars = [w.dtype.type(eps), w.dtype.type(-clr)]
        chunk = _min_chunk(index.size)
        width = rows.shape[1]
        jit.parallel_for(_adagrad_rows, width, index, rows, *flat, *scalars, min_chunk=chunk)
    return True
