"""Objects that cross between processes with their arrays in one shared-memory segment.

A worker pickles a batch with every tensor (and NumPy array) replaced by a reference into a
segment file in ``/dev/shm``; the arrays are copied there once. The main process maps the file,
unlinks it at once (the mapping keeps the pages alive) and rebuilds the tensors as views of the
mapping, so the data is never pickled and the memory goes away with the last tensor that uses it.
Segment names start with a prefix owned by one DataLoader iterator, so whatever a shutdown or a
dead process leaves behind is found and unlinked by that prefix.
"""

from __future__ import annotations

import glob
import io
import mmap
import os
import pickle
import tempfile

import numpy as np

from ..._tensor import Tensor

_ALIGN = 64
SHM_DIR = "/dev/shm" if os.path.isdir("/dev/shm") else tempfile.gettempdir()


class _ArrayCollector(pickle.Pickler):
    """Pickles everything except arrays, which it collects and refers to by position."""

    def __init__(self, file):
        super().__init__(file, protocol=pickle.HIGHEST_PROTOCOL)
        self.arrays: list[np.ndarray] = []

    def persistent_id(self, obj):
        if isinstance(obj, Tensor):
            if obj.requires_grad and obj.grad_fn is not None:
                raise RuntimeError(
                    "Cowardly refusing to serialize non-leaf tensor which requires_grad, since "
                    "autograd does not support crossing process boundaries.  If you just want to "
                    "transfer the data, call detach() on the tensor before serializing (e.g., "
                    "putting it on the queue)."
                )
            device = str(obj.device)
            data = np.asarray(obj.detach().cpu()._data)
            self.arrays.append(data)
            return ("tensor", len(self.arrays) - 1, obj.requires_grad, device)
        if type(obj) is np.ndarray and not obj.dtype.hasobject:
            self.arrays.append(obj)
            return ("ndarray", len(self.arrays) - 1)
        return None


class _ArrayRebuilder(pickle.Unpickler):
    def __init__(self, file, arrays):
        super().__init__(file)
        self.arrays = arrays

    def persistent_load(self, pid):
        array = self.arrays[pid[1]]
        if pid[0] == "ndarray":
            return array
        _, _, requires_grad, device = pid
        tensor = Tensor._wrap(array)
        if device != "cpu":
            tensor = tensor.to(device)
        return tensor.requires_grad_() if requires_grad else tensor


class SharedPayload:
    """A pickled object whose arrays wait in a shared-memory segment (``path``; None if none)."""

    __slots__ = ("pickled", "path", "size", "layout")

    def __init__(self, pickled: bytes, path, size: int, layout: list):
        self.pickled, self.path, self.size, self.layout = pickled, path, size, layout

    def __getstate__(self):
        return (self.pickled, self.path, self.size, self.layout)

    def __setstate__(self, state):
        self.pickled, self.path, self.size, self.layout = state

    def load(self, unlink: bool = True):
        """The object, its arrays viewing the segment; ``unlink`` removes the segment's name."""
        arrays = []
        if self.path is not None:
            fd = os.open(self.path, os.O_RDWR)
            try:
                memory = mmap.mmap(fd, self.size)
            finally:
                os.close(fd)
                if unlink:
                    self.discard()
            for offset, shape, dtype in self.layout:
                arrays.append(np.ndarray(shape, dtype, buffer=memory, offset=offset))
        else:
            arrays = [np.empty(shape, dtype) for _, shape, dtype in self.layout]
        return _ArrayRebuilder(io.BytesIO(self.pickled), arrays).load()

    def discard(self) -> None:
        """Unlink the segment (an undelivered batch); its memory goes once nothing maps it."""
        if self.path is not None:
            try:
                os.unlink(self.path)
            except FileNotFoundError:
                pass


def share(obj, name: str) -> SharedPayload:
    """Pickle ``obj`` with its arrays copied into a new segment file called ``name``."""
    buffer = io.BytesIO()
    collector = _ArrayCollector(buffer)
    collector.dump(obj)
    layout, size = [], 0
    for array in collector.arrays:
        layout.append((size, array.shape, array.dtype))
        size += -(-array.nbytes // _ALIGN) * _ALIGN
    if size == 0:  # no arrays, or only empty ones: nothing to map
        return SharedPayload(buffer.getvalue(), None, 0, layout)
    path = os.path.join(SHM_DIR, name)
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        os.ftruncate(fd, size)
        memory = mmap.mmap(fd, size)
    finally:
        os.close(fd)
    try:
        for (offset, shape, dtype), array in zip(layout, collector.arrays):
            np.ndarray(shape, dtype, buffer=memory, offset=offset)[...] = array
    finally:
        memory.close()
    return SharedPayload(buffer.getvalue(), path, size, layout)


def unlink_segments(prefix: str) -> None:
    """Remove every segment whose name starts with ``prefix`` (undelivered or orphaned)."""
    for path in glob.glob(os.path.join(SHM_DIR, glob.escape(prefix) + "*")):
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass
