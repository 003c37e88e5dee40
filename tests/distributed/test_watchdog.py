"""A rank that dies, exits or raises surfaces in every surviving rank as a catchable
``DistBackendError`` (a RuntimeError) within seconds, whatever collective the survivor waits in
(``ember.distributed.watchdog.wait``, told by the links of ``ember.distributed.liveness``).

Each rank runs under its own ``mpiexec -n 1`` with nobody watching them all, as ranks on separate
machines would be: no launcher stops the survivors, only ``ember.distributed`` can tell them. The
scenarios start together (one world each) and the tests read their outcomes.
"""

from __future__ import annotations

import json
import os
import re
import textwrap

import pytest

from ._harness import collect_ranks, needs_mpi, start_unwatched_ranks

SCRIPT = """
import datetime
import json
import os
import signal
import sys
import time

import ember
import ember.distributed as dist

victim, death, op = int(os.environ["VICTIM"]), os.environ["DEATH"], os.environ["OP"]
dist.init_process_group(
    "gloo", timeout=datetime.timedelta(seconds=float(os.environ.get("PG_TIMEOUT", "60")))
)
rank = dist.get_rank()
pair = dist.new_group([0, 1]) if dist.get_world_size() == 3 else None
dist.barrier()
if rank == victim:
    time.sleep(0.5)  # the others are waiting in the collective by now
    if death == "fork, then kill" and os.fork() == 0:
        time.sleep(30)  # a child (a DataLoader worker) that outlives its parent
        os._exit(0)
    if death == "kill mid-transfer":  # its part of a 16 MB all_reduce half sent
        dist.all_reduce(ember.ones(4_000_000), async_op=True)
        time.sleep(0.002)
    if death in ("kill", "fork, then kill", "kill mid-transfer"):
        os.kill(os.getpid(), signal.SIGKILL)
    elif death == "exit":
        sys.exit(0)
    elif death == "raise":
        raise ValueError("this rank gave up")
    time.sleep(60)  # "stall": alive, but never comes
OPS = {
    "all_reduce": lambda: dist.all_reduce(ember.ones(4)),
    "barrier": dist.barrier,
    "broadcast": lambda: dist.broadcast(ember.ones(4), src=victim),
    "recv": lambda: dist.recv(ember.ones(4), src=victim),
    "broadcast_object_list": lambda: dist.broadcast_object_list([None], src=victim),
    "async all_reduce": lambda: dist.all_reduce(ember.ones(4), async_op=True).wait(),
    "16 MB all_reduce": lambda: dist.all_reduce(ember.ones(4_000_000)),
}
outcome = {}
began = time.monotonic()
try:
    OPS[op]()
except Exception as error:  # what a training script would catch, to save and exit its own way
    outcome = {"type": type(error).__name__, "runtime": isinstance(error, RuntimeError),
               "message": str(error)}
outcome["seconds"] = time.monotonic() - began
began = time.monotonic()
try:
    dist.all_reduce(ember.ones(1))
except RuntimeError as error:
    outcome["again"] = type(error).__name__
outcome["again_seconds"] = time.monotonic() - began
if pair is not None:  # a group without the dead rank goes on working
    t = ember.ones(1)
    dist.all_reduce(t, group=pair)
    outcome["pair"] = t.item()
dist.destroy_process_group()  # leaves at once: the peer it would wait for is gone
print(json.dumps(outcome), flush=True)
sys.exit(3)
"""

BLOCKED_SCRIPT = """
import datetime
import time

import ember.distributed as dist
from ember.distributed.watchdog import watched

dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=2))
if dist.get_rank() == 1:
    time.sleep(60)


@watched
def join_round():  # as DDP's join does: a call that blocks inside MPI, where nothing can raise
    dist.group.WORLD.comm.Barrier()


join_round()
print("returned", flush=True)
"""

# name: (world size, dying rank, how it ends, the survivors' collective)
SCENARIOS = {
    "killed, survivor in all_reduce": (2, 1, "kill", "all_reduce"),
    "exited, survivor in barrier": (2, 1, "exit", "barrier"),
    "raised, survivor in broadcast": (2, 1, "raise", "broadcast"),
    "rank 0 killed, survivor in recv": (2, 0, "kill", "recv"),
    "killed, two survivors in all_reduce": (3, 2, "kill", "all_reduce"),
    "killed, its forked child alive": (2, 1, "fork, then kill", "all_reduce"),
    "killed mid-transfer, survivor in all_reduce": (2, 1, "kill mid-transfer", "16 MB all_reduce"),
}
LONG = os.environ.get("EMBER_LONG_TESTS") == "1"  # the same waiting, reached by other roads
if LONG:
    SCENARIOS["rank 0 raised, survivor in broadcast_object_list"] = (
        2,
        0,
        "raise",
        "broadcast_object_list",
    )
    SCENARIOS["killed, survivor in an async all_reduce's wait"] = (2, 1, "kill", "async all_reduce")


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory):
    """Scenario name -> rank -> (exit code, stdout, stderr) of every survivor; also for a peer
    that stalls ("stalled") and for a rank blocked inside MPI ("blocked inside MPI")."""
    needs_mpi()
    folder = tmp_path_factory.mktemp("watchdog")
    script, blocked = folder / "train.py", folder / "blocked.py"
    script.write_text(textwrap.dedent(SCRIPT))
    blocked.write_text(textwrap.dedent(BLOCKED_SCRIPT))
    started = {}  # all worlds at once: a second or two each, mostly starting Python
    for name, (world_size, victim, death, op) in SCENARIOS.items():
        env = {"VICTIM": str(victim), "DEATH": death, "OP": op}
        started[name] = start_unwatched_ranks(str(script), world_size, env), victim
    stall = {"VICTIM": "1", "DEATH": "stall", "OP": "all_reduce", "PG_TIMEOUT": "2"}
    started["stalled"] = start_unwatched_ranks(str(script), 2, stall), 1
    if LONG:
        started["blocked inside MPI"] = start_unwatched_ranks(str(blocked), 2, {}), 1
    found = {}
    for name, (ranks, victim) in started.items():
        found[name] = collect_ranks(ranks, [r for r in range(len(ranks)) if r != victim])
    return found


def _outcome(result) -> dict:
    code, out, err = result
    assert code == 3, f"exit code {code}\n{out}\n{err}"  # its own exit, not os._exit(1)
    lines = out.strip().splitlines()
    assert len(lines) == 1, f"more than the outcome on stdout:\n{out}\n{err}"
    return json.loads(lines[0])


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_a_survivor_raises_dist_backend_error_within_seconds(outcomes, name):
    victim = SCENARIOS[name][1]
    for rank, result in outcomes[name].items():
        seen = _outcome(result)
        assert seen.get("type") == "DistBackendError", (rank, seen)
        assert seen["runtime"] is True
        assert seen["seconds"] < 10, (rank, seen)
        assert f"rank {victim} " in seen["message"], seen["message"]
        assert "Connection closed by peer" in seen["message"]


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_a_survivor_says_nothing_in_ucxs_words(outcomes, name):
    # UCX's log lines ("[time] [host:pid:thread]  mpool.c:54  UCX  WARN  object ... was not
    # returned", "[host:pid:thread:tid]  cma_ep.c:85  process_vm_readv ...") repeat what the
    # DistBackendError says; process_group keeps only UCX's fatal messages
    for rank, (_, out, err) in outcomes[name].items():
        assert not re.search(r"^\[.*\]\s+\w+\.c:\d+\s", out + err, re.M), (rank, out, err)


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_after_the_error_the_group_refuses_collectives_at_once(outcomes, name):
    for result in outcomes[name].values():
        seen = _outcome(result)
        assert seen["again"] == "DistBackendError"
        assert seen["again_seconds"] < 1


def test_rank_0_tells_the_others_and_groups_without_the_dead_rank_go_on(outcomes):
    # rank 1 hears of rank 2's death only from rank 0
    for result in outcomes["killed, two survivors in all_reduce"].values():
        assert _outcome(result)["pair"] == 2.0


def test_the_message_says_how_the_rank_ended(outcomes):
    def message(name: str) -> str:
        return next(iter(outcomes[name].values()))[1]

    assert "rank 1 was killed or crashed" in message("killed, survivor in all_reduce")
    assert "rank 1 exited" in message("exited, survivor in barrier")
    raised = message("raised, survivor in broadcast")
    assert "rank 1 exited after raising ValueError: this rank gave up" in raised
    assert "waiting in broadcast" in raised
    assert "rank 0 was killed or crashed" in message("rank 0 killed, survivor in recv")


def test_a_survivor_whose_peer_stalls_raises_after_the_timeout(outcomes):
    seen = _outcome(outcomes["stalled"][0])
    assert seen["type"] == "DistBackendError"
    assert 2 <= seen["seconds"] < 10
    assert "rank 0 waited" in seen["message"]
    assert "in all_reduce, past the process group's timeout of 2 seconds" in seen["message"]


@pytest.mark.skipif(not LONG, reason="EMBER_LONG_TESTS=1 runs it")
def test_a_rank_blocked_inside_mpi_ends_after_the_timeout(outcomes):
    code, out, err = outcomes["blocked inside MPI"][0]
    assert code == 1 and "returned" not in out
    assert "ember.distributed: rank 0 waited" in err
    assert "in join_round, past the process group's timeout of 2 seconds" in err
