"""Process groups: the default world, ``new_group``, and the queries about them.

The CPU backends ``"gloo"`` and ``"mpi"`` are both MPI underneath (mpi4py): ``"gloo"`` is accepted
so PyTorch scripts run unchanged. ``"nccl"`` runs CUDA tensors through ``ember.distributed.nccl``
(its communicator made on the first CUDA collective, over the same MPI world). Under
``mpiexec -n N`` the world is MPI's own; otherwise the ranks meet through
``ember.distributed.rendezvous``.
"""

from __future__ import annotations

import datetime
import os

from .._distributed_hook import NOT_INITIALIZED as _NOT_INITIALIZED
from .._distributed_hook import is_available

default_pg_timeout = datetime.timedelta(minutes=30)


class Backend(str):
    """A backend name: ``Backend("gloo") == "gloo"``."""

    UNDEFINED = "undefined"
    GLOO = "gloo"
    MPI = "mpi"
    NCCL = "nccl"

    def __new__(cls, name: str):
        value = name.lower()
        if ":" in value:  # "cpu:gloo,cuda:nccl": a backend per device type
            _device_backends(value)
        elif value not in ("gloo", "mpi", "nccl", "undefined"):
            raise ValueError(f"Invalid backend: '{name}'")
        return str.__new__(cls, value)


def _device_backends(name: str) -> dict[str, str]:
    """Which backend serves which device type, from a backend name."""
    if ":" not in name:
        return {"cuda": "nccl"} if name == "nccl" else {"cpu": name}
    found = {}
    for part in name.split(","):
        kind, _, backend = part.strip().partition(":")
        if kind not in ("cpu", "cuda") or backend not in ("gloo", "mpi", "nccl"):
            raise ValueError(f"Invalid backend: '{name}'")
        if (kind == "cuda") != (backend == "nccl"):
            raise ValueError(
                f"Invalid backend: '{name}' (ember runs CPU tensors on gloo/mpi and CUDA tensors "
                "on nccl)"
            )
        found[kind] = backend
    return found


class ProcessGroup:
    """A set of ranks sharing one MPI communicator; ``ranks`` are their global ranks in order.

    ``timeout`` (seconds) is how long a collective on the group may wait. After a collective
    failed (a rank died, the timeout passed), ``_failure`` says why and the group refuses further
    collectives; ``_abandoned`` keeps the failed operations' requests and buffers alive, since MPI
    may still write into them.
    """

    def __init__(self, comm, backend: str, ranks: list[int], timeout: float | None = None):
        self.comm = comm
        self._backend = backend
        self._ranks = ranks
        self.timeout = _timeout_seconds(timeout)
        self._failure: str | None = None
        self._abandoned: list = []
        self._device_backends = _device_backends(backend)
        self.nccl = None  # the NCCL communicator of CUDA collectives, made on first use
        if "cuda" in self._device_backends:
            from .nccl import NcclCommunicator

            self.nccl = NcclCommunicator(self)
        self._late_arrivals: list = []  # monitored_barrier's receives from ranks that came late

    def rank(self) -> int:
        return self.comm.Get_rank()

    def size(self) -> int:
        return self.comm.Get_size()

    def name(self) -> str:
        return self._backend

    def group_rank(self, global_rank: int) -> int:
        """This group's rank of a global rank (PyTorch's ``src``/``dst`` are global ranks); the
        world's ranks are the global ranks, unchecked as in torch (a collective checks them)."""
        if self is _world:
            return global_rank
        try:
            return self._ranks.index(global_rank)
        except ValueError:
            raise ValueError(
                f"Global rank {global_rank} is not part of group {self._ranks}"
            ) from None

    def _collect_late_arrivals(self, seconds: float = 5.0) -> None:
        """Receive what late ranks sent to a monitored_barrier that had given up on them."""
        import time

        deadline = time.monotonic() + seconds
        while self._late_arrivals and time.monotonic() < deadline:
            self._late_arrivals = [(r, buf) for r, buf in self._late_arrivals if not r.Test()]
            time.sleep(0.001)

    def __repr__(self) -> str:
        return f"ProcessGroup(backend={self._backend!r}, ranks={self._ranks})"


class GroupMember:
    WORLD = None
    NON_GROUP_MEMBER = object()


group = GroupMember  # torch.distributed.group.WORLD
_world: ProcessGroup | None = None
_subgroups: list[ProcessGroup] = []


def is_initialized() -> bool:
    return _world is not None


def is_mpi_available() -> bool:
    return is_available()


def is_gloo_available() -> bool:
    return is_available()


def is_nccl_available() -> bool:
    """True when CuPy's NCCL bindings and a CUDA GPU are there (the nccl backend)."""
    from .nccl import is_available as nccl_available

    return nccl_available()


def is_torchelastic_launched() -> bool:
    return os.environ.get("TORCHELASTIC_RUN_ID") is not None


def is_backend_available(backend: str) -> bool:
    """True for the backends ember can run here (gloo and mpi on mpi4py, nccl on CuPy)."""
    if backend.lower() == "nccl":
        return is_available() and is_nccl_available()
    return backend.lower() in ("gloo", "mpi") and is_available()


def get_default_backend_for_device(device) -> str:
    kind = getattr(device, "type", None) or str(device).split(":")[0]
    backend = {"cpu": "gloo", "cuda": "nccl"}.get(kind)
    if backend is None:
        raise ValueError(f"Default backend not registered for device : {device}")
    return backend


def get_node_local_rank(fallback_rank: int | None = None) -> int:
    """This process's rank on its machine (``LOCAL_RANK``, set by spawn and the launcher)."""
    if "LOCAL_RANK" in os.environ:
        return int(os.environ["LOCAL_RANK"])
    if fallback_rank is not None:
        return int(fallback_rank)
    raise RuntimeError(
        "LOCAL_RANK is not in the environment. Consider passing fallback_rank to allow "
        "`get_node_local_rank` to work, assuming you are not running in a multi-device context "
        "and want the code to run locally instead."
    )


def get_pg_count() -> int:
    """How many process groups exist (the world and its subgroups)."""
    return (0 if _world is None else 1) + len(_subgroups)


def _timeout_seconds(timeout) -> float:
    if timeout is None:
        return default_pg_timeout.total_seconds()
    if isinstance(timeout, datetime.timedelta):
        return timeout.total_seconds()
    return float(timeout)


def init_process_group(
    backend: str | None = None,
    init_method: str | None = None,
    timeout: datetime.timedelta | None = None,
    world_size: int = -1,
    rank: int = -1,
    store=None,
    group_name: str = "",
    pg_options=None,
    device_id=None,
) -> None:
    """Join this process to the default process group.

    ``backend`` is ``"gloo"`` or ``"mpi"`` (both MPI underneath, CPU tensors), ``"nccl"`` (CUDA
    tensors through CuPy's NCCL), ``"cpu:gloo,cuda:nccl"`` (both), or None (gloo, plus nccl
    where CuPy sees a GPU).
    ``init_method`` is ``"env://"`` (``MASTER_ADDR``, ``MASTER_PORT``, ``RANK``, ``WORLD_SIZE``)
    or ``"tcp://host:port"`` or ``"file:///shared/path"`` (a file all ranks can see; removed once
    the ranks have met, so the path can be used again). Each rank must have been started by an
    MPI process manager: ``ember.multiprocessing.spawn`` or ``mpiexec``.

    Example::
        >>> import ember.distributed as dist
        >>> dist.init_process_group("gloo", init_method="tcp://127.0.0.1:29500",
        ...                         world_size=2, rank=rank)
    """
    global _world
    if _world is not None:
        raise ValueError("trying to initialize the default process group twice!")
    if store is not None:
        raise NotImplementedError("ember.distributed: store= is not supported; use init_method")
    if backend is None:  # as torch: gloo for CPU tensors, and nccl for CUDA ones if it can
        name = Backend("cpu:gloo,cuda:nccl" if is_nccl_available() else "gloo")
    else:
        name = Backend(backend)
    if _device_backends(name).get("cuda") == "nccl":
        from .nccl import check_available

        check_available()
    if not is_available():
        raise RuntimeError(
            "ember.distributed needs mpi4py: pip install 'ember[distributed]' (mpi4py and mpich)"
        )
    # UCX (under MPICH) logs the loss of a peer in its own words: a warning per operation a
    # dead rank left unfinished (at exit), and an error when the peer died in the middle of a
    # copy out of its memory ("cma_ep.c ... process_vm_readv ... No such process"), which a
    # launcher's Ctrl-C can cause however it orders the ranks' ends. ember.distributed.liveness
    # reports every such loss itself (a DistBackendError naming the rank), so only UCX's fatal
    # messages are kept; UCX_LOG_LEVEL set by the user wins.
    os.environ.setdefault("UCX_LOG_LEVEL", "fatal")
    from mpi4py import MPI

    mpi_world = MPI.COMM_WORLD
    if mpi_world.Get_size() > 1 and init_method is None:
        # all ranks started by one `mpiexec -n N`: MPI's own world is the process group
        init_method = "mpi://"
    known_host = os.environ.get("MASTER_ADDR")  # where the other ranks reach rank 0
    if init_method == "mpi://":
        if world_size not in (-1, mpi_world.Get_size()) or rank not in (-1, mpi_world.Get_rank()):
            raise ValueError(
                f"init_process_group: world_size={world_size}, rank={rank} disagree with "
                f"mpiexec's world of {mpi_world.Get_size()} where this is rank "
                f"{mpi_world.Get_rank()}"
            )
        comm = mpi_world.Dup()
    else:
        from .rendezvous import check_launched_by_process_manager, join_world, parse_init_method

        point = parse_init_method(init_method or "env://", world_size, rank)
        world_size, rank = point.world_size, point.rank
        known_host = point.master_addr or None
        if not 0 <= rank < world_size:
            raise ValueError(f"Invalid rank {rank} for a world of size {world_size}")
        if world_size == 1:
            comm = MPI.COMM_SELF.Dup()
        else:
            check_launched_by_process_manager(world_size)
            comm = join_world(point, _timeout_seconds(timeout))
            # admitted in rank order already; the split makes the order a guarantee
            ordered = comm.Split(0, rank)
            comm.Free()
            comm = ordered
    if comm.Get_size() > 1:
        from . import liveness, watchdog

        liveness.connect(comm, known_host)
        watchdog.start(_timeout_seconds(timeout), comm.Get_rank())
    _world = ProcessGroup(comm, str(name), list(range(comm.Get_size())), timeout)
    GroupMember.WORLD = _world


def destroy_process_group(group: ProcessGroup | None = None) -> None:
    """Leave the default group (and all subgroups), or free one subgroup.

    A peer still waiting for this rank in a collective hears of it at once and raises.
    """
    global _world
    if group is None or group is _world:
        if _world is None:
            raise AssertionError("Process group cannot be None")
        for sub in _subgroups:
            sub._collect_late_arrivals()
            if sub.nccl is not None:
                sub.nccl.destroy()
            sub.comm.Free()
        _subgroups.clear()
        from . import liveness, watchdog

        died = any(r not in liveness.left for r in liveness.lost)
        watchdog.stop()
        liveness.disconnect()
        _world._collect_late_arrivals()
        if _world.nccl is not None:
            _world.nccl.destroy()
        # Disconnect (not Free) so MPI_Finalize at exit does not wait on the other ranks; but it
        # waits for the operations still under way on the group, and those a dead rank left
        # (a failed collective, an async one never waited for) never end: then just drop it
        if _world._failure is None and not died:
            _world.comm.Disconnect()
        _world = None
        GroupMember.WORLD = None
    else:
        group._collect_late_arrivals()
        if group.nccl is not None:
            group.nccl.destroy()
        group.comm.Free()
        _subgroups.remove(group)


def _default_group() -> ProcessGroup:
    if _world is None:
        raise ValueError(_NOT_INITIALIZED)
    return _world


def _resolve(group) -> ProcessGroup | None:
    """The group to use, or None where this process is not a member."""
    if group is None:
        return _default_group()
    if group is GroupMember.NON_GROUP_MEMBER:
        return None
    return group


def get_rank(group: ProcessGroup | None = None) -> int:
    """This process's rank in ``group`` (the world by default); -1 if not a member."""
    pg = _resolve(group)
    return -1 if pg is None else pg.rank()


def get_world_size(group: ProcessGroup | None = None) -> int:
    pg = _resolve(group)
    return -1 if pg is None else pg.size()


def get_backend(group: ProcessGroup | None = None) -> str:
    pg = _resolve(group)
    if pg is None:
        raise ValueError("Invalid process group specified")
    return Backend(pg._backend)


def get_process_group_ranks(group: ProcessGroup) -> list[int]:
    return list(_resolve(group)._ranks)


def get_global_rank(group: ProcessGroup, group_rank: int) -> int:
    return _resolve(group)._ranks[group_rank]


def get_group_rank(group: ProcessGroup, global_rank: int) -> int:
    return _resolve(group).group_rank(global_rank)


def new_group(ranks=None, timeout=None, backend=None, pg_options=None, **kwargs):
    """A subgroup of the world; every rank must call it, members get a group, others not."""
    world = _default_group()
    ranks = sorted(range(world.size()) if ranks is None else ranks)
    me = world.rank()
    from mpi4py import MPI

    from .watchdog import check_usable, wait

    check_usable(world)
    # every rank there and alive first: Split blocks inside MPI, where a dead rank cannot be seen
    wait(world, [world.comm.Ibarrier()], "new_group")
    comm = world.comm.Split(0 if me in ranks else MPI.UNDEFINED, me)
    if comm == MPI.COMM_NULL:
        return GroupMember.NON_GROUP_MEMBER
    pg = ProcessGroup(comm, backend or world._backend, ranks, timeout or world.timeout)
    _subgroups.append(pg)
    return pg
