"""Arithmetic on sparse tensors: ``+``/``-`` of two sparse tensors (sparse), dense + sparse
(dense), and ``*``, ``/``, unary ``-`` by a scalar (sparse, same pattern)."""

from __future__ import annotations

import numpy as np

from .. import _backend
from .._tensor import Tensor
from ..autograd.node import Node
from ..ops._dispatch import wrap
from ._graph import record
from ._storage import coalesce_arrays, dense_array, unsupported
from ._tensor import SparseTensor, make_sparse

_DENSE_FIRST = "add(sparse, dense) is not supported. Use add(dense, sparse) instead."


# These formulas pass the incoming gradient on with its own pattern, as PyTorch does: only
# ops that leave the sparse world (to_dense, products, sums) restrict it to an input's pattern.
class AddBackward0(Node):
    """a + alpha * b: the gradients are g and alpha * g."""

    def backward(self, g):
        a = g if self.needs(0) else None
        b = None
        if self.needs(1):
            b = g if self.alpha == 1 else g * self.alpha
        return a, b


class SubBackward0(AddBackward0):
    pass


def add(self: SparseTensor, other, *, alpha=1) -> Tensor:
    """sparse + sparse is sparse; sparse + dense is dense.

    PyTorch refuses sparse + dense ("Use add(dense, sparse) instead"); ember computes it
    because its autograd engine sums the gradients reaching a tensor with ``+`` in the order
    they arrive, and a sparse leaf used by both ``to_dense()`` and ``mm`` receives a sparse and
    a dense one. A Python number still raises PyTorch's error.
    """
    if isinstance(other, SparseTensor):
        return _add_sparse(self, other, alpha, AddBackward0)
    if isinstance(other, Tensor):
        return _dense_plus_sparse(other, self, alpha, AddBackward0, sparse_first=True)
    raise RuntimeError(_DENSE_FIRST)


def sub(self: SparseTensor, other, *, alpha=1) -> Tensor:
    if isinstance(other, SparseTensor):
        return _add_sparse(self, other, -alpha, SubBackward0)
    if isinstance(other, Tensor):
        return _dense_plus_sparse(other, self, -alpha, SubBackward0, sparse_first=True)
    raise RuntimeError(_DENSE_FIRST.replace("add", "sub"))


def _add_sparse(a: SparseTensor, b: SparseTensor, alpha, node_cls) -> SparseTensor:
    sa, sb = a._data, b._data
    if sa.shape != sb.shape:
        raise RuntimeError(
            f"add: expected sizes of 'self' and 'other' to match, but {list(sa.shape)} != "
            f"{list(sb.shape)}"
        )
    if sa.sparse_dim != sb.sparse_dim:
        raise RuntimeError(
            f"add: expected 'self' and 'other' to have same sparse dimensions, but got "
            f"{sa.sparse_dim} and {sb.sparse_dim}"
        )
    xp = _backend.array_module(sa.values)
    dtype = np.result_type(sa.values.dtype, sb.values.dtype)
    va = sa.values.astype(dtype, copy=False)
    vb = sb.values.astype(dtype, copy=False)
    if alpha != 1:
        vb = vb * alpha
    if sa.nnz == sb.nnz and bool((sa.indices == sb.indices).all()):
        # the same pattern (PyTorch's fast path): add the values in place of concatenating
        out = make_sparse(sa.indices, va + vb, sa.shape, sa.coalesced)
    else:
        indices = xp.concatenate([sa.indices, sb.indices], axis=1)
        values = xp.concatenate([va, vb], axis=0)
        coalesced = sa.coalesced and sb.coalesced
        if coalesced:  # two coalesced operands merge into a coalesced result (as PyTorch)
            indices, values = coalesce_arrays(indices, values, sa.shape)
        elif sb.nnz == 0 or sa.nnz == 0:
            coalesced = (sa if sb.nnz == 0 else sb).coalesced
        out = make_sparse(indices, values, sa.shape, coalesced)
    return record(node_cls, out, (a, b), alpha=alpha)


def _dense_plus_sparse(dense, sparse, alpha, node_cls, sparse_first=False) -> Tensor:
    """dense + alpha * sparse (or sparse + alpha * dense): a dense result whose gradients are
    both dense, as in PyTorch."""
    if tuple(dense.shape) != tuple(sparse.shape):
        raise RuntimeError(
            f"add: expected 'self' and 'other' to have same size, but self has size "
            f"{list(dense.shape)} while other has size {list(sparse.shape)} (ember adds a "
            "sparse tensor only to a dense tensor of its size)"
        )
    part = dense_array(sparse._data)
    if sparse_first:  # sparse + alpha * dense
        scaled = dense._data if alpha == 1 else dense._data * alpha
        out = wrap(part + scaled)
        return record(node_cls, out, (sparse, dense), alpha=alpha)
    out = wrap(dense._data + (part if alpha == 1 else part * alpha))
    return record(node_cls, out, (dense, sparse), alpha=alpha)


def radd(self: SparseTensor, other) -> Tensor:
    if isinstance(other, Tensor) and not isinstance(other, SparseTensor):
        return _dense_plus_sparse(other, self, 1, AddBackward0)
    raise RuntimeError(_DENSE_FIRST)


def rsub(self: SparseTensor, other) -> Tensor:
    if isinstance(other, Tensor) and not isinstance(other, SparseTensor):
        return _dense_plus_sparse(other, self, -1, SubBackward0)
    raise RuntimeError(_DENSE_FIRST.replace("add", "sub"))


class MulBackward0(Node):
    def backward(self, g):
        return g * self.factor


class DivBackward0(Node):
    def backward(self, g):
        return g / self.divisor


class NegBackward0(Node):
    def backward(self, g):
        return -g


def _scalar(other, op: str):
    if isinstance(other, SparseTensor):
        raise unsupported(f"{op} of two sparse tensors")
    if isinstance(other, Tensor):
        if other._data.ndim != 0:
            raise unsupported(f"{op} of a sparse tensor by a non-scalar dense tensor")
        return other.item()
    if isinstance(other, (int, float, bool, complex)):
        return other
    return NotImplemented


def _scaled(self: SparseTensor, values, node_cls, **attrs) -> SparseTensor:
    storage = self._data
    out = make_sparse(storage.indices, values, storage.shape, storage.coalesced)
    return record(node_cls, out, (self,), **attrs)


def mul(self: SparseTensor, other) -> SparseTensor:
    """sparse * scalar: the same pattern with scaled values."""
    factor = _scalar(other, "mul")
    if factor is NotImplemented:
        return NotImplemented
    return _scaled(self, self._data.values * factor, MulBackward0, factor=factor)


def div(self: SparseTensor, other, *, rounding_mode=None) -> SparseTensor:
    divisor = _scalar(other, "div")
    if divisor is NotImplemented:
        return NotImplemented
    if rounding_mode is not None:
        raise unsupported(f"div with rounding_mode={rounding_mode!r}")
    values = self._data.values
    if values.dtype.kind in "biu":
        from .. import _dtype as dt

        values = values.astype(dt.get_default_dtype().np)
    return _scaled(self, values / divisor, DivBackward0, divisor=divisor)


def neg(self: SparseTensor) -> SparseTensor:
    return _scaled(self, -self._data.values, NegBackward0)
