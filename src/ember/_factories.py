"""Less common factory functions: ``scalar_tensor``, ``range`` (deprecated), ``empty_strided``,
``empty_permuted``, ``frombuffer``."""

from __future__ import annotations

import builtins
import math
import warnings

from . import _creation
from . import _dtype as dt
from ._tensor import Tensor


def scalar_tensor(s, *, dtype=None, layout=None, device=None, requires_grad: bool = False):
    d = dt.to_dtype(dtype) if dtype is not None else dt.get_default_dtype()
    return _creation.tensor(s, dtype=d, device=device, requires_grad=requires_grad)


def range(
    start=0, end=None, step=1, *, dtype=None, layout=None, device=None, requires_grad: bool = False
) -> Tensor:
    """[start, end] with ``step`` (end included), PyTorch's deprecated ``torch.range``."""
    warnings.warn(
        "torch.range is deprecated and will be removed in a future release because its "
        "behavior is inconsistent with Python's range builtin. Instead, use torch.arange, "
        "which produces values in [start, end).",
        UserWarning,
        stacklevel=2,
    )
    if end is None:
        start, end = 0, start
    if step == 0:
        raise RuntimeError("step must be nonzero")
    count = builtins.max(int(math.floor((end - start) / step)) + 1, 0)
    d = dt.to_dtype(dtype) if dtype is not None else dt.get_default_dtype()
    values = _creation.arange(count, dtype=dt.float64, device=device) * step + start
    return values.to(d).requires_grad_(requires_grad)


def empty_strided(
    size,
    stride,
    *,
    dtype=None,
    layout=None,
    device=None,
    requires_grad: bool = False,
    pin_memory: bool = False,
) -> Tensor:
    """An uninitialised tensor of ``size`` whose ``stride()`` is ``stride``, as torch's."""
    size, stride = tuple(size), tuple(stride)
    if len(size) != len(stride):
        raise RuntimeError(
            f"dimensionality of sizes ({len(size)}) must match dimensionality of strides "
            f"({len(stride)})"
        )
    if builtins.any(s < 0 for s in stride):
        raise RuntimeError(
            f"Storage size calculation overflowed with sizes={list(size)} and "
            f"strides={list(stride)}"
        )
    plain = _creation.empty(size, dtype=dtype, device=device)
    from . import _backend, _memory_format

    data = _memory_format.empty_strided(
        _backend.array_module(plain._data), size, stride, plain._data.dtype
    )
    return Tensor._wrap(data).requires_grad_(requires_grad)


def empty_permuted(
    size,
    physical_layout,
    *,
    dtype=None,
    layout=None,
    device=None,
    requires_grad: bool = False,
    pin_memory: bool = False,
) -> Tensor:
    size, order = tuple(size), tuple(physical_layout)
    if len(order) != len(size):
        raise RuntimeError(
            "Number of dimensions in size does not match the length of the physical_layout; "
            f"i.e. len(size) = {len(size)} is not equal to len(physical_layout) = {len(order)}"
        )
    for index, d in enumerate(order):
        if not 0 <= d < len(size):
            raise RuntimeError(
                f"Dimension out of range (expected to be between 0 and {len(size) - 1}, but "
                f"got {d} at index {index}).  NB: negative dims not currently supported; file "
                "an issue if you want it."
            )
    if len(set(order)) != len(order):
        raise RuntimeError("Duplicate dim not allowed")
    physical = _creation.empty(tuple(size[i] for i in order), dtype=dtype, device=device)
    inverse = [order.index(i) for i in builtins.range(len(size))]
    return physical.permute(inverse).requires_grad_(requires_grad)


def frombuffer(
    buffer, *, dtype, count: int = -1, offset: int = 0, requires_grad: bool = False
) -> Tensor:
    """A 1-D tensor sharing memory with a Python buffer (bytes, bytearray, array, mmap)."""
    import numpy as np

    d = dt.to_dtype(dtype)
    view = memoryview(buffer)
    if view.nbytes == 0:
        raise ValueError("both buffer length (0) and count (-1) must not be 0")
    if offset < 0 or offset >= view.nbytes:
        raise ValueError(
            f"offset ({offset} bytes) must be non-negative and no greater than buffer length "
            f"({view.nbytes} bytes) minus 1"
        )
    available = (view.nbytes - offset) // d.itemsize
    if count < 0:
        if (view.nbytes - offset) % d.itemsize:
            raise ValueError(
                f"buffer length ({view.nbytes - offset} bytes) after offset ({offset} bytes) "
                f"must be a multiple of element size ({d.itemsize})"
            )
        count = available
    elif count > available:
        raise ValueError(
            f"requested buffer length ({count} * {d.itemsize} bytes) after offset ({offset} "
            f"bytes) must not be greater than actual buffer length ({view.nbytes} bytes)"
        )
    array = np.frombuffer(buffer, dtype=d.np, count=count, offset=offset)
    if array.flags.writeable is False and not view.readonly:
        array.flags.writeable = True
    if view.readonly:
        warnings.warn(
            "The given buffer is not writable, and PyTorch does not support non-writable "
            "tensors. This means you can write to the underlying (supposedly non-writable) "
            "buffer using the tensor.",
            UserWarning,
            stacklevel=2,
        )
        array = array.copy()
    return _creation.from_numpy(array).requires_grad_(requires_grad)


__all__ = ["empty_permuted", "empty_strided", "frombuffer", "range", "scalar_tensor"]
