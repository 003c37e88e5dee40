"""ember.save / ember.load: tensors and state dicts in the safetensors format.

Files are plain safetensors (8-byte header length, JSON header, raw little-endian data), so other
tools read their tensors; the structure around the tensors (nested dicts, lists, numbers, as in
an optimizer's state_dict) rides in the header's ``__metadata__``. Writes are atomic: a
temporary file in the same folder is written, flushed, fsynced and renamed over the target, so a
crash mid-save leaves the previous file intact. Loads check the header and every offset before
touching data, and never execute code. PyTorch ``.pt``/``.pth`` checkpoints are read with an
unpickler that can only rebuild tensors and plain containers.
"""

from __future__ import annotations

import io
import json
import os
import pickle
import struct
import tempfile
import zipfile
from collections import OrderedDict

import numpy as np

from . import _dtype as dt
from ._tensor import Tensor

# safetensors dtype codes
_CODE_OF = {
    "float16": "F16",
    "float32": "F32",
    "float64": "F64",
    "bfloat16": "BF16",
    "int8": "I8",
    "int16": "I16",
    "int32": "I32",
    "int64": "I64",
    "uint8": "U8",
    "bool": "BOOL",
}
_DTYPE_OF = {code: name for name, code in _CODE_OF.items()}
_STRUCTURE_KEY = "ember.structure"
_MAX_HEADER = 100 * 1024 * 1024


class SerializationError(RuntimeError):
    """A file that is not a valid ember/safetensors checkpoint."""


# --- saving --------------------------------------------------------------------------------
def _flatten(obj, tensors: dict, path: str):
    """Replace tensors by references; encode containers so JSON keeps their types."""
    if isinstance(obj, Tensor):
        key = path or "tensor"
        if key in tensors:
            raise ValueError(f"ember.save: two tensors would be stored under the key '{key}'")
        tensors[key] = obj
        return {"__tensor__": key}
    if isinstance(obj, dict):
        items = []
        for k, v in obj.items():
            if not isinstance(k, (str, int)):
                raise TypeError(f"ember.save: dict keys must be str or int, got {type(k)}")
            items.append([k, _flatten(v, tensors, f"{path}.{k}" if path else str(k))])
        return {"__dict__": items}
    if isinstance(obj, (list, tuple)):
        values = [
            _flatten(v, tensors, f"{path}.{i}" if path else str(i)) for i, v in enumerate(obj)
        ]
        return {"__tuple__": values} if isinstance(obj, tuple) else values
    if obj is None or isinstance(obj, (bool, int, float, str)):
        return obj
    raise TypeError(
        f"ember.save stores tensors, numbers, strings and dicts/lists of them (safetensors, "
        f"never pickle); got {type(obj).__name__}"
    )


def _tensor_bytes(t: Tensor) -> bytes:
    data = t._detach().cpu()._data
    if data.dtype.byteorder == ">":
        data = data.astype(data.dtype.newbyteorder("<"))
    return np.ascontiguousarray(data).tobytes()


def save(obj, f, *, metadata: dict | None = None) -> None:
    """Save a tensor, a state_dict or nested dicts/lists of tensors and numbers to ``f``.

    Example::
        >>> ember.save(model.state_dict(), "model.safetensors")
        >>> model.load_state_dict(ember.load("model.safetensors"))
    """
    tensors: dict = {}
    structure = _flatten(obj, tensors, "")
    header: dict = {}
    chunks = []
    offset = 0
    for key in sorted(tensors):
        t = tensors[key]
        raw = _tensor_bytes(t)
        header[key] = {
            "dtype": _CODE_OF[t.dtype.name],
            "shape": list(t.shape),
            "data_offsets": [offset, offset + len(raw)],
        }
        chunks.append(raw)
        offset += len(raw)
    meta = {str(k): str(v) for k, v in (metadata or {}).items()}
    meta[_STRUCTURE_KEY] = json.dumps(structure, separators=(",", ":"))
    header["__metadata__"] = meta
    head = json.dumps(header, separators=(",", ":")).encode()
    head += b" " * (-len(head) % 8)  # data starts 8-byte aligned
    payload = [struct.pack("<Q", len(head)), head, *chunks]
    if isinstance(f, (str, os.PathLike)):
        _atomic_write(os.fspath(f), payload)
    else:
        for part in payload:
            f.write(part)


def _atomic_write(path: str, parts: list) -> None:
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".ember-", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "wb") as out:
            for part in parts:
                out.write(part)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    try:  # make the rename itself durable
        dir_fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
    except OSError:
        pass


# --- loading -------------------------------------------------------------------------------
def _read_all(f) -> bytes:
    if isinstance(f, (str, os.PathLike)):
        with open(f, "rb") as fh:
            return fh.read()
    return f.read()


def _bad(reason: str) -> SerializationError:
    return SerializationError(f"ember.load: not a valid safetensors file: {reason}")


def _parse_safetensors(blob: bytes):
    if len(blob) < 8:
        raise _bad(f"the file has {len(blob)} bytes, fewer than the 8-byte header length")
    (n,) = struct.unpack("<Q", blob[:8])
    if n > _MAX_HEADER or 8 + n > len(blob):
        raise _bad(
            f"the header claims {n} bytes but the file has {len(blob) - 8} after the "
            "length (truncated or not safetensors)"
        )
    try:
        header = json.loads(blob[8 : 8 + n].decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise _bad(f"the header is not JSON ({exc})") from None
    if not isinstance(header, dict):
        raise _bad("the header is not a JSON object")
    data = memoryview(blob)[8 + n :]
    meta = header.pop("__metadata__", {}) or {}
    spans = []
    arrays = {}
    for key, info in header.items():
        if not isinstance(info, dict) or set(info) < {"dtype", "shape", "data_offsets"}:
            raise _bad(f"entry '{key}' lacks dtype, shape or data_offsets")
        code, shape, offsets = info["dtype"], info["shape"], info["data_offsets"]
        if code not in _DTYPE_OF:
            raise _bad(f"entry '{key}' has unsupported dtype {code!r}")
        if not isinstance(shape, list) or not all(isinstance(s, int) and s >= 0 for s in shape):
            raise _bad(f"entry '{key}' has an invalid shape {shape!r}")
        if (
            not isinstance(offsets, list)
            or len(offsets) != 2
            or not all(isinstance(o, int) for o in offsets)
        ):
            raise _bad(f"entry '{key}' has invalid data_offsets {offsets!r}")
        begin, end = offsets
        d = dt.BY_NAME[_DTYPE_OF[code]]
        count = 1
        for s in shape:
            count *= s
        if not 0 <= begin <= end or end > len(data):
            raise _bad(
                f"entry '{key}' points at bytes {begin}..{end} but the data section has "
                f"{len(data)} (truncated file?)"
            )
        if end - begin != count * d.itemsize:
            raise _bad(
                f"entry '{key}' holds {end - begin} bytes, expected "
                f"{count * d.itemsize} for shape {shape} and dtype {code}"
            )
        spans.append((begin, end, key))
        np_dtype = d.np.newbyteorder("<") if d.np.byteorder not in "|" else d.np
        arrays[key] = (
            np.frombuffer(data[begin:end], dtype=np_dtype).reshape(shape).astype(d.np, copy=True)
        )
    spans.sort()
    position = 0
    for begin, end, key in spans:
        if begin != position:
            raise _bad(
                f"entry '{key}' starts at byte {begin}, expected {position} "
                "(overlapping or gapped data)"
            )
        position = end
    if position != len(data):
        raise _bad(f"{len(data) - position} trailing bytes after the last tensor")
    return arrays, meta


def _rebuild(node, tensors: dict):
    if isinstance(node, list):
        return [_rebuild(v, tensors) for v in node]
    if isinstance(node, dict):
        if "__tensor__" in node:
            return tensors[node["__tensor__"]]
        if "__tuple__" in node:
            return tuple(_rebuild(v, tensors) for v in node["__tuple__"])
        if "__dict__" in node:
            return OrderedDict((k, _rebuild(v, tensors)) for k, v in node["__dict__"])
        raise _bad("the ember structure metadata is malformed")
    return node


def load(f, map_location=None, *, weights_only: bool = True, mmap=None):
    """Load what ``ember.save`` wrote (or any safetensors file, or a PyTorch .pt checkpoint)."""
    blob = _read_all(f)
    if blob[:4] == b"PK\x03\x04":
        obj = _load_torch_zip(blob)
    else:
        arrays, meta = _parse_safetensors(blob)
        tensors = {k: Tensor._wrap(v) for k, v in arrays.items()}
        if _STRUCTURE_KEY in meta:
            try:
                obj = _rebuild(json.loads(meta[_STRUCTURE_KEY]), tensors)
            except (json.JSONDecodeError, KeyError, TypeError, ValueError):
                raise _bad("the ember structure metadata is malformed") from None
        else:
            obj = OrderedDict(sorted(tensors.items()))
    if map_location is not None:
        obj = _map(obj, lambda t: t.to(map_location))
    return obj


def _map(obj, fn):
    if isinstance(obj, Tensor):
        return fn(obj)
    if isinstance(obj, dict):
        return type(obj)((k, _map(v, fn)) for k, v in obj.items())
    if isinstance(obj, (list, tuple)):
        return type(obj)(_map(v, fn) for v in obj)
    return obj


def load_file(path, device: str = "cpu") -> dict:
    """safetensors' ``load_file``: the flat dict of tensors in a file."""
    arrays, _ = _parse_safetensors(_read_all(path))
    return {k: Tensor._wrap(v).to(device) for k, v in arrays.items()}


def save_file(tensors: dict, path, metadata: dict | None = None) -> None:
    """safetensors' ``save_file``: a flat dict of tensors."""
    save(dict(tensors), path, metadata=metadata)


# --- PyTorch checkpoints, without torch and without running pickled code -------------------
_STORAGE_DTYPES = {
    "FloatStorage": "float32",
    "DoubleStorage": "float64",
    "HalfStorage": "float16",
    "BFloat16Storage": "bfloat16",
    "LongStorage": "int64",
    "IntStorage": "int32",
    "ShortStorage": "int16",
    "CharStorage": "int8",
    "ByteStorage": "uint8",
    "BoolStorage": "bool",
}


class _StorageType:
    def __init__(self, dtype_name: str):
        self.dtype_name = dtype_name


def _rebuild_tensor_v2(
    storage, storage_offset, size, stride, requires_grad=False, backward_hooks=None, metadata=None
):
    array, _ = storage
    itemsize = array.itemsize
    if size:
        needed = storage_offset + sum((s - 1) * st for s, st in zip(size, stride)) + 1
        if min(size) == 0:
            needed = 0
        if needed > array.size:
            raise SerializationError(
                "ember.load: a tensor in the checkpoint reaches past its storage (corrupt file)"
            )
    view = (
        np.lib.stride_tricks.as_strided(
            array[storage_offset:], shape=tuple(size), strides=tuple(s * itemsize for s in stride)
        )
        if array.size
        else np.zeros(tuple(size), dtype=array.dtype)
    )
    t = Tensor._wrap(np.array(view, copy=True))
    if requires_grad:
        t.requires_grad_(True)
    return t


def _rebuild_parameter(data, requires_grad, backward_hooks, *args):
    from .nn.parameter import Parameter

    return Parameter(data, requires_grad)


class _RestrictedUnpickler(pickle.Unpickler):
    """Knows how to rebuild tensors and plain containers, and nothing else."""

    _ALLOWED = {
        ("torch._utils", "_rebuild_tensor_v2"): _rebuild_tensor_v2,
        ("torch._utils", "_rebuild_parameter"): _rebuild_parameter,
        ("collections", "OrderedDict"): OrderedDict,
    }

    def __init__(self, file, archive: zipfile.ZipFile, prefix: str):
        super().__init__(file)
        self.archive, self.prefix = archive, prefix
        self.storages: dict = {}

    def find_class(self, module: str, name: str):
        if (module, name) in self._ALLOWED:
            return self._ALLOWED[(module, name)]
        if module == "torch" and name in _STORAGE_DTYPES:
            return _StorageType(_STORAGE_DTYPES[name])
        raise pickle.UnpicklingError(
            f"ember.load refuses to load '{module}.{name}' from a checkpoint: only tensors and "
            "plain containers are allowed (no code is ever executed)"
        )

    def persistent_load(self, pid):
        if not isinstance(pid, tuple) or len(pid) < 5 or pid[0] != "storage":
            raise pickle.UnpicklingError(f"unsupported persistent id {pid!r}")
        _, storage_type, key, _location, numel = pid[:5]
        if key not in self.storages:
            d = dt.BY_NAME[storage_type.dtype_name]
            try:
                raw = self.archive.read(f"{self.prefix}data/{key}")
            except KeyError:
                raise SerializationError(
                    f"ember.load: storage {key} is missing from the checkpoint"
                ) from None
            array = np.frombuffer(raw, dtype=d.np.newbyteorder("<") if d.np.itemsize > 1 else d.np)
            self.storages[key] = (array.astype(d.np, copy=False), numel)
        return self.storages[key]


def _load_torch_zip(blob: bytes):
    try:
        archive = zipfile.ZipFile(io.BytesIO(blob))
    except zipfile.BadZipFile as exc:
        raise SerializationError(f"ember.load: not a readable PyTorch checkpoint ({exc})") from None
    pkl = [n for n in archive.namelist() if n.endswith("data.pkl")]
    if not pkl:
        raise SerializationError("ember.load: the zip archive has no data.pkl")
    prefix = pkl[0][: -len("data.pkl")]
    with archive.open(pkl[0]) as fh:
        return _RestrictedUnpickler(io.BytesIO(fh.read()), archive, prefix).load()
