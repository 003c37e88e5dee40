"""When a long profile records (``schedule``) and what it does with each recorded cycle
(``on_trace_ready``, ``tensorboard_trace_handler``), as in ``torch.profiler``."""

from __future__ import annotations

import os
import socket
import time
import warnings
from collections.abc import Callable
from enum import Enum


class ProfilerAction(Enum):
    """What the profiler does during one step."""

    NONE = 0
    WARMUP = 1
    RECORD = 2
    RECORD_AND_SAVE = 3


RECORDING = (ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE)


def schedule(
    *, wait: int, warmup: int, active: int, repeat: int = 0, skip_first: int = 0
) -> Callable[[int], ProfilerAction]:
    """The action for each step: skip ``skip_first`` steps, then cycles of ``wait`` idle,
    ``warmup`` and ``active`` recorded steps, ``repeat`` times (0: until the profile ends).

    Example::
        >>> my_schedule = ember.profiler.schedule(wait=1, warmup=1, active=2, repeat=1)
        >>> [my_schedule(s).name for s in range(5)]
        ['NONE', 'WARMUP', 'RECORD', 'RECORD_AND_SAVE', 'NONE']
    """
    if wait < 0 or warmup < 0 or active <= 0 or repeat < 0 or skip_first < 0:
        raise ValueError(
            f"schedule: need wait >= 0, warmup >= 0, active > 0, repeat >= 0, skip_first >= 0; "
            f"got wait={wait}, warmup={warmup}, active={active}, repeat={repeat}, "
            f"skip_first={skip_first}"
        )
    if warmup == 0:
        warnings.warn(
            "Profiler won't be using warmup, this can skew profiler results", stacklevel=2
        )
    cycle = wait + warmup + active

    def action(step: int) -> ProfilerAction:
        if step < 0:
            raise ValueError(f"schedule: step must be >= 0, got {step}")
        step -= skip_first
        if step < 0 or (repeat > 0 and step >= repeat * cycle):
            return ProfilerAction.NONE
        in_cycle = step % cycle
        if in_cycle < wait:
            return ProfilerAction.NONE
        if in_cycle < wait + warmup:
            return ProfilerAction.WARMUP
        return ProfilerAction.RECORD if in_cycle < cycle - 1 else ProfilerAction.RECORD_AND_SAVE

    return action


def record_every_step(step: int) -> ProfilerAction:
    """The schedule of a profile given none: record from start to stop."""
    return ProfilerAction.RECORD


def tensorboard_trace_handler(dir_name: str, worker_name: str | None = None) -> Callable:
    """An ``on_trace_ready`` that writes each cycle's Chrome trace into ``dir_name`` as
    ``{worker_name}.{time_ns}.pt.trace.json`` (the names TensorBoard's profiler plugin reads).

    Example::
        >>> with ember.profiler.profile(
        ...     schedule=ember.profiler.schedule(wait=0, warmup=1, active=1),
        ...     on_trace_ready=ember.profiler.tensorboard_trace_handler("./log"),
        ... ) as prof:
        ...     for _ in range(2):
        ...         model(x)
        ...         prof.step()
    """
    name = worker_name or f"{socket.gethostname()}_{os.getpid()}"

    def handler(prof) -> None:
        os.makedirs(dir_name, exist_ok=True)
        prof.export_chrome_trace(os.path.join(dir_name, f"{name}.{time.time_ns()}.pt.trace.json"))

    return handler
