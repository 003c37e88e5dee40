"""``ember.cpu``: PyTorch's CPU device namespace (its ``amp`` holds deprecated spellings)."""

from __future__ import annotations

from . import amp


def is_available() -> bool:
    """The CPU is always available."""
    return True


def device_count() -> int:
    return 1


def current_device() -> str:
    return "cpu"


def synchronize(device=None) -> None:
    """CPU work runs synchronously: nothing to wait for."""


__all__ = ["amp", "current_device", "device_count", "is_available", "synchronize"]
