"""Reading a checkpoint for ``ember inspect`` and ``ember diff``: its tensors by dotted name.

Both formats ``ember.load`` knows are read, safely (``weights_only=True``: no code from the file
runs): safetensors, and PyTorch's zip format (``torch.save``'s ``.pt``/``.pth``); and an ONNX
model's weights (its initializers), with the ``onnx`` package.
"""

from __future__ import annotations

import pickle

import numpy as np

from ..utils._file_checks import why_unusable
from . import _extras
from ._arguments import UsageError


def read_checkpoint(path: str) -> tuple[dict, dict]:
    """``(tensors, others)``: the file's tensors and its other values (numbers, strings), each
    by dotted name (``state.0.exp_avg``) in file order. Raises ``UsageError`` when the file
    cannot be read."""
    import ember

    problem = _unreadable(path)
    if problem:
        raise UsageError(f"{path}: {problem}")
    if path.endswith(".onnx"):
        return _read_onnx(path)
    try:
        obj = ember.load(path, weights_only=True)
    except pickle.UnpicklingError as exc:
        raise UsageError(f"cannot read {path}: {_one_line(exc)}") from None
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror or exc}") from None
    tensors: dict = {}
    others: dict = {}
    _flatten(obj, "", tensors, others)
    return tensors, others


def _unreadable(path: str) -> str | None:
    """Why ``path`` cannot be read (no such file, permission denied, a directory), or None."""
    return why_unusable(path, directory="give a checkpoint file (such as model.safetensors)")


def _read_onnx(path: str) -> tuple[dict, dict]:
    """An ONNX model's initializers (its weights) as tensors, its producer and opset as others."""
    import ember

    try:
        import onnx
        from onnx import numpy_helper
    except ImportError:
        raise UsageError(
            f"{path}: reading ONNX files needs the onnx package "
            f"({_extras.install_hint(_extras.ONNX)})"
        ) from None
    try:
        model = onnx.load(path)
    except Exception as exc:  # onnx raises protobuf's DecodeError and others
        raise UsageError(f"cannot read {path}: {_one_line(exc)}") from None
    tensors = {
        init.name: ember.from_numpy(np.array(numpy_helper.to_array(init)))
        for init in model.graph.initializer
    }
    others = {
        "producer": f"{model.producer_name} {model.producer_version}".strip(),
        "opset": ", ".join(str(o.version) for o in model.opset_import),
        "inputs": ", ".join(i.name for i in model.graph.input if i.name not in tensors),
        "outputs": ", ".join(o.name for o in model.graph.output),
    }
    return tensors, others


def dtype_name(t) -> str:
    """``float32`` for ``ember.float32``: the name both libraries print after their prefix."""
    return str(t.dtype).rpartition(".")[2]


def shape_text(shape) -> str:
    return str(tuple(shape))


def as_array(t) -> np.ndarray:
    """The tensor's values on the CPU as NumPy: float64 or complex128 for floating dtypes NumPy
    lacks (bfloat16, float8), the tensor's own dtype otherwise."""
    import ember

    t = t.detach().cpu()
    if t.is_complex():
        return np.asarray(t.to(ember.complex128).numpy())
    if t.is_floating_point():
        return np.asarray(t.to(ember.float64).numpy())
    return np.asarray(t.numpy())


def _flatten(obj, name: str, tensors: dict, others: dict) -> None:
    import ember

    if isinstance(obj, ember.Tensor):
        tensors[name or "(tensor)"] = obj
    elif isinstance(obj, dict):
        for key, value in obj.items():
            _flatten(value, f"{name}.{key}" if name else str(key), tensors, others)
    elif isinstance(obj, (list, tuple)) and any(_holds_tensor(v) for v in obj):
        for i, value in enumerate(obj):
            _flatten(value, f"{name}.{i}" if name else str(i), tensors, others)
    else:
        others[name or "(value)"] = obj


def _holds_tensor(obj) -> bool:
    import ember

    if isinstance(obj, ember.Tensor):
        return True
    if isinstance(obj, dict):
        return any(_holds_tensor(v) for v in obj.values())
    if isinstance(obj, (list, tuple)):
        return any(_holds_tensor(v) for v in obj)
    return False


def _one_line(exc: BaseException) -> str:
    """The line of a loader's message that names the problem (weights_only's refusal is a
    paragraph of advice for torch.load, then the global it refused)."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    for line in lines:
        if line.startswith("WeightsUnpickler error:"):
            detail = line.removeprefix("WeightsUnpickler error:").strip().split(". ")[0]
            return (
                f"it holds Python objects, not only tensors ({detail}); ember reads "
                "checkpoints with weights_only=True, so save a state_dict instead"
            )
    return lines[0] if lines else type(exc).__name__
