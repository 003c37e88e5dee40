"""ember.amp: automatic mixed precision (autocast regions and gradient scaling)."""

from .autocast_mode import autocast
from .grad_scaler import GradScaler
from .state import is_autocast_available

__all__ = ["GradScaler", "autocast", "is_autocast_available"]
