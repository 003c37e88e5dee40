"""PyTorch's checkpoint format (``torch.save``'s zip of a pickle plus raw storages), written and
read without torch.

Writing: the pickle names torch's rebuild functions and storage classes, exactly as
``torch.save`` does, so ``torch.load`` reads ember's files; tensors that are views of one array
share one storage, as in PyTorch.

Reading: with ``weights_only=True`` (the default, as PyTorch 2.6+) only tensors, plain
containers and allowlisted globals are rebuilt; with ``weights_only=False`` any pickled object
loads (torch's classes are looked up under the same names in ember).
"""

from __future__ import annotations

import importlib
import io
import pickle
import struct
import uuid
import zipfile
import zlib
from collections import OrderedDict

import numpy as np

from .. import _dtype as dt
from .._tensor import Tensor
from . import _location, _safe_globals
from ._errors import SerializationError

_STORAGE_OF_DTYPE = {d.name: dt.LEGACY_NAMES[d.name] + "Storage" for d in dt.ALL}
_DTYPE_OF_STORAGE = {v: k for k, v in _STORAGE_OF_DTYPE.items()}
_ALIGNMENT = 64
_INT64_MAX = 2**63 - 1


# --- writing ----------------------------------------------------------------------------------
class _Global:
    """Stands for ``module.name`` in the pickle without importing it (torch need not exist)."""

    def __init__(self, module: str, name: str):
        self.module, self.name = module, name

    def __call__(self, *args):  # pickle insists that a reduce function be callable
        raise TypeError(f"{self.module}.{self.name} is only a name in a pickle")


REBUILD_TENSOR = _Global("torch._utils", "_rebuild_tensor_v2")
REBUILD_PARAMETER = _Global("torch._utils", "_rebuild_parameter")


class _Storage:
    def __init__(self, key: str, array, dtype_name: str, location: str):
        self.key, self.array, self.dtype_name = key, array, dtype_name
        self.location = location  # torch's tag of the saved tensor's device: "cpu", "cuda:0"


def _root_array(data):
    """The array owning ``data``'s memory, with ``data``'s offset and strides in elements; or
    None when ``data`` cannot be described that way (reversed strides, reinterpreted dtype)."""
    root = data
    while isinstance(root.base, np.ndarray):
        root = root.base
    if root is data:
        return None
    if root.dtype != data.dtype or not root.flags.c_contiguous:
        return None
    itemsize = data.itemsize
    start = data.__array_interface__["data"][0] - root.__array_interface__["data"][0]
    if start % itemsize or any(s < 0 or s % itemsize for s in data.strides):
        return None
    return root, start // itemsize, tuple(s // itemsize for s in data.strides)


class _TorchPickler(pickle._Pickler):  # the Python pickler lets us write torch's globals
    dispatch = dict(pickle._Pickler.dispatch)

    def __init__(self, file, protocol: int):
        super().__init__(file, protocol)
        self.storages: dict[int, _Storage] = {}

    def _write_global(self, obj: _Global) -> None:
        self.write(pickle.GLOBAL + f"{obj.module}\n{obj.name}\n".encode())
        self.memoize(obj)

    dispatch[_Global] = _write_global

    def persistent_id(self, obj):
        if isinstance(obj, _Storage):
            storage_type = _Global("torch", _STORAGE_OF_DTYPE[obj.dtype_name])
            return ("storage", storage_type, obj.key, obj.location, int(obj.array.size))
        return None

    def _storage_of(self, t: Tensor):
        data = t._data
        if type(data) is not np.ndarray:
            data = t.detach().cpu()._data
        described = _root_array(data)
        if described is None:
            owns = data.flags.c_contiguous and data.base is None
            root = data if owns else np.array(data, order="C", copy=True)
            offset, strides = 0, tuple(s // data.itemsize for s in root.strides)
        else:
            root, offset, strides = described
        storage = self.storages.get(id(root))
        if storage is None:
            location = _location.location_of(t)
            storage = _Storage(str(len(self.storages)), root, t.dtype.name, location)
            self.storages[id(root)] = storage
        return storage, offset, strides

    def reducer_override(self, obj):
        if isinstance(obj, Tensor):
            from ..nn.parameter import Parameter

            if isinstance(obj, Parameter):
                plain = obj.detach()
                return (REBUILD_PARAMETER, (plain, obj.requires_grad, OrderedDict()))
            storage, offset, strides = self._storage_of(obj)
            args = (storage, offset, tuple(obj.shape), strides, obj.requires_grad, OrderedDict())
            return (REBUILD_TENSOR, args)
        return NotImplemented


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
    pickler = _TorchPickler(buffer, pickle_protocol)
    pickler.dump(obj)
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as archive:
        _aligned_writestr(archive, "archive/data.pkl", buffer.getvalue())
        _aligned_writestr(archive, "archive/.format_version", b"1")
        _aligned_writestr(archive, "archive/.storage_alignment", str(_ALIGNMENT).encode())
        _aligned_writestr(archive, "archive/byteorder", b"little")
        for storage in pickler.storages.values():
            array = storage.array
            if array.dtype.byteorder == ">":
                array = array.astype(array.dtype.newbyteorder("<"))
            _aligned_writestr(archive, f"archive/data/{storage.key}", array.tobytes())
        _aligned_writestr(archive, "archive/version", b"3\n")
        serial = uuid.uuid4().hex.encode().ljust(40, b"0")
        _aligned_writestr(archive, "archive/.data/serialization_id", serial)
    return out.getvalue()


# --- reading ----------------------------------------------------------------------------------
class _StorageType:
    def __init__(self, dtype_name: str):
        self.dtype_name = dtype_name


def _rebuild_tensor_v2(
    storage, storage_offset, size, stride, requires_grad=False, backward_hooks=None, metadata=None
):
    array = storage[0]
    size, stride = tuple(size), tuple(stride)
    if len(size) != len(stride):
        raise SerializationError(
            f"ember.load: a tensor record has {len(size)} sizes but {len(stride)} strides"
        )
    if storage_offset < 0:
        raise SerializationError(f"ember.load: invalid storage offset {storage_offset}")
    if any(s < 0 for s in size) or any(s < 0 for s in stride):
        raise SerializationError(
            f"ember.load: negative size or stride in a tensor record ({size}, {stride})"
        )
    if any(s > _INT64_MAX for s in size) or any(s > _INT64_MAX for s in stride):
        raise SerializationError(
            f"ember.load: Storage size calculation overflowed with sizes={list(size)} and "
            f"strides={list(stride)}"
        )
    count = 1
    for s in size:
        count *= s
    if count:
        needed = storage_offset + sum((s - 1) * st for s, st in zip(size, stride)) + 1
        if needed > array.size:
            raise SerializationError(
                f"ember.load: a tensor of size {list(size)} with strides {list(stride)} at "
                f"offset {storage_offset} reaches past its storage of {array.size} elements "
                "(corrupt file)"
            )
        itemsize = array.itemsize
        view = np.lib.stride_tricks.as_strided(
            array[storage_offset:],
            shape=size,
            strides=tuple(s * itemsize for s in stride),
            writeable=False,
        )
        # An expanded record (a zero stride, or more elements than its storage holds) stays a
        # view, as in torch: copying it could turn a 500-byte file into gigabytes. Like
        # ember's expand() it is read-only, so writing into it raises torch's overlap error.
        expanded = count > array.size or any(st == 0 and s > 1 for s, st in zip(size, stride))
        data = view if expanded else np.array(view, copy=True)
    else:
        data = np.zeros(size, dtype=array.dtype)
    t = Tensor._wrap(data)
    if requires_grad:
        t.requires_grad_(True)
    return t


def _rebuild_parameter(data, requires_grad, backward_hooks, *args):
    from ..nn.parameter import Parameter

    return Parameter(data, requires_grad)


def _rebuild_parameter_with_state(data, requires_grad, backward_hooks, state):
    return _rebuild_parameter(data, requires_grad, backward_hooks)


# the globals of a tensor checkpoint, always allowed
_TENSOR_GLOBALS = {
    ("torch._utils", "_rebuild_tensor_v2"): _rebuild_tensor_v2,
    ("torch._utils", "_rebuild_parameter"): _rebuild_parameter,
    ("torch._utils", "_rebuild_parameter_with_state"): _rebuild_parameter_with_state,
    ("collections", "OrderedDict"): OrderedDict,
}


def _torch_dtype(name: str):
    d = dt.BY_NAME.get(name)
    return d


WEIGHTS_ONLY_HELP = (
    "Weights only load failed. This file can still be loaded, to do so you have two options, "
    "do those steps only if you trust the source of the checkpoint. \n\t(1) In PyTorch 2.6, "
    "we changed the default value of the `weights_only` argument in `torch.load` from `False` "
    "to `True`. Re-running `torch.load` with `weights_only` set to `False` will likely "
    "succeed, but it can result in arbitrary code execution. Do it only if you got the file "
    "from a trusted source.\n\t(2) Alternatively, to load with `weights_only=True` please "
    "check the recommended steps in the following error message.\n\tWeightsUnpickler error: "
)


# The pure-Python unpickler keeps its memo in a dict. The C one keeps a list that a single
# LONG_BINPUT opcode resizes to twice its 32-bit index: an 11-byte pickle that zero-fills 2 GB.
# data.pkl holds the structure only (the tensors' bytes are separate records), so it is small.
class _Unpickler(pickle._Unpickler):
    dispatch = dict(pickle._Unpickler.dispatch)

    def __init__(
        self,
        pickled: bytes,
        archive: zipfile.ZipFile,
        prefix: str,
        weights_only: bool,
        map_location=None,
    ):
        super().__init__(io.BytesIO(pickled))
        self.archive, self.prefix, self.weights_only = archive, prefix, weights_only
        self.map_location = map_location
        self.pickle_size = len(pickled)
        self.storages: dict = {}

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

    def _rebuild_tensor(self, storage, *args):
        """torch's _rebuild_tensor_v2, then the tensor goes where its storage was saved (or
        where map_location sends it), before requires_grad makes it a leaf."""
        requires_grad = len(args) > 3 and args[3]
        t = _rebuild_tensor_v2(storage, *args[:3])
        t = _location.restore(t, storage[2], self.map_location)
        if requires_grad:
            t.requires_grad_(True)
        return t

    def find_class(self, module: str, name: str):
        if (module, name) == ("torch._utils", "_rebuild_tensor_v2"):
            return self._rebuild_tensor
        if (module, name) in _TENSOR_GLOBALS:
            return _TENSOR_GLOBALS[(module, name)]
        if module == "torch" and name in _DTYPE_OF_STORAGE:
            return _StorageType(_DTYPE_OF_STORAGE[name])
        if module == "torch" and _torch_dtype(name) is not None:
            return _torch_dtype(name)
        if self.weights_only:
            allowed = _safe_globals.lookup(module, name)
            if allowed is not None:
                return allowed
            raise pickle.UnpicklingError(
                WEIGHTS_ONLY_HELP
                + f"Unsupported global: GLOBAL {module}.{name} was not an allowed global by "
                f"default. Please use `ember.serialization.add_safe_globals([{module}.{name}])`"
                f" or the `ember.serialization.safe_globals([{module}.{name}])` context manager "
                "to allowlist this global if you trust this class/function."
            )
        if module == "torch" or module.startswith("torch."):
            # a checkpoint pickled by torch: the same class or function under ember's name
            ember_module = "ember" + module[len("torch") :]
            try:
                return getattr(importlib.import_module(ember_module), name)
            except (ImportError, AttributeError):
                raise pickle.UnpicklingError(
                    f"ember.load: the checkpoint needs {module}.{name}, which ember does not have"
                ) from None
        return super().find_class(module, name)

    def persistent_load(self, pid):
        if not isinstance(pid, tuple) or len(pid) < 5 or pid[0] != "storage":
            raise SerializationError(f"ember.load: unsupported persistent id {pid!r}")
        _, storage_type, key, location, numel = pid[:5]
        if not isinstance(location, str):
            raise SerializationError(f"ember.load: invalid storage location {location!r}")
        if not isinstance(storage_type, _StorageType):
            raise SerializationError(f"ember.load: unknown storage type {storage_type!r}")
        if key not in self.storages:
            d = dt.BY_NAME[storage_type.dtype_name]
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
                    f"ember.load: storage {key} is compressed; PyTorch checkpoints store "
                    "tensors uncompressed"
                )
            if not isinstance(numel, int) or numel < 0:
                raise SerializationError(f"ember.load: storage {key} has invalid size {numel!r}")
            if info.file_size != numel * d.itemsize:
                raise SerializationError(
                    f"ember.load: storage {key} holds {info.file_size} bytes, expected "
                    f"{numel * d.itemsize} for {numel} elements of {d.name}"
                )
            raw = self.archive.read(name)
            order = d.np.newbyteorder("<") if d.np.itemsize > 1 else d.np
            array = np.frombuffer(raw, dtype=order).astype(d.np, copy=False)
            self.storages[key] = (array, numel, location)
        return self.storages[key]


# What a damaged archive or pickle raises inside zipfile, zlib, struct and the unpickler
_MALFORMED = (
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


def loads(blob: bytes, weights_only: bool = True, map_location=None):
    try:
        archive = zipfile.ZipFile(io.BytesIO(blob))
    except _MALFORMED as exc:
        raise SerializationError(f"ember.load: not a readable PyTorch checkpoint ({exc})") from None
    pkl = [n for n in archive.namelist() if n.endswith("data.pkl")]
    if not pkl:
        raise SerializationError("ember.load: the zip archive has no data.pkl")
    prefix = pkl[0][: -len("data.pkl")]
    info = archive.getinfo(pkl[0])
    if info.compress_type != zipfile.ZIP_STORED:
        # torch stores every record uncompressed; inflating one could be a memory bomb
        raise SerializationError(
            f"ember.load: {pkl[0]} is compressed; PyTorch checkpoints store records uncompressed"
        )
    try:
        with archive.open(info) as fh:
            unpickler = _Unpickler(fh.read(), archive, prefix, weights_only, map_location)
            return unpickler.load()
    except (pickle.UnpicklingError, SerializationError, _location.DeviceUnavailableError):
        raise
    except _MALFORMED as exc:
        raise SerializationError(
            f"ember.load: the checkpoint's pickle is malformed ({type(exc).__name__}: {exc})"
        ) from None
