"""``ember.distributed.rpc`` on two workers: calls, RRefs, remote errors, timeouts, and errors
raised before any worker has started."""

from __future__ import annotations

import pickle
import threading
import time

import numpy as np
import pytest

import ember
import ember.distributed.rpc as rpc
from ember import nn
from ember.futures import Future

from ._harness import assert_case, collect_cases
from ._rpc_harness import spawn_rpc_world


# --- functions and classes the workers call on each other -------------------------------------
def scaled_sum(a, b, scale=1.0):
    return (a + b) * scale


def fail_with(message):
    raise ValueError(f"bad value: {message}")


def describe(*values):
    """What arrived: per value its type, dtype, requires_grad and whether it is a Parameter."""
    return [
        (type(v).__name__, str(v.dtype), v.requires_grad, isinstance(v, nn.Parameter))
        for v in values
    ]


def add_in_place(x, y):
    return x.add_(y)


def same_object(a, b):
    return a is b


def rref_value_plus_one(rref):
    return rref.to_here() + 1


def is_owner_here(rref):
    return rref.is_owner(), rref.local_value().tolist()


def sleep_then(seconds, value):
    time.sleep(seconds)
    return value


def current_worker_name():
    return rpc.get_worker_info().name


@rpc.functions.async_execution
def add_there_then_double(to, x):
    return rpc.rpc_async(to, ember.add, args=(x, 1)).then(lambda fut: fut.wait() * 2)


@rpc.functions.async_execution
def not_a_future():
    return 3


def fail_with_a_local_exception_type():
    class LocalError(Exception):
        pass

    raise LocalError("made inside a function")


def return_unpicklable():
    return threading.Lock()


class Counter:
    def __init__(self, start):
        self.count = start

    def add(self, k):
        self.count += k
        return self.count

    def fail(self):
        raise KeyError("no such thing")

    @rpc.functions.async_execution
    def add_later(self, to, k):
        return rpc.rpc_async(to, scaled_sum, args=(k, 0)).then(lambda fut: self.add(fut.wait()))


# --- the cases (each runs on both workers; most act on worker 0 only) -------------------------
def case_rpc_sync_runs_a_builtin_remotely(rank):
    if rank == 0:
        out = rpc.rpc_sync("worker1", ember.add, args=(ember.ones(2), 3))
        assert out.tolist() == [4.0, 4.0]


def case_rpc_sync_runs_a_user_function_with_kwargs(rank):
    if rank == 1:
        out = rpc.rpc_sync(
            "worker0", scaled_sum, args=(ember.tensor([1.0, 2.0]), 1.0), kwargs={"scale": 3.0}
        )
        assert out.tolist() == [6.0, 9.0]


def case_rpc_async_returns_a_future(rank):
    if rank == 0:
        fut = rpc.rpc_async("worker1", ember.mul, args=(ember.tensor([1.0, 2.0]), 3))
        assert isinstance(fut, Future)
        chained = fut.then(lambda f: f.value() + 1)
        assert fut.wait().tolist() == [3.0, 6.0]
        assert fut.done()
        assert chained.wait().tolist() == [4.0, 7.0]


def case_a_callback_may_call_the_same_worker_and_wait(rank):
    if rank == 0:
        fut = rpc.rpc_async("worker1", sleep_then, args=(0.05, 1))
        chained = fut.then(lambda f: rpc.rpc_sync("worker1", scaled_sum, args=(f.wait(), 2)))
        assert chained.wait() == 3.0


def case_destinations_by_name_worker_info_id_and_self(rank):
    info = rpc.get_worker_info("worker1")
    assert (info.name, info.id) == ("worker1", 1)
    assert repr(info) == "WorkerInfo(id=1, name=worker1)"
    assert rpc.get_worker_info() == rpc.get_worker_info(f"worker{rank}")
    assert rpc.rpc_sync(info, current_worker_name) == "worker1"
    assert rpc.rpc_sync(0, current_worker_name) == "worker0"
    assert rpc.rpc_sync(f"worker{rank}", current_worker_name) == f"worker{rank}"


def case_unknown_worker_name_raises_torchs_error(rank):
    with pytest.raises(RuntimeError, match=f"rank:{rank} could not find destination name nope"):
        rpc.rpc_sync("nope", ember.add, args=(1, 2))
    with pytest.raises(RuntimeError, match="could not find destination name nope"):
        rpc.get_worker_info("nope")
    with pytest.raises(RuntimeError, match="could not find destination id 7"):
        rpc.rpc_sync(7, ember.add, args=(1, 2))
    with pytest.raises(RuntimeError, match="could not find destination name worker9"):
        rpc.rpc_sync(rpc.WorkerInfo("worker9", 1), ember.add, args=(1, 2))


def case_tensors_keep_dtype_requires_grad_and_parameter(rank):
    if rank == 0:
        p = nn.Parameter(ember.ones(2, dtype=ember.float64))
        x = ember.arange(3)
        y = ember.ones(2, requires_grad=True)
        assert rpc.rpc_sync("worker1", describe, args=(p, x, y)) == [
            ("Parameter", "ember.float64", True, True),
            ("Tensor", "ember.int64", False, False),
            ("Tensor", "ember.float32", True, False),
        ]
        values = rpc.rpc_sync("worker1", ember.stack, args=([x, x * 2],))
        assert values.tolist() == [[0, 1, 2], [0, 2, 4]]
        # large data travels beside the pickle stream, arrives writable; views arrive as copies
        big = ember.arange(300_000, dtype=ember.float64)
        doubled = rpc.rpc_sync("worker1", add_in_place, args=(big, big))
        np.testing.assert_array_equal(doubled.numpy(), 2 * big.numpy())
        transposed = big.view(600, 500).t()
        back = rpc.rpc_sync("worker1", add_in_place, args=(transposed, 0))
        assert back.shape == (500, 600)
        np.testing.assert_array_equal(back.numpy(), transposed.numpy())


def case_one_tensor_twice_in_a_message_arrives_as_one(rank):
    if rank == 0:
        t = ember.ones(3)
        assert rpc.rpc_sync("worker1", same_object, args=(t, t)) is True
        assert rpc.rpc_sync("worker1", same_object, args=(t, t.clone())) is False


def case_remote_exception_reraises_with_type_and_remote_traceback(rank):
    if rank == 0:
        with pytest.raises(ValueError) as caught:
            rpc.rpc_sync("worker1", fail_with, args=("seven",))
        text = str(caught.value)
        assert text.startswith("On WorkerInfo(id=1, name=worker1):\nValueError('bad value: seven')")
        assert "Traceback (most recent call last)" in text
        assert "in fail_with" in text
        fut = rpc.rpc_async("worker1", fail_with, args=("eight",))
        with pytest.raises(ValueError, match="bad value: eight"):
            fut.wait()


def case_remote_errors_that_do_not_pickle_arrive_as_runtime_errors(rank):
    if rank == 0:
        with pytest.raises(RuntimeError, match="LocalError.*made inside a function"):
            rpc.rpc_sync("worker1", fail_with_a_local_exception_type)
        with pytest.raises(TypeError, match="cannot pickle '_thread.lock' object"):
            rpc.rpc_sync("worker1", return_unpicklable)


def case_remote_keeps_the_value_on_its_owner(rank):
    if rank == 0:
        rref = rpc.remote("worker1", ember.add, args=(ember.ones(2), 3))
        assert isinstance(rref, rpc.RRef)
        assert rref.to_here().tolist() == [4.0, 4.0]
        assert rref.to_here(timeout=5).tolist() == [4.0, 4.0]
        assert rref.owner() == rpc.get_worker_info("worker1")
        assert rref.owner_name() == "worker1"
        assert not rref.is_owner()
        assert rref.confirmed_by_owner()
        assert repr(rref).startswith("UserRRef(RRefId = GloballyUniqueId(created_on=0")
        with pytest.raises(RuntimeError, match=r"Can't call RRef.local_value\(\) on a non-owner"):
            rref.local_value()


def case_rref_proxies_call_methods_on_the_owner(rank):
    if rank == 0:
        counter = rpc.remote("worker1", Counter, args=(5,))
        assert counter.rpc_sync().add(3) == 8
        fut = counter.rpc_async().add(2)
        assert isinstance(fut, Future) and fut.wait() == 10
        result = counter.remote().add(1)
        assert isinstance(result, rpc.RRef) and result.to_here() == 11
        assert counter.rpc_sync(timeout=5).add(0) == 11  # the state stayed on worker1
        with pytest.raises(KeyError, match="no such thing"):
            counter.rpc_sync().fail()
        assert counter.rpc_sync().add_later("worker0", 4) == 15  # an async_execution method
        assert counter.remote().add_later("worker0", 5).to_here() == 20
        slow = rpc.remote("worker1", sleep_then, args=(0.2, Counter(1)))
        assert slow.rpc_sync().add(1) == 2  # waits for the value, on the owner


def case_remote_error_is_raised_by_to_here(rank):
    if rank == 0:
        rref = rpc.remote("worker1", fail_with, args=("at creation",))
        with pytest.raises(ValueError, match="bad value: at creation"):
            rref.to_here()


def case_local_rref_owns_its_value_and_users_fetch_it(rank):
    if rank == 0:
        rref = rpc.RRef(ember.tensor([1.0, 2.0]))
        assert rref.is_owner() and rref.owner_name() == "worker0"
        assert rref.local_value().tolist() == [1.0, 2.0]
        assert rref.to_here().tolist() == [1.0, 2.0]
        assert repr(rref).startswith("OwnerRRef(GloballyUniqueId(created_on=0")
        # worker1 gets a user RRef and fetches the value back from worker0 (a nested call)
        out = rpc.rpc_sync("worker1", rref_value_plus_one, args=(rref,))
        assert out.tolist() == [2.0, 3.0]


def case_rref_sent_to_its_owner_is_the_owners_again(rank):
    if rank == 0:
        rref = rpc.remote("worker1", ember.ones, args=(2,))
        assert rpc.rpc_sync("worker1", is_owner_here, args=(rref,)) == (True, [1.0, 1.0])


def case_remote_to_self_is_owned_here(rank):
    if rank == 1:
        rref = rpc.remote("worker1", ember.zeros, args=(3,))
        assert rref.is_owner()
        assert rref.local_value().tolist() == [0.0, 0.0, 0.0]


def case_timeout_marks_the_call_with_an_error(rank):
    if rank == 0:
        began = time.monotonic()
        with pytest.raises(RuntimeError, match=r"RPC ran for more than set timeout \(200 ms\)"):
            rpc.rpc_sync("worker1", sleep_then, args=(1.0, 0), timeout=0.2)
        assert time.monotonic() - began < 0.9
        assert rpc.rpc_sync("worker1", sleep_then, args=(0.05, 7), timeout=0) == 7


def case_async_execution_answers_when_its_future_completes(rank):
    if rank == 0:
        out = rpc.rpc_sync("worker1", add_there_then_double, args=("worker0", ember.ones(2)))
        assert out.tolist() == [4.0, 4.0]
        with pytest.raises(TypeError, match="must return a torch.futures.Future"):
            rpc.rpc_sync("worker1", not_a_future)


def owned_count():
    from ember.distributed.rpc.agent import current_agent

    return len(current_agent().owned)


def case_owner_drops_values_of_rrefs_nobody_holds(rank):
    if rank == 0:
        import gc

        before = rpc.rpc_sync("worker1", owned_count)
        for _ in range(20):
            rpc.remote("worker1", ember.ones, args=(1000,)).to_here()
        kept = rpc.remote("worker1", ember.ones, args=(2,))
        kept.to_here()
        gc.collect()
        rpc.rpc_sync("worker1", owned_count)  # the next call tells the owner of the dropped ones
        assert rpc.rpc_sync("worker1", owned_count) == before + 1
        assert kept.to_here().tolist() == [1.0, 1.0]


def owner_of(rref):
    return rref.owner_name()


def owned_rrefs(n):
    return [rpc.RRef(ember.ones(1000)) for _ in range(n)]


def case_owner_drops_its_rrefs_values_once_users_let_go(rank):
    if rank == 0:
        import gc

        before = rpc.rpc_sync("worker1", owned_count)
        users = rpc.rpc_sync("worker1", owned_rrefs, args=(5,))
        counter = rpc.remote("worker1", Counter, args=(1,))
        assert counter.rpc_sync().add(1) == 2  # sent to its owner in a request: still counted
        assert rpc.rpc_sync("worker1", is_owner_here, args=(users[0],))[0] is True
        assert rpc.rpc_sync("worker1", owned_count) == before + 6
        pinned = users.pop()
        # passed on to another user (here, this worker itself): kept until shutdown
        assert rpc.rpc_sync("worker0", owner_of, args=(pinned,)) == "worker1"
        del users, pinned, counter
        gc.collect()
        rpc.rpc_sync("worker1", owned_count)  # carries the news
        assert rpc.rpc_sync("worker1", owned_count) == before + 1


def case_many_calls_from_threads_all_arrive(rank):
    results = []

    def call(i):
        results.append(rpc.rpc_sync(f"worker{1 - rank}", scaled_sum, args=(i, i)))

    threads = [threading.Thread(target=call, args=(i,)) for i in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(results) == [2.0 * i for i in range(16)]


CASES = collect_cases(globals())


# --- shutdown: graceful waits for outstanding work on every worker -----------------------------
def write_after(path, seconds):
    time.sleep(seconds)
    with open(path, "w") as f:
        f.write("done")


def before_shutdown(rank, out_dir):
    import json
    import os

    found = {}
    if rank == 0:  # left unanswered: shutdown must wait for it
        rpc.rpc_async("worker1", write_after, args=(os.path.join(out_dir, "late-write"), 0.3))
    else:  # worker 0 is in shutdown by then, and must still answer
        time.sleep(0.3)
        found["late_call"] = rpc.rpc_sync("worker0", current_worker_name)
    with open(os.path.join(out_dir, f"shutdown{rank}.json"), "w") as f:
        json.dump(found, f)


def after_shutdown(rank, out_dir):
    import json
    import os

    path = os.path.join(out_dir, f"shutdown{rank}.json")
    with open(path) as f:
        found = json.load(f)
    found["late_write_done"] = os.path.exists(os.path.join(out_dir, "late-write"))
    try:
        rpc.rpc_sync("worker0", current_worker_name)
    except RuntimeError as error:
        found["after"] = str(error)
    with open(path, "w") as f:
        json.dump(found, f)


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    return spawn_rpc_world(tmp_path_factory, __name__)


@pytest.mark.parametrize("name", list(CASES))
def test_rpc(world, name):
    assert_case(world[0], name)


def _shutdown_record(world, rank):
    import json
    import os

    with open(os.path.join(world[1], f"shutdown{rank}.json")) as f:
        return json.load(f)


def test_graceful_shutdown_waits_for_calls_left_unanswered(world):
    assert _shutdown_record(world, 0)["late_write_done"] is True


def test_graceful_shutdown_serves_until_every_worker_has_reached_it(world):
    assert _shutdown_record(world, 1)["late_call"] == "worker0"


def test_calls_after_shutdown_raise_not_initialized(world):
    for rank in (0, 1):
        assert _shutdown_record(world, rank)["after"].startswith("RPC has not been initialized")


# --- without a world ----------------------------------------------------------------------------
def test_calls_before_init_rpc_raise_torchs_error():
    with pytest.raises(RuntimeError, match="RPC has not been initialized. Call"):
        rpc.rpc_sync("worker1", ember.add, args=(1, 2))
    with pytest.raises(RuntimeError, match="RPC has not been initialized"):
        rpc.get_worker_info()
    with pytest.raises(RuntimeError, match="RPC has not been initialized"):
        rpc.RRef(1)


@pytest.mark.parametrize("name", ["", "has space", "a" * 128, "slash/no"])
def test_init_rpc_refuses_bad_worker_names(name):
    with pytest.raises(RuntimeError, match=r"Worker name must match \^\[A-Za-z0-9-_:\]\*\$"):
        rpc.init_rpc(name, rank=0, world_size=1)


def test_options_have_torchs_defaults():
    options = rpc.TensorPipeRpcBackendOptions()
    assert (options.num_worker_threads, options.rpc_timeout, options.init_method) == (
        16,
        60.0,
        "env://",
    )
    assert rpc.DEFAULT_RPC_TIMEOUT_SEC == 60.0 and rpc.UNSET_RPC_TIMEOUT < 0
    assert rpc.BackendType.TENSORPIPE.name == "TENSORPIPE"


def test_a_world_of_one_calls_itself():
    import socket
    from multiprocessing.connection import AuthenticationError, Client

    from ._harness import free_port

    port = free_port()
    options = rpc.TensorPipeRpcBackendOptions(init_method=f"tcp://127.0.0.1:{port}")
    rpc.init_rpc("solo", rank=0, world_size=1, rpc_backend_options=options)
    try:
        # strangers (one that hangs up, one with another key) are turned away, and RPC goes on
        socket.create_connection(("127.0.0.1", port), timeout=5).close()
        with pytest.raises(AuthenticationError):
            Client(("127.0.0.1", port), authkey=b"not the key")
        out = rpc.rpc_sync("solo", ember.add, args=(ember.tensor([1.0]), 1))
        assert out.tolist() == [2.0]
        rref = rpc.RRef(np.arange(3))
        assert rref.to_here().tolist() == [0, 1, 2]
        with pytest.raises(RuntimeError, match="Can not pickle rref in python pickler"):
            pickle.dumps(rref)
        with pytest.raises(RuntimeError, match="RPC is already initialized"):
            rpc.init_rpc("solo", rank=0, world_size=1, rpc_backend_options=options)
    finally:
        rpc.shutdown()
    with pytest.raises(RuntimeError, match="RPC has not been initialized"):
        rpc.get_worker_info()


def test_file_rendezvous_removes_its_file(tmp_path):
    path = tmp_path / "rendezvous"
    options = rpc.TensorPipeRpcBackendOptions(init_method=f"file://{path}")
    rpc.init_rpc("solo", rank=0, world_size=1, rpc_backend_options=options)
    try:
        assert not path.exists()
        assert rpc.rpc_sync("solo", current_worker_name) == "solo"
    finally:
        rpc.shutdown(graceful=False)


_DYING_WORKER = """
import os, sys, time
import ember.distributed.rpc as rpc
rank = int(sys.argv[1])
rpc.init_rpc(f"worker{rank}", rank=rank, world_size=2)
if rank == 1:
    os._exit(0)  # gone without shutdown
time.sleep(0.3)
try:
    rpc.shutdown()
except RuntimeError as error:
    print("raised:", error)
"""


def test_shutdown_raises_instead_of_waiting_for_a_worker_that_died(tmp_path):
    import os
    import subprocess
    import sys

    from ._harness import free_port

    script = tmp_path / "dying.py"
    script.write_text(_DYING_WORKER)
    env = dict(os.environ, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(free_port()))
    workers = [
        subprocess.Popen(
            [sys.executable, str(script), str(rank)],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for rank in (0, 1)
    ]
    try:
        out, err = workers[0].communicate(timeout=30)
    finally:
        for worker in workers:
            worker.kill()
            worker.wait()
    assert out.startswith("raised: "), err
    assert "shutdown cannot complete: worker worker1 closed its connection before" in out


def test_rpc_and_autograd_are_attributes_of_distributed_as_in_torch():
    import ember.distributed
    import ember.distributed.autograd as dist_autograd

    # what `torch.distributed.rpc` finds on an `import ember as torch` that never named them
    assert ember.distributed.__getattr__("rpc") is rpc
    assert ember.distributed.__getattr__("autograd") is dist_autograd
    with pytest.raises(AttributeError, match="module 'ember.distributed' has no attribute 'nope'"):
        ember.distributed.nope  # noqa: B018


@pytest.mark.parametrize(
    "rank, message",
    [
        (0, r"worker 0 timed out after 0.5 seconds waiting for the workers to join: 1/2 joined"),
        (1, r"worker 1 \(w\) could not reach worker 0 at 127.0.0.1:\d+ within 0.5 seconds"),
    ],
)
def test_init_rpc_without_its_peers_times_out_and_leaves_rpc_uninitialized(rank, message):
    from ._harness import free_port

    options = rpc.TensorPipeRpcBackendOptions(
        init_method=f"tcp://127.0.0.1:{free_port()}", rpc_timeout=0.5
    )
    began = time.monotonic()
    with pytest.raises(RuntimeError, match=message):
        rpc.init_rpc("w", rank=rank, world_size=2, rpc_backend_options=options)
    assert time.monotonic() - began < 5
    with pytest.raises(RuntimeError, match="RPC has not been initialized"):
        rpc.get_worker_info()
