"""``ember.onnx``: importable so that programs which import it run; export is not there yet.

``export`` raises a clear error until ember's ONNX exporter lands (it will write files with
the ``onnx`` package and check them in ONNX Runtime).
"""

from __future__ import annotations


class OnnxExporterError(RuntimeError):
    """Raised when a model cannot be exported to ONNX."""


def is_in_onnx_export() -> bool:
    return False


def export(model, args=(), f=None, *unused, **kwargs):
    raise OnnxExporterError(
        "ember.onnx.export is not implemented yet: ember cannot write ONNX files in this version"
    )
