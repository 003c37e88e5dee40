"""Cache-blocked NumPy kernels for the CPU: softmax/log-softmax along any dim, GELU (exact
and tanh), SiLU, each with its backward, run block by block over ember's intra-op threads.

The op modules (``ember.ops``) are written against the array module of their tensors'
device; what is NumPy-only lives here and is called when a tensor's data is a NumPy array.
"""

from __future__ import annotations

import math

import numpy as np

from .. import _backend

SQRT_HALF = math.sqrt(0.5)
SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
GELU_TANH_A = 0.044715


def is_plain_numpy(data) -> bool:
    """A NumPy array proper (not CuPy, not the subclass ember.compile records)."""
    return type(data) is np.ndarray


def errors_ignored():
    """NumPy's floating-point warnings silenced (IEEE results, as PyTorch's kernels): the
    caller's ``errstate`` does not reach worker threads."""
    return np.errstate(all="ignore")


# --------------------------------------------------------------------------------------------
# Cache-blocked NumPy kernels. A large activation done as whole-array NumPy passes streams
# every temporary through main memory; done block by block, a block's temporaries stay in the
# caches (20-30 % less CPU time for softmax/GELU/SiLU on 16M floats, measured at 2**15 to
# 2**17 elements per block). Blocks are shared among ember's intra-op threads (NumPy releases
# the GIL inside its loops), as PyTorch splits its kernels.
# --------------------------------------------------------------------------------------------
_BLOCK = 1 << 17  # elements per block
_SMALL = 1 << 12  # at most this many elements: one block on this thread, called directly


def _blockwise(kernel, out, inputs: tuple, scratch: int = 0, scratch_dtype=None, row: int = 1):
    """``kernel(out_block, *input_blocks, *scratch_blocks)`` over the flattened arrays.

    ``out`` is a fresh C-contiguous array; ``inputs`` have its shape; ``scratch`` is how many
    block-sized work buffers each call gets; blocks hold whole rows of ``row`` elements.
    """
    flat_out = out.reshape(-1)
    flat_in = [a.reshape(-1) for a in inputs]
    n = flat_out.size
    block = max(row, _BLOCK // row * row)

    def run(lo: int, hi: int) -> None:
        work = [np.empty(min(block, hi - lo), scratch_dtype or out.dtype) for _ in range(scratch)]
        with np.errstate(all="ignore"):  # IEEE results, silently, as PyTorch's kernels
            for s in range(lo, hi, block):
                e = min(s + block, hi)
                kernel(flat_out[s:e], *[a[s:e] for a in flat_in], *[w[: e - s] for w in work])

    threads = _backend.get_num_threads() if n >= _backend.PARALLEL_MIN_ELEMENTS else 1
    if threads < 2:
        run(0, n)
        return out
    step = -(-n // threads // block) * block
    spans = [(lo, min(lo + step, n)) for lo in range(0, n, step)]
    _backend.run_spans(run, spans, blas=False)
    return out


def compute_dtype(dtype):
    """float16 / bfloat16 activations are computed in float32 (PyTorch's CPU opmath)."""
    return np.dtype(np.float32) if dtype.itemsize < 4 else dtype


def _elementwise(kernel, data, *others, scratch: int = 0, scratch_dtype=None):
    """A fresh array of ``data``'s dtype from ``kernel`` run block by block over ``data`` and
    ``others`` (same shape), in float32 for half precision."""
    dtype = data.dtype
    work = compute_dtype(dtype)
    arrays = [a.astype(work, copy=False) for a in (data, *others)]
    out = np.empty(data.shape, work)
    _blockwise(kernel, out, tuple(arrays), scratch, scratch_dtype)
    return out.astype(dtype, copy=False)


# erf(x) ≈ x P(x²) / Q(x²) on |x| ≤ 4 (beyond, erf rounds to ±1 in float32), evaluated in
# float64: within 0.54 ulp of the float32-rounded erf everywhere (a weighted least-squares fit
# made for ember against scipy.special.erf). float64 inputs use scipy.special itself.
_ERF_P = (
    1.1283791693565142,
    1.8518943958241316e-01,
    5.4326002377192956e-02,
    3.8505090858772170e-03,
    3.8007657828474732e-04,
    4.6973390745103018e-06,
    -1.3265232315971825e-08,
)
_ERF_Q = (
    1.0,
    4.9745328258793203e-01,
    1.1396239306499061e-01,
    1.5465454399677701e-02,
    1.3083893607198224e-03,
    6.3230636570294404e-05,
)


def _erf_block(x, scale: float, c, t, p, q):
    """erf(x · scale) of a float32 block into ``p`` (float64 buffers c, t, p, q)."""
    np.multiply(x, scale, out=c)
    np.clip(c, -4.0, 4.0, out=c)
    np.multiply(c, c, out=t)
    np.multiply(t, _ERF_P[6], out=p)
    p += _ERF_P[5]
    for k in _ERF_P[4::-1]:
        p *= t
        p += k
    np.multiply(t, _ERF_Q[5], out=q)
    q += _ERF_Q[4]
    for k in _ERF_Q[3::-1]:
        q *= t
        q += k
    p *= c
    p /= q
    return p


def _lanes(a, classes: int, inner: int):
    """A block of whole slices as (slices, classes) or (slices, classes, inner): the softmax
    runs along axis 1 either way."""
    return a.reshape(-1, classes) if inner == 1 else a.reshape(-1, classes, inner)


def _dot_along_classes(a, b, inner: int):
    """Σ a·b over axis 1, kept as a size-1 axis, without a full-size product."""
    if inner == 1:
        return np.einsum("ij,ij->i", a, b)[:, None]
    return np.einsum("icj,icj->ij", a, b)[:, None, :]


def _softmax_block(classes: int, inner: int):
    def kernel(o, x):
        x3, o3 = _lanes(x, classes, inner), _lanes(o, classes, inner)
        # slices holding +inf, or only -inf, come out NaN (as PyTorch)
        np.subtract(x3, x3.max(axis=1, keepdims=True), out=o3)
        np.exp(o3, out=o3)
        o3 /= o3.sum(axis=1, keepdims=True)

    return kernel


def _log_softmax_block(classes: int, inner: int):
    def kernel(o, x, u):
        x3, o3, u3 = (_lanes(a, classes, inner) for a in (x, o, u))
        np.subtract(x3, x3.max(axis=1, keepdims=True), out=o3)
        np.exp(o3, out=u3)
        total = u3.sum(axis=1, keepdims=True)
        o3 -= np.log(total, out=total)

    return kernel


def _softmax_backward_block(classes: int, inner: int):
    def kernel(o, g, y):  # y (g - Σ g y)
        g3, y3, o3 = (_lanes(a, classes, inner) for a in (g, y, o))
        np.subtract(g3, _dot_along_classes(g3, y3, inner), out=o3)
        o3 *= y3

    return kernel


def _log_softmax_backward_block(classes: int, inner: int):
    def kernel(o, g, y):  # g - e^y Σ g
        g3, y3, o3 = (_lanes(a, classes, inner) for a in (g, y, o))
        np.exp(y3, out=o3)
        o3 *= g3.sum(axis=1, keepdims=True)
        np.subtract(g3, o3, out=o3)

    return kernel


def _small_rows_softmax(x, out, log: bool) -> bool:
    """The one-block passes on a small (rows, classes) array, written into ``out``, when every
    row's maximum is finite: then no pass can warn (nothing overflows, no inf - inf), so no
    ``errstate`` is needed, which costs more than the passes at this size. False (``out``
    unwritten) otherwise: the caller silences the warnings a row of infinities would raise."""
    top = x.max(axis=1, keepdims=True)
    if not np.isfinite(top).all():
        return False
    np.subtract(x, top, out=out)
    if log:
        total = np.exp(out).sum(axis=1, keepdims=True)
        out -= np.log(total, out=total)
    else:
        np.exp(out, out=out)
        out /= out.sum(axis=1, keepdims=True)
    return True


def _softmax_array(data, d: int, log: bool):
    """softmax / log_softmax of a real NumPy array along ``d``, in blocks of whole slices
    ``[i, :, j]`` of its (before d, d, after d) view."""
    work = np.ascontiguousarray(data, dtype=compute_dtype(data.dtype))
    out = np.empty(work.shape, work.dtype)
    if work.size == 0:
        return out
    classes, inner = work.shape[d], math.prod(work.shape[d + 1 :])
    row = classes * inner
    if work.size <= _SMALL and inner == 1:  # one block: the same passes, without the machinery
        if work.ndim == 2 and d == 1:
            done = _small_rows_softmax(work, out, log)
            if done:
                return out
        with np.errstate(all="ignore"):
            flat_in, flat_out = work.reshape(-1), out.reshape(-1)
            if log:
                _log_softmax_block(classes, 1)(flat_out, flat_in, np.empty_like(flat_in))
            else:
                _softmax_block(classes, 1)(flat_out, flat_in)
        return out
    if log:
        return _blockwise(_log_softmax_block(classes, inner), out, (work,), scratch=1, row=row)
    return _blockwise(_softmax_block(classes, inner), out, (work,), row=row)


def _softmax_grad_array(g, y, d: int, log: bool):
    """The backward of softmax (``log=False``) or log-softmax on NumPy arrays."""
    dtype = y.dtype
    work = compute_dtype(dtype)
    g = np.ascontiguousarray(g, dtype=work)
    y = np.ascontiguousarray(y, dtype=work)
    out = np.empty(y.shape, work)
    if y.size:
        classes, inner = y.shape[d], math.prod(y.shape[d + 1 :])
        make = _log_softmax_backward_block if log else _softmax_backward_block
        _blockwise(make(classes, inner), out, (g, y), row=classes * inner)
    return out.astype(dtype, copy=False)


def _gelu_tanh_block(o, x, u):  # x (1 + tanh(√(2/π)(x + a x³))) / 2
    np.multiply(x, x, out=u)
    u *= GELU_TANH_A * SQRT_2_OVER_PI
    u += SQRT_2_OVER_PI
    u *= x
    np.tanh(u, out=u)
    u += 1
    np.multiply(u, x, out=o)
    o *= 0.5


def _gelu_tanh_backward_block(o, g, x, u, v):
    # (1 + t) / 2 + x (1 - t²) k'(x) / 2 with t = tanh(k(x)), k' = √(2/π)(1 + 3a x²)
    np.multiply(x, x, out=u)
    np.multiply(u, 3 * GELU_TANH_A * SQRT_2_OVER_PI, out=o)
    o += SQRT_2_OVER_PI
    u *= GELU_TANH_A * SQRT_2_OVER_PI
    u += SQRT_2_OVER_PI
    u *= x
    np.tanh(u, out=u)
    o *= x
    o *= 0.5
    np.subtract(1, u, out=v)
    o *= v
    u += 1
    o *= u
    u *= 0.5
    o += u
    o *= g


def _gelu_block(o, x, c, t, p, q):  # x Φ(x), Φ = (1 + erf(x/√2)) / 2
    # erf rounded to float32 before 1 + erf, as float32 kernels do: the far negative tail is
    # then PyTorch's (-0 below about -5.7) rather than the float64 fit's residue
    np.copyto(o, _erf_block(x, SQRT_HALF, c, t, p, q), casting="same_kind")
    o += 1
    o *= 0.5
    o *= x


def _gelu_backward_block(o, g, x, c, t, p, q):  # Φ(x) + x φ(x)
    np.copyto(o, _erf_block(x, SQRT_HALF, c, t, p, q), casting="same_kind")
    o += 1
    o *= 0.5
    np.multiply(x, x, out=c)
    c *= -0.5
    np.exp(c, out=c)
    c *= INV_SQRT_2PI
    c *= x
    np.add(o, c, out=o, casting="same_kind")
    o *= g


def _silu_block(o, x):  # x / (1 + e^-x); e^-x overflowing to inf gives the right -0
    np.negative(x, out=o)
    np.exp(o, out=o)
    o += 1
    np.divide(x, o, out=o)


def _silu_backward_block(o, g, x, s):  # σ (1 + x (1 - σ))
    np.negative(x, out=s)
    np.exp(s, out=s)
    s += 1
    np.divide(1, s, out=s)
    np.subtract(1, s, out=o)
    o *= x
    o += 1
    o *= s
    o *= g


# --- the entry points the op modules call with NumPy data ------------------------------------
def softmax(data, d: int, log: bool):
    return _softmax_array(data, d, log)


def softmax_backward(g, y, d: int, log: bool):
    return _softmax_grad_array(g, y, d, log)


def silu(data):
    return _elementwise(_silu_block, data)


def silu_backward(g, x):
    return _elementwise(_silu_backward_block, g, x, scratch=1)


def gelu(data, approximate: str):
    if approximate == "tanh":
        return _elementwise(_gelu_tanh_block, data, scratch=1)
    if compute_dtype(data.dtype) == np.float32:
        return _elementwise(_gelu_block, data, scratch=4, scratch_dtype=np.float64)
    out = _backend.erf(np, data * SQRT_HALF)  # float64: scipy's erf, exact to the last bit
    out += 1
    out *= data
    out *= 0.5
    return out


def gelu_backward(g, x, approximate: str):
    if approximate == "tanh":
        return _elementwise(_gelu_tanh_backward_block, g, x, scratch=2)
    if compute_dtype(x.dtype) == np.float32:
        return _elementwise(_gelu_backward_block, g, x, scratch=4, scratch_dtype=np.float64)
    cdf = _backend.erf(np, x * SQRT_HALF)
    cdf += 1
    cdf *= 0.5
    pdf = np.exp(x * x * -0.5)
    pdf *= x * INV_SQRT_2PI
    pdf += cdf
    pdf *= g
    return pdf
