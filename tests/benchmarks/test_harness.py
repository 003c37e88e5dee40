"""benchmarks/harness.py's machine description and benchmarks/training.py's quiet output."""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


@pytest.fixture(scope="module")
def harness():
    sys.path.insert(0, str(BENCHMARKS))
    try:
        import harness as module

        yield module
    finally:
        sys.path.remove(str(BENCHMARKS))


def test_busy_warning_names_the_load_and_the_cores(harness, monkeypatch):
    monkeypatch.setattr(harness.os, "sched_getaffinity", lambda pid: {0, 1})
    monkeypatch.setattr(harness.os, "getloadavg", lambda: (1.6, 1.0, 0.5))
    warning = harness.busy_warning()
    assert warning is not None
    assert "1.60" in warning and "2 usable cores" in warning and "noisy" in warning
    monkeypatch.setattr(harness.os, "getloadavg", lambda: (0.3, 1.0, 0.5))
    assert harness.busy_warning() is None


def test_headers_name_the_instruction_set(harness):
    found = harness.instruction_set()
    flags = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").exists() else ""
    if "avx512f" in flags:
        assert found == "avx512f"
    elif " avx2" in flags:
        assert found == "avx2"
    assert f"({found})" in harness.machine_info()


def test_training_benchmark_prints_no_compile_warning_for_the_short_last_batch(harness):
    import training

    import ember
    from ember._compile import CompileWarning

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        training.silence_expected_warnings()
        training.digits_epoch(ember, compiled=True)()
    assert [w for w in caught if issubclass(w.category, CompileWarning)] == []
    # without the filter the same epoch does warn: the test above can fail
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        training.digits_epoch(ember, compiled=True)()
    assert any(issubclass(w.category, CompileWarning) for w in caught)
