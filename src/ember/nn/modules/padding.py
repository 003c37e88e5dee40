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

    def _check_input(self, input) -> None:
        allowed = (self._dims + 1, self._dims + 2)
        if input.dim() not in allowed:
            raise ValueError(
                f"expected {allowed[0]}D or {allowed[1]}D input (got {input.dim()}D input)"
            )

    def forward(self, input):
        if self._mode == "circular":
            self._check_input(input)
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


class ReflectionPad1d(_PadNd):
    """Pad the last dim with its mirror image (the border not repeated)."""

    _mode = "reflect"


class ReflectionPad2d(_PadNd):
    """Pad the last two dims with their mirror image."""

    _dims, _mode = 2, "reflect"


class ReflectionPad3d(_PadNd):
    """Pad the last three dims with their mirror image."""

    _dims, _mode = 3, "reflect"


class ReplicationPad1d(_PadNd):
    """Pad the last dim by repeating its border values."""

    _mode = "replicate"


class ReplicationPad2d(_PadNd):
    """Pad the last two dims by repeating their border values."""

    _dims, _mode = 2, "replicate"


class ReplicationPad3d(_PadNd):
    """Pad the last three dims by repeating their border values."""

    _dims, _mode = 3, "replicate"


class CircularPad1d(_PadNd):
    """Pad the last dim by wrapping around (periodic boundary)."""

    _mode = "circular"


class CircularPad2d(_PadNd):
    """Pad the last two dims by wrapping around."""

    _dims, _mode = 2, "circular"


class CircularPad3d(_PadNd):
    """Pad the last three dims by wrapping around."""

    _dims, _mode = 3, "circular"
