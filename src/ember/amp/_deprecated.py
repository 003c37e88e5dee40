"""PyTorch's deprecated per-device spellings, ``torch.cuda.amp.autocast(...)`` and
``torch.cpu.amp.GradScaler(...)``: the ``ember.amp`` classes with the device filled in and
PyTorch's FutureWarning."""

from __future__ import annotations

import warnings

from .. import _dtype as dt
from .autocast_mode import autocast as _autocast
from .grad_scaler import GradScaler as _GradScaler


def device_spellings(device: str, default_dtype: dt.dtype) -> tuple[type, type]:
    """``(autocast, GradScaler)`` classes of ``ember.<device>.amp``."""

    def deprecated(name: str) -> None:
        warnings.warn(
            f"`torch.{device}.amp.{name}(args...)` is deprecated. Please use "
            f"`torch.amp.{name}('{device}', args...)` instead.",
            FutureWarning,
            stacklevel=3,
        )

    class autocast(_autocast):
        __doc__ = f"``ember.{device}.amp.autocast(...)``: ``ember.amp.autocast('{device}', ...)``."

        def __init__(
            self, enabled: bool = True, dtype: dt.dtype = default_dtype, cache_enabled: bool = True
        ):
            deprecated("autocast")
            super().__init__(device, dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)

    class GradScaler(_GradScaler):
        __doc__ = f"``ember.{device}.amp.GradScaler(...)``: ``ember.amp.GradScaler('{device}')``."

        def __init__(
            self,
            init_scale: float = 2.0**16,
            growth_factor: float = 2.0,
            backoff_factor: float = 0.5,
            growth_interval: int = 2000,
            enabled: bool = True,
        ) -> None:
            deprecated("GradScaler")
            super().__init__(
                device, init_scale, growth_factor, backoff_factor, growth_interval, enabled
            )

    autocast.__module__ = GradScaler.__module__ = f"ember.{device}.amp"
    autocast.__qualname__, GradScaler.__qualname__ = "autocast", "GradScaler"
    return autocast, GradScaler
