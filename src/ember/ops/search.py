"""Searching sorted sequences and testing membership (not differentiable)."""

from __future__ import annotations

import math

from .. import _dtype as dt
from .._tensor import Tensor
from ._dispatch import array_module, to_tensor, wrap


def _side(right: bool, side: str | None) -> str:
    if side is not None:
        if side not in ("left", "right"):
            raise RuntimeError(
                f"torch.searchsorted(): side can only be 'left' or 'right' but got {side}"
            )
        if right and side == "left":
            raise RuntimeError(
                "torch.searchsorted(): side and right can't be set to opposites, got side of "
                "left while right was True"
            )
        return side
    return "right" if right else "left"


def searchsorted(
    sorted_sequence: Tensor,
    input,
    *,
    out_int32: bool = False,
    right: bool = False,
    side: str | None = None,
    sorter=None,
) -> Tensor:
    """Indices where ``input`` would be inserted into the innermost dim of
    ``sorted_sequence`` to keep it sorted (rows matched by the leading dims)."""
    side = _side(right, side)
    seq = sorted_sequence._data
    scalar = not isinstance(input, Tensor)
    values = to_tensor(input, sorted_sequence)._data
    xp = array_module(seq)
    if sorter is not None:
        seq = xp.take_along_axis(seq, sorter._data, axis=-1)
    index_dtype = (dt.int32 if out_int32 else dt.int64).np
    if seq.ndim <= 1:
        out = xp.searchsorted(seq, values, side=side)
        return wrap(xp.asarray(out, dtype=index_dtype))
    if scalar or values.shape[:-1] != seq.shape[:-1]:
        raise RuntimeError(
            "torch.searchsorted(): boundaries tensor should be 1 dimension or the first N-1 "
            "dimensions of boundaries tensor and input value tensor must match, but we got "
            f"boundaries tensor {list(seq.shape)} and input value tensor {list(values.shape)}"
        )
    rows = math.prod(seq.shape[:-1])  # explicit: -1 cannot be inferred for empty rows
    rows_seq = seq.reshape(rows, seq.shape[-1])
    rows_val = values.reshape(rows, values.shape[-1])
    out = xp.empty(rows_val.shape, dtype=index_dtype)
    for i in range(rows_seq.shape[0]):
        out[i] = xp.searchsorted(rows_seq[i], rows_val[i], side=side)
    return wrap(out.reshape(values.shape))


def bucketize(input, boundaries: Tensor, *, out_int32: bool = False, right: bool = False):
    """The bucket of each value: i with boundaries[i-1] < x <= boundaries[i]
    (``right=True``: boundaries[i-1] <= x < boundaries[i])."""
    if boundaries.dim() != 1:
        raise RuntimeError(
            f"boundaries tensor must be 1 dimension, but got dim({boundaries.dim()})"
        )
    return searchsorted(boundaries, input, out_int32=out_int32, right=right)


def isin(elements, test_elements, *, assume_unique: bool = False, invert: bool = False):
    """Whether each element of ``elements`` is in ``test_elements``."""
    like = elements if isinstance(elements, Tensor) else test_elements
    a = to_tensor(elements, like)._data
    b = to_tensor(test_elements, like)._data
    xp = array_module(a)
    return wrap(xp.isin(a, b, assume_unique=assume_unique, invert=invert))
