"""ember.nn.functional: the functional forms of layers and losses."""

from ..ops.indexing import pad

__all__ = ["pad"]
