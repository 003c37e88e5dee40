"""``ember.distributed.algorithms``: ``Join`` for uneven inputs, DDP communication hooks."""

from .join import Join, Joinable, JoinHook

__all__ = ["Join", "JoinHook", "Joinable"]
