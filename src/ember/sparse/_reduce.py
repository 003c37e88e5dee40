"""Reductions over sparse tensors: ``ember.sparse.sum``, ``softmax`` and ``log_softmax``
(over the stored entries only: missing entries count as -inf, as in PyTorch)."""

from __future__ import annotations

from .. import _backend
from .._tensor import Tensor, _wrap_dim
from ..autograd.node import Node
from ..ops._dispatch import wrap
from ._convert import _not_sparse
from ._graph import (
    SparseCooTensorWithDimsAndTensorsBackward0,
    coalesced_indices,
    from_values,
    record,
    values_at,
)
from ._storage import coalesce_arrays, linear_index
from ._tensor import SparseTensor, make_sparse


class SumBackward0(Node):
    """sum of every element: each stored position gets the (scalar) gradient."""

    def backward(self, g):
        storage = self.storage
        pattern = coalesced_indices(storage)
        shape = (pattern.shape[1],) + storage.values.shape[1:]
        return from_values(pattern, g.expand(shape), storage.shape, coalesced=True)


class SparseSumBackward0(Node):
    """sum over ``dim``: each stored position gets the gradient at the position it was summed
    into, on the input's coalesced pattern."""

    def backward(self, g):
        storage = self.storage
        pattern = coalesced_indices(storage)
        nnz = pattern.shape[1]
        if self.keep:
            values = values_at(g, pattern[self.keep], tuple(g.shape))
        else:  # every sparse dim was summed: g is dense over the kept dense dims
            dense = g.to_dense() if isinstance(g, SparseTensor) else g
            values = dense.unsqueeze(0).expand((nnz,) + tuple(dense.shape))
        for axis in self.dense_axes:  # ascending: each lands where it was summed
            values = values.unsqueeze(axis)
        values = values.expand((nnz,) + tuple(storage.values.shape[1:]))
        return from_values(pattern, values, storage.shape, coalesced=True)


class SparseSoftmaxBackward0(SparseCooTensorWithDimsAndTensorsBackward0):
    pass


class SparseLogSoftmaxBackward0(SparseCooTensorWithDimsAndTensorsBackward0):
    pass


def _dims(dim, ndim: int) -> list:
    if dim is None:
        return list(range(ndim))
    dims = [dim] if isinstance(dim, int) else list(dim)
    return sorted({_wrap_dim(d, ndim, "sum") for d in dims})


def sum(input: Tensor, dim=None, dtype=None) -> Tensor:  # noqa: A001 - PyTorch's name
    """Sum a sparse tensor over ``dim`` (all dims by default): a dense scalar when every dim
    is summed, a dense tensor when every sparse dim is, else a sparse tensor.

    Example::
        >>> s = ember.sparse_coo_tensor([[0, 1, 1], [2, 0, 2]], [3.0, 4.0, 5.0], (2, 3))
        >>> ember.sparse.sum(s)
        tensor(12.)
        >>> ember.sparse.sum(s, 1).to_dense()
        tensor([3., 9.])
    """
    if not isinstance(input, SparseTensor):
        raise _not_sparse("coalesce")
    if dtype is not None:
        input = input.to(dtype)
    storage = input._data
    if dim is None:  # every dim: a dense scalar
        out = wrap(storage.values.sum())
        return record(SumBackward0, out, (input,), storage=storage)
    dims = _dims(dim, storage.ndim)
    sparse_dim = storage.sparse_dim
    keep = [d for d in range(sparse_dim) if d not in dims]
    dense_axes = tuple(d - sparse_dim + 1 for d in dims if d >= sparse_dim)
    indices, values = storage.indices, storage.values
    if dense_axes:
        values = values.sum(dense_axes)
    if not keep:  # every sparse dim summed: a dense result
        out = wrap(values.sum(0))
    else:
        shape = tuple(s for d, s in enumerate(storage.shape) if d not in dims)
        kept, values = coalesce_arrays(indices[keep], values, shape)
        out = make_sparse(kept, values, shape, coalesced=True)
    return record(
        SparseSumBackward0, out, (input,), storage=storage, keep=keep, dense_axes=dense_axes
    )


def _groups(storage, dim: int):
    """For each stored entry, the number of its line along sparse ``dim`` (entries agreeing on
    every other sparse index), and the number of lines."""
    xp = _backend.array_module(storage.values)
    others = [d for d in range(storage.sparse_dim) if d != dim]
    if not others:
        return xp.zeros(storage.nnz, dtype=xp.int64), 1
    shape = tuple(storage.shape[d] for d in others)
    lin = linear_index(xp, storage.indices[others], shape)
    unique, inverse = xp.unique(lin, return_inverse=True)
    return inverse.reshape(-1), int(unique.shape[0])


def _softmax(input: SparseTensor, dim: int, dtype, log: bool) -> SparseTensor:
    name = "log_softmax" if log else "softmax"
    node_cls = SparseLogSoftmaxBackward0 if log else SparseSoftmaxBackward0
    if not isinstance(input, SparseTensor):
        raise _not_sparse(name)
    if dtype is not None:
        input = input.to(dtype)
    source = input.coalesce()
    storage = source._data
    dim = _wrap_dim(dim, storage.ndim, name)
    values = source.values()
    if dim >= storage.sparse_dim:  # along a dense dim: an ordinary softmax of the values
        axis = dim - storage.sparse_dim + 1
        out = values.log_softmax(axis) if log else values.softmax(axis)
        return from_values(storage.indices, out, storage.shape, coalesced=True, node_cls=node_cls)
    from .._creation import zeros

    group, count = _groups(storage, dim)
    group = wrap(group)
    line_shape = (count,) + tuple(values.shape[1:])
    # the largest value of each line, kept out of the graph: only for stability
    peak = zeros(line_shape, dtype=values.dtype).scatter_reduce(
        0, _expand_index(group, values), values.detach(), "amax", include_self=False
    )
    shifted = values - peak[group]
    exp = shifted.exp()
    total = zeros(line_shape, dtype=values.dtype).index_add(0, group, exp)
    if log:
        out = shifted - total.log()[group]
    else:
        out = exp / total[group]
    return from_values(storage.indices, out, storage.shape, coalesced=True, node_cls=node_cls)


def _expand_index(group: Tensor, values: Tensor) -> Tensor:
    if values.ndim == 1:
        return group
    return group.reshape((-1,) + (1,) * (values.ndim - 1)).expand(tuple(values.shape))


def softmax(input: SparseTensor, dim: int, *, dtype=None) -> SparseTensor:
    """Softmax over the stored entries along ``dim`` (unstored entries stay unstored).

    Example::
        >>> s = ember.sparse_coo_tensor([[0, 0], [0, 2]], [1.0, 1.0], (1, 3))
        >>> ember.sparse.softmax(s, 1).to_dense()
        tensor([[0.5000, 0.0000, 0.5000]])
    """
    return _softmax(input, dim, dtype, log=False)


def log_softmax(input: SparseTensor, dim: int, *, dtype=None) -> SparseTensor:
    """Log-softmax over the stored entries along ``dim``."""
    return _softmax(input, dim, dtype, log=True)
