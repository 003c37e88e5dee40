"""``ember.cpu.amp``: PyTorch's deprecated CPU spellings of ``ember.amp``."""

from __future__ import annotations

from .. import _dtype as dt
from ..amp._deprecated import device_spellings

autocast, GradScaler = device_spellings("cpu", dt.bfloat16)
