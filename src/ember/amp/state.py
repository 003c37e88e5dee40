"""Autocast state: per thread, as in PyTorch (enabled flag and dtype per device, cache, nesting).

Changing the state tells ``_patch`` whether some thread has autocast on; the op functions run
through the casting wrapper only while one does.
"""

from __future__ import annotations

from .. import _autocast_state, _backend
from .. import _dtype as dt

# the per-thread flags live below the op layer, which reads them (an op that fuses its
# kernels only outside autocast); this module is autocast's policy around them
state = _autocast_state.state


def _device_type(device_type) -> str:
    """``"cpu"`` or ``"cuda"``; other names get ember's device error."""
    if device_type in ("cpu", "cuda"):
        return device_type
    return _backend.device(device_type).type


def _refresh() -> None:
    from . import _patch

    # held from the first enabled device until the outermost region exits with none enabled:
    # a region with enabled=False inside an enabled one does not swap the code back and forth
    enabled = state.enabled["cuda"] or state.enabled["cpu"]
    wanted = enabled or (state.counted and state.nesting > 0)
    if wanted != state.counted:
        state.counted = wanted
        _patch.hold(wanted)


def is_autocast_available(device_type: str) -> bool:
    """Whether autocast can run on ``device_type`` (``"cpu"`` and ``"cuda"`` in ember)."""
    return _device_type(device_type) in ("cpu", "cuda")


def is_autocast_enabled(device_type: str | None = None) -> bool:
    """Whether autocast is on for ``device_type`` in this thread (CUDA when not given)."""
    return state.enabled[_device_type(device_type or "cuda")]


def set_autocast_enabled(device_type, enabled: bool | None = None) -> None:
    """Turn autocast on or off for a device; ``set_autocast_enabled(flag)`` means CUDA."""
    if enabled is None:  # the one-argument legacy form
        device_type, enabled = "cuda", device_type
    state.enabled[_device_type(device_type)] = bool(enabled)
    _refresh()


def get_autocast_dtype(device_type: str) -> dt.dtype:
    """The lower-precision dtype autocast uses on ``device_type`` in this thread."""
    return state.dtype[_device_type(device_type)]


def set_autocast_dtype(device_type: str, dtype: dt.dtype) -> None:
    state.dtype[_device_type(device_type)] = dt.to_dtype(dtype)


def get_autocast_gpu_dtype() -> dt.dtype:
    return state.dtype["cuda"]


def get_autocast_cpu_dtype() -> dt.dtype:
    return state.dtype["cpu"]


def is_autocast_cpu_enabled() -> bool:
    return state.enabled["cpu"]


def set_autocast_gpu_dtype(dtype: dt.dtype) -> None:
    set_autocast_dtype("cuda", dtype)


def set_autocast_cpu_dtype(dtype: dt.dtype) -> None:
    set_autocast_dtype("cpu", dtype)


def set_autocast_cpu_enabled(enabled: bool) -> None:
    set_autocast_enabled("cpu", enabled)


def is_autocast_cache_enabled() -> bool:
    """Whether lower-precision casts of float32 leaf parameters are reused within a region."""
    return state.cache_enabled


def set_autocast_cache_enabled(enabled: bool) -> None:
    state.cache_enabled = bool(enabled)


def clear_autocast_cache() -> None:
    """Drop the cached casts of parameters (done when the outermost region exits)."""
    state.cache.clear()


def autocast_increment_nesting() -> int:
    state.nesting += 1
    _refresh()
    return state.nesting


def autocast_decrement_nesting() -> int:
    state.nesting -= 1
    _refresh()
    return state.nesting
