"""``ember.distributed``: process groups and collectives over MPI (mpi4py).

The CPU backends ``"gloo"`` and ``"mpi"`` both run on MPI, so PyTorch scripts that ask for gloo
run unchanged; ``"nccl"`` runs CUDA tensors through CuPy's NCCL bindings. DDP's communication
hooks and ``Join`` live in ``ember.distributed.algorithms``. Start one process per rank with
``ember.multiprocessing.spawn`` (each rank under ``mpiexec -n 1``), with ``ember run`` (torchrun's
flags), or all at once with ``mpiexec -n N python script.py``.

Example::
    >>> import ember, ember.distributed as dist
    >>> dist.init_process_group("gloo", init_method="tcp://127.0.0.1:29500",
    ...                         world_size=2, rank=rank)
    >>> t = ember.ones(2)
    >>> dist.all_reduce(t)                    # tensor([2., 2.]) on both ranks
    >>> dist.destroy_process_group()
"""

from .. import _distributed_hook
from . import _registered, algorithms
from .collectives import (
    P2POp,
    RedOpType,
    ReduceOp,
    Work,
    all_gather,
    all_gather_into_tensor,
    all_reduce,
    all_to_all,
    all_to_all_single,
    barrier,
    batch_isend_irecv,
    broadcast,
    gather,
    irecv,
    isend,
    monitored_barrier,
    recv,
    reduce,
    reduce_op,
    reduce_scatter,
    reduce_scatter_tensor,
    scatter,
    send,
    supports_complex,
)
from .errors import DistBackendError, DistError, DistNetworkError, DistStoreError, QueueEmptyError
from .grad_bucket import BuiltinCommHookType, GradBucket
from .object_collectives import (
    all_gather_object,
    broadcast_object_list,
    gather_object,
    recv_object_list,
    scatter_object_list,
    send_object_list,
)
from .process_group import (
    Backend,
    GroupMember,
    ProcessGroup,
    default_pg_timeout,
    destroy_process_group,
    get_backend,
    get_default_backend_for_device,
    get_global_rank,
    get_group_rank,
    get_node_local_rank,
    get_pg_count,
    get_process_group_ranks,
    get_rank,
    get_world_size,
    group,
    init_process_group,
    is_available,
    is_backend_available,
    is_gloo_available,
    is_initialized,
    is_mpi_available,
    is_nccl_available,
    is_torchelastic_launched,
    new_group,
)

# nn.SyncBatchNorm, nn.parallel.DistributedDataParallel and utils.data.DistributedSampler (the
# layer below) reach process groups through this registration, never by importing this package
_distributed_hook.DISTRIBUTED = _registered

# torch.distributed.rpc and .autograd are attributes after `import torch`; here they load when
# first reached, so `import ember` does not start the RPC package
_SUBMODULES_ON_FIRST_USE = ("rpc", "autograd")


def __getattr__(name: str):
    if name in _SUBMODULES_ON_FIRST_USE:
        import importlib

        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
