"""The safetensors format: tensors and nests of them, never pickle.

Files are plain safetensors (8-byte header length, JSON header, raw little-endian data), so other
tools read their tensors; the structure around the tensors (nested dicts, lists, numbers, as in
an optimizer's state_dict) rides in the header's ``__metadata__``. Writes are atomic: a
temporary file in the same folder is written, flushed, fsynced and renamed over the target, so a
crash mid-save leaves the previous file intact. Loads check the header and every offset before
touching data, and never execute code.
"""

from __future__ import annotations

import contextlib
import json
import os
import struct
import tempfile
from collections import OrderedDict

import numpy as np

from .. import _dtype as dt
from .._tensor import Tensor
from ._errors import SerializationError

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
    "uint16": "U16",
    "uint32": "U32",
    "uint64": "U64",
    "bool": "BOOL",
}
_DTYPE_OF = {code: name for name, code in _CODE_OF.items()}
_STRUCTURE_KEY = "ember.structure"
_MAX_HEADER = 100 * 1024 * 1024
_ENTRY_KEYS = frozenset({"dtype", "shape", "data_offsets"})
_MAX_DIMS = 64  # NumPy's limit
_INT64_MAX = 2**63 - 1


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
        f"ember.save to a .safetensors file stores tensors, numbers, strings and dicts/lists "
        f"of them (never pickle); got {type(obj).__name__} (save to a .pt file to pickle it)"
    )


def _tensor_bytes(t: Tensor) -> bytes:
    data = t._detach().cpu()._data
    if data.dtype.byteorder == ">":
        data = data.astype(data.dtype.newbyteorder("<"))
    return np.ascontiguousarray(data).tobytes()


def save(obj, f, *, metadata: dict | None = None) -> None:
    """Save a tensor, a state_dict or nested dicts/lists of tensors and numbers as safetensors."""
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


def _current_umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


_TEMP_PREFIX = ".ember-"
_TEMP_SUFFIX = ".tmp"


def _remove_stale_temporaries(folder: str) -> None:
    """Delete the temporary files of saves that were killed (their process is gone).

    A temporary file is named ``.ember-<pid>-<random>.tmp``; one whose pid no longer runs on
    this machine was left by a save that never finished. Files of running saves are kept."""
    try:
        names = os.listdir(folder)
    except OSError:
        return
    for name in names:
        if not (name.startswith(_TEMP_PREFIX) and name.endswith(_TEMP_SUFFIX)):
            continue
        pid_text = name[len(_TEMP_PREFIX) :].split("-", 1)[0]
        if not pid_text.isdigit():
            continue
        pid = int(pid_text)
        if pid == os.getpid():
            continue
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            with contextlib.suppress(OSError):
                os.unlink(os.path.join(folder, name))
        except OSError:  # a process we may not signal: alive, keep its file
            continue


def _atomic_write(path: str, parts: list) -> None:
    """Write ``parts`` to ``path`` so that a crash leaves the old file or the new one, never
    a mix: a temporary file in the same folder, fsynced, renamed over the target. A symlink
    is written through (its target is replaced), as ``torch.save`` does."""
    path = os.path.realpath(path) if os.path.islink(path) else path
    folder = os.path.dirname(os.path.abspath(path))
    _remove_stale_temporaries(folder)
    try:
        fd, tmp = tempfile.mkstemp(
            prefix=f"{_TEMP_PREFIX}{os.getpid()}-", suffix=_TEMP_SUFFIX, dir=folder
        )
    except OSError as exc:
        raise OSError(exc.errno, f"ember.save: cannot write {path}: {exc.strerror}") from None
    # mkstemp creates 0600: give the file the mode open() would (the umask), or keep the
    # mode of the file it replaces
    try:
        mode = os.stat(path).st_mode & 0o777
    except OSError:
        mode = 0o666 & ~_current_umask()
    os.chmod(tmp, mode)
    try:
        with os.fdopen(fd, "wb") as out:
            for part in parts:
                out.write(part)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        if os.path.exists(tmp):
            os.unlink(tmp)
        # the target's name, not the temporary file's, is what the user knows
        raise OSError(exc.errno, f"ember.save: cannot write {path}: {exc.strerror}") from None
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


def _clip(value) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _json(raw: bytes, what: str):
    """``raw`` parsed, every way it can fail (bad UTF-8, bad JSON, nesting deep enough to
    exhaust the recursion limit, integers longer than 4300 digits) a SerializationError."""
    try:
        return json.loads(raw)
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise _bad(f"{what} is not JSON ({type(exc).__name__}: {_clip(str(exc))})") from None


def _parse_safetensors(blob: bytes):
    if len(blob) < 8:
        raise _bad(f"the file has {len(blob)} bytes, fewer than the 8-byte header length")
    (n,) = struct.unpack("<Q", blob[:8])
    if n > _MAX_HEADER or 8 + n > len(blob):
        raise _bad(
            f"the header claims {n} bytes but the file has {len(blob) - 8} after the "
            "length (truncated or not safetensors)"
        )
    header = _json(blob[8 : 8 + n], "the header")
    if not isinstance(header, dict):
        raise _bad("the header is not a JSON object")
    data = memoryview(blob)[8 + n :]
    meta = header.pop("__metadata__", None)
    if meta is None:
        meta = {}
    if not isinstance(meta, dict) or not all(isinstance(v, str) for v in meta.values()):
        raise _bad("__metadata__ must be a JSON object of strings")
    spans = []
    arrays = {}
    for key, info in header.items():
        if not isinstance(info, dict):
            raise _bad(f"entry '{key}' is not a JSON object")
        missing = _ENTRY_KEYS - set(info)
        extra = set(info) - _ENTRY_KEYS
        if missing or extra:
            raise _bad(
                f"entry '{key}' must have exactly the keys dtype, shape and data_offsets "
                f"(missing: {sorted(missing)}, unexpected: {sorted(extra)})"
            )
        code, shape, offsets = info["dtype"], info["shape"], info["data_offsets"]
        if not isinstance(code, str) or code not in _DTYPE_OF:
            raise _bad(f"entry '{key}' has unsupported dtype {code!r}")
        if (
            not isinstance(shape, list)
            or len(shape) > _MAX_DIMS
            or not all(type(s) is int and 0 <= s <= _INT64_MAX for s in shape)
        ):
            raise _bad(f"entry '{key}' has an invalid shape {_clip(shape)}")
        if (
            not isinstance(offsets, list)
            or len(offsets) != 2
            or not all(type(o) is int for o in offsets)
        ):
            raise _bad(f"entry '{key}' has invalid data_offsets {_clip(offsets)}")
        begin, end = offsets
        d = dt.BY_NAME[_DTYPE_OF[code]]
        count = 1
        nonzero_bytes = d.itemsize  # NumPy's limit, zero-sized or not: [2**40, 2**40, 0] fails
        for s in shape:
            count *= s
            nonzero_bytes *= max(s, 1)
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
        if nonzero_bytes > _INT64_MAX:
            raise _bad(
                f"entry '{key}': shape {_clip(shape)} is too large for an array (its non-zero "
                "dimensions hold more than 2**63 - 1 bytes)"
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


def load(blob: bytes):
    """What ``save`` wrote (or any safetensors file: a flat dict of its tensors)."""
    arrays, meta = _parse_safetensors(blob)
    tensors = {k: Tensor._wrap(v) for k, v in arrays.items()}
    if _STRUCTURE_KEY in meta:
        structure = _json(meta[_STRUCTURE_KEY].encode(), "the ember structure metadata")
        try:
            return _rebuild(structure, tensors)
        except (KeyError, TypeError, ValueError, RecursionError):
            raise _bad("the ember structure metadata is malformed") from None
    return OrderedDict(sorted(tensors.items()))


def load_file(path, device: str = "cpu") -> dict:
    """safetensors' ``load_file``: the flat dict of tensors in a file."""
    arrays, _ = _parse_safetensors(_read_all(path))
    return {k: Tensor._wrap(v).to(device) for k, v in arrays.items()}


def save_file(tensors: dict, path, metadata: dict | None = None) -> None:
    """safetensors' ``save_file``: a flat dict of tensors."""
    save(dict(tensors), path, metadata=metadata)


def read_all(f) -> bytes:
    return _read_all(f)
