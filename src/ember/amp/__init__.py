"""ember.amp: automatic mixed precision (autocast regions and gradient scaling)."""

from .autocast_mode import autocast
from .custom_functions import custom_bwd, custom_fwd
from .grad_scaler import GradScaler
from .state import is_autocast_available

__all__ = ["GradScaler", "autocast", "custom_bwd", "custom_fwd", "is_autocast_available"]
