"""SyncBatchNorm on 2 ranks with uneven batches equals BatchNorm on the concatenated batch."""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.distributed as dist
import ember.nn as nn
import ember.nn.functional as F
from ember.nn.modules.sync_batchnorm import SyncBatchNorm
from ember.nn.parallel import DistributedDataParallel as DDP

from ._harness import (
    WORLD_SIZE,
    assert_case,
    collect_cases,
    spawn_world,
)

ROWS = (3, 5)  # rank 0's and rank 1's batch sizes: uneven on purpose


def _rows(rank: int) -> slice:
    return slice(sum(ROWS[:rank]), sum(ROWS[: rank + 1]))


def _data(shape_tail: tuple, seed: int = 0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((sum(ROWS),) + shape_tail) * 3 + 5  # far from zero mean
    weights = rng.standard_normal((sum(ROWS),) + shape_tail)  # the loss: sum(out * weights)
    return x, weights


def _compare_with_batchnorm(rank: int, shape_tail: tuple, reference_cls) -> None:
    channels = shape_tail[0]
    x_all, c_all = _data(shape_tail)
    ember.manual_seed(0)
    sync = SyncBatchNorm(channels).double()
    reference = reference_cls(channels).double()
    with ember.no_grad():
        for m in (sync, reference):
            m.weight.copy_(ember.arange(channels, dtype=ember.float64) * 0.5 + 1)
            m.bias.copy_(ember.arange(channels, dtype=ember.float64) * -0.25)
    for step in range(2):
        x = ember.from_numpy(x_all[_rows(rank)] * (step + 1)).requires_grad_()
        out = sync(x)
        (out * ember.from_numpy(c_all[_rows(rank)])).sum().backward()
        x_ref = ember.from_numpy(x_all * (step + 1)).requires_grad_()
        out_ref = reference(x_ref)
        (out_ref * ember.from_numpy(c_all)).sum().backward()
        np.testing.assert_allclose(
            out.detach().numpy(), out_ref.detach().numpy()[_rows(rank)], rtol=1e-12, atol=1e-12
        )
        # every rank's loss reaches this rank's rows: x's gradient is the whole batch's
        np.testing.assert_allclose(
            x.grad.numpy(), x_ref.grad.numpy()[_rows(rank)], rtol=1e-10, atol=1e-12
        )
    for name in ("running_mean", "running_var", "num_batches_tracked"):
        np.testing.assert_allclose(
            getattr(sync, name).numpy(), getattr(reference, name).numpy(), rtol=1e-12
        )
    # the parameters' gradients are per-rank parts: their sum is the whole batch's
    for p, q in zip(sync.parameters(), reference.parameters()):
        total = p.grad.clone()
        dist.all_reduce(total)
        np.testing.assert_allclose(total.numpy(), q.grad.numpy(), rtol=1e-10, atol=1e-12)


def case_2d_input_equals_batchnorm1d_on_the_whole_batch(rank):
    _compare_with_batchnorm(rank, (4,), nn.BatchNorm1d)


def case_4d_input_equals_batchnorm2d_on_the_whole_batch(rank):
    _compare_with_batchnorm(rank, (3, 2, 5), nn.BatchNorm2d)


def case_double_backward_equals_batchnorm(rank):
    x_all, c_all = _data((3,), seed=1)
    d_all = np.random.default_rng(2).standard_normal(x_all.shape)
    sync, reference = SyncBatchNorm(3).double(), nn.BatchNorm1d(3).double()
    grads = []
    for module, rows in ((sync, _rows(rank)), (reference, slice(None))):
        x = ember.from_numpy(x_all[rows]).requires_grad_()
        loss = (module(x) * ember.from_numpy(c_all[rows])).sum()
        (gx,) = ember.autograd.grad(loss, x, create_graph=True)
        (gx * ember.from_numpy(d_all[rows])).sum().backward()
        grads.append(module.weight.grad.clone())
    dist.all_reduce(grads[0])
    np.testing.assert_allclose(grads[0].numpy(), grads[1].numpy(), rtol=1e-9, atol=1e-12)


def case_ddp_training_with_converted_batchnorm_equals_one_process(rank):
    def model():
        ember.manual_seed(5)
        return nn.Sequential(nn.Linear(4, 6), nn.BatchNorm1d(6), nn.Tanh(), nn.Linear(6, 2))

    rng = np.random.default_rng(3)
    x_all = ember.from_numpy(rng.standard_normal((sum(ROWS), 4)))
    y_all = ember.from_numpy(rng.standard_normal((sum(ROWS), 2)))
    converted = SyncBatchNorm.convert_sync_batchnorm(model().double())
    assert isinstance(converted[1], SyncBatchNorm)
    ddp = DDP(converted)
    reference = model().double()
    opt = ember.optim.SGD(ddp.parameters(), lr=0.1)
    ref_opt = ember.optim.SGD(reference.parameters(), lr=0.1)
    for _ in range(3):
        opt.zero_grad()
        # DDP averages over the 2 ranks: weight each rank's sum by the whole batch's size
        out = ddp(x_all[_rows(rank)])
        (((out - y_all[_rows(rank)]) ** 2).sum() * (WORLD_SIZE / sum(ROWS))).backward()
        opt.step()
        ref_opt.zero_grad()
        F.mse_loss(reference(x_all), y_all, reduction="sum").div(sum(ROWS)).backward()
        ref_opt.step()
    for (name, a), b in zip(ddp.module.state_dict().items(), reference.state_dict().values()):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-10, atol=1e-12, err_msg=name)


def case_eval_mode_and_a_group_of_one_are_batchnorm(rank):
    x = ember.from_numpy(np.random.default_rng(rank).standard_normal((4, 3)))
    sync, reference = SyncBatchNorm(3).double(), nn.BatchNorm1d(3).double()
    with ember.no_grad():
        for m in (sync, reference):
            m.running_mean.fill_(0.5)
            m.running_var.fill_(2.0)
    sync.eval(), reference.eval()
    np.testing.assert_array_equal(sync(x).detach().numpy(), reference(x).detach().numpy())
    alone = [dist.new_group([r]) for r in range(WORLD_SIZE)][rank]
    own = SyncBatchNorm(3, process_group=alone).double()
    np.testing.assert_allclose(
        own(x).detach().numpy(),
        nn.BatchNorm1d(3).double()(x).detach().numpy(),
        rtol=1e-14,
        atol=1e-14,
    )


def case_bad_inputs_raise_torchs_errors(rank):
    with pytest.raises(ValueError, match="expected at least 2D input"):
        SyncBatchNorm(3)(ember.ones(3))
    with pytest.raises(ValueError, match="number of input channels should be non-zero"):
        SyncBatchNorm(0)(ember.ones(2, 0))
    # one value per channel on each rank is fine: two in all
    out = SyncBatchNorm(2).double()(ember.ones(1, 2, dtype=ember.float64) * rank)
    expected = (rank - 0.5) / np.sqrt(0.25 + 1e-5)  # mean 0.5 and variance 0.25 over the ranks
    np.testing.assert_allclose(out.detach().numpy(), [[expected] * 2], rtol=1e-14)


def case_a_rank_with_an_empty_batch_takes_part(rank):
    x_all, _ = _data((2,), seed=4)
    rows = slice(0, 0) if rank == 0 else slice(None)
    x = ember.from_numpy(x_all[rows]).requires_grad_()
    sync = SyncBatchNorm(2).double()
    out = sync(x)
    out.sum().backward()
    assert x.grad.shape == x.shape
    if rank == 1:
        expected = nn.BatchNorm1d(2).double()(ember.from_numpy(x_all))
        np.testing.assert_allclose(out.detach().numpy(), expected.detach().numpy(), rtol=1e-12)


def case_options_match_batchnorm(rank):
    x_all, c_all = _data((3,), seed=6)
    for options in (
        {"momentum": None},  # a cumulative average of the batches
        {"affine": False},
        {"track_running_stats": False},
    ):
        sync, reference = (
            SyncBatchNorm(3, **options).double(),
            nn.BatchNorm1d(3, **options).double(),
        )
        for step in range(2):
            x = ember.from_numpy(x_all[_rows(rank)] + step).requires_grad_()
            (sync(x) * ember.from_numpy(c_all[_rows(rank)])).sum().backward()
            x_ref = ember.from_numpy(x_all + step).requires_grad_()
            (reference(x_ref) * ember.from_numpy(c_all)).sum().backward()
            np.testing.assert_allclose(
                x.grad.numpy(), x_ref.grad.numpy()[_rows(rank)], rtol=1e-10, atol=1e-12
            )
        for name, buffer in reference.named_buffers():
            np.testing.assert_allclose(
                getattr(sync, name).numpy(), buffer.numpy(), rtol=1e-12, err_msg=str(options)
            )
        assert sync.running_mean is None if "track_running_stats" in options else True


CASES = collect_cases(globals())


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory):
    return spawn_world(tmp_path_factory, __name__)


@pytest.mark.parametrize("name", list(CASES))
def test_sync_batchnorm(outcomes, name):
    assert_case(outcomes, name)


def test_without_a_process_group_it_is_batchnorm():
    x = ember.from_numpy(np.random.default_rng(0).standard_normal((5, 3, 2)))
    sync, reference = SyncBatchNorm(3).double(), nn.BatchNorm1d(3).double()
    np.testing.assert_array_equal(sync(x).detach().numpy(), reference(x).detach().numpy())
    np.testing.assert_array_equal(sync.running_var.numpy(), reference.running_var.numpy())
