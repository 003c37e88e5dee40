"""PyTorch's checkpoint format (``torch.save``'s zip of a pickle plus raw storages), written and
read without torch.

Writing: ``_pickler.TorchPickler`` names torch's rebuild functions and storage classes, exactly
as ``torch.save`` does, so ``torch.load`` reads ember's files; each storage is one record,
64-byte aligned, little-endian, with torch's ``byteorder`` record.

Reading: with ``weights_only=True`` (the default, as PyTorch 2.6+) torch's weights-only rules
(``_weights_only``); with ``weights_only=False`` any pickled object loads, torch's classes looked
up under the same names in ember. Storages are byteswapped when the ``byteorder`` record says
the file was written on a machine of the other byte order, as torch does.
"""

from __future__ import annotations

import io
import struct
import uuid
import zipfile
import zlib

import numpy as np

from .. import _dtype as dt
from . import _storage, _unpickler
from ._errors import SerializationError
from ._pickler import TorchPickler

_ALIGNMENT = 64


# --- writing ----------------------------------------------------------------------------------
def _aligned_writestr(archive: zipfile.ZipFile, name: str, payload: bytes) -> None:
    """Store ``payload`` uncompressed with its data 64-byte aligned (PyTorch aligns records so
    that they can be memory-mapped)."""
    info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
    info.compress_type = zipfile.ZIP_STORED
    offset = archive.fp.tell()
    header = 30 + len(name.encode())
    pad = (-(offset + header + 4)) % _ALIGNMENT
    info.extra = struct.pack("<HH", 0x4246, pad) + b"Z" * pad
    archive.writestr(info, payload)


def dumps(obj, pickle_protocol: int = 2) -> bytes:
    """The bytes of ``torch.save(obj, f)``."""
    buffer = io.BytesIO()
    pickler = TorchPickler(buffer, pickle_protocol)
    pickler.dump(obj)
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as archive:
        _aligned_writestr(archive, "archive/data.pkl", buffer.getvalue())
        _aligned_writestr(archive, "archive/.format_version", b"1")
        _aligned_writestr(archive, "archive/.storage_alignment", str(_ALIGNMENT).encode())
        _aligned_writestr(archive, "archive/byteorder", b"little")
        for storage in pickler.storages:
            _aligned_writestr(archive, f"archive/data/{storage.key}", storage.host_bytes())
        _aligned_writestr(archive, "archive/version", b"3\n")
        serial = uuid.uuid4().hex.encode().ljust(40, b"0")
        _aligned_writestr(archive, "archive/.data/serialization_id", serial)
    return out.getvalue()


# --- reading ----------------------------------------------------------------------------------
class _ZipStorages(_unpickler.StorageIds):
    """Storages are the archive's ``data/<key>`` records, copied once out of the file's bytes."""

    def __init__(
        self, archive: zipfile.ZipFile, blob: bytes, prefix: str, byteorder: str, map_location
    ):
        super().__init__(map_location)
        self.archive, self.blob, self.prefix, self.byteorder = archive, blob, prefix, byteorder

    def read_storage(self, key: str, d: dt.dtype, numel: int):
        name = f"{self.prefix}data/{key}"
        try:
            info = self.archive.getinfo(name)
        except KeyError:
            raise SerializationError(
                f"ember.load: storage {key} is missing from the checkpoint"
            ) from None
        if info.compress_type != zipfile.ZIP_STORED:
            # torch stores storages uncompressed; inflating an entry could be a memory bomb
            raise SerializationError(
                f"ember.load: storage {key} is compressed; PyTorch checkpoints store tensors "
                "uncompressed"
            )
        if info.file_size != numel * d.itemsize:
            raise SerializationError(
                f"ember.load: storage {key} holds {info.file_size} bytes, expected "
                f"{numel * d.itemsize} for {numel} elements of {d.name}"
            )
        payload = _stored_payload(self.blob, info)
        host = np.frombuffer(payload, dtype=d.np).copy()  # writable, owning its memory
        return _storage.to_native_order(host, d, self.byteorder)


def _stored_payload(blob: bytes, info: zipfile.ZipInfo) -> memoryview:
    """The bytes of an uncompressed record, in place in ``blob`` (zipfile would read them in
    4 KB pieces), checked against the record's CRC as zipfile checks them."""
    at = info.header_offset
    local = blob[at : at + 30]
    if len(local) != 30 or local[:4] != b"PK\x03\x04":
        raise SerializationError(f"ember.load: the record {info.filename} has no local header")
    name_length, extra_length = struct.unpack("<HH", local[26:30])
    start = at + 30 + name_length + extra_length
    payload = memoryview(blob)[start : start + info.file_size]
    if len(payload) != info.file_size:
        raise SerializationError(f"ember.load: the record {info.filename} is truncated")
    if zlib.crc32(payload) != info.CRC:
        raise SerializationError(f"ember.load: the record {info.filename} is corrupt (bad CRC)")
    return payload


def _record(archive: zipfile.ZipFile, name: str) -> bytes:
    info = archive.getinfo(name)
    if info.compress_type != zipfile.ZIP_STORED:
        # torch stores every record uncompressed; inflating one could be a memory bomb
        raise SerializationError(
            f"ember.load: {name} is compressed; PyTorch checkpoints store records uncompressed"
        )
    if info.file_size > 1 << 20 and not name.endswith("data.pkl"):
        raise SerializationError(f"ember.load: the record {name} is {info.file_size} bytes")
    return archive.read(info)


def loads(blob: bytes, weights_only: bool = True, map_location=None, encoding: str = "utf-8"):
    """What ``torch.load`` returns for the checkpoint ``blob``."""
    try:
        archive = zipfile.ZipFile(io.BytesIO(blob))
        names = archive.namelist()
    except _unpickler.MALFORMED as exc:
        raise SerializationError(f"ember.load: not a readable PyTorch checkpoint ({exc})") from None
    pkl = [n for n in names if n.endswith("data.pkl")]
    if not pkl:
        raise SerializationError("ember.load: the zip archive has no data.pkl")
    prefix = pkl[0][: -len("data.pkl")]
    try:
        pickled = _record(archive, pkl[0])
        byteorder = b"little"  # torch's default for files without the record
        if f"{prefix}byteorder" in names:
            byteorder = _record(archive, f"{prefix}byteorder")
    except _unpickler.MALFORMED as exc:
        raise SerializationError(f"ember.load: not a readable PyTorch checkpoint ({exc})") from None
    if byteorder not in (b"little", b"big"):
        text = byteorder.decode("utf-8", "replace")
        raise SerializationError(f"ember.load: Unknown endianness type: {text}")
    storages = _ZipStorages(archive, blob, prefix, byteorder.decode(), map_location)
    return _unpickler.unpickle(
        io.BytesIO(pickled),
        storages,
        weights_only=weights_only,
        encoding=encoding,
        size=len(pickled),
    )
