"""Reusable large NumPy scratch arrays for the convolution kernels.

A fresh array of tens of megabytes comes from ``mmap``: every page faults (and is zeroed by
the kernel) on first write, which cost a third of an im2col copy. A buffer here is handed out
again only once nothing but the pool refers to it (no array, no view: ``sys.getrefcount``),
so a caller may keep what it gets (saved for backward, say) for as long as it likes.
"""

from __future__ import annotations

import sys
import threading
from collections import OrderedDict

import numpy as np

_MIN_BYTES = 1 << 20  # smaller arrays come from malloc's free lists anyway
_PER_SHAPE = 3
_MAX_BYTES = 512 << 20


class ScratchPool:
    def __init__(self) -> None:
        self._buffers: OrderedDict[tuple, list[np.ndarray]] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    def empty(self, shape: tuple, dtype) -> np.ndarray:
        """An uninitialised C-contiguous array, reused when a free one of this shape exists."""
        dtype = np.dtype(dtype)
        nbytes = int(np.prod(shape)) * dtype.itemsize
        if nbytes < _MIN_BYTES:
            return np.empty(shape, dtype)
        key = (tuple(shape), dtype)
        with self._lock:
            buffers = self._buffers.get(key)
            if buffers is not None:
                self._buffers.move_to_end(key)
                for buffer in buffers:
                    # the list, the loop variable and getrefcount's argument: nobody else
                    if sys.getrefcount(buffer) == 3:
                        return buffer
                if len(buffers) >= _PER_SHAPE:
                    return np.empty(shape, dtype)
            buffer = np.empty(shape, dtype)
            self._buffers.setdefault(key, []).append(buffer)
            self._bytes += nbytes
            while self._bytes > _MAX_BYTES and len(self._buffers) > 1:
                _, dropped = self._buffers.popitem(last=False)
                self._bytes -= sum(b.nbytes for b in dropped)
            return buffer

    def clear(self) -> None:
        with self._lock:
            self._buffers.clear()
            self._bytes = 0


scratch = ScratchPool()
