"""torch.multinomial's CPU draws on NumPy rows of weights (aten's Distributions.cpp and
native/cpu/MultinomialKernel.cpp, reproduced from their behaviour).

- with replacement, row by row: the running sum of the weights in the weights' dtype
  (float32 for bfloat16), divided by the total, the last entry forced to 1; each sample is
  one float64 uniform ``u`` and the first category whose cumulative weight is >= ``u``.
- without replacement: one exponential draw ``q`` per weight (the whole tensor at once, in
  its dtype), then the ``num_samples`` largest ``p / q`` of each row, largest first (the
  exponential form of the Gumbel-max trick); ties in the order torch's topk leaves them.
"""

from __future__ import annotations

import numpy as np

from .sampler import TorchSampler
from .std_sort import topk_largest

MAX_CATEGORIES = 1 << 24  # torch keeps category counts exact in float32
_SCALAR_TYPE = {  # torch's names for the dtypes its error messages print
    "int64": "Long",
    "int32": "Int",
    "int16": "Short",
    "int8": "Char",
    "uint8": "Byte",
    "bool": "Bool",
    "complex64": "ComplexFloat",
    "complex128": "ComplexDouble",
}


def check_multinomial_args(
    shape: tuple, dtype: np.dtype, dtype_name: str, num_samples: int, replacement: bool
) -> None:
    """torch's argument checks, in its order (before any draw)."""
    if not 1 <= len(shape) <= 2:
        raise RuntimeError("prob_dist must be 1 or 2 dim")
    if dtype.kind != "f" and dtype_name != "bfloat16":
        shown = _SCALAR_TYPE.get(dtype_name, dtype_name)
        raise RuntimeError(
            f"multinomial only supports floating-point dtypes for input, got: {shown}"
        )
    if num_samples <= 0:
        raise RuntimeError("cannot sample n_sample <= 0 samples")
    if not replacement and num_samples > shape[-1]:
        raise RuntimeError(
            "cannot sample n_sample > prob_dist.size(-1) samples without replacement"
        )
    if shape[-1] > MAX_CATEGORIES:
        raise RuntimeError("number of categories cannot exceed 2^24")


def multinomial_rows(
    rng: TorchSampler, rows: np.ndarray, num_samples: int, replacement: bool
) -> np.ndarray:
    """Category indices (int64, shape ``(len(rows), num_samples)``) for a 2-D array of
    non-negative weights, drawn as torch draws them."""
    if rows.shape[0] == 0:
        return np.zeros((0, num_samples), dtype=np.int64)
    if rows.shape[1] == 0:  # torch's range check of the weights meets an empty row first
        raise RuntimeError(
            "aminmax(): cannot compute aminmax over an empty dimension as the operation has no "
            "identity."
        )
    if replacement:
        return _with_replacement(rng, rows, num_samples)
    return _without_replacement(rng, rows, num_samples)


def _with_replacement(rng: TorchSampler, rows: np.ndarray, num_samples: int) -> np.ndarray:
    weights = rows if rows.dtype in (np.float32, np.float64) else rows.astype(np.float32)
    _check_entries(weights)
    cumulative = np.cumsum(weights, axis=1, dtype=weights.dtype)  # sequential per row
    totals = cumulative[:, -1:].copy()
    if not (totals > 0).all():
        raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
    cumulative /= totals
    cumulative[:, -1] = 1
    u = rng.unit(rows.shape[0] * num_samples, np.float64).reshape(-1, num_samples)
    return _lower_bound(cumulative.astype(np.float64), u)


def _check_entries(weights: np.ndarray) -> None:
    """torch checks entry by entry, row-major: ``>= 0`` first (NaN fails it), then finite."""
    negative = ~(weights >= 0)
    infinite = ~np.isfinite(weights)
    bad = negative | infinite
    if bad.any():
        first = np.flatnonzero(bad)[0]
        if negative.reshape(-1)[first]:
            raise RuntimeError(
                "invalid multinomial distribution (encountering probability entry < 0)"
            )
        raise RuntimeError(
            "invalid multinomial distribution (encountering probability entry = infinity or NaN)"
        )


def _lower_bound(cumulative: np.ndarray, u: np.ndarray) -> np.ndarray:
    """Per row, the first index whose cumulative weight is >= each ``u`` of that row: the
    binary search torch runs, on all samples at once."""
    low = np.zeros(u.shape, dtype=np.int64)
    high = np.full(u.shape, cumulative.shape[1], dtype=np.int64)
    while True:
        open_ = low < high
        if not open_.any():
            return low
        mid = low + (high - low) // 2
        below = np.take_along_axis(cumulative, np.minimum(mid, cumulative.shape[1] - 1), 1) < u
        low = np.where(open_ & below, mid + 1, low)
        high = np.where(open_ & ~below, mid, high)


def _exponentials_like(rng: TorchSampler, rows: np.ndarray) -> np.ndarray:
    """Exp(1) draws shaped as ``rows`` and filled in its memory order, as torch fills
    ``empty_like(self).exponential_()`` (which keeps a transposed layout)."""
    draws = rng.exponential(1.0, size=rows.size).astype(rows.dtype)
    shape, strides = np.array(rows.shape), np.array(rows.strides)
    kept = shape > 1  # size-1 dimensions do not decide a layout
    order = np.argsort(-strides[kept], kind="stable")
    expected = rows.itemsize * np.cumprod(np.r_[1, shape[kept][order][::-1][:-1]])[::-1]
    if kept.sum() < 2 or not np.array_equal(strides[kept][order], expected):
        return draws.reshape(rows.shape)  # contiguous, or not dense: torch fills row-major
    axes = np.argsort(-np.where(kept, strides, np.iinfo(np.int64).max), kind="stable")
    return draws.reshape(tuple(shape[axes])).transpose(np.argsort(axes))


def _without_replacement(rng: TorchSampler, rows: np.ndarray, num_samples: int) -> np.ndarray:
    if not (np.all(rows < np.inf) and np.all(rows >= 0)):  # NaN fails both
        raise RuntimeError("probability tensor contains either `inf`, `nan` or element < 0")
    if (rows.sum(axis=1) == 0).any():
        raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
    q = _exponentials_like(rng, rows)
    ratio = rows / q
    if num_samples == 1:
        return np.argmax(ratio, axis=1)[:, None].astype(np.int64)
    ranked = np.argsort(-ratio, axis=1, kind="stable")
    order = ranked[:, :num_samples].astype(np.int64)
    # equal ratios (zero weights, once the others run out) come in the order torch's topk
    # leaves them: replay its selection on the rows where a tie reaches the top num_samples
    leading = np.take_along_axis(ratio, ranked[:, : num_samples + 1], axis=1)
    tied = (leading[:, 1:] == leading[:, :-1]).any(axis=1)
    for r in np.flatnonzero(tied):
        order[r] = topk_largest(ratio[r].tolist(), num_samples)
    return order
