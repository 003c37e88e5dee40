"""The nccl backend on 2 ranks with a fake ``cupy.cuda.nccl``, and DDP on "CUDA" through it.

No GPU here: ember's CUDA tensors run on the NumPy-backed CuPy of ``tests/_fake_cupy.py``, whose
arrays live in host memory, and the fake ``NcclCommunicator`` below reads and writes the memory
behind the pointers ember hands it, carrying each NCCL call out over the ranks' MPI world (and
checking both ranks were given the same unique id). So the tests pin what ember asks of NCCL
and what it does with the answer; ``test_real_nccl_on_one_gpu`` runs the real thing where CuPy
sees a GPU.
"""

from __future__ import annotations

import sys
import types

import numpy as np
import pytest

import ember
import ember.distributed as dist

from ._harness import (
    WORLD_SIZE,
    assert_case,
    collect_cases,
    free_port,
    needs_mpi,
    spawn_world,
)

# --- NCCL over the fake CuPy of tests/_fake_cupy.py ---------------------------------------------

_CALLS: list[str] = []  # the NCCL functions called, in order
_COMM_AT_INIT: list = []  # the world's NCCL communicator right after init_process_group
_NAMES = ["INT8", "UINT8", "INT32", "UINT32", "INT64", "UINT64", "FLOAT16", "FLOAT32", "FLOAT64"]
_DTYPES = {i: np.dtype(name.lower()) for i, name in enumerate(_NAMES)}


def _host(ptr: int, count: int, datatype: int) -> np.ndarray:
    """The ``count`` elements at a "device pointer" (the fake's arrays live in host memory)."""
    import ctypes

    dtype = _DTYPES[datatype]
    if count == 0:
        return np.empty(0, dtype)
    raw = (ctypes.c_char * (count * dtype.itemsize)).from_address(ptr)
    return np.frombuffer(raw, dtype=dtype, count=count)


class _Communicator:
    """NCCL's calls carried out over the MPI world of the ember process group."""

    def __init__(self, ndev: int, unique_id, rank: int):
        from ember.distributed.process_group import _default_group

        self.comm = _default_group().comm
        ids = self.comm.allgather(unique_id)
        assert ids[0] == ids[1] and ndev == WORLD_SIZE and rank == self.comm.Get_rank()
        _CALLS.append("init")

    def _gather(self, ptr, count, datatype) -> list:
        return self.comm.allgather(_host(ptr, count, datatype).copy())

    @staticmethod
    def _reduce(values: list, op: int):
        functions = {0: np.add, 1: np.multiply, 2: np.maximum, 3: np.minimum, 4: np.add}
        out = values[0].copy()
        for v in values[1:]:
            out = functions[op](out, v)
        return out / len(values) if op == 4 else out

    def allReduce(self, send, recv, count, datatype, op, stream):
        _CALLS.append("allReduce")
        _host(recv, count, datatype)[:] = self._reduce(self._gather(send, count, datatype), op)

    def broadcast(self, send, recv, count, datatype, root, stream):
        _CALLS.append("broadcast")
        value = self.comm.bcast(_host(send, count, datatype).copy(), root)
        _host(recv, count, datatype)[:] = value

    def reduce(self, send, recv, count, datatype, op, root, stream):
        _CALLS.append("reduce")
        values = self._gather(send, count, datatype)
        if self.comm.Get_rank() == root:
            _host(recv, count, datatype)[:] = self._reduce(values, op)

    def allGather(self, send, recv, count, datatype, stream):
        _CALLS.append("allGather")
        values = self._gather(send, count, datatype)
        _host(recv, count * len(values), datatype)[:] = np.concatenate(values)

    def reduceScatter(self, send, recv, count, datatype, op, stream):
        _CALLS.append("reduceScatter")
        total = self._reduce(self._gather(send, count * WORLD_SIZE, datatype), op)
        rank = self.comm.Get_rank()
        _host(recv, count, datatype)[:] = total[rank * count : (rank + 1) * count]

    def send(self, send, count, datatype, peer, stream):
        _CALLS.append("send")
        self.comm.send(_host(send, count, datatype).copy(), peer, tag=99)

    def recv(self, recv, count, datatype, peer, stream):
        _CALLS.append("recv")
        _host(recv, count, datatype)[:] = self.comm.recv(source=peer, tag=99)

    def destroy(self):
        _CALLS.append("destroy")


def _install_fake_cupy_with_nccl() -> None:
    """tests/_fake_cupy.py's CuPy for the rest of this process, with ``cupy.cuda.nccl``."""
    from tests import _fake_cupy

    fake = _fake_cupy.install(pytest.MonkeyPatch(), lenient_flags=True)
    nccl = types.ModuleType("cupy.cuda.nccl")
    for i, name in enumerate(["SUM", "PROD", "MAX", "MIN", "AVG"]):
        setattr(nccl, f"NCCL_{name}", i)
    for i, name in enumerate(_NAMES):
        setattr(nccl, f"NCCL_{name}", i)
    nccl.get_unique_id = lambda: tuple(np.random.default_rng().integers(0, 255, 128).tolist())
    nccl.NcclCommunicator = _Communicator
    fake.cuda.nccl = nccl
    sys.modules.update({"cupy.cuda": fake.cuda, "cupy.cuda.nccl": nccl})


def cuda_tensor(values, dtype=np.float32):
    return ember.from_numpy(np.array(values, dtype)).to("cuda")


def host(t) -> list:
    return t.cpu().tolist()


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


def case_ddp_on_cuda_trains_as_one_process_on_the_cpu(rank):
    import ember.nn as nn
    import ember.nn.functional as F
    from ember.nn.parallel import DistributedDataParallel as DDP

    def model(seed):
        ember.manual_seed(seed)
        return nn.Sequential(nn.Linear(5, 8), nn.Tanh(), nn.Linear(8, 2)).double()

    rng = np.random.default_rng(1)
    x, y = rng.standard_normal((6, 5)), rng.standard_normal((6, 2))
    mine = slice(3 * rank, 3 * rank + 3)
    before = _CALLS.count("broadcast")
    ddp = DDP(model(10 + rank).to("cuda"), bucket_cap_mb=0.0001)  # 2 buckets
    assert _CALLS.count("broadcast") > before  # rank 0's weights, through NCCL
    reference = model(10)
    opt = ember.optim.SGD(ddp.parameters(), lr=0.1, momentum=0.9)
    ref_opt = ember.optim.SGD(reference.parameters(), lr=0.1, momentum=0.9)
    reduced = _CALLS.count("allReduce")
    for _ in range(3):
        opt.zero_grad()
        F.mse_loss(
            ddp(cuda_tensor(x[mine], np.float64)), cuda_tensor(y[mine], np.float64)
        ).backward()
        opt.step()
        ref_opt.zero_grad()
        F.mse_loss(reference(ember.from_numpy(x)), ember.from_numpy(y)).backward()
        ref_opt.step()
    assert _CALLS.count("allReduce") - reduced == 3 * len(ddp._buckets) > 3
    for p, q in zip(ddp.parameters(), reference.parameters()):
        assert p.device.type == "cuda"
        np.testing.assert_allclose(np.array(host(p.detach())), q.detach().numpy(), atol=1e-12)


def case_ddp_on_cuda_with_bucket_views_hooks_and_join(rank):
    import ember.nn as nn
    import ember.nn.functional as F
    from ember.distributed.algorithms.ddp_comm_hooks import default_hooks
    from ember.nn.parallel import DistributedDataParallel as DDP

    rng = np.random.default_rng(3)
    xs = [cuda_tensor(rng.standard_normal((3, 4)), np.float64) for _ in range(3)]
    results = []
    for options, hook in [({}, None), ({"gradient_as_bucket_view": True}, "allreduce_hook")]:
        ember.manual_seed(0)
        ddp = DDP(nn.Linear(4, 2).double().to("cuda"), **options)
        if hook:
            ddp.register_comm_hook(None, getattr(default_hooks, hook))
        opt = ember.optim.SGD(ddp.parameters(), lr=0.1)
        with ddp.join():
            for x in xs[: 3 - rank]:  # rank 1 runs out one step early
                opt.zero_grad()
                F.mse_loss(ddp(x * (rank + 1)), x[:, :2]).backward()
                opt.step()
        results.append([np.array(host(p.detach())) for p in ddp.parameters()])
        if options:
            grad = ddp.module.weight.grad
            assert grad.device.type == "cuda" and ddp._buckets[0].views is not None
    for a, b in zip(*results):
        np.testing.assert_allclose(a, b, rtol=1e-13, atol=1e-14)


def case_sync_batchnorm_on_cuda_equals_batchnorm_on_the_cpu(rank):
    import ember.nn as nn
    from ember.nn.modules.sync_batchnorm import SyncBatchNorm

    x_all = np.random.default_rng(2).standard_normal((6, 3)) * 2 + 1
    mine = slice(4 * rank, 6 if rank else 4)  # uneven: 4 rows and 2
    x = cuda_tensor(x_all[mine], np.float64).requires_grad_()
    out = SyncBatchNorm(3).double().to("cuda")(x)
    (out * out).sum().backward()
    x_ref = ember.from_numpy(x_all).requires_grad_()
    out_ref = nn.BatchNorm1d(3).double()(x_ref)
    (out_ref * out_ref).sum().backward()
    np.testing.assert_allclose(
        np.array(host(out.detach())), out_ref.detach().numpy()[mine], atol=1e-12
    )
    np.testing.assert_allclose(np.array(host(x.grad)), x_ref.grad.numpy()[mine], atol=1e-10)


def before_init() -> None:
    _install_fake_cupy_with_nccl()


def after_init() -> None:
    _COMM_AT_INIT.append(dist.group.WORLD.nccl._comm)


CASES = collect_cases(globals())


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory):
    return spawn_world(tmp_path_factory, __name__, "nccl")


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
