"""ember.profiler's tables (columns as PyTorch's, sorting, memory) and folded stacks."""

import re

import pytest

import ember
from ember import nn
from ember.profiler import profile, record_function

from .test_profiler import _mlp_step, _two_call_sites


def test_table_sorts_limits_and_totals():
    model, x, y = _mlp_step()
    with profile(profile_memory=True) as prof:
        nn.functional.cross_entropy(model(x), y).backward()
    table = prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=5)
    lines = table.splitlines()
    assert "Self CPU %" in lines[1] and "# of Calls" in lines[1] and "CPU Mem" in lines[1]
    assert len(lines) == 3 + 5 + 2
    assert lines[-1].startswith("Self CPU time total:")
    rows = sorted(prof.key_averages(), key=lambda a: a.self_cpu_time_total, reverse=True)
    assert lines[3].startswith(rows[0].key)
    by_count = prof.key_averages().table(sort_by="count", row_limit=1)
    most = max(prof.key_averages(), key=lambda a: a.count)
    assert by_count.splitlines()[3].split()[-1] == str(most.count)
    with pytest.raises(ValueError, match="sort_by"):
        prof.key_averages().table(sort_by="speed")


def _headers(table: str) -> list:
    return re.split(r"\s{2,}", table.splitlines()[1].strip())


def _recipe_model(nn_module):
    return nn_module.Sequential(nn_module.Linear(8, 32), nn_module.ReLU(), nn_module.Linear(32, 4))


def test_memory_columns_only_with_profile_memory():
    model, x, _ = _mlp_step()
    with profile() as prof:
        model(x)
    assert "CPU Mem" not in _headers(prof.key_averages().table())
    assert all(a.cpu_memory_usage == 0 for a in prof.key_averages())
    with profile(profile_memory=True) as prof:
        model(x)
    headers = _headers(prof.key_averages().table(sort_by="self_cpu_memory_usage"))
    assert headers[6:8] == ["CPU Mem", "Self CPU Mem"]
    relu = next(a for a in prof.key_averages() if a.key == "relu")
    assert relu.self_cpu_memory_usage == 16 * 32 * 4  # one float32 (16, 32) output


def test_recipe_table_columns_and_shape_groups_match_torch(torch_mod):
    from torch.profiler import ProfilerActivity as TorchActivity
    from torch.profiler import profile as torch_profile
    from torch.profiler import record_function as torch_record_function

    from ember.profiler import ProfilerActivity

    tables, groups = {}, {}
    runs = (
        ("ember", ember, profile, record_function, ProfilerActivity),
        ("torch", torch_mod, torch_profile, torch_record_function, TorchActivity),
    )
    for name, lib, profile_fn, record_fn, activity in runs:
        lib.manual_seed(0)
        model = _recipe_model(lib.nn)
        inputs = lib.randn(5, 8)
        with profile_fn(activities=[activity.CPU], record_shapes=True, profile_memory=True) as p:
            with record_fn("model_inference"):
                model(inputs)
        averages = p.key_averages(group_by_input_shape=True)
        tables[name] = averages.table(sort_by="cpu_time_total", row_limit=10)
        groups[name] = sorted(
            (a.key.removeprefix("aten::"), str(a.input_shapes), a.count)
            for a in averages
            if a.key.removeprefix("aten::") in ("linear", "model_inference")
        )
    assert _headers(tables["ember"]) == _headers(tables["torch"])
    assert _headers(tables["ember"])[-1] == "Input Shapes"
    assert groups["ember"] == groups["torch"]
    assert groups["ember"] == [
        ("linear", "[[5, 32], [4, 32], [4]]", 1),
        ("linear", "[[5, 8], [32, 8], [32]]", 1),
        ("model_inference", "[]", 1),
    ]


def test_export_stacks_writes_folded_stacks(tmp_path):
    model, x, _ = _mlp_step()
    with profile(with_stack=True) as prof:
        _two_call_sites(model, x)
    path = tmp_path / "profiler_stacks.txt"
    prof.export_stacks(str(path), "self_cpu_time_total")
    lines = path.read_text().splitlines()
    with_time = [e for e in prof.events() if e.stack and int(e.self_cpu_time_total) > 0]
    assert len(lines) == len(with_time) > 0
    for line, event in zip(lines, with_time):
        frames, value = line.rsplit(" ", 1)
        assert int(value) == int(event.self_cpu_time_total)
        assert " " not in frames
        assert frames.split(";")[-1] == event.stack[0].replace(" ", "_")  # innermost last
    with pytest.raises(ValueError, match="metric"):
        prof.export_stacks(str(path), "count")


def test_export_stacks_without_with_stack_writes_nothing(tmp_path):
    with profile() as prof:
        ember.ones(3)
    path = tmp_path / "stacks.txt"
    prof.export_stacks(str(path))
    assert path.read_text() == ""
