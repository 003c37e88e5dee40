"""What a benchmark measured: ``TaskSpec`` (what was run) and ``Measurement`` (how long it took),
with the small formatting helpers that ``Timer`` and ``Compare`` share.

PyTorch does the statistics here through tensors, the unit choice and the significant-figure
arithmetic through default-dtype (float32) ones. The helpers below round through float32 at the
same steps, so that a Measurement prints, and a Compare table lays out, exactly as PyTorch's does
for the same raw times, down to the unit chosen at a power-of-ten boundary.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import textwrap
from collections.abc import Iterable, Iterator
from typing import Any

import numpy as np

from ...._backend import get_num_threads, set_num_threads

__all__ = [
    "TaskSpec",
    "Measurement",
    "select_unit",
    "unit_to_english",
    "trim_sigfig",
    "ordered_unique",
    "set_torch_threads",
]

_MAX_SIGNIFICANT_FIGURES = 4
# A timer call costs tens of nanoseconds, so no estimate is trusted beyond this.
_MIN_CONFIDENCE_INTERVAL = 25e-9
# Relative IQR (IQR / median) above which a Measurement carries a warning, and the worse one.
_IQR_WARN_THRESHOLD = 0.1
_IQR_GROSS_WARN_THRESHOLD = 0.25

_UNIT_BY_THOUSANDS = {-3: "ns", -2: "us", -1: "ms"}
_UNIT_SCALE = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1}
_UNIT_NAME = {"ns": "nanosecond", "us": "microsecond", "ms": "millisecond", "s": "second"}


def _log10_f32(x: float) -> float:
    """log10 of a float32 value, rounded to float32, as on a default-dtype tensor.

    Taken in double and rounded once: NumPy's float32 log10 is off by an ulp or two, enough to
    put 1e-06 in nanoseconds (-6.0000005 // 3 == -3) where PyTorch says microseconds.
    """
    value = float(np.float32(x))
    if 0 < value < math.inf:
        return float(np.float32(math.log10(value)))
    if value == 0:
        return -math.inf
    return math.inf if value == math.inf else math.nan  # negative or NaN: NaN, as a tensor gives


def _quantile(sorted_values: tuple[float, ...], q: float) -> float:
    """Linear-interpolation quantile of already sorted values (NumPy's and PyTorch's default)."""
    rank = q * (len(sorted_values) - 1)
    below = int(rank)
    weight = rank - below
    low, high = sorted_values[below], sorted_values[math.ceil(rank)]
    # The two-sided lerp keeps the result exact at either end of the interval.
    if weight < 0.5:
        return low + weight * (high - low)
    return high - (high - low) * (1 - weight)


@dataclasses.dataclass(init=True, repr=False, eq=True, frozen=True)
class TaskSpec:
    """What a Timer runs, and the labels it is reported under (everything but its globals).

    Example::
        >>> TaskSpec(stmt="x + y", setup="pass", label="add").title
        'add'
    """

    stmt: str
    setup: str
    global_setup: str = ""
    label: str | None = None
    sub_label: str | None = None
    description: str | None = None
    env: str | None = None
    num_threads: int = 1

    @property
    def title(self) -> str:
        """The label (or else the one-line stmt), with the sub_label after a colon."""
        sub = f": {self.sub_label}" if self.sub_label else ""
        if self.label is not None:
            return self.label + sub
        if "\n" not in self.stmt:
            return self.stmt + sub
        sub = f" ({self.sub_label})" if self.sub_label else ""
        return f"stmt:{sub}\n{textwrap.indent(self.stmt, '  ')}"

    def setup_str(self) -> str:
        if not self.setup or self.setup == "pass":
            return ""
        if "\n" in self.setup:
            return f"setup:\n{textwrap.indent(self.setup, '  ')}"
        return f"setup: {self.setup}"

    def summarize(self) -> str:
        """The TaskSpec's lines in a Measurement's repr; a multi-line section ends blank."""
        sections = [s for s in (self.title, self.description or "", self.setup_str()) if s]
        return "\n".join(s + "\n" if "\n" in s else s for s in sections)


_TASK_SPEC_FIELDS = frozenset(field.name for field in dataclasses.fields(TaskSpec))


@dataclasses.dataclass(init=True, repr=False)
class Measurement:
    """The times a Timer measured: ``raw_times[i]`` is the time of ``number_per_run`` runs.

    The statistics (``median``, ``mean``, ``iqr``) are per run. The TaskSpec's fields read
    through (``m.label``, ``m.num_threads``, ...). Measurements pickle, so replicates can be
    gathered from other processes and merged.

    Example::
        >>> spec = TaskSpec(stmt="x + y", setup="pass", label="add")
        >>> m = Measurement(number_per_run=4, raw_times=[1e-5, 3e-5, 2e-5], task_spec=spec)
        >>> m.times
        [2.5e-06, 7.5e-06, 5e-06]
        >>> m.median
        5e-06
    """

    number_per_run: int
    raw_times: list[float]
    task_spec: TaskSpec
    metadata: dict[Any, Any] | None = None  # the caller's own payload; never merged

    def __post_init__(self) -> None:
        self._sorted_times: tuple[float, ...] = ()
        self._warnings: tuple[str, ...] = ()
        self._median = -1.0
        self._mean = -1.0
        self._p25 = -1.0
        self._p75 = -1.0

    def __getattr__(self, name: str) -> Any:
        # only reached for names the instance lacks: forward the TaskSpec's fields
        if name in _TASK_SPEC_FIELDS:
            return getattr(self.task_spec, name)
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    @property
    def times(self) -> list[float]:
        """Time per run of each measurement: the raw times over ``number_per_run``."""
        return [t / self.number_per_run for t in self.raw_times]

    @property
    def median(self) -> float:
        self._lazy_init()
        return self._median

    @property
    def mean(self) -> float:
        self._lazy_init()
        return self._mean

    @property
    def iqr(self) -> float:
        """Interquartile range (75th minus 25th percentile) of the per-run times."""
        self._lazy_init()
        return self._p75 - self._p25

    @property
    def significant_figures(self) -> int:
        """A rough count (1 to 4) of the digits of the median that the spread supports.

        The spread is the standard error of the interquartile points at z = 1.645, never
        taken below 25 ns. ``Compare.trim_significant_figures`` rounds to this many digits.
        """
        self._lazy_init()
        n_total = len(self._sorted_times)
        middle = self._sorted_times[n_total // 4 : math.ceil(np.float32(3 * n_total / 4))]
        # PyTorch takes std and sqrt of float32 tensors of these points (std accumulated wider)
        std = float(np.float32(np.asarray(middle, np.float32).astype(np.float64).std()))
        sqrt_n = float(np.sqrt(np.float32(len(middle))))
        confidence_interval = max(1.645 * std / sqrt_n, _MIN_CONFIDENCE_INTERVAL)
        digits = math.floor(_log10_f32(self._median / confidence_interval))
        return min(max(digits, 1), _MAX_SIGNIFICANT_FIGURES)

    @property
    def has_warnings(self) -> bool:
        """True when the spread is large: IQR over 10 % of the median."""
        self._lazy_init()
        return bool(self._warnings)

    def _lazy_init(self) -> None:
        if not self.raw_times or self._sorted_times:
            return
        self._sorted_times = tuple(sorted(self.times))
        self._median = _quantile(self._sorted_times, 0.5)
        self._mean = float(np.mean(np.asarray(self._sorted_times, dtype=np.float64)))
        self._p25 = _quantile(self._sorted_times, 0.25)
        self._p75 = _quantile(self._sorted_times, 0.75)

        if not self.meets_confidence(_IQR_GROSS_WARN_THRESHOLD):
            cause = "This suggests significant environmental influence."
        elif not self.meets_confidence(_IQR_WARN_THRESHOLD):
            cause = "This could indicate system fluctuation."
        else:
            return
        relative_iqr = self.iqr / self.median * 100
        self._warnings += (
            f"  WARNING: Interquartile range is {relative_iqr:.1f}% "
            f"of the median measurement.\n           {cause}",
        )

    def meets_confidence(self, threshold: float = _IQR_WARN_THRESHOLD) -> bool:
        """True when IQR / median is below ``threshold``."""
        return self.iqr / self.median < threshold

    @property
    def title(self) -> str:
        return self.task_spec.title

    @property
    def env(self) -> str | None:
        # PyTorch's own property fails and falls through to the TaskSpec's env, None included;
        # Compare depends on that, so it is what this returns.
        return self.task_spec.env

    @property
    def as_row_name(self) -> str:
        """The row a Compare table puts this under: sub_label, else stmt."""
        return self.sub_label or self.stmt or "[Unknown]"

    def __repr__(self) -> str:
        """An address line, the TaskSpec summary, then the statistics, e.g.::

        <ember.utils.benchmark.utils.common.Measurement object at 0x7f395b6ac110>
        Broadcasting add (4x8)
          Median: 5.73 us
          IQR:    2.25 us (4.01 to 6.26)
          372 measurements, 100 runs per measurement, 1 thread
        """
        self._lazy_init()
        n = len(self._sorted_times)
        unit, scale = select_unit(self._median)

        def fmt(seconds: float) -> str:
            return f"{seconds / scale:.2f}"

        threads = f"{self.num_threads} thread{'s' if self.num_threads > 1 else ''}"
        lines = [object.__repr__(self), self.task_spec.summarize()]
        if n > 1:
            lines.append(f"  Median: {fmt(self._median)} {unit}")
        else:
            lines.append(f"  {fmt(self._median)} {unit}")
        if n >= 4:
            lines.append(f"  IQR:    {fmt(self.iqr)} {unit} ({fmt(self._p25)} to {fmt(self._p75)})")
        runs = self.number_per_run
        if n > 1:
            lines.append(f"  {n} measurements, {runs} runs per measurement, {threads}")
        else:
            # PyTorch's wording for a single measurement, stray space included
            lines.append(f"  {n} measurement, {runs} runs , {threads}")
        lines.extend(self._warnings)
        return "\n".join(lines).strip()

    @staticmethod
    def merge(measurements: Iterable[Measurement]) -> list[Measurement]:
        """Pool replicates of the same TaskSpec into one Measurement each, in first-seen order.

        Times are brought to ``number_per_run=1`` (replicates may have run different block
        sizes); metadata is dropped, as it may differ between replicates.

        Example::
            >>> spec = TaskSpec(stmt="x + y", setup="pass")
            >>> a = Measurement(4, [1e-5], spec)
            >>> b = Measurement(2, [3e-5], spec)
            >>> [m.times for m in Measurement.merge([a, b])]
            [[2.5e-06, 1.5e-05]]
        """
        pooled: dict[TaskSpec, list[float]] = {}
        for m in measurements:
            pooled.setdefault(m.task_spec, []).extend(m.times)
        return [Measurement(1, times, spec, metadata=None) for spec, times in pooled.items()]


def select_unit(t: float) -> tuple[str, float]:
    """The unit that puts ``t`` seconds in [1, 1000), and its scale.

    Example::
        >>> select_unit(2.5e-5)
        ('us', 1e-06)
    """
    # Below a nanosecond, and from a second up, the unit is seconds (as in PyTorch).
    unit = _UNIT_BY_THOUSANDS.get(int(_log10_f32(t) // 3), "s")
    return unit, _UNIT_SCALE[unit]


def unit_to_english(u: str) -> str:
    """``"us"`` -> ``"microsecond"``."""
    return _UNIT_NAME[u]


def trim_sigfig(x: float, n: int) -> float:
    """Round ``x`` to ``n`` significant figures (in float32, as PyTorch does).

    Example::
        >>> round(trim_sigfig(3.14159, 2), 4)
        3.1
    """
    if n != int(n):
        raise AssertionError(f"trim_sigfig: significant figures must be a whole number, got {n}")
    magnitude = math.ceil(_log10_f32(abs(x)))
    scale = 10 ** (magnitude - n)
    return float(np.round(np.float32(x / scale)) * np.float32(scale))


def ordered_unique(elements: Iterable[Any]) -> list[Any]:
    """The distinct elements in first-seen order."""
    return list(dict.fromkeys(elements))


@contextlib.contextmanager
def set_torch_threads(n: int) -> Iterator[None]:
    """Run the block with ``n`` intra-op threads (``ember.set_num_threads``), then restore.

    Example::
        >>> with set_torch_threads(1):
        ...     pass
    """
    prior = get_num_threads()
    try:
        set_num_threads(n)
        yield
    finally:
        set_num_threads(prior)
