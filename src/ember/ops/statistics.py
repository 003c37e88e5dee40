"""Order statistics, NaN-aware reductions, running extremes and histograms.

Selections (median, mode, quantile, cummax) take their indices from the kernel and their
values through ``gather``, so the gradient of a selected value goes back to the position it
came from, as in PyTorch. Histograms and counts are not differentiable.
"""

from __future__ import annotations

import builtins
import math
import warnings

from .. import _dtype as dt
from .. import return_types
from .._creation import _spaced, zeros_like
from .._tensor import Tensor
from ..autograd.node import Node
from ._dispatch import array_module, non_differentiable, norm_dims, result, wrap, wrap_dim
from .complex import complex, imag, real
from .elementwise import _complex_logaddexp, isnan, true_divide, where
from .indexing import CummaxBackward0, CumminBackward0, gather, gathered, sort
from .linalg import mm
from .reduction import amax, amin, sum

median_result = return_types.median
nanmedian_result = return_types.nanmedian
mode_result = return_types.mode
cummax_result = return_types.cummax
cummin_result = return_types.cummin
aminmax_result = return_types.aminmax
histogram_result = return_types.histogram


def _select(input: Tensor, d: int, index, keepdim: bool, result_type):
    """Values at ``index`` (kept dim of size 1) along ``d``, with the indices, as torch returns."""
    idx = wrap(index.astype(dt.int64.np, copy=False))
    values = gather(input, d, idx)
    if not keepdim:
        values, idx = values.squeeze(d), idx.squeeze(d)
    return result_type(values, idx)


def _nan_count(xp, data, d):
    if data.dtype.kind not in "biu":
        return xp.isnan(data).sum(axis=d, keepdims=True)
    return xp.zeros([1 if i == d else s for i, s in enumerate(data.shape)], dtype=dt.int64.np)


class MedianBackward0(Node):
    """The median of all elements: torch splits the gradient evenly among the elements equal
    to it (among the NaNs when it is NaN)."""

    def backward(self, g):
        (x,) = self.unpack_saved()
        y = self.saved_output()
        chosen = isnan(x) if bool(isnan(y)) else x == y
        return where(chosen, g / sum(chosen), 0.0)


class NanmedianBackward0(MedianBackward0):
    pass


def _median(input: Tensor, dim, keepdim: bool, ignore_nan: bool, op: str, result_type):
    data = input._data
    xp = array_module(data)
    if dim is not None:
        d = wrap_dim(dim, builtins.max(data.ndim, 1), op)
        if data.ndim and data.shape[d] == 0:
            raise IndexError(f"{op}(): Expected reduction dim {d} to have non-zero size.")
    if data.dtype.kind == "b" and (data.size or dim is not None):
        kernel = "median_cpu" if dim is None else "median_out"
        raise NotImplementedError(f"\"{kernel}\" not implemented for 'Bool'")
    if dim is None:
        if data.size == 0:
            return wrap(xp.full((), xp.nan, dtype=data.dtype))
        flat = wrap(data.reshape(-1))
        value = _median(flat, 0, False, ignore_nan, op, result_type).values._data
        node = NanmedianBackward0 if ignore_nan else MedianBackward0
        return result(node, value, (input,), (input,), True)
    if data.ndim == 0:
        return result_type(input.clone(), wrap(xp.zeros((), dtype=dt.int64.np)))
    n = data.shape[d]
    if n == 0:
        raise IndexError(f"{op}(): Expected reduction dim {d} to have non-zero size.")
    # NaNs sort last, in their order (bfloat16 sorts its NaNs anywhere: sorted as float32)
    keys = data.astype(xp.float32) if data.dtype.kind == "V" else data
    order = xp.argsort(keys, axis=d, kind="stable")
    nans = _nan_count(xp, data, d)
    valid = n - nans
    if ignore_nan:
        pos = xp.maximum((valid - 1) // 2, 0)
    else:
        # a row with a NaN has the NaN as its median (the first NaN: sorted right after the rest)
        pos = xp.where(nans > 0, valid, (n - 1) // 2)
    index = xp.take_along_axis(order, pos, axis=d)
    return _select(input, d, index, keepdim, result_type)


def median(input: Tensor, dim=None, keepdim: bool = False):
    """The lower median; with ``dim``, ``(values, indices)``. NaN propagates."""
    return _median(input, dim, keepdim, False, "median", median_result)


def nanmedian(input: Tensor, dim=None, keepdim: bool = False):
    """The lower median of the non-NaN values."""
    return _median(input, dim, keepdim, True, "nanmedian", nanmedian_result)


def mode(input: Tensor, dim: int = -1, keepdim: bool = False):
    """The most frequent value along ``dim`` (the smallest among ties) and its last index."""
    data = input._data
    xp = array_module(data)
    d = wrap_dim(dim, builtins.max(data.ndim, 1), "mode")
    if data.ndim == 0:
        return mode_result(input.clone(), wrap(xp.zeros((), dtype=dt.int64.np)))
    n = data.shape[d]
    if n == 0:
        raise IndexError(f"mode(): Expected reduction dim {d} to have non-zero size.")
    rows = xp.moveaxis(data, d, -1).reshape(-1, n)
    m = rows.shape[0]
    ordered = xp.sort(rows, axis=1)
    starts_mask = xp.ones((m, n), dtype=bool)
    starts_mask[:, 1:] = ordered[:, 1:] != ordered[:, :-1]
    starts = xp.flatnonzero(starts_mask.ravel())
    lengths = xp.diff(xp.concatenate([starts, xp.asarray([m * n])]))
    # a run never crosses rows: the first element of every row starts a run
    row_of = starts // n
    pick = xp.lexsort(xp.stack([starts, -lengths, row_of]))
    first = xp.ones(pick.shape, dtype=bool)
    first[1:] = row_of[pick][1:] != row_of[pick][:-1]
    value = ordered.ravel()[starts[pick[first]]]
    hits = rows == value[:, None]
    last = n - 1 - xp.argmax(hits[:, ::-1], axis=1)
    index = xp.moveaxis(last.reshape(xp.moveaxis(data, d, -1).shape[:-1] + (1,)), -1, d)
    return _select(input, d, index, keepdim, mode_result)


def _quantile(input: Tensor, q, dim, keepdim: bool, interpolation: str, ignore_nan: bool, op):
    if input._data.dtype.kind != "f":
        raise RuntimeError(f"{op}() input tensor must be either float or double dtype")
    if interpolation not in ("linear", "lower", "higher", "midpoint", "nearest"):
        raise ValueError(
            f"{op}() interpolation must be one of linear, lower, higher, midpoint or nearest. "
            f"Got {interpolation}"
        )
    scalar_q = not isinstance(q, Tensor)
    if isinstance(q, Tensor):
        q_t = q
    else:
        from .._creation import tensor

        q_t = tensor(q, dtype=input.dtype, device=input.device)
    if q_t.dim() > 1:
        raise RuntimeError(f"{op}() q must be a scalar or 1D tensor")
    if q_t.dtype != input.dtype:
        raise RuntimeError(f"{op}() q tensor must be same dtype as the input tensor")
    xp = array_module(input._data)
    qd = q_t._data
    if qd.size and not bool(((qd >= 0) & (qd <= 1)).all()):
        raise RuntimeError(f"{op}() q values must be in the range [0, 1]")
    x = input
    if dim is None:
        x, d = input.reshape(-1), 0
        out_ndim = 0
    else:
        d = wrap_dim(dim, builtins.max(input.dim(), 1), op)
        if input.dim() == 0:
            x = input.reshape(1)
        out_ndim = input.dim()
    n = x.shape[d]
    if n == 0:
        raise RuntimeError(f"{op}() input tensor must be non-empty")
    values = sort(x, d).values  # NaNs last
    data = x._data
    nans = _nan_count(xp, data, d)  # kept dim of size 1
    qv = qd.reshape(-1).astype(data.dtype)  # (k,)
    shape_q = (-1,) + (1,) * data.ndim
    if ignore_nan:  # an all-NaN row gets rank 0: its quantile is its first NaN, as torch
        valid = (n - nans).astype(data.dtype)
        rank = qv.reshape(shape_q) * (valid - 1)
        rank = xp.where(rank < 0, 0, rank)
    else:
        rank = xp.where(nans > 0, n - 1, qv.reshape(shape_q) * (n - 1)).astype(data.dtype)
    if interpolation == "lower":
        rank = xp.floor(rank)
    elif interpolation == "higher":
        rank = xp.ceil(rank)
    elif interpolation == "nearest":
        rank = xp.round(rank)  # half to even, as torch
    low = xp.floor(rank).astype(dt.int64.np)
    high = xp.ceil(rank).astype(dt.int64.np)
    k = qv.shape[0]
    expanded = values.unsqueeze(0).expand((k,) + tuple(values.shape))
    v_low = gather(expanded, d + 1, wrap(low))
    v_high = gather(expanded, d + 1, wrap(high))
    if interpolation == "midpoint":
        out = v_low + (v_high - v_low) * 0.5
    elif interpolation == "linear":
        # the weight as torch forms it, rank - floor(rank) with rank = q·(N-1) (or q·(count-1)
        # ignoring NaNs), so that q gets its gradient (v_high - v_low)·(N-1)
        q_col = q_t.to(x.dtype).reshape(shape_q)
        if ignore_nan:
            q_rank = q_col * wrap(valid - 1)
            q_rank = q_rank.masked_fill(q_rank < 0, 0.0)
        else:
            q_rank = where(wrap(nans > 0), wrap(rank), q_col * (n - 1))
        weight = q_rank - wrap(low.astype(data.dtype))
        out = v_low + (v_high - v_low) * weight
    else:
        out = v_low
    out = out.squeeze(d + 1)
    if keepdim:
        if dim is None:
            out = out.reshape((k,) + (1,) * input.dim())
        else:
            out = out.unsqueeze(d + 1) if out_ndim else out
    if scalar_q or q_t.dim() == 0:
        out = out.squeeze(0)
    return out


def quantile(input: Tensor, q, dim=None, keepdim: bool = False, *, interpolation="linear"):
    """The ``q``-th quantiles along ``dim`` (NaN propagates); a 1-D ``q`` adds a leading dim."""
    return _quantile(input, q, dim, keepdim, interpolation, False, "quantile")


def nanquantile(input: Tensor, q, dim=None, keepdim: bool = False, *, interpolation="linear"):
    """``quantile`` of the non-NaN values."""
    return _quantile(input, q, dim, keepdim, interpolation, True, "nanquantile")


def nansum(input: Tensor, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:
    x = input
    if input.dtype.is_floating_point:
        x = where(isnan(input), 0.0, input)
    return sum(x, dim, keepdim, dtype=dtype)


def nanmean(input: Tensor, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:
    if not (input.dtype.is_floating_point or input.dtype.is_complex) and dtype is None:
        raise RuntimeError(
            "nanmean(): expected input to have floating point or complex dtype but got "
            f"{input.dtype.legacy_name}"
        )
    count = sum((~isnan(input)).to(input.dtype if dtype is None else dtype), dim, keepdim)
    return nansum(input, dim, keepdim, dtype=dtype) / count


def aminmax(input: Tensor, *, dim=None, keepdim: bool = False):
    if input.numel() == 0 and dim is None:
        raise RuntimeError(
            "aminmax(): cannot compute aminmax over an empty dimension as the operation has "
            "no identity."
        )
    return aminmax_result(amin(input, dim, keepdim), amax(input, dim, keepdim))


# --------------------------------------------------------------------------------------------
# Running extremes and log-cum-sum-exp
# --------------------------------------------------------------------------------------------
def _cumulative_extreme(input: Tensor, dim: int, accumulate: str, op: str, result_type):
    data = input._data
    xp = array_module(data)
    if data.ndim == 0:
        if dim not in (-1, 0):
            raise IndexError(f"{op}(): Expected reduction dim -1 or 0 for scalar but got {dim}")
        return result_type(input.clone(), wrap(xp.zeros((), dtype=dt.int64.np)))
    if data.size == 0:  # PyTorch returns before looking at the dim
        return result_type(input.clone(), wrap(xp.zeros(data.shape, dtype=dt.int64.np)))
    d = wrap_dim(dim, data.ndim, op)
    running = getattr(xp, accumulate).accumulate(data, axis=d)
    positions = xp.arange(data.shape[d]).reshape([-1 if i == d else 1 for i in range(data.ndim)])
    # the latest position where the running extreme was reached (or a NaN met), as torch
    reached = data == running
    if dt.is_floating_array_dtype(data.dtype):
        reached |= xp.isnan(data)
    index = xp.maximum.accumulate(xp.where(reached, positions, 0), axis=d)
    idx = wrap(index.astype(dt.int64.np))
    node_cls = CummaxBackward0 if op == "cummax" else CumminBackward0
    return result_type(gathered(input, d, idx, node_cls), idx)


def cummax(input: Tensor, dim: int):
    """Running maximum along ``dim`` and where it was reached: ``(values, indices)``."""
    return _cumulative_extreme(input, dim, "maximum", "cummax", cummax_result)


def cummin(input: Tensor, dim: int):
    """Running minimum along ``dim`` and where it was reached: ``(values, indices)``."""
    return _cumulative_extreme(input, dim, "minimum", "cummin", cummin_result)


class LogcumsumexpBackward0(Node):
    def backward(self, g):
        (x,) = self.unpack_saved()
        out = self.saved_output()
        d = self.dim
        # d out_j / d x_i = exp(x_i - out_j) for j >= i; split g by sign so that every term
        # is summed in log space: grad_i = Σ_{j≥i} g_j e^{x_i - out_j}
        # (a huge finite stand-in for log 0: -inf would give inf - inf in double backward)
        log_zero = float(array_module(x._data).finfo(x._data.dtype).min) / 4
        positive = g > 0
        negative = g < 0
        log_pos = where(positive, where(positive, g, 1.0).log(), log_zero)
        log_neg = where(negative, where(negative, -g, 1.0).log(), log_zero)
        from_pos = (x + _reverse_logcumsumexp(log_pos - out, d)).exp()
        from_neg = (x + _reverse_logcumsumexp(log_neg - out, d)).exp()
        return from_pos - from_neg


def _reverse_logcumsumexp(t: Tensor, d: int) -> Tensor:
    return logcumsumexp(t.flip(d), d).flip(d)


def logcumsumexp(input: Tensor, dim: int) -> Tensor:
    """log Σ_{j≤i} exp(x_j) along ``dim``, computed without overflow."""
    data = input._data
    d = wrap_dim(dim, builtins.max(data.ndim, 1), "logcumsumexp")
    if data.dtype.kind in "biu":
        raise NotImplementedError(
            f"\"logcumsumexp_out_cpu\" not implemented for '{input.dtype.legacy_name}'"
        )
    xp = array_module(data)
    if data.ndim == 0 or data.size == 0:
        out = data.copy()
    elif data.dtype.kind == "c":  # NumPy's logaddexp has no complex loop: torch's formula
        steps = xp.moveaxis(data, d, 0)
        acc = xp.empty_like(steps)
        acc[0] = steps[0]
        for i in range(1, steps.shape[0]):
            acc[i] = _complex_logaddexp(xp, acc[i - 1], steps[i])
        out = xp.moveaxis(acc, 0, d)
    else:
        out = xp.logaddexp.accumulate(data, axis=d)
    return result(LogcumsumexpBackward0, out, (input,), (input,), save_output=True, dim=d)


# --------------------------------------------------------------------------------------------
# Histograms and counts (not differentiable)
# --------------------------------------------------------------------------------------------
def histc(input: Tensor, bins: int = 100, min=0, max=0) -> Tensor:
    data = input._data
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"\"histogram_cpu\" not implemented for '{input.dtype.legacy_name}'")
    if bins <= 0:
        raise RuntimeError(f"torch.histogram(): bins must be > 0, but got {bins} for dimension 0")
    xp = array_module(data)
    lo, hi = float(min), float(max)
    if lo == hi and data.size:  # (min == max: the data's range)
        lo, hi = float(data.min()), float(data.max())
    if not (math.isfinite(lo) and math.isfinite(hi)):
        raise RuntimeError(
            f"torch.histc: range of [{_c_number(lo)}, {_c_number(hi)}] is not finite"
        )
    if lo > hi:
        raise RuntimeError("torch.histc: max must be larger than min")
    if lo == hi:
        lo, hi = lo - 1, hi + 1
    counts = _linear_bin_counts(xp, data.reshape(-1), bins, lo, hi)
    return non_differentiable("histc", wrap(counts.astype(data.dtype)), input)


def _c_number(value: float) -> str:
    """A float as C++'s stream prints it in ATen's messages: 0, 1.5, inf, -nan."""
    if math.isnan(value):
        return "-nan" if math.copysign(1.0, value) < 0 else "nan"
    return f"{value:g}"


def _linear_bin_counts(xp, flat, bins: int, lo: float, hi: float):
    """ATen's histc: an element's bin is ``int((x - lo) * bins / (hi - lo))`` in the input's
    precision (each step rounded to a 2-byte float too, as c10's Half and BFloat16), the top
    edge in the last bin, NaN and what lies outside [lo, hi] in none. (NumPy's histogram bins
    by its float64 edges instead: 0.6 of [-1.5, 2] in 100 float32 bins lands one bin higher.)"""
    lo_t, hi_t = flat.dtype.type(lo), flat.dtype.type(hi)
    inside = flat[(flat >= lo_t) & (flat <= hi_t)]
    pos = ((inside - lo_t) * flat.dtype.type(bins) / (hi_t - lo_t)).astype(dt.int64.np)
    xp.minimum(pos, bins - 1, out=pos)
    return xp.bincount(pos, minlength=bins)[:bins]


def histogram(input: Tensor, bins=100, *, range=None, weight=None, density: bool = False):
    data = input._data
    xp = array_module(data)
    flat = data.reshape(-1)
    w = weight._data.reshape(-1) if isinstance(weight, Tensor) else None
    if isinstance(bins, Tensor):  # given edges: a binary search, as ATen's general kernel
        edges = bins._data.astype(data.dtype, copy=False)
        inside = (flat >= edges[0]) & (flat <= edges[-1])  # NaN is in no bin
        index = xp.searchsorted(edges, flat[inside], side="right") - 1
        xp.minimum(index, edges.size - 2, out=index)
    else:
        if range is None:
            lo, hi = (float(flat.min()), float(flat.max())) if flat.size else (0.0, 1.0)
        else:
            lo, hi = (float(v) for v in range)
        if not (math.isfinite(lo) and math.isfinite(hi)):
            raise RuntimeError(
                f"torch.histogramdd: dimension 0's range [{_c_number(lo)}, {_c_number(hi)}] "
                "is not finite"
            )
        if lo > hi:
            raise RuntimeError(
                f"torch.histogramdd: min should not exceed max, but got min {_c_number(lo)} "
                f"max {_c_number(hi)} for dimension 0"
            )
        if lo == hi:
            lo, hi = lo - 0.5, hi + 0.5
        edges = _spaced(lo, hi, int(bins) + 1, dt.FROM_NUMPY[data.dtype], xp)
        inside, index = _linear_bins(xp, flat, edges)
    if w is None and not density:
        hist = xp.bincount(index, minlength=edges.size - 1).astype(data.dtype)
    else:  # each weight added to its bin in input order, in the data's dtype (as ATen's loop)
        values = xp.ones(index.shape, data.dtype) if w is None else w[inside].astype(data.dtype)
        hist = xp.zeros(edges.size - 1, dtype=data.dtype)
        xp.add.at(hist, index, values)
        if density:
            hist = hist / (hist.sum() * xp.diff(edges))
    return histogram_result(wrap(hist.astype(data.dtype, copy=False)), wrap(edges))


def _linear_bins(xp, flat, edges):
    """ATen's bins over evenly spaced ``edges``: ``int((x - lo) · bins / (hi - lo))`` in the
    data's precision, then moved to agree with the edges themselves (the edge at or below x,
    looked for among the neighbours), the top edge in the last bin. Which elements lie inside
    [lo, hi], and their bins."""
    lo, hi = edges[0], edges[-1]
    inside = (flat >= lo) & (flat <= hi)
    x = flat[inside]
    n_edges = edges.size
    guess = ((x - lo) * flat.dtype.type(n_edges - 1) / (hi - lo)).astype(dt.int64.np)
    first = xp.maximum(guess - 1, 0)
    index = first - 1
    for k in builtins.range(3):  # upper_bound over edges[first : min(guess + 2, n_edges)]
        at = first + k
        within = at < xp.minimum(guess + 2, n_edges)
        index += within & (edges[xp.minimum(at, n_edges - 1)] <= x)
    xp.minimum(index, n_edges - 2, out=index)
    return inside, index


def bincount(input: Tensor, weights=None, minlength: int = 0) -> Tensor:
    data = input._data
    if data.ndim != 1 or data.dtype.kind not in "iub":
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    if minlength < 0:
        raise RuntimeError("minlength should be >= 0")
    xp = array_module(data)
    if data.size and int(data.min()) < 0:
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    if weights is None:
        return wrap(xp.bincount(data, minlength=minlength).astype(dt.int64.np))
    w = weights._data
    if w.shape != data.shape:
        raise RuntimeError("weights should be 1-d and have the same length as input")
    out_dtype = w.dtype if w.dtype.kind == "f" else dt.float64.np
    counts = xp.bincount(data, weights=w.astype(dt.float64.np), minlength=minlength)
    return non_differentiable("bincount", wrap(counts.astype(out_dtype)), weights)


# --------------------------------------------------------------------------------------------
# Covariance and renormalisation (composites: their gradients come from the parts)
# --------------------------------------------------------------------------------------------
def _check_weights(weights, name: str, n: int, integral: bool) -> None:
    if weights.dim() > 1:
        raise RuntimeError(
            f"cov(): expected {name} to have one or fewer dimensions but got {name} with "
            f"{weights.dim()} dimensions"
        )
    kind_ok = (
        not (weights.dtype.is_floating_point or weights.dtype.is_complex)
        and weights.dtype != dt.bool_
        if integral
        else weights.dtype.is_floating_point
    )
    if not kind_ok:
        wanted = "integral" if integral else "floating point"
        raise RuntimeError(
            f"cov(): expected {name} to have {wanted} dtype but got {name} with "
            f"{weights.dtype.legacy_name} dtype"
        )
    if weights.numel() != n:
        raise RuntimeError(
            f"cov(): expected {name} to have the same numel as there are observations in the "
            f"input but got {weights.numel()} != {n}"
        )
    if n and bool(weights._data.min() < 0):
        raise RuntimeError(f"cov(): {name} cannot be negative")


def _long_scalar(value: int, like: Tensor) -> Tensor:
    return wrap(array_module(like._data).asarray(value, dtype=dt.int64.np))


def cov(input: Tensor, *, correction: int = 1, fweights=None, aweights=None) -> Tensor:
    """The covariance matrix of the variables in the rows of ``input`` (observations in its
    columns), optionally weighted by frequency (``fweights``) and importance (``aweights``);
    a 0-d tensor for one variable, as in ATen's ``cov``.

    Example::
        >>> ember.cov(ember.tensor([[0.0, 1.0, 2.0], [2.0, 1.0, 0.0]]))
        tensor([[ 1., -1.],
                [-1.,  1.]])
    """
    if input.dim() > 2:
        raise RuntimeError(
            f"cov(): expected input to have two or fewer dimensions but got an "
            f"input with {input.dim()} dimensions"
        )
    if input.dtype == dt.bool_:
        raise RuntimeError("cov(): bool dtype is not supported for input")
    x = input if input.dim() == 2 else input.reshape(1, -1)
    n = x.shape[1]
    w = None
    if fweights is not None:
        _check_weights(fweights, "fweights", n, integral=True)
        w = fweights
    if aweights is not None:
        _check_weights(aweights, "aweights", n, integral=False)
        w = aweights if w is None else w * aweights
    # the dtypes follow torch's promotion of each step (float32 weights widen a half input)
    w_sum = _long_scalar(n, x) if w is None else w.sum()
    if w is not None and not bool(w_sum._data != 0):
        raise RuntimeError("cov(): weights sum to zero, can't be normalized")
    avg = (x if w is None else x * w).sum(1) / w_sum
    if w is None:
        norm = _long_scalar(n - correction, x)
    elif correction == 0:
        norm = w_sum
    elif aweights is None:
        norm = w_sum - correction
    elif fweights is None and n == 1 and correction == 1:
        norm = _long_scalar(0, x)  # ATen's corner case: numpy's result, not a rounding error
    else:
        norm = w_sum - correction * (w * aweights).sum() / w_sum
    if bool(norm._data <= 0):
        warnings.warn(
            "cov(): degrees of freedom is <= 0. Correction should be strictly less than the "
            "number of observations.",
            stacklevel=2,
        )
        norm = norm * 0
    if n == 1 and (fweights is None) != (aweights is None):
        # one observation, one kind of weight: the weighted mean is the observation itself,
        # so ATen zeroes the centred input rather than subtracting (it does so in place on the
        # caller's tensor; ember leaves the input alone)
        inexact = x.dtype.is_floating_point or x.dtype.is_complex
        centred = zeros_like(x, dtype=x.dtype if inexact else dt.float32)
    else:
        centred = x - avg.unsqueeze(1)
    c = mm(centred, (centred if w is None else centred * w).t().conj())
    return true_divide(c, norm).squeeze()


def corrcoef(input: Tensor) -> Tensor:
    """Pearson correlation coefficients of the rows of ``input``; a 0-d tensor for one row.

    Example::
        >>> ember.corrcoef(ember.tensor([[0.0, 1.0, 2.0], [2.0, 1.0, 0.0]]))
        tensor([[ 1., -1.],
                [-1.,  1.]])
    """
    if input.dim() > 2:
        raise RuntimeError(
            f"corrcoef(): expected input to have two or fewer dimensions but got an "
            f"input with {input.dim()} dimensions"
        )
    c = cov(input)
    if c.dim() == 0:
        return c / c  # nan for a covariance of 0, inf or nan, else 1
    d = c.diagonal()
    stddev = (real(d) if d.dtype.is_complex else d).sqrt()
    c = c / stddev.reshape(-1, 1)
    c = c / stddev.reshape(1, -1)
    if c.dtype.is_complex:
        return complex(real(c).clamp(-1, 1), imag(c).clamp(-1, 1))
    return c.clamp(-1, 1)


def renorm(input: Tensor, p, dim: int, maxnorm) -> Tensor:
    """Rescale each slice along ``dim`` whose ``p``-norm exceeds ``maxnorm`` to norm ``maxnorm``."""
    if input.dim() < 2:
        raise RuntimeError(
            f"renorm: input needs at least 2 dimensions, got {input.dim()} dimensions"
        )
    if p <= 0:
        raise RuntimeError("renorm: non-positive-norm not supported")
    if maxnorm < 0:
        raise RuntimeError(f"renorm: expected maxnorm to be >= 0 but got {maxnorm}")
    d = wrap_dim(dim, builtins.max(input.dim(), 1), "renorm")
    others = tuple(i for i in range(input.dim()) if i != d)
    norms = input.norm(p, dim=others, keepdim=True) if others else input.abs()
    factor = where(norms > maxnorm, maxnorm / (norms + 1e-7), 1.0)
    return input * factor


# --------------------------------------------------------------------------------------------
# hash_tensor: an xor of the elements' 64-bit patterns (not differentiable)
# --------------------------------------------------------------------------------------------
def hash_tensor(input: Tensor, dim=None, *, keepdim: bool = False, mode: int = 0) -> Tensor:
    """The xor of the elements' bits (floats as float64, integers and bools as int64), over
    ``dim`` (every dimension by default); a ``uint64`` tensor.

    Example::
        >>> ember.hash_tensor(ember.tensor([1.0, 2.0]))
        tensor(9218868437227405312, dtype=ember.uint64)
    """
    if mode != 0:
        raise RuntimeError(f"Unknown hash_tensor mode: {mode}")
    data = input._data
    xp = array_module(data)
    if input.dtype.is_complex:
        raise NotImplementedError(
            f"\"xor_sum_cpu\" not implemented for '{input.dtype.legacy_name}'"
        )
    if isinstance(dim, (tuple, list)) and len(dim) == 0:
        dim = None
    if dim is None and data.size == 0:
        raise RuntimeError(
            "hash_tensor: Expected reduction dim to be specified for input.numel() == 0. "
            "Specify the reduction dim with the 'dim' argument."
        )
    dims = norm_dims(dim, data.ndim, "hash_tensor")
    for d in dims:
        if data.shape[d] == 0:
            raise IndexError(f"hash_tensor: Expected reduction dim {d} to have non-zero size.")
    wide = dt.float64.np if input.dtype.is_floating_point else dt.int64.np
    bits = data.astype(wide).view(dt.uint64.np)  # a 64-bit pattern per element
    out = xp.bitwise_xor.reduce(bits, axis=dims, keepdims=keepdim) if dims else bits.copy()
    return non_differentiable("hash_tensor", wrap(xp.asarray(out)), input)
