"""DDP communication hooks on 2 ranks: GradBucket, the default hooks and torch's errors."""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.distributed as dist
import ember.nn.functional as F
from ember.distributed.algorithms.ddp_comm_hooks import (
    DDPCommHookType,
    default_hooks,
    register_ddp_comm_hook,
)
from ember.futures import Future
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


def _grads_after_one_step(rank: int, register) -> list[np.ndarray]:
    x, y = whole_batch()
    ddp = DDP(tiny_model(0), bucket_cap_mb=0.0003)  # several buckets
    register(ddp)
    F.mse_loss(ddp(share(x, rank)), share(y, rank)).backward()
    return [p.grad.numpy() for p in ddp.parameters()], ddp


def _reference_grads() -> list[np.ndarray]:
    x, y = whole_batch()
    reference = tiny_model(0)
    F.mse_loss(reference(x), y).backward()
    return [p.grad.numpy() for p in reference.parameters()]


def case_allreduce_hook_trains_as_without_a_hook(rank):
    x, y = whole_batch()
    reference, ddp = tiny_model(0), DDP(tiny_model(100 * rank), bucket_cap_mb=0.0003)
    ddp.register_comm_hook(None, default_hooks.allreduce_hook)
    opt = ember.optim.SGD(ddp.parameters(), lr=0.1, momentum=0.9)
    ref_opt = ember.optim.SGD(reference.parameters(), lr=0.1, momentum=0.9)
    for _ in range(4):
        opt.zero_grad()
        F.mse_loss(ddp(share(x, rank)), share(y, rank)).backward()
        opt.step()
        ref_opt.zero_grad()
        F.mse_loss(reference(x), y).backward()
        ref_opt.step()
    for p, q in zip(ddp.parameters(), reference.parameters()):
        np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=0, atol=1e-12)


def case_fp16_and_bf16_hooks_send_each_half_rounded(rank):
    import ml_dtypes

    x, y = whole_batch()
    alone = tiny_model(0)
    F.mse_loss(alone(share(x, rank)), share(y, rank)).backward()
    everyone = [None] * WORLD_SIZE
    dist.all_gather_object(everyone, [p.grad.numpy() for p in alone.parameters()])
    for hook, wire in [
        (default_hooks.fp16_compress_hook, np.float16),
        (default_hooks.bf16_compress_hook, ml_dtypes.bfloat16),
    ]:
        grads, _ = _grads_after_one_step(rank, lambda d, h=hook: d.register_comm_hook(None, h))
        for i, got in enumerate(grads):
            # each rank sends its gradient / 2 rounded to 16 bits; the sum is rounded again
            halves = [(theirs[i].astype(wire) / wire(2)).astype(np.float32) for theirs in everyone]
            want = sum(halves).astype(wire).astype(np.float64)
            assert got.dtype == np.float64
            np.testing.assert_array_equal(got, want)
        full = _reference_grads()
        assert any(not np.array_equal(g, f) for g, f in zip(grads, full))  # it was rounded


def case_fp16_wrapper_of_allreduce_equals_fp16_hook(rank):
    wrapped = default_hooks.fp16_compress_wrapper(default_hooks.allreduce_hook)
    assert wrapped.__name__ == "fp16_compress_wrapper_hook"
    assert default_hooks.bf16_compress_wrapper(wrapped).__name__ == "bf16_compress_wrapper_hook"
    a, _ = _grads_after_one_step(rank, lambda d: d.register_comm_hook(None, wrapped))
    b, _ = _grads_after_one_step(
        rank, lambda d: d.register_comm_hook(None, default_hooks.fp16_compress_hook)
    )
    for got, want in zip(a, b):
        np.testing.assert_array_equal(got, want)
    c, _ = _grads_after_one_step(
        rank,
        lambda d: d.register_comm_hook(
            None, default_hooks.bf16_compress_wrapper(default_hooks.allreduce_hook)
        ),
    )
    d, _ = _grads_after_one_step(
        rank, lambda d: d.register_comm_hook(None, default_hooks.bf16_compress_hook)
    )
    for got, want in zip(c, d):
        np.testing.assert_array_equal(got, want)


def case_hook_sees_each_bucket_with_its_local_gradients(rank):
    x, y = whole_batch()
    seen = []

    def local_only(state, bucket: dist.GradBucket) -> Future:
        state.append(bucket)
        grads = bucket.gradients()
        buffer = bucket.buffer()
        assert buffer.dim() == 1 and buffer.numel() == sum(g.numel() for g in grads)
        for g, p in zip(grads, bucket.parameters()):
            assert g.shape == p.shape
        fut = Future()
        fut.set_result(buffer)  # no communication: each rank keeps its own gradients
        return fut

    ddp = DDP(tiny_model(0), bucket_cap_mb=0.0003)
    ddp.register_comm_hook(seen, local_only)
    F.mse_loss(ddp(share(x, rank)), share(y, rank)).backward()
    assert [b.index() for b in seen] == list(range(len(seen))) and len(seen) > 1
    assert [b.is_last() for b in seen] == [False] * (len(seen) - 1) + [True]
    params = list(ddp.parameters())
    # bucket 0 holds the last parameters, first the one whose gradient comes first in backward
    assert seen[0].parameters()[0] is params[-1]
    assert {id(p) for b in seen for p in b.parameters()} == {id(p) for p in params}
    alone = tiny_model(0)
    F.mse_loss(alone(share(x, rank)), share(y, rank)).backward()
    for p, q in zip(ddp.parameters(), alone.parameters()):
        np.testing.assert_array_equal(p.grad.numpy(), q.grad.numpy())


def case_a_hook_may_replace_the_buffer_and_use_its_state(rank):
    def sum_not_mean(state, bucket):
        state["calls"] += 1
        bucket.set_buffer(bucket.buffer() * 1.0)
        work = dist.all_reduce(bucket.buffer(), async_op=True)
        return work.get_future().then(lambda fut: fut.value()[0])

    state = {"calls": 0}
    grads, ddp = _grads_after_one_step(rank, lambda d: d.register_comm_hook(state, sum_not_mean))
    assert state["calls"] == len(ddp._buckets)
    for got, want in zip(grads, _reference_grads()):
        np.testing.assert_allclose(got, 2 * want, rtol=1e-12, atol=1e-14)


def case_hooks_by_name(rank):
    expected = _reference_grads()
    for register in [
        lambda d: DDPCommHookType.POWER_SGD.value(model=d, state=None),  # plain at first
        lambda d: DDPCommHookType.ALLREDUCE.value(model=d, state=None),
        lambda d: register_ddp_comm_hook(DDPCommHookType.ALLREDUCE, d),
        lambda d: d._register_builtin_comm_hook(dist.BuiltinCommHookType.ALLREDUCE),
    ]:
        grads, _ = _grads_after_one_step(rank, register)
        for got, want in zip(grads, expected):
            np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)


def case_registering_errors_are_torchs(rank):
    ddp = DDP(tiny_model(0))
    with pytest.raises(TypeError, match="Communication hook must be callable."):
        ddp.register_comm_hook(None, 3)

    def wrong_bucket(state, bucket: int):
        return None

    def wrong_return(state, bucket) -> int:
        return 0

    with pytest.raises(ValueError, match="bucket annotation should be dist.GradBucket"):
        ddp.register_comm_hook(None, wrong_bucket)
    with pytest.raises(ValueError, match="return annotation should be torch.futures.Future"):
        ddp.register_comm_hook(None, wrong_return)
    ddp.register_comm_hook(None, default_hooks.allreduce_hook)
    with pytest.raises(RuntimeError, match="can only be called once"):
        ddp.register_comm_hook(None, default_hooks.fp16_compress_hook)


def case_a_hook_registered_after_a_backward_is_used_from_then_on(rank):
    x, y = whole_batch()
    ddp = DDP(tiny_model(0))
    F.mse_loss(ddp(share(x, rank)), share(y, rank)).backward()
    calls = []

    def counting(state, bucket):
        calls.append(bucket.index())
        return default_hooks.allreduce_hook(state, bucket)

    ddp.register_comm_hook(None, counting)
    ddp.zero_grad()
    F.mse_loss(ddp(share(x, rank)), share(y, rank)).backward()
    assert calls == [0]
    for p, want in zip(ddp.parameters(), _reference_grads()):
        np.testing.assert_allclose(p.grad.numpy(), want, rtol=1e-12, atol=1e-14)


def case_a_hook_returning_no_future_or_no_tensor_raises(rank):
    x = ember.ones(2, 6, dtype=ember.float64)

    def not_a_future(state, bucket):
        return 5

    def future_of_int(state, bucket):
        fut = Future()
        fut.set_result(5)
        return fut

    def wrong_size(state, bucket):
        fut = Future()
        fut.set_result(ember.ones(3, dtype=ember.float64))
        return fut

    for hook, error in [
        (not_a_future, "must return a torch.futures.Future object, but got builtins.int"),
        (future_of_int, "Unable to cast 5 to Tensor"),
        (wrong_size, "has 3 elements but bucket 0 holds"),
    ]:
        ddp = DDP(tiny_model(0))
        ddp.register_comm_hook(None, hook)
        with pytest.raises(RuntimeError, match=error):
            ddp(x).sum().backward()


def case_join_shadows_a_hooks_collectives(rank):
    rng = np.random.default_rng(11)
    xs = [ember.from_numpy(rng.standard_normal((BATCH, 6))) for _ in range(3)]
    ys = [ember.from_numpy(rng.standard_normal((BATCH, 3))) for _ in range(3)]
    ddp = DDP(tiny_model(100 * rank), bucket_cap_mb=0.0003)
    ddp.register_comm_hook(None, default_hooks.allreduce_hook)
    opt = ember.optim.SGD(ddp.parameters(), lr=0.1)
    with ddp.join():
        for x, y in list(zip(xs, ys))[: 3 - rank]:
            opt.zero_grad()
            F.mse_loss(ddp(share(x, rank)), share(y, rank)).backward()
            opt.step()
    reference = tiny_model(0)
    ref_opt = ember.optim.SGD(reference.parameters(), lr=0.1)
    for step in range(3):
        ref_opt.zero_grad()
        if step < 2:
            F.mse_loss(reference(xs[step]), ys[step]).backward()
        else:  # rank 0 alone; the hook divides by the world size, rank 1 adds zeros
            (0.5 * F.mse_loss(reference(share(xs[2], 0)), share(ys[2], 0))).backward()
        ref_opt.step()
    for p, q in zip(ddp.parameters(), reference.parameters()):
        np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=0, atol=1e-12)


def _powerSGD_steps(rank: int, state, steps: int, record=None) -> tuple:
    """``steps`` backward passes under PowerSGD; the DDP model and the per-step grads."""
    from ember.distributed.algorithms.ddp_comm_hooks import powerSGD_hook as powerSGD

    ddp = DDP(tiny_model(0))
    ddp.register_comm_hook(state, powerSGD.powerSGD_hook)
    grads = []
    for step in range(steps):
        x, y = whole_batch()
        ddp.zero_grad()
        F.mse_loss(ddp(share(x * (step + 1), rank)), share(y, rank)).backward()
        grads.append([p.grad.numpy().copy() for p in ddp.parameters()])
    return ddp, grads


def _reference_grads_at(step: int) -> list[np.ndarray]:
    x, y = whole_batch()
    reference = tiny_model(0)
    F.mse_loss(reference(x * (step + 1)), y).backward()
    return [p.grad.numpy() for p in reference.parameters()]


def case_powerSGD_is_plain_allreduce_before_its_start(rank):
    from ember.distributed.algorithms.ddp_comm_hooks.powerSGD_hook import PowerSGDState

    state = PowerSGDState(None, start_powerSGD_iter=3)
    _, grads = _powerSGD_steps(rank, state, 2)
    assert state.iter == 2 and state.error_dict == {}
    for step in range(2):
        for got, want in zip(grads[step], _reference_grads_at(step)):
            np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)
    with pytest.raises(ValueError, match="Expect `start_powerSGD_iter` > 1"):
        PowerSGDState(None, start_powerSGD_iter=1)


def case_powerSGD_at_full_rank_is_the_exact_average(rank):
    from ember.distributed.algorithms.ddp_comm_hooks.powerSGD_hook import PowerSGDState

    state = PowerSGDState(
        None,
        matrix_approximation_rank=16,
        start_powerSGD_iter=0,
        min_compression_rate=0.1,  # compress every matrix, even at full rank
        use_error_feedback=False,
        warm_start=False,
    )
    _, grads = _powerSGD_steps(rank, state, 2)
    assert state.compression_stats()[1] > 0 and state.p_memory_dict == {}
    for step in range(2):
        for got, want in zip(grads[step], _reference_grads_at(step)):
            np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12)


def case_powerSGD_rank_1_with_error_feedback(rank):
    from ember.distributed.algorithms.ddp_comm_hooks.powerSGD_hook import PowerSGDState

    state = PowerSGDState(None, matrix_approximation_rank=1, start_powerSGD_iter=2)
    ddp, grads = _powerSGD_steps(rank, state, 4)
    weights = [g for g in grads[-1] if g.ndim == 2]
    assert weights and all(np.linalg.matrix_rank(w) == 1 for w in weights)  # rank-1 factors
    biases, exact = grads[-1][1], _reference_grads_at(3)[1]
    np.testing.assert_allclose(biases, exact, rtol=1e-10, atol=1e-12)  # vectors: exact
    everyone = [None] * WORLD_SIZE
    dist.all_gather_object(everyone, grads[-1])
    for a, b in zip(*everyone):
        np.testing.assert_array_equal(a, b)  # every rank got the same gradients
    # error feedback: what each rank sent plus what it keeps is what it had
    assert set(state.error_dict) == {0} and state.iter == 4
    rate, before, after = state.compression_stats()
    assert rate > 1 and before > after
    import pickle

    fresh = PowerSGDState(dist.group.WORLD, start_powerSGD_iter=5)
    copy = pickle.loads(pickle.dumps(fresh))  # as torch's: all but the process group
    assert copy.process_group is None and copy.start_powerSGD_iter == 5


CASES = collect_cases(globals())


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory):
    return spawn_world(tmp_path_factory, __name__)


@pytest.mark.parametrize("name", list(CASES))
def test_comm_hooks(outcomes, name):
    assert_case(outcomes, name)
