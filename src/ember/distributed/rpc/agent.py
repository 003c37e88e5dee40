"""The RPC agent: one per process, it sends calls to the other workers and serves theirs.

Transport: ``multiprocessing.connection`` (standard library) over TCP. It frames messages, and
``Listener``/``Client`` with an ``authkey`` authenticate each connection by an HMAC challenge,
so ember adds no wire protocol of its own: a message is a few of its frames (a small header, the
pickle stream, the tensors' data: ``transport``, ``serialization``). MPI was the other candidate
and is not used: RPC needs any worker to call any other at any time from many threads, and
workers started as plain Python processes (not under ``mpiexec``) to meet; MPICH joins only
processes a process manager started, and ``MPI_THREAD_MULTIPLE`` is slow or absent in the
wheels. Every worker listens on a port of its own; worker 0 listens on ``MASTER_PORT`` (or the
``tcp://`` port), where the others first say their name, rank and port, and get the table of all
workers back (the rendezvous). The key is ``EMBER_RPC_AUTHKEY`` where set (the same on every
worker), else a fixed one: like torch's RPC, which has no authentication, a fixed key keeps out
strangers only, not attackers.

Each worker opens one connection to each worker it calls (itself included: calls to self go the
same way, so arguments are copied as for any other worker). Requests go out on it and responses
come back on it; a thread per connection reads (and unpickles, so a worker's messages are
read in the order it sent them). Requests run on a pool of ``num_worker_threads`` threads;
Futures complete on another pool, so a ``then`` callback may itself call and wait. Worker 0
keeps each worker's rendezvous connection open: one that closes before shutdown fails the
shutdown barrier instead of leaving the others waiting. A function marked ``async_execution``
(and the agent's own helpers that wait, such as fetching an RRef's value) returns a Future
instead of a value; the response goes when that Future completes, so no thread waits for it.
"""

from __future__ import annotations

import collections
import itertools
import socket
import threading
import time
import traceback
from concurrent.futures import ThreadPoolExecutor
from multiprocessing.connection import AuthenticationError, Client, Listener

from ... import futures
from ..rendezvous import RendezvousPoint, _publish, _read_published, _remove, _this_host
from . import _autograd_contexts as contexts
from . import serialization
from .options import TensorPipeRpcBackendOptions, WorkerInfo
from .transport import Deadlines, Link, authkey


class RemoteException:
    """An exception raised on a worker, as sent back: the text (with the remote traceback) and
    its type, re-created in the caller as ``exception_type(msg)``."""

    __slots__ = ("msg", "exception_type")

    def __init__(self, msg: str, exception_type: type) -> None:
        self.msg = msg
        self.exception_type = exception_type

    def __reduce__(self):
        return RemoteException, (self.msg, self.exception_type)

    def to_exception(self) -> BaseException:
        try:
            return self.exception_type(self.msg)
        except BaseException as error:  # a type that cannot be made from one string
            return RuntimeError(
                f"Failed to create original exception type. Error msg was {error} Original "
                f"exception on remote side was {self.msg}"
            )


class Deferred:
    """A handler's answer that comes later: the response is sent when ``future`` completes."""

    __slots__ = ("future",)

    def __init__(self, future: futures.Future) -> None:
        self.future = future


def is_async_function(func) -> bool:
    return getattr(func, "_wrapped_async_rpc_function", None) is not None


class Agent:
    """This process's RPC endpoint: rendezvous, the connections, the pool, pending calls."""

    def __init__(
        self, name: str, point: RendezvousPoint, options: TensorPipeRpcBackendOptions
    ) -> None:
        self.options = options
        self.rank = point.rank
        self.world_size = point.world_size
        self.info = WorkerInfo(name, point.rank)
        self._authkey = authkey()
        self._lock = threading.Lock()
        self._idle = threading.Condition(self._lock)
        self._pending: dict[int, tuple[futures.Future, int]] = {}
        self._message_ids = itertools.count()
        self._links: dict[int, Link] = {}
        self._incoming: list[Link] = []
        self._watched: list[Link] = []  # the rendezvous connections, kept to see peers go
        self._active = 0  # requests received and not yet answered
        self._closing = False
        self._joins: list = []  # worker 0, during the rendezvous: (conn, hello)
        self._joined = threading.Condition(self._lock)
        self.owned: dict = {}  # rref id -> Future of the value of an RRef this worker owns
        self.owned_users: dict = {}  # rref id -> how many user RRefs elsewhere may fetch it
        self.rref_lock = threading.Lock()
        self._rref_ids = itertools.count()
        # (owner id, rref id) of user RRefs garbage-collected: their owners are told on the next
        # call (an RRef's __del__ may run inside a send, so it only appends here)
        self.rref_deletes: collections.deque = collections.deque()
        self.barriers: dict = {}  # shutdown round -> [arrived, Future] (on worker 0)
        self.lost_peers: set[int] = set()  # workers whose connection closed before shutdown
        self.pool = ThreadPoolExecutor(
            options.num_worker_threads, thread_name_prefix=f"ember-rpc-{name}"
        )
        self._deadlines = Deadlines(self._expire)
        self._completions = ThreadPoolExecutor(32, thread_name_prefix=f"ember-rpc-done-{name}")
        port = point.master_port if point.rank == 0 and point.file_path is None else 0
        self._listener = Listener(("", port), "AF_INET", backlog=128, authkey=self._authkey)
        self._port = self._listener.address[1]
        self._accepter = threading.Thread(
            target=self._accept_loop, name="ember-rpc-accept", daemon=True
        )
        self._accepter.start()
        self._point = point
        # requests may arrive as soon as other workers know of this one: they wait for this
        self._ready = threading.Event()

    def start(self) -> None:
        """Meet the other workers; requests are served from then on. Call it once this agent is
        the current one: the requests' functions look it up."""
        timeout = self.options.rpc_timeout if self.options.rpc_timeout > 0 else 60.0
        try:
            self.workers, self._addresses = self._rendezvous(self._point, timeout)
        except BaseException:
            self.close()
            raise
        self._by_name = {w.name: w for w in self.workers}
        self._by_id = {w.id: w for w in self.workers}
        self._ready.set()

    # --- rendezvous ---------------------------------------------------------------------------
    def _rendezvous(self, point: RendezvousPoint, timeout: float):
        deadline = time.monotonic() + timeout
        if point.rank == 0:
            if point.file_path is None:
                return self._gather_workers(point.master_addr, deadline, timeout)
            _publish(point.file_path, _this_host(), self._port)
            try:
                return self._gather_workers(_this_host(), deadline, timeout)
            finally:  # every worker has read it (or none will): free the path for reuse
                _remove(point.file_path)
        while True:
            address = (point.master_addr, point.master_port)
            if point.file_path is not None:
                address = _read_published(point.file_path)
            try:
                if address is None:
                    raise ConnectionRefusedError
                conn = Client(address, "AF_INET", authkey=self._authkey)
                break
            except AuthenticationError as error:
                raise RuntimeError(
                    f"ember.distributed.rpc: worker 0 at {address[0]}:{address[1]} refused this "
                    "worker's key: set the same EMBER_RPC_AUTHKEY on every worker"
                ) from error
            except OSError:
                if time.monotonic() > deadline:
                    where = "its address" if address is None else f"{address[0]}:{address[1]}"
                    raise RuntimeError(
                        f"ember.distributed.rpc: worker {point.rank} ({self.info.name}) could "
                        f"not reach worker 0 at {where} within {timeout:g} seconds"
                    ) from None
                time.sleep(0.05)
        # this connection stays open until shutdown: worker 0 learns from it that this worker
        # is gone, should it end without shutdown
        self._watched.append(Link(conn, 0))
        with socket.fromfd(conn.fileno(), socket.AF_INET, socket.SOCK_STREAM) as s:
            my_host = s.getsockname()[0]  # the address worker 0 reached us from
        conn.send(("join", self.info.name, point.rank, point.world_size, my_host, self._port))
        if not conn.poll(max(0.0, deadline - time.monotonic())):
            raise RuntimeError(
                f"ember.distributed.rpc: worker {point.rank} timed out after {timeout:g} "
                "seconds waiting for the other workers to join"
            )
        reply = conn.recv()
        if reply[0] == "error":
            raise RuntimeError(reply[1])
        return reply[1], reply[2]

    def _gather_workers(self, host: str, deadline: float, timeout: float):
        with self._joined:
            while len(self._joins) < self.world_size - 1:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise RuntimeError(
                        f"ember.distributed.rpc: worker 0 timed out after {timeout:g} seconds "
                        f"waiting for the workers to join: {len(self._joins) + 1}/"
                        f"{self.world_size} joined"
                    )
                self._joined.wait(left)
            joins = list(self._joins)
        names = {0: self.info.name}
        addresses = {0: (host, self._port)}
        problem = None
        for _, (_, name, rank, world_size, peer_host, peer_port) in joins:
            if world_size != self.world_size:
                problem = f"world_size {world_size} of {name} differs from {self.world_size}"
            elif not 0 < rank < self.world_size or rank in names:
                problem = f"rank {rank} of {name} is out of range or already taken"
            elif name in names.values():
                problem = f"worker name {name} is used by two workers"
            names[rank] = name
            addresses[rank] = (peer_host, peer_port)
        reply = ("error", f"ember.distributed.rpc rendezvous: {problem}") if problem else None
        if reply is None:
            workers = [WorkerInfo(names[r], r) for r in range(self.world_size)]
            reply = ("workers", workers, addresses)
        for conn, hello in joins:
            try:
                conn.send(reply)
            except OSError:
                pass
            link = Link(conn, hello[2])
            self._watched.append(link)
            if not problem:
                threading.Thread(
                    target=self._watch, args=(link,), name="ember-rpc-watch", daemon=True
                ).start()
        if problem:
            raise RuntimeError(reply[1])
        return reply[1], reply[2]

    # --- connections --------------------------------------------------------------------------
    def _accept_loop(self) -> None:
        while not self._closing:
            try:
                conn = self._listener.accept()
            except (AuthenticationError, EOFError, ConnectionError):
                # a stranger, a worker with another key, or close() waking this loop
                continue
            except OSError:
                return  # the listener is closed
            if self._closing:
                conn.close()
                return
            threading.Thread(
                target=self._first_message, args=(conn,), name="ember-rpc-serve", daemon=True
            ).start()

    def _first_message(self, conn) -> None:
        try:
            hello = conn.recv()
        except (EOFError, OSError):
            conn.close()
            return
        if hello[0] == "join":
            with self._joined:
                self._joins.append((conn, hello))
                self._joined.notify_all()
            return
        if hello[0] != "peer":
            conn.close()
            return
        link = Link(conn, hello[1])
        with self._lock:
            self._incoming.append(link)
        self._serve(link)

    def _watch(self, link: Link) -> None:
        """Worker 0: wait for the end of a worker's rendezvous connection (shut down, or died)."""
        try:
            while True:
                link.conn.recv_bytes()
        except (EOFError, OSError):
            self._peer_lost(link.peer)

    def _link_to(self, worker_id: int) -> Link:
        with self._lock:
            link = self._links.get(worker_id)
            if link is not None:
                return link
            if self._closing:
                raise RuntimeError("ember.distributed.rpc: the RPC agent is shut down")
            conn = Client(tuple(self._addresses[worker_id]), "AF_INET", authkey=self._authkey)
            conn.send(("peer", self.rank))
            link = self._links[worker_id] = Link(conn, worker_id)
        threading.Thread(
            target=self._read_responses, args=(link,), name="ember-rpc-responses", daemon=True
        ).start()
        return link

    # --- RRefs this worker owns ---------------------------------------------------------------
    def new_rref_id(self) -> tuple[int, int]:
        return (self.rank, next(self._rref_ids))

    def owned_future(self, rref_id, new_user: bool = False, value=None) -> futures.Future:
        """The Future of an owned RRef's value (``value`` or a new one if it is not known yet);
        ``new_user``: one more user RRef elsewhere holds it."""
        with self.rref_lock:
            fut = self.owned.get(rref_id)
            if fut is None:
                fut = self.owned[rref_id] = value if value is not None else futures.Future()
            if new_user:
                self.owned_users[rref_id] = self.owned_users.get(rref_id, 0) + 1
            return fut

    def forget_owned(self, rref_ids) -> None:
        """Users let go of these RRefs: a value no user holds any more is dropped here (the
        owner's own RRef objects keep theirs)."""
        with self.rref_lock:
            for rref_id in rref_ids:
                left = self.owned_users.get(rref_id, 0) - 1
                if left > 0:
                    self.owned_users[rref_id] = left
                else:
                    self.owned_users.pop(rref_id, None)
                    self.owned.pop(rref_id, None)

    def _flush_rref_deletes(self) -> None:
        by_owner: dict[int, list] = {}
        while self.rref_deletes:
            try:
                owner, rref_id = self.rref_deletes.popleft()
            except IndexError:
                break
            by_owner.setdefault(owner, []).append(rref_id)
        for owner, rref_ids in by_owner.items():
            if owner == self.rank:
                self.forget_owned(rref_ids)
            else:
                self.send(owner, _forget_owned_rrefs, (rref_ids,), flush=False)

    # --- calling ------------------------------------------------------------------------------
    def worker_info(self, to) -> WorkerInfo:
        """The WorkerInfo of ``to``: a name, a WorkerInfo or an id."""
        where = f"name:{self.info.name},rank:{self.rank} could not find destination"
        if isinstance(to, WorkerInfo):
            if self._by_id.get(to.id) != to:
                raise RuntimeError(f"{where} name {to.name}")
            return to
        if isinstance(to, str):
            info = self._by_name.get(to)
            if info is None:
                raise RuntimeError(f"{where} name {to}")
            return info
        if isinstance(to, int) and not isinstance(to, bool):
            info = self._by_id.get(to)
            if info is None:
                raise RuntimeError(f"{where} id {to}")
            return info
        raise TypeError(f"to must be a worker name, a WorkerInfo or an id, got {to!r}")

    def send(
        self, to, func, args=(), kwargs=None, timeout: float = -1.0, flush: bool = True
    ) -> futures.Future:
        """Call ``func(*args, **kwargs)`` on worker ``to``; a Future of its result."""
        destination = self.worker_info(to).id
        if flush and self.rref_deletes:
            self._flush_rref_deletes()
        if timeout < 0:
            timeout = self.options.rpc_timeout
        context = contexts.current_context()
        send_id = None if context is None else context._next_send_id()
        payload, grad_tensors = serialization.dumps(
            (func, tuple(args or ()), dict(kwargs or {})), destination
        )
        if context is not None:
            context.known_workers.add(destination)
            if grad_tensors:
                context.record_send(send_id, grad_tensors, destination)
        fut: futures.Future = futures.Future()
        message_id = next(self._message_ids)
        with self._lock:
            if self._closing:
                raise RuntimeError("ember.distributed.rpc: the RPC agent is shut down")
            self._pending[message_id] = (fut, destination)
        if timeout > 0:
            self._deadlines.add(time.monotonic() + timeout, message_id, timeout)
        context_id = None if context is None else context.context_id
        try:
            self._link_to(destination).send_pair((message_id, context_id, send_id), payload)
        except (OSError, EOFError, RuntimeError, AuthenticationError) as error:
            name = self._by_id[destination].name
            self._fail(
                message_id,
                RuntimeError(f"ember.distributed.rpc: sending to {name} failed: {error!r}"),
            )
        return fut

    def _fail(self, message_id: int, error: BaseException) -> None:
        with self._lock:
            entry = self._pending.pop(message_id, None)
            self._idle.notify_all()
        if entry is not None:
            entry[0].set_exception(error)

    def _expire(self, message_id: int, timeout: float) -> None:
        self._fail(
            message_id,
            RuntimeError(
                f"RPC ran for more than set timeout ({int(round(timeout * 1000))} ms) and will "
                "now be marked with an error"
            ),
        )

    def _read_responses(self, link: Link) -> None:
        while True:
            try:
                header, payload = link.receive_pair()
            except (EOFError, OSError):
                break
            message_id, ok, context_id, send_id = header
            try:
                value, grad_tensors = serialization.loads(
                    payload, link.peer, recording=context_id is not None
                )
            except Exception as error:
                ok, value = (
                    False,
                    RemoteException(
                        f"ember.distributed.rpc: the response from worker {link.peer} could not be "
                        f"unpickled: {error!r}",
                        RuntimeError,
                    ),
                )
                grad_tensors = []
            if context_id is not None and grad_tensors:
                context = contexts.get_or_create_context(context_id)
                context.known_workers.add(link.peer)
                context.record_recv(grad_tensors, link.peer, send_id)
            with self._lock:
                entry = self._pending.pop(message_id, None)
                self._idle.notify_all()
            if entry is None:
                continue  # timed out already
            # not on this thread: a callback (``then``) may make a call and wait for its answer,
            # which only this thread can read
            if ok:
                self._completions.submit(entry[0].set_result, value)
            else:
                self._completions.submit(entry[0].set_exception, value.to_exception())
        # the peer is gone: what still waits for it will not be answered
        self._peer_lost(link.peer)
        with self._lock:
            lost = [(i, e) for i, e in self._pending.items() if e[1] == link.peer]
            closing = self._closing
        for message_id, _ in lost:
            name = self._by_id[link.peer].name if hasattr(self, "_by_id") else link.peer
            self._fail(
                message_id,
                RuntimeError(
                    f"ember.distributed.rpc: the connection to worker {name} closed"
                    + (" (RPC is shutting down)" if closing else "")
                ),
            )

    # --- serving ------------------------------------------------------------------------------
    def _serve(self, link: Link) -> None:
        self._ready.wait()
        while not self._closing:
            try:
                header, payload = link.receive_pair()
            except (EOFError, OSError):
                link.finished = True
                self._peer_lost(link.peer)
                return
            with self._lock:
                self._active += 1
            # loaded here, in arrival order: an RRef a message brings is resolved before a later
            # message from the same worker can say that it let go of that RRef
            request = self._load_request(link, header, payload)
            if not isinstance(request, RemoteException) and getattr(
                request[0], "_ember_rpc_inline", False
            ):
                self._handle(link, header, request)  # quick bookkeeping, kept in order too
                continue
            try:
                self.pool.submit(self._handle, link, header, request)
            except RuntimeError:  # the pool is shut down
                self._request_done()
                return

    def _load_request(self, link: Link, header, payload):
        """(func, args, kwargs, context) of a request, or the RemoteException to answer with."""
        _, context_id, send_id = header
        try:
            (func, args, kwargs), grad_tensors = serialization.loads(
                payload, link.peer, recording=context_id is not None
            )
            context = None
            if context_id is not None:
                context = contexts.get_or_create_context(context_id)
                context.known_workers.add(link.peer)
                if grad_tensors:
                    context.record_recv(grad_tensors, link.peer, send_id)
            on_receipt = getattr(func, "_ember_rpc_on_receipt", None)
            if on_receipt is not None:
                on_receipt(*args, **kwargs)
        except Exception as error:
            return self._wrap(error)
        return func, args, kwargs, context

    def _peer_lost(self, peer: int) -> None:
        """A worker hung up: if it has not been through shutdown, a shutdown barrier waiting
        for it would wait forever, so it fails."""
        if self._closing or peer == self.rank:
            return
        with self.rref_lock:
            self.lost_peers.add(peer)
            waiting = [entry[1] for entry in self.barriers.values() if not entry[1].done()]
        for fut in waiting:
            fail_barrier(fut, self, peer)

    def _request_done(self) -> None:
        with self._lock:
            self._active -= 1
            self._idle.notify_all()

    def _handle(self, link: Link, header, request) -> None:
        message_id = header[0]
        if isinstance(request, RemoteException):  # it could not be read
            self._respond(link, message_id, None, False, request, True)
            return
        func, args, kwargs, context = request
        counted = True
        try:
            if getattr(func, "_ember_rpc_not_counted", False):
                self._request_done()  # the shutdown barrier: waiting there is not work
                counted = False
            previous = contexts.set_current_context(context)
            try:
                result = func(*args, **kwargs)
            finally:
                contexts.set_current_context(previous)
            if is_async_function(func) and not isinstance(result, Deferred):
                if not isinstance(result, futures.Future):
                    raise TypeError(
                        "Functions decorated with @rpc.functions.async_execution must return a "
                        f"torch.futures.Future object, but got {type(result)}"
                    )
                result = Deferred(result)
            if isinstance(result, Deferred):
                result.future.add_done_callback(
                    lambda fut: self._respond_with_future(link, message_id, context, fut, counted)
                )
                return
        except BaseException as error:  # SystemExit too: the caller must hear of it
            self._respond(link, message_id, context, False, self._wrap(error), counted)
            return
        self._respond(link, message_id, context, True, result, counted)

    def _wrap(self, error: BaseException) -> RemoteException:
        text = "".join(traceback.format_exception(type(error), error, error.__traceback__))
        return RemoteException(f"On {self.info}:\n{error!r}\n{text}", type(error))

    def _respond_with_future(self, link, message_id, context, fut, counted: bool) -> None:
        try:
            value = fut.wait()
        except BaseException as error:
            self._respond(link, message_id, context, False, self._wrap(error), counted)
            return
        self._respond(link, message_id, context, True, value, counted)

    def _respond(self, link: Link, message_id: int, context, ok: bool, value, counted) -> None:
        """Send the response; ``counted``: the request counts as work until answered."""
        try:
            send_id = None if context is None else context._next_send_id()
            try:
                payload, grad_tensors = serialization.dumps(value, link.peer, request=False)
            except Exception as error:
                ok, grad_tensors = False, []
                remote = value if isinstance(value, RemoteException) else self._wrap(error)
                try:
                    payload, _ = serialization.dumps(remote, link.peer, request=False)
                except Exception:  # an exception type that does not pickle
                    payload, _ = serialization.dumps(
                        RemoteException(remote.msg, RuntimeError), link.peer, request=False
                    )
            if context is not None and grad_tensors:
                context.record_send(send_id, grad_tensors, link.peer)
            context_id = None if context is None else context.context_id
            try:
                link.send_pair((message_id, ok, context_id, send_id), payload)
            except OSError:
                pass  # the caller is gone
        finally:
            if counted:
                self._request_done()

    # --- shutting down ------------------------------------------------------------------------
    def wait_idle(self, deadline: float | None, incoming: bool) -> None:
        """Until nothing this worker sent is unanswered (and, with ``incoming``, nothing it
        received is unanswered either)."""
        with self._idle:
            while self._pending or (incoming and self._active):
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    raise RuntimeError(
                        f"ember.distributed.rpc: shutdown timed out with {len(self._pending)} "
                        f"calls unanswered and {self._active} requests running on "
                        f"{self.info.name}"
                    )
                self._idle.wait(left if left is None else min(left, 1.0))

    def wait_peers_hung_up(self, timeout: float) -> None:
        """Worker 0, at the end: the others have closed their connections (so every response to
        them has gone out)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._lock:
                links = [link for link in self._incoming if link.peer != self.rank]
            if all(link.finished for link in links):
                return
            time.sleep(0.01)

    def close(self) -> None:
        with self._lock:
            self._closing = True
            links = list(self._links.values()) + list(self._incoming) + list(self._watched)
            pending = list(self._pending)
        for message_id in pending:
            self._fail(message_id, RuntimeError("ember.distributed.rpc: RPC was shut down"))
        try:  # wake the accept loop (closing a listening socket does not, on Linux)
            socket.create_connection(("127.0.0.1", self._port), timeout=1.0).close()
        except OSError:
            pass
        self._listener.close()
        for link in links:
            link.hang_up()
        self._ready.set()  # a reader waiting for the rendezvous sees the agent closing
        self._deadlines.stop()
        self.pool.shutdown(wait=False, cancel_futures=True)
        self._completions.shutdown(wait=False)


class _Current:
    agent: Agent | None = None


def current_agent() -> Agent:
    """This process's agent; torch's error where ``init_rpc`` has not run."""
    agent = _Current.agent
    if agent is None:
        raise RuntimeError(
            "RPC has not been initialized. Call torch.distributed.rpc.init_rpc first."
        )
    return agent


def set_current_agent(agent: Agent | None) -> None:
    _Current.agent = agent


def _forget_owned_rrefs(rref_ids: list) -> None:
    """On an owner: its users let go of these RRefs."""
    current_agent().forget_owned(rref_ids)


_forget_owned_rrefs._ember_rpc_inline = True


def fail_barrier(fut: futures.Future, agent: Agent, peer: int) -> None:
    name = agent._by_id[peer].name if peer in getattr(agent, "_by_id", {}) else peer
    try:
        fut.set_exception(
            RuntimeError(
                f"ember.distributed.rpc: shutdown cannot complete: worker {name} closed its "
                "connection before reaching shutdown"
            )
        )
    except RuntimeError:
        pass  # completed meanwhile
