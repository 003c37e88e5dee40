"""Waiting for MPI: a collective that can fail, as PyTorch's do, instead of waiting for ever.

MPI has no timeout on its operations, and a rank whose peer died (SIGKILL, a lost node) would wait
in a blocking MPI call for ever. So every collective of ``ember.distributed`` starts the
non-blocking MPI operation and ``wait`` tests it until it is done, looking meanwhile at
``ember.distributed.liveness`` (which ranks have ended) and at the group's ``timeout``. A rank
of the group gone, the timeout passed, or an error from MPI raises ``DistBackendError`` (a
``RuntimeError``, as gloo's errors are) in the waiting thread, naming the rank and the
operation; the process can catch it and end as it likes. The group cannot be used after that
(its abandoned operation would match the next one): later collectives on it raise at once.

A few callers still block inside MPI (``@watched`` marks them): for those a thread ends the
process once one has waited past the timeout, as PyTorch's NCCL watchdog does, since a thread
inside MPI cannot be made to raise.
"""

from __future__ import annotations

import functools
import os
import sys
import threading
import time

from . import liveness
from .errors import DistBackendError

# Testing in a tight loop is what a blocking MPI wait does anyway. Past _SPIN_SECONDS of waiting
# (a straggler, not a transfer) the loop naps between tests to leave the CPU to others. Napping
# sooner costs latency on a busy machine: a rank that napped wakes late, its peer waits long
# enough to nap too, and ping-pongs slowed tenfold with a 2 ms threshold on 2 loaded cores.
_SPIN_SECONDS, _NAP = 0.05, 0.001
# A rank that ended may have sent all this operation needs before it went: test a little longer
# before calling the operation failed.
_GRACE_SECONDS = 0.5

_MPI = []


def _testall():
    if not _MPI:
        from mpi4py import MPI

        _MPI.append(MPI)
    return _MPI[0].Request.Testall


def check_usable(pg) -> None:
    """Raise at once on a group that an earlier failure left unusable."""
    if pg._failure is not None:
        raise DistBackendError(
            f"ember.distributed: this process group cannot be used after an earlier error: "
            f"{pg._failure}"
        )


def _lost_ranks(pg) -> list[int]:
    return [r for r in pg._ranks if r in liveness.lost]


def _fail(pg, requests: list, keep, message: str) -> DistBackendError:
    """Mark the group unusable; the abandoned requests (and their buffers, which MPI may still
    write into) are kept for the life of the group."""
    pg._failure = message
    pg._abandoned.append((requests, keep))
    return DistBackendError(message)


def wait(pg, requests: list, what: str, statuses=None, keep=None, timeout=None) -> None:
    """Test ``requests`` of the operation ``what`` on group ``pg`` until they are all done.

    Raises ``DistBackendError`` when a rank of the group has ended (after a short grace in which
    what it sent before going may still complete the operation), when the group's timeout (or
    ``timeout`` seconds) passes first, or when MPI reports an error.
    """
    testall = _testall()
    try:
        if testall(requests, statuses):
            return
    except Exception as error:  # mpi4py's MPI.Exception
        raise _fail(pg, requests, keep, _mpi_error(pg, what, error)) from error
    outer, _watch.op = _watch.op, None  # polling: the exit-on-timeout thread need not look
    try:
        _wait_slowly(pg, requests, what, statuses, keep, timeout, testall)
    finally:
        if outer is not None:
            _watch.since, _watch.op = time.monotonic(), outer


def _wait_slowly(pg, requests, what, statuses, keep, timeout, testall) -> None:
    began = time.monotonic()
    limit = pg.timeout if timeout is None else timeout
    try:
        while not testall(requests, statuses):
            if liveness.lost:
                gone = _lost_ranks(pg)
                if gone:
                    if _completes_within_grace(requests, statuses, testall):
                        return
                    raise _fail(pg, requests, keep, _lost_message(pg, what, gone))
            waited = time.monotonic() - began
            if waited > limit:
                raise _fail(pg, requests, keep, _timeout_message(pg, what, waited, limit))
            if waited > _SPIN_SECONDS:
                time.sleep(_NAP)
    except DistBackendError:
        raise
    except Exception as error:  # mpi4py's MPI.Exception
        raise _fail(pg, requests, keep, _mpi_error(pg, what, error)) from error


def _completes_within_grace(requests, statuses, testall) -> bool:
    # tested a few times at least, however late this process gets the CPU back
    grace_end, tests = time.monotonic() + _GRACE_SECONDS, 0
    while tests < 10 or time.monotonic() < grace_end:
        if testall(requests, statuses):
            return True
        tests += 1
        time.sleep(0.001)
    return False


def _me(pg) -> int:
    return pg._ranks[pg.rank()]


def _lost_message(pg, what: str, gone: list[int]) -> str:
    how = "; ".join(f"rank {r} {liveness.lost[r]}" for r in gone)
    names = ", ".join(str(r) for r in gone)
    return (
        f"ember.distributed: rank {_me(pg)} was waiting in {what} for a rank that is gone: {how}. "
        f"Connection closed by peer: this is typically caused by a remote worker crashing; "
        f"check the logs of rank {names}. The process group cannot be used any more."
    )


def _timeout_message(pg, what: str, waited: float, limit: float) -> str:
    return (
        f"ember.distributed: rank {_me(pg)} waited {waited:.1f} seconds in {what}, past the "
        f"process group's timeout of {limit:g} seconds (Timed out waiting {limit * 1000:.0f}ms "
        f"for {what} to complete): another rank is stuck or stopped calling collectives "
        f"(init_process_group's timeout= sets the limit). The process group cannot be used any "
        f"more."
    )


def _mpi_error(pg, what: str, error: Exception) -> str:
    return f"ember.distributed: rank {_me(pg)}: MPI failed in {what}: {error}"


# --- the exit-on-timeout thread, for the callers that still block inside MPI -----------------
class _Watch:
    def __init__(self):
        self.op: str | None = None  # the blocking call this process waits in, if any
        self.since = 0.0
        self.timeout: float | None = None
        self.rank = -1
        self.stopped = threading.Event()


_watch = _Watch()


def start(timeout_seconds: float, rank: int) -> None:
    """Watch this process's blocking MPI calls from now on (``init_process_group`` calls it)."""
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
    """``fn``, which blocks inside MPI, with its time watched (the outermost watched call counts;
    time spent in ``wait`` does not, since ``wait`` raises on its own)."""
    name = fn.__qualname__

    @functools.wraps(fn)
    def call(*args, **kwargs):
        return watched_call(name, fn, args, kwargs)

    return call


def watched_call(name: str, fn, args: tuple, kwargs: dict):
    """``fn(*args, **kwargs)`` watched as ``watched`` does, under the name ``name``: for callers
    below ember.distributed (DDP) that cannot decorate with ``watched`` where they are defined."""
    if _watch.op is not None:
        return fn(*args, **kwargs)
    _watch.since, _watch.op = time.monotonic(), name
    try:
        return fn(*args, **kwargs)
    finally:
        _watch.op = None
