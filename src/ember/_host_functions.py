"""Top-level functions computed on the host by NumPy: D-dimensional
histograms, DLPack export."""

from __future__ import annotations

import builtins

import numpy as np

from . import return_types
from ._tensor import Tensor

histogramdd_result = return_types.histogramdd


def to_dlpack(tensor: Tensor):
    """A DLPack capsule sharing ``tensor``'s memory."""
    return tensor.detach()._data.__dlpack__()


def histogramdd(input: Tensor, bins=10, *, range=None, weight=None, density: bool = False):
    """Counts of the rows of ``input`` (..., D) in a D-dimensional grid: (hist, bin_edges)."""
    from ._creation import tensor

    data = input.detach().cpu()._data
    dims = data.shape[-1]
    w = None if weight is None else weight.detach().cpu()._data.reshape(-1)
    if isinstance(bins, (list, tuple)) and bins and isinstance(bins[0], Tensor):
        edges = [b.detach().cpu()._data for b in bins]
        hist = _histogram_with_edges(data.reshape(-1, dims), edges, w, density)
        return histogramdd_result(
            tensor(hist, dtype=input.dtype), [tensor(e, dtype=input.dtype) for e in edges]
        )
    if isinstance(bins, (list, tuple)) and len(bins) != dims:
        raise RuntimeError(
            "histogramdd: The size of bins must be equal to the innermost dimension of the input."
        )
    spans = None
    if range is not None:
        spans = [tuple(range[2 * i : 2 * i + 2]) for i in builtins.range(dims)]
    hist, edges = np.histogramdd(
        data.reshape(-1, dims), bins, range=spans, weights=w, density=density
    )
    return histogramdd_result(
        tensor(hist, dtype=input.dtype), [tensor(e, dtype=input.dtype) for e in edges]
    )


def _upper_bound(edges: np.ndarray, values: np.ndarray) -> np.ndarray:
    """std::upper_bound of each value, step for step: torch does not check that bin edges
    increase, and its binary search on edges that do not is what decides the bins."""
    first = np.zeros(values.shape, dtype=np.int64)
    count = np.full(values.shape, edges.size, dtype=np.int64)
    while (count > 0).any():
        step = count // 2
        probe = np.minimum(first + step, edges.size - 1)
        right = (count > 0) & ~(values < edges[probe])
        first = np.where(right, probe + 1, first)
        count = np.where(right, count - step - 1, np.where(count > 0, step, 0))
    return first


def _histogram_with_edges(rows: np.ndarray, edges: list, weight, density: bool) -> np.ndarray:
    """torch's histogramdd with explicit edges: a row counts where every coordinate lies in
    [edges[0], edges[-1]] (the last bin holds its right edge); density divides by the total
    and by each bin's widths."""
    dims = rows.shape[1]
    if len(edges) != dims:
        raise RuntimeError(
            f"torch.histogramdd: expected {dims} sequences of bin edges for a {dims}-dimensional "
            f"histogram but got {len(edges)}"
        )
    for d, e in enumerate(edges):
        if e.size < 2:
            raise RuntimeError(
                f"torch.histogram(): bins must be > 0, but got {e.size - 1} for dimension {d}"
            )
    shape = tuple(e.size - 1 for e in edges)
    inside = np.ones(rows.shape[0], dtype=bool)
    flat = np.zeros(rows.shape[0], dtype=np.int64)
    for d, e in enumerate(edges):
        column = rows[:, d]
        inside &= (column >= e[0]) & (column <= e[-1])  # NaN is outside too
        position = np.minimum(_upper_bound(e, column) - 1, e.size - 2)
        flat = flat * shape[d] + position
    counts = np.zeros(int(np.prod(shape)), dtype=np.float64)
    np.add.at(counts, flat[inside], 1.0 if weight is None else weight[inside])
    hist = counts.reshape(shape)
    if density:
        with np.errstate(all="ignore"):
            hist = hist / hist.sum()
            for d, e in enumerate(edges):
                widths = np.diff(e.astype(np.float64)).reshape(
                    [-1 if k == d else 1 for k in builtins.range(dims)]
                )
                hist = hist / widths
    return hist
