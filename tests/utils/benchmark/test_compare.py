"""Compare: the tables for Measurements built from fixed raw times, checked as text (the
expected strings are PyTorch 2.13's output for the same data) and against torch directly."""

import random

import pytest

import ember
from ember.utils.benchmark import Compare, Measurement, TaskSpec
from ember.utils.benchmark.utils.compare import BEST, GOOD, VERY_BAD


def _m(lib, raw_times, number_per_run=1, stmt="x + y", **spec):
    return lib.Measurement(number_per_run, list(raw_times), lib.TaskSpec(stmt, "pass", **spec))


def _add_table(lib):
    return [
        _m(lib, [2.5e-6, 2.6e-6, 2.4e-6], label="add", sub_label="float", description="n=1"),
        _m(lib, [3.0e-6], label="add", sub_label="float", description="n=100"),
        _m(lib, [5.0e-6], label="add", sub_label="int", description="n=1"),
        _m(lib, [12.0e-6], label="add", sub_label="int", description="n=100"),
    ]


def _noisy_pair(lib):
    return [
        _m(lib, [2.5e-6] * 3 + [4e-6] * 2, label="add", sub_label="f", description="n=1"),
        _m(lib, [3.01e-6] * 5, label="add", sub_label="f", description="n=100"),
    ]


ADD_TABLE = (
    "[----------- add -----------]\n"
    "             |  n=1  |  n=100\n"
    "1 threads: ------------------\n"
    "      float  |  2.5  |    3.0\n"
    "      int    |  5.0  |   12.0\n"
    "\n"
    "Times are in microseconds (us).\n"
)


def test_table_has_rows_by_sub_label_and_columns_by_description():
    assert str(Compare(_add_table(ember.utils.benchmark))) == ADD_TABLE


def test_print_writes_the_table(capsys):
    Compare(_add_table(ember.utils.benchmark)).print()
    assert capsys.readouterr().out == ADD_TABLE + "\n"


def test_colorize_columnwise_marks_the_best_of_each_column():
    c = Compare(_add_table(ember.utils.benchmark))
    c.colorize()
    rows = str(c).splitlines()
    assert rows[3] == (
        "      float  |  \x1b[92m\x1b[1m2.5\x1b[0m\x1b[0m  |  \x1b[92m\x1b[1m  3.0\x1b[0m\x1b[0m"
    )
    assert rows[4] == (
        "      int    |  \x1b[2m\x1b[91m5.0\x1b[0m\x1b[0m  |  \x1b[2m\x1b[91m 12.0\x1b[0m\x1b[0m"
    )


def test_colorize_rowwise_compares_within_a_row():
    ms = [
        _m(ember.utils.benchmark, [1.0e-3], label="l", sub_label="r", description="a"),
        _m(ember.utils.benchmark, [1.05e-3], label="l", sub_label="r", description="b"),
        _m(ember.utils.benchmark, [6.0e-3], label="l", sub_label="r", description="c"),
    ]
    c = Compare(ms)
    c.colorize(rowwise=True)
    row = str(c).splitlines()[3]
    cells = row.split("  |  ")[1:]
    assert cells[0].startswith(BEST) and cells[1].startswith(GOOD) and cells[2].startswith(VERY_BAD)


def test_highlight_warnings_marks_noisy_cells_and_adds_the_legend():
    c = Compare(_noisy_pair(ember.utils.benchmark))
    c.highlight_warnings()
    assert str(c) == (
        "[------------- add -------------]\n"
        "         |      n=1      |  n=100\n"
        "1 threads: ----------------------\n"
        "      f  |  2.5 (! 60%)  |   3.0 \n"
        "\n"
        "Times are in microseconds (us).\n"
        "(! XX%) Measurement has high variance, where XX is the IQR / median * 100.\n"
    )


def test_trim_significant_figures_keeps_only_supported_digits():
    c = Compare(_noisy_pair(ember.utils.benchmark))
    c.trim_significant_figures()
    assert str(c).splitlines()[3] == "      f  |   2   |   3.0 "


def test_replicates_are_merged_into_one_cell():
    spec = TaskSpec("x + y", "pass", label="l", description="d")
    c = Compare([Measurement(1, [1e-6], spec), Measurement(2, [6e-6], spec)])
    assert str(c).splitlines()[3] == "      x + y  |  2.0"  # median of 1 and 3 us


def test_thread_counts_group_rows_under_rules():
    ms = [
        _m(ember.utils.benchmark, [t * 1e-6], label="l", description="d", num_threads=n)
        for n, t in [(4, 1.0), (1, 3.0)]
    ]
    lines = str(Compare(ms)).splitlines()
    assert lines[2].startswith("1 threads: ---") and lines[3].endswith("3.0")
    assert lines[4].startswith("4 threads: ---") and lines[5].endswith("1.0")


def test_envs_prefix_the_first_row_of_each_env():
    ms = [
        _m(ember.utils.benchmark, [1e-6], label="l", sub_label=s, description="d", env=env)
        for env in ("master", "branch")
        for s in ("a", "b")
    ]
    lines = str(Compare(ms)).splitlines()
    assert [line.split("|")[0].rstrip() for line in lines[3:7]] == [
        "  (branch)  a",
        "            b",
        "  (master)  a",
        "            b",
    ]


def test_a_mix_of_env_and_no_env_renders():
    # PyTorch 2.13 cannot sort None among env names (TypeError); ember puts None first
    ms = [
        _m(ember.utils.benchmark, [1e-6], label="l", description="d", env=env)
        for env in ("branch", None)
    ]
    lines = str(Compare(ms)).splitlines()
    assert [line.split("|")[0].rstrip() for line in lines[3:5]] == [
        "  (None)    x + y",
        "  (branch)  x + y",
    ]


def test_one_table_per_label_and_blank_cells_for_missing_results():
    ms = [
        _m(ember.utils.benchmark, [1e-3], label="first", sub_label="a", description="x"),
        _m(ember.utils.benchmark, [2e-3], label="first", sub_label="b", description="y"),
        _m(ember.utils.benchmark, [3e-3], label="second", description="x"),
    ]
    tables = str(Compare(ms)).split("\n[")
    assert len(tables) == 2
    assert "Times are in milliseconds (ms)." in tables[0]
    assert tables[0].splitlines()[3] == "      a  |  1.0  |     "


def test_extend_results_adds_measurements_and_rejects_others():
    c = Compare(_add_table(ember.utils.benchmark)[:2])
    c.extend_results(_add_table(ember.utils.benchmark)[2:])
    assert str(c) == ADD_TABLE
    with pytest.raises(ValueError, match="Expected an instance of `Measurement`"):
        c.extend_results([1.5])


def test_measurements_without_a_description_get_a_blank_header():
    # PyTorch 2.13 raises TypeError (len(None)) here; ember renders the table
    c = Compare([_m(ember.utils.benchmark, [2e-6], label="l")])
    assert str(c).splitlines()[1:4] == [
        "             |     ",
        "1 threads: --------",
        "      x + y  |  2.0",
    ]


# --- against torch ------------------------------------------------------------------------


def _scenario(lib, seed):
    """A reproducible mix: labels, envs, thread counts, missing cells, replicates, noise."""
    rng = random.Random(seed)
    envs = rng.choice([["master"], ["master", "my_branch"]])
    threads = rng.choice([[1], [1, 4], [4, 1, 2]])
    scale = 10 ** rng.uniform(-8.5, 0.5)
    out = []
    for label in rng.choice([["add"], ["add", "matmul"]]):
        for env in envs:
            for description in rng.choice([["n=1", "n=10", "n=100"], ["a", "a long column"]]):
                for sub_label in rng.choice([["float", "int"], ["float"]]):
                    for n in threads:
                        if rng.random() < 0.15:
                            continue
                        spread = rng.choice([0.001, 0.05, 0.3])
                        factor = rng.choice([1, 1.05, 1.5, 3, 10])
                        raw = [
                            scale * factor * (1 + spread * rng.random())
                            for _ in range(rng.choice([1, 3, 5, 20]))
                        ]
                        for _ in range(rng.choice([1, 2])):
                            out.append(
                                _m(
                                    lib,
                                    raw,
                                    rng.choice([1, 100]),
                                    label=label,
                                    sub_label=sub_label,
                                    description=description,
                                    env=env,
                                    num_threads=n,
                                )
                            )
    return out


OPTIONS = [
    (),
    ("trim",),
    ("colorize",),
    ("rowwise",),
    ("warnings",),
    ("trim", "warnings", "colorize"),
]


def _render(lib, seed, options):
    c = lib.Compare(_scenario(lib, seed))
    for option in options:
        if option == "trim":
            c.trim_significant_figures()
        elif option == "colorize":
            c.colorize()
        elif option == "rowwise":
            c.colorize(rowwise=True)
        elif option == "warnings":
            c.highlight_warnings()
    return str(c)


@pytest.mark.parametrize("options", OPTIONS, ids="-".join)
@pytest.mark.parametrize("seed", range(8))
def test_table_text_equals_torch(torch_benchmark, seed, options):
    assert _render(ember.utils.benchmark, seed, options) == _render(torch_benchmark, seed, options)


@pytest.mark.parametrize("options", OPTIONS, ids="-".join)
def test_fixed_tables_equal_torch(torch_benchmark, options):
    for build in (_add_table, _noisy_pair):
        ours, theirs = (
            Compare(build(ember.utils.benchmark)),
            torch_benchmark.Compare(build(torch_benchmark)),
        )
        for c in (ours, theirs):
            if "trim" in options:
                c.trim_significant_figures()
            if "colorize" in options or "rowwise" in options:
                c.colorize(rowwise="rowwise" in options)
            if "warnings" in options:
                c.highlight_warnings()
        assert str(ours) == str(theirs)
