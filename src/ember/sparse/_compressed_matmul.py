"""Products with a CSR matrix: ``sparse.sampled_addmm`` and ``sparse.mm(..., reduce=)``.

Both are composed of differentiable ember ops on the CSR values (gather, multiply, a scatter
reduction), so their gradients with respect to every operand come from those ops' formulas.
"""

from __future__ import annotations

from .. import _backend
from .._tensor import Tensor
from ..autograd import grad_mode as _gm
from ..autograd.node import Node
from ..ops._dispatch import wrap
from ._compressed import SparseCompressedTensor, _wrap_compressed
from ._graph import record
from ._layout import sparse_csr
from ._storage import SparseStorage
from ._tensor import SparseTensor

_REDUCTIONS = {"sum": "sum", "mean": "mean", "amax": "amax", "amin": "amin", "max": "amax",
               "min": "amin"}  # fmt: skip


def _csr_rows_and_cols(csr: SparseCompressedTensor):
    storage = csr._data
    return wrap(storage.indices[0]), wrap(storage.indices[1])


def _layout_name(t) -> str:
    return "Strided" if t.layout == "strided" else f"Sparse{str.__str__(t.layout)[7:].title()}"


def sampled_addmm(
    input: Tensor, mat1: Tensor, mat2: Tensor, *, beta=1.0, alpha=1.0, out=None
) -> SparseCompressedTensor:
    """``beta * input + alpha * (mat1 @ mat2)`` at ``input``'s stored positions only: a CSR
    result with ``input``'s pattern (torch.sparse.sampled_addmm).

    Example::
        >>> pattern = ember.eye(2).to_sparse_csr()
        >>> ember.sparse.sampled_addmm(pattern, ember.ones(2, 3), ember.ones(3, 2)).to_dense()
        tensor([[4., 0.],
                [0., 4.]])
    """
    if not isinstance(input, SparseCompressedTensor) or input.layout is not sparse_csr:
        raise NotImplementedError(
            "Could not run 'aten::sparse_sampled_addmm' with arguments from the "
            f"'{_layout_name(input)}' backend: sampled_addmm expects a sparse CSR input"
        )
    for name, m in (("mat1", mat1), ("mat2", mat2)):
        if m.ndim != 2:
            raise RuntimeError(f"sampled_addmm: Expected {name} to be a matrix, got {m.ndim}-D")
    if mat1.shape[1] != mat2.shape[0]:
        raise RuntimeError(
            f"sampled_addmm: mat1 and mat2 shapes cannot be multiplied "
            f"({mat1.shape[0]}x{mat1.shape[1]} and {mat2.shape[0]}x{mat2.shape[1]})"
        )
    if (mat1.shape[0], mat2.shape[1]) != tuple(input.shape):
        raise RuntimeError(
            f"sampled_addmm: self.shape {tuple(input.shape)} must match the product's "
            f"({mat1.shape[0]}, {mat2.shape[1]})"
        )
    if out is not None and not (
        isinstance(out, SparseCompressedTensor) and out.layout is sparse_csr
    ):
        raise RuntimeError(
            f"sampled_addmm: Expected result to have sparse csr layout, but got {_layout_name(out)}"
        )
    rows, cols = _csr_rows_and_cols(input)
    with _gm.no_grad():
        # row i of mat1 times column j of mat2, for each stored (i, j)
        sampled = (mat1[rows] * mat2.t()[cols]).sum(-1)
        values = alpha * sampled if beta == 0 else beta * input.values() + alpha * sampled
    result = _wrap_compressed(
        SparseStorage(input._data.indices, values._data, tuple(input.shape), True), sparse_csr
    )
    result = record(
        SparseSampledAddmmBackward0,
        result,
        (input, mat1, mat2),
        mat1=mat1,
        mat2=mat2,
        pattern=input._data.indices,
        alpha=alpha,
        beta=beta,
    )
    if out is not None:
        out._data = result._data
        out._rg, out._grad_fn = result._rg, result._grad_fn
        return out
    return result


class SparseSampledAddmmBackward0(Node):
    """d/dinput = beta g (as torch: g itself, not masked); d/dmat1 = alpha G mat2ᴴ and
    d/dmat2 = alpha mat1ᴴ G, with G the gradient kept at input's pattern."""

    def backward(self, g):
        dense = g.to_dense() if isinstance(g, SparseTensor) else g
        mask = wrap(dense_pattern(self.pattern, tuple(dense.shape), _backend.array_module(
            dense._data)))  # fmt: skip
        kept = dense * mask
        alpha = complex(self.alpha).conjugate() if isinstance(self.alpha, complex) else self.alpha
        beta = complex(self.beta).conjugate() if isinstance(self.beta, complex) else self.beta
        return (
            g * beta,
            alpha * (kept @ self.mat2.t().conj()),
            alpha * (self.mat1.t().conj() @ kept),
        )


def dense_pattern(indices, shape: tuple, xp):
    """A bool array of ``shape``, True at the (2, nnz) ``indices``."""
    mask = xp.zeros(shape, dtype=bool)
    mask[indices[0], indices[1]] = True
    return mask


def mm_reduce(mat1: SparseCompressedTensor, mat2: Tensor, reduce: str) -> Tensor:
    """Row ``i`` of the result reduces ``mat1[i, k] * mat2[k]`` over the stored ``k`` of row
    ``i`` with ``reduce`` (0 for a row that stores nothing)."""
    if reduce not in _REDUCTIONS:
        raise RuntimeError(f"reduce argument must be either sum, mean, amax or amin, got {reduce}")
    if not isinstance(mat1, SparseCompressedTensor) or mat1.layout is not sparse_csr:
        raise NotImplementedError(
            "Could not run 'aten::_sparse_mm_reduce_impl' with arguments from the "
            f"'{_layout_name(mat1)}' backend: mm with reduce= expects a sparse CSR mat1"
        )
    if mat2.ndim != 2 or mat1.shape[1] != mat2.shape[0]:
        raise RuntimeError(
            f"mm: mat1 and mat2 shapes cannot be multiplied ({mat1.shape[0]}x{mat1.shape[1]} "
            f"and {'x'.join(str(s) for s in mat2.shape)})"
        )
    rows, cols = _csr_rows_and_cols(mat1)
    products = mat1.values()[:, None] * mat2[cols]
    xp = _backend.array_module(products._data)
    index = rows[:, None].expand(products.shape)
    base = wrap(xp.zeros((mat1.shape[0], mat2.shape[1]), dtype=products._data.dtype))
    return base.scatter_reduce(0, index, products, _REDUCTIONS[reduce], include_self=False)
