"""ember.utils: data loading (and, later, checkpointing helpers)."""

from . import checkpoint, data
