"""TaskSpec, Measurement and the formatting helpers of ember.utils.benchmark.utils.common."""

import pickle
import re

import pytest

import ember
from ember.utils.benchmark import (
    Measurement,
    TaskSpec,
    ordered_unique,
    select_unit,
    set_torch_threads,
    trim_sigfig,
    unit_to_english,
)


def _body(text: str) -> str:
    """A Measurement repr without its first line (the object's address)."""
    first, _, rest = text.partition("\n")
    assert re.fullmatch(r"<[\w.]+\.Measurement object at 0x[0-9a-f]+>", first), first
    return rest


# (stmt, setup, label, sub_label, description, num_threads, number_per_run, raw_times)
REPR_CASES = [
    ("x + y", "pass", "add", "float", "n=4", 1, 1, [2.5e-6]),
    ("a = x + y\nb = a * 2", "x = 1\ny = 2", None, None, None, 4, 1000, [2.5e-3, 2.6e-3]),
    ("x + y", "y = 1", "add", None, None, 1, 10, [1e-5, 2e-5, 3e-5, 4e-5, 5e-5]),
    ("x + y", "", None, "int", "multi\nline", 2, 100, [3e-7, 3.1e-7, 2.9e-7, 3.05e-7]),
    ("x.sum()", "pass", "sum", None, None, 1, 7, [i * 1e-9 + 4e-8 for i in range(37)]),
    ("x.sum()", "pass", "sum", None, None, 1, 1, [1.2, 1.25, 1.3, 1.21, 1.22, 5.0]),
    ("f()", "pass", None, None, None, 1, 3, [1e-3, 1.01e-3, 1.02e-3]),
]


def _spec(lib, case):
    stmt, setup, label, sub_label, description, num_threads, _, _ = case
    return lib.TaskSpec(
        stmt=stmt,
        setup=setup,
        label=label,
        sub_label=sub_label,
        description=description,
        num_threads=num_threads,
    )


def _measurement(lib, case):
    return lib.Measurement(case[6], list(case[7]), _spec(lib, case))


# --- TaskSpec ---------------------------------------------------------------------------


def test_task_spec_title_is_label_and_sub_label():
    assert TaskSpec("x + y", "pass", label="add", sub_label="float").title == "add: float"
    assert TaskSpec("x + y", "pass", label="add").title == "add"


def test_task_spec_title_falls_back_to_a_one_line_stmt():
    assert TaskSpec("x + y", "pass", sub_label="int").title == "x + y: int"


def test_task_spec_title_of_a_multi_line_stmt_is_indented():
    assert TaskSpec("a = 1\nb = 2", "pass", sub_label="s").title == "stmt: (s)\n  a = 1\n  b = 2"


def test_task_spec_setup_str_hides_pass_and_indents_blocks():
    assert TaskSpec("x", "pass").setup_str() == ""
    assert TaskSpec("x", "y = 1").setup_str() == "setup: y = 1"
    assert TaskSpec("x", "y = 1\nz = 2").setup_str() == "setup:\n  y = 1\n  z = 2"


def test_task_spec_is_hashable_and_frozen():
    spec = TaskSpec("x", "pass", label="a")
    assert {spec: 1}[TaskSpec("x", "pass", label="a")] == 1
    with pytest.raises(AttributeError):
        spec.label = "b"


@pytest.mark.parametrize("case", REPR_CASES, ids=range(len(REPR_CASES)))
def test_task_spec_title_and_summary_equal_torch(torch_benchmark, case):
    ours, theirs = _spec(ember.utils.benchmark, case), _spec(torch_benchmark, case)
    assert ours.title == theirs.title
    assert ours.summarize() == theirs.summarize()


# --- Measurement statistics ---------------------------------------------------------------


def test_times_are_raw_times_per_run():
    m = Measurement(4, [1.0, 3.0], TaskSpec("x", "pass"))
    assert m.times == [0.25, 0.75]


def test_median_mean_and_iqr_interpolate_linearly():
    m = Measurement(1, [4.0, 1.0, 3.0, 2.0], TaskSpec("x", "pass"))
    assert m.median == 2.5
    assert m.mean == 2.5
    assert m.iqr == pytest.approx(3.25 - 1.75)


def test_measurement_forwards_task_spec_fields():
    spec = TaskSpec("x + y", "y = 1", label="add", sub_label="s", description="d", env="e")
    m = Measurement(1, [1.0], spec)
    assert (m.stmt, m.setup, m.label, m.sub_label, m.description, m.env, m.num_threads) == (
        "x + y",
        "y = 1",
        "add",
        "s",
        "d",
        "e",
        1,
    )
    assert m.title == "add: s"
    assert m.as_row_name == "s"
    assert Measurement(1, [1.0], TaskSpec("x + y", "pass")).as_row_name == "x + y"


def test_measurement_unknown_attribute_raises_attribute_error():
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        Measurement(1, [1.0], TaskSpec("x", "pass")).nope  # noqa: B018


def test_significant_figures_from_the_interquartile_spread():
    spec = TaskSpec("x", "pass")
    # no spread: the 25 ns floor; log10(1e-3 / 25e-9) = 4.6
    assert Measurement(1, [1e-3] * 5, spec).significant_figures == 4
    # never below one figure: log10(1e-7 / 25e-9) = 0.6
    assert Measurement(1, [1e-7] * 5, spec).significant_figures == 1
    assert Measurement(1, [1.00e-3, 1.01e-3, 1.02e-3, 1.03e-3], spec).significant_figures == 2


def test_has_warnings_when_iqr_exceeds_a_tenth_of_the_median():
    spec = TaskSpec("x", "pass")
    steady = Measurement(1, [1.0, 1.01, 1.02, 1.03, 1.04], spec)
    wobbly = Measurement(1, [1.0, 1.1, 1.2, 1.3, 1.4], spec)  # IQR 0.2 / 1.2
    assert not steady.has_warnings
    assert wobbly.has_warnings
    assert "This could indicate system fluctuation." in repr(wobbly)
    noisy = Measurement(1, [1.0, 2.0, 3.0, 4.0, 5.0], spec)
    assert "This suggests significant environmental influence." in repr(noisy)


def test_meets_confidence_compares_relative_iqr_with_the_threshold():
    m = Measurement(1, [1.0, 1.1, 1.2, 1.3, 1.4], TaskSpec("x", "pass"))  # IQR / median = 1/6
    assert not m.meets_confidence()
    assert m.meets_confidence(threshold=0.2)


@pytest.mark.parametrize("case", REPR_CASES, ids=range(len(REPR_CASES)))
def test_statistics_equal_torch(torch_benchmark, case):
    ours, theirs = _measurement(ember.utils.benchmark, case), _measurement(torch_benchmark, case)
    assert ours.times == theirs.times
    assert ours.median == theirs.median
    assert ours.iqr == theirs.iqr
    assert ours.mean == pytest.approx(theirs.mean, rel=1e-15)
    assert ours.significant_figures == theirs.significant_figures
    assert ours.has_warnings == theirs.has_warnings
    assert ours.meets_confidence(0.05) == theirs.meets_confidence(0.05)


# --- repr ---------------------------------------------------------------------------------


def test_repr_of_one_measurement():
    spec = TaskSpec("x + y", "pass", label="add", sub_label="float", description="n=4")
    assert _body(repr(Measurement(1, [2.5e-6], spec))) == (
        "add: float\nn=4\n  2.50 us\n  1 measurement, 1 runs , 1 thread"
    )


def test_repr_of_many_measurements_with_a_warning():
    m = Measurement(10, [1e-5, 2e-5, 3e-5, 4e-5, 5e-5], TaskSpec("x + y", "y = 1", label="add"))
    assert _body(repr(m)) == (
        "add\n"
        "setup: y = 1\n"
        "  Median: 3.00 us\n"
        "  IQR:    2.00 us (2.00 to 4.00)\n"
        "  5 measurements, 10 runs per measurement, 1 thread\n"
        "  WARNING: Interquartile range is 66.7% of the median measurement.\n"
        "           This suggests significant environmental influence."
    )


def test_repr_of_a_multi_line_stmt_without_iqr_below_four_measurements():
    spec = TaskSpec("a = x + y\nb = a * 2", "x = 1\ny = 2", num_threads=4)
    assert _body(repr(Measurement(1000, [2.5e-3, 2.6e-3], spec))) == (
        "stmt:\n  a = x + y\n  b = a * 2\n\nsetup:\n  x = 1\n  y = 2\n\n"
        "  Median: 2.55 us\n  2 measurements, 1000 runs per measurement, 4 threads"
    )


@pytest.mark.parametrize("case", REPR_CASES, ids=range(len(REPR_CASES)))
def test_repr_equals_torch_for_the_same_raw_times(torch_benchmark, case):
    ours, theirs = _measurement(ember.utils.benchmark, case), _measurement(torch_benchmark, case)
    assert repr(ours).startswith("<ember.utils.benchmark.utils.common.Measurement object at 0x")
    assert _body(repr(ours)) == _body(repr(theirs))


# --- merge and pickling -------------------------------------------------------------------


def test_merge_pools_replicates_at_one_run_each():
    spec = TaskSpec("x + y", "pass", label="add")
    merged = Measurement.merge([Measurement(2, [1.0], spec), Measurement(4, [3.0, 2.0], spec)])
    assert len(merged) == 1
    assert merged[0].number_per_run == 1
    assert merged[0].raw_times == [0.5, 0.75, 0.5]
    assert merged[0].task_spec == spec


def test_merge_keeps_task_specs_apart_in_first_seen_order_and_drops_metadata():
    a, b = TaskSpec("x", "pass", env="a"), TaskSpec("x", "pass", env="b")
    ms = [Measurement(1, [1.0], b, {"k": 1}), Measurement(1, [2.0], a), Measurement(1, [3.0], b)]
    merged = Measurement.merge(ms)
    assert [m.task_spec for m in merged] == [b, a]
    assert merged[0].raw_times == [1.0, 3.0]
    assert merged[0].metadata is None


def test_merge_equals_torch(torch_benchmark):
    def make(lib):
        s1 = lib.TaskSpec("x", "pass", label="l", num_threads=1)
        s2 = lib.TaskSpec("x", "pass", label="l", num_threads=2)
        raw = [(s1, 10, [1e-5, 2e-5]), (s2, 1, [3e-6]), (s1, 100, [1e-4])]
        return lib.Measurement.merge([lib.Measurement(n, t, s) for s, n, t in raw])

    ours, theirs = make(ember.utils.benchmark), make(torch_benchmark)
    assert [(m.number_per_run, m.raw_times, m.num_threads) for m in ours] == [
        (m.number_per_run, m.raw_times, m.num_threads) for m in theirs
    ]


def test_measurement_pickles_with_its_statistics():
    m = Measurement(2, [1.0, 2.0, 4.0], TaskSpec("x", "pass", label="l"), metadata={"n": 3})
    m.median  # noqa: B018 - computed before pickling, as after a Timer run
    back = pickle.loads(pickle.dumps(m))
    assert back == m
    assert (back.median, back.label, back.metadata) == (1.0, "l", {"n": 3})


# --- helpers ------------------------------------------------------------------------------


def test_select_unit_brings_times_to_one_to_a_thousand():
    assert select_unit(2.5e-5) == ("us", 1e-6)
    assert select_unit(1e-6) == ("us", 1e-6)
    assert select_unit(3e-8) == ("ns", 1e-9)
    assert select_unit(0.02) == ("ms", 1e-3)
    assert select_unit(12.0) == ("s", 1)
    assert select_unit(5e-10) == ("s", 1)  # PyTorch's table has no unit below ns


def test_select_unit_equals_torch_at_unit_boundaries(torch_benchmark):
    for exponent in range(-12, 3):
        for factor in (1.0, 1 + 1e-7, 1 - 1e-7, 1.000001, 0.999999, 0.5, 2.0):
            t = factor * 10.0**exponent
            assert select_unit(t) == torch_benchmark.select_unit(t), t


def test_trim_sigfig_rounds_in_float32():
    assert trim_sigfig(123456, 2) == 120000.0
    assert trim_sigfig(3.14159, 2) == pytest.approx(3.1, rel=1e-7)
    assert trim_sigfig(0.0123456, 3) == pytest.approx(0.0123, rel=1e-7)


def test_trim_sigfig_equals_torch(torch_benchmark):
    for x in (3.14159, 123456, 0.0123456, 1e-7 * 1.000001, 0.10000001, 999.95, 1.0, 7.5):
        for n in (1, 2, 3, 4):
            assert trim_sigfig(x, n) == torch_benchmark.trim_sigfig(x, n), (x, n)


def test_trim_sigfig_rejects_fractional_figures():
    with pytest.raises(AssertionError, match="whole number"):
        trim_sigfig(1.0, 1.5)


def test_unit_to_english():
    assert [unit_to_english(u) for u in ("ns", "us", "ms", "s")] == [
        "nanosecond",
        "microsecond",
        "millisecond",
        "second",
    ]


def test_ordered_unique_keeps_first_seen_order():
    assert ordered_unique([3, 1, 3, 2, 1]) == [3, 1, 2]


def test_set_torch_threads_sets_and_restores_even_on_error():
    before = ember.get_num_threads()
    with pytest.raises(KeyError):
        with set_torch_threads(1):
            assert ember.get_num_threads() == 1
            raise KeyError
    assert ember.get_num_threads() == before
