"""benchmarks/api_coverage.py: the coverage report runs, and the list of deliberate omissions
stays honest (each rule names something torch has and ember lacks)."""

from __future__ import annotations

import fnmatch
import importlib.util
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "api_coverage.py"


@pytest.fixture(scope="module")
def coverage():
    pytest.importorskip("torch")
    spec = importlib.util.spec_from_file_location("api_coverage", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules["api_coverage"] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def results(coverage):
    return {c.namespace: c for c in coverage.measure()}


def test_every_omission_rule_matches_a_torch_name_that_ember_lacks(coverage, results):
    for namespace, rules in coverage.load_omissions().items():
        assert namespace in results, f"unknown namespace {namespace!r} in api_omissions.txt"
        cov = results[namespace]
        for pattern, reason in rules:
            assert reason
            matched = [n for n in cov.omitted if fnmatch.fnmatchcase(n, pattern)]
            assert matched, f"{namespace} {pattern}: matches no torch name ember lacks (stale)"


def test_omissions_never_hide_a_name_ember_has(coverage, results):
    for namespace, rules in coverage.load_omissions().items():
        for name in results[namespace].present:
            hits = [p for p, _ in rules if fnmatch.fnmatchcase(name, p)]
            assert not hits, f"{namespace}.{name} is implemented but listed as omitted ({hits})"


def test_counts_add_up_and_common_names_are_present(results):
    torch_ns = results["torch"]
    assert torch_ns.total == len(set(torch_ns.present + torch_ns.missing + torch_ns.omitted))
    for name in ("tensor", "matmul", "cat", "manual_seed"):
        assert name in torch_ns.present
    assert "Linear" in results["nn"].present
    assert "cross_entropy" in results["nn.functional"].present


def test_malformed_omission_line_is_rejected(coverage, tmp_path):
    bad = tmp_path / "omissions.txt"
    bad.write_text("torch q_*\n")
    with pytest.raises(ValueError, match="expected 'namespace pattern  # reason'"):
        coverage.load_omissions(bad)


def test_table_has_a_row_per_namespace(coverage, results):
    text = coverage.table(list(results.values()))
    assert text.count("\n") == len(results) + 1
    assert "| torch | 728 |" in text or "| torch |" in text


# the breadth reached so far, as floors (percent of torch's names, omissions excluded)
FLOORS = {
    "torch": 95,
    "torch:classes": 100,
    "torch:constants": 100,
    "torch:modules": 70,
    "Tensor": 95,
    "nn": 100,
    "nn.functional": 100,
    "nn.init": 100,
    "nn.utils": 100,
    "optim": 100,
    "optim.lr_scheduler": 100,
    "linalg": 100,
    "autograd": 100,
    "cuda": 100,
    "fft": 100,
    "special": 100,
    "distributions": 100,
    "amp": 100,
    "utils.data": 100,
}


@pytest.mark.parametrize("namespace", sorted(FLOORS))
def test_coverage_does_not_fall_below_its_floor(results, namespace):
    cov = results[namespace]
    assert cov.percent >= FLOORS[namespace], (namespace, cov.missing)
