"""``DistributedOptimizer``: one local optimizer per worker that owns parameters, stepped
through RPC with the gradients of a distributed autograd context."""

from __future__ import annotations

import threading

from .. import autograd as dist_autograd
from .. import rpc
from ..autograd.context import _is_valid_context


class _LocalOptimizer:
    """On a worker that owns parameters: a ``optim_cls`` over them, stepped with a context's
    gradients."""

    # Instances on one worker are assumed to step the same parameters (several trainers each
    # made a DistributedOptimizer over one model): steps take turns, as torch's do.
    step_lock = threading.Lock()

    def __init__(self, optim_cls, param_rrefs: list, *args, **kwargs) -> None:
        self._params = [rref.local_value() for rref in param_rrefs]
        self.optim = optim_cls(self._params, *args, **kwargs)

    def step(self, context_id: int) -> None:
        grads = dist_autograd.get_gradients(context_id)
        with _LocalOptimizer.step_lock:
            for param, grad in grads.items():
                param.grad = grad
            self.optim.step()


def _new_local_optimizer(optim_cls, param_rrefs: list, *args, **kwargs) -> rpc.RRef:
    return rpc.RRef(_LocalOptimizer(optim_cls, param_rrefs, *args, **kwargs))


def _local_step(optimizer_rref: rpc.RRef, context_id: int) -> None:
    optimizer_rref.local_value().step(context_id)


def _wait_all(pending: list) -> list:
    """Wait for every Future, then raise the first error among them (none is left running)."""
    results, first_error = [], None
    for fut in pending:
        try:
            results.append(fut.wait())
        except Exception as error:
            first_error = first_error or error
    if first_error is not None:
        raise first_error
    return results


class DistributedOptimizer:
    """Optimize parameters spread over workers, given as RRefs (``model.parameter_rrefs()``).

    On each worker that owns some of them, an ``optimizer_class(params, *args, **kwargs)`` is
    made; ``step(context_id)`` gives each its parameters' gradients from the distributed
    autograd context ``context_id`` and steps it, on all workers at once, returning when all
    are done.

    Example::
        >>> opt = DistributedOptimizer(ember.optim.SGD, param_rrefs, lr=0.05)
        >>> with dist_autograd.context() as context_id:
        ...     loss = loss_fn(remote_model(x), y)
        ...     dist_autograd.backward(context_id, [loss])
        ...     opt.step(context_id)
    """

    def __init__(self, optimizer_class, params_rref: list, *args, **kwargs) -> None:
        per_worker: dict = {}
        for param_rref in params_rref:
            per_worker.setdefault(param_rref.owner(), []).append(param_rref)
        pending = [
            rpc.rpc_async(
                worker,
                _new_local_optimizer,
                args=(optimizer_class, param_rrefs) + tuple(args),
                kwargs=kwargs,
            )
            for worker, param_rrefs in per_worker.items()
        ]
        self.remote_optimizers = _wait_all(pending)

    def step(self, context_id: int) -> None:
        """One step on every worker, with the gradients of ``context_id``."""
        _is_valid_context(context_id)
        _wait_all(
            [
                rpc.rpc_async(optimizer.owner(), _local_step, args=(optimizer, context_id))
                for optimizer in self.remote_optimizers
            ]
        )
