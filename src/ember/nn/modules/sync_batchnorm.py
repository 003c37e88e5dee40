"""``SyncBatchNorm``: batch normalisation with statistics over the batches of every rank.

In training, each rank computes its count, mean and sum of squared deviations per channel; one
allgather shares them and every rank combines them (Chan's formula, which stays accurate where
sum-of-squares would cancel). Backward goes through the allgather, whose adjoint is an
allreduce of the gradients followed by taking this rank's row: so the result and its gradients
equal BatchNorm on the concatenated batch. In eval mode, or on one rank, it is BatchNorm. The
collectives are ember.distributed's, reached through ``ember._distributed_hook`` (it registers
there when imported; before that no process group exists and this is BatchNorm).
"""

from __future__ import annotations

from ... import _distributed_hook
from ...autograd.function import Function
from .normalization import _BatchNorm

__all__ = ["SyncBatchNorm"]


class _AllReduceSum(Function):
    """``sum`` over the ranks of ``tensor``; its adjoint is the same sum of the gradients."""

    @staticmethod
    def forward(ctx, tensor, group):
        ctx.group = group
        out = tensor.clone()
        _distributed_hook.distributed().all_reduce(out, group=group)
        return out

    @staticmethod
    def backward(ctx, grad):
        return _AllReduceSum.apply(grad.contiguous(), ctx.group), None


class _AllGatherRows(Function):
    """Stack every rank's 1-D ``tensor`` as the rows of a (world size, n) tensor."""

    @staticmethod
    def forward(ctx, tensor, group, rank: int, world_size: int):
        ctx.group, ctx.rank = group, rank
        out = tensor.new_empty((world_size, tensor.shape[0]))
        _distributed_hook.distributed().all_gather_into_tensor(
            out, tensor.contiguous(), group=group
        )
        return out

    @staticmethod
    def backward(ctx, grad):
        # every rank's loss saw this rank's row: its gradient is the sum of theirs
        return _AllReduceSum.apply(grad.contiguous(), ctx.group)[ctx.rank], None, None, None


def _sync_batch_norm(module: SyncBatchNorm, input, momentum: float, group, rank: int, size: int):
    """Batch norm of ``input`` with the statistics of every rank's batch; updates running stats."""
    from ... import _creation
    from ...autograd.grad_mode import no_grad
    from ...ops.shape import cat

    channels = input.shape[1]
    dims = (0,) + tuple(range(2, input.dim()))
    shape = [1] * input.dim()
    shape[1] = channels
    local_count = input.numel() // channels if channels else 0
    count = _creation.full((1,), float(local_count), dtype=input.dtype, device=input.device)
    if local_count:
        local_mean = input.mean(dims)
        local_m2 = ((input - local_mean.reshape(shape)) ** 2).sum(dims)
    else:  # an empty batch on this rank adds nothing (its mean would be NaN)
        local_mean = input.sum(dims)
        local_m2 = input.sum(dims)
    packed = cat([count, local_mean, local_m2])
    rows = _AllGatherRows.apply(packed, group, rank, size)
    counts, means, m2s = rows[:, :1], rows[:, 1 : 1 + channels], rows[:, 1 + channels :]
    total = counts.sum()
    total_count = float(total.detach())
    if total_count <= 1:
        raise ValueError(
            "Expected more than 1 value per channel when training, got input size "
            f"{list(input.shape)} on this rank and {int(total_count)} values per channel in all"
        )
    mean = (counts * means).sum(0) / total
    # Chan et al.: the ranks' spreads plus the spread of their means around the whole mean
    var = (m2s.sum(0) + (counts * (means - mean) ** 2).sum(0)) / total
    if module.training and module.track_running_stats:
        with no_grad():
            module.running_mean.mul_(1 - momentum).add_(mean.detach() * momentum)
            unbiased = var.detach() * (total_count / (total_count - 1))
            module.running_var.mul_(1 - momentum).add_(unbiased * momentum)
    out = (input - mean.reshape(shape)) / (var.reshape(shape) + module.eps).sqrt()
    if module.weight is not None:
        out = out * module.weight.reshape(shape)
    if module.bias is not None:
        out = out + module.bias.reshape(shape)
    return out


class SyncBatchNorm(_BatchNorm):
    """Batch normalisation over (N, C, *) whose training statistics span every rank's batch.

    With a process group of more than one rank, training mode normalises with the mean and
    variance of the batches of all ranks together (one allgather forward, one allreduce
    backward), so DDP training matches BatchNorm on the whole batch. In eval mode, or alone,
    it is BatchNorm.

    Example::
        >>> model = nn.SyncBatchNorm.convert_sync_batchnorm(model)   # every BatchNorm*d
        >>> ddp = nn.parallel.DistributedDataParallel(model)
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

    def _check_non_zero_input_channels(self, input) -> None:
        if input.shape[1] == 0:
            raise ValueError("SyncBatchNorm number of input channels should be non-zero")

    def _group(self):
        """(group, rank, size) to synchronise over, or None where there is nothing to sync."""
        dist = _distributed_hook.DISTRIBUTED  # None: ember.distributed never loaded, no group
        if not (
            self.training and dist is not None and dist.is_available() and dist.is_initialized()
        ):
            return None
        group = self.process_group
        size = dist.get_world_size(group)
        if size <= 1:  # one rank, or this rank is not a member of the group
            return None
        return group, dist.get_rank(group), size

    def forward(self, input):
        self._check_input_dim(input)
        self._check_non_zero_input_channels(input)
        momentum = self._step_momentum()
        sync = self._group()
        if sync is None:
            return self._batch_norm(input, momentum)
        return _sync_batch_norm(self, input, momentum, *sync)

    @classmethod
    def convert_sync_batchnorm(cls, module, process_group=None):
        """``module`` with every BatchNorm*d replaced by a SyncBatchNorm sharing its state.

        Example::
            >>> net = nn.Sequential(nn.Conv2d(3, 8, 3), nn.BatchNorm2d(8))
            >>> nn.SyncBatchNorm.convert_sync_batchnorm(net)[1]
            SyncBatchNorm(8, eps=1e-05, momentum=0.1, affine=True, ...)
        """
        converted = module
        if isinstance(module, _BatchNorm) and not isinstance(module, cls):
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
