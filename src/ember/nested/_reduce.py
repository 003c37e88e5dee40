"""Reductions and softmax over nested tensors.

Over dimensions other than the batch and ragged ones, the op runs on the inner values at once;
over the ragged dimension (jagged) it runs per component, giving a dense result; the batch
dimension alone cannot be reduced, as in PyTorch.
"""

from __future__ import annotations

from .. import _op_namespace as ember
from .._tensor import _wrap_dim
from . import _build
from ._tensor import NestedTensor


def _normalize(dim, ndim: int) -> tuple:
    dims = (dim,) if isinstance(dim, int) else tuple(dim)
    return tuple(sorted({_wrap_dim(d, ndim) for d in dims}))


def _all_elements(nt):
    if nt.layout == "jagged" and nt._lengths is None:
        return nt._inner
    return ember.cat([c.reshape(-1) for c in nt.unbind()])


def reduction(original, name: str, takes_dtype: bool = True):
    """``sum``, ``mean``, ``amax``, ``amin`` with PyTorch's ``dim``/``keepdim`` arguments."""

    def nested(input, dim=None, keepdim=False, *, dtype=None):
        extra = {"dtype": dtype} if takes_dtype and dtype is not None else {}
        if dim is None or (isinstance(dim, (tuple, list)) and len(dim) == 0):
            return original(_all_elements(input), **extra)
        n = input.dim()
        dims = _normalize(dim, n)
        if input.layout == "strided":
            if 0 in dims:
                raise RuntimeError(
                    "NestedTensor can only be reduced across the last dimension for now got "
                    "dimension 0 instead."
                )
            inner_dims = tuple(d - 1 for d in dims)
            outs = [original(c, inner_dims, keepdim, **extra) for c in input.unbind()]
            return _build.strided_from_list(outs, n if keepdim else n - len(dims))
        ragged = input._ragged_idx
        if 0 in dims and ragged not in dims:
            raise RuntimeError(
                f"{name}(): reducing along the batch dimension but not the ragged dimension is "
                "not supported for nested tensors"
            )
        if ragged in dims and 0 not in dims and len(dims) > 1:
            raise RuntimeError(
                "Cannot reduce on both ragged and non-batch dimensions without also reducing "
                "on batch"
            )
        if 0 in dims:  # batch and ragged together: over the packed values
            values = input._inner if input._lengths is None else _packed(input)
            out = original(values, tuple(d - 1 for d in dims if d != 0), keepdim, **extra)
            return out.unsqueeze(0) if keepdim else out
        if ragged in dims:  # one result per component: dense
            return ember.stack([original(c, ragged - 1, keepdim, **extra) for c in input.unbind()])
        out = original(input._inner, tuple(d - 1 for d in dims), keepdim, **extra)
        before = sum(1 for d in dims if d < ragged)
        return input._like(out, ragged_idx=ragged if keepdim else ragged - before)

    nested.__name__ = name
    return nested


def _packed(nt):
    return ember.cat(list(nt.unbind()), dim=nt._ragged_idx - 1)


def softmax_like(original, name: str):
    """``softmax``/``log_softmax(input, dim, ...)``: over a regular dimension on the values,
    over the ragged one per component."""

    def nested(input, dim=None, *args, **kwargs):
        if dim is None:
            raise RuntimeError(f"{name}(): an explicit dim is required for NestedTensor")
        n = input.dim()
        d = _wrap_dim(dim, n)
        if d == 0:
            if input.layout == "jagged":
                raise RuntimeError(
                    f"{name}(): not supported when reducing across the batch dimension for "
                    "NestedTensor"
                )
            raise RuntimeError(f"Cannot apply {name} across nested dimension 0")
        if input.layout == "jagged" and d != input._ragged_idx:
            return input._like(original(input._inner, d - 1, *args, **kwargs))
        outs = [original(c, d - 1, *args, **kwargs) for c in input.unbind()]
        return _build.from_list_like(input, outs)

    nested.__name__ = name
    return nested


__all__ = ["NestedTensor", "reduction", "softmax_like"]
