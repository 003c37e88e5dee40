"""embedding_bag: sums, means or maxima of bags of embedding rows, without the (T, D)
intermediate leaving the graph.

Rows are looked up with index_select and reduced per bag with index_add (sum, mean) or
gathered at each bag's per-dimension maximum (max), so gradients reach ``weight`` and
``per_sample_weights`` to any order.
"""

from __future__ import annotations

from .. import _creation
from .. import _dtype as dt
from .._tensor import Tensor
from ._dispatch import array_module, wrap


def _bags(input: Tensor, offsets: Tensor | None, include_last_offset: bool):
    """(flat indices, bag id of each index, number of bags) from 2-D input or 1-D + offsets."""
    xp = array_module(input._data)
    if input.dim() == 2:
        if offsets is not None:
            raise ValueError(
                "if input is 2D, then offsets has to be None, as input is treated is a mini-batch "
                f"of fixed length sequences. However, found offsets of type {type(offsets)}"
            )
        bags, length = input.shape
        ids = xp.repeat(xp.arange(bags), length)
        return input._data.reshape(-1), ids, bags
    if input.dim() != 1:
        raise ValueError(
            f"input has to be 1D or 2D Tensor, but got Tensor of dimension {input.dim()}"
        )
    if offsets is None:
        raise ValueError("offsets has to be a 1D Tensor but got None")
    if offsets.dim() != 1:
        raise ValueError("offsets has to be a 1D Tensor")
    starts = offsets._data.astype(dt.int64.np)
    total = input.shape[0]
    if starts.size and int(starts[0]) != 0:
        raise RuntimeError(
            "offsets[0] has to be 0, i.e., the first sequence in the mini-batch has to start "
            f"from position 0. However, got {int(starts[0])}"
        )
    if starts.size and int(starts[-1]) > total:
        raise RuntimeError(
            f"offsets[-1] can not be greater than input's length ({total}), but got "
            f"offsets[-1] of {int(starts[-1])}"
        )
    if include_last_offset:
        bags = max(starts.size - 1, 0)
        ends = starts[1:]
        starts = starts[:-1]
    else:
        bags = starts.size
        ends = xp.concatenate([starts[1:], xp.asarray([total], dtype=dt.int64.np)])
    # bag of position t: the number of bag starts at or before t, minus one
    ids = xp.searchsorted(starts, xp.arange(total), side="right") - 1
    inside = (ids >= 0) & (xp.arange(total) < (ends[-1] if bags else 0))
    return input._data[inside], ids[inside], bags


def embedding_bag(
    input: Tensor,
    weight: Tensor,
    offsets: Tensor | None = None,
    max_norm: float | None = None,
    norm_type: float = 2,
    scale_grad_by_freq: bool = False,
    mode: str = "mean",
    sparse: bool = False,
    per_sample_weights: Tensor | None = None,
    include_last_offset: bool = False,
    padding_idx: int | None = None,
) -> Tensor:
    """(B, D): each bag's embedding rows reduced by ``mode`` ('sum', 'mean' or 'max').

    >>> w = ember.arange(6.0).reshape(3, 2)
    >>> embedding_bag(ember.tensor([0, 2, 1]), w, ember.tensor([0, 2]), mode="sum").tolist()
    [[4.0, 6.0], [2.0, 3.0]]
    """
    if mode not in ("sum", "mean", "max"):
        raise ValueError(f"mode has to be one of sum, mean or max, got {mode}")
    if input.dtype.name not in ("int64", "int32"):
        raise RuntimeError(
            "Expected tensor for argument #1 'indices' to have one of the following scalar "
            f"types: Long, Int; but got {input.dtype.legacy_name} instead"
        )
    if per_sample_weights is not None:
        if mode != "sum":
            raise NotImplementedError(
                "embedding_bag: per_sample_weights was not None. per_sample_weights is only "
                f"supported for mode='sum' (got mode='{mode}'). Please open a feature request "
                "on GitHub."
            )
        if tuple(per_sample_weights.shape) != tuple(input.shape):
            raise ValueError(
                f"embedding_bag: If per_sample_weights ({list(per_sample_weights.shape)}) is not "
                f"None, then it must have the same shape as the input ({list(input.shape)})"
            )
    num_rows, dim = weight.shape
    if padding_idx is not None:
        if not -num_rows <= padding_idx < num_rows:
            raise AssertionError("padding_idx must be within the number of embeddings")
        padding_idx = padding_idx % num_rows
    xp = array_module(input._data)
    indices, ids, bags = _bags(input, offsets, include_last_offset)
    keep = xp.ones(indices.shape, dtype=bool)
    if padding_idx is not None:
        keep = indices != padding_idx
    if indices.size and (int(indices.min()) < 0 or int(indices.max()) >= num_rows):
        bad = int(indices.max()) if int(indices.max()) >= num_rows else int(indices.min())
        raise IndexError(f"index {bad} is out of range for an embedding of {num_rows} rows")
    sample_weights = None
    if per_sample_weights is not None:
        positions = _kept_positions(input, offsets, include_last_offset, xp)
        sample_weights = per_sample_weights.reshape(-1)[wrap(positions[keep])]
    indices, ids = indices[keep], ids[keep]
    if max_norm is not None:
        _renormalise(weight, indices, max_norm, norm_type)
    rows = weight.index_select(0, wrap(indices.astype(dt.int64.np)))
    if scale_grad_by_freq and indices.size:
        # same values, gradient divided by how often each row occurs in the batch
        counts = xp.bincount(indices, minlength=num_rows)[indices].astype(weight._data.dtype)
        keep_share = wrap((1.0 / counts)[:, None])
        rows = rows * keep_share + rows._detach() * (1 - keep_share)
    bag_of = wrap(ids.astype(dt.int64.np))
    empty = _creation.zeros(bags, dim, dtype=weight.dtype, device=weight.device)
    if mode == "max":
        return _bag_max(rows, ids, bags, empty, xp)
    if sample_weights is not None:
        rows = rows * sample_weights.unsqueeze(1)
    sums = empty.index_add(0, bag_of, rows)
    if mode == "mean":  # torch divides each bag's sum by its size (an empty bag gives 0)
        counts = xp.bincount(ids, minlength=bags).astype(weight._data.dtype)
        return sums / wrap(xp.maximum(counts, 1)[:, None])
    return sums


def _kept_positions(input: Tensor, offsets, include_last_offset: bool, xp):
    """Flat positions in ``input`` of the indices _bags returned (to pick sample weights)."""
    if input.dim() == 2:
        return xp.arange(input.numel())
    positions = wrap(xp.arange(input.shape[0]))
    return _bags(positions, offsets, include_last_offset)[0]


def _bag_max(rows: Tensor, ids, bags: int, empty: Tensor, xp) -> Tensor:
    """Per bag and dimension, the first maximal row (empty bags give zeros).

    Bags are laid out densely as (B, longest bag, D), padded with -inf, so one argmax finds
    every bag's winners (no segmented reductions, which CuPy lacks)."""
    data = rows._data
    if data.shape[0] == 0:  # every bag empty: zeros, still connected to weight
        return empty + rows.sum(0) * 0
    counts = xp.bincount(ids, minlength=bags)
    starts = xp.concatenate([xp.zeros(1, dtype=counts.dtype), xp.cumsum(counts)[:-1]])
    within = xp.arange(data.shape[0]) - starts[ids]
    dense = xp.full((bags, int(counts.max()), data.shape[1]), -xp.inf, dtype=data.dtype)
    dense[ids, within] = data
    first = starts[:, None] + xp.argmax(dense, axis=1)  # (B, D) row numbers in ``rows``
    first = xp.where(counts[:, None] > 0, first, 0)
    picked = rows.gather(0, wrap(first.astype(dt.int64.np)))
    if bool((counts > 0).all()):
        return picked
    keep = wrap((counts > 0)[:, None].astype(data.dtype))
    return picked * keep


def _renormalise(weight: Tensor, indices, max_norm: float, norm_type: float) -> None:
    """Rescale, in place, the looked-up rows whose norm exceeds ``max_norm`` (as embedding)."""
    from ..autograd.grad_mode import no_grad

    xp = array_module(weight._data)
    with no_grad():
        unique = wrap(xp.unique(indices).astype(dt.int64.np))
        rows = weight[unique]
        norms = rows.norm(norm_type, dim=1, keepdim=True)
        scale = (max_norm / (norms + 1e-7)).clamp(max=1.0)
        weight[unique] = rows * scale
