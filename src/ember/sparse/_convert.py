"""Conversions and views of COO data: ``to_dense``, ``to_sparse``, ``coalesce``, ``values``,
``indices``, ``transpose``/``t``, ``to``; each differentiable as in PyTorch."""

from __future__ import annotations

from .. import _backend
from .. import _dtype as dt
from .._tensor import Tensor, _wrap_dim
from ..autograd.node import Node
from ..ops._dispatch import wrap
from ._graph import coalesced_indices, from_values, record, sparse_mask
from ._layout import sparse_coo
from ._storage import coalesce_arrays, dense_array
from ._tensor import SparseTensor, make_sparse


def _not_sparse(op: str, what: str = "sparse coordinate tensor") -> RuntimeError:
    return RuntimeError(f"{op} expected {what} layout but got Strided")


# --- sparse -> dense ------------------------------------------------------------------------
class ToDenseBackward0(Node):
    """to_dense: the gradient of the sparse input is the dense gradient at its pattern
    (``masked_grad=False``: every nonzero of the dense gradient)."""

    def backward(self, g):
        storage = self.storage
        if not self.masked:
            return to_sparse(g)
        return sparse_mask(g, coalesced_indices(storage), storage.shape)


def to_dense(self: Tensor, dtype=None, *, masked_grad=None) -> Tensor:
    """The dense tensor a sparse one stands for (duplicates summed); dense tensors return
    themselves. ``masked_grad`` (default True) keeps the gradient on the input's pattern.

    Example::
        >>> ember.sparse_coo_tensor([[0, 1]], [2.0, 3.0], (3,)).to_dense()
        tensor([2., 3., 0.])
    """
    if not isinstance(self, SparseTensor):
        return self if dtype is None else self.to(dtype)
    if dtype is not None:
        raise RuntimeError("dtype argument is not supported by sparse_to_dense")
    out = wrap(dense_array(self._data))
    masked = masked_grad is None or bool(masked_grad)
    return record(ToDenseBackward0, out, (self,), storage=self._data, masked=masked)


# --- dense -> sparse ------------------------------------------------------------------------
class ToSparseBackward0(Node):
    """to_sparse(sparse_dim): the dense input's gradient is the sparse gradient made dense."""

    def backward(self, g):
        return g.to_dense() if isinstance(g, SparseTensor) else g


class ToSparseBackward1(ToSparseBackward0):
    """to_sparse() without sparse_dim (PyTorch's other overload, hence the other name)."""


def to_sparse(self: Tensor, sparse_dim=None, *, layout=None, blocksize=None, dense_dim=None):
    """A COO tensor holding the nonzero entries (or nonzero slices, with ``sparse_dim``).

    Example::
        >>> ember.tensor([[0.0, 2.0], [3.0, 0.0]]).to_sparse()._nnz()
        2
    """
    if layout is not None and layout != sparse_coo:
        raise NotImplementedError(f"to_sparse: layout {layout!r} is not supported by ember")
    if isinstance(self, SparseTensor):
        if sparse_dim is not None and sparse_dim != self.sparse_dim():
            raise RuntimeError(
                "to_sparse: conversion from Sparse to Sparse with sparse_dim argument "
                "!=self.sparse_dim() is not supported"
            )
        return self
    data = self._data
    ndim = data.ndim
    node_cls = ToSparseBackward1 if sparse_dim is None else ToSparseBackward0
    if sparse_dim is None:
        sparse_dim = ndim - (dense_dim or 0)
    if not 0 <= sparse_dim <= ndim:
        raise RuntimeError(
            f"dense_to_sparse: sparse_dim argument must be in [0,{ndim}] range, but "
            f"{sparse_dim} is given"
        )
    xp = _backend.array_module(data)
    nonzero = data != 0
    if sparse_dim < ndim:
        nonzero = nonzero.any(axis=tuple(range(sparse_dim, ndim)))
    if sparse_dim == 0:
        indices = xp.zeros((0, 1), dtype=xp.int64)
        values = data[None]
    else:
        indices = xp.stack(xp.nonzero(nonzero)).astype(xp.int64).reshape(sparse_dim, -1)
        values = data[tuple(indices)]
    out = make_sparse(indices, values, data.shape, coalesced=True)
    return record(node_cls, out, (self,))


def to_sparse_coo(self: Tensor) -> SparseTensor:
    return to_sparse(self)


# --- coalescing -----------------------------------------------------------------------------
class CoalesceBackward0(Node):
    """coalesce: the input's gradient is the output's (both stand for the same dense tensor)."""

    def backward(self, g):
        return g


def coalesce(self: Tensor) -> SparseTensor:
    """Sort the indices and sum the values of duplicates; a coalesced tensor returns itself.

    Example::
        >>> s = ember.sparse_coo_tensor([[1, 0, 1]], [1.0, 2.0, 3.0], (2,)).coalesce()
        >>> s.values()
        tensor([2., 4.])
    """
    if not isinstance(self, SparseTensor):
        raise _not_sparse("coalesce")
    storage = self._data
    if storage.coalesced:
        return self
    indices, values = coalesce_arrays(storage.indices, storage.values, storage.shape)
    out = make_sparse(indices, values, storage.shape, coalesced=True)
    return record(CoalesceBackward0, out, (self,))


# --- indices and values ----------------------------------------------------------------------
class ValuesBackward0(Node):
    """values() of a coalesced tensor: its gradient is sparse with the same indices."""

    def backward(self, g):
        storage = self.storage
        return from_values(storage.indices, g, storage.shape, coalesced=True)


def _indices(self: Tensor) -> Tensor:
    if not isinstance(self, SparseTensor):
        raise _not_sparse("_indices")
    return wrap(self._data.indices)


def indices(self: Tensor) -> Tensor:
    """The (sparse_dim, nnz) int64 indices of a coalesced sparse tensor."""
    if not isinstance(self, SparseTensor):
        raise _not_sparse("indices")
    if not self._data.coalesced:
        raise RuntimeError(
            "Cannot get indices on an uncoalesced tensor, please call .coalesce() first"
        )
    return wrap(self._data.indices)


def _values(self: Tensor) -> Tensor:
    if not isinstance(self, SparseTensor):
        raise _not_sparse("_values", "sparse tensor")
    return wrap(self._data.values)


def values(self: Tensor) -> Tensor:
    """The (nnz, *dense_shape) values of a coalesced sparse tensor; differentiable."""
    if not isinstance(self, SparseTensor):
        raise _not_sparse("values", "sparse tensor")
    if not self._data.coalesced:
        raise RuntimeError(
            "Cannot get values on an uncoalesced tensor, please call .coalesce() first"
        )
    return record(ValuesBackward0, wrap(self._data.values), (self,), storage=self._data)


# --- transpose and conversions --------------------------------------------------------------
class TransposeBackward0(Node):
    def backward(self, g):
        return g.transpose(self.dim0, self.dim1)


def transpose(self: SparseTensor, dim0: int, dim1: int, node_cls=None) -> SparseTensor:
    """Swap two sparse dims (swapping a dense dim is not supported)."""
    storage = self._data
    n = storage.ndim
    dim0, dim1 = _wrap_dim(dim0, n, "transpose"), _wrap_dim(dim1, n, "transpose")
    sparse_dim = storage.sparse_dim
    if dim0 != dim1 and (dim0 >= sparse_dim or dim1 >= sparse_dim):
        raise NotImplementedError(
            "transpose: ember swaps only two sparse dims of a sparse tensor "
            f"(sparse_dim={sparse_dim}, got dims {dim0} and {dim1})"
        )
    order = list(range(sparse_dim))
    order[dim0], order[dim1] = order[dim1], order[dim0]
    shape = list(storage.shape)
    shape[dim0], shape[dim1] = shape[dim1], shape[dim0]
    same = dim0 == dim1
    out = make_sparse(
        storage.indices[order], storage.values, tuple(shape), storage.coalesced and same
    )
    node_cls = node_cls or TransposeBackward0
    return record(node_cls, out, (self,), dim0=dim0, dim1=dim1)


class TBackward0(TransposeBackward0):
    pass


def t(self: SparseTensor) -> SparseTensor:
    if self._data.ndim > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {self.dim()}D")
    if self._data.ndim < 2:
        return self
    return transpose(self, 0, 1, TBackward0)


class ToCopyBackward0(Node):
    def backward(self, g):
        return g.to(dtype=self.dtype, device=self.device)


def to(self: SparseTensor, *args, **kwargs) -> SparseTensor:
    """``to(dtype)``, ``to(device)``, ... on the values; the indices follow the device."""
    moved = Tensor.to(wrap(self._data.values), *args, **kwargs)
    if moved._data is self._data.values:
        return self
    storage = self._data
    index_data = storage.indices
    if type(index_data) is not type(moved._data):
        index_data = _backend.move(index_data, moved.device)
    out = make_sparse(index_data, moved._data, storage.shape, storage.coalesced)
    if moved.dtype.category < dt.FLOAT:
        return out
    return record(ToCopyBackward0, out, (self,), dtype=self.dtype, device=self.device)


def clone(self: SparseTensor, *, memory_format=None) -> SparseTensor:
    storage = self._data
    out = make_sparse(
        storage.indices.copy(), storage.values.copy(), storage.shape, storage.coalesced
    )
    return record(CloneBackward0, out, (self,))


class CloneBackward0(Node):
    def backward(self, g):
        return g
