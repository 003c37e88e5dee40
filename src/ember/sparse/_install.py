"""The one hook into the rest of ember: ``install(namespace)`` gives dense tensors their side
of the sparse API, gives the layers below what they build sparse data with, and names the
sparse functions in the ``ember`` namespace it is handed (the root's ``globals()``: nothing
here imports the root package, which sits above every layer). Dense ops stay as they are;
nothing here runs per op."""

from __future__ import annotations

from operator import attrgetter

from .. import _backend
from .._tensor import Tensor
from ..autograd import engine as _engine
from ..ops import embedding as _embedding
from . import _compressed, _convert, _graph, _matmul
from ._construct import sparse_coo_tensor
from ._layout import sparse_bsc, sparse_bsr, sparse_coo, sparse_csc, sparse_csr, strided
from ._storage import KERNELS, SparseStorage


def _is_coalesced_of_dense(self):
    raise RuntimeError("is_coalesced expected sparse coordinate tensor layout but got Strided")


def _nnz_of_dense(self):
    raise NotImplementedError(
        "Could not run 'aten::_nnz' with arguments from the 'CPU' backend: _nnz() needs a "
        "sparse tensor"
    )


def _to_sparse(self, sparse_dim=None, *, layout=None, blocksize=None, dense_dim=None):
    """``to_sparse(layout=ember.sparse_csr, ...)`` reaches the compressed layouts; COO else."""
    if layout in _compressed.COMPRESSED:
        if sparse_dim is not None:
            raise RuntimeError("to_sparse: sparse_dim is not supported for compressed layouts")
        return _compressed.to_compressed(self, layout, blocksize, dense_dim)
    return _convert.to_sparse(
        self, sparse_dim, layout=layout, blocksize=blocksize, dense_dim=dense_dim
    )


def install(namespace: dict | None = None) -> None:
    """Attach the sparse API to ``ember.Tensor`` and to ``namespace`` (a namespace's globals;
    ``ember`` names these functions on first use instead); idempotent. ``ember.sparse`` runs
    it at import, so the first sparse name a program reads installs it."""
    T = Tensor
    T.to_dense = _convert.to_dense
    T.to_sparse = _to_sparse
    T.to_sparse_coo = _convert.to_sparse_coo
    T.coalesce = _convert.coalesce
    T.indices = _convert.indices
    T._indices = _convert._indices
    T.values = _convert.values
    T._values = _convert._values
    T.is_coalesced = _is_coalesced_of_dense
    T._nnz = _nnz_of_dense
    T.sparse_dim = lambda self: 0
    T.dense_dim = lambda self: self._data.ndim
    T.to_sparse_csr = _compressed.to_sparse_csr
    T.to_sparse_csc = _compressed.to_sparse_csc
    T.to_sparse_bsr = _compressed.to_sparse_bsr
    T.to_sparse_bsc = _compressed.to_sparse_bsc
    T.is_sparse_csr = False
    # a sparse tensor's data answers array_module with its own kernels: matmul, and clear
    # errors for everything else
    _backend._MODULE_OF_TYPE[SparseStorage] = KERNELS
    # a leaf takes a fresh sparse gradient as it is when nothing else holds its values
    _engine.TAKEABLE_DATA[SparseStorage] = attrgetter("values")
    _embedding.sparse_coo_from_values = _graph.from_values  # embedding(sparse=True)'s gradient
    if namespace is None:
        return
    for name, value in {
        "sparse_coo_tensor": sparse_coo_tensor,
        "sparse_coo": sparse_coo,
        "sparse_csr": sparse_csr,
        "sparse_csc": sparse_csc,
        "sparse_bsr": sparse_bsr,
        "sparse_bsc": sparse_bsc,
        "sparse_compressed_tensor": _compressed.sparse_compressed_tensor,
        "sparse_csr_tensor": _compressed.sparse_csr_tensor,
        "sparse_csc_tensor": _compressed.sparse_csc_tensor,
        "sparse_bsr_tensor": _compressed.sparse_bsr_tensor,
        "sparse_bsc_tensor": _compressed.sparse_bsc_tensor,
        "strided": strided,
        "spmm": _matmul.spmm,
        "smm": _matmul.smm,
        "hspmm": _matmul.hspmm,
    }.items():
        namespace[name] = value
