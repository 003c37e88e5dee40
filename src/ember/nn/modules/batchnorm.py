"""Batch normalisation layers: BatchNorm1d/2d/3d and SyncBatchNorm (torch's module layout)."""

from __future__ import annotations

from .normalization import BatchNorm1d, BatchNorm2d, _BatchNorm

__all__ = ["BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "SyncBatchNorm"]


class BatchNorm3d(_BatchNorm):
    """Batch normalisation over (N, C, D, H, W): statistics per channel over N, D, H, W."""

    _allowed_dims = (5,)


class SyncBatchNorm(_BatchNorm):
    """Batch normalisation whose statistics would span all processes of ``process_group``.

    ember runs it in a single process: it is exactly BatchNorm over any (N, C, *) input, with
    the statistics of the local batch. ``convert_sync_batchnorm`` swaps it in for BatchNorm*d.
    """

    def __init__(
        self,
        num_features: int,
        eps: float = 1e-5,
        momentum: float | None = 0.1,
        affine: bool = True,
        track_running_stats: bool = True,
        process_group=None,
        device=None,
        dtype=None,
    ) -> None:
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype)
        self.process_group = process_group

    def _check_input_dim(self, input) -> None:
        if input.dim() < 2:
            raise ValueError(f"expected at least 2D input (got {input.dim()}D input)")

    @classmethod
    def convert_sync_batchnorm(cls, module, process_group=None):
        """``module`` with every BatchNorm*d replaced by a SyncBatchNorm sharing its state."""
        converted = module
        if isinstance(module, _BatchNorm) and not isinstance(module, SyncBatchNorm):
            converted = cls(
                module.num_features,
                module.eps,
                module.momentum,
                module.affine,
                module.track_running_stats,
                process_group,
            )
            if module.affine:
                converted.weight, converted.bias = module.weight, module.bias
            converted.running_mean = module.running_mean
            converted.running_var = module.running_var
            converted.num_batches_tracked = module.num_batches_tracked
            converted.training = module.training
        for name, child in module.named_children():
            converted.add_module(name, cls.convert_sync_batchnorm(child, process_group))
        return converted
