"""Layouts: ``ember.strided`` (dense arrays), ``ember.sparse_coo`` (indices + values) and the
compressed ``ember.sparse_csr``, ``sparse_csc``, ``sparse_bsr``, ``sparse_bsc``.

A layout is a ``str`` subclass so that code comparing ``t.layout == "strided"`` keeps working,
while ``repr`` prints the PyTorch-style name.

Plain data, kept below the Tensor so that ``Tensor.layout`` can answer ``strided`` without
reaching up into ``ember.sparse``; ``ember.sparse._layout`` re-exports every name here.
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
    return {
        "strided": strided,
        "sparse_coo": sparse_coo,
        "sparse_csr": sparse_csr,
        "sparse_csc": sparse_csc,
        "sparse_bsr": sparse_bsr,
        "sparse_bsc": sparse_bsc,
    }[name]


strided = layout("strided")
sparse_coo = layout("sparse_coo")
sparse_csr = layout("sparse_csr")  # compressed rows
sparse_csc = layout("sparse_csc")  # compressed columns
sparse_bsr = layout("sparse_bsr")  # compressed rows of dense blocks
sparse_bsc = layout("sparse_bsc")  # compressed columns of dense blocks
