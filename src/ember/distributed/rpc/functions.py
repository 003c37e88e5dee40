"""``rpc.functions.async_execution``: a function whose result is a Future, answered later."""

from __future__ import annotations

import functools
from collections.abc import Callable


def async_execution(fn: Callable) -> Callable:
    """Mark ``fn`` as returning an ``ember.futures.Future``: when called through RPC, the
    response is sent once that Future completes, and no RPC thread waits meanwhile (so a
    function can chain calls to other workers with ``then``).

    Put it innermost under ``@staticmethod``/``@classmethod``, as in torch.

    Example::
        >>> @rpc.functions.async_execution
        ... def add_then_double(to, x):
        ...     return rpc.rpc_async(to, ember.add, args=(x, 1)).then(lambda f: f.wait() * 2)
        >>> rpc.rpc_sync("worker1", add_then_double, args=("worker0", ember.ones(2)))
        tensor([4., 4.])
    """

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        return fn(*args, **kwargs)

    wrapper._wrapped_async_rpc_function = fn
    return wrapper
