"""Padding layers: zero, constant, reflection, replication and circular, in 1 to 3 dims."""

from __future__ import annotations

from ...ops.indexing import pad as _pad
from .module import Module


def _pairs(padding, dims: int) -> tuple:
    """An int pads every side; otherwise (left, right, top, bottom, front, back)[: 2 · dims]."""
    if isinstance(padding, int):
        return (padding,) * (2 * dims)
    padding = tuple(padding)
    if len(padding) != 2 * dims:
        raise ValueError(
            f"{2 * dims}-element padding expected for {dims}-d padding, got {len(padding)}"
        )
    return padding


class _PadNd(Module):
    _dims = 1
    _mode = "constant"

    def __init__(self, padding) -> None:
        super().__init__()
        self.padding = _pairs(padding, self._dims)

    def forward(self, input):
        return _pad(input, self.padding, self._mode)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class _ConstantPadNd(_PadNd):
    def __init__(self, padding, value: float) -> None:
        super().__init__(padding)
        self.value = value

    def forward(self, input):
        return _pad(input, self.padding, "constant", self.value)

    def extra_repr(self) -> str:
        return f"padding={self.padding}, value={self.value}"


class ConstantPad1d(_ConstantPadNd):
    """Pad the last dim with ``value``: (*, W) -> (*, W + left + right)."""


class ConstantPad2d(_ConstantPadNd):
    """Pad the last two dims with ``value``."""

    _dims = 2


class ConstantPad3d(_ConstantPadNd):
    """Pad the last three dims with ``value``."""

    _dims = 3


class _ZeroPadNd(_ConstantPadNd):
    def __init__(self, padding) -> None:
        super().__init__(padding, 0.0)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class ZeroPad1d(_ZeroPadNd):
    """Pad the last dim with zeros."""


class ZeroPad2d(_ZeroPadNd):
    """Pad the last two dims with zeros."""

    _dims = 2


class ZeroPad3d(_ZeroPadNd):
    """Pad the last three dims with zeros."""

    _dims = 3


class _ReflectionPadNd(_PadNd):
    _mode = "reflect"


class ReflectionPad1d(_ReflectionPadNd):
    """Pad the last dim with its mirror image (the border not repeated)."""


class ReflectionPad2d(_ReflectionPadNd):
    """Pad the last two dims with their mirror image."""

    _dims = 2


class ReflectionPad3d(_ReflectionPadNd):
    """Pad the last three dims with their mirror image."""

    _dims = 3


class _ReplicationPadNd(_PadNd):
    _mode = "replicate"


class ReplicationPad1d(_ReplicationPadNd):
    """Pad the last dim by repeating its border values."""


class ReplicationPad2d(_ReplicationPadNd):
    """Pad the last two dims by repeating their border values."""

    _dims = 2


class ReplicationPad3d(_ReplicationPadNd):
    """Pad the last three dims by repeating their border values."""

    _dims = 3


class _CircularPadNd(_PadNd):
    _mode = "circular"

    def _check_input_dim(self, input) -> None:
        allowed = (self._dims + 1, self._dims + 2)
        if input.dim() not in allowed:
            raise ValueError(
                f"expected {allowed[0]}D or {allowed[1]}D input (got {input.dim()}D input)"
            )

    def forward(self, input):
        self._check_input_dim(input)
        return _pad(input, self.padding, "circular")


class CircularPad1d(_CircularPadNd):
    """Pad the last dim by wrapping around (periodic boundary)."""


class CircularPad2d(_CircularPadNd):
    """Pad the last two dims by wrapping around."""

    _dims = 2


class CircularPad3d(_CircularPadNd):
    """Pad the last three dims by wrapping around."""

    _dims = 3
