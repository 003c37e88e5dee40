"""A watchdog that ends a rank stuck in a collective for longer than the group's ``timeout``.

MPI has no timeout on its operations: a rank whose peer died (SIGKILL, a lost node) would wait in
MPI for ever. As PyTorch's NCCL watchdog does, a thread looks at how long the current collective
has been waiting; past the ``timeout`` of ``init_process_group`` it says which operation on which
rank timed out and ends the process. Raising instead is not possible: the waiting thread is inside
MPI, which cannot abandon an operation still under way. ``ember.multiprocessing.spawn`` and
``ember run`` notice a dead rank at once and stop the others; this covers the ranks they do not
watch (another node's, or ones started by hand).
"""

from __future__ import annotations

import functools
import os
import sys
import threading
import time


class _Watch:
    def __init__(self):
        self.op: str | None = None  # the collective this process waits in, if any
        self.since = 0.0
        self.timeout: float | None = None
        self.rank = -1
        self.stopped = threading.Event()


_watch = _Watch()


def start(timeout_seconds: float, rank: int) -> None:
    """Watch this process's collectives from now on (``init_process_group`` calls it)."""
    _watch.timeout, _watch.rank = timeout_seconds, rank
    _watch.stopped = threading.Event()
    threading.Thread(
        target=_run, args=(_watch.stopped,), name="ember-distributed-watchdog", daemon=True
    ).start()


def stop() -> None:
    _watch.stopped.set()
    _watch.op = None


def _run(stopped: threading.Event) -> None:
    period = min(1.0, max(0.05, (_watch.timeout or 1.0) / 10))
    while not stopped.wait(period):
        op, timeout = _watch.op, _watch.timeout
        if op is None or timeout is None:
            continue
        waited = time.monotonic() - _watch.since
        if waited > timeout:
            sys.stderr.write(
                f"ember.distributed: rank {_watch.rank} waited {waited:.1f} seconds in {op}, "
                f"past the process group's timeout of {timeout:g} seconds: another rank died or "
                f"stopped calling collectives. Ending this process (init_process_group's "
                f"timeout= sets the limit).\n"
            )
            sys.stderr.flush()
            os._exit(1)


def watched(fn):
    """``fn`` with its time inside MPI watched (the outermost watched call counts)."""
    name = fn.__qualname__

    @functools.wraps(fn)
    def call(*args, **kwargs):
        if _watch.op is not None:
            return fn(*args, **kwargs)
        _watch.since, _watch.op = time.monotonic(), name
        try:
            return fn(*args, **kwargs)
        finally:
            _watch.op = None

    return call
