"""``nn.parallel.DistributedDataParallel``: needs an initialised process group."""

from __future__ import annotations

from ..modules.module import Module


class DistributedDataParallel(Module):
    def __init__(self, module: Module, *args, **kwargs):
        super().__init__()
        # ember.distributed (process groups over MPI/NCCL) has not landed yet: no process group
        # can exist, which is the error PyTorch gives for a DDP built without one.
        raise ValueError(
            "Default process group has not been initialized, please make sure to call "
            "init_process_group. (ember.distributed is not available yet.)"
        )
