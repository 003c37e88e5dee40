"""DLPack: zero-copy exchange with NumPy and torch on the CPU, CUDA dispatch on the fake CuPy,
and CuPy / torch CUDA tensors on a real GPU."""

import numpy as np
import pytest

import ember
from ember.utils import dlpack


def test_from_numpy_shares_memory():
    a = np.arange(4, dtype=np.float32)
    t = ember.from_dlpack(a)
    a[0] = 7
    assert t.tolist() == [7.0, 1.0, 2.0, 3.0] and t.dtype == ember.float32
    assert dlpack.from_dlpack(a).tolist() == t.tolist()


def test_torch_cpu_tensors_and_ember_share_memory_both_ways(torch_mod):
    tt = torch_mod.arange(6, dtype=torch_mod.float64).reshape(2, 3)
    et = ember.from_dlpack(tt)
    tt[0, 0] = 100.0  # written through torch, seen by ember
    assert et[0, 0].item() == 100.0 and et.shape == (2, 3) and et.dtype == ember.float64
    et[1, 2] = -1.0  # written through ember, seen by torch
    assert tt[1, 2].item() == -1.0

    source = ember.ones(3, dtype=ember.int64)
    back = torch_mod.from_dlpack(source)
    back[1] = 9
    assert source.tolist() == [1, 9, 1] and back.dtype == torch_mod.int64


def test_capsules_from_torch_and_ember(torch_mod):
    tt = torch_mod.zeros(3)
    et = dlpack.from_dlpack(torch_mod.utils.dlpack.to_dlpack(tt))
    tt[2] = 4.0
    assert et.tolist() == [0.0, 0.0, 4.0]

    source = ember.arange(3.0)
    capsule = dlpack.to_dlpack(source)
    shared = dlpack.from_dlpack(capsule)
    source[0] = 5.0
    assert shared.tolist() == [5.0, 1.0, 2.0]
    with pytest.raises(RuntimeError, match="consumed only once"):
        dlpack.from_dlpack(capsule)
    through_torch = torch_mod.utils.dlpack.from_dlpack(dlpack.to_dlpack(source))
    assert through_torch.tolist() == [5.0, 1.0, 2.0]


def test_export_of_a_tensor_requiring_grad_raises_buffer_error_as_torch(torch_mod):
    with pytest.raises(BufferError, match="Can't export tensors that require gradient"):
        torch_mod.ones(2, requires_grad=True).__dlpack__()
    with pytest.raises(BufferError, match="Can't export tensors that require gradient"):
        ember.ones(2, requires_grad=True).__dlpack__()


def test_capsule_export_detaches_and_bad_input_is_refused():
    t = ember.ones(2, requires_grad=True)
    assert dlpack.to_dlpack(t) is not None  # the capsule export detaches, as torch's
    with pytest.raises(TypeError, match="__dlpack__ or a DLPack capsule"):
        dlpack.from_dlpack([1, 2])
    assert t.__dlpack_device__() == (1, 0)


def test_cuda_tensors_go_through_cupy(fake_cuda):
    from tests import _fake_cupy

    t = ember.arange(4.0, device="cuda")
    assert t.__dlpack_device__() == (2, 0)
    shared = ember.from_dlpack(t)
    assert shared.is_cuda and type(shared._data) is _fake_cupy.ndarray
    t[1] = 10.0
    assert shared.cpu().tolist() == [0.0, 10.0, 2.0, 3.0]
    raw = fake_cuda.asarray(np.ones(2))
    assert dlpack.from_dlpack(raw).is_cuda


gpu = pytest.mark.skipif(
    not ember.cuda.is_available(), reason="no CUDA GPU (CuPy not installed or no device)"
)


@gpu
def test_gpu_exchange_with_cupy_and_torch():
    import cupy

    a = cupy.arange(4, dtype=cupy.float32)
    t = ember.from_dlpack(a)
    a[0] = 3
    assert t.is_cuda and t.cpu().tolist() == [3.0, 1.0, 2.0, 3.0]
    back = cupy.from_dlpack(t)
    back[1] = 8
    assert t[1].item() == 8.0
    try:
        import torch
    except ImportError:
        return
    if torch.cuda.is_available():
        tt = torch.zeros(2, device="cuda")
        et = ember.from_dlpack(tt)
        tt[0] = 2.0
        torch.cuda.synchronize()
        assert et.is_cuda and et.cpu().tolist() == [2.0, 0.0]
