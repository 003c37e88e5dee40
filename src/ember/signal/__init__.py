"""``ember.signal``: signal-processing helpers (``ember.signal.windows``), as ``torch.signal``."""

from . import windows

__all__ = ["windows"]
