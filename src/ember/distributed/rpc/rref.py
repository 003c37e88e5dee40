"""``RRef``: a reference to a value that lives on one worker (its owner).

``RRef(value)`` makes one owned here; ``rpc.remote`` makes one whose value the owner computes.
An RRef sent in an RPC message travels as (owner, id): on its owner it becomes the owner's RRef
again (with the value), elsewhere a user RRef that fetches the value with ``to_here``.

Lifetime, a simpler reference counting than torch's: the owner counts the user RRefs that may
fetch a value (the one ``remote`` gives its caller, and one per time the owner sends its RRef
to another worker); a user RRef that is garbage-collected tells the owner (with its next call),
and a value no user holds is dropped from the owner's table (its own RRef objects keep theirs).
A user RRef sent to its owner in a request (``rref.rpc_sync().f()``) is still counted: the owner
reads that request before any later word of the user letting go. One sent on otherwise (to a
third worker, or in a response) never tells, so its value stays on the owner until shutdown:
that saves torch's fork confirmations.
"""

from __future__ import annotations

import functools
from typing import Any, Generic, TypeVar

from ... import _op_namespace as ember
from ... import futures
from . import serialization
from .agent import Deferred, current_agent, is_async_function
from .options import UNSET_RPC_TIMEOUT, WorkerInfo

T = TypeVar("T")


class RRef(Generic[T]):
    """A remote reference: ``RRef(value)`` owns ``value`` on this worker.

    Example::
        >>> rref = rpc.remote("worker1", ember.add, args=(ember.ones(2), 3))
        >>> rref.to_here()
        tensor([4., 4.])
        >>> rref.owner_name()
        'worker1'
        >>> rref.rpc_sync().size()               # a method called on the owner
        ember.Size([2])
    """

    def __init__(self, value: T, type_hint=None) -> None:
        agent = current_agent()
        fut: futures.Future = futures.Future()
        fut.set_result(value)
        self._setup(agent.info, agent.new_rref_id(), fut, None, False)

    def _setup(self, owner: WorkerInfo, rref_id, value, created, deletes: bool) -> None:
        self._owner = owner
        self._id = rref_id
        self._value = value  # on the owner: the Future of the value; None on users
        self._created = created  # the Future of remote()'s call that makes the value
        self._deletes = deletes  # tell the owner when garbage-collected (never passed on)

    @classmethod
    def _make(cls, owner: WorkerInfo, rref_id, value, created=None, deletes=False) -> RRef:
        rref = cls.__new__(cls)
        rref._setup(owner, rref_id, value, created, deletes)
        return rref

    def is_owner(self) -> bool:
        """Whether this worker owns the value."""
        return self._value is not None

    def owner(self) -> WorkerInfo:
        """The WorkerInfo of the owner."""
        return self._owner

    def owner_name(self) -> str:
        return self._owner.name

    def confirmed_by_owner(self) -> bool:
        """Whether the owner knows of this RRef (remote()'s call has been answered)."""
        return self._created is None or self._created.done()

    def local_value(self) -> T:
        """The value, on the owner (waits until ``remote`` has computed it)."""
        if self._value is None:
            raise RuntimeError("Can't call RRef.local_value() on a non-owner RRef.")
        self._raise_if_creation_failed()
        return self._value.wait()

    def to_here(self, timeout: float = UNSET_RPC_TIMEOUT) -> T:
        """A copy of the value, fetched from the owner (the value itself on the owner)."""
        if self._value is not None:
            return self.local_value()
        self._raise_if_creation_failed()
        agent = current_agent()
        return agent.send(self._owner, _fetch_value, (self._id,), timeout=timeout).wait()

    def _raise_if_creation_failed(self) -> None:
        created = self._created
        if created is not None and created.done():
            try:
                created.wait()
            except RuntimeError as error:
                if "RPC ran for more than set timeout" in str(error):
                    raise RuntimeError(
                        "RRef creation via rpc.remote() timed out, and it is possible that the "
                        "RRef on the owner node does not exist."
                    ) from error
                raise

    def backward(self, dist_autograd_ctx_id: int = -1, retain_graph: bool = False) -> None:
        """Run backward from the value (a scalar tensor) on its owner: a distributed backward
        pass in context ``dist_autograd_ctx_id``, or, with -1, a local one into ``.grad``."""
        if dist_autograd_ctx_id != -1:
            if _DistributedBackward.run is None:  # then no context exists on this worker
                raise RuntimeError(
                    f"Could not find autograd context with id: {dist_autograd_ctx_id}"
                )
            _DistributedBackward.run(self, dist_autograd_ctx_id, retain_graph)
        elif self._value is not None:
            _local_backward(self, retain_graph)
        else:
            current_agent().send(self._owner, _local_backward, (self, retain_graph)).wait()

    def rpc_sync(self, timeout: float = UNSET_RPC_TIMEOUT):
        """A proxy whose method calls run on the owner and return the result:
        ``rref.rpc_sync().forward(x)``."""
        return _Proxy(self, "rpc_sync", timeout)

    def rpc_async(self, timeout: float = UNSET_RPC_TIMEOUT):
        """As ``rpc_sync``, each method call returning a Future."""
        return _Proxy(self, "rpc_async", timeout)

    def remote(self, timeout: float = UNSET_RPC_TIMEOUT):
        """As ``rpc_sync``, each method call returning an RRef of the result (on the owner)."""
        return _Proxy(self, "remote", timeout)

    def __repr__(self) -> str:
        created_on, local_id = self._id
        gid = f"GloballyUniqueId(created_on={created_on}, local_id={local_id})"
        if self._value is not None:
            return f"OwnerRRef({gid})"
        return f"UserRRef(RRefId = {gid})"

    def __reduce__(self):
        raise RuntimeError(
            "Can not pickle rref in python pickler, rref can only be pickled when using RPC"
        )

    def __del__(self) -> None:
        if getattr(self, "_deletes", False):
            try:
                agent = current_agent()
                agent.rref_deletes.append((self._owner.id, self._id))
            except Exception:  # RPC is shut down (the owner forgot everything), or Python is
                return


class _DistributedBackward:
    """``RRef.backward`` with a context: set by ``ember.distributed.autograd`` (imported by
    whoever made the context), which this package does not import."""

    run = None


def register_distributed_backward(run) -> None:
    _DistributedBackward.run = run


def _local_backward(rref: RRef, retain_graph: bool) -> None:
    value = rref.local_value()
    if not isinstance(value, ember.Tensor):
        raise RuntimeError(
            f"RRef should contain a tensor for .backward(), got {type(value).__name__}"
        )
    value.backward(retain_graph=retain_graph)


class _Proxy:
    """``rref.rpc_sync()``: attribute access gives a function that calls that method of the
    value on its owner."""

    def __init__(self, rref: RRef, kind: str, timeout: float) -> None:
        self._rref = rref
        self._kind = kind
        self._timeout = timeout

    def __getattr__(self, name: str):
        return functools.partial(self._call, name)

    def _call(self, name: str, *args, **kwargs):
        from . import api

        call = getattr(api, self._kind)
        return call(
            self._rref.owner(),
            _call_method,
            args=(self._rref, name, args, kwargs),
            timeout=self._timeout,
        )


def _call_method(rref: RRef, name: str, args: tuple, kwargs: dict) -> Any:
    """On the owner: ``rref.local_value().name(*args, **kwargs)``. Deferred where the value is
    still being made (no thread waits for it) or the method is an ``async_execution`` one."""
    rref._raise_if_creation_failed()
    made = rref._value
    if made.done():
        return _invoke(made.wait(), name, args, kwargs)
    answer: futures.Future = futures.Future()

    def run(done: futures.Future) -> None:
        try:
            result = _invoke(done.wait(), name, args, kwargs)
        except BaseException as error:
            answer.set_exception(error)
            return
        _fulfil(answer, result)

    made.add_done_callback(run)
    return Deferred(answer)


def _invoke(value, name: str, args: tuple, kwargs: dict) -> Any:
    method = getattr(value, name)
    result = method(*args, **kwargs)
    return Deferred(result) if is_async_function(method) else result


def _fetch_value(rref_id) -> Deferred:
    """On the owner: the value, when it is there."""
    return Deferred(current_agent().owned_future(rref_id))


def create_owned(rref_id, func, args: tuple, kwargs: dict, for_user: bool = True) -> None:
    """On the owner, for ``remote``: compute the value and keep it under ``rref_id`` (dropped
    when no user holds it any more, and then computed for its effects only)."""
    agent = current_agent()
    with agent.rref_lock:
        fut = agent.owned.get(rref_id)
    if fut is None:
        fut = futures.Future()
    try:
        value = func(*args, **kwargs)
        if is_async_function(func) and not isinstance(value, Deferred):
            value = Deferred(value)
    except BaseException as error:
        fut.set_exception(error)
        return
    _fulfil(fut, value)


def _count_the_creator(rref_id, func, args, kwargs, for_user: bool = True) -> None:
    """When ``create_owned``'s request arrives (in order with that worker's later messages):
    the RRef ``remote`` returned is the first user."""
    current_agent().owned_future(rref_id, new_user=for_user)


create_owned._ember_rpc_on_receipt = _count_the_creator


def _fulfil(target: futures.Future, value) -> None:
    """Give ``target`` ``value``, or for a :class:`Deferred` its future's outcome, once it comes."""
    if isinstance(value, Deferred):
        value.future.add_done_callback(lambda done: _settle(target, done))
    else:
        target.set_result(value)


def _settle(target: futures.Future, done: futures.Future) -> None:
    try:
        value = done.wait()
    except BaseException as error:
        target.set_exception(error)
        return
    target.set_result(value)


def _to_wire(rref: RRef, destination: int, request: bool):
    """What identifies ``rref`` on worker ``destination``."""
    if rref._value is not None:
        # one more user may fetch it (none if it comes back here, as the owner's own RRef)
        current_agent().owned_future(
            rref._id, new_user=destination != rref._owner.id, value=rref._value
        )
    elif not (request and destination == rref._owner.id):
        # passed on: the owner keeps the value from now on. A request to the owner needs no
        # such care: the owner reads it before any later word from here that we let go
        rref._deletes = False
    return (rref._owner, rref._id)


def _from_wire(wire, source: int) -> RRef:
    owner, rref_id = wire
    agent = current_agent()
    if owner.id == agent.rank:
        return RRef._make(owner, rref_id, agent.owned_future(rref_id))
    # counted by the owner when it sent it; from another user, it is not counted
    return RRef._make(owner, rref_id, None, deletes=source == owner.id)


serialization.register_rref_hooks(RRef, _to_wire, _from_wire)
