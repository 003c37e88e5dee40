"""The public calls of ``ember.distributed.rpc``: ``init_rpc``, ``rpc_sync``, ``rpc_async``,
``remote``, ``get_worker_info`` and ``shutdown``."""

from __future__ import annotations

import os
import threading
import time
from typing import Any

from ... import futures
from ..rendezvous import parse_init_method
from . import _autograd_contexts as contexts
from .agent import Agent, Deferred, current_agent, fail_barrier, set_current_agent
from .options import (
    DEFAULT_SHUTDOWN_TIMEOUT,
    UNSET_RPC_TIMEOUT,
    BackendType,
    RpcBackendOptions,
    TensorPipeRpcBackendOptions,
    WorkerInfo,
    check_worker_name,
)
from .rref import RRef, create_owned

_init_lock = threading.Lock()


def init_rpc(
    name: str,
    backend: BackendType | None = None,
    rank: int = -1,
    world_size: int | None = None,
    rpc_backend_options: RpcBackendOptions | None = None,
) -> None:
    """Start this worker's RPC agent and wait until all ``world_size`` workers have joined.

    The workers meet as ``rpc_backend_options.init_method`` says: ``env://`` (the default)
    reads ``MASTER_ADDR`` and ``MASTER_PORT`` (and ``RANK``/``WORLD_SIZE`` when not given),
    ``tcp://host:port`` names worker 0's address.

    Example::
        >>> os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"] = "127.0.0.1", "29500"
        >>> rpc.init_rpc("worker0", rank=0, world_size=2)
        >>> rpc.rpc_sync("worker1", ember.add, args=(ember.ones(2), 1))
        tensor([2., 2.])
        >>> rpc.shutdown()
    """
    if backend is not None and not isinstance(backend, BackendType):
        raise TypeError(f"Argument backend must be a member of BackendType, got {backend!r}")
    check_worker_name(name)
    if rpc_backend_options is None:
        rpc_backend_options = TensorPipeRpcBackendOptions()
    elif not isinstance(rpc_backend_options, TensorPipeRpcBackendOptions):
        rpc_backend_options = TensorPipeRpcBackendOptions(
            rpc_timeout=rpc_backend_options.rpc_timeout,
            init_method=rpc_backend_options.init_method,
        )
    if world_size is None:
        if "WORLD_SIZE" not in os.environ:
            raise ValueError(
                "ember.distributed.rpc needs world_size (or WORLD_SIZE): dynamic RPC groups, "
                "which workers join and leave, are not supported"
            )
        world_size = int(os.environ["WORLD_SIZE"])
    if rank is None or rank < 0:
        rank = int(os.environ.get("RANK", -1))
    if not 0 <= rank < world_size:
        raise ValueError(f"rank must be in [0, {world_size}), got {rank}")
    point = parse_init_method(rpc_backend_options.init_method, world_size, rank)
    with _init_lock:
        if _agent_or_none() is not None:
            raise RuntimeError("RPC is already initialized")
        contexts.set_worker_id(rank)
        agent = Agent(name, point, rpc_backend_options)
        set_current_agent(agent)
        try:
            agent.start()
        except BaseException:
            set_current_agent(None)
            raise


def _agent_or_none() -> Agent | None:
    try:
        return current_agent()
    except RuntimeError:
        return None


def get_worker_info(worker_name: str | None = None) -> WorkerInfo:
    """The WorkerInfo of the worker of that name (this worker's when None).

    Example::
        >>> rpc.get_worker_info()
        WorkerInfo(id=0, name=worker0)
    """
    agent = current_agent()
    if worker_name is None:
        return agent.info
    return agent.worker_info(worker_name)


def rpc_async(
    to, func, args: tuple | None = None, kwargs: dict | None = None, timeout=UNSET_RPC_TIMEOUT
) -> futures.Future:
    """Run ``func(*args, **kwargs)`` on worker ``to``; a Future of its result.

    ``timeout`` in seconds (0: none; unset: the agent's ``rpc_timeout``). An exception raised
    remotely is raised by the Future's ``wait`` as the same type, its message naming the
    remote worker and holding the remote traceback.

    Example::
        >>> fut = rpc.rpc_async("worker1", ember.add, args=(ember.ones(2), 3))
        >>> fut.wait()
        tensor([4., 4.])
    """
    return current_agent().send(to, func, args or (), kwargs or {}, timeout=float(timeout))


def rpc_sync(
    to, func, args: tuple | None = None, kwargs: dict | None = None, timeout=UNSET_RPC_TIMEOUT
) -> Any:
    """Run ``func(*args, **kwargs)`` on worker ``to`` and return its result (blocking).

    Example::
        >>> rpc.rpc_sync("worker1", ember.add, args=(ember.ones(2), 3))
        tensor([4., 4.])
    """
    return rpc_async(to, func, args, kwargs, timeout).wait()


def remote(
    to, func, args: tuple | None = None, kwargs: dict | None = None, timeout=UNSET_RPC_TIMEOUT
) -> RRef:
    """Run ``func(*args, **kwargs)`` on worker ``to``, keep the result there; an RRef to it.

    Returns at once; an error raised by ``func`` is raised by ``to_here``.

    Example::
        >>> rref = rpc.remote("worker1", ember.add, args=(ember.ones(2), 3))
        >>> rref.to_here()
        tensor([4., 4.])
    """
    agent = current_agent()
    owner = agent.worker_info(to)
    rref_id = agent.new_rref_id()
    to_self = owner.id == agent.rank
    value = agent.owned_future(rref_id) if to_self else None
    created = agent.send(
        owner,
        create_owned,
        (rref_id, func, args or (), kwargs or {}, not to_self),
        timeout=float(timeout),
    )
    return RRef._make(owner, rref_id, value, created, deletes=value is None)


def shutdown(graceful: bool = True, timeout: float = DEFAULT_SHUTDOWN_TIMEOUT) -> None:
    """Stop RPC on this worker.

    With ``graceful`` (the default) it first waits until every call this worker made has been
    answered and every worker has reached ``shutdown``, then until no worker has work left, so
    no worker stops while another still needs it. ``timeout`` (seconds, 0: none) bounds that.

    Example::
        >>> rpc.shutdown()
    """
    agent = current_agent()
    try:
        if graceful:
            deadline = None if not timeout else time.monotonic() + timeout
            agent._flush_rref_deletes()
            agent.wait_idle(deadline, incoming=False)
            _meet_at_worker_0(agent, 0, timeout)
            agent.wait_idle(deadline, incoming=True)
            _meet_at_worker_0(agent, 1, timeout)
            if agent.rank == 0:
                agent.wait_peers_hung_up(timeout or 10.0)
    finally:
        with _init_lock:
            set_current_agent(None)
        agent.close()
        contexts.clear_all()


def _meet_at_worker_0(agent: Agent, round_: int, timeout: float) -> None:
    agent.send(0, _arrive, (round_,), timeout=timeout or 0.0).wait()


def _arrive(round_: int) -> Deferred:
    """On worker 0: one more worker reached round ``round_`` of shutdown; answered once all have."""
    agent = current_agent()
    with agent.rref_lock:
        entry = agent.barriers.setdefault(round_, [0, futures.Future()])
        entry[0] += 1
        everyone = entry[0] == agent.world_size
        lost = next(iter(agent.lost_peers), None)
    if everyone:
        entry[1].set_result(None)
    elif lost is not None:
        fail_barrier(entry[1], agent, lost)
    return Deferred(entry[1])


_arrive._ember_rpc_not_counted = True  # waiting at the barrier is no work left to do
