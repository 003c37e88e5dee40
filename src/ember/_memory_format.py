"""Memory formats: ``contiguous_format``, ``preserve_format``, ``channels_last(_3d)``.

ember's tensors are NumPy (or CuPy) arrays, which hold any strides, so a channels-last tensor
really has PyTorch's NHWC strides. Only the layout changes, never the values. The functions here
work on arrays so that the creation functions can use them before ``Tensor`` exists.
"""

from __future__ import annotations

from ._backend import array_module


class memory_format:  # noqa: N801 - PyTorch's class name
    """How a dense tensor's elements are ordered in memory, e.g. ``ember.channels_last``."""

    __slots__ = ("_name",)

    def __init__(self, name: str) -> None:
        self._name = name

    def __repr__(self) -> str:
        return f"ember.{self._name}"

    __str__ = __repr__

    def __reduce__(self):
        return self._name  # pickled as the module-level object of that name


contiguous_format = memory_format("contiguous_format")
preserve_format = memory_format("preserve_format")
channels_last = memory_format("channels_last")
channels_last_3d = memory_format("channels_last_3d")

# the dimension orders, innermost first, of the channels-last formats (torch's order)
_ORDERS = {channels_last: (1, 3, 2, 0), channels_last_3d: (1, 4, 3, 2, 0)}
_RANKS = {channels_last: 4, channels_last_3d: 5}


def check(fmt, name: str = "memory_format"):
    """``fmt`` as a memory format (None: ``preserve_format``), or torch's TypeError."""
    if fmt is None:
        return preserve_format
    if not isinstance(fmt, memory_format):
        raise TypeError(
            f"{name}(): argument 'memory_format' must be torch.memory_format, not "
            f"{type(fmt).__name__}"
        )
    return fmt


def check_rank(ndim: int, fmt) -> None:
    rank = _RANKS.get(fmt)
    if rank is not None and ndim != rank:
        raise RuntimeError(f"required rank {rank} tensor to use {fmt._name} format")


def _strides(data) -> tuple:
    item = data.itemsize
    return tuple(s // item for s in data.strides)


def is_contiguous(data, fmt) -> bool:
    """PyTorch's ``is_contiguous(memory_format=fmt)`` for an array."""
    if fmt is None or fmt is contiguous_format or fmt is preserve_format:
        return bool(data.flags.c_contiguous)
    order = _ORDERS[fmt]
    if data.ndim != len(order):
        return False
    shape, strides = data.shape, _strides(data)
    expected = 1
    for d in order:
        if shape[d] != 1:
            if strides[d] != expected:
                return False
            expected *= shape[d]
    return True


def _strides_like_channels_last(shape, strides, order) -> bool:
    """torch's is_channels_last_strides_2d/3d: do the strides suggest a channels-last layout?"""
    if strides[1] == 0:
        return False
    low = 0
    for d in order:
        if shape[d] == 0 or strides[d] < low:
            return False
        if d == 0 and low == strides[1]:
            return False
        low = strides[d]
        if shape[d] > 1:
            low *= shape[d]
    return True


def suggest(data):
    """torch's suggest_memory_format: channels-last when the strides look like it."""
    order = {4: _ORDERS[channels_last], 5: _ORDERS[channels_last_3d]}.get(data.ndim)
    if order is not None and _strides_like_channels_last(data.shape, _strides(data), order):
        return channels_last if data.ndim == 4 else channels_last_3d
    return contiguous_format


def _dense(shape, strides) -> bool:
    """torch's non-overlapping-and-dense test."""
    expected = 1
    for stride, n in sorted((s, n) for n, s in zip(shape, strides, strict=True) if n >= 2):
        if stride != expected:
            return False
        expected *= n
    return True


def _inferred_strides(shape, strides) -> tuple:
    """torch's infer_dense_strides: compact strides that keep the dimensions' memory order."""
    ndim = len(shape)
    perm = list(range(ndim - 1, -1, -1))
    for i in range(1, ndim):  # insertion sort; equal strides are left in place, as torch's
        dim1 = i
        for _ in range(i):
            dim0 = dim1 - 1
            a, b = strides[perm[dim0]], strides[perm[dim1]]
            if a > b:
                perm[dim0], perm[dim1] = perm[dim1], perm[dim0]
                dim1 = dim0
            elif a < b:
                break
    out = [0] * ndim
    step = 1
    for idx in perm:
        out[idx] = step
        if shape[idx] > 1:
            step *= shape[idx]
    return tuple(out)


def preserved_strides(data) -> tuple:
    """The strides torch gives a copy of ``data`` made with ``preserve_format``."""
    strides = tuple(abs(s) for s in _strides(data))  # a NumPy flip is a dense copy in torch
    if _dense(data.shape, strides):
        return strides
    return _inferred_strides(data.shape, strides)


def empty_strided(xp, shape, strides, dtype):
    """An uninitialised array of ``shape`` with the given (dense) element ``strides``."""
    shape, strides = tuple(shape), tuple(strides)
    order = sorted(range(len(shape)), key=lambda d: -strides[d])  # outermost first, stable
    inverse = [order.index(d) for d in range(len(shape))]
    out = xp.empty(tuple(shape[d] for d in order), dtype=dtype).transpose(inverse)
    if _strides(out) == strides:
        return out
    # only size-1 dimensions differ: give them torch's strides over a fresh buffer
    numel = 1
    for n in shape:
        numel *= n
    span = 1 + sum((n - 1) * s for n, s in zip(shape, strides, strict=True)) if numel else 0
    buffer = xp.empty(max(span, 1), dtype=dtype)
    item = buffer.itemsize
    return xp.lib.stride_tricks.as_strided(
        buffer, shape=shape, strides=tuple(s * item for s in strides)
    )


def arrange(data, fmt, *, like=None, copy: bool = False):
    """``data`` laid out as ``fmt`` (``preserve_format``: as ``like``, else as ``data``).

    Returns ``data`` itself when no copy is asked for and it already has the layout.
    """
    xp = array_module(data)
    if fmt is None or fmt is preserve_format:
        strides = preserved_strides(data if like is None else like)
        if not copy and _strides(data) == strides:
            return data
        out = empty_strided(xp, data.shape, strides, data.dtype)
        out[...] = data
        return out
    check_rank(data.ndim, fmt)
    strides = format_strides(data.shape, fmt)
    if not copy and _strides(data) == strides:
        return data
    out = empty_strided(xp, data.shape, strides, data.dtype)
    out[...] = data
    return out


def format_strides(shape, fmt) -> tuple:
    """The strides torch gives a fresh tensor of ``shape`` in ``fmt``."""
    out = [0] * len(shape)
    step = 1
    if fmt in _ORDERS:  # torch's get_channels_last_strides: a zero size zeroes the outer strides
        for d in _ORDERS[fmt]:
            out[d] = step
            step *= shape[d]
        return tuple(out)
    for d in range(len(shape) - 1, -1, -1):
        out[d] = step
        step *= max(shape[d], 1)
    return tuple(out)


__all__ = ["channels_last", "channels_last_3d", "contiguous_format", "memory_format"]
__all__ += ["preserve_format"]
