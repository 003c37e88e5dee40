"""``Timer``: ``timeit.Timer`` that knows about ember's threads, warms up, and measures in
blocks until the statistics can be trusted, returning ``Measurement`` objects."""

from __future__ import annotations

import enum
import textwrap
import timeit
from collections.abc import Callable
from typing import Any, NoReturn

import ember

from . import common

__all__ = ["Timer", "timer", "Language"]


def timer() -> float:
    """``timeit.default_timer``, after waiting for queued CUDA work when a GPU is in use.

    Example::
        >>> t0 = timer()
        >>> timer() >= t0
        True
    """
    if ember.accelerator.is_available():
        ember.accelerator.synchronize()
    return timeit.default_timer()


class Language(enum.Enum):
    PYTHON = 0
    CPP = 1


_PYTHON_NAMES = (Language.PYTHON, "py", "python")
_CPP_NAMES = (Language.CPP, "cpp", "c++")
# Block sizes stay within a C int, as PyTorch's do.
_MAX_BLOCK_SIZE = 2147483647


def _tidy_snippet(code: str) -> str:
    """Dedent, and drop the newline that opens a triple-quoted block and trailing blanks."""
    code = textwrap.dedent(code)
    if code.startswith("\n"):
        code = code[1:]
    return code.rstrip()


class Timer:
    """Time a Python statement, as ``torch.utils.benchmark.Timer`` does.

    Like ``timeit.Timer`` (``stmt``, ``setup``, ``timer``, ``globals``) with three differences:
    the run happens with ``num_threads`` intra-op threads (one by default, restored afterwards)
    and after a warm-up; ``blocked_autorange`` and ``adaptive_autorange`` choose a block size and
    repeat blocks to gather replicates; and every result is a ``Measurement`` carrying
    ``label``, ``sub_label``, ``description`` and ``env``, which ``Compare`` lays out as a
    table (label: table title, sub_label or stmt: row, description: column, env: row prefix).

    ``stmt`` and ``setup`` are source strings (a callable is rejected, as in PyTorch). They see
    ``globals`` (copied) plus ``torch`` and ``ember``, both bound to ember, where ``globals``
    does not bind those names.

    Example::
        >>> import ember as torch
        >>> t = torch.utils.benchmark.Timer(
        ...     stmt="x + y", globals={"x": torch.ones(4, 8), "y": torch.ones(1, 8)},
        ...     label="Broadcasting add", description="4x8")
        >>> m = t.blocked_autorange(min_run_time=0.01)
        >>> m.number_per_run >= 1 and m.median > 0
        True
    """

    _timer_cls: type = timeit.Timer

    def __init__(
        self,
        stmt: str = "pass",
        setup: str = "pass",
        global_setup: str = "",
        timer: Callable[[], float] = timer,
        globals: dict[str, Any] | None = None,
        label: str | None = None,
        sub_label: str | None = None,
        description: str | None = None,
        env: str | None = None,
        num_threads: int = 1,
        language: Language | str = Language.PYTHON,
    ) -> None:
        if not isinstance(stmt, str):
            raise ValueError("Currently only a `str` stmt is supported.")
        if language in _CPP_NAMES:
            raise NotImplementedError(
                "Timer(language='cpp') compiles the statement as C++ against LibTorch; ember has "
                "no C++ API, so only Python statements can be timed"
            )
        if language not in _PYTHON_NAMES:
            raise ValueError(f"Invalid language `{language}`.")
        if global_setup:
            raise ValueError(
                f"global_setup is C++ only, got `{global_setup}`. Most likely this code can "
                "simply be moved to `setup`."
            )

        # a copy, so that exec's additions (`__builtins__`) do not reach the caller's dict
        self._globals = dict(globals or {})
        self._globals.setdefault("torch", ember)
        self._globals.setdefault("ember", ember)
        self._language = Language.PYTHON

        stmt = _tidy_snippet(stmt)
        setup = _tidy_snippet(setup)
        self._timer = self._timer_cls(stmt=stmt, setup=setup, timer=timer, globals=self._globals)
        self._task_spec = common.TaskSpec(
            stmt=stmt,
            setup=setup,
            global_setup=global_setup,
            label=label,
            sub_label=sub_label,
            description=description,
            env=env,
            num_threads=num_threads,
        )

    def _timeit(self, number: int) -> float:
        # a timer call alone costs tens of nanoseconds; the floor keeps ratios finite
        return max(self._timer.timeit(number), 1e-9)

    def _measurement(self, number_per_run: int, raw_times: list[float]) -> common.Measurement:
        return common.Measurement(
            number_per_run=number_per_run, raw_times=raw_times, task_spec=self._task_spec
        )

    def timeit(self, number: int = 1000000) -> common.Measurement:
        """Run ``stmt`` ``number`` times (after a warm-up of ``number // 100``, at least 2) and
        return a Measurement of that one block, like ``timeit.Timer.timeit``.

        Example::
            >>> m = Timer("1 + 1").timeit(100)
            >>> (m.number_per_run, len(m.raw_times))
            (100, 1)
        """
        with common.set_torch_threads(self._task_spec.num_threads):
            self._timeit(number=max(int(number // 100), 2))
            return self._measurement(number, [self._timeit(number=number)])

    def repeat(self, repeat: int = -1, number: int = -1) -> None:
        raise NotImplementedError("See `Timer.blocked_autorange.`")

    def autorange(self, callback: Callable[[int, float], NoReturn] | None = None) -> None:
        raise NotImplementedError("See `Timer.blocked_autorange.`")

    def _measure_blocks(
        self,
        number: int,
        stop: Callable[[list[float]], bool],
        min_run_time: float,
        max_run_time: float | None = None,
        callback: Callable[[int, float], NoReturn] | None = None,
    ) -> list[float]:
        """Time blocks of ``number`` runs until ``min_run_time`` has passed and ``stop`` agrees,
        or ``max_run_time`` has passed."""
        total_time = 0.0
        times: list[float] = []
        with common.set_torch_threads(self._task_spec.num_threads):
            while True:
                block_time = self._timeit(number)
                times.append(block_time)
                total_time += block_time
                if callback:
                    callback(number, block_time)
                can_stop = stop(times)
                if max_run_time and total_time > max_run_time:
                    break
                if total_time >= min_run_time and can_stop:
                    break
        return times

    def _estimate_block_size(self, min_run_time: float) -> int:
        """The first power of ten whose block takes 10,000 times the timer's own overhead and a
        thousandth of ``min_run_time``, or all of ``min_run_time``; it also warms up."""
        with common.set_torch_threads(self._task_spec.num_threads):
            overhead = sorted(self._timeit(0) for _ in range(5))[2]
            number = 1
            while True:
                time_taken = self._timeit(number)
                if overhead / time_taken <= 1e-4 and time_taken >= min_run_time / 1000:
                    break
                if time_taken > min_run_time or number * 10 > _MAX_BLOCK_SIZE:
                    break
                number *= 10
        return number

    def blocked_autorange(
        self,
        callback: Callable[[int, float], NoReturn] | None = None,
        min_run_time: float = 0.2,
    ) -> common.Measurement:
        """Pick a block size that makes the timer's overhead negligible, then time blocks until
        ``min_run_time`` seconds have been spent. ``callback(number, seconds)`` sees each block.

        Example::
            >>> m = Timer("sum(range(100))").blocked_autorange(min_run_time=0.01)
            >>> sum(m.raw_times) >= 0.01
            True
        """
        number = self._estimate_block_size(min_run_time)
        times = self._measure_blocks(
            number, lambda times: True, min_run_time=min_run_time, callback=callback
        )
        return self._measurement(number, times)

    def adaptive_autorange(
        self,
        threshold: float = 0.1,
        *,
        min_run_time: float = 0.01,
        max_run_time: float = 10.0,
        callback: Callable[[int, float], NoReturn] | None = None,
    ) -> common.Measurement:
        """Like ``blocked_autorange``, but keep timing blocks until there are more than three,
        ``min_run_time`` has passed and IQR / median is under ``threshold``, or until
        ``max_run_time`` has passed.

        Example::
            >>> m = Timer("sum(range(100))").adaptive_autorange(min_run_time=0.01, max_run_time=0.1)
            >>> len(m.raw_times) >= 4 or sum(m.raw_times) > 0.1
            True
        """
        number = self._estimate_block_size(min_run_time=0.05)

        def stop(times: list[float]) -> bool:
            return len(times) > 3 and self._measurement(number, times).meets_confidence(threshold)

        times = self._measure_blocks(number, stop, min_run_time, max_run_time, callback=callback)
        return self._measurement(number, times)

    def collect_callgrind(
        self,
        number: int = 100,
        *,
        repeats: int | None = None,
        collect_baseline: bool = True,
        retain_out_file: bool = False,
    ) -> Any:
        raise NotImplementedError(
            "Timer.collect_callgrind counts instructions with valgrind in a subprocess that "
            "drives the statement through PyTorch's C++ bindings; ember has neither, so only "
            "wall times (timeit, blocked_autorange, adaptive_autorange) are available"
        )
