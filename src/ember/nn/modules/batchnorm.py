"""Batch normalisation layers: BatchNorm1d/2d/3d and SyncBatchNorm (torch's module layout)."""

from __future__ import annotations

from .normalization import BatchNorm1d, BatchNorm2d, _BatchNorm
from .sync_batchnorm import SyncBatchNorm

__all__ = ["BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "SyncBatchNorm"]


class BatchNorm3d(_BatchNorm):
    """Batch normalisation over (N, C, D, H, W): statistics per channel over N, D, H, W."""

    _allowed_dims = (5,)
