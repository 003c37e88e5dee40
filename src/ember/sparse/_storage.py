"""What a sparse tensor keeps in ``_data``: COO indices and values, plus the facts the autograd
engine reads from any tensor's data (``shape``, ``dtype``, ``flags``, ``base``).

Dense ops that reach a sparse tensor's data meet this object instead of an array. Rather than
failing somewhere inside NumPy with an unrelated message, every array entry point
(``__array_ufunc__``, ``__array_function__``, attributes, indexing, operators, and the array
module ``array_module`` maps it to) raises ``NotImplementedError`` naming the kernel, as
PyTorch does for ops without a sparse kernel. The one kernel served is ``matmul``, so that the
dense ``mm``/``matmul``/``@`` work unchanged on a sparse left or right operand.
"""

from __future__ import annotations

import numpy as np

from .. import _backend
from .._kernels import jit

SUPPORTED = (
    "to_dense, coalesce, indices, values, +, -, * and / by a scalar, mm/matmul with a dense "
    "matrix, and the functions of ember.sparse"
)


class SparseUnsupported(NotImplementedError, AttributeError):
    """A dense kernel asked of a sparse tensor. Also an AttributeError, so that ``hasattr`` and
    ``getattr(x, name, default)`` on the data keep their meaning."""


def unsupported(name: str) -> SparseUnsupported:
    return SparseUnsupported(
        f"{name}: not supported for sparse_coo tensors in ember (no sparse kernel); call "
        f".to_dense() first. Sparse tensors support {SUPPORTED}."
    )


class _Flags:
    __slots__ = ()
    writeable = False  # the engine then accumulates gradients out of place
    c_contiguous = False
    f_contiguous = False


_FLAGS = _Flags()


class SparseStorage:
    """COO data: ``indices`` (sparse_dim, nnz) int64 and ``values`` (nnz, *dense_shape)."""

    __slots__ = ("indices", "values", "shape", "coalesced")
    base = None
    flags = _FLAGS

    def __init__(self, indices, values, shape: tuple, coalesced: bool):
        self.indices = indices
        self.values = values
        self.shape = tuple(int(s) for s in shape)
        self.coalesced = coalesced

    @property
    def dtype(self):
        return self.values.dtype

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        n = 1
        for s in self.shape:
            n *= s
        return n

    @property
    def itemsize(self) -> int:
        return self.values.itemsize

    @property
    def nbytes(self) -> int:
        return int(self.indices.nbytes + self.values.nbytes)

    @property
    def device(self):
        return self.values.device  # CuPy arrays only; ember asks SparseTensor.device

    @property
    def sparse_dim(self) -> int:
        return self.indices.shape[0]

    @property
    def nnz(self) -> int:
        return self.indices.shape[1]

    def copy(self) -> SparseStorage:
        return SparseStorage(self.indices.copy(), self.values.copy(), self.shape, self.coalesced)

    def astype(self, dtype, copy: bool = True) -> SparseStorage:
        """Cast the values (the dense matmul widens 2-byte floats this way)."""
        return SparseStorage(self.indices, self.values.astype(dtype), self.shape, self.coalesced)

    # --- every other array entry point: a clear error naming the kernel -------------------
    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        if ufunc is np.matmul and method == "__call__" and not kwargs and len(inputs) == 2:
            return matmul_kernel(*inputs)
        raise unsupported(ufunc.__name__ if method == "__call__" else f"{ufunc.__name__}.{method}")

    def __array_function__(self, func, types, args, kwargs):
        raise unsupported(func.__name__)

    def __array__(self, dtype=None, copy=None):
        raise unsupported("conversion to a dense array")

    def __getattr__(self, name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        raise unsupported(name)

    def __getitem__(self, key):
        raise unsupported("indexing")

    def __setitem__(self, key, value):
        raise unsupported("index assignment")

    def __iter__(self):
        raise unsupported("iteration")

    def __len__(self) -> int:
        return self.shape[0]


def _operator(name: str):
    def op(self, *args):
        raise unsupported(name.strip("_"))

    return op


for _name in (
    "__add__ __radd__ __sub__ __rsub__ __mul__ __rmul__ __truediv__ __rtruediv__ __floordiv__ "
    "__pow__ __rpow__ __mod__ __neg__ __abs__ __lt__ __le__ __gt__ __ge__ __and__ __or__ "
    "__xor__ __invert__ __iadd__ __isub__ __imul__ __itruediv__"
).split():
    setattr(SparseStorage, _name, _operator(_name))


def module_of(data):
    """NumPy or CuPy: the array module of a sparse storage's arrays."""
    return _backend.array_module(data.values)


class SparseKernels:
    """What ``array_module`` answers for a sparse storage: ``matmul``, and clear errors."""

    __name__ = "ember.sparse kernels"  # read by code that asks which array module it has

    def matmul(self, a, b, *args, **kwargs):
        return matmul_kernel(a, b)

    def __getattr__(self, name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        raise unsupported(name)


KERNELS = SparseKernels()


# --- array kernels ------------------------------------------------------------------------------
def linear_index(xp, indices, shape: tuple):
    """Row-major position of each index column within the sparse dims ``shape``."""
    lin = xp.zeros(indices.shape[1], dtype=xp.int64)
    for d, size in enumerate(shape):
        lin = lin * size + indices[d]
    return lin


def unravel(xp, lin, shape: tuple):
    rows = []
    for size in reversed(shape):
        rows.append(lin % size if size else lin)
        lin = lin // size if size else lin
    if not rows:
        return xp.zeros((0, lin.shape[0]), dtype=xp.int64)
    return xp.stack(rows[::-1]).astype(xp.int64)


def coalesce_arrays(indices, values, shape: tuple):
    """Sorted unique indices and the summed values of duplicates (PyTorch's ``coalesce``)."""
    xp = _backend.array_module(values)
    sparse_shape = shape[: indices.shape[0]]
    if indices.shape[1] == 0:
        return indices, values
    lin = linear_index(xp, indices, sparse_shape)
    unique, inverse = xp.unique(lin, return_inverse=True)
    summed = xp.zeros((unique.shape[0],) + values.shape[1:], dtype=values.dtype)
    add_rows_at(xp, summed, inverse.reshape(-1), values)
    return unravel(xp, unique, sparse_shape), summed


def dense_array(storage: SparseStorage):
    """The dense array a sparse storage stands for (duplicates summed)."""
    xp = module_of(storage)
    out = xp.zeros(storage.shape, dtype=storage.values.dtype)
    if storage.nnz:
        indices = storage.indices
        sparse_shape = storage.shape[: indices.shape[0]]
        if indices.shape[0] == 1:
            add_rows_at(xp, out, indices[0], storage.values)
        elif int(indices.min()) < 0 or any(
            int(indices[d].max()) >= size for d, size in enumerate(sparse_shape)
        ):  # a linear index would land on another element: add.at raises the IndexError
            xp.add.at(out, tuple(indices), storage.values)
        else:
            # the sparse dims as one row index into a view of ``out``
            positions = 1
            for size in sparse_shape:
                positions *= size
            flat = out.reshape((positions,) + storage.shape[indices.shape[0] :])
            add_rows_at(xp, flat, linear_index(xp, indices, sparse_shape), storage.values)
    return out


def add_rows_at(xp, out, index, values) -> None:
    """``out[index[k]] += values[k]`` for every k, duplicates summed in order (``add.at``):
    one compiled pass where the kernels take the arrays (NumPy floats), else ``add.at``."""
    if xp.__name__ == "numpy" and values.dtype.char in "fd":
        kernels = jit.module("embedding_jit", values.size)
        if kernels is not None and kernels.index_axpy(index, 1.0, values, out):
            return
    xp.add.at(out, index, values)


def lookup(g_indices, g_values, g_shape: tuple, query):
    """Values of the coalesced sparse ``(g_indices, g_values)`` at the index columns ``query``
    (zero where it holds nothing): a binary search over the linearised indices."""
    xp = _backend.array_module(g_values)
    sparse_shape = g_shape[: g_indices.shape[0]]
    out = xp.zeros((query.shape[1],) + g_values.shape[1:], dtype=g_values.dtype)
    if g_indices.shape[1] == 0 or query.shape[1] == 0:
        return out
    have = linear_index(xp, g_indices, sparse_shape)
    want = linear_index(xp, query, sparse_shape)
    pos = xp.minimum(xp.searchsorted(have, want), have.shape[0] - 1)
    found = have[pos] == want
    out[found] = g_values[pos[found]]
    return out


def spmm_arrays(indices, values, shape: tuple, dense):
    """sparse (n, k) @ dense (k, ...) -> dense (n, ...), duplicates summed."""
    xp = _backend.array_module(values)
    rows, cols = indices[0], indices[1]
    out = xp.zeros((shape[0],) + dense.shape[1:], dtype=np.result_type(values.dtype, dense.dtype))
    if indices.shape[1]:
        part = dense[cols] * values.reshape((-1,) + (1,) * (dense.ndim - 1))
        xp.add.at(out, rows, part)
    return out


def matmul_kernel(a, b):
    """``xp.matmul`` with one sparse 2-D operand and one dense operand (1-D or 2-D)."""
    if isinstance(a, SparseStorage) and not isinstance(b, SparseStorage):
        _check_matrix(a)
        if b.ndim not in (1, 2):
            raise unsupported(f"matmul of a sparse matrix with a {b.ndim}-D tensor")
        return spmm_arrays(a.indices, a.values, a.shape, b)
    if isinstance(b, SparseStorage) and not isinstance(a, SparseStorage):
        _check_matrix(b)
        if a.ndim not in (1, 2):
            raise unsupported(f"matmul of a {a.ndim}-D tensor with a sparse matrix")
        # a @ S = (S^T @ a^T)^T
        flipped = spmm_arrays(b.indices[::-1], b.values, b.shape[::-1], a.T)
        return flipped.T
    raise unsupported("matmul of two sparse tensors")


def _check_matrix(s: SparseStorage) -> None:
    if s.ndim != 2 or s.sparse_dim != 2:
        raise unsupported(
            f"matmul with a sparse tensor of sparse_dim {s.sparse_dim} and dense_dim "
            f"{s.ndim - s.sparse_dim} (only sparse matrices)"
        )
