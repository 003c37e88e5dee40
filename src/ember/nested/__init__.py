"""``ember.nested``: PyTorch's nested tensors (``torch.nested``), strided and jagged layouts.

A nested tensor is a batch of tensors whose sizes differ in some dimension (sequences of
different lengths). Build one with ``nested_tensor`` (a leaf), ``as_nested_tensor`` (keeps
the autograd history of its components), ``nested_tensor_from_jagged`` or ``narrow``; read it
back with ``unbind`` or ``to_padded_tensor``. Pointwise ops, reductions, softmax, shape ops,
``matmul``/``linear``, ``layer_norm``, ``dropout`` and ``scaled_dot_product_attention`` work on
it, and autograd reaches the components through all of them. Other ops raise
``NotImplementedError`` (a ``RuntimeError``) naming the op.

Supported: pointwise unary and binary ops (with nested tensors of the same structure, dense
tensors that broadcast over the values, numbers), ``where``, ``sum``/``mean``/``amax``/``amin``,
``softmax``/``log_softmax``, ``transpose``/``permute``, ``view``/``reshape``, ``unflatten``,
``flatten``, ``unsqueeze``/``squeeze``, ``narrow``, ``chunk``/``split``/``cat``,
``matmul``/``bmm``, ``linear``, ``embedding``, ``layer_norm``, ``dropout``,
``scaled_dot_product_attention``, ``clone``, ``detach``, ``to``, the ``*_like`` factories and
``to_padded_tensor``.

Example::
    >>> a = ember.randn(2, 4, requires_grad=True)
    >>> nt = ember.nested.as_nested_tensor([a, ember.randn(3, 4)], layout=ember.jagged)
    >>> nt.shape
    ember.Size([2, j..., 4])
    >>> ember.nn.Linear(4, 8)(nt).relu().values().sum().backward()
    >>> a.grad.shape
    ember.Size([2, 4])
"""

from __future__ import annotations

from ._construct import (
    as_nested_tensor,
    masked_select,
    narrow,
    nested_tensor,
    nested_tensor_from_jagged,
)
from ._install import install
from ._layout import jagged
from ._nested_int import NestedInt
from ._padding import to_padded_tensor
from ._tensor import JaggedTensor, NestedTensor, StridedNestedTensor

install()

__all__ = [
    "JaggedTensor",
    "NestedInt",
    "NestedTensor",
    "StridedNestedTensor",
    "as_nested_tensor",
    "jagged",
    "masked_select",
    "narrow",
    "nested_tensor",
    "nested_tensor_from_jagged",
    "to_padded_tensor",
]
