"""Collectives and point-to-point ops on CPU tensors, in place on their NumPy buffers.

Each op hands MPI the tensor's own array through the buffer protocol (no pickling): data movement
goes as raw bytes, reductions as typed buffers. A non-contiguous tensor is communicated through a
contiguous copy that is written back. Every op checks its arguments first
(``ember.distributed.argument_checks``), then starts the non-blocking MPI op: ``async_op=True``
returns a ``Work`` whose ``wait()`` finishes what the op still has to do (the division of ``AVG``,
copies back into tensors); otherwise the op waits at once. Waiting goes through
``ember.distributed.watchdog.wait``, which raises ``DistBackendError`` when a rank of the group
has died or the timeout passed, instead of waiting inside MPI for ever.
"""

from __future__ import annotations

import enum

import numpy as np

from ..futures import Future
from . import argument_checks as checks
from .process_group import _resolve
from .watchdog import check_usable, wait


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
    try:
        op = RedOpType(op)
    except (ValueError, TypeError):
        raise TypeError(
            f"ember.distributed: op must be a ReduceOp (ReduceOp.SUM, ReduceOp.AVG, ...), got "
            f"{op!r}"
        ) from None
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

    def __init__(
        self,
        requests: list,
        finish=None,
        result=None,
        statuses=None,
        keep=None,
        pg=None,
        what: str = "",
    ):
        self._requests = requests
        self._keep = keep  # arrays MPI reads or writes until the op is done
        self._statuses = statuses
        self._finish = finish
        self._result = result
        self._done = False
        self._futures: list[Future] = []
        self._pg = pg
        self._what = what

    def _complete(self) -> None:
        self._done = True
        if self._finish is not None:
            self._finish()
            self._finish = None
        futures, self._futures = self._futures, []
        for fut in futures:
            fut.set_result(self._tensors())

    def wait(self, timeout=None) -> bool:
        """Wait until the op is done; ``DistBackendError`` if a rank of its group died first or
        the group's timeout (or ``timeout``, a timedelta or seconds) passed."""
        if not self._done:
            if hasattr(timeout, "total_seconds"):
                timeout = timeout.total_seconds()
            # torch's default timeout=0 means the group's
            wait(self._pg, self._requests, self._what, self._statuses, self._keep, timeout or None)
            self._complete()
        return True

    def is_completed(self) -> bool:
        if not self._done:
            if _mpi().Request.Testall(self._requests, self._statuses):
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


def _run(pg, requests: list, what: str, finish, async_op: bool, result=None, keep=None):
    """A ``Work`` for the started ``requests``, or (not ``async_op``) wait for them and finish."""
    if async_op:
        return Work(requests, finish, result, keep=keep, pg=pg, what=what)
    wait(pg, requests, what, keep=keep)
    if finish is not None:
        finish()
    return None


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


def _written_reduction(buf: _Buffer, op, n: int) -> None:
    """A reduction over ``n`` ranks landed in ``buf``: divided by ``n`` for AVG (MPI has no
    average; integers floor-divide), then written back."""
    if op == RedOpType.AVG:
        a = buf.array
        if a.dtype.kind in "fc":
            a /= n
        else:
            a //= n
    buf.written()


def _group(group):
    """The group to use (None where this process is not a member), if it is still usable."""
    pg = _resolve(group)
    if pg is not None and pg._failure is not None:
        check_usable(pg)
    return pg


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


def all_reduce(tensor, op=ReduceOp.SUM, group=None, async_op: bool = False):
    """Reduce ``tensor`` over all ranks, in place on every rank.

    Example::
        >>> t = ember.ones(3) * (dist.get_rank() + 1)
        >>> dist.all_reduce(t)          # with 2 ranks: tensor([3., 3., 3.])
    """
    checks.check_single_tensor(tensor, "tensor")
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
        _written_reduction(buf, op, pg.size())

    request = pg.comm.Iallreduce(MPI.IN_PLACE, buf.array, mpi_op)
    return _run(pg, [request], "all_reduce", finish, async_op, [tensor], buf)


def broadcast(tensor, src=None, group=None, async_op: bool = False, group_src=None):
    """Copy ``tensor`` from rank ``src`` to every rank."""
    checks.check_single_tensor(tensor, "tensor")
    pg = _group(group)
    if pg is None:
        return None
    root = checks.group_rank(pg, src, group_src, "broadcast")
    if _uses_nccl(pg, tensor):
        from . import nccl

        return nccl.broadcast(pg, tensor, root, async_op)
    buf = _Buffer(tensor)
    request = pg.comm.Ibcast(buf.raw, root)
    return _run(pg, [request], "broadcast", buf.written, async_op, [tensor], buf)


def reduce(tensor, dst=None, op=ReduceOp.SUM, group=None, async_op: bool = False, group_dst=None):
    """Reduce ``tensor`` over all ranks into rank ``dst``'s tensor."""
    checks.check_single_tensor(tensor, "tensor")
    pg = _group(group)
    if pg is None:
        return None
    root = checks.group_rank(pg, dst, group_dst, "reduce")
    if _uses_nccl(pg, tensor):
        from . import nccl

        return nccl.reduce(pg, tensor, root, op, async_op)
    MPI = _mpi()
    buf = _Buffer(tensor, reducing=True)
    mpi_op = _mpi_op(op, buf.array.dtype)
    is_root = pg.rank() == root
    send = MPI.IN_PLACE if is_root else buf.array
    recv = buf.array if is_root else None

    def finish():
        if is_root:
            _written_reduction(buf, op, pg.size())

    request = pg.comm.Ireduce(send, recv, mpi_op, root)
    return _run(pg, [request], "reduce", finish, async_op, keep=buf)


def all_gather(tensor_list, tensor, group=None, async_op: bool = False):
    """Fill ``tensor_list[i]`` with rank i's ``tensor`` on every rank."""
    checks.check_tensor_list(tensor_list, "tensor_list")
    checks.check_single_tensor(tensor, "tensor")
    checks.ensure_same_dtype(tensor_list, tensor)
    pg = _group(group)
    if pg is None:
        return None
    if len(tensor_list) != pg.size():
        raise RuntimeError(
            f"all_gather: invalid output tensor list at index 0 (expected length {pg.size()}, "
            f"got {len(tensor_list)})"
        )
    checks.check_sizes(tensor_list, tensor, "all_gather")
    if _uses_nccl(pg, tensor):
        from . import nccl

        return nccl.all_gather(pg, tensor_list, tensor, async_op)
    src = _Buffer(tensor)
    gathered = np.empty((pg.size(),) + src.array.shape, src.array.dtype)

    def finish():
        for out, part in zip(tensor_list, gathered):
            np.copyto(out._data, part.reshape(out._data.shape), casting="unsafe")
            out._vc[0] += 1

    request = pg.comm.Iallgather(src.raw, gathered.reshape(-1).view(np.uint8))
    return _run(pg, [request], "all_gather", finish, async_op, keep=(src, gathered))


def all_gather_into_tensor(output_tensor, input_tensor, group=None, async_op: bool = False):
    """Concatenate every rank's ``input_tensor`` into ``output_tensor`` (stacked along dim 0)."""
    checks.check_single_tensor(input_tensor, "input_tensor")
    checks.check_single_tensor(output_tensor, "output_tensor")
    pg = _group(group)
    if pg is None:
        return None
    checks.check_numel(output_tensor, input_tensor, pg.size(), "all_gather_into_tensor")
    if _uses_nccl(pg, input_tensor):
        from . import nccl

        return nccl.all_gather_into_tensor(pg, output_tensor, input_tensor, async_op)
    src, out = _Buffer(input_tensor), _Buffer(output_tensor)
    request = pg.comm.Iallgather(src.raw, out.raw)
    return _run(pg, [request], "all_gather_into_tensor", out.written, async_op, keep=(src, out))


def reduce_scatter_tensor(output, input, op=ReduceOp.SUM, group=None, async_op: bool = False):
    """Reduce ``input`` over all ranks and give rank i the i-th of its ``world_size`` chunks."""
    checks.check_single_tensor(output, "output")
    checks.check_single_tensor(input, "input")
    pg = _group(group)
    if pg is None:
        return None
    checks.check_numel(input, output, pg.size(), "reduce_scatter_tensor")
    if _uses_nccl(pg, input):
        from . import nccl

        return nccl.reduce_scatter_tensor(pg, output, input, op, async_op)
    src, out = _Buffer(input, reducing=True), _Buffer(output, reducing=True)
    mpi_op = _mpi_op(op, src.array.dtype)

    def finish():
        _written_reduction(out, op, pg.size())

    request = pg.comm.Ireduce_scatter_block(src.array, out.array, mpi_op)
    return _run(pg, [request], "reduce_scatter_tensor", finish, async_op, keep=(src, out))


def reduce_scatter(output, input_list, op=ReduceOp.SUM, group=None, async_op: bool = False):
    """Reduce the lists over all ranks; rank i gets the reduction of all ``input_list[i]``."""
    checks.check_single_tensor(output, "output")
    checks.check_tensor_list(input_list, "input_list")
    checks.ensure_same_dtype(output, input_list)
    pg = _group(group)
    if pg is None:
        return None
    if len(input_list) != pg.size():
        raise RuntimeError(
            f"reduce_scatter: invalid input tensor list size, must be world size ({pg.size()}), "
            f"got {len(input_list)}"
        )
    checks.check_sizes(input_list, output, "reduce_scatter")
    from .._tensor import Tensor

    if _uses_nccl(pg, output):
        from .._backend import array_module

        xp = array_module(output._data)
        stacked = xp.stack([t._data for t in input_list])
    else:
        stacked = np.stack([np.asarray(t._data) for t in input_list])
    return reduce_scatter_tensor(output, Tensor._wrap(stacked), op, pg, async_op)


def gather(tensor, gather_list=None, dst=None, group=None, async_op: bool = False, group_dst=None):
    """Collect every rank's ``tensor`` into ``gather_list`` on rank ``dst``."""
    checks.check_single_tensor(tensor, "tensor")
    if gather_list:
        checks.check_tensor_list(gather_list, "gather_list")
    checks.ensure_same_dtype(tensor, gather_list or [])
    pg = _group(group)
    if pg is None:
        return None
    root = checks.canonical_rank(pg, dst, group_dst, default=0)
    checks.validate_list_for_rank(pg.rank(), root, gather_list, "gather_list", "destination")
    checks.check_root(pg, root, "gather")
    _nccl_unsupported(pg, tensor, "gather")
    is_root = pg.rank() == root
    if is_root:
        checks.check_list_length(gather_list, pg.size(), "gather", "output")
        checks.check_sizes(gather_list, tensor, "gather")
    src = _Buffer(tensor)
    gathered = np.empty((pg.size(),) + src.array.shape, src.array.dtype) if is_root else None
    recv = gathered.reshape(-1).view(np.uint8) if is_root else None

    def finish():
        if is_root:
            for out, part in zip(gather_list, gathered):
                np.copyto(out._data, part.reshape(out._data.shape), casting="unsafe")
                out._vc[0] += 1

    request = pg.comm.Igather(src.raw, recv, root)
    return _run(pg, [request], "gather", finish, async_op, keep=(src, gathered))


def scatter(
    tensor, scatter_list=None, src=None, group=None, async_op: bool = False, group_src=None
):
    """Give rank i the tensor ``scatter_list[i]`` of rank ``src``."""
    checks.check_single_tensor(tensor, "tensor")
    if scatter_list:
        checks.check_tensor_list(scatter_list, "scatter_list")
    checks.ensure_same_dtype(tensor, scatter_list or [])
    pg = _group(group)
    if pg is None:
        return None
    root = checks.canonical_rank(pg, src, group_src, default=0)
    checks.validate_list_for_rank(pg.rank(), root, scatter_list, "scatter_list", "source")
    checks.check_root(pg, root, "scatter")
    _nccl_unsupported(pg, tensor, "scatter")
    out = _Buffer(tensor)
    send = None
    if pg.rank() == root:
        checks.check_list_length(scatter_list, pg.size(), "scatter", "input")
        checks.check_sizes(scatter_list, tensor, "scatter")
        stacked = np.stack([np.asarray(t._data, dtype=out.array.dtype) for t in scatter_list])
        send = stacked.reshape(-1).view(np.uint8)
    request = pg.comm.Iscatter(send, out.raw, root)
    return _run(pg, [request], "scatter", out.written, async_op, keep=(send, out))


def _split_counts(array: np.ndarray, sizes, n: int, what: str) -> tuple[list[int], list[int]]:
    """Byte counts and offsets of the ``n`` splits of ``array`` along dim 0."""
    rows = array.shape[0] if array.ndim else 1
    row = array.itemsize * (int(np.prod(array.shape[1:])) if array.ndim else 1)
    if sizes is None or len(sizes) == 0:
        if rows % n:
            raise RuntimeError(
                f"{what}: Tensor's dim 0 does not divide equally across group size ({rows} rows, "
                f"{n} ranks)"
            )
        sizes = [rows // n] * n
    elif len(sizes) != n:
        raise RuntimeError(
            f"{what}: Number of tensor splits not equal to group size ({len(sizes)} != {n})"
        )
    elif sum(int(s) for s in sizes) != rows:
        raise RuntimeError(
            f"{what}: Split sizes doesn't match total dim 0 size ({list(sizes)} for {rows} rows)"
        )
    counts = [int(s) * row for s in sizes]
    return counts, [sum(counts[:i]) for i in range(n)]


def all_to_all_single(
    output,
    input,
    output_split_sizes=None,
    input_split_sizes=None,
    group=None,
    async_op: bool = False,
):
    """Split ``input`` along dim 0, send split i to rank i, concatenate what arrives."""
    checks.check_single_tensor(output, "output")
    checks.check_single_tensor(input, "input")
    checks.ensure_same_dtype(output, input)
    pg = _group(group)
    if pg is None:
        return None
    _nccl_unsupported(pg, input, "all_to_all_single")
    n = pg.size()
    if output_split_sizes is None and input_split_sizes is None and input.numel() != output.numel():
        raise RuntimeError(
            f"all_to_all_single: the input ({input.numel()} elements) and output "
            f"({output.numel()} elements) must have the same size without split sizes"
        )
    sc, sd = _split_counts(np.asarray(input._data), input_split_sizes, n, "all_to_all_single")
    rc, rd = _split_counts(np.asarray(output._data), output_split_sizes, n, "all_to_all_single")
    src, out = _Buffer(input), _Buffer(output)
    request = pg.comm.Ialltoallv([src.raw, (sc, sd)], [out.raw, (rc, rd)])
    return _run(pg, [request], "all_to_all_single", out.written, async_op, keep=(src, out))


def all_to_all(output_tensor_list, input_tensor_list, group=None, async_op: bool = False):
    """Send ``input_tensor_list[i]`` to rank i; receive rank i's into ``output_tensor_list[i]``."""
    checks.check_tensor_list(output_tensor_list, "output_tensor_list")
    checks.check_tensor_list(input_tensor_list, "input_tensor_list")
    checks.ensure_same_dtype(output_tensor_list, input_tensor_list)
    pg = _group(group)
    if pg is None:
        return None
    for name, tensors in (("input", input_tensor_list), ("output", output_tensor_list)):
        if len(tensors) != pg.size():
            raise RuntimeError(
                f"all_to_all: {name} tensor list size {len(tensors)} does not match world size "
                f"{pg.size()}"
            )
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

    return _run(pg, requests, "all_to_all", finish, async_op, keep=(sends, outs))


def _peer(pg, rank, group_rank, name: str):
    """The group rank of the other side of a send (``dst``) or receive (``src``; any if None)."""
    role = "destination" if name in ("send", "isend") else "source"
    if rank is None and group_rank is None and role == "source":
        return _mpi().ANY_SOURCE
    peer = checks.canonical_rank(pg, rank, group_rank)
    checks.check_root(pg, peer, name, role)
    checks.check_not_self(pg, peer, role)
    return peer


def send(tensor, dst=None, group=None, tag: int = 0, group_dst=None) -> None:
    """Send ``tensor`` to rank ``dst`` (blocking)."""
    checks.check_single_tensor(tensor, "tensor")
    pg = _group(group)
    if pg is None:
        return
    peer = _peer(pg, dst, group_dst, "send")
    if _uses_nccl(pg, tensor):
        from . import nccl

        nccl.send(pg, tensor, peer)
        return
    buf = _Buffer(tensor)
    wait(pg, [pg.comm.Isend(buf.raw, peer, tag)], "send", keep=buf)


def recv(tensor, src=None, group=None, tag: int = 0, group_src=None) -> int:
    """Receive into ``tensor`` from rank ``src`` (any rank when None); returns the sender."""
    checks.check_single_tensor(tensor, "tensor")
    pg = _group(group)
    if pg is None:
        return -1
    source = _peer(pg, src, group_src, "recv")
    if _uses_nccl(pg, tensor):
        from . import nccl

        if source == _mpi().ANY_SOURCE:
            raise RuntimeError("ember.distributed (nccl): recv needs a source rank (src=)")
        nccl.recv(pg, tensor, source)
        return pg._ranks[source]
    return _mpi_irecv(pg, tensor, source, tag)._source_rank()


def isend(tensor, dst=None, group=None, tag: int = 0, group_dst=None) -> Work | None:
    """Start sending ``tensor`` to rank ``dst``; the tensor must not change until ``wait()``."""
    checks.check_single_tensor(tensor, "tensor")
    pg = _group(group)
    if pg is None:
        return None
    peer = _peer(pg, dst, group_dst, "isend")
    if _uses_nccl(pg, tensor):
        from . import nccl

        return nccl.send(pg, tensor, peer, async_op=True)
    buf = _Buffer(tensor)
    return Work([pg.comm.Isend(buf.raw, peer, tag)], keep=buf, pg=pg, what="send")


def irecv(tensor, src=None, group=None, tag: int = 0, group_src=None) -> Work | None:
    """Start receiving into ``tensor`` from rank ``src`` (any when None)."""
    checks.check_single_tensor(tensor, "tensor")
    pg = _group(group)
    if pg is None:
        return None
    source = _peer(pg, src, group_src, "irecv")
    if _uses_nccl(pg, tensor):
        from . import nccl

        if source == _mpi().ANY_SOURCE:
            raise RuntimeError("ember.distributed (nccl): irecv needs a source rank (src=)")
        return nccl.recv(pg, tensor, source, async_op=True)
    return _mpi_irecv(pg, tensor, source, tag)


def _mpi_irecv(pg, tensor, source: int, tag: int) -> Work:
    """A started MPI receive; its ``_result`` becomes the sender's global rank."""
    buf = _Buffer(tensor)
    statuses = [_mpi().Status()]
    request = pg.comm.Irecv(buf.raw, source, tag)
    work = Work([request], statuses=statuses, keep=buf, pg=pg, what="recv")

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


def barrier(group=None, async_op: bool = False, device_ids=None):
    """Wait until every rank of the group has reached the barrier."""
    pg = _group(group)
    if pg is None:
        return None
    return _run(pg, [pg.comm.Ibarrier()], "barrier", None, async_op)


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
