"""Parameter: a tensor that a Module registers as one of its learnable weights."""

from __future__ import annotations

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
            from .._creation import empty

            data = empty(0)
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


def __getattr__(name: str):
    # the lazy modules' placeholders live with them (importing them here would be circular)
    if name in ("UninitializedParameter", "UninitializedBuffer", "is_lazy"):
        from .modules import lazy

        return getattr(lazy, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
