"""``torch._tensor_str``'s public corner, which programs reach for: the print options
(``PRINT_OPTS``, ``set_printoptions``, ``get_printoptions``, the ``printoptions`` context)."""

from ._tensor_repr import PRINT_OPTS, get_printoptions, printoptions, set_printoptions

__all__ = ["PRINT_OPTS", "get_printoptions", "printoptions", "set_printoptions"]
