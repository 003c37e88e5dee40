"""``ember.sparse``: sparse COO tensors, and 2-D compressed ones (CSR, CSC, BSR, BSC), with
PyTorch's API.

Build one with ``ember.sparse_coo_tensor(indices, values, size)`` or ``dense.to_sparse()``;
``to_dense()``, ``coalesce()``, ``indices()``, ``values()``, ``+``, ``*`` by a scalar,
``ember.mm``/``@`` with a dense matrix and the functions here are differentiable. Dense ops
without a sparse kernel raise ``NotImplementedError`` naming the kernel.

Example::
    >>> s = ember.sparse_coo_tensor([[0, 1], [1, 0]], [2.0, 3.0], (2, 2), requires_grad=True)
    >>> ember.sparse.mm(s, ember.ones(2, 1)).sum().backward()
    >>> s.grad.to_dense()
    tensor([[0., 1.],
            [1., 0.]])
"""

from __future__ import annotations

from . import _methods  # noqa: F401 - attaches SparseTensor's op methods
from ._compressed import (
    SparseCompressedTensor,
    sparse_bsc_tensor,
    sparse_bsr_tensor,
    sparse_compressed_tensor,
    sparse_csc_tensor,
    sparse_csr_tensor,
)
from ._compressed_matmul import sampled_addmm
from ._construct import check_sparse_tensor_invariants, sparse_coo_tensor
from ._install import install
from ._layout import layout, sparse_bsc, sparse_bsr, sparse_coo, sparse_csc, sparse_csr, strided
from ._matmul import addmm, hspmm, mm, smm, spmm
from ._reduce import log_softmax, softmax, sum
from ._tensor import SparseTensor

__all__ = [
    "SparseCompressedTensor",
    "SparseTensor",
    "addmm",
    "check_sparse_tensor_invariants",
    "hspmm",
    "install",
    "layout",
    "log_softmax",
    "mm",
    "sampled_addmm",
    "smm",
    "softmax",
    "sparse_bsc",
    "sparse_bsc_tensor",
    "sparse_bsr",
    "sparse_bsr_tensor",
    "sparse_compressed_tensor",
    "sparse_coo",
    "sparse_coo_tensor",
    "sparse_csc",
    "sparse_csc_tensor",
    "sparse_csr",
    "sparse_csr_tensor",
    "spmm",
    "strided",
    "sum",
]

install()  # dense tensors' side of the sparse API, and the hooks below, on first import
