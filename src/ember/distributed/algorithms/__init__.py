"""``ember.distributed.algorithms``: ``Join`` for uneven inputs, DDP communication hooks."""

from . import ddp_comm_hooks
from .join import Join, Joinable, JoinHook

__all__ = ["Join", "JoinHook", "Joinable", "ddp_comm_hooks"]
