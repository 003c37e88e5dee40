"""``ember.distributed.rpc``: remote procedure calls and remote references, torch's API.

Workers (processes, on one machine or several) join with ``init_rpc``; then any worker runs
functions on any other with ``rpc_sync``/``rpc_async``, keeps results there with ``remote`` (an
``RRef``), and ``shutdown`` ends it once all are done. Arguments and results are pickled;
tensors travel by value. Inside ``ember.distributed.autograd.context()``, gradients flow back
through these calls. The transport is ``multiprocessing.connection`` over TCP (see ``agent``).

Example::
    >>> import ember, ember.distributed.rpc as rpc
    >>> rpc.init_rpc("worker0", rank=0, world_size=2)      # MASTER_ADDR, MASTER_PORT set
    >>> rpc.rpc_sync("worker1", ember.add, args=(ember.ones(2), 3))
    tensor([4., 4.])
    >>> rref = rpc.remote("worker1", ember.ones, args=(2,))
    >>> rref.to_here()
    tensor([1., 1.])
    >>> rpc.shutdown()
"""

from . import functions
from .agent import RemoteException
from .api import get_worker_info, init_rpc, remote, rpc_async, rpc_sync, shutdown
from .options import (
    DEFAULT_INIT_METHOD,
    DEFAULT_NUM_WORKER_THREADS,
    DEFAULT_RPC_TIMEOUT_SEC,
    DEFAULT_SHUTDOWN_TIMEOUT,
    UNSET_RPC_TIMEOUT,
    BackendType,
    RpcBackendOptions,
    TensorPipeRpcBackendOptions,
    WorkerInfo,
)
from .rref import RRef

PyRRef = RRef


def is_available() -> bool:
    """Whether RPC can be used (always, in ember: it needs only the standard library)."""
    return True


__all__ = [
    "BackendType",
    "DEFAULT_INIT_METHOD",
    "DEFAULT_NUM_WORKER_THREADS",
    "DEFAULT_RPC_TIMEOUT_SEC",
    "DEFAULT_SHUTDOWN_TIMEOUT",
    "PyRRef",
    "RRef",
    "RemoteException",
    "RpcBackendOptions",
    "TensorPipeRpcBackendOptions",
    "UNSET_RPC_TIMEOUT",
    "WorkerInfo",
    "functions",
    "get_worker_info",
    "init_rpc",
    "is_available",
    "remote",
    "rpc_async",
    "rpc_sync",
    "shutdown",
]
