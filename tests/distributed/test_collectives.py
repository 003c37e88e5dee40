"""ember.distributed on 2 ranks over loopback: every collective against a NumPy reference."""

from __future__ import annotations

import datetime
import functools
import os

import numpy as np
import pytest

import ember
import ember.distributed as dist
import ember.multiprocessing as mp

from ._harness import (
    SPAWN_TIMEOUT,
    WORLD_SIZE,
    assert_case,
    free_port,
    needs_mpi,
    read_outcomes,
    run_cases,
)

DTYPES = ["float32", "float64", "int64"]
SIZES = [0, 7, 300_000]
MODES = ["sync", "async"]
OPS = ["SUM", "AVG", "MIN", "MAX", "PRODUCT"]


def _data(rank: int, dtype: str, n: int) -> np.ndarray:
    """Rank-dependent values, small enough that a product of 2 stays exact."""
    return ((np.arange(n) % 7) + 1 + 3 * rank).astype(dtype)


def _reference(op: str, arrays: list[np.ndarray]) -> np.ndarray:
    stacked = np.stack(arrays)
    if op == "SUM":
        return stacked.sum(0).astype(stacked.dtype)
    if op == "AVG":
        total = stacked.sum(0)
        return total / len(arrays) if stacked.dtype.kind == "f" else total // len(arrays)
    if op == "MIN":
        return stacked.min(0)
    if op == "MAX":
        return stacked.max(0)
    return stacked.prod(0).astype(stacked.dtype)


def _run(work, mode: str) -> None:
    if mode == "async":
        assert isinstance(work, dist.Work)
        assert work.wait() is True
        assert work.is_completed()
    else:
        assert work is None


def _equal(tensor, expected: np.ndarray) -> None:
    got = tensor.numpy()
    assert got.dtype == expected.dtype, (got.dtype, expected.dtype)
    np.testing.assert_allclose(got, expected, rtol=1e-6)


# --- the cases, each run on every rank --------------------------------------------------------


def case_all_reduce(op, dtype, n, mode, rank):
    t = ember.from_numpy(_data(rank, dtype, n))
    _run(dist.all_reduce(t, op=getattr(dist.ReduceOp, op), async_op=mode == "async"), mode)
    _equal(t, _reference(op, [_data(r, dtype, n) for r in range(WORLD_SIZE)]))


def case_broadcast(dtype, n, mode, rank):
    t = ember.from_numpy(_data(rank, dtype, n))
    _run(dist.broadcast(t, src=1, async_op=mode == "async"), mode)
    _equal(t, _data(1, dtype, n))


def case_reduce(dtype, n, mode, rank):
    t = ember.from_numpy(_data(rank, dtype, n))
    _run(dist.reduce(t, dst=1, op=dist.ReduceOp.SUM, async_op=mode == "async"), mode)
    if rank == 1:
        _equal(t, _reference("SUM", [_data(r, dtype, n) for r in range(WORLD_SIZE)]))


def case_all_gather(dtype, n, mode, rank):
    t = ember.from_numpy(_data(rank, dtype, n))
    out = [ember.from_numpy(np.zeros(n, dtype)) for _ in range(WORLD_SIZE)]
    _run(dist.all_gather(out, t, async_op=mode == "async"), mode)
    for r in range(WORLD_SIZE):
        _equal(out[r], _data(r, dtype, n))


def case_all_gather_into_tensor(dtype, n, mode, rank):
    t = ember.from_numpy(_data(rank, dtype, n))
    out = ember.from_numpy(np.zeros(WORLD_SIZE * n, dtype))
    _run(dist.all_gather_into_tensor(out, t, async_op=mode == "async"), mode)
    _equal(out, np.concatenate([_data(r, dtype, n) for r in range(WORLD_SIZE)]))


def case_reduce_scatter_tensor(dtype, n, mode, rank):
    full = [_data(r, dtype, WORLD_SIZE * n) for r in range(WORLD_SIZE)]
    out = ember.from_numpy(np.zeros(n, dtype))
    work = dist.reduce_scatter_tensor(out, ember.from_numpy(full[rank]), async_op=mode == "async")
    _run(work, mode)
    _equal(out, _reference("SUM", full)[rank * n : (rank + 1) * n])


def case_reduce_scatter(dtype, n, mode, rank):
    inputs = [ember.from_numpy(_data(rank + 2 * k, dtype, n)) for k in range(WORLD_SIZE)]
    out = ember.from_numpy(np.zeros(n, dtype))
    _run(dist.reduce_scatter(out, inputs, async_op=mode == "async"), mode)
    _equal(out, _reference("SUM", [_data(r + 2 * rank, dtype, n) for r in range(WORLD_SIZE)]))


def case_gather(dtype, n, mode, rank):
    t = ember.from_numpy(_data(rank, dtype, n))
    out = [ember.from_numpy(np.zeros(n, dtype)) for _ in range(WORLD_SIZE)] if rank == 0 else None
    _run(dist.gather(t, out, dst=0, async_op=mode == "async"), mode)
    if rank == 0:
        for r in range(WORLD_SIZE):
            _equal(out[r], _data(r, dtype, n))


def case_scatter(dtype, n, mode, rank):
    out = ember.from_numpy(np.zeros(n, dtype))
    parts = None
    if rank == 1:
        parts = [ember.from_numpy(_data(10 + r, dtype, n)) for r in range(WORLD_SIZE)]
    _run(dist.scatter(out, parts, src=1, async_op=mode == "async"), mode)
    _equal(out, _data(10 + rank, dtype, n))


def case_send_recv(dtype, n, mode, rank):
    peer = 1 - rank
    if rank == 0:
        t = ember.from_numpy(_data(5, dtype, n))
        if mode == "async":
            _run(dist.isend(t, dst=peer), mode)
        else:
            dist.send(t, dst=peer)
    else:
        t = ember.from_numpy(np.zeros(n, dtype))
        if mode == "async":
            work = dist.irecv(t, src=peer)
            _run(work, mode)
        else:
            assert dist.recv(t, src=peer) == peer
        _equal(t, _data(5, dtype, n))


def case_all_to_all_single(dtype, n, mode, rank):
    t = ember.from_numpy(_data(rank, dtype, WORLD_SIZE * n))
    out = ember.from_numpy(np.zeros(WORLD_SIZE * n, dtype))
    _run(dist.all_to_all_single(out, t, async_op=mode == "async"), mode)
    expected = [
        _data(r, dtype, WORLD_SIZE * n)[rank * n : (rank + 1) * n] for r in range(WORLD_SIZE)
    ]
    _equal(out, np.concatenate(expected))


TENSOR_CASES = {
    "broadcast": case_broadcast,
    "reduce": case_reduce,
    "all_gather": case_all_gather,
    "all_gather_into_tensor": case_all_gather_into_tensor,
    "reduce_scatter_tensor": case_reduce_scatter_tensor,
    "reduce_scatter": case_reduce_scatter,
    "gather": case_gather,
    "scatter": case_scatter,
    "send_recv": case_send_recv,
    "all_to_all_single": case_all_to_all_single,
}


def case_all_reduce_non_contiguous(rank):
    base = ember.from_numpy(np.arange(12.0).reshape(3, 4) * (rank + 1))
    view = base.t()
    dist.all_reduce(view)
    np.testing.assert_array_equal(base.numpy(), np.arange(12.0).reshape(3, 4) * 3)


def case_all_reduce_bumps_the_version(rank):
    t = ember.ones(3)
    before = t._version
    dist.all_reduce(t)
    assert t._version > before


def case_all_reduce_float16_and_bool(rank):
    half = ember.from_numpy(np.array([0.5, 1.5], np.float16) * (rank + 1))
    dist.all_reduce(half)
    assert half.dtype == ember.float16 and half.tolist() == [1.5, 4.5]
    flags = ember.from_numpy(np.array([rank == 0, False, True]))
    dist.all_reduce(flags)  # SUM of bools is "any", as in torch
    assert flags.tolist() == [True, False, True]
    dist.all_reduce(flags, op=dist.ReduceOp.MIN)
    assert flags.tolist() == [True, False, True]


def case_rank_and_world(rank):
    assert dist.is_initialized()
    assert dist.get_rank() == rank
    assert dist.get_world_size() == WORLD_SIZE
    assert dist.get_backend() == "gloo"


def case_objects(rank):
    gathered = [None] * WORLD_SIZE
    dist.all_gather_object(gathered, {"rank": rank, "name": f"r{rank}"})
    assert gathered == [{"rank": r, "name": f"r{r}"} for r in range(WORLD_SIZE)]
    items = [rank, "x"] if rank == 0 else [None, None]
    dist.broadcast_object_list(items, src=0)
    assert items == [0, "x"]


def case_object_send_and_recv(rank):
    if rank == 0:
        dist.send_object_list([{"step": 3}, "adam"], dst=1)
    else:
        received = [None, None]
        assert dist.recv_object_list(received, src=0) == 0
        assert received == [{"step": 3}, "adam"]


def case_barrier_async(rank):
    work = dist.barrier(async_op=True)
    work.wait()
    assert work.is_completed()
    dist.barrier()


def case_sampler_takes_the_world_from_the_group(rank):
    from ember.utils.data.distributed import DistributedSampler

    sampler = DistributedSampler(list(range(10)), shuffle=False)
    assert (sampler.num_replicas, sampler.rank) == (WORLD_SIZE, rank)
    assert list(sampler) == list(range(rank, 10, WORLD_SIZE))


def case_new_group(rank):
    solo = dist.new_group([1])
    if rank == 1:
        assert dist.get_rank(solo) == 0 and dist.get_world_size(solo) == 1
        t = ember.ones(2)
        dist.all_reduce(t, group=solo)
        assert t.tolist() == [1.0, 1.0]
    else:
        assert solo is dist.GroupMember.NON_GROUP_MEMBER
        assert dist.get_rank(solo) == -1


def case_batch_isend_irecv_swaps_tensors(rank):
    peer = 1 - rank
    mine = ember.from_numpy(np.arange(5.0) + 10 * rank)
    theirs = ember.zeros(5, dtype=ember.float64)
    ops = [dist.P2POp(dist.isend, mine, peer), dist.P2POp(dist.irecv, theirs, peer)]
    works = dist.batch_isend_irecv(ops)
    assert len(works) == 2
    for work in works:
        work.wait()
    np.testing.assert_array_equal(theirs.numpy(), np.arange(5.0) + 10 * peer)
    with pytest.raises(ValueError, match="Invalid ``op``"):
        dist.P2POp(dist.send, mine, peer)


def case_work_future_gives_the_tensors(rank):
    t = ember.ones(3) * (rank + 1)
    future = dist.all_reduce(t, async_op=True).get_future()
    halved = future.then(lambda f: f.value()[0] / 2)
    assert future.wait()[0] is t and t.tolist() == [3.0] * 3
    assert halved.wait().tolist() == [1.5] * 3
    assert future.done()


LARGE = 17_000_000  # float32: 68 MB, over the 64 MB where some transports switch protocol


def case_collectives_over_64_mb_match_numpy(rank):
    def data(r):
        return np.arange(LARGE, dtype=np.float32) * np.float32(r + 1)

    t = ember.from_numpy(data(rank))
    dist.all_reduce(t)
    np.testing.assert_array_equal(t.numpy(), data(0) + data(1))  # the same float32 additions
    t = ember.from_numpy(data(rank))
    dist.broadcast(t, src=1)
    np.testing.assert_array_equal(t.numpy(), data(1))


def case_send_to_self_raises(rank):
    with pytest.raises(ValueError, match="Invalid destination rank"):
        dist.send(ember.ones(1), dst=rank)


OTHER_CASES = {
    f.__name__[len("case_") :]: f
    for f in [
        case_all_reduce_non_contiguous,
        case_all_reduce_bumps_the_version,
        case_all_reduce_float16_and_bool,
        case_rank_and_world,
        case_objects,
        case_object_send_and_recv,
        case_barrier_async,
        case_sampler_takes_the_world_from_the_group,
        case_new_group,
        case_send_to_self_raises,
        case_batch_isend_irecv_swaps_tensors,
        case_work_future_gives_the_tensors,
    ]
}
if os.environ.get("EMBER_LONG_TESTS") == "1":  # a few seconds on 2 cores
    OTHER_CASES["collectives_over_64_mb_match_numpy"] = case_collectives_over_64_mb_match_numpy


def all_cases() -> dict:
    cases = {}
    for dtype in DTYPES:
        for n in SIZES:
            for mode in MODES:
                for op in OPS:
                    cases[f"all_reduce-{op}-{dtype}-{n}-{mode}"] = functools.partial(
                        case_all_reduce, op, dtype, n, mode
                    )
                for name, case in TENSOR_CASES.items():
                    cases[f"{name}-{dtype}-{n}-{mode}"] = functools.partial(case, dtype, n, mode)
    cases.update(OTHER_CASES)
    return cases


def _worker(rank: int, out_dir: str, port: int) -> None:
    dist.init_process_group(
        "gloo", init_method=f"tcp://127.0.0.1:{port}", world_size=WORLD_SIZE, rank=rank
    )
    run_cases(rank, out_dir, all_cases())
    dist.destroy_process_group()
    assert not dist.is_initialized()


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory):
    needs_mpi()
    out_dir = tmp_path_factory.mktemp("collectives")
    mp.spawn(_worker, args=(str(out_dir), free_port()), nprocs=WORLD_SIZE, timeout=SPAWN_TIMEOUT)
    return read_outcomes(str(out_dir))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("op", OPS)
def test_all_reduce_matches_numpy(outcomes, op, dtype, n, mode):
    assert_case(outcomes, f"all_reduce-{op}-{dtype}-{n}-{mode}")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", list(TENSOR_CASES))
def test_collective_matches_numpy(outcomes, name, dtype, n, mode):
    assert_case(outcomes, f"{name}-{dtype}-{n}-{mode}")


@pytest.mark.parametrize("name", list(OTHER_CASES))
def test_process_group_behaviour(outcomes, name):
    assert_case(outcomes, name)


@pytest.mark.skipif(os.environ.get("EMBER_LONG_TESTS") != "1", reason="EMBER_LONG_TESTS=1 runs it")
def test_collectives_over_64_mb_match_numpy(outcomes):
    assert_case(outcomes, "collectives_over_64_mb_match_numpy")


# --- in this process: no world needed ---------------------------------------------------------


def test_queries_without_a_group_raise_torchs_error():
    assert not dist.is_initialized()
    for call in (
        dist.get_rank,
        dist.get_world_size,
        dist.get_backend,
        dist.barrier,
        lambda: dist.all_reduce(ember.ones(2)),
    ):
        with pytest.raises(ValueError, match="Default process group has not been initialized"):
            call()


def test_ddp_without_a_group_raises_torchs_error():
    from ember.nn.parallel import DistributedDataParallel

    with pytest.raises(ValueError, match="Default process group has not been initialized"):
        DistributedDataParallel(ember.nn.Linear(2, 2))


def test_reduce_op_and_backend_names():
    assert dist.ReduceOp.SUM == dist.ReduceOp.RedOpType.SUM
    assert repr(dist.ReduceOp.AVG) == "<RedOpType.AVG: 1>"
    assert dist.Backend("GLOO") == dist.Backend.GLOO == "gloo"
    with pytest.raises(ValueError, match="Invalid backend"):
        dist.Backend("carrier-pigeon")


def test_bare_process_asking_for_two_ranks_gets_the_fix(monkeypatch):
    needs_mpi()
    monkeypatch.delenv("PMI_RANK", raising=False)
    monkeypatch.delenv("PMIX_RANK", raising=False)
    with pytest.raises(RuntimeError, match="ember.multiprocessing.spawn"):
        dist.init_process_group("gloo", init_method="tcp://127.0.0.1:1", world_size=2, rank=1)
    assert not dist.is_initialized()


def test_env_rendezvous_names_the_missing_variable(monkeypatch):
    needs_mpi()
    for name in ("MASTER_ADDR", "MASTER_PORT", "RANK", "WORLD_SIZE"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(ValueError, match="environment variable RANK expected"):
        dist.init_process_group("gloo")


def _four_ranks(rank: int, port: int, out_dir: str) -> None:
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", world_size=4, rank=rank)
    assert (dist.get_rank(), dist.get_world_size()) == (rank, 4)
    t = ember.tensor([float(rank)])
    dist.all_reduce(t)
    assert t.item() == 6.0
    odd = dist.new_group([1, 3])
    assert dist.get_rank(odd) == {1: 0, 3: 1}.get(rank, -1)
    ranks = [None] * 4
    dist.all_gather_object(ranks, rank)
    assert ranks == [0, 1, 2, 3]
    _late_ranks(rank, out_dir)
    dist.destroy_process_group()


def _late_ranks(rank: int, out_dir: str) -> None:
    """Ranks 2 and 3 come late to monitored barriers: rank 0 names them, all others fail too."""
    import os
    import time

    dist.monitored_barrier(timeout=datetime.timedelta(seconds=20))  # everyone arrives
    errors = []
    for wait_all_ranks in (True, False):
        if rank >= 2:
            time.sleep(0.8)
        try:
            dist.monitored_barrier(timeout=0.4, wait_all_ranks=wait_all_ranks)
            errors.append("passed")
        except RuntimeError as error:
            errors.append(str(error))
        dist.barrier()  # line up again before the next round
    with open(os.path.join(out_dir, f"rank{rank}"), "w") as f:
        f.write("\n".join(errors))


@pytest.fixture(scope="module")
def four_ranks(tmp_path_factory):
    """The folder of what 4 ranks wrote, or the error that stopped them."""
    needs_mpi()
    out_dir = tmp_path_factory.mktemp("four_ranks")
    try:
        mp.spawn(_four_ranks, args=(free_port(), str(out_dir)), nprocs=4, timeout=SPAWN_TIMEOUT)
    except mp.ProcessException as error:
        return error
    return out_dir


def test_four_ranks_join_in_rank_order(four_ranks):
    if isinstance(four_ranks, Exception):
        raise four_ranks


def test_monitored_barrier_names_the_ranks_that_did_not_come(four_ranks):
    if isinstance(four_ranks, Exception):
        raise four_ranks
    seen = [(four_ranks / f"rank{r}").read_text().split("\n") for r in range(4)]
    assert seen[0] == [
        "[Rank 0]: Ranks 2, 3 failed to pass monitoredBarrier in 400 ms",
        "[Rank 0]: Rank 2 failed to pass monitoredBarrier in 400 ms",
    ]
    for rank in (1, 2, 3):
        for message in seen[rank]:
            assert message.startswith(
                f"Rank {rank} successfully reached monitoredBarrier, but received errors"
            ), message
