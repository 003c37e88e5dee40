"""Shape ops on nested tensors: transpose, view/reshape, unflatten, flatten, unsqueeze,
squeeze, narrow.

Jagged: the op runs on the values, and the ragged dimension's index follows it (a transpose
across it keeps the values unpacked, as PyTorch does). Strided: per component, repacked. The
batch dimension stays where it is; PyTorch's messages where it refuses.
"""

from __future__ import annotations

from .._tensor import _wrap_dim
from ..ops.shape import cat as _dense_cat
from . import _build
from ._nested_int import NestedInt
from ._tensor import NestedTensor


def _per_component(nt, fn):
    return _build.strided_from_list([fn(c) for c in nt.unbind()])


def transpose(input: NestedTensor, dim0: int, dim1: int) -> NestedTensor:
    n = input.dim()
    d0, d1 = _wrap_dim(dim0, n), _wrap_dim(dim1, n)
    if 0 in (d0, d1):
        if input.layout == "jagged":
            raise ValueError("Transpose is not supported on the batch dimension for jagged NT")
        raise RuntimeError("Nested tensor dimension 0 cannot be transposed")
    if input.layout == "strided":
        return _per_component(input, lambda c: c.transpose(d0 - 1, d1 - 1))
    ragged = input._ragged_idx
    ragged = d1 if ragged == d0 else d0 if ragged == d1 else ragged
    return input._like(input._inner.transpose(d0 - 1, d1 - 1), ragged_idx=ragged)


def _target(shape) -> list:
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = shape[0]
    return list(shape)


def _reshaper(op: str):
    def nested(input: NestedTensor, *shape) -> NestedTensor:
        target = _target(shape)
        batch = len(input)
        if not target or target[0] not in (batch, -1):
            raise RuntimeError(f"{op}(): cannot view shape {_shape_of(input)} as {target}")
        if input.layout == "strided":
            return _per_component(input, lambda c: getattr(c, op)(*target[1:]))
        ragged = input._ragged_idx
        current = list(input.shape)
        ok = (
            len(target) > ragged
            and (target[ragged] == -1 or target[ragged] == input._ragged_size)
            and target[1:ragged] == current[1:ragged]
            and sum(1 for s in target[ragged + 1 :] if s == -1) <= 1
        )
        if not ok:
            raise RuntimeError(f"{op}(): cannot view shape {_shape_of(input)} as {target}")
        inner_shape = [s for s in target[1:]]
        inner_shape[ragged - 1] = input._inner.shape[ragged - 1]
        return input._like(getattr(input._inner, op)(*inner_shape))

    nested.__name__ = op
    return nested


def _shape_of(nt) -> tuple:
    if nt.layout == "jagged":
        return tuple(nt.shape)
    return tuple(["B"] + [f"d{i}" for i in range(1, nt.dim())])


view = _reshaper("view")
reshape = _reshaper("reshape")


def _inner_dim(input, dim: int, op: str, n: int | None = None) -> int:
    d = _wrap_dim(dim, input.dim() if n is None else n)
    if d == 0:
        raise RuntimeError(f"{op}(): not supported for NestedTensor on dim=0")
    return d


def unflatten(input: NestedTensor, dim: int, sizes) -> NestedTensor:
    d = _inner_dim(input, dim, "unflatten")
    sizes = list(sizes)
    if input.layout == "strided":
        return _per_component(input, lambda c: c.unflatten(d - 1, sizes))
    ragged = input._ragged_idx
    if d == ragged:
        raise RuntimeError("unflatten(): not supported for NestedTensor on ragged dim")
    out = input._inner.unflatten(d - 1, sizes)
    return input._like(out, ragged_idx=ragged + len(sizes) - 1 if d < ragged else ragged)


def flatten(input: NestedTensor, start_dim: int = 0, end_dim: int = -1) -> NestedTensor:
    n = input.dim()
    start, end = _wrap_dim(start_dim, n), _wrap_dim(end_dim, n)
    if start == 0:
        raise RuntimeError("flatten(): not supported for NestedTensor on dim=0")
    if start >= end:
        return input
    if input.layout == "strided":
        return _per_component(input, lambda c: c.flatten(start - 1, end - 1))
    ragged = input._ragged_idx
    if start <= ragged <= end:
        raise RuntimeError("flatten(): not supported for NestedTensor on ragged dim")
    out = input._inner.flatten(start - 1, end - 1)
    return input._like(out, ragged_idx=ragged - (end - start) if end < ragged else ragged)


def unsqueeze(input: NestedTensor, dim: int) -> NestedTensor:
    d = _inner_dim(input, dim, "unsqueeze", input.dim() + 1)
    if input.layout == "strided":
        return _per_component(input, lambda c: c.unsqueeze(d - 1))
    ragged = input._ragged_idx
    return input._like(
        input._inner.unsqueeze(d - 1), ragged_idx=ragged + 1 if d <= ragged else ragged
    )


def squeeze(input: NestedTensor, dim=None) -> NestedTensor:
    if dim is None:
        dims = [d for d in range(1, input.dim()) if _regular_size(input, d) == 1]
    else:
        dims = [_inner_dim(input, d, "squeeze") for d in ((dim,) if isinstance(dim, int) else dim)]
    out = input
    for d in sorted(dims, reverse=True):
        if _regular_size(out, d) != 1:
            continue
        if out.layout == "strided":
            out = _per_component(out, lambda c, d=d: c.squeeze(d - 1))
        else:
            ragged = out._ragged_idx
            out = out._like(
                out._inner.squeeze(d - 1), ragged_idx=ragged - 1 if d < ragged else ragged
            )
    return out


def _regular_size(nt, d: int):
    if nt.layout == "jagged":
        size = nt.shape[d]
        if isinstance(size, NestedInt):
            raise RuntimeError("squeeze(): not supported for NestedTensor on ragged dim")
        return size
    sizes = {s[d - 1] for s in nt._sizes}
    return sizes.pop() if len(sizes) == 1 else None


def narrow(input: NestedTensor, dim: int, start: int, length: int) -> NestedTensor:
    d = _inner_dim(input, dim, "narrow")
    if input.layout == "strided":
        return _per_component(input, lambda c: c.narrow(d - 1, start, length))
    if d == input._ragged_idx:
        raise RuntimeError("narrow(): not supported for NestedTensor on the ragged dim")
    return input._like(input._inner.narrow(d - 1, start, length))


def _pieces(input: NestedTensor, op: str, dim: int, split):
    """``chunk``/``split`` along a regular dimension: a tuple of nested tensors."""
    d = _inner_dim(input, dim, op)
    if input.layout == "strided":
        per_component = [split(c, d - 1) for c in input.unbind()]
        if len({len(p) for p in per_component}) > 1:
            raise RuntimeError(f"{op}(): the components split into different numbers of pieces")
        return tuple(_build.strided_from_list(list(group)) for group in zip(*per_component))
    if d == input._ragged_idx:
        raise RuntimeError(f"{op}(): not supported for NestedTensor on ragged dim")
    return tuple(input._like(piece) for piece in split(input._inner, d - 1))


def chunk(input: NestedTensor, chunks: int, dim: int = 0) -> tuple:
    return _pieces(input, "chunk", dim, lambda t, d: t.chunk(chunks, d))


def split(input: NestedTensor, split_size_or_sections, dim: int = 0) -> tuple:
    return _pieces(input, "split", dim, lambda t, d: t.split(split_size_or_sections, d))


def permute(input: NestedTensor, *dims) -> NestedTensor:
    """A permutation that keeps the batch dimension first."""
    dims = list(dims[0]) if len(dims) == 1 and isinstance(dims[0], (tuple, list)) else list(dims)
    n = input.dim()
    dims = [_wrap_dim(d, n) for d in dims]
    if sorted(dims) != list(range(n)):
        raise RuntimeError(f"permute(): {dims} is not a permutation of {n} dimensions")
    if dims[0] != 0:
        if input.layout == "jagged":
            raise ValueError("Permute is not supported on the batch dimension for jagged NT")
        raise RuntimeError("permute(): the batch dimension of a NestedTensor must stay first")
    inner_dims = [d - 1 for d in dims[1:]]
    if input.layout == "strided":
        return _per_component(input, lambda c: c.permute(*inner_dims))
    ragged = dims.index(input._ragged_idx)
    return input._like(input._inner.permute(*inner_dims), ragged_idx=ragged)


def cat(tensors, dim: int = 0) -> NestedTensor:
    """Nested tensors of one structure joined along a regular dimension."""
    tensors = list(tensors)
    first = tensors[0]
    if not all(isinstance(t, NestedTensor) and t.layout == first.layout for t in tensors):
        raise RuntimeError("cat(): expected every tensor to be a NestedTensor of one layout")
    d = _inner_dim(first, dim, "cat")
    if first.layout == "strided":
        if len({len(t) for t in tensors}) > 1:
            raise RuntimeError("cat(): NestedTensors of different batch sizes")
        columns = zip(*(t.unbind() for t in tensors))
        return _build.strided_from_list([_dense_cat(list(parts), d - 1) for parts in columns])
    if d == first._ragged_idx:
        raise RuntimeError("cat(): not supported for NestedTensor on ragged dim")
    for t in tensors[1:]:
        if t._ragged_size != first._ragged_size or t._ragged_idx != first._ragged_idx:
            raise RuntimeError(
                f"cat(): expected NestedTensors of one ragged structure, got shapes "
                f"{tuple(first.shape)} and {tuple(t.shape)}"
            )
    return first._like(_dense_cat([t._inner for t in tensors], d - 1))
