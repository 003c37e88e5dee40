"""SparseTensor: an ember ``Tensor`` whose ``_data`` is COO storage (indices + values).

It is a subclass, so ``isinstance(s, ember.Tensor)`` holds and the autograd fields (grad,
grad_fn, hooks, requires_grad_) work unchanged; what differs (layout, metadata, conversions,
repr, arithmetic) is overridden here or attached by ``_methods``. The ops are in their own
files: ``_construct``, ``_convert``, ``_arith``, ``_matmul``, ``_reduce``.
"""

from __future__ import annotations

from .. import _backend
from .._tensor import Tensor
from ..autograd import _watch
from ..autograd import grad_mode as _gm
from ._layout import sparse_coo
from ._storage import SparseStorage

_new = object.__new__


class SparseTensor(Tensor):
    """A sparse COO tensor (``layout=ember.sparse_coo``); build one with
    ``ember.sparse_coo_tensor`` or ``Tensor.to_sparse()``.

    Example::
        >>> s = ember.sparse_coo_tensor([[0, 1], [2, 0]], [3.0, 4.0], (2, 3))
        >>> s.to_dense()
        tensor([[0., 0., 3.],
                [4., 0., 0.]])
    """

    is_sparse = True

    @property
    def layout(self):
        return sparse_coo

    @property
    def device(self) -> _backend.device:
        return _backend.device_of(self._data.values)

    # --- COO metadata -----------------------------------------------------------------
    def sparse_dim(self) -> int:
        return self._data.sparse_dim

    def dense_dim(self) -> int:
        return self._data.ndim - self._data.sparse_dim

    def _nnz(self) -> int:
        return self._data.nnz

    def is_coalesced(self) -> bool:
        return self._data.coalesced

    def _coalesced_(self, coalesced: bool) -> SparseTensor:
        self._data.coalesced = bool(coalesced)
        return self

    def zero_(self) -> SparseTensor:
        """Drop every stored entry in place (``optimizer.zero_grad(set_to_none=False)``)."""
        if self._grad_fn is not None or (self._rg and _gm.state.enabled):
            raise RuntimeError(
                "a leaf Variable that requires grad is being used in an in-place operation."
            )
        storage = self._data
        xp = _backend.array_module(storage.values)
        indices = xp.zeros((storage.sparse_dim, 0), dtype=xp.int64)
        values = xp.zeros((0,) + storage.values.shape[1:], dtype=storage.values.dtype)
        self._data = SparseStorage(indices, values, storage.shape, True)
        self._vc[0] += 1
        return self

    def is_contiguous(self, memory_format=None) -> bool:
        return False

    def stride(self, dim=None):
        raise RuntimeError("Sparse tensors do not have strides")

    def data_ptr(self) -> int:
        raise RuntimeError("Cannot access data pointer of Tensor that doesn't have storage")

    # --- sharing and copying ------------------------------------------------------------
    def _detach(self) -> SparseTensor:
        out = wrap_sparse(self._data)
        out._vc = self._vc
        return out

    @property
    def data(self) -> SparseTensor:
        return wrap_sparse(self._data)

    @data.setter
    def data(self, value) -> None:
        self._data = value._data

    def numpy(self, *, force: bool = False):
        raise TypeError("can't convert Sparse layout tensor to numpy. Use Tensor.to_dense() first.")

    def __array__(self, dtype=None, copy=None):
        self.numpy()

    def tolist(self):
        raise RuntimeError("Cannot access data pointer of Tensor that doesn't have storage")

    def item(self):
        if self._data.size != 1:
            raise RuntimeError(
                f"a Tensor with {self._data.size} elements cannot be converted to Scalar"
            )
        return self.to_dense().item()

    def __repr__(self) -> str:
        from ._repr import sparse_repr

        return sparse_repr(self)


def wrap_sparse(storage: SparseStorage) -> SparseTensor:
    """A sparse tensor around ``storage``, outside the graph."""
    t = _new(SparseTensor)
    t._data = storage
    t._vc = [0]
    if _watch.watch.on:
        _watch.tensor_created(t)
    return t


def make_sparse(indices, values, shape: tuple, coalesced: bool) -> SparseTensor:
    return wrap_sparse(SparseStorage(indices, values, shape, coalesced))
