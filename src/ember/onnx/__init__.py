"""``ember.onnx``: export ember models to ONNX files that ONNX Runtime runs anywhere.

``export`` runs the model once on example inputs while ember's op calls are recorded, maps
each recorded op to ONNX operators through one table (``ember.onnx._symbolics.SYMBOLICS``),
checks the graph with ``onnx.checker`` and shape inference and writes it. It needs the
``onnx`` package (``pip install ember[onnx]``); ``import ember.onnx`` alone does not.
"""

from __future__ import annotations

import enum
import os
import warnings
from typing import IO, Any

from ._state import OnnxExporterError, OnnxImportError, TracerWarning, is_in_onnx_export


class TrainingMode(enum.IntEnum):
    """Which mode the model runs in while it is exported (torch.onnx's enum)."""

    EVAL = 0
    PRESERVE = 1
    TRAINING = 2


class OperatorExportTypes(enum.IntEnum):
    ONNX = 0
    ONNX_ATEN = 1
    ONNX_ATEN_FALLBACK = 2
    ONNX_FALLTHROUGH = 3


def export(
    model,
    args: Any = (),
    f: str | os.PathLike | IO[bytes] | None = None,
    *,
    kwargs: dict | None = None,
    export_params: bool = True,
    verbose: bool = False,
    input_names: list[str] | None = None,
    output_names: list[str] | None = None,
    opset_version: int | None = None,
    dynamic_axes: dict | None = None,
    do_constant_folding: bool = True,
    training: TrainingMode = TrainingMode.EVAL,
    dynamo: bool = False,
    keep_initializers_as_inputs: bool | None = None,
    **unused: Any,
) -> None:
    """Export ``model`` run on ``args`` to the ONNX file ``f`` (a path or a binary file).

    The model runs once (in eval mode unless ``training`` says otherwise); every ember op it
    calls on values computed from the inputs becomes ONNX nodes, everything else (parameters,
    buffers, values computed from constants) becomes initializers, so constants are always
    folded. ``dynamic_axes`` maps an input or output name to the axes (a list, or a dict
    axis -> name) that may change size; batch and sequence axes stay dynamic through the
    graph. Python control flow that reads a value computed from an input is traced as taken,
    with a ``TracerWarning``. Ops without an ONNX mapping raise ``OnnxExporterError`` naming
    the op and the source line. ``opset_version`` defaults to 17 and may be 17 to the newest
    the installed ``onnx`` knows. ``dynamo`` is accepted and ignored (one exporter).

    Example::
        >>> model = ember.nn.Sequential(ember.nn.Linear(4, 2), ember.nn.ReLU())
        >>> ember.onnx.export(model, (ember.randn(1, 4),), "model.onnx",
        ...                   input_names=["x"], output_names=["y"],
        ...                   dynamic_axes={"x": {0: "batch"}, "y": {0: "batch"}})
    """
    from ._export import build_model, write_model

    if f is None:
        raise TypeError("ember.onnx.export: f (a path or a binary file object) is required")
    modes = _set_training(model, training)
    try:
        onnx_model = build_model(
            model,
            args,
            kwargs=kwargs,
            input_names=input_names,
            output_names=output_names,
            dynamic_axes=dynamic_axes,
            opset_version=opset_version,
            export_params=export_params,
        )
    finally:
        for module, mode in modes:
            module.training = mode
    if verbose:
        import onnx

        with warnings.catch_warnings():  # printable_graph shows initializer shapes, not data
            warnings.simplefilter("ignore", DeprecationWarning)
            text = onnx.helper.printable_graph(onnx_model.graph)
        print(text)
    write_model(onnx_model, f)


def _set_training(model, training) -> list:
    """Put ``model`` in the mode ``training`` asks for; the modes to restore afterwards."""
    if not hasattr(model, "modules") or training == TrainingMode.PRESERVE:
        return []
    modes = [(m, m.training) for m in model.modules()]
    model.train(training == TrainingMode.TRAINING)
    return modes


def load(f):
    """An ONNX model (a path, a binary file or bytes) as an ember Module running its graph
    with ember ops; floating-point initializers are trainable ``nn.Parameter``s.

    The model is checked at load as ONNX Runtime checks it: a file ONNX Runtime refuses (an
    input nothing produces, a cycle, an output never computed, no outputs, an initializer whose
    data does not match its type and shape, a missing required attribute, an LSTM without
    ``hidden_size``, a Conv whose input and weight ranks differ, an attribute of the wrong type,
    types or shapes that ONNX's strict type and shape inference refuses) raises
    ``OnnxImportError`` naming the node or initializer, as does one using what ember lacks (an
    operator, a data type). Two kinds of file ONNX Runtime runs are refused on purpose: an
    initializer given twice (it computes with the first or the last copy, depending on the
    graph) and an integer attribute beyond 32 bits (it keeps the low 32 bits). Nodes listed out
    of order run in an order that works. Running the module checks each input against its
    declared type and fixed dims, and what a run's values break (an index out of bounds) is a
    ``RuntimeError``, as ONNX Runtime refuses the run.

    Initializers keep their ONNX names: ``model.initializers["features.0.weight"]`` and the
    ``state_dict()`` key ``"initializers.features.0.weight"``; each dot of a name is a
    submodule, so every ONNX name gives a distinct key (``a.b`` and ``a_b`` too) and none
    collides with a Module attribute (``forward``, ``keys``).

    Example::
        >>> model = ember.onnx.load("model.onnx")
        >>> model(ember.randn(1, 4)).sum().backward()   # gradients reach model.parameters()
    """
    from ._module import load as load_onnx

    return load_onnx(f)


def is_onnxrt_backend_supported() -> bool:
    try:
        import onnxruntime  # noqa: F401
    except ImportError:
        return False
    return True


__all__ = [
    "OnnxExporterError",
    "OnnxImportError",
    "OperatorExportTypes",
    "TracerWarning",
    "TrainingMode",
    "export",
    "is_in_onnx_export",
    "is_onnxrt_backend_supported",
    "load",
]
