"""``context()`` and ``get_gradients``: a distributed backward pass's records, per worker.

The records themselves live in ``ember.distributed.rpc._autograd_contexts`` (the transport
writes them); this module is the user's handle on them. Leaving a context forgets it on this
worker and on every worker it exchanged messages with (those pass it on), as torch does.
"""

from __future__ import annotations

from ..rpc import _autograd_contexts as contexts
from ..rpc.agent import current_agent


class context:
    """A distributed autograd context: ``with context() as context_id:``.

    Example::
        >>> with dist_autograd.context() as context_id:
        ...     loss = rpc.rpc_sync("worker1", ember.add, args=(t1, t2)).sum()
        ...     dist_autograd.backward(context_id, [loss])
    """

    def __enter__(self) -> int:
        self.autograd_context = contexts.new_context()
        return self.autograd_context.context_id

    def __exit__(self, exc_type, exc_value, tb) -> None:
        _release(self.autograd_context.context_id)


def get_gradients(context_id: int) -> dict:
    """The gradients the distributed backward pass of ``context_id`` computed on this worker:
    a dict from each leaf tensor to its gradient.

    Example::
        >>> with dist_autograd.context() as context_id:
        ...     t1 = ember.rand(3, 3, requires_grad=True)
        ...     dist_autograd.backward(context_id, [(t1 * 2).sum()])
        ...     dist_autograd.get_gradients(context_id)[t1]
        tensor([[2., 2., 2.], ...])
    """
    found = contexts.retrieve_context(context_id)
    with found.lock:
        return dict(found.grads)


def _is_valid_context(context_id: int) -> None:
    """Raise torch's error unless ``context_id`` is a context known on this worker."""
    contexts.retrieve_context(context_id)


def _current_context():
    found = contexts.current_context()
    if found is None:
        raise RuntimeError(
            "Current thread doesn't have a valid autograd context. Please wrap your code using: "
            "`with torch.distributed.autograd.context() as context_id` to generate a valid "
            "context"
        )
    return found


def _release(context_id: int) -> None:
    released = contexts.release_context(context_id)
    if released is None or not released.known_workers:
        return
    try:
        agent = current_agent()
    except RuntimeError:
        return  # RPC is shut down: the other workers forgot it too
    for worker in released.known_workers:
        if worker != agent.rank:
            agent.send(worker, _release, (context_id,))
