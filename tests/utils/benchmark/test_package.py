"""The ember.utils.benchmark namespace: lazily loaded, laid out as torch.utils.benchmark,
docstring examples that run, and a benchmark program that runs unchanged under both."""

import doctest
import importlib
import re
import subprocess
import sys
import types
from pathlib import Path

import pytest

import ember

HERE = Path(__file__).parent
MODULES = [
    "ember.utils.benchmark",
    "ember.utils.benchmark.utils.common",
    "ember.utils.benchmark.utils.compare",
    "ember.utils.benchmark.utils.fuzzer",
    "ember.utils.benchmark.utils.sparse_fuzzer",
    "ember.utils.benchmark.utils.timer",
]
PUBLIC = [
    "Colorize",
    "Compare",
    "FuzzedParameter",
    "FuzzedSparseTensor",
    "FuzzedTensor",
    "Fuzzer",
    "Language",
    "Measurement",
    "ParameterAlias",
    "TaskSpec",
    "Timer",
    "ordered_unique",
    "select_unit",
    "set_torch_threads",
    "timer",
    "trim_sigfig",
    "unit_to_english",
]


def test_import_ember_does_not_load_benchmark():
    code = "import sys, ember; print('ember.utils.benchmark' in sys.modules)"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    assert out.stdout.strip() == "False"


def test_benchmark_is_an_attribute_of_ember_utils():
    assert ember.utils.benchmark is importlib.import_module("ember.utils.benchmark")
    with pytest.raises(AttributeError, match="has no attribute 'nope'"):
        ember.utils.nope  # noqa: B018


def test_public_names_and_module_layout():
    from ember.utils.benchmark.utils.common import Measurement
    from ember.utils.benchmark.utils.compare import Compare
    from ember.utils.benchmark.utils.fuzzer import Fuzzer
    from ember.utils.benchmark.utils.timer import Timer

    b = ember.utils.benchmark
    assert sorted(b.__all__) == PUBLIC
    assert (b.Measurement, b.Compare, b.Fuzzer, b.Timer) == (Measurement, Compare, Fuzzer, Timer)
    assert callable(b.timer) and isinstance(b.utils, types.ModuleType)


def test_public_names_exist_in_torch(torch_benchmark):
    missing = [name for name in PUBLIC if not hasattr(torch_benchmark, name)]
    assert missing == []


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_run(name):
    module = importlib.import_module(name)
    finder = doctest.DocTestFinder()
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    tests = [t for t in finder.find(module, name) if t.examples]
    assert tests, f"{name} has no examples"
    for test in tests:
        runner.run(test)
    assert runner.failures == 0, f"{runner.failures} failing examples in {name}"


def _load_program(library: str) -> types.ModuleType:
    source = (HERE / "timing_program.py").read_text()
    if library == "torch":
        pytest.importorskip("torch")
        source = source.replace("ember", "torch")
    module = types.ModuleType(f"timing_program_{library}")
    exec(compile(source, str(HERE / "timing_program.py"), "exec"), module.__dict__)
    return module


def _shape_of_table(table: str) -> list[str]:
    """The table's text with colors dropped, times as #, and padding and rules collapsed."""
    plain = re.sub(r"\x1b\[[0-9;]*m", "", table)
    plain = re.sub(r"Times are in \w+ \(\w+\)", "Times are in <unit>", plain)
    plain = re.sub(r"(?<![=\w])\d+(\.\d+)?", "#", plain)
    return [" ".join(line.replace("-", " ").split()) for line in plain.split("\n")]


def test_program_runs_with_ember():
    results, single, adaptive, table, fuzzed = _load_program("ember").main()
    assert len(results) == 8
    assert all(type(m) is ember.utils.benchmark.Measurement for m in results)
    assert {(m.sub_label, m.description, m.num_threads) for m in results} == {
        (s, f"n={n}", t) for s in ("add", "matmul") for n in (1, 32) for t in (1, 2)
    }
    assert (single.number_per_run, len(single.raw_times)) == (100, 1)
    assert adaptive.median > 0
    lines = table.splitlines()
    assert lines[0].startswith("[") and " elementwise vs matmul " in lines[0]
    assert "n=1" in lines[1] and "n=32" in lines[1]
    assert [line for line in lines if "threads:" in line][0].startswith("1 threads: ")
    assert lines[-1].startswith("Times are in ")
    assert [k for k, _, _ in fuzzed] == [k for k, _, _ in _load_program("ember").main()[4]]


def test_program_gives_torchs_kinds_of_results(torch_benchmark):
    ours = _load_program("ember").main()
    theirs = _load_program("torch").main()
    results_ours, results_theirs = ours[0], theirs[0]
    assert [(m.label, m.sub_label, m.description, m.num_threads) for m in results_ours] == [
        (m.label, m.sub_label, m.description, m.num_threads) for m in results_theirs
    ]
    assert (ours[1].number_per_run, len(ours[1].raw_times)) == (
        theirs[1].number_per_run,
        len(theirs[1].raw_times),
    )
    assert _shape_of_table(ours[3]) == _shape_of_table(theirs[3])
    assert ours[4] == theirs[4]  # same fuzzed sizes and layouts from the same seed
