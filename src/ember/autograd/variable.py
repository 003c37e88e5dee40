"""``ember.autograd.Variable``: PyTorch's pre-0.4 wrapper, kept because old programs use it.

Since PyTorch 0.4 every tensor is a Variable: ``Variable(t, requires_grad=True)`` gives a
tensor that shares ``t``'s data and requires grad, and ``isinstance(x, Variable)`` holds for
every tensor.
"""

from __future__ import annotations

import warnings

from .node import TENSOR_LAYER, _tensor_class


class _VariableMeta(type):
    def __instancecheck__(cls, obj) -> bool:
        return isinstance(obj, _tensor_class())

    def __call__(cls, data=None, requires_grad: bool = False, volatile: bool = False):
        Tensor = _tensor_class()
        if volatile:
            warnings.warn(
                "volatile was removed and now has no effect. Use `with torch.no_grad():` instead.",
                UserWarning,
                stacklevel=2,
            )
        if data is None:
            data = TENSOR_LAYER.tensor([])
        if not isinstance(data, Tensor):
            raise TypeError(f"Variable data has to be a tensor, but got {type(data).__name__}")
        out = data.detach()
        if requires_grad:
            out.requires_grad_(True)
        return out


class Variable(metaclass=_VariableMeta):
    """``Variable(tensor, requires_grad=False)``: the tensor itself (sharing its data)."""
