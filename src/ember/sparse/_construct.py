"""``ember.sparse_coo_tensor``: build a COO tensor from indices and values, with PyTorch's
argument checks, error messages and size inference."""

from __future__ import annotations

import threading

from .. import _backend
from .. import _dtype as dt
from .._tensor import Tensor
from ._graph import from_values
from ._tensor import SparseTensor, make_sparse


class check_sparse_tensor_invariants:  # noqa: N801 - PyTorch's name
    """Turn on index-bounds checks of ``sparse_coo_tensor`` (globally, or within a ``with``).

    Example::
        >>> with ember.sparse.check_sparse_tensor_invariants():
        ...     ember.sparse_coo_tensor([[0, 5]], [1.0, 2.0], (3,))
        Traceback (most recent call last):
        RuntimeError: size is inconsistent with indices: for dim 0, size is 3 but found index 5
    """

    _state = threading.local()

    def __init__(self, enable: bool = True):
        self.state = enable
        self.saved_state = None

    @staticmethod
    def is_enabled() -> bool:
        return getattr(check_sparse_tensor_invariants._state, "on", False)

    @staticmethod
    def enable() -> None:
        check_sparse_tensor_invariants._state.on = True

    @staticmethod
    def disable() -> None:
        check_sparse_tensor_invariants._state.on = False

    def __enter__(self):
        self.saved_state = check_sparse_tensor_invariants.is_enabled()
        check_sparse_tensor_invariants._state.on = self.state
        return self

    def __exit__(self, *exc):
        check_sparse_tensor_invariants._state.on = self.saved_state


def _as_tensor(data, dtype=None) -> Tensor:
    from .._creation import tensor

    if isinstance(data, Tensor):
        return data
    if data is None:
        raise RuntimeError("Could not infer dtype of NoneType")
    return tensor(data, dtype=dtype)


def sparse_coo_tensor(
    indices,
    values,
    size=None,
    *,
    dtype=None,
    device=None,
    requires_grad: bool = False,
    check_invariants: bool | None = None,
    is_coalesced: bool | None = None,
) -> SparseTensor:
    """A sparse COO tensor with ``values[k]`` at ``indices[:, k]``; duplicates add up.

    ``size`` defaults to the smallest that holds every index (and the values' trailing dims).

    Example::
        >>> s = ember.sparse_coo_tensor([[0, 1, 1], [2, 0, 2]], [3.0, 4.0, 5.0], (2, 3))
        >>> s.to_dense()
        tensor([[0., 0., 3.],
                [4., 0., 5.]])
    """
    index_tensor = _as_tensor(indices)
    value_tensor = _as_tensor(values, dtype)
    if isinstance(value_tensor, SparseTensor) or isinstance(index_tensor, SparseTensor):
        raise RuntimeError("sparse_coo_tensor: indices and values must be dense (strided) tensors")
    if dtype is not None and value_tensor.dtype is not dt.to_dtype(dtype):
        value_tensor = value_tensor.to(dtype)
    if device is not None:
        value_tensor = value_tensor.to(device)
    if requires_grad:
        if value_tensor.dtype.category < dt.FLOAT:
            raise RuntimeError(
                "Only Tensors of floating point and complex dtype can require gradients"
            )
        value_tensor = value_tensor.detach()
    values_data = value_tensor._data
    xp = _backend.array_module(values_data)
    index_data = index_tensor._data
    if type(index_data) is not type(values_data):
        index_data = _backend.move(index_data, value_tensor.device)
    index_data = index_data.astype(xp.int64, copy=False)
    dense_dim = values_data.ndim - 1
    nnz_values = values_data.shape[0] if values_data.ndim else 1
    if size is not None:
        size = tuple(int(s) for s in size)
        sparse_dim = index_data.shape[0] if index_data.ndim else 0
        if len(size) != sparse_dim + dense_dim:
            raise RuntimeError(
                f"'len(size) == sparse_dim + dense_dim' is not satisfied: len(size) = "
                f"{len(size)}, sparse_dim = {sparse_dim}, dense_dim = {dense_dim}"
            )
        if any(s < 0 for s in size):
            raise RuntimeError(f"sparse_coo_tensor: negative size {list(size)}")
    if index_data.ndim != 2:
        raise RuntimeError(f"indices must be sparse_dim x nnz, but got: {list(index_data.shape)}")
    sparse_dim, nnz = index_data.shape
    if nnz != nnz_values:
        raise RuntimeError(
            f"indices and values must have same nnz, but got nnz from indices: {nnz}, nnz "
            f"from values: {nnz_values}"
        )
    if size is None:
        size = _inferred_size(xp, index_data, values_data)
    else:
        expected = [nnz, *size[sparse_dim:]]
        if list(values_data.shape) != expected:
            raise RuntimeError(
                f"values has incorrect size, expected {expected}, got {list(values_data.shape)}"
            )
        if check_invariants or (
            check_invariants is None and check_sparse_tensor_invariants.is_enabled()
        ):
            _check_bounds(xp, index_data, size)
    # a tensor holding at most one entry is coalesced (as PyTorch marks it)
    coalesced = bool(is_coalesced) if is_coalesced is not None else nnz <= 1
    if requires_grad:
        out = make_sparse(index_data, values_data, size, coalesced)
        out._rg = True
        return out
    return from_values(index_data, value_tensor, size, coalesced)


def _inferred_size(xp, index_data, values_data) -> tuple:
    sparse_dim, nnz = index_data.shape
    if nnz == 0:
        return (0,) * sparse_dim + tuple(values_data.shape[1:])
    low = _backend.move(index_data.min(axis=1), _backend.CPU).tolist()
    for d, m in enumerate(low):
        if m < 0:
            raise RuntimeError(f"found negative index {m} for dim {d}")
    high = _backend.move(index_data.max(axis=1), _backend.CPU).tolist()
    return tuple(h + 1 for h in high) + tuple(values_data.shape[1:])


def _check_bounds(xp, index_data, size: tuple) -> None:
    if index_data.shape[1] == 0:
        return
    low = _backend.move(index_data.min(axis=1), _backend.CPU).tolist()
    high = _backend.move(index_data.max(axis=1), _backend.CPU).tolist()
    for d in range(index_data.shape[0]):
        if low[d] < 0:
            raise RuntimeError(f"found negative index {low[d]} for dim {d}")
        if high[d] >= size[d]:
            raise RuntimeError(
                f"size is inconsistent with indices: for dim {d}, size is {size[d]} but found "
                f"index {high[d]}"
            )
