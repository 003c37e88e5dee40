"""Reflect, replicate and circular padding by amounts >= 0: one copy forward (the array
library's ``pad``), and a backward that folds each padded border back onto the positions it
copied, one slice addition per border, as one node named as PyTorch's."""

from __future__ import annotations

from .._kernels import jit
from .._kernels.blocked import is_plain_numpy
from .._tensor import Tensor
from ..autograd.node import Node
from ._dispatch import array_module, result

# the array libraries' names of PyTorch's modes
_LIBRARY_MODE = {"reflect": "reflect", "replicate": "edge", "circular": "wrap"}


def pad_by_mode(input: Tensor, pairs, mode: str) -> Tensor:
    """``input`` padded by ``pairs`` ((dim, before, after), amounts >= 0, reflect amounts below
    the dim's size and circular ones at most it, checked by the caller) in ``mode``."""
    data = input._data
    planar = _planar_amounts(data, pairs)
    kernels = None if planar is None else jit.module("padding_jit", data.size)
    if kernels is not None:  # one pass, no strided border copies
        out = kernels.pad(array_module(data).ascontiguousarray(data), *planar[:4], mode, planar[4])
    else:
        widths = [(0, 0)] * data.ndim
        for d, lo, hi in pairs:
            widths[d] = (lo, hi)
        out = array_module(data).pad(data, widths, mode=_LIBRARY_MODE[mode])
    return result(_node_class(mode, len(pairs)), out, (input,), pairs=pairs, mode=mode)


def _planar_amounts(data, pairs):
    """(top, bottom, left, right, two_dims) for :mod:`ember._kernels.padding_jit` when every
    padded dim of the NumPy array ``data`` (float32/64 or an integer dtype) is one of its last
    two; else None."""
    if not is_plain_numpy(data) or not data.ndim or data.dtype.char not in "fdbhilqB":
        return None
    amounts = {data.ndim - 2: (0, 0), data.ndim - 1: (0, 0)}
    for d, lo, hi in pairs:
        if d not in amounts:
            return None
        amounts[d] = (lo, hi)
    (top, bottom), (left, right) = amounts[data.ndim - 2], amounts[data.ndim - 1]
    return top, bottom, left, right, data.ndim >= 2


def fold_padding(g: Tensor, pairs, mode: str) -> Tensor:
    """The gradient of :func:`pad_by_mode`: each border of ``g`` added to what it copied."""
    data = g._data
    planar = _planar_amounts(data, pairs)
    kernels = None if planar is None else jit.module("padding_jit", data.size)
    if kernels is not None:  # one pass: each input row sums the output rows that copied it
        contiguous = array_module(data).ascontiguousarray(data)
        folded = kernels.fold(contiguous, *planar[:4], mode, planar[4])
        return result(PadFoldBackward, folded, (g,), pairs=pairs, mode=mode)
    xp = array_module(data)
    for d, lo, hi in pairs:
        n = data.shape[d] - lo - hi

        def part(start, stop, step=1, d=d):
            return (slice(None),) * d + (slice(start, stop, step),)

        inner = data[part(lo, lo + n)].copy()
        before, after = data[part(0, lo)], data[part(lo + n, lo + n + hi)]
        if mode == "reflect":  # position i < lo copies lo - i; after: n - 2 - i
            if lo:
                inner[part(1, lo + 1)] += xp.flip(before, d)
            if hi:
                inner[part(n - 1 - hi, n - 1)] += xp.flip(after, d)
        elif mode == "replicate":
            if lo:
                inner[part(0, 1)] += before.sum(axis=d, keepdims=True)
            if hi:
                inner[part(n - 1, n)] += after.sum(axis=d, keepdims=True)
        else:  # circular: before copies the last lo positions, after the first hi
            if lo:
                inner[part(n - lo, n)] += before
            if hi:
                inner[part(0, hi)] += after
        data = inner
    return result(PadFoldBackward, data, (g,), pairs=pairs, mode=mode)


class _PadBackward(Node):
    def backward(self, g):
        return fold_padding(g, self.pairs, self.mode)


class PadFoldBackward(Node):
    """The fold's own gradient: the padding again."""

    def backward(self, gg):
        return pad_by_mode(gg, self.pairs, self.mode)


def _named(name: str) -> type:
    return type(name, (_PadBackward,), {"__module__": __name__})


# PyTorch's node names: ReflectionPad{1,2,3}DBackward0, ReplicationPad...; circular padding is
# a composite of slice copies there
_NODES = {
    (mode, k): _named(f"{prefix}Pad{k}DBackward0")
    for mode, prefix in (("reflect", "Reflection"), ("replicate", "Replication"))
    for k in (1, 2, 3)
}
_CIRCULAR = _named("CopySlices")
_CIRCULAR.name = lambda self: "torch::autograd::CopySlices"  # torch's name(), as _inplace's


def _node_class(mode: str, dims: int) -> type:
    return _CIRCULAR if mode == "circular" else _NODES.get((mode, dims), _NODES[(mode, 1)])
