"""``ember.multiprocessing``: start one worker process per rank (``spawn``)."""

from .spawn import (
    ProcessContext,
    ProcessException,
    ProcessExitedException,
    ProcessRaisedException,
    spawn,
    start_processes,
)

__all__ = [
    "ProcessContext",
    "ProcessException",
    "ProcessExitedException",
    "ProcessRaisedException",
    "spawn",
    "start_processes",
]
