"""What ``ember.distributed`` hands the layers below it: the functions and types that
``nn.SyncBatchNorm``, ``nn.parallel.DistributedDataParallel`` and ``utils.data.DistributedSampler``
call. ``ember/distributed/__init__.py`` puts this module in ``ember._distributed_hook`` when the
package is imported; this list is the whole of what those layers may ask of it."""

from __future__ import annotations

from ..futures import Future
from .algorithms.ddp_comm_hooks import default_hooks
from .algorithms.join import JoinHook
from .collectives import all_gather_into_tensor, all_reduce, broadcast
from .grad_bucket import BuiltinCommHookType, GradBucket
from .object_collectives import all_gather_object
from .process_group import _default_group as default_group
from .process_group import get_rank, get_world_size, is_available, is_initialized
from .watchdog import wait, watched_call

__all__ = [
    "BuiltinCommHookType",
    "Future",
    "GradBucket",
    "JoinHook",
    "all_gather_into_tensor",
    "all_gather_object",
    "all_reduce",
    "broadcast",
    "default_group",
    "default_hooks",
    "get_rank",
    "get_world_size",
    "is_available",
    "is_initialized",
    "wait",
    "watched_call",
]
