"""ember.cuda: whether CUDA tensors (through CuPy) can be used on this machine."""

from __future__ import annotations

from . import _backend


def is_available() -> bool:
    """True when CuPy imports and sees at least one NVIDIA GPU."""
    return _backend.cuda_available()


def device_count() -> int:
    if not is_available():
        return 0
    return int(_backend._cupy.cuda.runtime.getDeviceCount())


def current_device() -> int:
    _backend.require_module(_backend.device("cuda"))
    return int(_backend._cupy.cuda.Device().id)


def set_device(device) -> None:
    d = _backend.to_device(device)
    _backend.require_module(d)
    _backend._cupy.cuda.Device(d.index or 0).use()


def synchronize(device=None) -> None:
    if is_available():
        _backend._cupy.cuda.Device().synchronize()


def manual_seed(seed: int) -> None:
    if is_available():
        _backend._cupy.random.seed(int(seed) % (1 << 32))


manual_seed_all = manual_seed


def get_device_name(device=None) -> str:
    _backend.require_module(_backend.device("cuda"))
    props = _backend._cupy.cuda.runtime.getDeviceProperties(
        _backend.to_device(device).index or 0 if device is not None else 0
    )
    return props["name"].decode()
