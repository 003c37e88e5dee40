"""Products of a sparse matrix with a dense one: ``ember.sparse.mm``/``addmm`` (gradient of the
sparse operand sparse, on its pattern), and ``spmm``, ``smm``, ``hspmm``.

``ember.mm(sparse, dense)`` and ``sparse @ dense`` need nothing here: the dense op's
``xp.matmul`` reaches the storage's kernel and its MmBackward0 gives the sparse operand a dense
gradient, which is what PyTorch does too.
"""

from __future__ import annotations

from .. import _backend
from .._tensor import Tensor
from ..autograd import grad_mode as _gm
from ..autograd.node import Node
from ..ops._dispatch import wrap
from ._compressed_matmul import mm_reduce
from ._graph import coalesced_indices, from_values, record
from ._storage import spmm_arrays, unsupported
from ._tensor import SparseTensor

_TYPE_NAMES = {"float32": "Float", "float64": "Double", "float16": "Half", "int64": "Long"}


def _type_name(dtype) -> str:
    return _TYPE_NAMES.get(str(dtype), str(dtype))


class SparseAddmmBackward0(Node):
    """beta * input + alpha * (S @ D): d input = beta g, dS = alpha (g D^T) on S's pattern,
    dD = alpha S^T g."""

    def backward(self, g):
        beta, alpha, sparse, dense = self.beta, self.alpha, self.sparse, self.dense
        g_input = g_sparse = g_dense = None
        if self.needs(0):
            g_input = g if beta == 1 else g * beta
        if self.needs(1):
            storage = sparse._data
            pattern = coalesced_indices(storage)
            rows, cols = wrap(pattern[0]), wrap(pattern[1])
            values = (g[rows] * dense[cols]).sum(-1)  # (g D^T)[r, c] at each stored (r, c)
            if alpha != 1:
                values = values * alpha
            g_sparse = from_values(pattern, values, storage.shape, coalesced=True)
        if self.needs(2):
            g_dense = sparse.t() @ g
            if alpha != 1:
                g_dense = g_dense * alpha
        return g_input, g_sparse, g_dense


def _check(sparse: SparseTensor, dense: Tensor) -> None:
    s = sparse._data
    if s.ndim != 2 or s.sparse_dim != 2:
        raise RuntimeError(
            f"addmm: matrices expected, got {s.sparse_dim} sparse dims and "
            f"{s.ndim - s.sparse_dim} dense dims"
        )
    if isinstance(dense, SparseTensor):
        raise unsupported("sparse.mm of two sparse tensors")
    d = dense._data
    if d.ndim != 2:
        raise RuntimeError(f"addmm: matrices expected, got {d.ndim}D tensor")
    if d.shape[0] != s.shape[1]:
        raise RuntimeError(
            f"addmm: Argument #3 (dense): Expected dim 0 size {s.shape[1]}, got {d.shape[0]}"
        )
    if d.dtype != s.dtype:
        raise RuntimeError(
            f"expected scalar type {_type_name(s.dtype)} but found {_type_name(d.dtype)}"
        )


def addmm(input: Tensor, mat1: Tensor, mat2: Tensor, *, beta=1.0, alpha=1.0) -> Tensor:
    """``beta * input + alpha * (mat1 @ mat2)`` for a sparse ``mat1`` and dense ``input``,
    ``mat2``; the gradient of ``mat1`` is sparse with ``mat1``'s pattern.

    Example::
        >>> s = ember.sparse_coo_tensor([[0, 1], [1, 0]], [2.0, 3.0], (2, 2))
        >>> ember.sparse.addmm(ember.ones(2, 2), s, ember.eye(2))
        tensor([[1., 3.],
                [4., 1.]])
    """
    if not isinstance(mat1, SparseTensor):
        from ..ops.linalg import addmm as dense_addmm

        return dense_addmm(input, mat1, mat2, beta=beta, alpha=alpha)
    _check(mat1, mat2)
    storage = mat1._data
    product = spmm_arrays(storage.indices, storage.values, storage.shape, mat2._data)
    if alpha != 1:
        product = product * alpha
    if input is not None:
        base = input._data
        if base.shape != product.shape:
            xp = _backend.array_module(base)
            base = xp.broadcast_to(base, product.shape)
        product = product + (base if beta == 1 else base * beta)
    out = wrap(product.astype(storage.values.dtype, copy=False))
    return record(
        SparseAddmmBackward0,
        out,
        (input, mat1, mat2),
        beta=beta,
        alpha=alpha,
        sparse=mat1,
        dense=mat2,
    )


def mm(mat1: Tensor, mat2: Tensor, reduce: str | None = None) -> Tensor:
    """``mat1 @ mat2`` with a sparse COO ``mat1``: dense result, sparse gradient of ``mat1``
    (``torch.sparse.mm``); two dense matrices multiply as ``ember.mm``. With ``reduce``
    ("sum", "mean", "amax", "amin") and a CSR ``mat1``, each output row reduces the products
    of its stored elements that way.

    Example::
        >>> s = ember.sparse_coo_tensor([[0, 1], [1, 0]], [2.0, 3.0], (2, 2))
        >>> ember.sparse.mm(s, ember.eye(2))
        tensor([[0., 2.],
                [3., 0.]])
    """
    if reduce is not None:
        return mm_reduce(mat1, mat2, reduce)
    if not isinstance(mat1, SparseTensor):
        from ..ops.linalg import mm as dense_mm

        return dense_mm(mat1, mat2)
    return addmm(None, mat1, mat2)


def spmm(input: Tensor, mat2: Tensor) -> Tensor:
    """``torch.spmm``: ``ember.mm`` (the sparse operand's gradient is dense, as in PyTorch)."""
    from ..ops.linalg import mm as dense_mm

    return dense_mm(input, mat2)


def smm(input: SparseTensor, mat: Tensor) -> SparseTensor:
    """``torch.smm``: sparse @ dense with a sparse result (the product's nonzeros)."""
    return mm(input, mat).to_sparse()


def hspmm(mat1: SparseTensor, mat2: Tensor) -> SparseTensor:
    """``torch.hspmm``: sparse @ dense as a hybrid sparse tensor, one row per row of ``mat1``
    that stores anything (sparse_dim 1, dense_dim 1)."""
    product = mm(mat1, mat2)
    xp = _backend.array_module(mat1._data.values)
    rows = xp.unique(mat1._data.indices[0]).reshape(1, -1)
    values = product[wrap(rows[0])]
    if not _gm.state.enabled:
        values = values._detach()
    return from_values(rows, values, tuple(product.shape), coalesced=True)
