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
    if isinstance(bins, (list, tuple)) and bins and isinstance(bins[0], Tensor):
        bins = [b.detach().cpu()._data for b in bins]
    spans = None
    if range is not None:
        spans = [tuple(range[2 * i : 2 * i + 2]) for i in builtins.range(dims)]
    w = None if weight is None else weight.detach().cpu()._data.reshape(-1)
    hist, edges = np.histogramdd(
        data.reshape(-1, dims), bins, range=spans, weights=w, density=density
    )
    return histogramdd_result(
        tensor(hist, dtype=input.dtype), [tensor(e, dtype=input.dtype) for e in edges]
    )
