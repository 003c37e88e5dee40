"""CUDA memory statistics, from CuPy's memory pool.

CuPy's pool knows what is in use and what it holds, not the peaks; ember counts the peaks by
routing CuPy's allocations through a small function from the first call that needs them
(``max_memory_allocated``, ``reset_peak_memory_stats``, ``memory_stats``) on. So reset the
peaks before the code being measured, as one does with PyTorch.
"""

from __future__ import annotations

from collections import OrderedDict

from .. import _backend

_peaks: dict = {}  # device index -> [peak allocated, peak reserved]
_tracking = [None]  # the pool whose allocations are being counted


def _pool():
    return _backend._cupy.get_default_memory_pool()


def _index(device) -> int:
    from . import _device_index

    return _device_index(device, optional=False)


def _track() -> None:
    """Count peaks from now on: allocations go through the default pool, noted on the way."""
    cupy = _backend._cupy
    pool = _pool()
    if _tracking[0] is pool:
        return
    runtime = cupy.cuda.runtime

    def malloc(size: int):
        memory = pool.malloc(size)
        peak = _peaks.setdefault(int(runtime.getDevice()), [0, 0])
        used, held = pool.used_bytes(), pool.total_bytes()
        if used > peak[0]:
            peak[0] = used
        if held > peak[1]:
            peak[1] = held
        return memory

    cupy.cuda.set_allocator(malloc)
    _tracking[0] = pool


def _current(device) -> tuple:
    """(allocated, reserved) bytes on ``device`` now; (0, 0) without a GPU."""
    if not _backend.cuda_available():
        return 0, 0
    cupy = _backend._cupy
    with cupy.cuda.Device(_index(device)):
        pool = _pool()
        return int(pool.used_bytes()), int(pool.total_bytes())


def _peak(device) -> list:
    allocated, reserved = _current(device)
    if not _backend.cuda_available():
        return [0, 0]
    _track()
    peak = _peaks.setdefault(_index(device), [0, 0])
    peak[0], peak[1] = max(peak[0], allocated), max(peak[1], reserved)
    return peak


def memory_allocated(device=None) -> int:
    """Bytes of GPU memory held by tensors on ``device`` (0 without a GPU)."""
    return _current(device)[0]


def memory_reserved(device=None) -> int:
    """Bytes of GPU memory held by the caching pool, in use or free for reuse."""
    return _current(device)[1]


def max_memory_allocated(device=None) -> int:
    """The most ``memory_allocated`` reached since the last ``reset_peak_memory_stats``."""
    return _peak(device)[0]


def max_memory_reserved(device=None) -> int:
    """The most ``memory_reserved`` reached since the last ``reset_peak_memory_stats``."""
    return _peak(device)[1]


def reset_peak_memory_stats(device=None) -> None:
    """Start the peaks again from the current usage."""
    if not _backend.cuda_available():
        return
    _track()
    _peaks[_index(device)] = list(_current(device))


reset_max_memory_allocated = reset_peak_memory_stats


def reset_accumulated_memory_stats(device=None) -> None:
    """Accepted for compatibility: ember keeps no accumulated counters."""


def empty_cache() -> None:
    """Give the pool's free blocks back to the driver (nothing without a GPU)."""
    if _backend.cuda_available():
        _pool().free_all_blocks()
        _backend._cupy.get_default_pinned_memory_pool().free_all_blocks()


def mem_get_info(device=None) -> tuple:
    """(free, total) bytes of the GPU, as the driver reports them."""
    from . import require

    cupy = require()
    with cupy.cuda.Device(_index(device)):
        free, total = cupy.cuda.runtime.memGetInfo()
    return int(free), int(total)


def memory_stats(device=None) -> OrderedDict:
    """PyTorch's main memory counters (an empty dict without a GPU)."""
    if not _backend.cuda_available():
        return OrderedDict()
    allocated, reserved = _current(device)
    peak = _peak(device)
    return OrderedDict(
        [
            ("allocated_bytes.all.current", allocated),
            ("allocated_bytes.all.peak", peak[0]),
            ("reserved_bytes.all.current", reserved),
            ("reserved_bytes.all.peak", peak[1]),
            ("inactive_split_bytes.all.current", reserved - allocated),
            ("num_alloc_retries", 0),
            ("num_ooms", 0),
        ]
    )


def memory_summary(device=None, abbreviated: bool = False) -> str:
    """A short table of the memory counters."""
    stats = memory_stats(device)
    if not stats:
        return "No CUDA device: no memory in use."
    lines = [f"{'counter':<34}{'bytes':>16}"]
    lines += [f"{name:<34}{value:>16,}" for name, value in stats.items()]
    return "\n".join(lines)
