"""Autocast's per-thread state (enabled flag and dtype per device, cache, nesting), as in
PyTorch: plain data below the op layer, so that an op can ask whether autocast is on without
importing ``ember.amp``, which sits above it and sets these flags (``amp/state.py``).
"""

from __future__ import annotations

import threading

from . import _dtype as dt

_DEFAULT_DTYPES = {"cuda": dt.float16, "cpu": dt.bfloat16}


class _AutocastState(threading.local):
    def __init__(self):
        self.enabled = {"cuda": False, "cpu": False}
        self.dtype = dict(_DEFAULT_DTYPES)
        self.cache_enabled = True
        self.nesting = 0
        self.cache: dict = {}
        self.depth = 0  # > 0 inside an op that autocast already cast: its inner ops run as called
        self.counted = False  # whether this thread holds the patch open


state = _AutocastState()
