"""``ember.distributed.autograd``: backward passes through RPC calls, torch's API.

Inside ``with context() as context_id:``, every RPC call that sends tensors requiring grad (as
arguments or as results) is recorded on both workers. ``backward(context_id, [loss])`` then
runs the backward pass on this worker and, where it reaches tensors that came from another
worker, sends their gradients there and continues the pass on that worker, and so on until all
are done. Gradients of leaves (parameters) go into the context on the worker that holds them,
not into ``.grad``: ``get_gradients(context_id)`` reads them there, and
``ember.distributed.optim.DistributedOptimizer`` steps with them.

Example::
    >>> import ember.distributed.autograd as dist_autograd
    >>> with dist_autograd.context() as context_id:
    ...     t1 = ember.rand(3, 3, requires_grad=True)
    ...     loss = rpc.rpc_sync("worker1", ember.add, args=(t1, 1)).sum()
    ...     dist_autograd.backward(context_id, [loss])
    ...     dist_autograd.get_gradients(context_id)[t1]
    tensor([[1., 1., 1.], ...])
"""

from .context import context, get_gradients
from .engine import backward


def is_available() -> bool:
    """Whether distributed autograd can be used (always, in ember)."""
    return True


__all__ = ["backward", "context", "get_gradients", "is_available"]
