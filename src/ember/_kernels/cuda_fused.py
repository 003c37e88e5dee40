"""Fused CUDA kernels for the hot composite ops, each beside a NumPy reference of the same math.

Softmax / log-softmax over the last dim, cross-entropy with class indices, layer norm, GELU
(exact and tanh) and the Adam/AdamW update each run as one CuPy ``RawKernel`` (one block per
row for the row-wise ones, a grid-stride loop for the elementwise ones) instead of a chain of
CuPy calls that reads and writes the whole tensor at every step.

Each ``fused_<name>(xp, ...)`` returns ``None`` when ``xp`` is NumPy (or the dtype/shape is
one the kernel does not cover: anything but float32/float64), and the caller then runs its
composite path; on CuPy it returns the result. ``NUMPY_REFERENCES`` maps each kernel's name to
a NumPy function taking the kernel's arguments and writing its outputs the same way: the fake
CuPy of the tests runs those, and the GPU tests compare the kernels against them.
"""

from __future__ import annotations

import math
import weakref

import numpy as np

_BLOCK = 256  # threads per block: a power of two, the shared-memory reductions halve it
_MAX_GRID = 65535
_CTYPES = {np.dtype(np.float32): "float", np.dtype(np.float64): "double"}

# --- CUDA sources (``scalar_t`` becomes float or double, ``SUFFIX`` the type's name) ---------

_COMMON = r"""
__device__ __forceinline__ scalar_t neg_inf() {
    return (scalar_t)(-__longlong_as_double(0x7ff0000000000000ULL));
}
// NaN wins a max, as torch's softmax propagates it
__device__ __forceinline__ scalar_t max_nan(scalar_t a, scalar_t b) {
    return (a > b || a != a) ? a : b;
}
__device__ scalar_t block_max(scalar_t v, scalar_t* shared) {
    shared[threadIdx.x] = v;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s)
            shared[threadIdx.x] = max_nan(shared[threadIdx.x], shared[threadIdx.x + s]);
        __syncthreads();
    }
    scalar_t r = shared[0];
    __syncthreads();
    return r;
}
__device__ scalar_t block_sum(scalar_t v, scalar_t* shared) {
    shared[threadIdx.x] = v;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) shared[threadIdx.x] += shared[threadIdx.x + s];
        __syncthreads();
    }
    scalar_t r = shared[0];
    __syncthreads();
    return r;
}
"""

_SOFTMAX_FORWARD = r"""
extern "C" __global__ void ember_softmax_forward_SUFFIX(
        const scalar_t* x, scalar_t* y, long long rows, long long cols, int log_softmax) {
    __shared__ scalar_t shared[256];
    for (long long row = blockIdx.x; row < rows; row += gridDim.x) {
        const scalar_t* xr = x + row * cols;
        scalar_t* yr = y + row * cols;
        scalar_t m = neg_inf();
        for (long long c = threadIdx.x; c < cols; c += blockDim.x) m = max_nan(m, xr[c]);
        m = block_max(m, shared);
        scalar_t s = 0;
        for (long long c = threadIdx.x; c < cols; c += blockDim.x) s += exp(xr[c] - m);
        s = block_sum(s, shared);
        if (log_softmax) {
            scalar_t shift = m + log(s);
            for (long long c = threadIdx.x; c < cols; c += blockDim.x) yr[c] = xr[c] - shift;
        } else {
            for (long long c = threadIdx.x; c < cols; c += blockDim.x) yr[c] = exp(xr[c] - m) / s;
        }
    }
}
"""

# softmax: gx = y·(gy − Σ gy·y); log_softmax: gx = gy − exp(y)·Σ gy
_SOFTMAX_BACKWARD = r"""
extern "C" __global__ void ember_softmax_backward_SUFFIX(
        const scalar_t* y, const scalar_t* gy, scalar_t* gx, long long rows, long long cols,
        int log_softmax) {
    __shared__ scalar_t shared[256];
    for (long long row = blockIdx.x; row < rows; row += gridDim.x) {
        const scalar_t* yr = y + row * cols;
        const scalar_t* gr = gy + row * cols;
        scalar_t* out = gx + row * cols;
        scalar_t s = 0;
        for (long long c = threadIdx.x; c < cols; c += blockDim.x)
            s += log_softmax ? gr[c] : gr[c] * yr[c];
        s = block_sum(s, shared);
        for (long long c = threadIdx.x; c < cols; c += blockDim.x)
            out[c] = log_softmax ? gr[c] - exp(yr[c]) * s : yr[c] * (gr[c] - s);
    }
}
"""

# loss[n] = w[t]·(logsumexp(x[n]) − x[n, t]), t = target[n]; ignored rows weigh 0
_CROSS_ENTROPY_FORWARD = r"""
extern "C" __global__ void ember_cross_entropy_forward_SUFFIX(
        const scalar_t* x, const long long* target, const scalar_t* weight, scalar_t* loss,
        scalar_t* row_weight, scalar_t* lse, int* bad_target, long long rows, long long cols,
        long long ignore_index, int has_weight) {
    __shared__ scalar_t shared[256];
    for (long long row = blockIdx.x; row < rows; row += gridDim.x) {
        const scalar_t* xr = x + row * cols;
        scalar_t m = neg_inf();
        for (long long c = threadIdx.x; c < cols; c += blockDim.x) m = max_nan(m, xr[c]);
        m = block_max(m, shared);
        scalar_t s = 0;
        for (long long c = threadIdx.x; c < cols; c += blockDim.x) s += exp(xr[c] - m);
        s = block_sum(s, shared);
        if (threadIdx.x == 0) {
            scalar_t row_lse = m + log(s);
            long long t = target[row];
            lse[row] = row_lse;
            if (t == ignore_index) {
                loss[row] = 0;
                row_weight[row] = 0;
            } else if (t < 0 || t >= cols) {
                *bad_target = 1;
                loss[row] = 0;
                row_weight[row] = 0;
            } else {
                scalar_t w = has_weight ? weight[t] : (scalar_t)1;
                loss[row] = w * (row_lse - xr[t]);
                row_weight[row] = w;
            }
        }
    }
}
"""

# gx[n, c] = coef[n]·(softmax(x)[n, c] − [c = t]); coef carries gy, the weight and the mean
_CROSS_ENTROPY_BACKWARD = r"""
extern "C" __global__ void ember_cross_entropy_backward_SUFFIX(
        const scalar_t* x, const long long* target, const scalar_t* lse, const scalar_t* coef,
        scalar_t* gx, long long rows, long long cols) {
    long long n = rows * cols;
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
         i += (long long)blockDim.x * gridDim.x) {
        long long row = i / cols, c = i % cols;
        scalar_t k = coef[row];
        scalar_t hit = c == target[row] ? (scalar_t)1 : (scalar_t)0;
        gx[i] = k == 0 ? (scalar_t)0 : k * (exp(x[i] - lse[row]) - hit);
    }
}
"""

_LAYER_NORM_FORWARD = r"""
extern "C" __global__ void ember_layer_norm_forward_SUFFIX(
        const scalar_t* x, const scalar_t* weight, const scalar_t* bias, scalar_t* y,
        scalar_t* mean, scalar_t* rstd, long long rows, long long cols, scalar_t eps,
        int has_weight, int has_bias) {
    __shared__ scalar_t shared[256];
    for (long long row = blockIdx.x; row < rows; row += gridDim.x) {
        const scalar_t* xr = x + row * cols;
        scalar_t* yr = y + row * cols;
        scalar_t s = 0;
        for (long long c = threadIdx.x; c < cols; c += blockDim.x) s += xr[c];
        scalar_t mu = block_sum(s, shared) / cols;
        scalar_t q = 0;  // two passes: the variance of deviations, not E[x²] − E[x]²
        for (long long c = threadIdx.x; c < cols; c += blockDim.x) {
            scalar_t d = xr[c] - mu;
            q += d * d;
        }
        scalar_t r = rsqrt(block_sum(q, shared) / cols + eps);
        for (long long c = threadIdx.x; c < cols; c += blockDim.x) {
            scalar_t v = (xr[c] - mu) * r;
            if (has_weight) v *= weight[c];
            if (has_bias) v += bias[c];
            yr[c] = v;
        }
        if (threadIdx.x == 0) { mean[row] = mu; rstd[row] = r; }
    }
}
"""

# x̂ = (x − μ)·r, g = gy·w: gx = r·(g − mean(g) − x̂·mean(g·x̂))
_LAYER_NORM_BACKWARD = r"""
extern "C" __global__ void ember_layer_norm_backward_SUFFIX(
        const scalar_t* x, const scalar_t* gy, const scalar_t* weight, const scalar_t* mean,
        const scalar_t* rstd, scalar_t* gx, long long rows, long long cols, int has_weight) {
    __shared__ scalar_t shared[256];
    for (long long row = blockIdx.x; row < rows; row += gridDim.x) {
        const scalar_t* xr = x + row * cols;
        const scalar_t* gr = gy + row * cols;
        scalar_t* out = gx + row * cols;
        scalar_t mu = mean[row], r = rstd[row];
        scalar_t a = 0, b = 0;
        for (long long c = threadIdx.x; c < cols; c += blockDim.x) {
            scalar_t g = has_weight ? gr[c] * weight[c] : gr[c];
            a += g;
            b += g * (xr[c] - mu) * r;
        }
        a = block_sum(a, shared) / cols;
        b = block_sum(b, shared) / cols;
        for (long long c = threadIdx.x; c < cols; c += blockDim.x) {
            scalar_t g = has_weight ? gr[c] * weight[c] : gr[c];
            out[c] = r * (g - a - (xr[c] - mu) * r * b);
        }
    }
}
"""

# exact: ½x(1 + erf(x/√2)); tanh: ½x(1 + tanh(√(2/π)(x + 0.044715x³)))
_GELU = r"""
extern "C" __global__ void ember_gelu_SUFFIX(
        const scalar_t* x, const scalar_t* gy, scalar_t* out, long long n, int approximate_tanh,
        int backward) {
    const scalar_t k_sqrt_half = (scalar_t)0.70710678118654752440;
    const scalar_t k_inv_sqrt_2pi = (scalar_t)0.39894228040143267794;
    const scalar_t k_sqrt_2_over_pi = (scalar_t)0.79788456080286535588;
    const scalar_t k_cubic = (scalar_t)0.044715;
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
         i += (long long)blockDim.x * gridDim.x) {
        scalar_t v = x[i];
        if (approximate_tanh) {
            scalar_t t = tanh(k_sqrt_2_over_pi * (v + k_cubic * v * v * v));
            if (backward) {
                scalar_t du = k_sqrt_2_over_pi * (1 + 3 * k_cubic * v * v);
                out[i] = gy[i] * ((scalar_t)0.5 * (1 + t) + (scalar_t)0.5 * v * (1 - t * t) * du);
            } else {
                out[i] = (scalar_t)0.5 * v * (1 + t);
            }
        } else {
            scalar_t cdf = (scalar_t)0.5 * (1 + erf(v * k_sqrt_half));
            scalar_t pdf = k_inv_sqrt_2pi * exp((scalar_t)-0.5 * v * v);
            out[i] = backward ? gy[i] * (cdf + v * pdf) : v * cdf;
        }
    }
}
"""

# torch's Adam/AdamW step, in place: decay, m ← m + (1−β1)(g − m), v ← β2·v + (1−β2)·g²,
# (amsgrad: v̂ ← max(v̂, v)), p ← p − step_size · m / (√v / √bc2 + eps)
_ADAM = r"""
extern "C" __global__ void ember_adam_step_SUFFIX(
        scalar_t* p, const scalar_t* g, scalar_t* m, scalar_t* v, scalar_t* vmax, long long n,
        scalar_t one_minus_beta1, scalar_t beta2, scalar_t one_minus_beta2, scalar_t step_size,
        scalar_t bias_correction2_sqrt, scalar_t eps, scalar_t weight_decay, scalar_t decay_factor,
        int decoupled, int amsgrad, int maximize) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
         i += (long long)blockDim.x * gridDim.x) {
        scalar_t grad = maximize ? -g[i] : g[i];
        scalar_t param = p[i];
        if (weight_decay != 0) {
            if (decoupled) param *= decay_factor;
            else grad += weight_decay * param;
        }
        scalar_t mi = m[i] + one_minus_beta1 * (grad - m[i]);
        scalar_t vi = v[i] * beta2 + one_minus_beta2 * grad * grad;
        m[i] = mi;
        v[i] = vi;
        if (amsgrad) {
            vi = vmax[i] > vi || vmax[i] != vmax[i] ? vmax[i] : vi;
            vmax[i] = vi;
        }
        p[i] = param - step_size * (mi / (sqrt(vi) / bias_correction2_sqrt + eps));
    }
}
"""

_SOURCES = {
    "ember_softmax_forward": _SOFTMAX_FORWARD,
    "ember_softmax_backward": _SOFTMAX_BACKWARD,
    "ember_cross_entropy_forward": _CROSS_ENTROPY_FORWARD,
    "ember_cross_entropy_backward": _CROSS_ENTROPY_BACKWARD,
    "ember_layer_norm_forward": _LAYER_NORM_FORWARD,
    "ember_layer_norm_backward": _LAYER_NORM_BACKWARD,
    "ember_gelu": _GELU,
    "ember_adam_step": _ADAM,
}


def kernel_source(name: str, ctype: str) -> str:
    """The CUDA C source of kernel ``name`` for element type ``ctype`` (float or double)."""
    body = _COMMON + _SOURCES[name]
    return "typedef " + ctype + " scalar_t;\n" + body.replace("SUFFIX", ctype)


def all_kernel_sources() -> dict:
    """{kernel function name: CUDA source} for every kernel and element type."""
    return {
        f"{name}_{ctype}": kernel_source(name, ctype)
        for name in _SOURCES
        for ctype in _CTYPES.values()
    }


# --- NumPy references: the kernels' arguments, outputs written in place -----------------------


def _row_max(x2):
    """Each row's max: the kernels' shift (an infinite max makes the row nan, as torch)."""
    return x2.max(axis=1, keepdims=True)


def _ref_softmax_forward(x, y, rows, cols, log_softmax):
    x2 = x.reshape(int(rows), int(cols))
    shifted = x2 - _row_max(x2)
    total = np.exp(shifted).sum(axis=1, keepdims=True)
    out = shifted - np.log(total) if log_softmax else np.exp(shifted) / total
    y.reshape(x2.shape)[...] = out


def _ref_softmax_backward(y, gy, gx, rows, cols, log_softmax):
    y2, g2 = y.reshape(int(rows), int(cols)), gy.reshape(int(rows), int(cols))
    if log_softmax:
        out = g2 - np.exp(y2) * g2.sum(axis=1, keepdims=True)
    else:
        out = y2 * (g2 - (g2 * y2).sum(axis=1, keepdims=True))
    gx.reshape(y2.shape)[...] = out


def _ref_cross_entropy_forward(
    x, target, weight, loss, row_weight, lse, bad_target, rows, cols, ignore_index, has_weight
):
    x2 = x.reshape(int(rows), int(cols))
    m = _row_max(x2)
    row_lse = (m + np.log(np.exp(x2 - m).sum(axis=1, keepdims=True)))[:, 0]
    lse[...] = row_lse
    ignored = target == ignore_index
    bad = ~ignored & ((target < 0) | (target >= cols))
    if bad.any():
        bad_target[0] = 1
    valid = ~ignored & ~bad
    safe = np.where(valid, target, 0)
    w = weight[safe] if has_weight else np.ones_like(row_lse)
    w = np.where(valid, w, 0)
    row_weight[...] = w
    loss[...] = np.where(valid, w * (row_lse - x2[np.arange(x2.shape[0]), safe]), 0)


def _ref_cross_entropy_backward(x, target, lse, coef, gx, rows, cols):
    x2 = x.reshape(int(rows), int(cols))
    onehot = np.arange(int(cols))[None, :] == target[:, None]
    out = coef[:, None] * (np.exp(x2 - lse[:, None]) - onehot)
    gx.reshape(x2.shape)[...] = np.where(coef[:, None] == 0, 0, out)


def _ref_layer_norm_forward(x, weight, bias, y, mean, rstd, rows, cols, eps, has_weight, has_bias):
    x2 = x.reshape(int(rows), int(cols))
    mu = x2.mean(axis=1, keepdims=True)
    r = 1 / np.sqrt(((x2 - mu) ** 2).mean(axis=1, keepdims=True) + eps)
    out = (x2 - mu) * r
    if has_weight:
        out = out * weight
    if has_bias:
        out = out + bias
    y.reshape(x2.shape)[...] = out
    mean[...], rstd[...] = mu[:, 0], r[:, 0]


def _ref_layer_norm_backward(x, gy, weight, mean, rstd, gx, rows, cols, has_weight):
    x2, g2 = x.reshape(int(rows), int(cols)), gy.reshape(int(rows), int(cols))
    xhat = (x2 - mean[:, None]) * rstd[:, None]
    g = g2 * weight if has_weight else g2
    a = g.mean(axis=1, keepdims=True)
    b = (g * xhat).mean(axis=1, keepdims=True)
    gx.reshape(x2.shape)[...] = rstd[:, None] * (g - a - xhat * b)


def _ref_gelu(x, gy, out, n, approximate_tanh, backward):
    import scipy.special

    v = x.reshape(-1)
    if approximate_tanh:
        k = math.sqrt(2 / math.pi)
        t = np.tanh(k * (v + 0.044715 * v**3))
        if backward:
            du = k * (1 + 3 * 0.044715 * v * v)
            res = gy.reshape(-1) * (0.5 * (1 + t) + 0.5 * v * (1 - t * t) * du)
        else:
            res = 0.5 * v * (1 + t)
    else:
        cdf = 0.5 * (1 + scipy.special.erf(v / math.sqrt(2)))
        if backward:
            res = gy.reshape(-1) * (cdf + v * np.exp(-0.5 * v * v) / math.sqrt(2 * math.pi))
        else:
            res = v * cdf
    out.reshape(-1)[...] = res


def _ref_adam_step(
    p, g, m, v, vmax, n, one_minus_beta1, beta2, one_minus_beta2, step_size,
    bias_correction2_sqrt, eps, weight_decay, decay_factor, decoupled, amsgrad, maximize,
):  # fmt: skip
    grad = -g if maximize else g
    if weight_decay != 0:
        if decoupled:
            p *= decay_factor
        else:
            grad = grad + weight_decay * p
    m += one_minus_beta1 * (grad - m)
    v *= beta2
    v += one_minus_beta2 * grad * grad
    second = v
    if amsgrad:
        np.maximum(vmax, v, out=vmax)
        second = vmax
    p -= step_size * (m / (np.sqrt(second) / bias_correction2_sqrt + eps))


_REFERENCES = {
    "ember_softmax_forward": _ref_softmax_forward,
    "ember_softmax_backward": _ref_softmax_backward,
    "ember_cross_entropy_forward": _ref_cross_entropy_forward,
    "ember_cross_entropy_backward": _ref_cross_entropy_backward,
    "ember_layer_norm_forward": _ref_layer_norm_forward,
    "ember_layer_norm_backward": _ref_layer_norm_backward,
    "ember_gelu": _ref_gelu,
    "ember_adam_step": _ref_adam_step,
}
NUMPY_REFERENCES = {
    f"{name}_{ctype}": ref for name, ref in _REFERENCES.items() for ctype in _CTYPES.values()
}


# --- launching ------------------------------------------------------------------------------

_compiled: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # module -> {key: kernel}


def _kernel(xp, name: str, dtype):
    """The kernel ``name`` for ``dtype``, built by ``xp`` (CuPy caches the binary on disk)."""
    kernels = _compiled.setdefault(xp, {})
    key = (name, np.dtype(dtype))
    kernel = kernels.get(key)
    if kernel is None:
        ctype = _CTYPES[key[1]]
        kernel = xp.RawKernel(kernel_source(name, ctype), f"{name}_{ctype}")
        kernels[key] = kernel
    return kernel


def _usable(xp, *arrays) -> bool:
    """A CuPy module and float32/float64 arrays of one dtype (None entries are skipped)."""
    if xp is np or getattr(xp, "__name__", "numpy") == "numpy":
        return False
    dtypes = {a.dtype for a in arrays if a is not None}
    return len(dtypes) == 1 and next(iter(dtypes)) in _CTYPES


def _rows(x) -> tuple:
    cols = x.shape[-1] if x.ndim else 1
    return (x.size // cols if cols else 0), cols


def _launch_rows(xp, name, rows, dtype, args):
    if rows:
        grid = min(rows, _MAX_GRID)
        _kernel(xp, name, dtype)((grid,), (_BLOCK,), args)


def _launch_flat(xp, name, n, dtype, args):
    if n:
        grid = min(-(-n // _BLOCK), _MAX_GRID * 16)
        _kernel(xp, name, dtype)((grid,), (_BLOCK,), args)


def fused_softmax(xp, x, log: bool = False):
    """softmax (or log_softmax) of ``x`` over its last dim, or None when not fused here."""
    if not _usable(xp, x) or x.ndim == 0 or x.shape[-1] == 0:
        return None
    x = xp.ascontiguousarray(x)
    rows, cols = _rows(x)
    y = xp.empty_like(x)
    _launch_rows(
        xp,
        "ember_softmax_forward",
        rows,
        x.dtype,
        (x, y, np.int64(rows), np.int64(cols), np.int32(log)),
    )
    return y


def fused_softmax_backward(xp, y, grad, log: bool = False):
    """The input gradient of softmax (log_softmax) over the last dim from its output ``y``."""
    if not _usable(xp, y, grad) or y.ndim == 0 or y.shape[-1] == 0 or y.shape != grad.shape:
        return None
    y, grad = xp.ascontiguousarray(y), xp.ascontiguousarray(grad)
    rows, cols = _rows(y)
    gx = xp.empty_like(y)
    args = (y, grad, gx, np.int64(rows), np.int64(cols), np.int32(log))
    _launch_rows(xp, "ember_softmax_backward", rows, y.dtype, args)
    return gx


class CrossEntropySaved:
    """What the fused cross-entropy forward keeps for its backward."""

    __slots__ = ("lse", "row_weight", "total_weight", "reduction")

    def __init__(self, lse, row_weight, total_weight, reduction):
        self.lse, self.row_weight = lse, row_weight
        self.total_weight, self.reduction = total_weight, reduction


def fused_cross_entropy(xp, x, target, weight=None, ignore_index: int = -100, reduction="mean"):
    """Cross-entropy of logits ``x`` (N, C) against class indices ``target`` (N,).

    Returns (loss, saved) or None when not fused here (other shapes, probabilities as target,
    label smoothing: the caller's composite path). A target out of range raises IndexError.
    """
    if (
        not _usable(xp, x, weight)
        or x.ndim != 2
        or target.ndim != 1
        or target.shape[0] != x.shape[0]
        or target.dtype.kind not in "iu"
        or x.shape[1] == 0
        or reduction not in ("none", "mean", "sum")
    ):
        return None
    x = xp.ascontiguousarray(x)
    target = xp.ascontiguousarray(target, dtype=np.int64)
    rows, cols = x.shape
    loss = xp.empty(rows, dtype=x.dtype)
    row_weight = xp.empty(rows, dtype=x.dtype)
    lse = xp.empty(rows, dtype=x.dtype)
    bad = xp.zeros(1, dtype=np.int32)
    w = xp.ascontiguousarray(weight) if weight is not None else x  # x: an unread placeholder
    args = (
        x, target, w, loss, row_weight, lse, bad, np.int64(rows), np.int64(cols),
        np.int64(ignore_index), np.int32(weight is not None),
    )  # fmt: skip
    _launch_rows(xp, "ember_cross_entropy_forward", rows, x.dtype, args)
    if rows and int(bad[0]):
        valid = target != ignore_index
        out_of_range = valid & ((target < 0) | (target >= cols))
        first = int(target[int(out_of_range.argmax())])
        raise IndexError(f"Target {first} is out of bounds.")
    total = row_weight.sum()
    if reduction == "none":
        out = loss
    elif reduction == "sum":
        out = loss.sum()
    else:
        out = loss.sum() / total
    return out, CrossEntropySaved(lse, row_weight, total, reduction)


def fused_cross_entropy_backward(xp, x, target, saved: CrossEntropySaved, grad):
    """The logits' gradient of ``fused_cross_entropy`` for the loss gradient ``grad``."""
    x = xp.ascontiguousarray(x)
    target = xp.ascontiguousarray(target, dtype=np.int64)
    rows, cols = x.shape
    coef = saved.row_weight * grad  # grad: 0-d (mean, sum) or (N,) (none)
    if saved.reduction == "mean":
        coef = coef / saved.total_weight
    coef = xp.ascontiguousarray(coef, dtype=x.dtype)
    gx = xp.empty_like(x)
    args = (x, target, saved.lse, coef, gx, np.int64(rows), np.int64(cols))
    _launch_flat(xp, "ember_cross_entropy_backward", rows * cols, x.dtype, args)
    return gx


def fused_layer_norm(xp, x, normalized_numel: int, weight=None, bias=None, eps: float = 1e-5):
    """Layer norm over the last ``normalized_numel`` elements of each row of ``x``.

    Returns (y, mean, rstd) with mean and rstd of shape (rows,), or None when not fused here.
    """
    if not _usable(xp, x, weight, bias) or normalized_numel == 0 or x.size % normalized_numel:
        return None
    x = xp.ascontiguousarray(x)
    cols = int(normalized_numel)
    rows = x.size // cols
    y = xp.empty_like(x)
    mean = xp.empty(rows, dtype=x.dtype)
    rstd = xp.empty(rows, dtype=x.dtype)
    w = xp.ascontiguousarray(weight).reshape(-1) if weight is not None else x
    b = xp.ascontiguousarray(bias).reshape(-1) if bias is not None else x
    scalar = x.dtype.type
    args = (
        x, w, b, y, mean, rstd, np.int64(rows), np.int64(cols), scalar(eps),
        np.int32(weight is not None), np.int32(bias is not None),
    )  # fmt: skip
    _launch_rows(xp, "ember_layer_norm_forward", rows, x.dtype, args)
    return y, mean, rstd


def fused_layer_norm_backward(xp, x, grad, mean, rstd, weight=None, bias=None):
    """(grad_input, grad_weight, grad_bias) of ``fused_layer_norm`` (None where absent)."""
    x, grad = xp.ascontiguousarray(x), xp.ascontiguousarray(grad)
    rows = mean.size
    cols = x.size // rows if rows else 0
    gx = xp.empty_like(x)
    w = xp.ascontiguousarray(weight).reshape(-1) if weight is not None else x
    args = (
        x,
        grad,
        w,
        mean,
        rstd,
        gx,
        np.int64(rows),
        np.int64(cols),
        np.int32(weight is not None),
    )
    _launch_rows(xp, "ember_layer_norm_backward", rows, x.dtype, args)
    g2 = grad.reshape(rows, cols)
    gw = gb = None
    if weight is not None:
        xhat = (x.reshape(rows, cols) - mean[:, None]) * rstd[:, None]
        gw = (g2 * xhat).sum(axis=0).reshape(weight.shape)
    if bias is not None:
        gb = g2.sum(axis=0).reshape(bias.shape)
    return gx, gw, gb


def fused_gelu(xp, x, approximate: str = "none"):
    """GELU of ``x`` ('none': exact, 'tanh': the tanh approximation), or None."""
    if not _usable(xp, x):
        return None
    x = xp.ascontiguousarray(x)
    out = xp.empty_like(x)
    args = (x, x, out, np.int64(x.size), np.int32(approximate == "tanh"), np.int32(0))
    _launch_flat(xp, "ember_gelu", x.size, x.dtype, args)
    return out


def fused_gelu_backward(xp, x, grad, approximate: str = "none"):
    """``grad`` times GELU's derivative at ``x``, or None."""
    if not _usable(xp, x, grad) or x.shape != grad.shape:
        return None
    x, grad = xp.ascontiguousarray(x), xp.ascontiguousarray(grad)
    out = xp.empty_like(x)
    args = (x, grad, out, np.int64(x.size), np.int32(approximate == "tanh"), np.int32(1))
    _launch_flat(xp, "ember_gelu", x.size, x.dtype, args)
    return out


def fused_adam_step(
    xp,
    param,
    grad,
    exp_avg,
    exp_avg_sq,
    max_exp_avg_sq=None,
    *,
    step: int,
    lr: float,
    beta1: float,
    beta2: float,
    eps: float,
    weight_decay: float = 0.0,
    decoupled: bool = False,
    maximize: bool = False,
):
    """One Adam (``decoupled``: AdamW) step updating ``param``, ``exp_avg``, ``exp_avg_sq`` and,
    with amsgrad, ``max_exp_avg_sq`` in place in one kernel. ``step`` counts this step (1 the
    first). Returns ``param``, or None when not fused here (NumPy, other dtypes, views that
    are not contiguous: the caller then runs its usual step)."""
    arrays = (param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq)
    if not _usable(xp, *arrays):
        return None
    if any(a is not None and not a.flags.c_contiguous for a in arrays):
        return None
    scalar = param.dtype.type
    args = (
        param, grad, exp_avg, exp_avg_sq,
        max_exp_avg_sq if max_exp_avg_sq is not None else exp_avg_sq,
        np.int64(param.size),
        scalar(1 - beta1), scalar(beta2), scalar(1 - beta2),
        scalar(lr / (1 - beta1**step)), scalar(math.sqrt(1 - beta2**step)),
        scalar(eps), scalar(weight_decay), scalar(1 - lr * weight_decay),
        np.int32(decoupled), np.int32(max_exp_avg_sq is not None), np.int32(maximize),
    )  # fmt: skip
    _launch_flat(xp, "ember_adam_step", param.size, param.dtype, args)
    return param


def compile_with_nvrtc(arch: str = "compute_90") -> dict:
    """Compile every kernel with NVRTC (no GPU needed): {name: PTX size}. Raises with the NVRTC
    log on the first source that does not compile."""
    from cupy_backends.cuda.libs import nvrtc

    sizes = {}
    for name, source in all_kernel_sources().items():
        program = nvrtc.createProgram(source, f"{name}.cu", [], [])
        try:
            try:
                nvrtc.compileProgram(program, [f"-arch={arch}", "-std=c++14"])
            except Exception as exc:
                log = nvrtc.getProgramLog(program)
                raise RuntimeError(f"NVRTC cannot compile {name}: {exc}\n{log}") from None
            sizes[name] = len(nvrtc.getPTX(program))
        finally:
            nvrtc.destroyProgram(program)
    return sizes
