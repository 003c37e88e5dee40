"""DDP options on 2 ranks: gradient_as_bucket_view, static_graph, find_unused_parameters,
broadcast_buffers and the device checks."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import ember
import ember.distributed as dist
import ember.nn as nn
import ember.nn.functional as F
from ember.distributed.algorithms.ddp_comm_hooks import default_hooks
from ember.nn.parallel import DistributedDataParallel as DDP
from ember.nn.parallel import distributed as ddp_module

from ._harness import (
    WORLD_SIZE,
    assert_case,
    collect_cases,
    share,
    spawn_world,
    tiny_model,
    whole_batch,
)


def _train(rank: int, steps: int = 5, set_to_none: bool = True, **options) -> nn.Module:
    ddp = DDP(tiny_model(100 * rank), bucket_cap_mb=0.0003, **options)
    opt = ember.optim.SGD(ddp.parameters(), lr=0.1, momentum=0.9)
    for step in range(steps):
        x, y = whole_batch(step)
        opt.zero_grad(set_to_none=set_to_none)
        F.mse_loss(ddp(share(x, rank)), share(y, rank)).backward()
        opt.step()
    return ddp.module


def _reference(steps: int = 5) -> nn.Module:
    model = tiny_model(0)
    opt = ember.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    for step in range(steps):
        x, y = whole_batch(step)
        opt.zero_grad()
        F.mse_loss(model(x), y).backward()
        opt.step()
    return model


def _params(model: nn.Module) -> list[np.ndarray]:
    return [p.detach().numpy() for p in model.parameters()]


def case_bucket_view_trains_exactly_as_copies(rank):
    copies = _params(_train(rank))
    for set_to_none in (True, False):
        views = _params(_train(rank, gradient_as_bucket_view=True, set_to_none=set_to_none))
        for a, b in zip(views, copies):
            np.testing.assert_array_equal(a, b)
    for a, b in zip(copies, _params(_reference())):
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-12)


def case_grads_are_views_into_the_bucket_buffers(rank):
    ddp = DDP(tiny_model(0), bucket_cap_mb=0.0003, gradient_as_bucket_view=True)
    x, y = whole_batch()
    F.mse_loss(ddp(share(x, rank)), share(y, rank)).backward()
    for bucket in ddp._buckets:
        for p in bucket.params:
            assert np.shares_memory(p.grad.numpy(), bucket.flat)
    first = [p.grad for p in ddp.parameters()]
    ddp.zero_grad(set_to_none=False)  # zeroed in place: still the views
    assert all(p.grad is g and not g.numpy().any() for p, g in zip(ddp.parameters(), first))
    F.mse_loss(ddp(share(x, rank)), share(y, rank)).backward()
    assert all(p.grad is g for p, g in zip(ddp.parameters(), first))
    ddp.zero_grad()  # set_to_none: the next backward makes them views again
    assert all(p.grad is None for p in ddp.parameters())
    F.mse_loss(ddp(share(x, rank)), share(y, rank)).backward()
    for bucket in ddp._buckets:
        assert all(np.shares_memory(p.grad.numpy(), bucket.flat) for p in bucket.params)
    reference = tiny_model(0)
    F.mse_loss(reference(x), y).backward()
    for p, q in zip(ddp.parameters(), reference.parameters()):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-12, atol=1e-14)


def case_bucket_view_with_no_sync_and_a_hook(rank):
    x, y = whole_batch()
    for hook in (None, default_hooks.allreduce_hook):
        ddp = DDP(tiny_model(0), bucket_cap_mb=0.0003, gradient_as_bucket_view=True)
        if hook is not None:
            ddp.register_comm_hook(None, hook)
        mine_x, mine_y = share(x, rank), share(y, rank)
        with ddp.no_sync():
            F.mse_loss(ddp(mine_x[:2]), mine_y[:2]).backward()
        F.mse_loss(ddp(mine_x[2:]), mine_y[2:]).backward()
        reference = tiny_model(0)
        (2 * F.mse_loss(reference(x), y)).backward()
        for p, q in zip(ddp.parameters(), reference.parameters()):
            np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-10, atol=1e-12)


class _Branches(nn.Module):
    """Two heads; ``forward`` uses the one it is told to."""

    def __init__(self):
        super().__init__()
        ember.manual_seed(3)
        self.trunk, self.a, self.b = nn.Linear(3, 4), nn.Linear(4, 2), nn.Linear(4, 2)
        self.double()

    def forward(self, x, head: str = "a"):
        return getattr(self, head)(self.trunk(x).tanh())


def case_static_graph_finds_unused_parameters_once(rank):
    ddp = DDP(_Branches(), static_graph=True)
    assert ddp.static_graph
    walks = []
    real_walk = ddp_module._leaves_reached
    ddp_module._leaves_reached = lambda out: (walks.append(1), real_walk(out))[1]
    try:
        x = ember.ones(2, 3, dtype=ember.float64) * (rank + 1)
        for _ in range(3):
            ddp.zero_grad()
            ddp(x).sum().backward()
    finally:
        ddp_module._leaves_reached = real_walk
    assert len(walks) == 1  # the first iteration only
    assert ddp.module.b.weight.grad is None and ddp.module.b.bias.grad is None
    # d/db sum(a(h)) over 2 rows is 2 per rank: averaged, still 2
    assert ddp.module.a.bias.grad.tolist() == [2.0, 2.0]
    with pytest.warns(UserWarning, match="no need to set it again"):
        ddp._set_static_graph()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        DDP(_Branches(), find_unused_parameters=True)._set_static_graph()
    assert any("will detect unused parameters automatically" in str(w.message) for w in caught)


def case_find_unused_parameters_each_iteration(rank):
    ddp = DDP(_Branches(), find_unused_parameters=True)
    x = ember.ones(2, 3, dtype=ember.float64)
    for head in ("a", "b", "a"):
        ddp.zero_grad()
        ddp(x, head).sum().backward()
        unused = "b" if head == "a" else "a"
        assert getattr(ddp.module, unused).weight.grad is None
        assert getattr(ddp.module, head).bias.grad.tolist() == [2.0, 2.0]
    # a head used on rank 0 only: its gradient is rank 0's divided by the world size
    ddp.zero_grad()
    ddp(x, "a" if rank == 0 else "b").sum().backward()
    assert ddp.module.a.bias.grad.tolist() == [1.0, 1.0]
    assert ddp.module.b.bias.grad.tolist() == [1.0, 1.0]


def case_buffers_are_broadcast_from_rank_0_at_every_forward(rank):
    for broadcast in (True, False):
        model = nn.Sequential(nn.Linear(4, 4), nn.BatchNorm1d(4)).double()
        ddp = DDP(model, broadcast_buffers=broadcast)
        model[1].running_mean.fill_(float(rank + 1))
        ddp.eval()
        with ember.no_grad():
            ddp(ember.ones(2, 4, dtype=ember.float64))
        expected = 1.0 if broadcast else float(rank + 1)
        assert model[1].running_mean.tolist() == [expected] * 4


def case_device_ids_of_a_cpu_module_raise_torchs_error(rank):
    with pytest.raises(ValueError, match="device_ids and output_device arguments only work"):
        DDP(tiny_model(0), device_ids=[0])
    with pytest.raises(ValueError, match="device_ids can only be None or contain a single"):
        DDP(tiny_model(0), device_ids=[0, 1])
    ddp = DDP(tiny_model(0), device_ids=[], output_device=None)
    assert ddp.device_ids is None and ddp.output_device is None
    assert ddp.device.type == "cpu"


def case_require_backward_grad_sync_is_what_no_sync_sets(rank):
    ddp = DDP(tiny_model(0))
    assert ddp.require_backward_grad_sync
    with ddp.no_sync():
        assert not ddp.require_backward_grad_sync
    assert ddp.require_backward_grad_sync
    ddp.require_backward_grad_sync = False  # set by hand, as some training loops do
    x, y = whole_batch()
    F.mse_loss(ddp(share(x, rank)), share(y, rank)).backward()
    everyone = [None] * WORLD_SIZE
    dist.all_gather_object(everyone, next(iter(ddp.parameters())).grad.tolist())
    assert everyone[0] != everyone[1]  # not synchronised


def case_half_precision_gradients_are_averaged(rank):
    for dtype in (ember.float16, ember.bfloat16):
        ember.manual_seed(0)
        ddp = DDP(nn.Linear(4, 2).to(dtype))
        x = ember.ones(3, 4, dtype=dtype) * (rank + 1)
        ddp(x).sum().backward()  # d/dW = 3 (rank + 1) per entry: averaged, 4.5
        assert ddp.module.weight.grad.dtype == dtype
        assert ddp.module.weight.grad.float().tolist() == [[4.5] * 4] * 2
        assert ddp.module.bias.grad.float().tolist() == [3.0, 3.0]


def case_join_context_over_ddp_equals_ddp_join(rank):
    from ember.distributed.algorithms import Join

    finals = []
    for use_join_class in (False, True):
        ddp = DDP(tiny_model(100 * rank), bucket_cap_mb=0.0003)
        opt = ember.optim.SGD(ddp.parameters(), lr=0.1)
        context = Join([ddp], divide_by_initial_world_size=False) if use_join_class else None
        with context or ddp.join(divide_by_initial_world_size=False):
            for step in range(3 - rank):
                x, y = whole_batch(step)
                opt.zero_grad()
                F.mse_loss(ddp(share(x, rank)), share(y, rank)).backward()
                opt.step()
        finals.append(_params(ddp.module))
    for a, b in zip(*finals):
        np.testing.assert_array_equal(a, b)
    assert ddp.join_process_group is dist.group.WORLD and ddp.join_device.type == "cpu"
    assert ddp.join_hook(divide_by_initial_world_size=False).divide_by_initial_world_size is False


def case_join_with_a_joinable_of_ones_own(rank):
    from ember.distributed.algorithms import Join, Joinable, JoinHook

    class Counter(Joinable):
        """Sums, each iteration, a 1 from every rank that still has data."""

        def __init__(self):
            super().__init__()
            self.sums, self.last = [], None

        def step(self):
            Join.notify_join_context(self)
            t = ember.ones(1)
            dist.all_reduce(t)
            self.sums.append(t.item())

        def join_hook(self, **kwargs):
            counter = self

            class Hook(JoinHook):
                def main_hook(self):
                    dist.all_reduce(ember.zeros(1))  # shadows step()'s allreduce

                def post_hook(self, is_last_joiner):
                    counter.last = is_last_joiner

            return Hook()

        join_device = property(lambda self: ember.device("cpu"))
        join_process_group = property(lambda self: dist.group.WORLD)

    counter = Counter()
    with Join([counter]):
        for _ in range(3 - 2 * rank):  # rank 0: 3 iterations, rank 1: 1
            counter.step()
    assert counter.sums == ([2.0, 1.0, 1.0] if rank == 0 else [2.0])
    assert counter.last is (rank == 0)
    thrower = Counter()
    expected = "Detected at least one rank" if rank == 0 else "Rank 1 exhausted all inputs"
    with pytest.raises(RuntimeError, match=expected):
        with Join([thrower], throw_on_early_termination=True):
            for _ in range(3 - 2 * rank):
                thrower.step()
    with pytest.raises(ValueError, match="at least one joinable"):
        Join([])


def case_ddp_logging_data(rank):
    ddp = DDP(tiny_model(0), bucket_cap_mb=0.0003, gradient_as_bucket_view=True)
    ddp.register_comm_hook(None, default_hooks.allreduce_hook)
    x, y = whole_batch()
    F.mse_loss(ddp(share(x, rank)), share(y, rank)).backward()
    data = ddp._get_ddp_logging_data()
    assert data["world_size"] == 2 and data["rank"] == rank and data["iteration"] == 1
    assert data["gradient_as_bucket_view"] == 1 and data["comm_hook"] == "allreduce_hook"
    assert data["num_parameter_tensors"] == 4 and data["dtypes"] == "float64"
    assert data["total_parameter_size_bytes"] == (6 * 16 + 16 + 16 * 3 + 3) * 8
    assert len(data["bucket_sizes"].split(", ")) == len(ddp._buckets) > 1


CASES = collect_cases(globals())


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory):
    return spawn_world(tmp_path_factory, __name__)


@pytest.mark.parametrize("name", list(CASES))
def test_ddp_options(outcomes, name):
    assert_case(outcomes, name)
