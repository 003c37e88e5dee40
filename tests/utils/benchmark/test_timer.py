"""Timer: statement handling, thread counts, and the block-size and stopping rules of
timeit / blocked_autorange / adaptive_autorange. The rules are checked with a fake clock that
advances only when the statement runs, so block sizes and times are exact (and equal torch's);
the few real-clock tests run for milliseconds and assert no speeds."""

import timeit

import pytest

import ember
from ember.utils.benchmark import Language, Measurement, Timer, timer


class FakeClock:
    """A clock that advances by the next tick each time the timed statement calls ``tick``."""

    def __init__(self, ticks):
        self.now = 0.0
        self._ticks = list(ticks)
        self._i = 0

    def tick(self):
        self.now += self._ticks[self._i % len(self._ticks)]
        self._i += 1

    def __call__(self):
        return self.now


def _fake_timer(lib, ticks, **kwargs):
    clock = FakeClock(ticks)
    return lib.Timer("clock.tick()", globals={"clock": clock}, timer=clock, **kwargs)


# --- construction ---------------------------------------------------------------------------


def test_timer_rejects_a_callable_stmt():
    with pytest.raises(ValueError, match="only a `str` stmt"):
        Timer(stmt=lambda: None)


def test_timer_rejects_global_setup_for_python():
    with pytest.raises(ValueError, match="global_setup is C\\+\\+ only"):
        Timer("x", global_setup="#include <vector>")


def test_timer_rejects_an_unknown_language():
    with pytest.raises(ValueError, match="Invalid language `fortran`"):
        Timer("x", language="fortran")


def test_timer_refuses_cpp_statements():
    for language in (Language.CPP, "cpp", "c++"):
        with pytest.raises(NotImplementedError, match="no C\\+\\+ API"):
            Timer("x;", language=language)


def test_timer_accepts_python_language_names():
    for language in (Language.PYTHON, "py", "python"):
        assert Timer("1", language=language).timeit(2).number_per_run == 2


def test_statement_sees_torch_as_ember():
    seen = []
    Timer("seen.append(torch)", globals={"seen": seen}).timeit(2)
    assert seen[0] is ember


def test_globals_can_override_torch():
    seen = []
    Timer("seen.append(torch)", globals={"seen": seen, "torch": "mine"}).timeit(2)
    assert seen[0] == "mine"


def test_timer_copies_globals():
    g = {"x": 1}
    Timer("x + 1", globals=g).timeit(2)
    assert g == {"x": 1}


def test_stmt_and_setup_are_dedented_and_trimmed():
    t = Timer(
        """
        a = 1
        b = a + 1
        """,
        setup="""
            c = 2
        """,
    )
    assert (t._task_spec.stmt, t._task_spec.setup) == ("a = 1\nb = a + 1", "c = 2")


def test_task_spec_fields_equal_torch(torch_benchmark):
    kwargs = dict(
        stmt="\n    y = x * 2\n    z = y + 1\n",
        setup="\n  x = 3\n",
        label="l",
        sub_label="s",
        description="d",
        env="e",
        num_threads=2,
    )
    assert Timer(**kwargs)._task_spec == ember.utils.benchmark.TaskSpec(
        **vars(torch_benchmark.Timer(**kwargs)._task_spec)
    )


def test_repeat_and_autorange_point_to_blocked_autorange():
    t = Timer("1")
    for call in (t.repeat, t.autorange):
        with pytest.raises(NotImplementedError, match="blocked_autorange"):
            call()


def test_collect_callgrind_is_not_available():
    with pytest.raises(NotImplementedError, match="valgrind"):
        Timer("1").collect_callgrind()


# --- timeit -------------------------------------------------------------------------------


@pytest.mark.parametrize("number, runs", [(50, 2 + 50), (1000, 10 + 1000), (1, 2 + 1)])
def test_timeit_warms_up_then_runs_number_times(number, runs):
    count = [0]
    m = Timer("count[0] += 1", globals={"count": count}).timeit(number)
    assert count[0] == runs
    assert (m.number_per_run, len(m.raw_times)) == (number, 1)


def test_timeit_runs_setup_before_warm_up_and_measurement():
    count = [0]
    Timer("pass", setup="count[0] += 1", globals={"count": count}).timeit(10)
    assert count[0] == 2


def test_timeit_time_is_the_block_time_from_the_timer():
    m = _fake_timer(ember.utils.benchmark, [0.5]).timeit(8)
    assert m.raw_times == [4.0]
    assert m.times == [0.5]


def test_timeit_equals_torch_with_a_fake_clock(torch_benchmark):
    ours = _fake_timer(ember.utils.benchmark, [1e-3, 2e-3]).timeit(300)
    theirs = _fake_timer(torch_benchmark, [1e-3, 2e-3]).timeit(300)
    assert (ours.number_per_run, ours.raw_times) == (theirs.number_per_run, theirs.raw_times)


def test_timer_runs_with_num_threads_and_restores_the_count():
    before = ember.get_num_threads()
    seen = []
    t = Timer("seen.append(torch.get_num_threads())", globals={"seen": seen}, num_threads=1)
    t.timeit(3)
    t.blocked_autorange(min_run_time=0.001)
    assert set(seen) == {1}
    assert ember.get_num_threads() == before
    seen.clear()
    Timer("seen.append(torch.get_num_threads())", globals={"seen": seen}, num_threads=2).timeit(3)
    assert set(seen) == {2}


def test_measurement_carries_the_labels():
    m = Timer("1", label="l", sub_label="s", description="d", env="e", num_threads=1).timeit(2)
    assert isinstance(m, Measurement)
    assert (m.label, m.sub_label, m.description, m.env, m.num_threads) == ("l", "s", "d", "e", 1)


# --- blocked_autorange ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "tick, min_run_time, number",
    [
        (1e-3, 0.2, 1),  # one run is 1e-3 >= 0.2 / 1000: no need for blocks
        (1e-6, 0.2, 1000),  # 1000 runs take 1e-3 = min_run_time / 1000
        (1e-6, 0.01, 10),  # 1e-5: 10,000 times the floor of 1e-9 set on the timer's overhead
        (0.5, 0.2, 1),  # one run already takes longer than min_run_time
    ],
)
def test_blocked_autorange_picks_the_block_size(tick, min_run_time, number):
    m = _fake_timer(ember.utils.benchmark, [tick]).blocked_autorange(min_run_time=min_run_time)
    assert m.number_per_run == number
    assert sum(m.raw_times) >= min_run_time
    assert sum(m.raw_times[:-1]) < min_run_time
    assert all(t == pytest.approx(tick * number) for t in m.raw_times)


def test_blocked_autorange_calls_back_for_each_block():
    seen = []
    m = _fake_timer(ember.utils.benchmark, [1e-3]).blocked_autorange(
        callback=lambda number, t: seen.append((number, t)), min_run_time=0.01
    )
    assert seen == [(1, t) for t in m.raw_times]


@pytest.mark.parametrize("tick, min_run_time", [(1e-3, 0.2), (1e-6, 0.2), (3e-7, 0.05), (0.5, 0.2)])
def test_blocked_autorange_equals_torch_with_a_fake_clock(torch_benchmark, tick, min_run_time):
    ours = _fake_timer(ember.utils.benchmark, [tick]).blocked_autorange(min_run_time=min_run_time)
    theirs = _fake_timer(torch_benchmark, [tick]).blocked_autorange(min_run_time=min_run_time)
    assert (ours.number_per_run, ours.raw_times) == (theirs.number_per_run, theirs.raw_times)


def test_blocked_autorange_with_the_real_clock_returns_replicates():
    m = Timer("x + 1", globals={"x": ember.ones(3)}).blocked_autorange(min_run_time=0.005)
    assert str(m.number_per_run).rstrip("0") == "1"  # a power of ten
    assert len(m.raw_times) >= 1 and m.median > 0
    assert sum(m.raw_times) >= 0.005


def test_timer_accepts_timeit_default_timer():
    m = Timer("1", timer=timeit.default_timer).blocked_autorange(min_run_time=0.002)
    assert m.median > 0


# --- adaptive_autorange ---------------------------------------------------------------------


def test_adaptive_autorange_stops_once_the_iqr_is_small():
    # steady blocks: four are needed, and min_run_time must have passed
    m = _fake_timer(ember.utils.benchmark, [1e-3]).adaptive_autorange(min_run_time=0.0)
    assert m.number_per_run == 1
    assert len(m.raw_times) == 4
    m = _fake_timer(ember.utils.benchmark, [1e-3]).adaptive_autorange(min_run_time=0.02)
    assert len(m.raw_times) == 20


def test_adaptive_autorange_stops_at_max_run_time_when_noisy():
    m = _fake_timer(ember.utils.benchmark, [1e-3, 5e-3]).adaptive_autorange(max_run_time=0.1)
    assert m.has_warnings
    assert sum(m.raw_times) > 0.1
    assert sum(m.raw_times[:-1]) <= 0.1


def test_adaptive_autorange_threshold_decides_when_spread_is_small_enough():
    # blocks alternate 1.0 and 1.1 ms: IQR / median is about 0.095
    loose = _fake_timer(ember.utils.benchmark, [1e-3, 1.1e-3]).adaptive_autorange(
        threshold=0.1, min_run_time=0.0, max_run_time=0.05
    )
    strict = _fake_timer(ember.utils.benchmark, [1e-3, 1.1e-3]).adaptive_autorange(
        threshold=0.01, min_run_time=0.0, max_run_time=0.05
    )
    assert len(loose.raw_times) == 4
    assert sum(strict.raw_times) > 0.05


@pytest.mark.parametrize(
    "ticks, kwargs",
    [
        ([1e-3], {}),
        ([1e-6], {"min_run_time": 0.02}),
        ([1e-3, 5e-3], {"max_run_time": 0.1}),
        ([1e-3, 1.1e-3], {"threshold": 0.01, "max_run_time": 0.05}),
    ],
)
def test_adaptive_autorange_equals_torch_with_a_fake_clock(torch_benchmark, ticks, kwargs):
    ours = _fake_timer(ember.utils.benchmark, ticks).adaptive_autorange(**kwargs)
    theirs = _fake_timer(torch_benchmark, ticks).adaptive_autorange(**kwargs)
    assert (ours.number_per_run, ours.raw_times) == (theirs.number_per_run, theirs.raw_times)


def test_adaptive_autorange_with_the_real_clock():
    m = Timer("x * 2", globals={"x": ember.ones(3)}).adaptive_autorange(
        min_run_time=0.002, max_run_time=0.02
    )
    assert len(m.raw_times) >= 1 and m.median > 0


# --- the timer function -----------------------------------------------------------------------


def test_timer_function_reads_the_default_clock():
    a = timer()
    b = timeit.default_timer()
    assert isinstance(a, float) and a <= b <= timer()
