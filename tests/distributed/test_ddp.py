"""DistributedDataParallel on 2 ranks: the same training as one process with the whole batch."""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.distributed as dist
import ember.nn as nn
import ember.nn.functional as F
from ember.nn.parallel import DistributedDataParallel as DDP

from ._harness import (
    BATCH,
    WORLD_SIZE,
    assert_case,
    collect_cases,
    share,
    spawn_world,
    tiny_model,
    whole_batch,
)


def _max_difference(a: nn.Module, b: nn.Module) -> float:
    return max(
        float(np.abs(p.detach().numpy() - q.detach().numpy()).max())
        for p, q in zip(a.parameters(), b.parameters())
    )


def _training_matches_one_process(rank: int, make_optimizer) -> None:
    x, y = whole_batch()
    reference = tiny_model(0)  # rank 0's initial weights, which DDP broadcasts at wrap
    ddp = DDP(tiny_model(100 * rank), bucket_cap_mb=0.0003)  # several buckets
    assert _max_difference(ddp.module, reference) == 0.0
    opt, ref_opt = make_optimizer(ddp.parameters()), make_optimizer(reference.parameters())
    for _ in range(5):
        opt.zero_grad()
        F.mse_loss(ddp(share(x, rank)), share(y, rank)).backward()
        opt.step()
        ref_opt.zero_grad()
        F.mse_loss(reference(x), y).backward()
        ref_opt.step()
    assert _max_difference(ddp.module, reference) < 1e-6
    assert _max_difference(ddp.module, tiny_model(0)) > 1e-3  # it did train


def case_sgd_momentum_equals_big_batch(rank):
    _training_matches_one_process(rank, lambda ps: ember.optim.SGD(ps, lr=0.1, momentum=0.9))


def case_adam_equals_big_batch(rank):
    _training_matches_one_process(rank, lambda ps: ember.optim.Adam(ps, lr=0.01))


def case_no_sync_accumulates_like_one_big_batch(rank):
    x, y = whole_batch()
    reference = tiny_model(0)
    ddp = DDP(tiny_model(0))
    mine_x, mine_y = share(x, rank), share(y, rank)
    with ddp.no_sync():
        F.mse_loss(ddp(mine_x[:2]), mine_y[:2]).backward()
    local = [p.grad.numpy().copy() for p in ddp.parameters()]
    everyone = [None] * WORLD_SIZE
    dist.all_gather_object(everyone, local)
    assert any(not np.array_equal(a, b) for a, b in zip(*everyone)), "no_sync communicated"
    F.mse_loss(ddp(mine_x[2:]), mine_y[2:]).backward()
    # each rank summed the grads of 2 micro-batch means: their average is 2 x the full-batch mean
    (2 * F.mse_loss(reference(x), y)).backward()
    for p, q in zip(ddp.parameters(), reference.parameters()):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-10, atol=1e-12)


def case_an_evaluation_forward_between_does_not_drop_the_reduction(rank):
    x, y = whole_batch()
    reference, ddp = tiny_model(0), DDP(tiny_model(0))
    loss = F.mse_loss(ddp(share(x, rank)), share(y, rank))
    with ember.no_grad():
        ddp(x)
    loss.backward()
    F.mse_loss(reference(x), y).backward()
    for p, q in zip(ddp.parameters(), reference.parameters()):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-10, atol=1e-12)


def case_module_and_state_dict_prefix(rank):
    inner = tiny_model(0)
    ddp = DDP(inner)
    assert ddp.module is inner
    assert sorted(ddp.state_dict()) == sorted(f"module.{k}" for k in inner.state_dict())


def case_buffers_come_from_rank_0(rank):
    model = nn.Sequential(nn.Linear(4, 4), nn.BatchNorm1d(4)).double()
    model[1].running_mean.fill_(float(rank + 1))
    ddp = DDP(model)
    assert ddp.module[1].running_mean.tolist() == [1.0] * 4


def case_first_bucket_starts_before_backward_ends(rank):
    ddp = DDP(tiny_model(0), bucket_cap_mb=0.0001)  # one parameter per bucket
    events = []
    start = ddp._start
    ddp._start = lambda bucket: (events.append("allreduce started"), start(bucket))[1]
    first = next(iter(ddp.module.parameters()))  # its gradient is the last one backward makes
    first.register_post_accumulate_grad_hook(lambda p: events.append("last gradient"))
    x, y = whole_batch()
    F.mse_loss(ddp(share(x, rank)), share(y, rank)).backward()
    assert events[0] == "allreduce started" and "last gradient" in events


def case_unused_parameter_raises_torchs_error(rank):
    class WithUnused(nn.Module):
        def __init__(self):
            super().__init__()
            self.used, self.unused = nn.Linear(3, 2), nn.Linear(3, 2)

        def forward(self, x):
            return self.used(x)

    ddp = DDP(WithUnused().double())
    x = ember.ones(2, 3, dtype=ember.float64)
    ddp(x).sum().backward()
    with pytest.raises(RuntimeError, match="Expected to have finished reduction in the prior"):
        ddp(x)
    finder = DDP(WithUnused().double(), find_unused_parameters=True)
    for _ in range(2):
        finder.zero_grad()
        finder(x * (rank + 1)).sum().backward()
    assert finder.module.unused.weight.grad is None
    # d/dW sum(W x + b) over 2 rows of x = rank + 1 is 2 (rank + 1): averaged, 3
    assert finder.module.used.weight.grad.tolist() == [[3.0] * 3] * 2


def _uneven_training(rank: int, divide_by_initial_world_size: bool) -> None:
    """Rank 0 has 3 batches, rank 1 one fewer; rank 1 shadows rank 0's last step."""
    rng = np.random.default_rng(11)
    xs = [ember.from_numpy(rng.standard_normal((BATCH, 6))) for _ in range(3)]
    ys = [ember.from_numpy(rng.standard_normal((BATCH, 3))) for _ in range(3)]
    ddp = DDP(tiny_model(100 * rank), bucket_cap_mb=0.0003)
    opt = ember.optim.SGD(ddp.parameters(), lr=0.1, momentum=0.9)
    with ddp.join(divide_by_initial_world_size=divide_by_initial_world_size):
        for x, y in list(zip(xs, ys))[: 3 - rank]:
            opt.zero_grad()
            F.mse_loss(ddp(share(x, rank)), share(y, rank)).backward()
            opt.step()
    reference = tiny_model(0)
    ref_opt = ember.optim.SGD(reference.parameters(), lr=0.1, momentum=0.9)
    for step in range(3):
        ref_opt.zero_grad()
        if step < 2:  # both ranks: the average of their halves is the whole batch's gradient
            F.mse_loss(reference(xs[step]), ys[step]).backward()
        else:  # rank 0 alone; rank 1 adds zeros, and the sum is divided by 2 or by 1
            scale = 0.5 if divide_by_initial_world_size else 1.0
            (scale * F.mse_loss(reference(share(xs[2], 0)), share(ys[2], 0))).backward()
        ref_opt.step()
    assert _max_difference(ddp.module, reference) < 1e-6  # rank 1 too: it took rank 0's weights


def case_join_with_one_batch_fewer_on_rank_1(rank):
    _uneven_training(rank, divide_by_initial_world_size=True)


def case_join_dividing_by_the_ranks_that_still_had_data(rank):
    _uneven_training(rank, divide_by_initial_world_size=False)


def case_join_shadows_the_buffer_broadcast_and_ends_with_one_model(rank):
    ember.manual_seed(rank)
    model = nn.Sequential(nn.Linear(6, 4), nn.BatchNorm1d(4)).double()
    ddp = DDP(model)
    opt = ember.optim.SGD(ddp.parameters(), lr=0.1)
    x, _ = whole_batch()
    with ddp.join():
        for step in range(3 - 2 * rank):  # rank 0: 3 batches, rank 1: 1
            opt.zero_grad()
            ddp(share(x, rank) * (step + 1)).sum().backward()
            opt.step()
    state = {k: v.tolist() for k, v in model.state_dict().items()}
    everyone = [None] * WORLD_SIZE
    dist.all_gather_object(everyone, state)
    assert everyone[0] == everyone[1]
    assert everyone[0]["1.num_batches_tracked"] == 3  # rank 0's buffers: it trained last


def case_join_can_throw_on_every_rank_when_one_runs_out(rank):
    ddp = DDP(tiny_model(0))
    x = ember.ones(2, 6, dtype=ember.float64)
    with pytest.raises(RuntimeError, match="Detected at least one rank that exhausted inputs"):
        with ddp.join(throw_on_early_termination=True):
            for _ in range(2 - rank):
                ddp(x).sum().backward()
    dist.barrier()  # the ranks are still in step


CASES = collect_cases(globals())


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory):
    return spawn_world(tmp_path_factory, __name__)


@pytest.mark.parametrize("name", list(CASES))
def test_ddp(outcomes, name):
    assert_case(outcomes, name)
