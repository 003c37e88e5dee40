"""Collectives and point-to-point ops on CPU tensors, in place on their NumPy buffers.

Each op hands MPI the tensor's own array through the buffer protocol (no pickling): data movement
goes as raw bytes, reductions as typed buffers. A non-contiguous tensor is communicated through a
contiguous copy that is written back. ``async_op=True`` starts the non-blocking MPI op and returns
a ``Work``; its ``wait()`` finishes what the op still has to do (the division of ``AVG``, copies
back into tensors).
"""

from __future__ import annotations

import enum

import numpy as np

from ..futures import Future
from .process_group import _resolve
from .watchdog import watched


class RedOpType(enum.IntEnum):
    SUM = 0
    AVG = 1
    PRODUCT = 2
    MIN = 3
    MAX = 4
    BAND = 5
    BOR = 6
    BXOR = 7
    PREMUL_SUM = 8
    UNUSED = 9


class ReduceOp:
    """The reduction of ``all_reduce``, ``reduce`` and ``reduce_scatter``: ``ReduceOp.SUM``..."""

    SUM = RedOpType.SUM
    AVG = RedOpType.AVG
    PRODUCT = RedOpType.PRODUCT
    MIN = RedOpType.MIN
    MAX = RedOpType.MAX
    BAND = RedOpType.BAND
    BOR = RedOpType.BOR
    BXOR = RedOpType.BXOR
    PREMUL_SUM = RedOpType.PREMUL_SUM
    RedOpType = RedOpType


reduce_op = ReduceOp  # the deprecated lowercase alias PyTorch keeps


_MPI_OPS: dict = {}  # (op, dtype is bool) -> MPI.Op, filled on first use


def _mpi_op(op, dtype: np.dtype):
    found = _MPI_OPS.get((op, dtype == np.bool_))
    if found is not None:
        return found
    from mpi4py import MPI

    R = RedOpType
    # PyTorch reduces bools as logic: SUM/MAX are "any", PRODUCT/MIN are "all"
    logical = {
        R.SUM: MPI.LOR,
        R.MAX: MPI.LOR,
        R.BOR: MPI.LOR,
        R.PRODUCT: MPI.LAND,
        R.MIN: MPI.LAND,
        R.BAND: MPI.LAND,
        R.BXOR: MPI.LXOR,
    }
    numeric = {
        R.SUM: MPI.SUM,
        R.AVG: MPI.SUM,
        R.PRODUCT: MPI.PROD,
        R.MIN: MPI.MIN,
        R.MAX: MPI.MAX,
        R.BAND: MPI.BAND,
        R.BOR: MPI.BOR,
        R.BXOR: MPI.BXOR,
    }
    table = logical if dtype == np.bool_ else numeric
    op = RedOpType(op)
    if op not in table:
        raise ValueError(f"ember.distributed: ReduceOp.{op.name} is not supported for {dtype}")
    _MPI_OPS[(op, dtype == np.bool_)] = table[op]
    return table[op]


# dtypes MPI has no type for, by name, and the wider one they are reduced in (by name: bfloat16's
# NumPy dtype comes from ml_dtypes, which is imported when bfloat16 data is first made)
_REDUCE_AS = {"float16": np.float32, "bfloat16": np.float32}


_MPI_MODULE = []


def _mpi():
    """mpi4py's MPI module (imported on first use: importing it initialises MPI)."""
    if not _MPI_MODULE:
        from mpi4py import MPI

        _MPI_MODULE.append(MPI)
    return _MPI_MODULE[0]


class Work:
    """A started collective: ``wait()`` blocks until it is done, ``is_completed()`` asks."""

    def __init__(self, requests: list, finish=None, result=None, statuses=None, keep=None):
        self._requests = requests
        self._keep = keep  # arrays MPI reads or writes until the op is done
        self._statuses = statuses
        self._finish = finish
        self._result = result
        self._done = False
        self._futures: list[Future] = []

    def _complete(self) -> None:
        self._done = True
        if self._finish is not None:
            self._finish()
            self._finish = None
        futures, self._futures = self._futures, []
        for fut in futures:
            fut.set_result(self._tensors())

    @watched
    def wait(self, timeout=None) -> bool:
        if not self._done:
            from mpi4py import MPI

            MPI.Request.Waitall(self._requests, self._statuses)
            self._complete()
        return True

    def is_completed(self) -> bool:
        if not self._done:
            from mpi4py import MPI

            if MPI.Request.Testall(self._requests, self._statuses):
                self._complete()
        return self._done

    def is_success(self) -> bool:
        return self.is_completed()

    def exception(self):
        return None

    def result(self) -> list:
        self.wait()
        return self._result or []

    def synchronize(self) -> None:
        self.wait()

    def _source_rank(self) -> int:
        self.wait()
        return self._result

    def _tensors(self) -> list:
        # irecv keeps the sender's rank in _result; its Future has no tensors to give
        return self._result if isinstance(self._result, list) else []

    def get_future(self) -> Future:
        """A ``Future`` completed with the op's tensors (a list; empty for ops without any).

        Example::
            >>> fut = dist.all_reduce(t, async_op=True).get_future()
            >>> fut.then(lambda f: f.value()[0] / 2).wait()
        """
        fut: Future = Future()
        fut._drive = self.wait
        fut._poll = self.is_completed
        if self._done:
            fut.set_result(self._tensors())
        else:
            self._futures.append(fut)
        return fut


class _Buffer:
    """A tensor's array as MPI sees it: contiguous (a copy if needed), written back after."""

    __slots__ = ("tensor", "array", "copied", "wider")

    def __init__(self, tensor, reducing: bool = False):
        data = tensor._data
        if not isinstance(data, np.ndarray):
            raise RuntimeError(
                "ember.distributed: the gloo/mpi backends take CPU tensors (got a tensor on "
                f"{tensor.device}); CUDA tensors need the nccl backend"
            )
        self.tensor = tensor
        wider = _REDUCE_AS.get(data.dtype.name) if reducing else None
        self.wider = wider is not None
        if wider is not None:
            self.array, self.copied = data.astype(wider), True
        elif data.flags.c_contiguous and data.flags.writeable:
            self.array, self.copied = data, False
        else:
            self.array, self.copied = np.ascontiguousarray(data), True

    @property
    def raw(self) -> np.ndarray:
        """The bytes of the buffer, for ops that only move data."""
        return self.array.reshape(-1).view(np.uint8)

    def written(self) -> None:
        """The op wrote into the buffer: copy back where needed and bump the version."""
        t = self.tensor
        if self.copied:
            np.copyto(t._data, self.array, casting="unsafe")
        t._vc[0] += 1


def _average(buf: _Buffer, n: int) -> None:
    a = buf.array
    if a.dtype.kind in "fc":
        a /= n
    else:
        a //= n


def _group(group):
    return _resolve(group)


def _uses_nccl(pg, tensor) -> bool:
    """Whether ``tensor`` goes through the group's NCCL communicator (CUDA) or MPI (CPU)."""
    kind = "cpu" if isinstance(tensor._data, np.ndarray) else "cuda"
    if kind not in pg._device_backends:
        hint = (
            "; CUDA tensors need the nccl backend ('nccl' or 'cpu:gloo,cuda:nccl')"
            if kind == "cuda"
            else "; CPU tensors need gloo or mpi ('cpu:gloo,cuda:nccl' gives both)"
        )
        raise RuntimeError(f"No backend type associated with device type {kind}{hint}")
    return kind == "cuda"


def _nccl_unsupported(pg, tensor, name: str) -> None:
    if _uses_nccl(pg, tensor):
        raise RuntimeError(
            f"ember.distributed: {name} on CUDA tensors is not supported by the nccl backend "
            "yet; move the tensors to the CPU and use a gloo group"
        )


def _root(pg, rank, group_rank, name: str) -> int:
    if group_rank is not None:
        return group_rank
    if rank is None:
        raise ValueError(f"{name}: a source/destination rank is required")
    return pg.group_rank(rank)


@watched
def all_reduce(tensor, op=ReduceOp.SUM, group=None, async_op: bool = False):
    """Reduce ``tensor`` over all ranks, in place on every rank.

    Example::
        >>> t = ember.ones(3) * (dist.get_rank() + 1)
        >>> dist.all_reduce(t)          # with 2 ranks: tensor([3., 3., 3.])
    """
    pg = _group(group)
    if pg is None:
        return None
    if _uses_nccl(pg, tensor):
        from . import nccl

        return nccl.all_reduce(pg, tensor, op, async_op)
    MPI = _mpi()
    buf = _Buffer(tensor, reducing=True)
    mpi_op = _mpi_op(op, buf.array.dtype)

    def finish():
        if op == RedOpType.AVG:
            _average(buf, pg.size())
        buf.written()

    if async_op:
        return Work([pg.comm.Iallreduce(MPI.IN_PLACE, buf.array, mpi_op)], finish, [tensor])
    pg.comm.Allreduce(MPI.IN_PLACE, buf.array, mpi_op)
    finish()
    return None


@watched
def broadcast(tensor, src=None, group=None, async_op: bool = False, group_src=None):
    """Copy ``tensor`` from rank ``src`` to every rank."""
    pg = _group(group)
    if pg is None:
        return None
    root = _root(pg, src, group_src, "broadcast")
    if _uses_nccl(pg, tensor):
        from . import nccl

        return nccl.broadcast(pg, tensor, root, async_op)
    buf = _Buffer(tensor)
    if async_op:
        return Work([pg.comm.Ibcast(buf.raw, root)], buf.written, [tensor])
    pg.comm.Bcast(buf.raw, root)
    buf.written()
    return None


@watched
def reduce(tensor, dst=None, op=ReduceOp.SUM, group=None, async_op: bool = False, group_dst=None):
    """Reduce ``tensor`` over all ranks into rank ``dst``'s tensor."""
    pg = _group(group)
    if pg is None:
        return None
    from mpi4py import MPI

    root = _root(pg, dst, group_dst, "reduce")
    if _uses_nccl(pg, tensor):
        from . import nccl

        return nccl.reduce(pg, tensor, root, op, async_op)
    buf = _Buffer(tensor, reducing=True)
    mpi_op = _mpi_op(op, buf.array.dtype)
    is_root = pg.rank() == root
    send = MPI.IN_PLACE if is_root else buf.array
    recv = buf.array if is_root else None

    def finish():
        if is_root:
            if op == RedOpType.AVG:
                _average(buf, pg.size())
            buf.written()

    if async_op:
        return Work([pg.comm.Ireduce(send, recv, mpi_op, root)], finish)
    pg.comm.Reduce(send, recv, mpi_op, root)
    finish()
    return None


def _check_list(tensors, n: int, name: str, what: str) -> None:
    if len(tensors) != n:
        raise ValueError(f"{name}: {what} must have one tensor per rank ({n}), got {len(tensors)}")


@watched
def all_gather(tensor_list, tensor, group=None, async_op: bool = False):
    """Fill ``tensor_list[i]`` with rank i's ``tensor`` on every rank."""
    pg = _group(group)
    if pg is None:
        return None
    _check_list(tensor_list, pg.size(), "all_gather", "tensor_list")
    if _uses_nccl(pg, tensor):
        from . import nccl

        return nccl.all_gather(pg, tensor_list, tensor, async_op)
    src = _Buffer(tensor)
    gathered = np.empty((pg.size(),) + src.array.shape, src.array.dtype)

    def finish():
        for out, part in zip(tensor_list, gathered):
            np.copyto(out._data, part.reshape(out._data.shape), casting="unsafe")
            out._vc[0] += 1

    raw_out = gathered.reshape(-1).view(np.uint8)
    if async_op:
        return Work([pg.comm.Iallgather(src.raw, raw_out)], finish, keep=(src, gathered))
    pg.comm.Allgather(src.raw, raw_out)
    finish()
    return None


def _check_sizes(out_numel: int, in_numel: int, n: int, name: str) -> None:
    if out_numel != in_numel * n:
        raise ValueError(
            f"{name}: the output tensor must have world_size ({n}) times as many elements as the "
            f"input, got {out_numel} and {in_numel}"
        )


@watched
def all_gather_into_tensor(output_tensor, input_tensor, group=None, async_op: bool = False):
    """Concatenate every rank's ``input_tensor`` into ``output_tensor`` (stacked along dim 0)."""
    pg = _group(group)
    if pg is None:
        return None
    if _uses_nccl(pg, input_tensor):
        from . import nccl

        return nccl.all_gather_into_tensor(pg, output_tensor, input_tensor, async_op)
    src, out = _Buffer(input_tensor), _Buffer(output_tensor)
    _check_sizes(out.array.size, src.array.size, pg.size(), "all_gather_into_tensor")
    if async_op:
        return Work([pg.comm.Iallgather(src.raw, out.raw)], out.written, keep=src)
    pg.comm.Allgather(src.raw, out.raw)
    out.written()
    return None


@watched
def reduce_scatter_tensor(output, input, op=ReduceOp.SUM, group=None, async_op: bool = False):
    """Reduce ``input`` over all ranks and give rank i the i-th of its ``world_size`` chunks."""
    pg = _group(group)
    if pg is None:
        return None
    if _uses_nccl(pg, input):
        from . import nccl

        return nccl.reduce_scatter_tensor(pg, output, input, op, async_op)
    src, out = _Buffer(input, reducing=True), _Buffer(output, reducing=True)
    _check_sizes(src.array.size, out.array.size, pg.size(), "reduce_scatter_tensor")
    mpi_op = _mpi_op(op, src.array.dtype)

    def finish():
        if op == RedOpType.AVG:
            _average(out, pg.size())
        out.written()

    if async_op:
        return Work([pg.comm.Ireduce_scatter_block(src.array, out.array, mpi_op)], finish, keep=src)
    pg.comm.Reduce_scatter_block(src.array, out.array, mpi_op)
    finish()
    return None


@watched
def reduce_scatter(output, input_list, op=ReduceOp.SUM, group=None, async_op: bool = False):
    """Reduce the lists over all ranks; rank i gets the reduction of all ``input_list[i]``."""
    pg = _group(group)
    if pg is None:
        return None
    _check_list(input_list, pg.size(), "reduce_scatter", "input_list")
    from .._tensor import Tensor

    if _uses_nccl(pg, output):
        from .._backend import array_module

        xp = array_module(output._data)
        stacked = xp.stack([t._data for t in input_list])
    else:
        stacked = np.stack([np.asarray(t._data) for t in input_list])
    return reduce_scatter_tensor(output, Tensor._wrap(stacked), op, pg, async_op)


@watched
def gather(tensor, gather_list=None, dst=None, group=None, async_op: bool = False, group_dst=None):
    """Collect every rank's ``tensor`` into ``gather_list`` on rank ``dst``."""
    pg = _group(group)
    if pg is None:
        return None
    _nccl_unsupported(pg, tensor, "gather")
    root = _root(pg, 0 if dst is None and group_dst is None else dst, group_dst, "gather")
    src = _Buffer(tensor)
    is_root = pg.rank() == root
    if is_root:
        if gather_list is None:
            raise ValueError("Argument ``gather_list`` must be specified on destination rank.")
        _check_list(gather_list, pg.size(), "gather", "gather_list")
        gathered = np.empty((pg.size(),) + src.array.shape, src.array.dtype)
        recv = gathered.reshape(-1).view(np.uint8)
    elif gather_list:
        raise ValueError("Argument ``gather_list`` must NOT be specified on non-destination ranks.")
    else:
        recv = None

    def finish():
        if is_root:
            for out, part in zip(gather_list, gathered):
                np.copyto(out._data, part.reshape(out._data.shape), casting="unsafe")
                out._vc[0] += 1

    if async_op:
        return Work([pg.comm.Igather(src.raw, recv, root)], finish, keep=(src, recv))
    pg.comm.Gather(src.raw, recv, root)
    finish()
    return None


@watched
def scatter(
    tensor, scatter_list=None, src=None, group=None, async_op: bool = False, group_src=None
):
    """Give rank i the tensor ``scatter_list[i]`` of rank ``src``."""
    pg = _group(group)
    if pg is None:
        return None
    _nccl_unsupported(pg, tensor, "scatter")
    root = _root(pg, 0 if src is None and group_src is None else src, group_src, "scatter")
    out = _Buffer(tensor)
    if pg.rank() == root:
        if scatter_list is None:
            raise ValueError("Argument ``scatter_list`` must be specified on source rank.")
        _check_list(scatter_list, pg.size(), "scatter", "scatter_list")
        stacked = np.stack([np.asarray(t._data, dtype=out.array.dtype) for t in scatter_list])
        send = stacked.reshape(-1).view(np.uint8)
    elif scatter_list:
        raise ValueError("Argument ``scatter_list`` must NOT be specified on non-source ranks.")
    else:
        send = None
    if async_op:
        return Work([pg.comm.Iscatter(send, out.raw, root)], out.written, keep=send)
    pg.comm.Scatter(send, out.raw, root)
    out.written()
    return None


@watched
def all_to_all_single(
    output,
    input,
    output_split_sizes=None,
    input_split_sizes=None,
    group=None,
    async_op: bool = False,
):
    """Split ``input`` along dim 0, send split i to rank i, concatenate what arrives."""
    pg = _group(group)
    if pg is None:
        return None
    _nccl_unsupported(pg, input, "all_to_all_single")
    n = pg.size()
    src, out = _Buffer(input), _Buffer(output)

    def counts(tensor_array, sizes):
        row = tensor_array.itemsize * (
            int(np.prod(tensor_array.shape[1:])) if tensor_array.ndim else 1
        )
        if sizes is None:
            if tensor_array.ndim == 0 or tensor_array.shape[0] % n:
                raise ValueError(
                    f"all_to_all_single: dim 0 ({tensor_array.shape}) must divide into {n} splits"
                )
            sizes = [tensor_array.shape[0] // n] * n
        c = [int(s) * row for s in sizes]
        return c, [sum(c[:i]) for i in range(n)]

    sc, sd = counts(src.array, input_split_sizes)
    rc, rd = counts(out.array, output_split_sizes)
    if async_op:
        return Work(
            [pg.comm.Ialltoallv([src.raw, (sc, sd)], [out.raw, (rc, rd)])], out.written, keep=src
        )
    pg.comm.Alltoallv([src.raw, (sc, sd)], [out.raw, (rc, rd)])
    out.written()
    return None


@watched
def all_to_all(output_tensor_list, input_tensor_list, group=None, async_op: bool = False):
    """Send ``input_tensor_list[i]`` to rank i; receive rank i's into ``output_tensor_list[i]``."""
    pg = _group(group)
    if pg is None:
        return None
    for t in output_tensor_list:
        _nccl_unsupported(pg, t, "all_to_all")
    requests, outs, sends = [], [], []
    me = pg.rank()
    for peer in range(pg.size()):
        out = _Buffer(output_tensor_list[peer])
        outs.append(out)
        if peer == me:
            np.copyto(out.array, np.asarray(input_tensor_list[peer]._data).reshape(out.array.shape))
            continue
        send = np.ascontiguousarray(input_tensor_list[peer]._data)
        sends.append(send)
        requests.append(pg.comm.Isend(send.reshape(-1).view(np.uint8), peer, tag=7))
        requests.append(pg.comm.Irecv(out.raw, peer, tag=7))

    def finish():
        for out in outs:
            out.written()

    work = Work(requests, finish, keep=sends)
    if async_op:
        return work
    work.wait()
    return None


def _peer(pg, rank, group_rank, name: str) -> int:
    peer = _root(pg, rank, group_rank, name)
    if peer == pg.rank():
        what = "destination" if name in ("send", "isend") else "source"
        raise ValueError(
            f"Invalid {what} rank: should not be the same as the rank of the current process."
        )
    return peer


@watched
def send(tensor, dst=None, group=None, tag: int = 0, group_dst=None) -> None:
    """Send ``tensor`` to rank ``dst`` (blocking)."""
    pg = _group(group)
    if pg is None:
        return
    peer = _peer(pg, dst, group_dst, "send")
    if _uses_nccl(pg, tensor):
        from . import nccl

        nccl.send(pg, tensor, peer)
        return
    pg.comm.Send(_Buffer(tensor).raw, peer, tag)


@watched
def recv(tensor, src=None, group=None, tag: int = 0, group_src=None) -> int:
    """Receive into ``tensor`` from rank ``src`` (any rank when None); returns the sender."""
    pg = _group(group)
    if pg is None:
        return -1
    from mpi4py import MPI

    source = (
        MPI.ANY_SOURCE if src is None and group_src is None else _peer(pg, src, group_src, "recv")
    )
    if _uses_nccl(pg, tensor):
        from . import nccl

        if source == MPI.ANY_SOURCE:
            raise RuntimeError("ember.distributed (nccl): recv needs a source rank (src=)")
        nccl.recv(pg, tensor, source)
        return pg._ranks[source]
    buf = _Buffer(tensor)
    status = MPI.Status()
    pg.comm.Recv(buf.raw, source, tag, status)
    buf.written()
    return pg._ranks[status.Get_source()]


def isend(tensor, dst=None, group=None, tag: int = 0, group_dst=None) -> Work | None:
    """Start sending ``tensor`` to rank ``dst``; the tensor must not change until ``wait()``."""
    pg = _group(group)
    if pg is None:
        return None
    peer = _peer(pg, dst, group_dst, "isend")
    if _uses_nccl(pg, tensor):
        from . import nccl

        return nccl.send(pg, tensor, peer, async_op=True)
    buf = _Buffer(tensor)
    return Work([pg.comm.Isend(buf.raw, peer, tag)], keep=buf)


def irecv(tensor, src=None, group=None, tag: int = 0, group_src=None) -> Work | None:
    """Start receiving into ``tensor`` from rank ``src`` (any when None)."""
    pg = _group(group)
    if pg is None:
        return None
    from mpi4py import MPI

    source = (
        MPI.ANY_SOURCE if src is None and group_src is None else _peer(pg, src, group_src, "irecv")
    )
    if _uses_nccl(pg, tensor):
        from . import nccl

        if source == MPI.ANY_SOURCE:
            raise RuntimeError("ember.distributed (nccl): irecv needs a source rank (src=)")
        return nccl.recv(pg, tensor, source, async_op=True)
    buf = _Buffer(tensor)
    statuses = [MPI.Status()]
    work = Work([pg.comm.Irecv(buf.raw, source, tag)], statuses=statuses)

    def finish():
        buf.written()
        work._result = pg._ranks[statuses[0].Get_source()]

    work._finish = finish
    return work


class P2POp:
    """One send or receive for ``batch_isend_irecv``: ``P2POp(dist.isend, tensor, peer)``."""

    def __init__(self, op, tensor, peer=None, group=None, tag: int = 0, group_peer=None):
        if op not in (isend, irecv):
            raise ValueError(
                "Invalid ``op``. Expected ``op`` to be of type ``torch.distributed.isend`` or "
                "``torch.distributed.irecv``."
            )
        self.op, self.tensor, self.peer, self.group, self.tag = op, tensor, peer, group, tag
        self.group_peer = group_peer


def batch_isend_irecv(p2p_op_list: list) -> list:
    """Start every op of the list; returns their Works."""
    works = []
    for p in p2p_op_list:
        if p.op is isend:
            works.append(isend(p.tensor, p.peer, p.group, p.tag, p.group_peer))
        else:
            works.append(irecv(p.tensor, p.peer, p.group, p.tag, p.group_peer))
    return works


@watched
def barrier(group=None, async_op: bool = False, device_ids=None):
    """Wait until every rank of the group has reached the barrier."""
    pg = _group(group)
    if pg is None:
        return None
    if async_op:
        return Work([pg.comm.Ibarrier()])
    pg.comm.Barrier()
    return None


# plus the call's number, so a late rank's arrival never matches a later call
_MONITORED_BARRIER_TAG = 0x6D0000


def _poll(requests: list, deadline: float) -> list[bool]:
    """Test ``requests`` until all are done or ``deadline`` passes; which ones completed."""
    import time

    done = [False] * len(requests)
    while True:
        for i, request in enumerate(requests):
            if not done[i]:
                done[i] = request.Test()
        if all(done) or time.monotonic() > deadline:
            return done
        time.sleep(0.001)


def monitored_barrier(group=None, timeout=None, wait_all_ranks: bool = False) -> None:
    """A barrier that names the ranks that did not arrive within ``timeout``.

    As gloo's: every rank reports to rank 0, which waits for each in turn and releases them all.
    A rank missing after ``timeout`` makes rank 0 raise a RuntimeError naming it (all the missing
    ranks with ``wait_all_ranks=True``); the other ranks then fail to be released and raise too.

    Example::
        >>> dist.monitored_barrier(timeout=datetime.timedelta(seconds=10), wait_all_ranks=True)
    """
    import time

    from .process_group import _timeout_seconds

    pg = _group(group)
    if pg is None:
        return
    calls = getattr(pg, "_monitored_barriers", 0)
    pg._monitored_barriers = calls + 1
    tag = _MONITORED_BARRIER_TAG + calls % 0x10000
    seconds = _timeout_seconds(timeout)
    millis = int(round(seconds * 1000))
    deadline = time.monotonic() + seconds
    token = np.zeros(1, np.uint8)
    if pg.rank() != 0:
        pg.comm.Send(token, 0, tag)
        release = pg.comm.Irecv(np.zeros(1, np.uint8), 0, tag)
        if not _poll([release], deadline)[0]:
            release.Cancel()
            release.Wait()
            raise RuntimeError(
                f"Rank {pg._ranks[pg.rank()]} successfully reached monitoredBarrier, but received "
                f"errors while waiting for send/recv from rank 0. Please check rank 0 logs for "
                f"faulty rank."
            )
        return
    peers = list(range(1, pg.size()))
    arrivals = [np.zeros(1, np.uint8) for _ in peers]
    requests = [pg.comm.Irecv(buf, peer, tag) for buf, peer in zip(arrivals, peers)]
    if wait_all_ranks:
        done = _poll(requests, deadline)
    else:
        done = []
        for request in requests:  # torch waits rank by rank and names the first one missing
            done.append(_poll([request], deadline)[0])
            if not done[-1]:
                break
    missing = [pg._ranks[peer] for peer, ok in zip(peers, done) if not ok]
    # not cancelled: a late rank's arrival still has to be received, or leaving the group
    # (MPI_Comm_disconnect) would wait for it for ever; destroy_process_group collects them
    pg._late_arrivals.extend(
        (request, buf)
        for i, (request, buf) in enumerate(zip(requests, arrivals))
        if i >= len(done) or not done[i]
    )
    if missing:
        if len(missing) == 1 and not wait_all_ranks:
            what = f"Rank {missing[0]}"
        else:
            what = "Ranks " + ", ".join(str(r) for r in missing)
        raise RuntimeError(f"[Rank 0]: {what} failed to pass monitoredBarrier in {millis} ms")
    for peer in peers:
        pg.comm.Send(token, peer, tag)


_OBJECT_TAG = 0x6F626A  # keeps object messages apart from tensor messages with the default tag

# --- picklable Python objects (these do pickle, as PyTorch's do) ---------------------------


@watched
def all_gather_object(object_list: list, obj, group=None) -> None:
    """``object_list[i]`` becomes rank i's ``obj`` on every rank."""
    pg = _group(group)
    if pg is None:
        return
    _check_list(object_list, pg.size(), "all_gather_object", "object_list")
    object_list[:] = pg.comm.allgather(obj)


@watched
def broadcast_object_list(
    object_list: list, src=None, group=None, device=None, group_src=None
) -> None:
    """Replace ``object_list``'s items with rank ``src``'s, on every rank."""
    pg = _group(group)
    if pg is None:
        return
    root = _root(
        pg, 0 if src is None and group_src is None else src, group_src, "broadcast_object_list"
    )
    objects = pg.comm.bcast(list(object_list) if pg.rank() == root else None, root)
    object_list[:] = objects


@watched
def send_object_list(object_list: list, dst=None, group=None, device=None, group_dst=None):
    """Send the (picklable) items of ``object_list`` to rank ``dst``."""
    pg = _group(group)
    if pg is None:
        return
    pg.comm.send(list(object_list), _peer(pg, dst, group_dst, "send"), tag=_OBJECT_TAG)


@watched
def recv_object_list(object_list: list, src=None, group=None, device=None, group_src=None):
    """Fill ``object_list`` with the items rank ``src`` (any when None) sent; returns the sender."""
    pg = _group(group)
    if pg is None:
        return -1
    MPI = _mpi()
    source = (
        MPI.ANY_SOURCE if src is None and group_src is None else _peer(pg, src, group_src, "recv")
    )
    status = MPI.Status()
    items = pg.comm.recv(source=source, tag=_OBJECT_TAG, status=status)
    object_list[: len(items)] = items
    return pg._ranks[status.Get_source()]


def supports_complex(reduceOp) -> bool:
    """True where a reduction is defined on complex numbers (not MIN/MAX/PRODUCT/bitwise)."""
    return reduceOp not in (
        RedOpType.MAX,
        RedOpType.MIN,
        RedOpType.PRODUCT,
        RedOpType.BAND,
        RedOpType.BOR,
        RedOpType.BXOR,
    )


@watched
def gather_object(obj, object_gather_list=None, dst=None, group=None, group_dst=None) -> None:
    pg = _group(group)
    if pg is None:
        return
    root = _root(pg, 0 if dst is None and group_dst is None else dst, group_dst, "gather_object")
    gathered = pg.comm.gather(obj, root)
    if pg.rank() == root:
        object_gather_list[:] = gathered


@watched
def scatter_object_list(
    scatter_object_output_list: list,
    scatter_object_input_list=None,
    src=None,
    group=None,
    group_src=None,
) -> None:
    pg = _group(group)
    if pg is None:
        return
    root = _root(
        pg, 0 if src is None and group_src is None else src, group_src, "scatter_object_list"
    )
    items = list(scatter_object_input_list) if pg.rank() == root else None
    scatter_object_output_list[0] = pg.comm.scatter(items, root)
