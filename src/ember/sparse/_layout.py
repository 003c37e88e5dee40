"""The layouts, from ``ember._layout`` (below the Tensor, which answers ``strided``): kept
importable here, where the sparse API and older pickles (``_layout_named``) find them."""

from __future__ import annotations

from .._layout import (  # noqa: F401 - re-exported
    _layout_named,
    layout,
    sparse_bsc,
    sparse_bsr,
    sparse_coo,
    sparse_csc,
    sparse_csr,
    strided,
)
