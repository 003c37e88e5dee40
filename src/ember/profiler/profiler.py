"""``ember.profiler.profile``: per-op counts, forward and backward wall time, and bytes.

Forward ops are timed by swapping their code while a profile is open (``_ops``); the backward
engine reports each node it runs; new tensors are counted through the watch switch that ops
already test. With no profile open, none of this costs anything.
"""

from __future__ import annotations

import json
import os
import sys
import threading
from enum import Enum
from time import perf_counter_ns

from ..autograd import _watch
from ._ops import Patched
from .events import EventList, FunctionEvent, FunctionEventAvg, write_stacks
from .scheduling import RECORDING, ProfilerAction, record_every_step

_active: list = []  # the open profile, if any (one at a time, as in PyTorch)


class ProfilerActivity(Enum):
    CPU = "cpu"
    CUDA = "cuda"


class profile(_watch.Observer):
    """Profile the ops run inside a ``with`` block (this thread).

    ``record_shapes`` keeps each op's input shapes (``key_averages(group_by_input_shape=True)``),
    ``profile_memory`` the bytes each op allocates, ``with_stack`` the Python frames that called
    it (``export_stacks``, ``key_averages(group_by_stack_n=N)``). With a ``schedule``, each
    ``prof.step()`` moves to the next step, only active steps are recorded, and each recorded
    cycle goes to ``on_trace_ready(prof)``; without one, everything is recorded and
    ``on_trace_ready`` is called once, at the end.

    Example::
        >>> with ember.profiler.profile(record_shapes=True, profile_memory=True) as prof:
        ...     with ember.profiler.record_function("model_inference"):
        ...         loss = model(x).sum()
        ...     loss.backward()
        >>> print(prof.key_averages(group_by_input_shape=True).table(sort_by="cpu_time_total"))
        >>> prof.export_chrome_trace("trace.json")
    """

    wants_timing = True

    def __init__(
        self,
        activities=None,
        record_shapes: bool = False,
        profile_memory: bool = False,
        with_stack: bool = False,
        schedule=None,
        on_trace_ready=None,
        **_ignored,
    ):
        self.record_shapes = record_shapes
        self.profile_memory = profile_memory
        self.with_stack = with_stack
        self.schedule = schedule or record_every_step
        self.record_steps = schedule is not None  # a "ProfilerStep#N" range around each step
        self._step_range = None
        self.on_trace_ready = on_trace_ready
        self.step_num = 0
        self.current_action = ProfilerAction.NONE
        self._open_profile = False
        self._events: list[FunctionEvent] = []
        self._stack: list = []  # (key, event): key is an op, a node or a range marker
        self._patched = None
        self._thread = threading.get_ident()

    # --- the context ------------------------------------------------------------------------
    def __enter__(self) -> profile:
        self.start()
        return self

    def __exit__(self, *exc) -> bool:
        self.stop()
        return False

    def start(self) -> None:
        if _active:
            raise RuntimeError("Profiler is already enabled: stop the open profile first.")
        _active.append(self)
        self._open_profile = True
        self._thread = threading.get_ident()
        self.step_num = 0
        self.current_action = self.schedule(0)
        if self.current_action in RECORDING:
            self._start_recording()
        self._open_step_range()

    def stop(self) -> None:
        if not self._open_profile:
            return
        self._open_profile = False
        _active.remove(self)
        self._close_step_range()
        if self.current_action in RECORDING:
            self._stop_recording()
            if self.on_trace_ready is not None:
                self.on_trace_ready(self)

    def step(self) -> None:
        """Start the next step of ``schedule``; after the last active step of a cycle, hand the
        recorded cycle to ``on_trace_ready``."""
        self._close_step_range()
        before = self.current_action
        self.step_num += 1
        self.current_action = after = self.schedule(self.step_num)
        cycle_ends = before is ProfilerAction.RECORD_AND_SAVE or (
            before in RECORDING and after not in RECORDING
        )
        if cycle_ends:
            self._stop_recording()
            if self.on_trace_ready is not None:
                self.on_trace_ready(self)
        if after in RECORDING and (cycle_ends or before not in RECORDING):
            self._start_recording()
        self._open_step_range()

    def _open_step_range(self) -> None:
        if self.record_steps and self._patched is not None:
            self._step_range = self.push_range(f"ProfilerStep#{self.step_num}")

    def _close_step_range(self) -> None:
        if self._step_range is not None:
            self.pop_range(self._step_range)
            self._step_range = None

    def _start_recording(self) -> None:
        """Patch the ops and watch new tensors, dropping the last cycle's events."""
        self._events = []
        self._patched = Patched(self._run_op)
        _watch.add(self)

    def _stop_recording(self) -> None:
        if self._patched is None:
            return
        self._patched.restore()
        self._patched = None
        _watch.remove(self)
        end = perf_counter_ns()
        while self._stack:  # what an exception left open ends now
            self._close(self._stack[-1][0], end)

    # --- recording --------------------------------------------------------------------------
    def _open(self, key, name: str, kind: str, shapes=()) -> None:
        event = FunctionEvent(
            name, kind, perf_counter_ns(), depth=len(self._stack), thread=self._thread
        )
        if shapes:
            event.input_shapes = shapes
        if self.with_stack and kind != "backward":
            event.stack = _python_stack()
        self._stack.append((key, event))

    def _close(self, key, end: int) -> None:
        """End the event of ``key`` (and any left open inside it by an exception)."""
        stack = self._stack
        if not any(k is key for k, _ in stack):
            return
        while True:
            k, event = stack.pop()
            event.end_ns = end
            self._events.append(event)
            if stack:
                parent = stack[-1][1]
                parent.child_ns += end - event.start_ns
                parent.child_bytes += event.self_bytes + event.child_bytes
            if k is key:
                return

    def _run_op(self, entry, args, kwargs):
        fn, name = entry
        stack = self._stack
        if threading.get_ident() != self._thread or (stack and stack[-1][1].name == name):
            # another thread, or a thin wrapper (Tensor.relu -> relu): one event is enough
            return fn(*args, **kwargs)
        marker = object()
        self._open(marker, name, "forward", _shapes(args) if self.record_shapes else ())
        try:
            return fn(*args, **kwargs)
        finally:
            self._close(marker, perf_counter_ns())

    def tensor_created(self, t) -> None:
        if not self._stack or not self.profile_memory:
            return
        root = _watch.memory_root(t._data)
        if root is t._data:  # a new buffer (a view's bytes belong to its base)
            self._stack[-1][1].self_bytes += int(root.nbytes)

    def node_started(self, node) -> None:
        name = node.name()
        if name == "torch::autograd::AccumulateGrad":
            name = "ember::autograd::AccumulateGrad"
        self._open(node, name, "backward")

    def node_ran(self, node, start_ns: int, end_ns: int) -> None:
        self._close(node, end_ns)

    def push_range(self, name: str) -> object:
        marker = object()
        self._open(marker, name, "user")
        return marker

    def pop_range(self, marker) -> None:
        self._close(marker, perf_counter_ns())

    # --- results ----------------------------------------------------------------------------
    def events(self) -> list[FunctionEvent]:
        return sorted(self._events, key=lambda e: e.start_ns)

    def key_averages(
        self, group_by_input_shape: bool = False, group_by_stack_n: int = 0
    ) -> EventList:
        """One row per op name (and pass), also split by input shapes and by the innermost
        ``group_by_stack_n`` stack frames when asked."""
        groups: dict = {}
        for e in self.events():
            name = "ProfilerStep*" if e.name.startswith("ProfilerStep#") else e.name
            shapes = str(e.input_shapes) if group_by_input_shape else ""
            stack = e.stack[:group_by_stack_n] if group_by_stack_n > 0 else []
            k = (name, e.kind, shapes, tuple(stack))
            avg = groups.get(k)
            if avg is None:
                avg = groups[k] = FunctionEventAvg(name, e.kind, input_shapes=shapes, stack=stack)
            avg.add(e)
        return EventList(groups.values(), profile_memory=self.profile_memory)

    def export_stacks(self, path: str, metric: str = "self_cpu_time_total") -> None:
        """Write each event's stack (needs ``with_stack=True``) with ``metric``, one line per
        event, in the folded format of flame graph tools.

        Example::
            >>> with ember.profiler.profile(with_stack=True) as prof:
            ...     model(x)
            >>> prof.export_stacks("/tmp/profiler_stacks.txt", "self_cpu_time_total")
        """
        write_stacks(self.events(), path, metric)

    def export_chrome_trace(self, path: str) -> None:
        """Write the events as Chrome trace JSON (chrome://tracing, Perfetto)."""
        origin = min((e.start_ns for e in self._events), default=0)
        pid = os.getpid()
        trace = [
            {
                "name": e.name,
                "cat": e.kind,
                "ph": "X",
                "ts": (e.start_ns - origin) / 1000,
                "dur": (e.end_ns - e.start_ns) / 1000,
                "pid": pid,
                "tid": e.thread,
                "args": {"bytes": e.cpu_memory_usage, "input_shapes": e.input_shapes},
            }
            for e in self.events()
        ]
        tmp = f"{path}.tmp"
        with open(tmp, "w") as f:
            json.dump({"traceEvents": trace, "displayTimeUnit": "ms"}, f)
        os.replace(tmp, path)


_EMBER_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_MODULES_DIR = os.path.join(_EMBER_DIR, "nn", "modules")


def _python_stack() -> list:
    """The caller's Python frames, innermost first, as ``file(line): function``; ember's own
    frames are left out except nn.Module calls, which say which layer ran the op."""
    frames = []
    frame = sys._getframe(1)
    while frame is not None:
        filename = frame.f_code.co_filename
        internal = filename.startswith(_EMBER_DIR) or filename == "<string>"
        if not internal or filename.startswith(_MODULES_DIR):
            frames.append(f"{filename}({frame.f_lineno}): {frame.f_code.co_name}")
        frame = frame.f_back
    return frames


def _shapes(args: tuple) -> list:
    from .._tensor import Tensor

    return [list(a._data.shape) if isinstance(a, Tensor) else [] for a in args]


class record_function:
    """Label a block in the profile (``with ember.profiler.record_function("data"):``)."""

    def __init__(self, name: str, args: str | None = None):
        self.name = name
        self._marks: list = []

    def __enter__(self) -> record_function:
        for observer in _watch.watch.observers:
            if isinstance(observer, profile):
                self._marks.append((observer, observer.push_range(self.name)))
        return self

    def __exit__(self, *exc) -> bool:
        for observer, mark in reversed(self._marks):
            observer.pop_range(mark)
        self._marks.clear()
        return False
