"""``ember.profiler.profile``: per-op counts, forward and backward wall time, and bytes.

Forward ops are timed by swapping their code while a profile is open (``_ops``); the backward
engine reports each node it runs; new tensors are counted through the watch switch that ops
already test. With no profile open, none of this costs anything.
"""

from __future__ import annotations

import json
import os
import threading
from dataclasses import dataclass, field
from enum import Enum
from time import perf_counter_ns

from ..autograd import _watch
from ._ops import Patched

_active: list = []  # the open profile, if any (one at a time, as in PyTorch)


class ProfilerActivity(Enum):
    CPU = "cpu"
    CUDA = "cuda"


@dataclass
class FunctionEvent:
    """One op call (``kind`` 'forward'), backward node run ('backward') or user range."""

    name: str
    kind: str
    start_ns: int
    end_ns: int = 0
    depth: int = 0
    child_ns: int = 0
    self_bytes: int = 0
    child_bytes: int = 0
    input_shapes: list = field(default_factory=list)
    thread: int = 0

    @property
    def cpu_time_total(self) -> float:
        """Microseconds, children included (PyTorch's unit)."""
        return (self.end_ns - self.start_ns) / 1000

    @property
    def self_cpu_time_total(self) -> float:
        return (self.end_ns - self.start_ns - self.child_ns) / 1000

    @property
    def cpu_memory_usage(self) -> int:
        return self.self_bytes + self.child_bytes

    @property
    def self_cpu_memory_usage(self) -> int:
        return self.self_bytes


@dataclass
class FunctionEventAvg:
    """The events of one name (and input shapes, when grouped so) added up."""

    key: str
    kind: str
    count: int = 0
    cpu_time_total: float = 0.0
    self_cpu_time_total: float = 0.0
    cpu_memory_usage: int = 0
    self_cpu_memory_usage: int = 0
    input_shapes: str = ""

    @property
    def cpu_time(self) -> float:
        return self.cpu_time_total / self.count if self.count else 0.0

    def add(self, e: FunctionEvent) -> None:
        self.count += 1
        self.cpu_time_total += e.cpu_time_total
        self.self_cpu_time_total += e.self_cpu_time_total
        self.cpu_memory_usage += e.cpu_memory_usage
        self.self_cpu_memory_usage += e.self_cpu_memory_usage


_SORT_KEYS = {
    "cpu_time_total",
    "self_cpu_time_total",
    "cpu_time",
    "count",
    "cpu_memory_usage",
    "self_cpu_memory_usage",
}


class EventList(list):
    """A list of FunctionEventAvg with PyTorch's ``table``."""

    def table(self, sort_by: str | None = None, row_limit: int = 100, **_ignored) -> str:
        """A text table like ``torch.profiler``'s ``key_averages().table(...)``."""
        rows = list(self)
        if sort_by is not None:
            key = sort_by.replace("cuda", "cpu").replace("device", "cpu")
            if key not in _SORT_KEYS:
                raise ValueError(f"sort_by must be one of {sorted(_SORT_KEYS)}, got {sort_by!r}")
            rows.sort(key=lambda r: getattr(r, key), reverse=True)
        if row_limit is not None and row_limit >= 0:
            rows = rows[:row_limit]
        total_self = sum(r.self_cpu_time_total for r in self) or 1.0
        shapes = any(r.input_shapes for r in rows)
        headers = ["Name", "Pass", "Self CPU %", "Self CPU", "CPU total %", "CPU total"]
        headers += ["CPU time avg", "CPU Mem", "Self CPU Mem", "# of Calls"]
        if shapes:
            headers.append("Input Shapes")
        body = []
        for r in rows:
            cells = [
                r.key,
                r.kind,
                f"{100 * r.self_cpu_time_total / total_self:.2f}%",
                _fmt_us(r.self_cpu_time_total),
                f"{100 * r.cpu_time_total / total_self:.2f}%",
                _fmt_us(r.cpu_time_total),
                _fmt_us(r.cpu_time),
                _fmt_mem(r.cpu_memory_usage),
                _fmt_mem(r.self_cpu_memory_usage),
                str(r.count),
            ]
            if shapes:
                cells.append(r.input_shapes)
            body.append(cells)
        widths = [
            max(len(h), *(len(c[i]) for c in body)) if body else len(h)
            for i, h in enumerate(headers)
        ]
        rule = "  ".join("-" * w for w in widths)

        def line(cells):
            first = cells[0].ljust(widths[0])
            return "  ".join([first] + [c.rjust(w) for c, w in zip(cells[1:], widths[1:])])

        out = [rule, line(headers), rule] + [line(c) for c in body] + [rule]
        out.append(f"Self CPU time total: {_fmt_us(sum(r.self_cpu_time_total for r in self))}")
        return "\n".join(out) + "\n"


def _fmt_us(us: float) -> str:
    if us >= 1e6:
        return f"{us / 1e6:.3f}s"
    if us >= 1e3:
        return f"{us / 1e3:.3f}ms"
    return f"{us:.3f}us"


def _fmt_mem(n: int) -> str:
    for unit, size in (("Gb", 1 << 30), ("Mb", 1 << 20), ("Kb", 1 << 10)):
        if abs(n) >= size:
            return f"{n / size:.2f} {unit}"
    return f"{n} b"


class profile(_watch.Observer):
    """Profile the ops run inside a ``with`` block (this thread).

    Example::
        >>> with ember.profiler.profile() as prof:
        ...     loss = model(x).sum(); loss.backward()
        >>> print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=10))
        >>> prof.export_chrome_trace("trace.json")
    """

    wants_timing = True

    def __init__(
        self,
        activities=None,
        record_shapes: bool = False,
        profile_memory: bool = True,
        with_stack: bool = False,
        **_ignored,
    ):
        self.record_shapes = record_shapes
        self.profile_memory = profile_memory
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
        self._thread = threading.get_ident()
        self._patched = Patched(self._run_op)
        _watch.add(self)

    def stop(self) -> None:
        if self._patched is None:
            return
        self._patched.restore()
        self._patched = None
        _watch.remove(self)
        _active.remove(self)
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
        if not self._stack:
            return
        root = _watch.memory_root(t._data)
        if root is t._data:  # a new buffer (a view's bytes belong to its base)
            self._stack[-1][1].self_bytes += int(root.nbytes)

    def node_started(self, node) -> None:
        name = node.name()
        if name == "AccumulateGrad":
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

    def key_averages(self, group_by_input_shape: bool = False) -> EventList:
        groups: dict = {}
        for e in self.events():
            shapes = str(e.input_shapes) if group_by_input_shape else ""
            k = (e.name, e.kind, shapes)
            avg = groups.get(k)
            if avg is None:
                avg = groups[k] = FunctionEventAvg(e.name, e.kind, input_shapes=shapes)
            avg.add(e)
        return EventList(groups.values())

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
