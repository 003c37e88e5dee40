"""Dropout layers (active in training mode only)."""

from __future__ import annotations

from .. import functional as F
from .module import Module


class _DropoutNd(Module):
    """What every dropout layer shares: ``p`` and ``inplace``, and a forward through its
    functional (``_fn``, set by each subclass)."""

    _fn = None

    def __init__(self, p: float = 0.5, inplace: bool = False) -> None:
        super().__init__()
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p, self.inplace = p, inplace

    def forward(self, input):
        return type(self)._fn(input, self.p, self.training, self.inplace)

    def extra_repr(self) -> str:
        return f"p={self.p}, inplace={self.inplace}"


class Dropout(_DropoutNd):
    _fn = staticmethod(F.dropout)


class Dropout2d(Dropout):
    _fn = staticmethod(F.dropout2d)
