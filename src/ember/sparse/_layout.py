"""Layouts: ``ember.strided`` (dense arrays) and ``ember.sparse_coo`` (indices + values).

A layout is a ``str`` subclass so that code comparing ``t.layout == "strided"`` keeps working,
while ``repr`` prints the PyTorch-style name.
"""

from __future__ import annotations


class layout(str):  # noqa: N801 - PyTorch's class name
    """The memory layout of a tensor, e.g. ``ember.strided`` or ``ember.sparse_coo``."""

    def __repr__(self) -> str:
        return f"ember.{str.__str__(self)}"

    __str__ = __repr__

    def __reduce__(self):
        return (_layout_named, (str.__str__(self),))


def _layout_named(name: str) -> layout:
    return {"strided": strided, "sparse_coo": sparse_coo}[name]


strided = layout("strided")
sparse_coo = layout("sparse_coo")
