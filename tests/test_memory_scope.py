"""ember.memory_scope and ember.autograd.graph.saved_tensors_bytes."""

import numpy as np

import ember
from ember import nn
from ember.autograd.graph import saved_tensors_bytes


def test_counts_allocations_frees_and_peak_of_plain_ops():
    with ember.memory_scope() as mem:
        a = ember.zeros(1000)  # 4000 bytes, kept
        b = a + 1  # 4000 bytes, freed below
        c = b * 2  # 4000 bytes, freed below
        del b, c
    assert mem.allocated == 12000
    assert mem.freed == 8000
    assert mem.peak == 12000
    assert [t.shape for t in mem.alive] == [(1000,)]
    assert mem.alive[0].name == "a"


def test_views_add_no_bytes():
    base = ember.zeros(10, 10)
    with ember.memory_scope() as mem:
        v = base[2:5]
        w = base.t()
        d = base.detach()
        assert v.shape == (3, 10) and w.shape == (10, 10) and d.shape == (10, 10)
    assert mem.allocated == 0
    assert mem.peak == 0


def test_peak_tracks_the_largest_live_total():
    with ember.memory_scope() as mem:
        for _ in range(3):
            big = ember.ones(250_000)  # 1 MB each, the previous one freed on rebinding
        del big
    assert mem.allocated == 3_000_000
    assert mem.freed == 3_000_000
    assert mem.peak == 2_000_000  # the new buffer exists before the old name lets go


def _step_model():
    ember.manual_seed(0)
    model = nn.Sequential(nn.Linear(20, 64), nn.ReLU(), nn.Linear(64, 1))
    opt = ember.optim.SGD(model.parameters(), lr=0.01)
    return model, opt, ember.randn(32, 20), ember.randn(32, 1)


def test_classic_leak_is_reported_and_float_fixes_it(capsys):
    model, opt, x, y = _step_model()
    with ember.memory_scope(report=True) as leaky:
        total_loss = 0
        for _ in range(4):
            opt.zero_grad()
            loss = nn.functional.mse_loss(model(x), y)
            loss.backward()
            opt.step()
            total_loss += loss
    report = capsys.readouterr().err
    held = {g.name: g for g in leaky.graphs}
    assert "total_loss" in held
    # four steps' graphs (the last step's is alive anyway) chained by additions: checked
    # against a single step's graph below
    assert "total_loss (AddBackward0) holds a backward graph" in report
    assert "float(loss)" in report

    with ember.memory_scope(report=True) as fixed:
        total = 0.0
        for _ in range(4):
            opt.zero_grad()
            loss = nn.functional.mse_loss(model(x), y)
            loss.backward()
            opt.step()
            total += float(loss)
    assert "total_loss" not in {g.name for g in fixed.graphs}
    # only the last step's loss is alive, with its single-step graph
    assert [g.name for g in fixed.graphs] == ["loss"]
    assert 2 * fixed.graphs[0].nodes < held["total_loss"].nodes  # leaves are shared
    assert isinstance(total, float)


def test_saved_tensors_are_attributed_to_the_graph_holding_them():
    model, _, x, y = _step_model()
    with ember.memory_scope() as mem:
        total_loss = 0
        for _ in range(2):
            total_loss = total_loss + nn.functional.mse_loss(model(x), y)  # no backward
    (graph,) = mem.graphs
    assert graph.name == "total_loss"
    assert graph.saved_bytes == saved_tensors_bytes(total_loss)
    hidden = [a for a in mem.alive if a.shape == (32, 64)]
    assert len(hidden) == 2
    assert all("in the graph held by total_loss" in a.held_by for a in hidden)


def test_saved_tensors_bytes_counts_each_buffer_once_and_drops_after_backward():
    x = ember.randn(1000, requires_grad=True)  # float32: 4000 bytes
    y = (x * x).tanh()  # mul saves x twice (one buffer); tanh saves its output
    assert saved_tensors_bytes(y) == 8000
    z = y.sum()
    assert saved_tensors_bytes(z) == 8000
    z.backward()
    assert saved_tensors_bytes(z) == 0


def test_saved_tensors_bytes_of_a_leaf_or_plain_tensor_is_zero():
    assert saved_tensors_bytes(ember.ones(3)) == 0
    assert saved_tensors_bytes(ember.ones(3, requires_grad=True)) == 0


def test_backward_allocations_are_counted():
    x = ember.randn(500, 500, requires_grad=True)
    with ember.memory_scope() as mem:
        (x @ x).sum().backward()
    assert x.grad is not None
    # the product (1 MB) and the gradient of x (1 MB) at least
    assert mem.allocated >= 2 * 500 * 500 * 4
    assert any(a.shape == (500, 500) for a in mem.alive)  # x.grad is still alive
    np.testing.assert_array_equal(x.grad.shape, (500, 500))
