"""torch's pre-zip checkpoint format (``torch.save(..., _use_new_zipfile_serialization=False)``,
the default before PyTorch 1.6), written and read.

The file is a run of pickles and raw data: the magic number, the protocol version (1001), a
dict of the writer's byte order and C type sizes, the object's pickle (tensors name storages by
persistent id, as in the zip format), the sorted list of storage keys, then for each key an
int64 element count and the storage's bytes in the writer's byte order. torch's weights-only
loader reads this format too; ember follows it. (The older .tar format, PyTorch < 0.4, is not
read.)
"""

from __future__ import annotations

import io
import pickle
import struct

import numpy as np

from .. import _backend
from .. import _dtype as dt
from . import _storage, _unpickler
from ._errors import SerializationError
from ._pickler import TorchPickler

MAGIC_NUMBER = 0x1950A86A20F9469CFC6C
PROTOCOL_VERSION = 1001
_MAGIC_BYTES = MAGIC_NUMBER.to_bytes(10, "little")  # as pickle's LONG1 stores it


def is_legacy(blob: bytes) -> bool:
    """Whether ``blob`` starts like a legacy checkpoint (a pickle of the magic number)."""
    return blob[:1] == b"\x80" and _MAGIC_BYTES in blob[:24]


def is_tar(blob: bytes) -> bool:
    return blob[257:262] == b"ustar"


# --- writing ----------------------------------------------------------------------------------
def dumps(obj, pickle_protocol: int = 2) -> bytes:
    """The bytes of ``torch.save(obj, f, _use_new_zipfile_serialization=False)``."""
    out = io.BytesIO()
    sys_info = {
        "protocol_version": PROTOCOL_VERSION,
        "little_endian": True,  # ember writes little-endian storages on every machine
        "type_sizes": {"short": 2, "int": 4, "long": 4},
    }
    for header in (MAGIC_NUMBER, PROTOCOL_VERSION, sys_info):
        pickle.dump(header, out, protocol=pickle_protocol)
    pickler = TorchPickler(out, pickle_protocol, legacy=True)
    pickler.dump(obj)
    storages = {s.key: s for s in pickler.storages}
    keys = sorted(storages)
    pickle.dump(keys, out, protocol=pickle_protocol)
    for key in keys:
        storage = storages[key]
        raw = storage.host_bytes()
        out.write(struct.pack("<q", len(raw) // _element_size(storage)))
        out.write(raw)
    return out.getvalue()


def _element_size(storage) -> int:
    # an untyped storage (uint16/32/64 tensors) counts bytes
    return 1 if storage.dtype in dt.BAREBONES_UNSIGNED else storage.dtype.itemsize


# --- reading ----------------------------------------------------------------------------------
class _StreamStorages(_unpickler.StorageIds):
    """Storages whose bytes follow the object's pickle: each is allocated when the pickle names
    it (never more bytes than the rest of the file holds) and filled once the pickle is read."""

    def __init__(self, map_location, available: int):
        super().__init__(map_location)
        self.available = available
        self.hosts: dict = {}  # key -> the host array the file's bytes go into

    def read_storage(self, key: str, d: dt.dtype, numel: int):
        nbytes = numel * d.itemsize
        if nbytes > self.available:
            raise SerializationError(
                f"ember.load: storage {key} declares {nbytes} bytes but the file holds "
                f"{self.available} after its pickle"
            )
        self.available -= nbytes
        host = np.empty(numel, dtype=d.np)
        self.hosts[key] = host
        return host

    def fill(self, stream, keys, little_endian: bool) -> None:
        """Read each storage's count and bytes, in the order of ``keys``."""
        if not isinstance(keys, list) or sorted(map(str, keys)) != sorted(self.hosts):
            raise SerializationError(
                "ember.load: the checkpoint's storage list does not match the storages its "
                "pickle names"
            )
        order = "<" if little_endian else ">"
        for key in keys:
            host, storage = self.hosts[key], self.loaded[key]
            header = stream.read(8)
            if len(header) != 8 or struct.unpack(order + "q", header)[0] != host.size:
                raise SerializationError(f"ember.load: storage {key}'s record is damaged")
            if stream.readinto(memoryview(host.view(np.uint8))) != host.nbytes:
                raise SerializationError(f"ember.load: storage {key} is truncated")
            _storage.to_native_order(host, storage.dtype, "little" if little_endian else "big")
            if storage.array is not host:  # restored to another device or copied by map_location
                storage.array[...] = _backend.from_host(host, storage.array)


def _header(stream):
    """One of the small pickles before the object's (numbers and a dict)."""
    return _unpickler.unpickle(stream, _no_storages, weights_only=True)


def _no_storages(pid):
    raise SerializationError("ember.load: a storage id in a legacy checkpoint's header")


def loads(blob: bytes, weights_only: bool = True, map_location=None, encoding: str = "utf-8"):
    """What ``torch.load`` returns for the legacy checkpoint ``blob``."""
    stream = io.BytesIO(blob)
    if _header(stream) != MAGIC_NUMBER:
        raise SerializationError("ember.load: Invalid magic number; corrupt file?")
    version = _header(stream)
    if version != PROTOCOL_VERSION:
        raise SerializationError(f"ember.load: Invalid protocol version: {version!r}")
    sys_info = _header(stream)
    little_endian = sys_info.get("little_endian", True) if isinstance(sys_info, dict) else True
    storages = _StreamStorages(map_location, len(blob) - stream.tell())
    obj = _unpickler.unpickle(
        stream, storages, weights_only=weights_only, encoding=encoding, size=len(blob)
    )
    keys = _header(stream)
    storages.fill(stream, keys, bool(little_endian))
    return obj
