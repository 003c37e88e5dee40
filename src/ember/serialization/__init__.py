"""``ember.save`` / ``ember.load`` and ``ember.serialization``: PyTorch's API over two formats.

- PyTorch's zip format (what ``torch.save`` writes) for any picklable object: ``ember.save``
  writes it unless the file name ends in ``.safetensors``; ``torch.load`` reads ember's files
  and ``ember.load`` reads torch's, and torch's pre-1.6 format too
  (``_use_new_zipfile_serialization=False``). ``weights_only=True`` is the default, as in
  PyTorch 2.6+: torch's weights-only rules, only tensors, plain containers and allowlisted
  globals are rebuilt. Tensors that share memory when saved share it when loaded.
- safetensors for ``*.safetensors`` files (tensors and nests of them, never pickle), what
  ``ember demo`` writes.

Writes are atomic (a temporary file in the same folder, fsynced and renamed over the target);
loads validate every record before using it and raise ``SerializationError``.

Example::
    >>> ember.save(model.state_dict(), "model.pt")
    >>> model.load_state_dict(ember.load("model.pt"))
"""

from __future__ import annotations

import os

from .._tensor import Tensor
from . import _legacy_format, _location, _safetensors, _torch_zip
from ._errors import SerializationError
from ._safe_globals import add_safe_globals, clear_safe_globals, get_safe_globals, safe_globals
from ._safetensors import load_file, save_file

DEFAULT_PROTOCOL = 2

__all__ = [
    "DEFAULT_PROTOCOL",
    "SerializationError",
    "add_safe_globals",
    "clear_safe_globals",
    "get_safe_globals",
    "load",
    "load_file",
    "safe_globals",
    "save",
    "save_file",
]


def _is_safetensors_path(f) -> bool:
    return isinstance(f, (str, os.PathLike)) and os.fspath(f).endswith(".safetensors")


def save(
    obj,
    f,
    pickle_module=None,
    pickle_protocol: int = DEFAULT_PROTOCOL,
    _use_new_zipfile_serialization: bool = True,
    _disable_byteorder_record: bool = False,
    *,
    metadata: dict | None = None,
) -> None:
    """Save ``obj`` to a path or file object: PyTorch's zip format (its pre-1.6 format with
    ``_use_new_zipfile_serialization=False``), or safetensors for ``*.safetensors`` paths
    (``metadata``: extra strings for the safetensors header)."""
    if _is_safetensors_path(f):
        _safetensors.save(obj, f, metadata=metadata)
        return
    if metadata is not None:
        raise ValueError("ember.save: metadata= is only stored in .safetensors files")
    if _use_new_zipfile_serialization:
        payload = _torch_zip.dumps(obj, pickle_protocol)
    else:
        payload = _legacy_format.dumps(obj, pickle_protocol)
    if isinstance(f, (str, os.PathLike)):
        _safetensors._atomic_write(os.fspath(f), [payload])
    else:
        f.write(payload)


def load(
    f,
    map_location=None,
    pickle_module=None,
    *,
    weights_only: bool | None = None,
    mmap=None,
    **pickle_load_args,
):
    """Load what ``ember.save`` or ``torch.save`` wrote (either of torch's formats), or any
    safetensors file. ``weights_only`` (default True) applies torch's weights-only rules;
    ``map_location`` moves each storage as in torch; ``encoding`` decodes Python 2 strings."""
    if weights_only is None:
        weights_only = True
    if isinstance(f, (str, os.PathLike)) and not os.path.exists(f):
        raise FileNotFoundError(f"[Errno 2] No such file or directory: '{os.fspath(f)}'")
    encoding = pickle_load_args.get("encoding", "utf-8")
    blob = _safetensors.read_all(f)
    # each tensor goes back to its saved location ("cuda:0"), or where map_location says
    if blob[:4] == b"PK\x03\x04":
        return _torch_zip.loads(blob, weights_only, map_location, encoding)
    if _legacy_format.is_legacy(blob):
        return _legacy_format.loads(blob, weights_only, map_location, encoding)
    if _legacy_format.is_tar(blob):
        raise SerializationError(
            "ember.load: a .tar checkpoint (PyTorch < 0.4's format) is not read; load it with "
            "torch.load(..., weights_only=False) and save it again"
        )
    obj = _safetensors.load(blob)  # safetensors records no location: CPU tensors
    if map_location is not None:
        obj = _map(obj, lambda t: _location.restore(t, "cpu", map_location))
    return obj


def _map(obj, fn):
    if isinstance(obj, Tensor):
        return fn(obj)
    if isinstance(obj, dict):
        return type(obj)((k, _map(v, fn)) for k, v in obj.items())
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):
        return type(obj)(*(_map(v, fn) for v in obj))
    if isinstance(obj, (list, tuple)):
        return type(obj)(_map(v, fn) for v in obj)
    return obj
