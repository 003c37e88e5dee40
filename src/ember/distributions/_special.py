"""The special functions the distributions use, from ``ember.ops.special`` (each has its
derivative there, so log_prob and entropy differentiate twice)."""

from __future__ import annotations

from ..ops.special import digamma, erfinv, i0e, i1e, lgamma, polygamma, xlogy

__all__ = ["digamma", "erfinv", "i0e", "i1e", "lgamma", "polygamma", "xlogy"]
