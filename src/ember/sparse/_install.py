"""The one hook into the rest of ember: ``install()`` gives dense tensors their side of the
sparse API and names the sparse functions in the ``ember`` namespace. Dense ops stay as they
are; nothing here runs per op."""

from __future__ import annotations

from .. import _backend
from .._tensor import Tensor
from . import _convert, _matmul
from ._construct import sparse_coo_tensor
from ._layout import sparse_coo, strided
from ._storage import KERNELS, SparseStorage


def _is_coalesced_of_dense(self):
    raise RuntimeError("is_coalesced expected sparse coordinate tensor layout but got Strided")


def _nnz_of_dense(self):
    raise NotImplementedError(
        "Could not run 'aten::_nnz' with arguments from the 'CPU' backend: _nnz() needs a "
        "sparse tensor"
    )


def install() -> None:
    """Attach the sparse API to ``ember.Tensor`` and the ``ember`` namespace (idempotent)."""
    import ember

    T = Tensor
    T.to_dense = _convert.to_dense
    T.to_sparse = _convert.to_sparse
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
    T.layout = property(lambda self: strided)
    # a sparse tensor's data answers array_module with its own kernels: matmul, and clear
    # errors for everything else
    _backend._MODULE_OF_TYPE[SparseStorage] = KERNELS
    for name, value in {
        "sparse_coo_tensor": sparse_coo_tensor,
        "sparse_coo": sparse_coo,
        "strided": strided,
        "spmm": _matmul.spmm,
        "smm": _matmul.smm,
        "hspmm": _matmul.hspmm,
    }.items():
        setattr(ember, name, value)
