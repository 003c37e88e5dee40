"""Nested tensors from lists of components, with ember ops (so the graph reaches them).

Public constructors (``_construct``) and ops that work component by component (``_shape``,
``_matmul``, ...) both end here.
"""

from __future__ import annotations

from .. import _op_namespace as ember
from ._tensor import JaggedTensor, make_jagged, make_strided

CANNOT_REPRESENT = (
    "Cannot represent given tensor list as a nested tensor with the jagged layout. Note that "
    "the jagged layout only allows for a single ragged dimension. For example: (B, *, D_0, "
    "D_1, ..., D_N), with ragged * dim."
)


def strided_from_list(tensors, ndim: int | None = None):
    """A strided nested tensor whose components are ``tensors`` (copied into one buffer)."""
    if tensors:
        buffer = ember.cat([t.reshape(-1) for t in tensors])
    else:
        buffer = ember.empty(0)
    return make_strided(buffer, [tuple(t.shape) for t in tensors], ndim)


def offsets_of(lengths: list, device) -> ember.Tensor:
    offsets = [0]
    for n in lengths:
        offsets.append(offsets[-1] + n)
    return ember.tensor(offsets, dtype=ember.int64, device=device)


def jagged_from_list(tensors, like: JaggedTensor | None = None, ragged_axis: int | None = None):
    """A jagged nested tensor packing ``tensors`` along their one dimension of differing size.

    ``like`` (a jagged tensor the components were computed from) decides the ragged dimension
    when no size differs, and lends its offsets (and so its ``jN``) when the lengths are its.
    ``ragged_axis`` insists on the component dimension that may differ (the constructors').
    """
    shapes = [tuple(t.shape) for t in tensors]
    ndim = len(shapes[0])
    differing = [d for d in range(ndim) if len({s[d] for s in shapes}) > 1]
    if len(differing) > 1 or (ragged_axis is not None and differing not in ([], [ragged_axis])):
        raise RuntimeError(CANNOT_REPRESENT)
    if differing:
        axis = differing[0]
    elif ragged_axis is not None:
        axis = ragged_axis
    elif like is not None and like._ragged_idx - 1 < ndim:
        axis = like._ragged_idx - 1
    else:
        axis = 0
    values = ember.cat(list(tensors), dim=axis)
    lengths = [s[axis] for s in shapes]
    if (
        like is not None
        and like._lengths is None
        and axis == like._ragged_idx - 1
        and lengths == [n for _, n in like._bounds]
    ):
        return make_jagged(values, like._offsets, None, axis + 1, like._bounds, like._ragged_size)
    return make_jagged(values, offsets_of(lengths, values.device), None, axis + 1)


def from_list_like(nt, tensors):
    """Components computed from ``nt``'s, packed in ``nt``'s layout."""
    if nt.layout == "jagged":
        return jagged_from_list(tensors, like=nt)
    return strided_from_list(tensors, nt.dim())
