"""``ember.cpu.amp``: PyTorch's deprecated CPU spellings of ``ember.amp``."""

from __future__ import annotations

import warnings

from .. import _dtype as dt
from ..amp.autocast_mode import autocast as _autocast
from ..amp.grad_scaler import GradScaler as _GradScaler


class autocast(_autocast):
    """``ember.cpu.amp.autocast(...)``: use ``ember.amp.autocast("cpu", ...)`` instead."""

    def __init__(
        self, enabled: bool = True, dtype: dt.dtype = dt.bfloat16, cache_enabled: bool = True
    ):
        warnings.warn(
            "`torch.cpu.amp.autocast(args...)` is deprecated. Please use "
            "`torch.amp.autocast('cpu', args...)` instead.",
            FutureWarning,
            stacklevel=2,
        )
        super().__init__("cpu", dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)


class GradScaler(_GradScaler):
    """``ember.cpu.amp.GradScaler(...)``: use ``ember.amp.GradScaler("cpu", ...)`` instead."""

    def __init__(
        self,
        init_scale: float = 2.0**16,
        growth_factor: float = 2.0,
        backoff_factor: float = 0.5,
        growth_interval: int = 2000,
        enabled: bool = True,
    ) -> None:
        warnings.warn(
            "`torch.cpu.amp.GradScaler(args...)` is deprecated. Please use "
            "`torch.amp.GradScaler('cpu', args...)` instead.",
            FutureWarning,
            stacklevel=2,
        )
        super().__init__("cpu", init_scale, growth_factor, backoff_factor, growth_interval, enabled)
