"""What a profile records and how it is shown: one event per op call, node run or range
(``FunctionEvent``), their sums per key (``FunctionEventAvg``), PyTorch's ``table`` and the
folded stacks of flame graph tools (``export_stacks``)."""

from __future__ import annotations

from dataclasses import dataclass, field


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
    stack: list = field(default_factory=list)  # "file(line): function", innermost first

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
    stack: list = field(default_factory=list)

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
    """A list of FunctionEventAvg with PyTorch's ``table`` and ``export_stacks``."""

    def __init__(self, rows=(), profile_memory: bool = False):
        super().__init__(rows)
        self.profile_memory = profile_memory  # the memory columns are shown only then

    def export_stacks(self, path: str, metric: str = "self_cpu_time_total") -> None:
        """Write one line per stack, outermost frame first, frames joined by ';', then a space
        and ``metric`` as a whole number: the folded format flame graph tools read."""
        write_stacks(self, path, metric)

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
        stacks = any(r.stack for r in rows)
        headers = ["Name", "Self CPU %", "Self CPU", "CPU total %", "CPU total"]
        headers.append("CPU time avg")
        if self.profile_memory:
            headers += ["CPU Mem", "Self CPU Mem"]
        headers.append("# of Calls")
        if shapes:
            headers.append("Input Shapes")
        if stacks:
            headers.append("Source Location")
        body = []
        for r in rows:
            cells = [
                r.key,
                f"{100 * r.self_cpu_time_total / total_self:.2f}%",
                _fmt_us(r.self_cpu_time_total),
                f"{100 * r.cpu_time_total / total_self:.2f}%",
                _fmt_us(r.cpu_time_total),
                _fmt_us(r.cpu_time),
            ]
            if self.profile_memory:
                cells += [_fmt_mem(r.cpu_memory_usage), _fmt_mem(r.self_cpu_memory_usage)]
            cells.append(str(r.count))
            if shapes:
                cells.append(r.input_shapes)
            if stacks:
                cells.append(_trim_frame(r.stack[0]) if r.stack else "")
            body.append(cells)
            for frame in r.stack[1:]:  # the outer frames, one per line under the row
                body.append([""] * (len(headers) - 1) + [_trim_frame(frame)])
        widths = [
            max(len(h), *(len(c[i]) for c in body)) if body else len(h)
            for i, h in enumerate(headers)
        ]
        rule = "  ".join("-" * w for w in widths)

        def line(cells):
            left = [c.ljust(w) for c, w in zip(cells, widths)]  # Name and Source Location
            right = [c.rjust(w) for c, w in zip(cells, widths)]
            aligned = [left[0], *right[1:]]
            if stacks:
                aligned[-1] = left[-1]
            return "  ".join(aligned).rstrip()

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
    for unit, size in (("GB", 1 << 30), ("MB", 1 << 20), ("KB", 1 << 10)):
        if abs(n) >= size:
            return f"{n / size:.2f} {unit}"
    return f"{n} B"


_SOURCE_WIDTH = 75


def _trim_frame(frame: str) -> str:
    """A long path keeps its end (file, line, function), as PyTorch's table does."""
    return frame if len(frame) <= _SOURCE_WIDTH else "..." + frame[-(_SOURCE_WIDTH - 3) :]


_STACK_METRICS = ("self_cpu_time_total", "cpu_time_total")
_FOLDED_SEPARATORS = str.maketrans(" ;\t\n", "____")  # these would split a frame in two


def write_stacks(events, path: str, metric: str) -> None:
    if metric.replace("cuda", "cpu").replace("device", "cpu") not in _STACK_METRICS:
        raise ValueError(f"export_stacks: metric must be one of {_STACK_METRICS}, got {metric!r}")
    metric = metric.replace("cuda", "cpu").replace("device", "cpu")
    with open(path, "w") as f:
        for e in events:
            value = int(getattr(e, metric))
            if e.stack and value > 0:
                frames = ";".join(
                    frame.translate(_FOLDED_SEPARATORS) for frame in reversed(e.stack)
                )
                f.write(f"{frames} {value}\n")
