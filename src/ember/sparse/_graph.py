"""Recording sparse ops in the autograd graph, and the two helpers every sparse backward
formula uses.

PyTorch's convention, kept here: the gradient with respect to a sparse tensor is a sparse
tensor with that tensor's (coalesced) pattern, holding the gradient of the dense value at each
stored position (``sparse_mask``). The gradient with respect to a dense tensor is dense.
"""

from __future__ import annotations

from .._tensor import Tensor
from ..autograd import grad_mode as _gm
from ..autograd.node import Node
from ..ops._dispatch import _edge_of, wrap
from ._storage import coalesce_arrays, lookup
from ._tensor import SparseTensor, make_sparse


def record(node_cls, out: Tensor, inputs: tuple, **attrs) -> Tensor:
    """Make ``out`` the output of a new ``node_cls`` node when grad mode is on and some input
    requires grad; ``attrs`` become the node's fields (what its formula needs)."""
    if not _gm.state.enabled:
        return out
    edges = tuple(
        None if t is None or not isinstance(t, Tensor) or not t._rg else _edge_of(t) for t in inputs
    )
    if all(e is None for e in edges):
        return out
    node = node_cls()
    node._edges = edges
    for name, value in attrs.items():
        setattr(node, name, value)
    out._rg = True
    out._grad_fn = node
    node._meta = ((out._data.shape, out._data.dtype),)
    return out


def coalesced_indices(storage):
    """The sorted unique indices of a storage (its own when already coalesced)."""
    if storage.coalesced:
        return storage.indices
    return coalesce_arrays(storage.indices, storage.values, storage.shape)[0]


def values_at(g: Tensor, indices, shape: tuple) -> Tensor:
    """The values of ``g`` (dense, or sparse with duplicates summed) at the index columns
    ``indices``; differentiable when the backward pass builds a graph (create_graph)."""
    if _gm.state.enabled:  # create_graph: compose differentiable ops
        dense = g.to_dense() if isinstance(g, SparseTensor) else g
        key = tuple(wrap(row) for row in indices)
        return dense[key]
    if not isinstance(g, SparseTensor):
        return wrap(g._data[tuple(indices)])
    storage = g._data
    g_indices, g_values = storage.indices, storage.values
    if not storage.coalesced:
        g_indices, g_values = coalesce_arrays(g_indices, g_values, storage.shape)
    return wrap(lookup(g_indices, g_values, shape, indices))


def sparse_mask(g: Tensor, indices, shape: tuple) -> SparseTensor:
    """``g`` restricted to the coalesced pattern ``indices``: the gradient of a sparse input."""
    values = values_at(g, indices, shape)
    return from_values(indices, values, shape, coalesced=True)


class SparseCooTensorWithDimsAndTensorsBackward0(Node):
    """sparse_coo_tensor(indices, values): d/dvalues = the gradient at each stored index."""

    def backward(self, g):
        return values_at(g, self.indices, self.shape)


def from_values(
    indices, values: Tensor, shape: tuple, coalesced: bool, node_cls=None
) -> SparseTensor:
    """A sparse tensor whose values are the tensor ``values`` (gradients flow back to it);
    ``node_cls``, a subclass of SparseCooTensorWithDimsAndTensorsBackward0, names the op."""
    out = make_sparse(indices, values._data, shape, coalesced)
    node_cls = node_cls or SparseCooTensorWithDimsAndTensorsBackward0
    return record(node_cls, out, (values,), indices=indices, shape=shape)
