"""ember.profiler.profile: counts, forward/backward events, bytes, shapes, stacks, Chrome trace."""

import json

import pytest

import ember
from ember import nn
from ember.profiler import profile, record_function


def _mlp_step(batch=16):
    ember.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 4))
    x = ember.randn(batch, 8)
    y = ember.randint(0, 4, (batch,))
    return model, x, y


def test_counts_forward_ops_and_backward_nodes():
    model, x, y = _mlp_step()
    with profile() as prof:
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
    averages = {(a.key, a.kind): a for a in prof.key_averages()}
    assert averages[("linear", "forward")].count == 2
    assert averages[("relu", "forward")].count == 1
    assert averages[("cross_entropy", "forward")].count == 1
    assert averages[("AddmmBackward0", "backward")].count == 2
    assert averages[("ReluBackward0", "backward")].count == 1
    assert averages[("ember::autograd::AccumulateGrad", "backward")].count == 4
    for a in averages.values():
        assert a.cpu_time_total >= a.self_cpu_time_total >= 0


def test_nested_ops_are_children_and_times_add_up():
    model, x, y = _mlp_step()
    with profile() as prof:
        nn.functional.cross_entropy(model(x), y)
    events = prof.events()
    ce = next(e for e in events if e.name == "cross_entropy")
    inside = [
        e for e in events if ce.start_ns <= e.start_ns and e.end_ns <= ce.end_ns and e is not ce
    ]
    assert {"log_softmax", "nll_loss"} <= {e.name for e in inside}
    direct = [e for e in inside if e.depth == ce.depth + 1]
    assert ce.child_ns == sum(e.end_ns - e.start_ns for e in direct)


def test_bytes_are_attributed_to_the_op_that_allocates():
    x = ember.ones(1000, requires_grad=True)
    with profile(profile_memory=True) as prof:
        y = x * 2.0  # a new float32 buffer of 4000 bytes
        z = y.view(10, 100)  # a view: no bytes
        z.sum().backward()
    top = {e.name: e for e in prof.events() if e.depth == 0}
    assert top["mul"].self_cpu_memory_usage == 4000
    assert top["view"].self_cpu_memory_usage == 0
    # backward: the gradient of mul (g * 2.0) is computed inside MulBackward0.s event
    backward_mul = next(e for e in prof.events() if e.name == "mul" and e.depth == 1)
    assert backward_mul.self_cpu_memory_usage == 4000
    assert top["MulBackward0"].cpu_memory_usage == 4000


def test_record_shapes_groups_by_input_shape():
    a, b = ember.ones(2, 3), ember.ones(4, 3)
    with profile(record_shapes=True) as prof:
        a + a
        b + b
        b + b
    groups = {
        (g.key, g.input_shapes): g.count for g in prof.key_averages(group_by_input_shape=True)
    }
    assert groups[("add", "[[2, 3], [2, 3]]")] == 1
    assert groups[("add", "[[4, 3], [4, 3]]")] == 2


def test_record_function_labels_a_block():
    with profile() as prof:
        with record_function("data"):
            ember.randn(10)
        ember.ones(3)
    events = {e.name: e for e in prof.events()}
    assert events["data"].kind == "user"
    assert events["randn"].depth == events["data"].depth + 1
    assert events["ones"].depth == 0


def test_chrome_trace_is_valid_json_with_complete_events(tmp_path):
    model, x, y = _mlp_step()
    with profile() as prof:
        nn.functional.cross_entropy(model(x), y).backward()
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(str(path))
    trace = json.loads(path.read_text())
    events = trace["traceEvents"]
    assert len(events) == len(prof.events())
    assert {e["ph"] for e in events} == {"X"}
    assert {"forward", "backward"} <= {e["cat"] for e in events}
    assert all(e["dur"] >= 0 and e["ts"] >= 0 for e in events)


def test_ops_are_restored_after_the_profile_even_on_error():
    code = ember.add.__code__
    with pytest.raises(RuntimeError, match="must match"):
        with profile() as prof:
            ember.ones(2) + ember.ones(3)  # a shape error inside the profile
    assert ember.add.__code__ is code
    assert (ember.ones(2) + 1).tolist() == [2.0, 2.0]
    assert any(e.name == "add" for e in prof.events())


def test_one_profile_at_a_time():
    with profile():
        with pytest.raises(RuntimeError, match="already enabled"):
            with profile():
                pass


def test_profiled_results_equal_unprofiled_results():
    model, x, y = _mlp_step()
    loss = nn.functional.cross_entropy(model(x), y)
    loss.backward()
    plain = [p.grad.clone() for p in model.parameters()]
    model.zero_grad()
    with profile():
        loss2 = nn.functional.cross_entropy(model(x), y)
        loss2.backward()
    assert loss2.item() == loss.item()
    for p, g in zip(model.parameters(), plain):
        assert ember.equal(p.grad, g)


def _two_call_sites(model, x):
    model(x)  # first call site
    model(x)  # second call site


def test_with_stack_records_frames_and_groups_by_stack_n():
    model, x, _ = _mlp_step()
    with profile(with_stack=True) as prof:
        _two_call_sites(model, x)
    linear = [e for e in prof.events() if e.name == "linear"]
    assert len(linear) == 4
    assert "linear.py" in linear[0].stack[0] and linear[0].stack[0].endswith(": forward")
    assert any(frame.endswith(": _two_call_sites") for frame in linear[0].stack)
    by_site = [a for a in prof.key_averages(group_by_stack_n=5) if a.key == "linear"]
    # the two layers run the same lines (Sequential's loop), so one row per call site
    assert [a.count for a in by_site] == [2, 2]
    by_layer = [a for a in prof.key_averages(group_by_stack_n=1) if a.key == "linear"]
    assert len(by_layer) == 1 and by_layer[0].count == 4  # both layers run linear.py's line
    table = prof.key_averages(group_by_stack_n=5).table(sort_by="self_cpu_time_total")
    assert table.splitlines()[1].rstrip().endswith("Source Location")
    assert "_two_call_sites" in table
    assert len(prof.key_averages().table().splitlines()) < len(table.splitlines())
