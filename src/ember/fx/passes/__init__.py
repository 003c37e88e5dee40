"""Graph passes: ``shape_prop.ShapeProp`` annotates each node with its tensor's metadata."""

from . import shape_prop

__all__ = ["shape_prop"]
