"""``Compare``: many Measurements laid out as text tables, PyTorch's layout character for
character.

One table per ``label``; a row per (``num_threads``, ``env``, ``sub_label`` or stmt), grouped
under a "N threads: ----" rule; a column per ``description``. Each cell is the median in the
table's unit. Replicates (Measurements of equal TaskSpecs) are merged first.
"""

from __future__ import annotations

import enum
import itertools
import math
from collections.abc import Iterable

from .common import (
    Measurement,
    _log10_f32,
    ordered_unique,
    select_unit,
    trim_sigfig,
    unit_to_english,
)

__all__ = ["Colorize", "Compare"]

# ANSI escapes, as PyTorch's table uses them
BEST = "\033[92m"
GOOD = "\033[34m"
BAD = "\033[2m\033[91m"
VERY_BAD = "\033[31m"
BOLD = "\033[1m"
TERMINATE = "\033[0m"

_CELL_SEPARATOR = "  |  "
_WARNING_NOTE_WIDTH = 7
_WARNING_LEGEND = "(! XX%) Measurement has high variance, where XX is the IQR / median * 100.\n"


class Colorize(enum.Enum):
    NONE = "none"
    COLUMNWISE = "columnwise"
    ROWWISE = "rowwise"


def _colored(cell: str, value: float, best: float) -> str:
    """Green within 1 % (or 100 ns) of the best, blue within 10 %, dim red from 2x, red from 5x."""
    if value <= best * 1.01 or value <= best + 100e-9:
        return BEST + BOLD + cell + TERMINATE * 2
    if value <= best * 1.1:
        return GOOD + BOLD + cell + TERMINATE * 2
    if value >= best * 5:
        return VERY_BAD + BOLD + cell + TERMINATE * 2
    if value >= best * 2:
        return BAD + cell + TERMINATE * 2
    return cell


class _ColumnFormat:
    """How one column prints its numbers: one width and one number of decimals for all cells."""

    def __init__(
        self,
        measurements: list[Measurement],
        time_scale: float,
        trim_significant_figures: bool,
        highlight_warnings: bool,
    ) -> None:
        self._trim = trim_significant_figures
        self.highlight = highlight_warnings and any(m.has_warnings for m in measurements)
        leading_digits = [math.ceil(_log10_f32(m.median / time_scale)) for m in measurements]
        if trim_significant_figures:
            # as many decimals as the least precise cell supports
            decimals = min(
                max(m.significant_figures - digits, 0)
                for m, digits in zip(measurements, leading_digits)
            )
        else:
            decimals = 1
        width = max(leading_digits) + decimals + (1 if decimals else 0)
        self._number = f"{{:>{width}.{decimals}f}}"
        self._note_width = _WARNING_NOTE_WIDTH if self.highlight else 0

    def cell(self, value: float, significant_figures: int, spread: float | None) -> str:
        if self._trim:
            value = trim_sigfig(value, significant_figures)
        note = f" (! {spread * 100:.0f}%)" if self.highlight and spread is not None else ""
        return self._number.format(value) + note.rjust(self._note_width)

    def blank(self) -> str:
        return " " * len(self.cell(1, 1, None))


class _Table:
    """The table of one label."""

    def __init__(
        self,
        results: list[Measurement],
        colorize: Colorize,
        trim_significant_figures: bool,
        highlight_warnings: bool,
    ) -> None:
        self.label = results[0].label
        self.results = results
        self._colorize = colorize
        self._highlight_warnings = highlight_warnings
        self.time_unit, self.time_scale = select_unit(min(r.median for r in results))

        # rows by thread count, then env (None first; PyTorch cannot sort a mix of None and
        # names), keeping first-seen order within each
        self.row_keys = ordered_unique(self._row_key(r) for r in results)
        self.row_keys.sort(key=lambda key: (key[0], key[1] or ""))
        self.column_keys = ordered_unique(r.description for r in results)
        row_index = {key: i for i, key in enumerate(self.row_keys)}
        column_index = {key: j for j, key in enumerate(self.column_keys)}
        self.grid: list[list[Measurement | None]] = [
            [None] * len(self.column_keys) for _ in self.row_keys
        ]
        for r in results:
            self.grid[row_index[self._row_key(r)]][column_index[r.description]] = r

        # a thread group is a run of rows with one num_threads, under its own rule
        self.starts_group = [
            i == 0 or key[0] != self.row_keys[i - 1][0] for i, key in enumerate(self.row_keys)
        ]
        self.thread_group = list(itertools.accumulate(self.starts_group, initial=-1))[1:]

        self.columns = [
            _ColumnFormat(
                [row[j] for row in self.grid if row[j] is not None],
                self.time_scale,
                trim_significant_figures,
                highlight_warnings,
            )
            for j in range(len(self.column_keys))
        ]

    @staticmethod
    def _row_key(m: Measurement) -> tuple[int, str | None, str]:
        return m.num_threads, m.env, m.as_row_name

    def _row_cells(self, i: int, show_env: bool, env_width: int) -> list[str]:
        row = self.grid[i]
        env = f"({self.row_keys[i][1]})" if show_env else ""
        cells = ["  " + env.ljust(env_width + 4) + self.row_keys[i][2]]
        for m, column in zip(row, self.columns):
            if m is None:
                cells.append(column.blank())
            else:
                spread = m.iqr / m.median if m.has_warnings else None
                cells.append(column.cell(m.median / self.time_scale, m.significant_figures, spread))
        return cells

    def _best_values(self, i: int) -> list[float | None]:
        """The median each cell of row ``i`` is colored against."""
        row = self.grid[i]
        if self._colorize == Colorize.ROWWISE:
            return [min(m.median for m in row if m is not None)] * len(row)
        # columnwise: the best of the column among the rows of this thread group
        group = self.thread_group[i]
        group_rows = [r for k, r in enumerate(self.grid) if self.thread_group[k] == group]
        best = []
        for j in range(len(row)):
            medians = [r[j].median for r in group_rows if r[j] is not None]
            best.append(min(medians) if medians else None)
        return best

    def render(self) -> str:
        envs = {r.env for r in self.results}
        render_env = len(envs) > 1
        env_width = max(len(str(e)) for e in envs) if render_env else 0

        header = ["", *("" if k is None else k for k in self.column_keys)]
        body: list[list[str]] = []
        prior_env: str | None = ""
        for i, (_, env, _) in enumerate(self.row_keys):
            if self.starts_group[i]:
                prior_env = ""  # each thread group names its first env again
            body.append(self._row_cells(i, render_env and env != prior_env, env_width))
            prior_env = env

        widths = [max(len(cells[j]) for cells in [header, *body]) for j in range(len(header))]
        header_line = _CELL_SEPARATOR.join(c.center(w) for c, w in zip(header, widths))
        overall_width = len(header_line)
        lines = [header_line]
        for i, cells in enumerate(body):
            if self.starts_group[i]:
                lines.append(f"{self.row_keys[i][0]} threads: ".ljust(overall_width, "-"))
            out = [cells[0].ljust(widths[0])]
            best_values = self._best_values(i) if self._colorize != Colorize.NONE else None
            for j, (cell, width) in enumerate(zip(cells[1:], widths[1:])):
                cell = cell.center(width)
                m = self.grid[i][j]
                if best_values is not None and m is not None and best_values[j] is not None:
                    cell = _colored(cell, m.median, best_values[j])
                out.append(cell)
            lines.append(_CELL_SEPARATOR.join(out))

        title = f" {self.label or ''} ".center(overall_width - 2, "-")
        has_warnings = self._highlight_warnings and any(r.has_warnings for r in self.results)
        return (
            f"[{title}]\n"
            + "\n".join(lines)
            + f"\n\nTimes are in {unit_to_english(self.time_unit)}s ({self.time_unit}).\n"
            + (_WARNING_LEGEND if has_warnings else "")
        )


class Compare:
    """Tables of Measurements, as ``torch.utils.benchmark.Compare`` prints them.

    ``print(compare)``, ``str(compare)`` or ``compare.print()`` give one table per label.
    ``trim_significant_figures()``, ``colorize(rowwise=False)`` and ``highlight_warnings()``
    change how the tables render from then on.

    Example::
        >>> from ember.utils.benchmark import Compare, Measurement, TaskSpec
        >>> ms = [Measurement(1, [t * 1e-6], TaskSpec("x + y", "pass", label="add",
        ...        sub_label="float", description=f"n={n}")) for n, t in [(1, 2.5), (8, 3.0)]]
        >>> print(Compare(ms))
        [---------- add ----------]
                     |  n=1  |  n=8
        1 threads: ----------------
              float  |  2.5  |  3.0
        <BLANKLINE>
        Times are in microseconds (us).
        <BLANKLINE>
    """

    def __init__(self, results: list[Measurement]) -> None:
        self._results: list[Measurement] = []
        self.extend_results(results)
        self._trim_significant_figures = False
        self._colorize = Colorize.NONE
        self._highlight_warnings = False

    def __str__(self) -> str:
        return "\n".join(self._render())

    def extend_results(self, results: Iterable[Measurement]) -> None:
        """Add Measurements to the ones already held."""
        results = list(results)
        for r in results:
            if not isinstance(r, Measurement):
                raise ValueError(f"Expected an instance of `Measurement`, got {type(r)} instead.")
        self._results.extend(results)

    def trim_significant_figures(self) -> None:
        """Print each column to the digits its measurements support."""
        self._trim_significant_figures = True

    def colorize(self, rowwise: bool = False) -> None:
        """Color cells against the best of their column (or of their row with ``rowwise``)."""
        self._colorize = Colorize.ROWWISE if rowwise else Colorize.COLUMNWISE

    def highlight_warnings(self) -> None:
        """Mark cells whose IQR is over 10 % of their median with ``(! XX%)``."""
        self._highlight_warnings = True

    def print(self) -> None:
        """Print the tables."""
        print(str(self))

    def _render(self) -> list[str]:
        by_label: dict[str | None, list[Measurement]] = {}
        for m in Measurement.merge(self._results):
            by_label.setdefault(m.label, []).append(m)
        return [
            _Table(
                group, self._colorize, self._trim_significant_figures, self._highlight_warnings
            ).render()
            for group in by_label.values()
        ]
