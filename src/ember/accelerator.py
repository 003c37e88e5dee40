"""``ember.accelerator``: PyTorch's device-agnostic view of the current accelerator.

ember's only accelerator is CUDA through CuPy; without it every query answers as PyTorch's
CPU build does (``is_available()`` False, ``current_accelerator()`` None).
"""

from __future__ import annotations

from . import _backend
from ._backend import device


def is_available(check_available: bool = False) -> bool:
    return _backend.cuda_available()


def current_accelerator(check_available: bool = False) -> device | None:
    return device("cuda") if _backend.cuda_available() else None


def device_count() -> int:
    from . import cuda

    return cuda.device_count()


def _require() -> None:
    if not _backend.cuda_available():
        raise RuntimeError("Cannot access accelerator device when none is available.")


def current_device_index() -> int:
    _require()
    from . import cuda

    return cuda.current_device()


current_device_idx = current_device_index


def set_device_index(device) -> None:
    _require()
    from . import cuda

    cuda.set_device(device)


set_device_idx = set_device_index


def synchronize(device=None) -> None:
    _require()
    from . import cuda

    cuda.synchronize(device)


def _cuda_call(name: str, *args):
    _require()
    from . import cuda

    return getattr(cuda, name)(*args)


def empty_cache() -> None:
    if _backend.cuda_available():
        _cuda_call("empty_cache")


def memory_allocated(device=None) -> int:
    return _cuda_call("memory_allocated", device)


def max_memory_allocated(device=None) -> int:
    return _cuda_call("max_memory_allocated", device)


def memory_reserved(device=None) -> int:
    return _cuda_call("memory_reserved", device)


def max_memory_reserved(device=None) -> int:
    return _cuda_call("max_memory_reserved", device)


def reset_peak_memory_stats(device=None) -> None:
    _cuda_call("reset_peak_memory_stats", device)


class device_index:
    """Context manager that makes ``idx`` the current accelerator (None: unchanged)."""

    def __init__(self, idx: int | None) -> None:
        self.idx, self.previous = idx, None

    def __enter__(self):
        if self.idx is not None:
            self.previous = current_device_index()
            set_device_index(self.idx)
        return self

    def __exit__(self, *exc) -> None:
        if self.previous is not None:
            set_device_index(self.previous)
