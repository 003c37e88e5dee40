"""ember.accelerator, ember.backends and the default device answer as PyTorch's CPU build."""

from __future__ import annotations

import pytest

import ember


def _no_gpu() -> bool:
    return not ember.cuda.is_available()


@pytest.mark.skipif(not _no_gpu(), reason="answers of a machine without a GPU")
def test_accelerator_without_a_gpu_matches_torch_cpu_build(torch_mod):
    assert ember.accelerator.is_available() is torch_mod.accelerator.is_available() is False
    assert ember.accelerator.current_accelerator() is None
    assert ember.accelerator.device_count() == 0
    with pytest.raises(RuntimeError, match="Cannot access accelerator device when none"):
        ember.accelerator.current_device_index()
    with pytest.raises(RuntimeError, match="Cannot access accelerator device when none"):
        torch_mod.accelerator.current_device_index()


def test_backend_flags_are_settable_and_restored_by_flags_context():
    cudnn = ember.backends.cudnn
    assert cudnn.enabled is True and cudnn.benchmark is False and cudnn.deterministic is False
    cudnn.benchmark = True
    try:
        with cudnn.flags(enabled=False, benchmark=False, deterministic=True):
            assert cudnn.enabled is False and cudnn.deterministic is True
        assert cudnn.enabled is True and cudnn.benchmark is True
    finally:
        cudnn.benchmark = False
    ember.backends.cuda.matmul.allow_tf32 = True
    ember.backends.cuda.matmul.allow_tf32 = False


def test_backend_availability_queries(torch_mod):
    assert ember.backends.mps.is_available() is False and ember.backends.mps.is_built() is False
    assert ember.backends.cudnn.is_available() is ember.cuda.is_available()
    assert ember.backends.cpu.get_cpu_capability() in {"AVX512", "AVX2", "NEON", "DEFAULT"}
    assert isinstance(ember.backends.mkl.is_available(), bool)
    with ember.backends.cuda.sdp_kernel(enable_flash=False):
        assert not ember.backends.cuda.flash_sdp_enabled()
    assert ember.backends.cuda.flash_sdp_enabled()


def test_default_device_is_cpu_and_can_be_set_back():
    assert ember.get_default_device() == ember.device("cpu")
    ember.set_default_device("cpu")
    try:
        assert ember.zeros(2).device == ember.device("cpu")
        assert ember.get_default_device() == ember.device("cpu")
    finally:
        ember.set_default_device(None)
    assert ember.get_default_device() == ember.device("cpu")


def test_device_as_context_manager_sets_the_default_device_inside():
    with ember.device("cpu") as d:
        assert d == ember.device("cpu")
        assert ember.ones(1).device == ember.device("cpu")
    assert ember.get_default_device() == ember.device("cpu")


def test_default_dtype_round_trip():
    assert ember.get_default_dtype() == ember.float32
    ember.set_default_dtype(ember.float64)
    try:
        assert ember.tensor([1.0]).dtype == ember.float64
    finally:
        ember.set_default_dtype(ember.float32)
    with pytest.raises(TypeError, match="only floating-point types"):
        ember.set_default_dtype(ember.int64)


def test_nn_parallel_and_onnx_are_importable():
    import importlib.util
    import io

    import ember.nn.parallel as parallel
    import ember.onnx

    model = ember.nn.Linear(3, 2)
    wrapped = ember.nn.DataParallel(model, device_ids=[0])
    x = ember.ones(4, 3)
    assert wrapped(x).tolist() == model(x).tolist()
    assert wrapped.module is model
    assert sorted(wrapped.state_dict()) == ["module.bias", "module.weight"]
    with pytest.raises(ValueError, match="Default process group has not been initialized"):
        parallel.DistributedDataParallel(model)
    assert ember.onnx.is_in_onnx_export() is False
    if importlib.util.find_spec("onnx") is not None:  # the exporter needs the onnx extra
        buffer = io.BytesIO()
        ember.onnx.export(model, (x,), buffer)
        assert buffer.getvalue()
