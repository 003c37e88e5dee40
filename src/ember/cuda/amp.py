"""``ember.cuda.amp``: PyTorch's deprecated CUDA spellings of ``ember.amp``."""

from __future__ import annotations

import warnings

from .. import _dtype as dt
from ..amp import custom_functions as _custom
from ..amp._deprecated import device_spellings

autocast, GradScaler = device_spellings("cuda", dt.float16)


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
