"""``ember.cuda.amp``: PyTorch's deprecated CUDA spellings of ``ember.amp``."""

from __future__ import annotations

import warnings

from .. import _dtype as dt
from ..amp import custom_functions as _custom
from ..amp.autocast_mode import autocast as _autocast
from ..amp.grad_scaler import GradScaler as _GradScaler


class autocast(_autocast):
    """``ember.cuda.amp.autocast(...)``: use ``ember.amp.autocast("cuda", ...)`` instead."""

    def __init__(
        self, enabled: bool = True, dtype: dt.dtype = dt.float16, cache_enabled: bool = True
    ):
        warnings.warn(
            "`torch.cuda.amp.autocast(args...)` is deprecated. Please use "
            "`torch.amp.autocast('cuda', args...)` instead.",
            FutureWarning,
            stacklevel=2,
        )
        super().__init__("cuda", dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)


class GradScaler(_GradScaler):
    """``ember.cuda.amp.GradScaler(...)``: use ``ember.amp.GradScaler("cuda", ...)`` instead."""

    def __init__(
        self,
        init_scale: float = 2.0**16,
        growth_factor: float = 2.0,
        backoff_factor: float = 0.5,
        growth_interval: int = 2000,
        enabled: bool = True,
    ) -> None:
        warnings.warn(
            "`torch.cuda.amp.GradScaler(args...)` is deprecated. Please use "
            "`torch.amp.GradScaler('cuda', args...)` instead.",
            FutureWarning,
            stacklevel=2,
        )
        super().__init__(
            "cuda", init_scale, growth_factor, backoff_factor, growth_interval, enabled
        )


def custom_fwd(fwd=None, *, cast_inputs: dt.dtype | None = None):
    """``ember.cuda.amp.custom_fwd``: use ``ember.amp.custom_fwd(device_type="cuda")``."""
    warnings.warn(
        "`torch.cuda.amp.custom_fwd(args...)` is deprecated. Please use "
        "`torch.amp.custom_fwd(args..., device_type='cuda')` instead.",
        FutureWarning,
        stacklevel=2,
    )
    return _custom.custom_fwd(fwd, device_type="cuda", cast_inputs=cast_inputs)


def custom_bwd(bwd):
    """``ember.cuda.amp.custom_bwd``: use ``ember.amp.custom_bwd(device_type="cuda")``."""
    warnings.warn(
        "`torch.cuda.amp.custom_bwd(args...)` is deprecated. Please use "
        "`torch.amp.custom_bwd(args..., device_type='cuda')` instead.",
        FutureWarning,
        stacklevel=2,
    )
    return _custom.custom_bwd(bwd, device_type="cuda")
