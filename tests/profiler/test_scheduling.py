"""ember.profiler.schedule, profile.step, on_trace_ready and tensorboard_trace_handler."""

import json
import warnings

import pytest

import ember
from ember import nn
from ember.profiler import ProfilerAction, profile, schedule, tensorboard_trace_handler


def _model_and_input():
    ember.manual_seed(0)
    return nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 4)), ember.randn(5, 8)


def _handler_calls(profiler, model, x, steps: int, **schedule_args) -> list:
    """(step number, linear calls, steps) recorded at each on_trace_ready call."""
    calls = []

    def trace_handler(prof):
        linear = [a.count for a in prof.key_averages() if a.key in ("linear", "aten::linear")]
        steps = [a.count for a in prof.key_averages() if a.key == "ProfilerStep*"]
        calls.append((prof.step_num, sum(linear), sum(steps)))

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # warmup=0 warns in both libraries; torch's cycles too
        my_schedule = profiler.schedule(**schedule_args)
        with profiler.profile(schedule=my_schedule, on_trace_ready=trace_handler) as prof:
            for _ in range(steps):
                model(x)
                prof.step()
    return calls


def test_schedule_actions_per_step():
    my_schedule = schedule(wait=1, warmup=1, active=2, repeat=1)
    actions = [my_schedule(step) for step in range(6)]
    assert actions == [
        ProfilerAction.NONE,
        ProfilerAction.WARMUP,
        ProfilerAction.RECORD,
        ProfilerAction.RECORD_AND_SAVE,
        ProfilerAction.NONE,
        ProfilerAction.NONE,
    ]
    skipping = schedule(wait=0, warmup=1, active=1, skip_first=2)
    assert [skipping(s).name for s in range(5)] == [
        "NONE",
        "NONE",
        "WARMUP",
        "RECORD_AND_SAVE",
        "WARMUP",
    ]


def test_schedule_rejects_bad_lengths_and_warns_without_warmup():
    with pytest.raises(ValueError, match="active=0"):
        schedule(wait=1, warmup=1, active=0)
    with pytest.warns(UserWarning, match="warmup"):
        schedule(wait=1, warmup=0, active=1)


def test_trace_handler_gets_each_active_cycle():
    model, x = _model_and_input()
    calls = _handler_calls(ember.profiler, model, x, 8, wait=1, warmup=1, active=2, repeat=1)
    # steps 2 and 3 are recorded: two forward passes of two Linear layers
    assert calls == [(4, 4, 2)]
    calls = _handler_calls(ember.profiler, model, x, 9, wait=1, warmup=1, active=2)
    assert calls == [(4, 4, 2), (8, 4, 2)]


def test_stop_inside_an_active_cycle_hands_it_over():
    model, x = _model_and_input()
    assert _handler_calls(ember.profiler, model, x, 3, wait=1, warmup=1, active=2) == [(3, 2, 2)]


def test_no_schedule_records_everything_and_calls_the_handler_once():
    model, x = _model_and_input()
    seen = []
    with profile(on_trace_ready=lambda p: seen.append(p.step_num)) as prof:
        for _ in range(3):
            model(x)
            prof.step()
    assert seen == [3]
    assert not any(a.key == "ProfilerStep*" for a in prof.key_averages())  # only with a schedule
    assert next(a for a in prof.key_averages() if a.key == "linear").count == 6


def test_ops_run_untimed_outside_active_steps():
    model, x = _model_and_input()
    relu = nn.functional.relu
    code = relu.__code__
    my_schedule = schedule(wait=2, warmup=1, active=1, repeat=1)
    with profile(schedule=my_schedule) as prof:
        assert relu.__code__ is code  # waiting: nothing patched
        for _ in range(3):
            prof.step()
        assert relu.__code__ is not code  # active
        model(x)
        prof.step()
        assert relu.__code__ is code
    assert [a.count for a in prof.key_averages() if a.key == "relu"] == [1]


@pytest.mark.parametrize(
    "steps, schedule_args",
    [
        (8, dict(wait=1, warmup=1, active=2, repeat=1)),
        (9, dict(wait=1, warmup=1, active=2)),
        (3, dict(wait=1, warmup=1, active=2)),
        (7, dict(wait=0, warmup=0, active=1, repeat=3)),
        (10, dict(wait=1, warmup=1, active=3, skip_first=2)),
    ],
)
def test_handler_steps_and_counts_match_torch(torch_mod, steps, schedule_args):
    model, x = _model_and_input()
    ours = _handler_calls(ember.profiler, model, x, steps, **schedule_args)
    torch_model = torch_mod.nn.Sequential(
        torch_mod.nn.Linear(8, 32), torch_mod.nn.ReLU(), torch_mod.nn.Linear(32, 4)
    )
    theirs = _handler_calls(
        torch_mod.profiler, torch_model, torch_mod.randn(5, 8), steps, **schedule_args
    )
    assert ours == theirs
    assert len(ours) >= 1


def test_tensorboard_trace_handler_writes_one_trace_per_cycle(tmp_path):
    model, x = _model_and_input()
    log_dir = tmp_path / "log"
    with profile(
        schedule=schedule(wait=1, warmup=1, active=1, repeat=2),
        on_trace_ready=tensorboard_trace_handler(str(log_dir), worker_name="worker0"),
    ) as prof:
        for _ in range(7):
            model(x)
            prof.step()
    files = sorted(log_dir.iterdir())
    assert len(files) == 2
    for path in files:
        assert path.name.startswith("worker0.") and path.name.endswith(".pt.trace.json")
        events = json.loads(path.read_text())["traceEvents"]
        assert sum(e["name"] == "linear" for e in events) == 2  # one forward pass per cycle
        assert sum(e["name"].startswith("ProfilerStep#") for e in events) == 1
