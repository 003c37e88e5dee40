"""embedding: rows of a weight matrix picked by integer indices, one graph node.

The gradient of the weight sums the output gradient's rows per index. With numba the sum is
one compiled scatter-add (``ember._kernels.embedding_jit``), which reads an expanded gradient
(a mean's) in place. The NumPy path: ``np.add.at`` does it one element at a time; here the sum
is a (rows x lookups) CSR matrix of ones times the gradient, which SciPy runs as one compiled
loop (13x faster than ``add.at`` for 8192 lookups of 128 columns into 10000 rows).
``scale_grad_by_freq`` and ``padding_idx`` only change the matrix's entries (1/count, and 0 on
the padding row). With ``sparse=True`` the gradient is a sparse COO tensor holding one row per
lookup, as PyTorch's.
"""

from __future__ import annotations

from .. import _dtype as dt
from .._kernels import jit
from .._tensor import Tensor
from ..autograd import grad_mode as _gm
from ..autograd.node import Node
from ._dispatch import array_module, check_same_device, result, wrap

# below this many gradient elements the CSR matrix costs more to build than add.at takes
_CSR_FROM_ELEMENTS = 1 << 14
_INDEX_DTYPES = ("int64", "int32")
# (indices, values, shape, coalesced) -> a sparse COO tensor whose values are the tensor
# ``values`` (gradients flow back to it): what a sparse gradient is built with. ember.sparse,
# above the op layer, fills it at install (``sparse._graph.from_values``).
sparse_coo_from_values = None


class EmbeddingBackward0(Node):
    """out = weight[indices]: d/dweight sums the gradient's rows per index (dense or sparse)."""

    def backward(self, g):
        self.unpack_saved()  # the indices: changed in place since forward, they raise
        lookup = self.lookup
        if self.sparse:
            return sparse_gradient(g, lookup)
        return embedding_dense_backward(g, lookup)


class EmbeddingDenseBackwardBackward0(Node):
    """grad_weight = Σ rows of g per index: linear in g, so d/dg picks the rows back."""

    def backward(self, gg):
        return pick_rows(gg, self.lookup)


class Lookup:
    """The indices of one embedding call and what its gradient formulas need from them."""

    __slots__ = ("flat", "shape", "num_weights", "padding_idx", "scale_grad_by_freq", "_factors")

    def __init__(self, flat, shape: tuple, num_weights: int, padding_idx, scale_grad_by_freq):
        # ``shape``: the indices' shape, which the lookups' gradient has (plus the row width)
        self.flat, self.shape, self.num_weights = flat, shape, num_weights
        self.padding_idx, self.scale_grad_by_freq = padding_idx, scale_grad_by_freq
        self._factors = None

    def factors(self, dtype):
        """Each lookup's share of its row's gradient (1, 1/count, 0 on the padding row), or
        None when every share is 1."""
        if not self.scale_grad_by_freq and self.padding_idx is None:
            return None
        if self._factors is None or self._factors.dtype != dtype:
            xp = array_module(self.flat)
            flat = self.flat
            if self.scale_grad_by_freq:
                counts = xp.bincount(flat, minlength=self.num_weights)[flat]
                factors = (1.0 / counts).astype(dtype)
            else:
                factors = xp.ones(flat.shape, dtype=dtype)
            if self.padding_idx is not None:
                factors[flat == self.padding_idx] = 0
            self._factors = factors
        return self._factors


def embedding(
    input: Tensor,
    weight: Tensor,
    padding_idx: int | None = None,
    max_norm: float | None = None,
    norm_type: float = 2.0,
    scale_grad_by_freq: bool = False,
    sparse: bool = False,
) -> Tensor:
    """Rows of ``weight`` (``num_embeddings x dim``) at ``input``'s indices: shape
    ``input.shape + (dim,)``. The padding row gets no gradient; ``max_norm`` first rescales,
    in place, the looked-up rows whose ``norm_type``-norm exceeds it; ``sparse=True`` gives
    ``weight`` a sparse COO gradient.

    Example::
        >>> w = ember.arange(6.0).reshape(3, 2)
        >>> embedding(ember.tensor([[2, 0]]), w).tolist()
        [[[4.0, 5.0], [0.0, 1.0]]]
    """
    # torch's order: padding_idx (checked against size(0) only when nonzero), the weight's
    # rank, the indices' dtype
    if padding_idx is not None and padding_idx != 0:
        if weight.dim() == 0:
            raise IndexError("Dimension specified as 0 but tensor has no dimensions")
        if not -weight.shape[0] <= padding_idx < weight.shape[0]:
            raise AssertionError("Padding_idx must be within num_embeddings")
    if weight.dim() != 2:
        raise RuntimeError("'weight' must be 2-D")
    if input.dtype.name not in _INDEX_DTYPES:
        raise RuntimeError(
            "Expected tensor for argument #1 'indices' to have one of the following scalar "
            f"types: Long, Int; but got {input.type()} instead (while checking arguments for "
            "embedding)"
        )
    if input._data.__class__ is not weight._data.__class__:
        check_same_device("embedding", weight, input)
    num_weights = weight.shape[0]
    if padding_idx is not None and num_weights:
        padding_idx %= num_weights
    idx = input._data
    flat = idx.reshape(-1)
    if flat.size and (int(flat.min()) < 0 or int(flat.max()) >= num_weights):
        _index_error(flat, weight)
    if max_norm is not None:
        embedding_renorm_(weight, flat, max_norm, norm_type)
    xp = array_module(weight._data)
    out = xp.take(weight._data, flat, axis=0).reshape(idx.shape + (weight.shape[1],))
    if not (weight._rg and _gm.state.enabled):
        return result(EmbeddingBackward0, out, (weight,))
    lookup = Lookup(flat, tuple(idx.shape), num_weights, padding_idx, scale_grad_by_freq)
    return result(EmbeddingBackward0, out, (weight,), (input,), lookup=lookup, sparse=bool(sparse))


def _index_error(flat, weight: Tensor):
    """torch's error for an index outside ``weight``'s rows: an empty weight takes other
    kernels, which raise RuntimeError."""
    num_weights = weight.shape[0]
    if not num_weights:
        raise RuntimeError("index_select(): self indexing axis dim should be positive")
    if not weight.numel():
        xp = array_module(flat)
        bad = int(flat[xp.flatnonzero((flat < 0) | (flat >= num_weights))[0]])
        raise RuntimeError(
            f"INDICES element is out of DATA bounds, id={bad} axis_dim={num_weights}"
        )
    raise IndexError("index out of range in self")


def embedding_dense_backward(g: Tensor, lookup: Lookup) -> Tensor:
    """The dense gradient of ``weight``: row r sums g's rows looked up at r, each times its
    share (see ``Lookup.factors``); differentiable in ``g``."""
    out = _sum_rows_compiled(g._data, lookup)
    if out is None:
        # explicit row count: -1 cannot be inferred next to a zero width
        out = _sum_rows(g._data.reshape(lookup.flat.size, g.shape[-1]), lookup)
    return result(EmbeddingDenseBackwardBackward0, out, (g,), lookup=lookup)


def _sum_rows_compiled(grad, lookup: Lookup):
    """The dense gradient from the compiled scatter-add (one pass, no matrix to build, and no
    copy of an expanded gradient), or None where it does not apply (no numba, CuPy, other
    dtypes)."""
    if array_module(grad).__name__ != "numpy" or grad.dtype.char not in "fd":
        return None
    kernels = jit.module("embedding_jit", grad.size)
    if kernels is None:
        return None
    factors = lookup.factors(grad.dtype) if lookup.scale_grad_by_freq else None
    return kernels.sum_rows_by_index(
        lookup.flat, grad, lookup.num_weights, lookup.padding_idx, factors
    )


def _sum_rows(rows, lookup: Lookup):
    return sum_rows_by_index(lookup.flat, rows, lookup.num_weights, lookup.factors(rows.dtype))


def sum_rows_by_index(index, rows, num_rows: int, factors=None):
    """``out[r] = Σ factors[k] · rows[k]`` over the k with ``index[k] == r``: a dense
    ``(num_rows, width)`` array (``factors`` None: all ones)."""
    xp = array_module(rows)
    if _csr_pays(xp, rows):
        n = index.size
        entries = factors if factors is not None else xp.ones(n, dtype=rows.dtype)
        return _csr(entries, index, num_rows) @ rows
    out = xp.zeros((num_rows, rows.shape[1]), dtype=rows.dtype)
    xp.add.at(out, index, rows if factors is None else rows * factors[:, None])
    return out


def sum_rows_compact(index, rows, num_rows: int):
    """(the distinct indices, sorted; each one's sum of ``rows``): the rows a sparse
    gradient touches, without a dense array of all ``num_rows`` rows."""
    xp = array_module(rows)
    if _csr_pays(xp, rows):
        # building the CSR matrix sorts by row in linear time (no argsort for unique)
        matrix = _csr(xp.ones(index.size, dtype=rows.dtype), index, num_rows)
        distinct = xp.flatnonzero(xp.diff(matrix.indptr))
        return distinct, matrix[distinct] @ rows
    distinct, position = xp.unique(index, return_inverse=True)
    out = xp.zeros((distinct.size, rows.shape[1]), dtype=rows.dtype)
    xp.add.at(out, position.reshape(-1), rows)
    return distinct, out


def _csr_pays(xp, rows) -> bool:
    return xp.__name__ == "numpy" and rows.size >= _CSR_FROM_ELEMENTS and rows.dtype.char in "fd"


def _csr(entries, row_of, num_rows: int):
    """The (num_rows x len(entries)) matrix with ``entries[k]`` at (row_of[k], k)."""
    from scipy.sparse import csr_matrix

    xp = array_module(entries)
    columns = xp.arange(entries.size)
    return csr_matrix((entries, (row_of, columns)), shape=(num_rows, entries.size))


def pick_rows(gg: Tensor, lookup: Lookup) -> Tensor:
    """gg's rows at the lookups, in the lookups' shape, zero at the padding lookups: the
    derivative of ``embedding_dense_backward`` in PyTorch's form, which leaves out
    ``scale_grad_by_freq`` (as torch's ``embedding_dense_double_backward`` does); differentiable
    in ``gg``."""
    rows = gg.index_select(0, wrap(lookup.flat))
    if lookup.padding_idx is not None:
        keep = (lookup.flat != lookup.padding_idx).astype(gg._data.dtype)
        rows = rows * wrap(keep[:, None])
    return rows.reshape(lookup.shape + (gg.shape[1],))


def sparse_gradient(g: Tensor, lookup: Lookup) -> Tensor:
    """PyTorch's sparse gradient of ``weight``: one (uncoalesced) entry per lookup, the
    padding lookups left out (PyTorch has no sparse form of ``scale_grad_by_freq``)."""
    dim = g.shape[-1]
    values = g.reshape(-1, dim)
    flat = lookup.flat
    xp = array_module(flat)
    if lookup.padding_idx is not None:
        keep = flat != lookup.padding_idx
        flat = flat[keep]
        values = values[wrap(xp.flatnonzero(keep))]
    if lookup.scale_grad_by_freq:
        raise RuntimeError(
            "embedding_backward: scale_grad_by_freq not supported with sparse gradients"
        )
    indices = flat.astype(dt.int64.np).reshape(1, -1)
    if not _gm.state.enabled:
        values = values._detach()
    return sparse_coo_from_values(indices, values, (lookup.num_weights, dim), coalesced=False)


def embedding_renorm_(weight: Tensor, flat, max_norm: float, norm_type: float) -> Tensor:
    """Rescale in place each looked-up row of ``weight`` whose ``norm_type``-norm exceeds
    ``max_norm`` to norm ``max_norm`` (PyTorch's ``embedding_renorm_``, outside the graph)."""
    data = weight._data
    xp = array_module(data)
    rows = xp.unique(flat)
    picked = data[rows]
    norms = _row_norms(xp, picked, float(norm_type))
    over = norms > max_norm
    if bool(over.any()):
        scale = (max_norm / (norms[over].astype(dt.float64.np) + 1e-7)).astype(data.dtype)
        data[rows[over]] = picked[over] * scale[:, None]
    weight._vc[0] += 1
    return weight


def _row_norms(xp, rows, p: float):
    magnitude = xp.abs(rows)
    if p == 2.0:
        return xp.sqrt((rows * rows).sum(axis=1))
    if p == 1.0:
        return magnitude.sum(axis=1)
    if p == float("inf"):
        return magnitude.max(axis=1, initial=0)
    if p == float("-inf"):
        return magnitude.min(axis=1, initial=float("inf"))
    if p == 0.0:
        return (rows != 0).sum(axis=1).astype(rows.dtype)
    return (magnitude**p).sum(axis=1) ** (1.0 / p)
