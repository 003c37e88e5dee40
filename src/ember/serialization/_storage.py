"""Storages in a PyTorch checkpoint: which storage a tensor views when saving, and tensors
rebuilt as views onto one loaded storage, so that memory shared when saved is shared when loaded.

A torch checkpoint stores each storage (a flat run of elements) once; every tensor record names
its storage, an offset and strides into it. Saving, the tensors whose arrays view one NumPy (or
CuPy) array share that array's storage; loading, every record of one storage is a view onto one
flat array, so a write through one shows in the others, as in PyTorch.
"""

from __future__ import annotations

import numpy as np

from .. import _backend
from .. import _dtype as dt
from .._tensor import Tensor
from . import _location
from ._errors import SerializationError

_INT64_MAX = 2**63 - 1


# --- saving -------------------------------------------------------------------------------------
def _address(array) -> int:
    if isinstance(array, np.ndarray):
        return int(array.__array_interface__["data"][0])
    return int(array.data.ptr)  # CuPy: the view's first byte on the device


def _owner(array):
    """The array whose memory ``array`` views: through NumPy/CuPy views and as_strided's
    wrapper objects, stopping at an array over a foreign buffer (bytes, a bytearray)."""
    owner = array
    while True:
        base = getattr(owner, "base", None)
        if base is None:
            return owner
        if hasattr(base, "dtype") and hasattr(base, "strides"):  # an array of the same library
            owner = base
        elif hasattr(base, "__array_interface__") and hasattr(getattr(base, "base", None), "dtype"):
            owner = base.base  # NumPy's as_strided wraps its base in a DummyArray
        else:
            return owner


class SavedStorage:
    """One storage of a checkpoint being written: its key, flat array and location tag."""

    __slots__ = ("key", "flat", "dtype", "location")

    def __init__(self, key: str, flat, dtype: dt.dtype, location: str):
        self.key, self.flat, self.dtype, self.location = key, flat, dtype, location

    def host_bytes(self) -> bytes:
        """The storage's bytes, little-endian, as torch stores them."""
        flat = _backend.to_host(self.flat)
        if flat.dtype.byteorder == ">":
            flat = flat.astype(flat.dtype.newbyteorder("<"))
        return np.ascontiguousarray(flat).tobytes()


class StorageTable:
    """The storages of one checkpoint: tensors whose arrays view one array share its storage."""

    def __init__(self):
        self.storages: dict = {}  # (address, bytes, dtype) of a flat array -> SavedStorage

    def storage_of(self, t: Tensor) -> tuple[SavedStorage, int, tuple]:
        """The storage ``t`` views, with its offset and strides in elements."""
        data = t._data
        described = self._describe(data)
        if described is None:  # reversed strides, a reinterpreted dtype: a storage of its own
            described = (data.copy().reshape(-1), 0, _contiguous_strides(data.shape))
        flat, offset, strides = described
        key = (_address(flat), int(flat.nbytes), str(flat.dtype))
        storage = self.storages.get(key)
        if storage is None:
            location = _location.location_of(t)
            storage = SavedStorage(str(len(self.storages)), flat, t.dtype, location)
            self.storages[key] = storage
        return storage, offset, strides

    @staticmethod
    def _describe(data):
        owner = _owner(data)
        if owner.dtype != data.dtype or not (owner.flags.c_contiguous or owner.flags.f_contiguous):
            return None
        flat = owner.reshape(-1, order="A")  # a view in memory order (F order for F arrays)
        itemsize = data.itemsize
        start = _address(data) - _address(flat)
        if start < 0 or start % itemsize or any(s < 0 or s % itemsize for s in data.strides):
            return None
        offset = start // itemsize
        strides = tuple(s // itemsize for s in data.strides)
        if (
            data.size
            and offset + sum((n - 1) * s for n, s in zip(data.shape, strides)) >= flat.size
        ):
            return None
        return flat, offset, strides


def _contiguous_strides(shape) -> tuple:
    strides, step = [], 1
    for n in reversed(shape):
        strides.append(step)
        step *= max(n, 1)
    return tuple(reversed(strides))


# --- loading ------------------------------------------------------------------------------------
class LoadedStorage:
    """One storage of a checkpoint being read: a flat array of its elements, on the device it
    was restored to. Every tensor record of this storage is a view onto ``array``."""

    __slots__ = ("array", "dtype", "location")

    def __init__(self, array, dtype: dt.dtype, location: str):
        self.array, self.dtype, self.location = array, dtype, location

    def typed(self, d: dt.dtype):
        """The storage's memory as elements of ``d`` (an untyped byte storage read as uint16)."""
        if d is self.dtype:
            return self.array
        nbytes = self.array.size * self.array.itemsize
        if nbytes % d.itemsize:
            raise SerializationError(
                f"ember.load: a storage of {nbytes} bytes cannot hold elements of {d.name} "
                f"({d.itemsize} bytes each)"
            )
        return self.array.view(d.np)


def to_native_order(array: np.ndarray, d: dt.dtype, byteorder: str) -> np.ndarray:
    """``array`` (a storage just read) byteswapped in place when the file's byte order is not
    this machine's; torch swaps each component of a complex number on its own."""
    component = d.itemsize // 2 if d.category == dt.COMPLEX else d.itemsize
    if component > 1 and byteorder != _NATIVE:
        array.view(f"u{component}").byteswap(inplace=True)
    return array


_NATIVE = "little" if np.little_endian else "big"


def restore(array, d: dt.dtype, location: str, map_location) -> LoadedStorage:
    """The loaded storage on the device its location tag names, or where ``map_location``
    sends it (a callable sees the whole storage as a flat tensor, as torch's sees a storage)."""
    placed = _location.restore(Tensor._wrap(array), location, map_location)
    return LoadedStorage(placed._data, d, location)


def is_expanded(t: Tensor) -> bool:
    """Whether ``t`` shows more elements than the memory under it holds (a zero stride, an
    overlapping record): copying it could turn a small file into gigabytes."""
    data = t._data
    return data.size > _owner(data).size


def check_size(size, what: str = "a tensor record") -> tuple:
    """``size`` (a tensor record's sizes or strides) as a tuple of at most 64 ints."""
    if not isinstance(size, (tuple, list)) or not all(type(s) is int for s in size):
        raise SerializationError(f"ember.load: {what} has an invalid size {size!r}")
    if len(size) > 64:
        raise SerializationError(
            f"ember.load: {what} has {len(size)} dimensions (NumPy's limit: 64)"
        )
    return tuple(size)


def view(storage: LoadedStorage, d: dt.dtype, offset, size, stride) -> Tensor:
    """A tensor of ``size`` and ``stride`` at ``offset`` into ``storage`` (elements of ``d``):
    a view, so records of one storage share memory. An expanded record (a zero stride) is
    read-only, as ember's expand() is: writing into it raises torch's overlap error, as torch
    does for it."""
    if not isinstance(storage, LoadedStorage):
        raise SerializationError(
            f"ember.load: a tensor record names {type(storage).__name__}, not a storage"
        )
    size, stride = check_size(size), check_size(stride, "a tensor record's stride")
    if len(size) != len(stride):
        raise SerializationError(
            f"ember.load: a tensor record has {len(size)} sizes but {len(stride)} strides"
        )
    if type(offset) is not int or offset < 0:
        raise SerializationError(f"ember.load: invalid storage offset {offset!r}")
    if any(s < 0 for s in size) or any(s < 0 for s in stride):
        raise SerializationError(
            f"ember.load: negative size or stride in a tensor record ({size}, {stride})"
        )
    if any(s > _INT64_MAX for s in size) or any(s > _INT64_MAX for s in stride):
        raise SerializationError(
            f"ember.load: Storage size calculation overflowed with sizes={list(size)} and "
            f"strides={list(stride)}"
        )
    array = storage.typed(d)
    itemsize = array.itemsize
    count = 1
    nonzero = itemsize
    for s in size:
        count *= s
        nonzero *= max(s, 1)
    if nonzero > _INT64_MAX:
        raise SerializationError(
            f"ember.load: a tensor record of size {list(size)} is too large for an array"
        )
    xp = _backend.array_module(array)
    if count == 0:
        return Tensor._wrap(xp.zeros(size, dtype=array.dtype))
    needed = offset + sum((s - 1) * st for s, st in zip(size, stride)) + 1
    if needed > array.size:
        raise SerializationError(
            f"ember.load: a tensor of size {list(size)} with strides {list(stride)} at offset "
            f"{offset} reaches past its storage of {array.size} elements (corrupt file)"
        )
    byte_strides = tuple(s * itemsize for s in stride)
    if xp is np:
        data = np.ndarray(
            size, array.dtype, buffer=array, offset=offset * itemsize, strides=byte_strides
        )
        if any(n > 1 and st == 0 for n, st in zip(size, stride)):
            data.flags.writeable = False
    else:  # CuPy arrays have no read-only state
        data = xp.lib.stride_tricks.as_strided(array[offset:], shape=size, strides=byte_strides)
    return Tensor._wrap(data)
