"""Arrays in memory that other processes can map: what ``Tensor.share_memory_()`` moves a
tensor's data into, and what ``ember.multiprocessing`` hands to another process by handle.

A segment is one ``mmap`` of a file that holds no name a process could leak:

- ``file_descriptor`` (the default on Linux, as torch's): an anonymous ``memfd``. Its pages live
  while some process maps it or holds its descriptor; a receiving process gets a duplicate of
  the descriptor (``multiprocessing.reduction.DupFd``), so the kernel frees the memory when the
  last tensor using it dies in every process, or when the processes end.
- ``file_system``: a named file in ``/dev/shm`` whose first 64 bytes hold a count of the
  mappings and the handles in flight, updated under ``flock``; whoever drops the count to zero
  unlinks the name. A handle that is pickled but never unpickled keeps the name (as torch's).

An array lives in a segment when the end of its ``.base`` chain is a segment's ``mmap``; the
``mmap`` goes away with the last array viewing it, and its finalizer closes the descriptor and
releases the count. Nothing here knows about tensors or graphs.
"""

from __future__ import annotations

import fcntl
import itertools
import mmap
import os
import struct
import weakref

import numpy as np

if os.path.isdir("/dev/shm"):
    SHM_DIR = "/dev/shm"
else:  # pragma: no cover - no /dev/shm (tempfile costs `import ember` ~2 % where it loads)
    import tempfile

    SHM_DIR = tempfile.gettempdir()
HEADER = 64  # file_system: the reference count, then padding to keep the data aligned
if hasattr(os, "memfd_create"):
    ALL_STRATEGIES = ("file_descriptor", "file_system")
else:  # macOS
    ALL_STRATEGIES = ("file_system",)
strategy = ALL_STRATEGIES[0]

_names = itertools.count()
# id(mmap) -> Segment, for the segments this process maps
_segments: dict[int, Segment] = {}
# identity -> Segment: a segment received twice (or sent out and back) is mapped once, so its
# tensors alias as torch's do
_by_key: dict[tuple, Segment] = {}
# hooks that ember.multiprocessing installs: how a finalizer is made (it must also run when a
# multiprocessing child exits through os._exit) and what a forked child does with a segment
finalizer = weakref.finalize
after_fork = None


class Segment:
    """One mapped segment: its ``mmap`` (weakly), and how another process can map it too."""

    __slots__ = ("strategy", "fd", "name", "size", "offset", "key", "mmap_ref", "__weakref__")

    def __init__(self, strategy: str, memory: mmap.mmap, size: int, fd=None, name=None):
        self.strategy, self.fd, self.name, self.size = strategy, fd, name, size
        self.offset = HEADER if strategy == "file_system" else 0
        if fd is not None:
            info = os.fstat(fd)
            self.key = ("fd", info.st_dev, info.st_ino)
        else:
            self.key = ("name", name)
        self.mmap_ref = weakref.ref(memory)
        _segments[id(memory)] = self
        _by_key[self.key] = self
        finalizer(memory, _release, id(memory))
        if after_fork is not None:
            after_fork(self)

    def address(self) -> int:
        memory = self.mmap_ref()
        return np.frombuffer(memory, np.uint8, 1, self.offset).__array_interface__["data"][0]


def _release(memory_id: int) -> None:
    """A segment's mapping died (or its process exits): close its descriptor, drop its count.
    Runs once per segment however many finalizers a fork left pointing at it."""
    segment = _segments.pop(memory_id, None)
    if segment is None:
        return
    if _by_key.get(segment.key) is segment:
        del _by_key[segment.key]
    if segment.fd is not None:
        os.close(segment.fd)
    if segment.name is not None:
        add_reference(segment.name, -1)


def release_all() -> None:
    """Release every segment now: for a process about to end through ``os._exit``, whose
    finalizers would not run (a file_system name would outlive it)."""
    for memory_id in list(_segments):
        _release(memory_id)


def add_reference(name: str, delta: int) -> int:
    """Change a file_system segment's count under its lock; unlink the name at zero."""
    path = os.path.join(SHM_DIR, name)
    try:
        fd = os.open(path, os.O_RDWR)
    except FileNotFoundError:
        return 0
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        (count,) = struct.unpack("q", os.pread(fd, 8, 0))
        count += delta
        os.pwrite(fd, struct.pack("q", count), 0)
        if count <= 0:
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass
        return count
    finally:
        os.close(fd)


def _map(fd: int, size: int) -> mmap.mmap:
    return mmap.mmap(fd, size, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)


def _new_segment(nbytes: int, how: str) -> tuple[Segment, mmap.mmap]:
    size = max(nbytes, 1)  # mmap refuses length 0
    if how == "file_descriptor":
        fd = os.memfd_create("ember-shared", os.MFD_CLOEXEC)
        os.ftruncate(fd, size)
        memory = _map(fd, size)
        return Segment(how, memory, size, fd=fd), memory
    name = f"ember_{os.getpid()}_{next(_names)}_{os.urandom(4).hex()}"
    fd = os.open(os.path.join(SHM_DIR, name), os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        os.ftruncate(fd, HEADER + size)
        os.pwrite(fd, struct.pack("q", 1), 0)
        memory = _map(fd, HEADER + size)
    finally:
        os.close(fd)
    return Segment(how, memory, size, name=name), memory


def segment_of(data) -> tuple[Segment, int] | None:
    """(segment, byte offset of ``data``'s first element in it) when ``data`` lives in one."""
    root = data
    while isinstance(root, np.ndarray):
        root = root.base
    if not isinstance(root, mmap.mmap):
        return None
    segment = _segments.get(id(root))
    if segment is None or segment.mmap_ref() is not root:
        return None
    start = data.__array_interface__["data"][0] if data.size else segment.address()
    return segment, start - segment.address()


def is_shared(data) -> bool:
    return isinstance(data, np.ndarray) and segment_of(data) is not None


def share_array(data: np.ndarray, how: str | None = None) -> np.ndarray:
    """A copy of ``data`` in a new segment, with the same strides where ``data`` is dense."""
    layout = np.empty_like(data)  # keeps a permuted layout (channels_last), compacts the rest
    segment, memory = _new_segment(layout.nbytes, how or strategy)
    out = np.ndarray(
        data.shape,
        data.dtype,
        buffer=memory,
        offset=segment.offset,
        strides=layout.strides,
    )
    out[...] = data
    return out


def address(data: np.ndarray) -> int:
    return data.__array_interface__["data"][0]


def can_move_with_base(data, base) -> bool:
    """Whether ``share_array(base)`` keeps ``base``'s layout, so ``data`` (a view of it) can be
    remade at the same place inside the moved copy (``view_at``)."""
    if not isinstance(base, np.ndarray) or not isinstance(data, np.ndarray) or not base.size:
        return False
    if not np.may_share_memory(data, base):
        return False
    return np.empty_like(base).strides == base.strides


def view_at(base: np.ndarray, start: int, like: np.ndarray) -> np.ndarray:
    """``like``'s shape and strides, ``start`` bytes after ``base``'s first element (``base``
    lives in a segment)."""
    segment, offset = segment_of(base)
    memory = segment.mmap_ref()
    return view(segment, memory, offset + start, like.shape, like.strides, like.dtype)


def view(segment: Segment, memory: mmap.mmap, offset: int, shape, strides, dtype) -> np.ndarray:
    """An array over ``memory`` (``segment``'s mapping) ``offset`` bytes into its data."""
    return np.ndarray(
        tuple(shape),
        np.dtype(dtype),
        buffer=memory,
        offset=segment.offset + offset,
        strides=tuple(strides),
    )


def _known(key: tuple) -> tuple[Segment, mmap.mmap] | None:
    segment = _by_key.get(key)
    memory = None if segment is None else segment.mmap_ref()
    return None if memory is None else (segment, memory)


def receive_fd(fd: int, size: int) -> tuple[Segment, mmap.mmap]:
    """The segment behind a descriptor another process sent (this process owns ``fd`` now)."""
    info = os.fstat(fd)
    known = _known(("fd", info.st_dev, info.st_ino))
    if known is not None:
        if fd != known[0].fd:  # spawn hands a child one descriptor number for every handle
            os.close(fd)
        return known
    memory = _map(fd, size)
    return Segment("file_descriptor", memory, size, fd=fd), memory


def receive_name(name: str, size: int) -> tuple[Segment, mmap.mmap]:
    """The segment of a file_system handle; the handle's reference becomes this mapping's."""
    known = _known(("name", name))
    if known is not None:
        add_reference(name, -1)
        return known
    try:
        fd = os.open(os.path.join(SHM_DIR, name), os.O_RDWR)
    except FileNotFoundError:
        raise RuntimeError(
            f"shared memory segment {name!r} is gone: every tensor using it died before this "
            "process received it"
        ) from None
    try:
        memory = _map(fd, HEADER + size)
    finally:
        os.close(fd)
    return Segment("file_system", memory, size, name=name), memory
