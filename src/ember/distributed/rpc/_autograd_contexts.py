"""This worker's distributed autograd contexts and the send/recv records RPC adds to them.

A context (``ember.distributed.autograd.context()``) has an id unique across the workers (this
worker's id in the top 16 bits, a counter below, as torch's). While one is current in a thread,
each RPC message sent from that thread (a request, or the response to a request that came with
a context) that carries tensors requiring grad is recorded here as a *send*: those tensors, the
worker they went to and a send id. The worker that receives the message records a *recv*: the
tensors it rebuilt (leaves requiring grad), where they came from and that send id. The
distributed backward pass (``ember.distributed.autograd``) turns a recv's gradients into a
backward pass from the matching send on the worker that sent them.

It lives in the RPC package because the transport records into it; the autograd package reads
it and adds the backward pass on top.
"""

from __future__ import annotations

import itertools
import threading

_WORKER_SHIFT = 48  # torch's layout: 16 bits of worker id, 48 bits of a per-worker counter


class DistAutogradContext:
    """One distributed backward pass's records on this worker."""

    def __init__(self, context_id: int) -> None:
        self.context_id = context_id
        self.lock = threading.Lock()
        self.grads: dict = {}  # leaf tensor -> its accumulated gradient (keys hash by identity)
        self.sends: dict[int, tuple[tuple, int]] = {}  # send id -> (tensors, destination id)
        # id(rebuilt tensor) -> (tensor, source worker id, send id, position, how many)
        self.recvs: dict[int, tuple] = {}
        self.known_workers: set[int] = set()  # every worker this context exchanged messages with
        self.traversed: set[int] = set()  # sends a backward pass ran from, not yet released
        self._send_ids = itertools.count()

    def _next_send_id(self) -> int:
        return next(self._send_ids)

    def record_send(self, send_id: int, tensors: list, destination: int) -> None:
        with self.lock:
            self.sends[send_id] = (tuple(tensors), destination)

    def record_recv(self, tensors: list, source: int, send_id: int) -> None:
        count = len(tensors)
        with self.lock:
            for position, tensor in enumerate(tensors):
                self.recvs[id(tensor)] = (tensor, source, send_id, position, count)

    def accumulate(self, leaf, grad) -> None:
        """Add ``grad`` to the gradient this context holds for ``leaf`` (caller holds ``lock``)."""
        old = self.grads.get(leaf)
        self.grads[leaf] = grad if old is None else old + grad

    def __repr__(self) -> str:
        return f"DistAutogradContext(context_id={self.context_id})"


class _Contexts:
    """The table of contexts on this worker and the context current in each thread."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.by_id: dict[int, DistAutogradContext] = {}
        self.worker_id = 0
        self.counter = itertools.count()
        self.current = threading.local()


_contexts = _Contexts()


def set_worker_id(worker_id: int) -> None:
    """Called by ``init_rpc``: context ids made here carry this worker's id."""
    with _contexts.lock:
        _contexts.worker_id = worker_id
        _contexts.counter = itertools.count()


def current_context() -> DistAutogradContext | None:
    return getattr(_contexts.current, "context", None)


def set_current_context(context: DistAutogradContext | None) -> DistAutogradContext | None:
    """Make ``context`` current in this thread; the one that was."""
    previous = getattr(_contexts.current, "context", None)
    _contexts.current.context = context
    return previous


def new_context() -> DistAutogradContext:
    """A new context, current in this thread (torch refuses a second one in the same thread)."""
    if current_context() is not None:
        raise RuntimeError("Already have an autograd context id for this thread.")
    with _contexts.lock:
        context_id = (_contexts.worker_id << _WORKER_SHIFT) + next(_contexts.counter)
        context = _contexts.by_id[context_id] = DistAutogradContext(context_id)
    set_current_context(context)
    return context


def retrieve_context(context_id: int) -> DistAutogradContext:
    with _contexts.lock:
        context = _contexts.by_id.get(context_id)
    if context is None:
        raise RuntimeError(f"Could not find autograd context with id: {context_id}")
    return context


def get_or_create_context(context_id: int) -> DistAutogradContext:
    """The context of that id, made here if a message brings it for the first time."""
    with _contexts.lock:
        context = _contexts.by_id.get(context_id)
        if context is None:
            context = _contexts.by_id[context_id] = DistAutogradContext(context_id)
        return context


def release_context(context_id: int) -> DistAutogradContext | None:
    """Forget the context (and clear it from this thread if current); None if unknown here."""
    with _contexts.lock:
        context = _contexts.by_id.pop(context_id, None)
    current = current_context()
    if current is not None and current.context_id == context_id:
        set_current_context(None)
    return context


def clear_all() -> None:
    """Forget every context (RPC shut down)."""
    with _contexts.lock:
        _contexts.by_id.clear()
    set_current_context(None)
