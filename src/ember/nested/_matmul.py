"""Matrix products with nested tensors: ``matmul``/``@``, ``bmm`` and ``linear``.

A nested tensor times a dense matrix is one product of the values (jagged) or of the rows of
the buffer (strided, when every component has the same last dimension). Batched operands go
component by component.
"""

from __future__ import annotations

import ember

from .._tensor import Tensor
from . import _build
from ._tensor import NestedTensor, make_strided


def _shape_text(t):
    if isinstance(t, NestedTensor):
        return tuple(t.shape) if t.layout == "jagged" else "a strided NestedTensor"
    return t.shape


def _unsupported(a, b) -> RuntimeError:
    # PyTorch's words: the first shape as a tuple, the second as a Size
    strided = isinstance(b, NestedTensor) and b.layout == "strided"
    second = "a strided NestedTensor" if strided else repr(b.shape)
    return RuntimeError(
        f"matmul(): not supported between inputs of shapes {_shape_text(a)} and {second}"
    )


def uniform_last(nt):
    sizes = {s[-1] for s in nt._sizes} if nt._sizes and nt.dim() > 1 else set()
    return sizes.pop() if len(sizes) == 1 else None


def rows_apply(nt, fn):
    """``fn`` on the strided buffer seen as rows of the common last dimension (which ``fn``
    may change, as a linear layer does)."""
    out = fn(nt._inner.view(-1, uniform_last(nt)))
    sizes = [s[:-1] + (out.shape[-1],) for s in nt._sizes]
    return make_strided(out.reshape(-1), sizes)


def matmul(input, other):
    a_nested, b_nested = isinstance(input, NestedTensor), isinstance(other, NestedTensor)
    if not a_nested:
        raise RuntimeError(
            f"matmul(): a dense tensor times a NestedTensor is not supported (shapes "
            f"{_shape_text(input)} and {_shape_text(other)})"
        )
    if b_nested:
        if len(input) != len(other) or input.layout != other.layout:
            raise _unsupported(input, other)
        outs = [ember.matmul(a, b) for a, b in zip(input.unbind(), other.unbind())]
        try:
            return _build.from_list_like(input, outs)
        except RuntimeError:
            raise _unsupported(input, other) from None
    if not isinstance(other, Tensor):
        raise TypeError(f"matmul(): argument 'other' must be Tensor, not {type(other).__name__}")
    n = input.dim()
    if other.dim() <= 2:
        if input.layout == "jagged":
            if input._ragged_idx == n - 1:
                raise _unsupported(input, other)
            return input._like(ember.matmul(input._inner, other))
        if other.dim() == 2 and uniform_last(input) is not None:
            return rows_apply(input, lambda rows: ember.matmul(rows, other))
        return _build.strided_from_list([ember.matmul(c, other) for c in input.unbind()])
    if other.dim() == n and other.shape[0] in (1, len(input)):
        mats = other.unbind(0)
        pick = (lambda i: mats[0]) if other.shape[0] == 1 else (lambda i: mats[i])
        outs = [ember.matmul(c, pick(i)) for i, c in enumerate(input.unbind())]
    elif other.dim() < n:
        outs = [ember.matmul(c, other) for c in input.unbind()]
    else:
        raise _unsupported(input, other)
    try:
        return _build.from_list_like(input, outs)
    except RuntimeError:
        raise _unsupported(input, other) from None


def bmm(input, mat2):
    if input.dim() != 3 or mat2.dim() != 3:
        raise RuntimeError(
            f"batch1 must be a 3D tensor and batch2 must be a 3D tensor, got {input.dim()}D "
            f"and {mat2.dim()}D"
        )
    return matmul(input, mat2)


def linear(input, weight, bias=None):
    """``input @ weight.T + bias`` over the last dimension of every component."""
    if isinstance(weight, NestedTensor) or isinstance(bias, NestedTensor):
        raise RuntimeError("linear(): weight and bias must be dense tensors, not NestedTensor")
    linear_dense = ember.nn.functional.linear
    if input.layout == "jagged":
        if input._ragged_idx == input.dim() - 1:
            raise RuntimeError(
                f"linear(): not supported for NestedTensor of shape {tuple(input.shape)} "
                "(the ragged dimension is the last)"
            )
        return input._like(linear_dense(input._inner, weight, bias))
    if uniform_last(input) is not None:
        return rows_apply(input, lambda rows: linear_dense(rows, weight, bias))
    return _build.strided_from_list([linear_dense(c, weight, bias) for c in input.unbind()])
