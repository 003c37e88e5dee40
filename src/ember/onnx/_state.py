"""What the rest of ember may ask about an export without importing the ``onnx`` package."""

from __future__ import annotations

exporting: list = []  # non-empty while ``ember.onnx.export`` runs a model


class OnnxExporterError(RuntimeError):
    """Raised when a model cannot be exported to ONNX."""


class OnnxImportError(OnnxExporterError, ValueError):
    """Raised by ``ember.onnx.load`` for a model it cannot run: an invalid one (what ONNX
    Runtime refuses too: an input nothing produces, a cycle, an initializer whose data does not
    match its shape) or one that needs what ember lacks (an operator, a data type). A
    ``ValueError`` (the file is wrong) and an ``OnnxExporterError`` (ember's ONNX error)."""


class TracerWarning(UserWarning):
    """The export read a value computed from an input into Python (``if x.sum() > 0``,
    ``x.item()``): the graph holds the path taken for the example input only."""


def is_in_onnx_export() -> bool:
    """True while ``ember.onnx.export`` runs the model."""
    return bool(exporting)
