"""``ember.jit``: TorchScript's front doors, on ember's ONNX exporter.

``trace`` records a module or function on example inputs (through ``ember.onnx.export``) and
returns a ``TracedModule``: inference calls (no gradient needed) run the recorded graph in
ONNX Runtime, re-recording for inputs of new shapes the way ``ember.compile`` guards a
recording; calls that need gradients, or that find the parameters changed, run the original
eagerly, so outputs always equal eager ones. ``save`` writes the ONNX file, which ``load``
(or ONNX Runtime anywhere else) runs without the original Python class.

ember has no TorchScript compiler: ``script`` traces when given ``example_inputs`` and
otherwise returns its argument unchanged (it already runs as Python); ``freeze``, ``ignore``,
``unused`` and ``export`` are accepted and documented no-ops.
"""

from __future__ import annotations

import io
import os
import warnings
from collections.abc import Callable
from typing import Any

from .. import nn
from .._tensor import Tensor
from ..onnx import OnnxExporterError, TracerWarning, is_in_onnx_export

_MAX_RECORDINGS = 8


def _flatten(obj, out: list):
    """``obj``'s tensors appended to ``out``; a structure to rebuild ``obj`` from them."""
    if isinstance(obj, Tensor):
        out.append(obj)
        return None
    if isinstance(obj, (list, tuple)):
        return (type(obj), [_flatten(o, out) for o in obj])
    return ("value", obj)


def _rebuild(structure, flat: list):
    if structure is None:
        return flat.pop(0)
    kind, items = structure
    if kind == "value":
        return items
    values = [_rebuild(s, flat) for s in items]
    if kind is tuple or kind is list:
        return kind(values)
    return kind(*values)  # a named tuple


class _Recording:
    __slots__ = ("model_bytes", "session", "output_structure", "input_names")

    def __init__(self, model_bytes, session, output_structure, input_names):
        self.model_bytes = model_bytes
        self.session = session
        self.output_structure = output_structure
        self.input_names = input_names


class TracedModule(nn.Module):
    """A module or function recorded on example inputs (see ``ember.jit.trace``).

    Example::
        >>> traced = ember.jit.trace(nn.Linear(3, 2).eval(), ember.randn(4, 3))
        >>> with ember.no_grad():
        ...     y = traced(ember.randn(4, 3))   # runs in ONNX Runtime
        >>> traced.save("linear.onnx")
    """

    def __init__(self, original, example_inputs: tuple):
        super().__init__()
        if isinstance(original, nn.Module):
            self.original = original  # registered, so parameters and state_dict are its own
        else:
            object.__setattr__(self, "_function", original)
        object.__setattr__(self, "_recordings", {})
        object.__setattr__(self, "_example_key", self._key(example_inputs))
        self._record(example_inputs)

    # --- recording --------------------------------------------------------------------------
    def _callable(self):
        return self.original if "original" in self._modules else self._function

    def _key(self, args: tuple):
        parts = []
        for a in args:
            if isinstance(a, Tensor):
                parts.append((tuple(a.shape), str(a.dtype), str(a.device)))
            else:
                parts.append(("value", repr(a)))
        params = [(id(p._data), p._vc[0]) for p in self.parameters()]
        params += [(id(b._data), b._vc[0]) for b in self.buffers() if b is not None]
        return tuple(parts), tuple(params)

    def _record(self, args: tuple) -> _Recording:
        from ..onnx import export

        target = self._callable()
        module = target if isinstance(target, nn.Module) else _FunctionModule(target)
        buffer = io.BytesIO()
        tensors = [a for a in args if isinstance(a, Tensor)]
        names = [f"input_{i}" for i in range(len(tensors))]
        from ..autograd.grad_mode import no_grad

        with no_grad():
            example_out = module(*args)
        structure = _flatten(example_out, [])
        session = model_bytes = None
        try:
            export(module, tuple(args), buffer, input_names=names, training=_preserve())
            model_bytes = buffer.getvalue()
        except OnnxExporterError as exc:
            warnings.warn(
                f"ember.jit.trace: {exc}; the traced module replays eagerly and cannot be saved",
                TracerWarning,
                stacklevel=3,
            )
            object.__setattr__(self, "_why_not_recorded", str(exc))
        if model_bytes is not None:
            try:
                import onnxruntime

                session = onnxruntime.InferenceSession(
                    model_bytes, providers=["CPUExecutionProvider"]
                )
            except ImportError:
                pass
        recording = _Recording(model_bytes, session, structure, names)
        recordings = self._recordings
        if len(recordings) >= _MAX_RECORDINGS:
            recordings.pop(next(iter(recordings)))
        recordings[self._key(args)] = recording
        return recording

    # --- calling ----------------------------------------------------------------------------
    def forward(self, *args):
        from .. import from_numpy, is_grad_enabled

        needs_grad = is_grad_enabled() and (
            any(p.requires_grad for p in self.parameters())
            or any(isinstance(a, Tensor) and a.requires_grad for a in args)
        )
        on_cpu = all(a.device.type == "cpu" for a in args if isinstance(a, Tensor))
        unrecordable = "_why_not_recorded" in self.__dict__
        if needs_grad or not on_cpu or unrecordable or is_in_onnx_export():
            return self._callable()(*args)
        recording = self._recordings.get(self._key(args)) or self._record(args)
        if recording.session is None:  # no ONNX Runtime here: eager replay
            return self._callable()(*args)
        feeds = {
            name: a.numpy()
            for name, a in zip(recording.input_names, [a for a in args if isinstance(a, Tensor)])
        }
        outputs = [from_numpy(o) for o in recording.session.run(None, feeds)]
        return _rebuild(recording.output_structure, outputs)

    # --- what TorchScript modules show ------------------------------------------------------
    def _example_recording(self) -> _Recording:
        recording = self._recordings.get(self._example_key) or next(iter(self._recordings.values()))
        if recording.model_bytes is None:
            raise RuntimeError(
                "ember.jit: this module could not be recorded as ONNX "
                f"({self.__dict__.get('_why_not_recorded', 'unknown reason')})"
            )
        return recording

    @property
    def graph(self) -> str:
        """The recorded program (of the example inputs) as readable ONNX text."""
        import onnx

        model = onnx.load_from_string(self._example_recording().model_bytes)
        with warnings.catch_warnings():  # printable_graph shows initializer shapes, not data
            warnings.simplefilter("ignore", DeprecationWarning)
            text = onnx.helper.printable_graph(model.graph)
        return text

    @property
    def code(self) -> str:
        return self.graph

    def save(self, f: str | os.PathLike | Any) -> None:
        """Write the recording as an ONNX file (runs in ONNX Runtime, or ``ember.jit.load``)."""
        data = self._example_recording().model_bytes
        if isinstance(f, (str, os.PathLike)):
            from ..onnx._export import write_model

            write_model(_Bytes(data), f)
        else:
            f.write(data)


class _Bytes:
    def __init__(self, data: bytes):
        self._data = data

    def SerializeToString(self) -> bytes:  # noqa: N802 (onnx's name)
        return self._data


class _FunctionModule(nn.Module):
    def __init__(self, fn: Callable):
        super().__init__()
        object.__setattr__(self, "_fn", fn)

    def forward(self, *args):
        return self._fn(*args)


def _preserve():
    from ..onnx import TrainingMode

    return TrainingMode.PRESERVE


ScriptModule = TracedModule
ScriptFunction = TracedModule
TopLevelTracedModule = TracedModule


def trace(
    func, example_inputs=None, *, check_trace: bool = True, strict: bool = True, **kwargs
) -> TracedModule:
    """Record ``func`` (a module or function) on ``example_inputs`` (a tensor or a tuple).

    Python control flow that reads tensor values is recorded as taken, with a
    ``TracerWarning``. Ops without an ONNX mapping raise ``ember.onnx.OnnxExporterError``.

    Example::
        >>> traced = ember.jit.trace(lambda x: x.relu() * 2, ember.randn(3))
        >>> with ember.no_grad():
        ...     traced(ember.tensor([-1.0, 2.0, 3.0]))
        tensor([0., 4., 6.])
    """
    if example_inputs is None:
        example_inputs = kwargs.pop("example_kwarg_inputs", None)
        if example_inputs is None:
            raise TypeError("ember.jit.trace: example_inputs is required")
    if isinstance(example_inputs, Tensor):
        example_inputs = (example_inputs,)
    return TracedModule(func, tuple(example_inputs))


def trace_module(mod, inputs: dict, **kwargs) -> TracedModule:
    """``trace`` of ``mod``'s ``forward`` (the one method ember records)."""
    if set(inputs) != {"forward"}:
        raise ValueError("ember.jit.trace_module: only {'forward': example_inputs} is supported")
    return trace(mod, inputs["forward"], **kwargs)


def script(obj, optimize=None, _frames_up: int = 0, _rcb=None, example_inputs=None):
    """Without ``example_inputs``: ``obj`` itself (ember runs it as Python, which is what a
    scripted module computes). With ``example_inputs`` (a list of input tuples, as in
    PyTorch): ``trace(obj, example_inputs[0])``, control flow recorded as taken."""
    if example_inputs:
        first = example_inputs[0]
        return trace(obj, first if isinstance(first, tuple) else (first,))
    return obj


def freeze(mod, preserved_attrs=None, optimize_numerics: bool = True):
    """``mod`` in eval mode (a recording already holds parameters as constants)."""
    return mod.eval() if hasattr(mod, "eval") else mod


def optimize_for_inference(mod, other_methods=None):
    return freeze(mod)


def ignore(drop=False, **kwargs):
    """Decorator accepted for compatibility: the function is left as it is."""
    if callable(drop):
        return drop
    return lambda fn: fn


def unused(fn):
    """Decorator accepted for compatibility: the function is left as it is."""
    return fn


def export(fn):
    """Decorator accepted for compatibility: the function is left as it is."""
    return fn


def interface(obj):
    return obj


def is_scripting() -> bool:
    return False


def is_tracing() -> bool:
    """True while ``trace`` (or ``ember.onnx.export``) records a model."""
    return is_in_onnx_export()


def annotate(the_type, the_value):
    return the_value


def save(m, f) -> None:
    """``m.save(f)`` for a traced module."""
    if not isinstance(m, TracedModule):
        raise TypeError(
            "ember.jit.save: expected a module made by ember.jit.trace (or script with "
            f"example_inputs), got {type(m).__name__}"
        )
    m.save(f)


class OnnxRuntimeModule(nn.Module):
    """An ONNX file run in ONNX Runtime: what ``ember.jit.load`` returns."""

    def __init__(self, model_bytes: bytes):
        super().__init__()
        import onnxruntime

        object.__setattr__(
            self,
            "_session",
            onnxruntime.InferenceSession(model_bytes, providers=["CPUExecutionProvider"]),
        )

    def forward(self, *args):
        from .. import from_numpy

        names = [i.name for i in self._session.get_inputs()]
        feeds = {n: (a.numpy() if isinstance(a, Tensor) else a) for n, a in zip(names, args)}
        outputs = [from_numpy(o) for o in self._session.run(None, feeds)]
        return outputs[0] if len(outputs) == 1 else tuple(outputs)


def load(f, map_location=None, _extra_files=None) -> OnnxRuntimeModule:
    """A module running the ONNX file ``f`` (path or binary file) in ONNX Runtime; it needs
    no Python class of the original model. Outputs come back as ember tensors."""
    if isinstance(f, (str, os.PathLike)):
        with open(f, "rb") as fh:
            data = fh.read()
    else:
        data = f.read()
    return OnnxRuntimeModule(data)


__all__ = [
    "OnnxExporterError",
    "OnnxRuntimeModule",
    "ScriptFunction",
    "ScriptModule",
    "TopLevelTracedModule",
    "TracedModule",
    "TracerWarning",
    "annotate",
    "export",
    "freeze",
    "ignore",
    "interface",
    "is_scripting",
    "is_tracing",
    "load",
    "optimize_for_inference",
    "save",
    "script",
    "trace",
    "trace_module",
    "unused",
]
