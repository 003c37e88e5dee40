"""Rendezvous: ``file://`` (ranks meet through a shared file) and parsing ``init_method``."""

from __future__ import annotations

import datetime
import os
import time

import pytest

import ember
import ember.distributed as dist
import ember.multiprocessing as mp
from ember.distributed.rendezvous import parse_init_method

from ._harness import SPAWN_TIMEOUT, WORLD_SIZE, needs_mpi


def _meet_twice_through_one_file(rank: int, path: str, out_dir: str) -> None:
    seen = []
    for round_ in range(2):
        dist.init_process_group(
            "gloo", init_method=f"file://{path}", world_size=WORLD_SIZE, rank=rank
        )
        t = ember.ones(3) * (rank + 1 + round_)
        dist.all_reduce(t)
        dist.barrier()  # every rank is in: rank 0 has removed the file by now
        exists = os.path.exists(path)
        # every rank has looked before any starts the next round, whose rank 0 writes the
        # file again (without this a slow rank could see the next round's file)
        dist.barrier()
        seen.append((t.tolist(), exists))
        dist.destroy_process_group()
    with open(os.path.join(out_dir, f"rank{rank}"), "w") as f:
        f.write(repr(seen))


def test_file_rendezvous_joins_the_ranks_and_frees_the_path_for_reuse(tmp_path):
    needs_mpi()
    path = tmp_path / "rendezvous"
    path.touch()  # an empty file made beforehand, as torch's tests do with tempfile
    mp.spawn(
        _meet_twice_through_one_file,
        args=(str(path), str(tmp_path)),
        nprocs=WORLD_SIZE,
        timeout=SPAWN_TIMEOUT,
    )
    for rank in range(WORLD_SIZE):
        seen = (tmp_path / f"rank{rank}").read_text()
        assert seen == repr([([3.0] * 3, False), ([5.0] * 3, False)])
    assert not path.exists()


def _alone_at_the_file(rank: int, path: str, as_rank: int) -> None:
    dist.init_process_group(
        "gloo",
        init_method=f"file://{path}",
        world_size=2,
        rank=as_rank,
        timeout=datetime.timedelta(seconds=0.5),
    )


@pytest.mark.parametrize(
    "as_rank, message",
    [
        (0, "DistStoreError: .* timed out after 0.5 seconds waiting for clients. 1/2 clients"),
        (1, "DistStoreError: .* rank 1 timed out after 0.5 seconds waiting for rank 0 to write"),
    ],
)
def test_file_rendezvous_without_a_peer_times_out_and_leaves_no_file(tmp_path, as_rank, message):
    needs_mpi()
    path = tmp_path / "rendezvous"
    began = time.monotonic()
    with pytest.raises(mp.ProcessRaisedException, match=message):
        mp.spawn(_alone_at_the_file, args=(str(path), as_rank), nprocs=1, timeout=SPAWN_TIMEOUT)
    assert time.monotonic() - began < 15  # the timeout, not spawn's
    assert not path.exists()


def test_file_init_method_takes_rank_and_world_size_from_the_query():
    point = parse_init_method("file:///shared/run%201?rank=1&world_size=4", -1, -1)
    assert (point.file_path, point.rank, point.world_size) == ("/shared/run 1", 1, 4)
    with pytest.raises(ValueError, match="file:// rendezvous: world size parameter missing"):
        parse_init_method("file:///shared/x", -1, 0)
    with pytest.raises(ValueError, match="file:// rendezvous: rank parameter missing"):
        parse_init_method("file:///shared/x", 2, -1)


def test_unknown_init_method_names_the_supported_ones():
    with pytest.raises(RuntimeError, match=r"No rendezvous handler for etcd://.*file://"):
        parse_init_method("etcd://host:1", 2, 0)
