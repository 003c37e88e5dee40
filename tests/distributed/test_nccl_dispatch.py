"""The nccl backend's dispatch, on 2 ranks with a fake ``cupy.cuda.nccl``.

No GPU here: the fake CuPy below holds NumPy arrays behind "device pointers", and its
``NcclCommunicator`` carries each NCCL call out over the ranks' MPI world (checking that both
ranks were given the same unique id). So the tests pin what ember asks of NCCL and what it does
with the answer; ``test_real_nccl_on_one_gpu`` runs the real thing where CuPy sees a GPU.
"""

from __future__ import annotations

import sys
import types

import numpy as np
import pytest

import ember
import ember.distributed as dist
import ember.multiprocessing as mp

from ._harness import (
    SPAWN_TIMEOUT,
    WORLD_SIZE,
    assert_case,
    free_port,
    needs_mpi,
    read_outcomes,
    run_cases,
)

# --- a NumPy-backed CuPy with just what ember.distributed.nccl touches -------------------------

_MEMORY: dict[int, np.ndarray] = {}  # "device pointer" -> the array behind it
_CALLS: list[str] = []  # the NCCL functions called, in order
_COMM_AT_INIT: list = []  # the world's NCCL communicator right after init_process_group


class _Pointer:
    def __init__(self, array: np.ndarray):
        self.ptr = id(array)
        _MEMORY[self.ptr] = array


class _Device:
    id = 0


class FakeDeviceArray:
    """A CUDA array for ember's purposes: ``device.id`` and ``data.ptr``, NumPy inside."""

    def __init__(self, array: np.ndarray):
        self.a = array
        self.data = _Pointer(array)
        self.device = _Device()

    dtype = property(lambda self: self.a.dtype)
    shape = property(lambda self: self.a.shape)
    size = property(lambda self: self.a.size)
    ndim = property(lambda self: self.a.ndim)
    flags = property(lambda self: self.a.flags)

    def reshape(self, *shape):
        return FakeDeviceArray(self.a.reshape(*shape))

    def __iter__(self):
        return (FakeDeviceArray(row) for row in self.a)

    def __itruediv__(self, n):
        self.a /= n
        return self

    def __ifloordiv__(self, n):
        self.a //= n
        return self


class _Event:
    def __init__(self):
        self.recorded = False

    def record(self, stream=None):
        self.recorded = True

    done = property(lambda self: self.recorded)

    def synchronize(self):
        assert self.recorded


class _Stream:
    ptr = 0

    def wait_event(self, event):
        assert event.recorded


class _Communicator:
    """NCCL's calls carried out over the MPI world of the ember process group."""

    def __init__(self, ndev: int, unique_id, rank: int):
        from ember.distributed.process_group import _default_group

        self.comm = _default_group().comm
        ids = self.comm.allgather(unique_id)
        assert ids[0] == ids[1] and ndev == WORLD_SIZE and rank == self.comm.Get_rank()
        _CALLS.append("init")

    def _reduce(self, values: list, op: int):
        functions = {0: np.add, 1: np.multiply, 2: np.maximum, 3: np.minimum, 4: np.add}
        out = values[0].copy()
        for v in values[1:]:
            out = functions[op](out, v)
        return out / len(values) if op == 4 else out

    def allReduce(self, send, recv, count, datatype, op, stream):
        _CALLS.append("allReduce")
        values = self.comm.allgather(_MEMORY[send].reshape(-1)[:count].copy())
        _MEMORY[recv].reshape(-1)[:count] = self._reduce(values, op)

    def broadcast(self, send, recv, count, datatype, root, stream):
        _CALLS.append("broadcast")
        value = self.comm.bcast(_MEMORY[send].reshape(-1)[:count].copy(), root)
        _MEMORY[recv].reshape(-1)[:count] = value

    def reduce(self, send, recv, count, datatype, op, root, stream):
        _CALLS.append("reduce")
        values = self.comm.allgather(_MEMORY[send].reshape(-1)[:count].copy())
        if self.comm.Get_rank() == root:
            _MEMORY[recv].reshape(-1)[:count] = self._reduce(values, op)

    def allGather(self, send, recv, count, datatype, stream):
        _CALLS.append("allGather")
        values = self.comm.allgather(_MEMORY[send].reshape(-1)[:count].copy())
        _MEMORY[recv].reshape(-1)[: count * len(values)] = np.concatenate(values)

    def reduceScatter(self, send, recv, count, datatype, op, stream):
        _CALLS.append("reduceScatter")
        values = self.comm.allgather(_MEMORY[send].reshape(-1)[: count * WORLD_SIZE].copy())
        rank = self.comm.Get_rank()
        _MEMORY[recv].reshape(-1)[:count] = self._reduce(values, op)[rank * count :][:count]

    def send(self, send, count, datatype, peer, stream):
        _CALLS.append("send")
        self.comm.send(_MEMORY[send].reshape(-1)[:count].copy(), peer, tag=99)

    def recv(self, recv, count, datatype, peer, stream):
        _CALLS.append("recv")
        _MEMORY[recv].reshape(-1)[:count] = self.comm.recv(source=peer, tag=99)

    def destroy(self):
        _CALLS.append("destroy")


def _fake_cupy() -> types.ModuleType:
    cupy = types.ModuleType("cupy")
    cuda = types.ModuleType("cupy.cuda")
    nccl = types.ModuleType("cupy.cuda.nccl")
    for i, name in enumerate(["SUM", "PROD", "MAX", "MIN", "AVG"]):
        setattr(nccl, f"NCCL_{name}", i)
    for i, name in enumerate(["INT8", "UINT8", "INT32", "UINT32", "INT64", "UINT64", "FLOAT16"]):
        setattr(nccl, f"NCCL_{name}", i)
    nccl.NCCL_FLOAT32, nccl.NCCL_FLOAT64, nccl.NCCL_BFLOAT16 = 7, 8, 9
    nccl.get_unique_id = lambda: tuple(np.random.default_rng().integers(0, 255, 128).tolist())
    nccl.NcclCommunicator = _Communicator
    stream = _Stream()
    cuda.nccl = nccl
    cuda.Event = _Event
    cuda.get_current_stream = lambda: stream
    cuda.runtime = types.SimpleNamespace(getDeviceCount=lambda: 1)
    cupy.cuda = cuda
    cupy.ndarray = FakeDeviceArray
    cupy.empty = lambda shape, dtype: FakeDeviceArray(np.empty(shape, dtype))
    cupy.ascontiguousarray = lambda x: FakeDeviceArray(np.ascontiguousarray(x.a))
    cupy.stack = lambda xs: FakeDeviceArray(np.stack([x.a for x in xs]))

    def copyto(dst, src):
        np.copyto(dst.a, src.a)

    cupy.copyto = copyto
    return cupy


def _install_fake_cupy() -> None:
    from ember import _backend

    cupy = _fake_cupy()
    sys.modules.update({"cupy": cupy, "cupy.cuda": cupy.cuda, "cupy.cuda.nccl": cupy.cuda.nccl})
    _backend._MODULE_OF_TYPE[FakeDeviceArray] = cupy


def cuda_tensor(values, dtype=np.float32):
    return ember.Tensor._wrap(FakeDeviceArray(np.array(values, dtype)))


def host(t) -> list:
    return t._data.a.tolist()


# --- the cases, run on 2 ranks -----------------------------------------------------------------


def case_nccl_group_is_made_lazily_with_one_unique_id(rank):
    assert dist.get_backend() == "nccl" and dist.is_nccl_available()
    assert _COMM_AT_INIT == [None]  # nothing was made before the first CUDA collective
    t = cuda_tensor([1.0, 2.0])
    assert t.device.type == "cuda"
    dist.all_reduce(t)
    assert _CALLS.count("init") == 1 and host(t) == [2.0, 4.0]


def case_all_reduce_ops_and_dtypes(rank):
    for op, want in [
        (dist.ReduceOp.SUM, [3.0, 30.0]),
        (dist.ReduceOp.AVG, [1.5, 15.0]),
        (dist.ReduceOp.MAX, [2.0, 20.0]),
        (dist.ReduceOp.PRODUCT, [2.0, 200.0]),
    ]:
        t = cuda_tensor([rank + 1.0, 10.0 * (rank + 1)])
        dist.all_reduce(t, op=op)
        assert host(t) == want, (op, host(t))
    t = cuda_tensor([rank + 1, 7], np.int64)
    dist.all_reduce(t, op=dist.ReduceOp.AVG)  # integers: NCCL's SUM, then a floor division
    assert host(t) == [1, 7]
    flags = cuda_tensor([rank == 0, False], np.bool_)
    dist.all_reduce(flags)  # bools reduce as "any"
    assert host(flags) == [True, False]
    with pytest.raises(RuntimeError, match="Cannot use ReduceOp.BAND with NCCL"):
        dist.all_reduce(cuda_tensor([1], np.int32), op=dist.ReduceOp.BAND)


def case_async_work_and_future(rank):
    t = cuda_tensor([rank + 1.0])
    work = dist.all_reduce(t, async_op=True)
    assert work.is_completed() and work.wait() is True
    work.synchronize()
    assert work.get_future().wait()[0] is t and host(t) == [3.0]


def case_broadcast_reduce_gather_scatter(rank):
    t = cuda_tensor([rank + 1.0] * 3)
    dist.broadcast(t, src=1)
    assert host(t) == [2.0] * 3
    t = cuda_tensor([rank + 1.0])
    dist.reduce(t, dst=0)
    assert host(t) == ([3.0] if rank == 0 else [2.0])
    parts = [cuda_tensor([0.0, 0.0]) for _ in range(WORLD_SIZE)]
    dist.all_gather(parts, cuda_tensor([rank, rank + 0.5]))
    assert [host(p) for p in parts] == [[0.0, 0.5], [1.0, 1.5]]
    out = cuda_tensor(np.zeros((2, 2)))
    dist.all_gather_into_tensor(out, cuda_tensor([rank, 10.0 + rank]))
    assert host(out) == [[0.0, 10.0], [1.0, 11.0]]
    mine = cuda_tensor([0.0, 0.0])
    dist.reduce_scatter_tensor(mine, cuda_tensor([1.0, 2.0, 3.0, 4.0]))
    assert host(mine) == ([2.0, 4.0] if rank == 0 else [6.0, 8.0])
    mine = cuda_tensor([0.0])
    dist.reduce_scatter(mine, [cuda_tensor([rank + 1.0]), cuda_tensor([10.0 * (rank + 1)])])
    assert host(mine) == ([3.0] if rank == 0 else [30.0])


def case_send_and_recv(rank):
    peer = 1 - rank
    if rank == 0:
        dist.send(cuda_tensor([4.0, 5.0]), dst=1)
        t = cuda_tensor([0.0])
        dist.irecv(t, src=1).wait()
        assert host(t) == [9.0]
    else:
        t = cuda_tensor([0.0, 0.0])
        assert dist.recv(t, src=0) == 0 and host(t) == [4.0, 5.0]
        dist.isend(cuda_tensor([9.0]), dst=peer).wait()
    with pytest.raises(RuntimeError, match="needs a source rank"):
        dist.recv(cuda_tensor([0.0]))


def case_cpu_tensors_on_an_nccl_group_raise_torchs_error(rank):
    with pytest.raises(RuntimeError, match="No backend type associated with device type cpu"):
        dist.all_reduce(ember.ones(2))
    with pytest.raises(RuntimeError, match="not supported by the nccl backend yet"):
        dist.all_to_all_single(cuda_tensor([0.0, 0.0]), cuda_tensor([1.0, 2.0]))


def case_a_group_with_both_backends_routes_by_device(rank):
    both = dist.new_group(backend="cpu:gloo,cuda:nccl")
    assert dist.get_backend(both) == "cpu:gloo,cuda:nccl"
    before = _CALLS.count("allReduce")
    cpu = ember.ones(2) * (rank + 1)
    dist.all_reduce(cpu, group=both)  # MPI
    assert cpu.tolist() == [3.0, 3.0] and _CALLS.count("allReduce") == before
    gloo_only = dist.new_group(backend="gloo")
    with pytest.raises(RuntimeError, match="No backend type associated with device type cuda"):
        dist.all_reduce(cuda_tensor([1.0]), group=gloo_only)


CASES = {
    name[len("case_") :]: fn for name, fn in sorted(globals().items()) if name.startswith("case_")
}


def _worker(rank: int, out_dir: str) -> None:
    _install_fake_cupy()
    dist.init_process_group("nccl")
    _COMM_AT_INIT.append(dist.group.WORLD.nccl._comm)
    run_cases(rank, out_dir, CASES)
    dist.destroy_process_group()


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory):
    needs_mpi()
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("MASTER_PORT", str(free_port()))
        out_dir = tmp_path_factory.mktemp("nccl")
        mp.spawn(_worker, args=(str(out_dir),), nprocs=WORLD_SIZE, timeout=SPAWN_TIMEOUT)
    return read_outcomes(str(out_dir))


@pytest.mark.parametrize("name", list(CASES))
def test_nccl_dispatch(outcomes, name):
    assert_case(outcomes, name)


# --- in this process ---------------------------------------------------------------------------


def test_backend_names_per_device():
    assert dist.Backend("cpu:gloo,cuda:nccl") == "cpu:gloo,cuda:nccl"
    with pytest.raises(ValueError, match="Invalid backend"):
        dist.Backend("cuda:gloo")
    with pytest.raises(ValueError, match="Invalid backend"):
        dist.Backend("tpu:xla")


def test_nccl_without_cupy_says_so(monkeypatch):
    monkeypatch.setitem(sys.modules, "cupy", None)  # import cupy raises ImportError
    assert not dist.is_nccl_available() and not dist.is_backend_available("nccl")
    with pytest.raises(RuntimeError, match="doesn't have NCCL built in"):
        dist.init_process_group("nccl", init_method="tcp://127.0.0.1:1", world_size=1, rank=0)
    assert not dist.is_initialized()


def test_real_nccl_on_one_gpu():
    """One rank on a real GPU (NCCL refuses two ranks on one device)."""
    try:
        import cupy
        from cupy.cuda import nccl  # noqa: F401

        if cupy.cuda.runtime.getDeviceCount() < 1:
            raise RuntimeError("no GPU")
    except Exception:
        pytest.skip("needs CuPy with NCCL and a CUDA GPU")
    needs_mpi()
    dist.init_process_group(
        "nccl", init_method=f"tcp://127.0.0.1:{free_port()}", world_size=1, rank=0
    )
    try:
        t = ember.arange(4, dtype=ember.float32, device="cuda")
        dist.all_reduce(t, op=dist.ReduceOp.AVG)
        dist.broadcast(t, src=0)
        out = ember.zeros(4, device="cuda")
        dist.all_gather_into_tensor(out, t)
        work = dist.all_reduce(t, async_op=True)
        work.synchronize()
        assert t.cpu().tolist() == out.cpu().tolist() == [0.0, 1.0, 2.0, 3.0]
        with pytest.raises(RuntimeError, match="No backend type associated with device type cpu"):
            dist.all_reduce(ember.ones(1))
    finally:
        dist.destroy_process_group()
