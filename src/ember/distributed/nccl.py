"""The ``nccl`` backend: collectives on CUDA tensors through CuPy's NCCL bindings.

A process group whose backend covers CUDA (``"nccl"``, ``"cpu:gloo,cuda:nccl"``, or the default
when a GPU is there) makes one ``cupy.cuda.nccl.NcclCommunicator`` on its first CUDA collective,
as torch makes its NCCL communicators lazily: rank 0 draws the unique id and the group's MPI
communicator broadcasts it. Every op is enqueued on the current CuPy stream, so later work on
that stream sees its result without the host waiting; ``async_op=True`` returns a ``Work`` that
records a CUDA event after the op (``is_completed`` asks the event, ``wait`` makes the current
stream wait for it, ``synchronize`` blocks the host).
"""

from __future__ import annotations

from .collectives import RedOpType, Work

_NO_GPU = (
    "Distributed package doesn't have NCCL built in: ember's nccl backend needs CuPy with NCCL "
    "(cupy.cuda.nccl) and a CUDA GPU"
)


def _cupy():
    import cupy

    return cupy


def _nccl():
    from cupy.cuda import nccl

    return nccl


def is_available() -> bool:
    """Whether CuPy's NCCL bindings import and a CUDA GPU is there."""
    try:
        cupy = _cupy()
        _nccl()
        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:  # no CuPy, no NCCL in it, no driver: all mean "not here"
        return False


def check_available() -> None:
    if not is_available():
        raise RuntimeError(_NO_GPU)


class NcclCommunicator:
    """The NCCL side of one process group, made on the first CUDA collective."""

    def __init__(self, pg):
        self.pg = pg
        self._comm = None

    def comm(self):
        if self._comm is None:
            nccl = _nccl()
            # every rank gets here in the same collective, so the broadcast is matched
            unique_id = nccl.get_unique_id() if self.pg.rank() == 0 else None
            unique_id = self.pg.comm.bcast(unique_id, 0)
            self._comm = nccl.NcclCommunicator(self.pg.size(), unique_id, self.pg.rank())
        return self._comm

    def destroy(self) -> None:
        if self._comm is not None:
            self._comm.destroy()
            self._comm = None


def _datatype(dtype) -> int:
    """NCCL's datatype for a CuPy array's dtype."""
    nccl = _nccl()
    name = "bool" if dtype.kind == "b" else dtype.name
    table = {
        "bool": "NCCL_UINT8",
        "int8": "NCCL_INT8",
        "uint8": "NCCL_UINT8",
        "int32": "NCCL_INT32",
        "uint32": "NCCL_UINT32",
        "int64": "NCCL_INT64",
        "uint64": "NCCL_UINT64",
        "float16": "NCCL_FLOAT16",
        "float32": "NCCL_FLOAT32",
        "float64": "NCCL_FLOAT64",
        "bfloat16": "NCCL_BFLOAT16",
    }
    found = getattr(nccl, table.get(name, ""), None)
    if found is None:
        raise RuntimeError(f"ember.distributed (nccl): tensors of dtype {dtype} are not supported")
    return found


def _reduction(op, dtype, size: int) -> tuple[int, bool]:
    """(NCCL's op, whether the result must still be divided by ``size``) for a ReduceOp."""
    nccl = _nccl()
    op = RedOpType(op)
    if dtype.kind == "b":  # as torch: bools reduce as "any" (SUM/MAX) or "all" (PRODUCT/MIN)
        op = {RedOpType.SUM: RedOpType.MAX, RedOpType.PRODUCT: RedOpType.MIN}.get(op, op)
    if op == RedOpType.AVG:
        if hasattr(nccl, "NCCL_AVG") and dtype.kind == "f":
            return nccl.NCCL_AVG, False
        return nccl.NCCL_SUM, True
    table = {
        RedOpType.SUM: "NCCL_SUM",
        RedOpType.PRODUCT: "NCCL_PROD",
        RedOpType.MIN: "NCCL_MIN",
        RedOpType.MAX: "NCCL_MAX",
    }
    if op not in table:
        raise RuntimeError(f"Cannot use ReduceOp.{op.name} with NCCL")
    return getattr(nccl, table[op]), False


class _DeviceBuffer:
    """A CUDA tensor's array as NCCL sees it: contiguous (a copy if needed), written back."""

    __slots__ = ("tensor", "array", "copied")

    def __init__(self, tensor):
        data = tensor._data
        self.tensor = tensor
        if data.flags.c_contiguous:
            self.array, self.copied = data, False
        else:
            self.array, self.copied = _cupy().ascontiguousarray(data), True

    @property
    def ptr(self) -> int:
        return self.array.data.ptr

    def written(self) -> None:
        if self.copied:
            _cupy().copyto(self.tensor._data, self.array)
        self.tensor._vc[0] += 1


class NcclWork(Work):
    """An enqueued NCCL op: a CUDA event recorded after it on the current stream."""

    def __init__(self, event, tensors: list | None = None):
        super().__init__([], result=tensors)
        self._event = event

    def wait(self, timeout=None) -> bool:
        # as torch: the current stream waits for the op, the host does not
        _cupy().cuda.get_current_stream().wait_event(self._event)
        if not self._done:
            self._complete()
        return True

    def is_completed(self) -> bool:
        if not self._done and self._event.done:
            self._complete()
        return self._done

    def synchronize(self) -> None:
        self._event.synchronize()
        if not self._done:
            self._complete()


def _stream():
    return _cupy().cuda.get_current_stream()


def _enqueued(async_op: bool, tensors: list):
    """What a collective returns: a Work with an event after the op, or None."""
    if not async_op:
        return None
    event = _cupy().cuda.Event()
    event.record(_stream())
    return NcclWork(event, tensors)


def all_reduce(pg, tensor, op, async_op: bool):
    buf = _DeviceBuffer(tensor)
    nccl_op, divide = _reduction(op, buf.array.dtype, pg.size())
    array = buf.array
    pg.nccl.comm().allReduce(
        buf.ptr, buf.ptr, array.size, _datatype(array.dtype), nccl_op, _stream().ptr
    )
    if divide:
        _divide(array, pg.size())
    buf.written()
    return _enqueued(async_op, [tensor])


def _divide(array, n: int) -> None:
    if array.dtype.kind in "fc":
        array /= n
    else:
        array //= n


def broadcast(pg, tensor, root: int, async_op: bool):
    buf = _DeviceBuffer(tensor)
    array = buf.array
    pg.nccl.comm().broadcast(
        buf.ptr, buf.ptr, array.size, _datatype(array.dtype), root, _stream().ptr
    )
    buf.written()
    return _enqueued(async_op, [tensor])


def reduce(pg, tensor, root: int, op, async_op: bool):
    buf = _DeviceBuffer(tensor)
    array = buf.array
    nccl_op, divide = _reduction(op, array.dtype, pg.size())
    pg.nccl.comm().reduce(
        buf.ptr, buf.ptr, array.size, _datatype(array.dtype), nccl_op, root, _stream().ptr
    )
    if pg.rank() == root:
        if divide:
            _divide(array, pg.size())
        buf.written()
    return _enqueued(async_op, [tensor])


def all_gather_into_tensor(pg, output, input, async_op: bool):
    src, out = _DeviceBuffer(input), _DeviceBuffer(output)
    if out.array.size != src.array.size * pg.size():
        raise ValueError(
            f"all_gather_into_tensor: the output tensor must have world_size ({pg.size()}) times "
            f"as many elements as the input, got {out.array.size} and {src.array.size}"
        )
    pg.nccl.comm().allGather(
        src.ptr, out.ptr, src.array.size, _datatype(src.array.dtype), _stream().ptr
    )
    out.written()
    return _enqueued(async_op, [output])


def all_gather(pg, tensor_list: list, tensor, async_op: bool):
    cupy = _cupy()
    src = _DeviceBuffer(tensor)
    gathered = cupy.empty((pg.size(),) + src.array.shape, src.array.dtype)
    pg.nccl.comm().allGather(
        src.ptr, gathered.data.ptr, src.array.size, _datatype(src.array.dtype), _stream().ptr
    )
    for out, part in zip(tensor_list, gathered):
        cupy.copyto(out._data, part.reshape(out._data.shape))
        out._vc[0] += 1
    return _enqueued(async_op, list(tensor_list))


def reduce_scatter_tensor(pg, output, input, op, async_op: bool):
    src, out = _DeviceBuffer(input), _DeviceBuffer(output)
    if src.array.size != out.array.size * pg.size():
        raise ValueError(
            f"reduce_scatter_tensor: the input tensor must have world_size ({pg.size()}) times "
            f"as many elements as the output, got {src.array.size} and {out.array.size}"
        )
    nccl_op, divide = _reduction(op, src.array.dtype, pg.size())
    pg.nccl.comm().reduceScatter(
        src.ptr, out.ptr, out.array.size, _datatype(src.array.dtype), nccl_op, _stream().ptr
    )
    if divide:
        _divide(out.array, pg.size())
    out.written()
    return _enqueued(async_op, [output])


def send(pg, tensor, peer: int, async_op: bool = False):
    buf = _DeviceBuffer(tensor)
    pg.nccl.comm().send(buf.ptr, buf.array.size, _datatype(buf.array.dtype), peer, _stream().ptr)
    return _enqueued(async_op, [tensor])


def recv(pg, tensor, peer: int, async_op: bool = False):
    buf = _DeviceBuffer(tensor)
    pg.nccl.comm().recv(buf.ptr, buf.array.size, _datatype(buf.array.dtype), peer, _stream().ptr)
    buf.written()
    return _enqueued(async_op, [tensor])
