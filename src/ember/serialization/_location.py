"""Where a loaded tensor goes: torch's storage locations ("cpu", "cuda:0") and ``map_location``.

A checkpoint records each storage's location (``torch.save``'s persistent id); ``load`` puts
the storage back there unless ``map_location`` says otherwise: a device or string for every
storage, a dict from saved location to new location, or a callable ``fn(storage, location)``
whose None means "the saved location". As in torch, the callable runs once per storage: it
gets the storage as a flat tensor, and every tensor of that storage views what it returns.
"""

from __future__ import annotations

from .. import _backend
from .._tensor import Tensor
from ._errors import SerializationError


class DeviceUnavailableError(RuntimeError):
    """A checkpoint's location that this machine lacks (torch raises RuntimeError too)."""


def location_of(t: Tensor) -> str:
    """torch's location tag of a tensor's storage: "cpu", "cuda:<index>" or "meta"."""
    device = t.device
    if device.type == "meta":
        return "meta"
    return "cpu" if device.type == "cpu" else f"cuda:{device.index or 0}"


def restore(t: Tensor, location: str, map_location=None) -> Tensor:
    """``t`` (rebuilt on the CPU) on the device that ``location`` and ``map_location`` name."""
    if map_location is None:
        return _default_restore(t, location)
    if callable(map_location):
        placed = map_location(t, location)
        return _default_restore(t, location) if placed is None else placed
    if isinstance(map_location, dict):
        return _default_restore(t, str(map_location.get(location, location)))
    return t.to(map_location)


def _default_restore(t: Tensor, location: str) -> Tensor:
    if location == "cpu":
        return t
    try:
        device = _backend.device(location) if location.startswith("cuda") else None
    except RuntimeError:  # "cuda:x"
        device = None
    if device is None:
        raise SerializationError(
            f"ember.load: don't know how to restore data location {location!r} (ember restores "
            "'cpu' and 'cuda:<index>'; map_location can map other locations)"
        )
    if not _backend.cuda_available():
        raise DeviceUnavailableError(
            "Attempting to deserialize object on a CUDA device but ember.cuda.is_available() is "
            "False. If you are running on a CPU-only machine, please use ember.load with "
            "map_location=ember.device('cpu') to map your storages to the CPU."
        )
    count = _backend._cupy.cuda.runtime.getDeviceCount()
    if (device.index or 0) >= count:
        raise DeviceUnavailableError(
            f"Attempting to deserialize object on CUDA device {device.index} but "
            f"ember.cuda.device_count() is {count}. Please use ember.load with map_location "
            "to map your storages to an existing device."
        )
    return t.to(device)
