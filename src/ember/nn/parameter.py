"""Parameter: a tensor that a Module registers as one of its learnable weights; Buffer; and
the lazy modules' placeholders (UninitializedParameter, UninitializedBuffer), as in PyTorch."""

from __future__ import annotations

from .. import _creation
from .._tensor import Tensor


class Parameter(Tensor):
    """A leaf tensor that requires grad and is listed by ``Module.parameters()``.

    Example::
        >>> w = ember.nn.Parameter(ember.zeros(2, 3))
        >>> w.requires_grad
        True
    """

    def __new__(cls, data: Tensor | None = None, requires_grad: bool = True):
        if data is None:
            data = _creation.empty(0)
        p = cls._wrap(data._data)
        p._vc = data._vc  # shares memory with ``data``, like PyTorch's Parameter
        p.requires_grad = requires_grad
        return p

    def __init__(self, data=None, requires_grad: bool = True):
        pass

    def __repr__(self) -> str:
        return "Parameter containing:\n" + super().__repr__()

    def __deepcopy__(self, memo):
        out = Parameter(Tensor._wrap(self._data.copy()), self.requires_grad)
        if self._grad is not None:
            out._grad = self._grad.__deepcopy__(memo)
        memo[id(self)] = out
        return out


class Buffer(Tensor):
    """Marks a tensor to be registered as a buffer when assigned to a Module attribute."""

    def __new__(cls, data: Tensor, *, persistent: bool = True):
        b = cls._wrap(data._data)
        b._vc = data._vc
        b.persistent = persistent
        return b


class UninitializedParameter(Parameter):
    """A parameter whose shape is not known yet; ``materialize`` gives it one (in place)."""

    cls_to_become = Parameter
    _lazy_placeholder = True  # state_dict keeps it as it is

    def __new__(cls, requires_grad: bool = True, device=None, dtype=None):
        return Parameter.__new__(cls, _creation.empty(0, device=device, dtype=dtype), requires_grad)

    def __init__(self, requires_grad: bool = True, device=None, dtype=None):
        pass

    def materialize(self, shape, device=None, dtype=None) -> None:
        """Allocate (uninitialised) storage of ``shape`` and become a plain Parameter."""
        data = _creation.empty(
            *tuple(shape),
            device=device if device is not None else self.device,
            dtype=dtype if dtype is not None else self.dtype,
        )
        self._data = data._data
        self._vc = [0]
        self.__class__ = self.cls_to_become

    def __repr__(self) -> str:
        return "<UninitializedParameter>"

    def __deepcopy__(self, memo):
        out = UninitializedParameter(self.requires_grad, self.device, self.dtype)
        memo[id(self)] = out
        return out


class UninitializedBuffer(Tensor):
    """A lazy module's buffer before its shape is known: a zero-size placeholder tensor
    that the first forward (or a loaded state dict) replaces."""

    _lazy_placeholder = True  # state_dict keeps it as it is

    def __new__(cls, requires_grad: bool = False, device=None, dtype=None):
        return cls._wrap(_creation.empty(0, device=device, dtype=dtype)._data)

    def __init__(self, requires_grad: bool = False, device=None, dtype=None):
        pass


def is_lazy(param) -> bool:
    """Whether ``param`` is still an uninitialised placeholder."""
    return isinstance(param, (UninitializedParameter, UninitializedBuffer))
