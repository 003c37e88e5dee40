"""``ember.cpu.amp``: PyTorch's deprecated CPU spelling of ``ember.amp.autocast``."""

from __future__ import annotations

import warnings

from .. import _dtype as dt
from ..amp.autocast_mode import autocast as _autocast


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
