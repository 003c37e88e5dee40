"""Unpickling a checkpoint's pickle, weights-only or not, and resolving its storage ids.

Both of torch's formats (the zip archive and the legacy pickle stream) name storages by
persistent ids ``("storage", storage_type, key, location, numel[, view])``; ``StorageIds``
checks each id, reads the storage once through the format (``read_storage``), puts it where
``map_location`` says, and hands every record of one key the same storage. ``unpickle`` runs the
weights-only unpickler or, with ``weights_only=False``, Python's with torch's names mapped to
ember's, and turns whatever a damaged pickle raises into a SerializationError.
"""

from __future__ import annotations

import importlib
import pickle
import struct
import zipfile
import zlib

from .. import _dtype as dt
from . import _location, _rebuild, _storage
from ._errors import SerializationError
from ._weights_only import Refusal, WeightsOnlyUnpickler, as_torch_refusal


def _ascii(value):
    return value.decode("ascii") if isinstance(value, bytes) else value


class StorageIds:
    """Resolves persistent storage ids; a format supplies ``read_storage``."""

    def __init__(self, map_location=None):
        self.map_location = map_location
        self.loaded: dict = {}  # key -> LoadedStorage
        self.views: dict = {}  # legacy view key -> LoadedStorage

    def read_storage(self, key: str, d: dt.dtype, numel: int):
        """The storage's elements as a writable host array (format-specific)."""
        raise NotImplementedError

    def __call__(self, pid):
        if not isinstance(pid, tuple) or len(pid) not in (5, 6) or _ascii(pid[0]) != "storage":
            raise SerializationError(f"ember.load: unsupported persistent id {_clip(pid)}")
        storage_type, key, location, numel = pid[1:5]
        location, key = _ascii(location), _ascii(key)
        if not isinstance(storage_type, _rebuild.StorageType):
            raise SerializationError(f"ember.load: unknown storage type {_clip(storage_type)}")
        if storage_type.dtype is None:
            raise SerializationError(
                f"ember.load: the checkpoint holds {storage_type.torch_name} storages (quantized "
                "tensors), which ember does not have"
            )
        if not isinstance(location, str):
            raise SerializationError(f"ember.load: invalid storage location {_clip(location)}")
        if not isinstance(key, str):
            raise SerializationError(f"ember.load: invalid storage key {_clip(key)}")
        if type(numel) is not int or numel < 0:
            raise SerializationError(f"ember.load: storage {key} has invalid size {_clip(numel)}")
        storage = self.loaded.get(key)
        if storage is None:
            d = storage_type.dtype
            host = self.read_storage(key, d, numel)
            storage = _storage.restore(host, d, location, self.map_location)
            self.loaded[key] = storage
        view = pid[5] if len(pid) == 6 else None
        return storage if view is None else self._view(storage, view)

    def _view(self, root, view):
        """A legacy checkpoint's storage view: ``(view_key, offset, size)`` into its root."""
        if not isinstance(view, tuple) or len(view) != 3:
            raise SerializationError(f"ember.load: invalid storage view {_clip(view)}")
        view_key, offset, size = view
        if view_key not in self.views:
            if any(type(v) is not int or v < 0 for v in (offset, size)):
                raise SerializationError(f"ember.load: invalid storage view {_clip(view)}")
            if offset + size > root.array.size:
                raise SerializationError(
                    f"ember.load: a storage view of {size} elements at {offset} reaches past its "
                    f"storage of {root.array.size}"
                )
            array = root.array[offset : offset + size]
            self.views[view_key] = _storage.LoadedStorage(array, root.dtype, root.location)
        return self.views[view_key]


def _clip(value) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


# torch.load renames this module (torch/tensor.py became torch/_tensor.py)
_MODULE_RENAMES = {"torch.tensor": "torch._tensor"}


# The pure-Python unpickler keeps its memo in a dict. The C one keeps a list that a single
# LONG_BINPUT opcode resizes to twice its 32-bit index: an 11-byte pickle that zero-fills 2 GB.
class FullUnpickler(pickle._Unpickler):
    """Any pickle (``weights_only=False``), with torch's classes and functions looked up under
    ember's names."""

    dispatch = dict(pickle._Unpickler.dispatch)

    def __init__(self, file, storage_ids, *, encoding: str = "utf-8", pickle_size: int = 0):
        super().__init__(file, encoding=encoding)
        self.storage_ids = storage_ids
        self.pickle_size = pickle_size

    def _load_bytearray8(self) -> None:
        # the stock opcode allocates the declared size before reading: bound it by the pickle
        (size,) = struct.unpack("<Q", self.read(8))
        if size > self.pickle_size:
            raise SerializationError(
                f"ember.load: the pickle declares a {size}-byte bytearray but holds only "
                f"{self.pickle_size} bytes"
            )
        buffer = bytearray(size)
        self.readinto(buffer)
        self.append(buffer)

    dispatch[pickle.BYTEARRAY8[0]] = _load_bytearray8

    def persistent_load(self, pid):
        return self.storage_ids(pid)

    def find_class(self, module: str, name: str):
        module = _MODULE_RENAMES.get(module, module)
        known = _rebuild.torch_globals().get(f"{module}.{name}")
        if known is not None:
            if isinstance(known, _rebuild.Missing) and not module.startswith("torch._utils"):
                known()  # a dtype or class ember lacks: say so now
            return known
        if module == "torch" or module.startswith("torch."):
            # a checkpoint pickled by torch: the same class or function under ember's name
            try:
                return getattr(importlib.import_module("ember" + module[len("torch") :]), name)
            except (ImportError, AttributeError):
                raise pickle.UnpicklingError(
                    f"ember.load: the checkpoint needs {module}.{name}, which ember does not have"
                ) from None
        return super().find_class(module, name)


# What a damaged archive or pickle raises inside zipfile, zlib, struct and the unpicklers
MALFORMED = (
    zipfile.BadZipFile,
    zipfile.LargeZipFile,
    zlib.error,
    struct.error,
    EOFError,
    KeyError,
    TypeError,
    ValueError,
    IndexError,
    AttributeError,
    OverflowError,
    RecursionError,
    NotImplementedError,
    RuntimeError,  # ember's own refusals while rebuilding (requires_grad on an integer record)
)


def unpickle(file, storage_ids, *, weights_only: bool, encoding: str = "utf-8", size: int = 0):
    """Run the pickle at ``file``'s position (it is left just past the pickle's STOP)."""
    kind = WeightsOnlyUnpickler if weights_only else FullUnpickler
    unpickler = kind(file, storage_ids, encoding=encoding, pickle_size=size)
    try:
        return unpickler.load()
    except Refusal as exc:
        raise as_torch_refusal(exc) from None
    except (pickle.UnpicklingError, _location.DeviceUnavailableError):
        raise
    except MALFORMED as exc:
        raise SerializationError(
            f"ember.load: the checkpoint's pickle is malformed ({type(exc).__name__}: {exc})"
        ) from None
