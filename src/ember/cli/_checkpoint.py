"""Reading a checkpoint for ``ember inspect`` and ``ember diff``: its tensors by dotted name.

Both formats ``ember.load`` knows are read, safely (``weights_only=True``: no code from the file
runs): safetensors, and PyTorch's zip format (``torch.save``'s ``.pt``/``.pth``); and an ONNX
model's weights (its initializers), with the ``onnx`` package.

Any file is either read or refused with one ``UsageError`` (one line, exit code 2): tensors saved
on a GPU are read on the CPU (as ``map_location="cpu"``); an expanded record (stride 0, such as
``ones(1).expand(10**6, 10**6)``) stays a view, summarised over its distinct values; a record
whose distinct values would take more memory than the file could hold (overlapping strides) is
refused, as are containers that contain themselves or nest deeper than ``MAX_DEPTH``.
"""

from __future__ import annotations

import math
import os
import pickle
import re

import numpy as np

from ..utils._file_checks import why_unusable
from . import _extras
from ._arguments import UsageError

MAX_DEPTH = 100  # containers nested deeper are refused: checkpoints nest a few levels
MAX_ENTRIES = 1_000_000  # named values (tensors and others) a file may hold
_SHOWN_ITEMS = 1_000  # items of a non-tensor value shown before it is summarised instead
# a record's distinct values may take as many bytes as the file holds, or this many when the
# file is smaller: a view whose strides overlap (a sliding window) reads more than its storage
_SMALL_VIEW_BYTES = 64 * 2**20


def read_checkpoint(path: str) -> tuple[dict, dict]:
    """``(tensors, others)``: the file's tensors and its other values (numbers, strings), each
    by dotted name (``state.0.exp_avg``) in file order. Raises ``UsageError`` when the file
    cannot be read or summarised."""
    import ember

    problem = _unreadable(path)
    if problem:
        raise UsageError(f"{path}: {problem}")
    if path.endswith(".onnx"):
        return _read_onnx(path)
    try:
        # a checkpoint saved on a GPU is read on the CPU: inspecting needs no GPU
        obj = ember.load(path, weights_only=True, map_location="cpu")
    except pickle.UnpicklingError as exc:
        raise UsageError(f"cannot read {path}: {_one_line(exc)}") from None
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror or exc}") from None
    tensors, others = _flatten(obj, path)
    limit = memory_limit(path)
    for name, t in tensors.items():
        check_summarisable(path, name, t, limit)
    return tensors, others


def memory_limit(*paths: str) -> int:
    """The most bytes a summary may read from one record of these files: what the largest of
    them holds (a record that does not overlap itself fits), or 64 MiB for small files."""
    return max(_SMALL_VIEW_BYTES, *(os.path.getsize(path) for path in paths))


def _unreadable(path: str) -> str | None:
    """Why ``path`` cannot be read (no such file, permission denied, a directory), or None."""
    return why_unusable(path, directory="give a checkpoint file (such as model.safetensors)")


def _read_onnx(path: str) -> tuple[dict, dict]:
    """An ONNX model's initializers (its weights) as tensors, its producer and opset as others;
    initializers of types ember tensors cannot hold (strings, float8) are others too."""
    import ember

    try:
        import onnx
    except ImportError:
        raise UsageError(
            f"{path}: reading ONNX files needs the onnx package "
            f"({_extras.install_hint(_extras.ONNX)})"
        ) from None
    from ..onnx import _load_checks
    from ..onnx._state import OnnxImportError

    try:
        model = onnx.load(path)
    except Exception as exc:  # onnx raises protobuf's DecodeError and others
        raise UsageError(f"cannot read {path}: {_one_line(exc)}") from None
    tensors: dict = {}
    others: dict = {}
    for init in model.graph.initializer:
        try:
            _load_checks.check_tensor(init)
        except OnnxImportError as exc:
            detail = str(exc).removeprefix("ember.onnx.load: ")
            raise UsageError(f"cannot read {path}: {detail}") from None
        if init.data_type == onnx.TensorProto.STRING:
            values = _load_checks.tensor_array(init).reshape(-1)[:_SHOWN_ITEMS]
            others[init.name] = [
                v.decode("utf-8", "replace") if isinstance(v, bytes) else v for v in values.tolist()
            ]
        elif init.data_type not in _load_checks.EMBER_TYPES:
            kind = _load_checks.type_name(init.data_type)
            others[init.name] = f"<{kind} tensor of shape {tuple(init.dims)}: not an ember dtype>"
        else:
            tensors[init.name] = ember.from_numpy(_load_checks.tensor_array(init))
    others.update(
        producer=f"{model.producer_name} {model.producer_version}".strip(),
        opset=", ".join(str(o.version) for o in model.opset_import),
        inputs=", ".join(i.name for i in model.graph.input if i.name not in tensors),
        outputs=", ".join(o.name for o in model.graph.output),
    )
    return tensors, others


def dtype_name(t) -> str:
    """``float32`` for ``ember.float32``: the name both libraries print after their prefix."""
    return str(t.dtype).rpartition(".")[2]


def shape_text(shape) -> str:
    return str(tuple(shape))


def as_array(t) -> np.ndarray:
    """The tensor's values on the CPU as NumPy: float64 or complex128 for floating dtypes NumPy
    lacks (bfloat16, float8), the tensor's own dtype otherwise. Sparse tensors come dense."""
    import ember

    t = t.detach().cpu()
    if t.is_sparse:
        t = t.to_dense()
    if t.is_complex():
        return np.asarray(t.to(ember.complex128).numpy())
    if t.is_floating_point():
        return np.asarray(t.to(ember.float64).numpy())
    return np.asarray(t.numpy())


# --- expanded records ------------------------------------------------------------------------
def broadcast_dims(t) -> tuple:
    """The dims along which ``t`` repeats one value: stride 0 and size > 1, as ``expand``
    makes. Summaries read such a tensor once along them instead of materialising it."""
    if t.is_sparse or t.numel() == 0:
        return ()
    return tuple(d for d, (n, s) in enumerate(zip(t.shape, t.stride())) if s == 0 and n > 1)


def distinct_part(t, dims) -> object:
    """``t`` cut to its first index along ``dims`` (a view): each value of ``t`` once per
    position in the other dims."""
    if not dims:
        return t
    return t[tuple(slice(0, 1) if d in dims else slice(None) for d in range(t.dim()))]


def distinct_numel(t, dims) -> int:
    return math.prod(n for d, n in enumerate(t.shape) if d not in dims)


def check_summarisable(path: str, name: str, t, limit: int) -> None:
    """Raise ``UsageError`` when the values of ``t`` that a summary reads (one per position
    outside its broadcast dims; a sparse tensor's stored values) would take more than ``limit``
    bytes: only a view with overlapping strides can, over a storage the file holds."""
    if t.is_sparse:
        return
    dims = broadcast_dims(t)
    size = distinct_numel(t, dims) * t.element_size()
    if size > limit:
        raise UsageError(
            f"{path}: the record {name} {shape_text(t.shape)} {dtype_name(t)} with strides "
            f"{tuple(t.stride())} views {t.numel():,} elements whose strides overlap "
            f"({size_text(size)} to read, more than the file holds): too large to summarise"
        )


# --- the structure around the tensors ---------------------------------------------------------
def _is_container(value) -> bool:
    return isinstance(value, (dict, list, tuple))


def _children(value) -> list:
    return list(value.values() if isinstance(value, dict) else value)


def _walk(root, path: str) -> dict:
    """``id(container) -> whether it is opened`` (its items named one by one: a dict, or a
    list or tuple holding a tensor) for every container in ``root``. Each is walked once,
    iteratively, so no depth is too deep for Python's stack. Raises ``UsageError`` for a
    container that contains itself, a nesting deeper than ``MAX_DEPTH``, or more than
    ``MAX_ENTRIES`` named values (counted before any name is made: a few bytes of pickle can
    share one list 2**60 times over)."""
    from .. import Tensor

    if not _is_container(root):
        return {}
    holds = {id(root): False}  # whether a tensor is inside
    entries = {id(root): 0}  # named values it gives if opened
    opened: dict = {}  # filled as each container's walk ends

    def given(child) -> int:
        """Named values ``child``, walked, gives its container."""
        return entries[id(child)] if opened[id(child)] else 1

    on_path = {id(root)}
    stack = [(root, iter(_children(root)))]
    while stack:
        container, rest = stack[-1]
        child = next(rest, stack)  # the stack itself marks the end: it is no child
        if child is stack:
            stack.pop()
            on_path.discard(id(container))
            opened[id(container)] = isinstance(container, dict) or holds[id(container)]
            if stack:
                parent = id(stack[-1][0])
                holds[parent] |= holds[id(container)]
                entries[parent] += given(container)
            continue
        if not _is_container(child):
            holds[id(container)] |= isinstance(child, Tensor)
            entries[id(container)] += 1
        elif id(child) in on_path:
            raise UsageError(
                f"{path}: it holds a {type(child).__name__} that contains itself; a "
                "checkpoint's containers hold tensors and plain values"
            )
        elif id(child) in holds:  # shared, walked already
            holds[id(container)] |= holds[id(child)]
            entries[id(container)] += given(child)
        elif len(stack) >= MAX_DEPTH:
            raise UsageError(
                f"{path}: its containers nest more than {MAX_DEPTH} levels deep; a "
                "checkpoint nests a few"
            )
        else:
            holds[id(child)], entries[id(child)] = False, 0
            on_path.add(id(child))
            stack.append((child, iter(_children(child))))
    if given(root) > MAX_ENTRIES:
        raise UsageError(
            f"{path}: it holds more than {MAX_ENTRIES:,} named values (containers shared "
            "many times over); too many to list"
        )
    return opened


def _flatten(obj, path: str) -> tuple[dict, dict]:
    """The tensors in ``obj`` and its other values, by dotted name, in order: dicts are opened,
    lists and tuples where they hold a tensor; the rest are other values, kept whole when small
    enough to show."""
    from .. import Tensor

    opened = _walk(obj, path)
    tensors: dict = {}
    others: dict = {}
    stack = [("", obj)]
    while stack:
        name, value = stack.pop()
        if isinstance(value, Tensor):
            tensors[name or "(tensor)"] = value
        elif _is_container(value) and opened[id(value)]:
            items = value.items() if isinstance(value, dict) else enumerate(value)
            named = [(f"{name}.{key}" if name else str(key), v) for key, v in items]
            stack.extend(reversed(named))
        else:
            others[name or "(value)"] = shown_value(value)
    return tensors, others


def shown_value(value):
    """``value`` itself when it is cheap to print; otherwise one line saying what it is (a
    container of more than ``_SHOWN_ITEMS`` items, counting the repeats of shared ones: a
    few bytes of pickle can share one list 2**60 times over)."""
    count = 0
    pending = [value]
    while pending:
        item = pending.pop()
        if isinstance(item, (dict, list, tuple, set, frozenset)):
            count += len(item)
            if count > _SHOWN_ITEMS:
                return f"<{type(value).__name__} of more than {_SHOWN_ITEMS:,} items>"
            pending.extend(item.values() if isinstance(item, dict) else item)
            if isinstance(item, dict):
                pending.extend(item.keys())
    return value


def _one_line(exc: BaseException) -> str:
    """The line of a loader's message that names the problem (weights_only's refusal is a
    paragraph of advice for torch.load, then what it refused)."""
    text = str(exc)
    refused = re.search(r"WeightsUnpickler error:\s*(.+)", text)
    if refused:
        detail = refused.group(1).strip().split(". ")[0]
        if "global" in detail.lower():
            return (
                f"it holds Python objects, not only tensors ({detail}); ember reads "
                "checkpoints with weights_only=True, so save a state_dict instead"
            )
        return f"ember reads checkpoints with weights_only=True, which refuses it ({detail})"
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[0] if lines else type(exc).__name__


def size_text(count: int) -> str:
    """``37.5 KiB``: a byte count as a person reads it."""
    units = ("bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB")
    size, step = float(count), 0
    while size >= 1024 and step < len(units) - 1:
        size, step = size / 1024, step + 1
    return f"{count} bytes" if step == 0 else f"{size:.1f} {units[step]}"
