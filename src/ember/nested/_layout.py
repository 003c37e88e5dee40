"""``ember.jagged``: the layout of nested tensors packed as one values tensor plus offsets.

``ember.strided`` (the layout of dense tensors, and of strided nested tensors) comes from
``ember.sparse._layout``; both are the same ``layout`` class, so ``nt.layout == ember.jagged``
and ``repr`` behave as for every other layout.
"""

from __future__ import annotations

from ..sparse._layout import layout, strided


class _JaggedLayout(layout):
    def __reduce__(self):
        return (_jagged, ())


def _jagged() -> layout:
    return jagged


jagged = _JaggedLayout("jagged")

__all__ = ["jagged", "strided"]
