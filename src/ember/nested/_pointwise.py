"""Pointwise ops on nested tensors: run on the inner tensor (values or buffer) at once.

Unary ops (and those whose other arguments are numbers) apply to every element, so the inner
tensor is all they need. Binary ops take a nested tensor of the same structure, a number or
0-d tensor, or a dense tensor that broadcasts against every component (PyTorch's jagged rule:
it may not span the ragged dimension, and may lead with the batch dimension).
"""

from __future__ import annotations

from .. import _op_namespace as ember
from .._tensor import Tensor
from . import _build
from ._tensor import NestedTensor


def unary(original):
    """``original(input, *args, **kwargs)`` on a nested ``input``: the same op on its inner
    tensor; an in-place op (returning the inner tensor itself) returns ``input``."""

    def nested(input, *args, **kwargs):
        inner = input._inner
        out = original(inner, *args, **kwargs)
        return input if out is inner else input._like(out)

    nested.__name__ = getattr(original, "__name__", "unary")
    return nested


def _is_strided_nested(t) -> bool:
    return isinstance(t, NestedTensor) and t.layout == "strided"


def _mismatch(name: str, a, b) -> RuntimeError:
    """PyTorch's message for operands that do not combine (a strided nested tensor has no
    shape to print)."""
    if _is_strided_nested(a) or _is_strided_nested(b):
        return RuntimeError(f"{name} does not support broadcasting when given a NestedTensor")
    return RuntimeError(
        f"cannot call binary pointwise function {name}.Tensor with inputs of shapes "
        f"{tuple(a.shape)} and {tuple(b.shape)}"
    )


def _dense_against_values(nt, dense) -> bool:
    """Whether ``dense`` broadcasts against the jagged ``nt``'s values directly."""
    n, k, ragged = nt.dim(), dense.dim(), nt._ragged_idx
    if k >= n:
        return False
    position = ragged - (n - k)  # the ragged dimension's index within dense, if it has it
    return position < 0 or dense.shape[position] == 1


def _per_component_dense(nt, dense, name: str):
    """The dense operand for each component, or None when it cannot broadcast."""
    n, k, batch = nt.dim(), dense.dim(), len(nt)
    if k > n:
        return None
    if k == n:
        if dense.shape[0] not in (1, batch):
            return None
        if nt.layout == "jagged" and dense.shape[nt._ragged_idx] != 1:
            return None
        rows = dense.unbind(0)
        return [rows[0 if dense.shape[0] == 1 else i] for i in range(batch)]
    return [dense] * batch


def binary(original, name: str):
    """``original(input, other, ...)`` where ``input`` is a nested tensor (the method's self)
    and ``other`` a nested tensor, a number or a dense tensor."""

    def nested(input, other, *args, **kwargs):
        if not isinstance(input, NestedTensor):  # the function form with the nested second
            return _swapped(original, name, input, other, args, kwargs)
        if isinstance(other, NestedTensor):
            if not input._same_structure(other):
                raise _mismatch(name, input, other)
            return input._like(original(input._inner, other._inner, *args, **kwargs))
        if not isinstance(other, Tensor) or other.dim() == 0:
            return input._like(original(input._inner, other, *args, **kwargs))
        if input.layout == "jagged" and _dense_against_values(input, other):
            return input._like(original(input._inner, other, *args, **kwargs))
        operands = _per_component_dense(input, other, name)
        if operands is None:
            raise _mismatch(name, input, other)
        outs = [original(c, d, *args, **kwargs) for c, d in zip(input.unbind(), operands)]
        return _build.from_list_like(input, outs)

    nested.__name__ = name
    return nested


def _swapped(original, name, dense, nt, args, kwargs):
    """``original(dense_or_number, nested)``: the nested operand second."""
    if not isinstance(dense, Tensor) or dense.dim() == 0:
        return nt._like(original(dense, nt._inner, *args, **kwargs))
    if nt.layout == "jagged" and _dense_against_values(nt, dense):
        return nt._like(original(dense, nt._inner, *args, **kwargs))
    operands = _per_component_dense(nt, dense, name)
    if operands is None:
        raise _mismatch(name, dense, nt)
    outs = [original(d, c, *args, **kwargs) for c, d in zip(nt.unbind(), operands)]
    return _build.from_list_like(nt, outs)


def inplace(original, name: str):
    """An in-place method (``add_``, ``mul_``, ``fill_``...) on the inner tensor."""

    def nested(self, *args, **kwargs):
        if args and isinstance(args[0], NestedTensor):
            if not self._same_structure(args[0]):
                raise _mismatch(name, self, args[0])
            args = (args[0]._inner, *args[1:])
        elif args and isinstance(args[0], Tensor) and args[0].dim() > 0:
            if not (self.layout == "jagged" and _dense_against_values(self, args[0])):
                raise _mismatch(name, self, args[0])
        original(self._inner, *args, **kwargs)
        return self

    nested.__name__ = name
    return nested


def where(condition, input=None, other=None):
    """``where(condition, input, other)`` with nested operands of one structure (and numbers
    or dense tensors that broadcast against the values)."""
    operands = (condition, input, other)
    nested = [t for t in operands if isinstance(t, NestedTensor)]
    like = nested[0]
    for t in nested[1:]:
        if not like._same_structure(t):
            raise _mismatch("where", like, t)
    args = []
    for t in operands:
        if isinstance(t, NestedTensor):
            t = t._inner
        elif isinstance(t, Tensor) and t.dim() > 0:
            if not (like.layout == "jagged" and _dense_against_values(like, t)):
                raise _mismatch("where", like, t)
        args.append(t)
    return like._like(ember.where(*args))


def like_factory(original):
    """``zeros_like(nt)`` and friends: the factory on the inner tensor, same structure."""

    def nested(input, *args, **kwargs):
        return input._like(original(input._inner, *args, **kwargs))

    nested.__name__ = getattr(original, "__name__", "like")
    return nested


def to(self, *args, **kwargs):
    """``nt.to(dtype)``, ``nt.to(device)``, ``nt.to(other)``: the inner tensor converted."""
    if args and isinstance(args[0], NestedTensor):
        args = (args[0].device, args[0].dtype, *args[1:])
    out = self._inner.to(*args, **kwargs)
    return self if out is self._inner else self._like(out)


def clone(self, *, memory_format=None):
    return self._like(self._inner.clone())


def contiguous(self, memory_format=None):
    """The same components, packed without holes in their own order."""
    if self.is_contiguous():
        return self
    if self.layout == "jagged" and self._lengths is None:
        return self._like(self._inner.contiguous())
    return _build.from_list_like(self, [c.contiguous() for c in self.unbind()])
