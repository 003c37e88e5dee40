"""benchmarks/wide.py and harness.py: the workloads compute the same losses in ember and torch,
a disagreement or a failure is reported instead of timed, and a worker process returns its
times as JSON. No timing is asserted."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


@pytest.fixture(scope="module")
def wide():
    pytest.importorskip("torch")
    sys.path.insert(0, str(BENCHMARKS))
    try:
        import wide as module

        yield module
    finally:
        sys.path.remove(str(BENCHMARKS))


@pytest.mark.parametrize("name", ["mlp-b32", "hvp", "chain50-1e3", "embedding-sparse", "rnn"])
def test_small_workloads_agree_with_torch(wide, name):
    workload = wide.WORKLOADS[name]
    ok, verdict = wide.agreement(workload, workload.params, steps=2)
    assert ok, verdict
    assert verdict.startswith("agree (2 steps")


def test_readouts_are_real_losses(wide):
    import ember

    step = wide.WORKLOADS["mlp-b32"].build(ember, batch=32)
    step.run()
    first = step.readout()[0]
    for _ in range(5):
        step.run()
    # cross-entropy over 10 classes starts near log(10) and falls under SGD
    assert abs(first - math.log(10)) < 0.5
    assert step.readout()[0] < first


def test_disagreeing_workload_is_reported_not_timed(wide):
    from wide_workloads import Step

    def build(m):
        bias = 1.0 if m.__name__ == "ember" else 1.001
        return Step(lambda: None, lambda: [bias])

    bad = wide.Workload("bad", "differs by 1e-3", build)
    ok, verdict = wide.agreement(bad, {}, steps=1)
    assert not ok
    assert verdict.startswith("DISAGREE at step 1, readout 0: ember 1, torch 1.001")


def test_failing_build_is_reported(wide):
    from wide_workloads import Step

    def build(m):
        if m.__name__ == "ember":
            raise NotImplementedError("no such layer")
        return Step(lambda: None, lambda: [0.0])

    ok, verdict = wide.agreement(wide.Workload("fails", "", build), {}, steps=1)
    assert (ok, verdict) == (False, "ember failed: NotImplementedError: no such layer")


def test_worker_process_returns_times_as_json(wide):
    out = wide.harness.run_worker(
        "wide_workloads", "chain50-1", "ember", {"shape": [1], "ops": 50}, warmup=1, steps=3
    )
    assert "error" not in out, out
    assert len(out["times"]) == 3 and all(t > 0 for t in out["times"])
    assert out["median"] == sorted(out["times"])[1]
    # the build and the first call are timed apart from the steps
    assert out["build_s"] > 0 and out["first_call_s"] > 0
    assert len(out["readout"]) == 2


def test_worker_reports_an_unknown_workload(wide):
    out = wide.harness.run_worker("wide_workloads", "no-such", "ember", {}, warmup=0, steps=1)
    assert out["error"] == "KeyError: 'no-such'"


def test_comparison_row_gives_median_ratio_and_round_span(wide):
    row = wide.harness.Comparison("w", ("ember", "torch"), "separate processes")
    row.medians = {"ember": [2e-3, 3e-3, 4e-3], "torch": [2e-3, 2e-3, 2e-3]}
    row.check = "agree"
    assert row.row() == ["w", "3.00 ms", "2.00 ms", "1.50", "1.00–2.00", "3", "agree", ""]


def test_every_workload_builder_takes_its_parameters(wide):
    import inspect

    assert len(wide.WORKLOADS) == 40
    for name, workload in wide.WORKLOADS.items():
        assert workload.name == name
        inspect.signature(workload.build).bind(None, **workload.params)


def test_param_overrides_and_selection(wide):
    assert wide.overrides(["shape=16,512,512", "sparse=true", "mode=no_grad"]) == {
        "shape": [16, 512, 512],
        "sparse": True,
        "mode": "no_grad",
    }
    names = [w.name for w in wide.select("chain50-*,hvp")]
    assert names == ["chain50-1", "chain50-1e3", "chain50-1e5", "chain50-1e6", "hvp"]
    with pytest.raises(SystemExit, match="matches none of"):
        wide.select("no-such-*")


@pytest.mark.parametrize("name", ["glu", "logsigmoid", "maxpool2", "pad-reflect", "bilinear"])
def test_layer_workloads_agree_with_torch(wide, name):
    """The single-layer table (``wide.py --table layer_workloads``): both libraries compute the
    same output and input gradient from the same parameters."""
    import layer_workloads

    workload = layer_workloads.WORKLOADS[name]
    ok, verdict = wide.agreement(workload, workload.params, steps=1)
    assert ok, verdict
    assert wide.select("conv*", layer_workloads.WORKLOADS)[0].name == "conv3x3"
