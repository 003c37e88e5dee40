"""ember.cuda: the CPU-only answers (as PyTorch's CPU build gives them), the CuPy-backed parts
against a fake CuPy, and real-GPU checks that run only where CuPy sees a device."""

import pytest

import ember
from tests import _fake_cupy

# --- without a GPU: PyTorch's CPU-build behaviour ---------------------------------------------

needs_no_gpu = pytest.mark.skipif(ember.cuda.is_available(), reason="a CUDA GPU is present")


@needs_no_gpu
def test_queries_answer_as_torch_cpu_build(torch_mod):
    for lib in (torch_mod, ember):
        assert lib.cuda.is_available() is False
        assert lib.cuda.device_count() == 0
        assert lib.cuda.is_initialized() is False
        assert lib.cuda.is_bf16_supported() is False
        assert lib.cuda.memory_allocated() == 0
        assert lib.cuda.max_memory_allocated() == 0
        assert lib.cuda.memory_reserved() == 0
        assert lib.cuda.max_memory_reserved() == 0
        assert dict(lib.cuda.memory_stats()) == {}
        assert lib.cuda.empty_cache() is None
        assert lib.cuda.manual_seed(1) is None and lib.cuda.manual_seed_all(1) is None
        assert lib.cuda.set_device(-1) is None
        with lib.cuda.stream(None):
            pass


@needs_no_gpu
@pytest.mark.parametrize(
    "name,args",
    [
        ("current_device", ()),
        ("synchronize", ()),
        ("get_device_name", ()),
        ("get_device_properties", (0,)),
        ("get_device_capability", ()),
        ("current_stream", ()),
        ("init", ()),
        ("mem_get_info", ()),
    ],
)
def test_device_calls_raise_as_torch_cpu_build(torch_mod, name, args):
    for lib in (torch_mod, ember):
        with pytest.raises(AssertionError, match="not compiled with CUDA enabled"):
            getattr(lib.cuda, name)(*args)


@needs_no_gpu
def test_stream_and_event_need_cuda(torch_mod):
    with pytest.raises(RuntimeError, match="Stream requires CUDA support"):
        ember.cuda.Stream()
    with pytest.raises(RuntimeError, match="Stream requires CUDA support"):
        torch_mod.cuda.Stream()
    with pytest.raises(RuntimeError, match="Event requires CUDA support"):
        ember.cuda.Event()
    with pytest.raises(AssertionError, match="Install the gpu extra"):
        ember.cuda.current_device()


# --- the CuPy-backed parts, on a fake CuPy ------------------------------------------------------


@pytest.fixture
def fake_cupy(monkeypatch):
    """The NumPy-backed fake CuPy of tests/_fake_cupy.py, in place for one test."""
    return _fake_cupy.install(monkeypatch)


def test_device_queries_through_cupy(fake_cupy):
    cuda = ember.cuda
    assert cuda.is_available() and cuda.is_initialized() and cuda.device_count() == 2
    assert cuda.current_device() == 0
    cuda.set_device(1)
    assert cuda.current_device() == 1
    cuda.set_device("cuda:0")
    with cuda.device(1):
        assert cuda.current_device() == 1
    assert cuda.current_device() == 0
    with cuda.device(None):
        assert cuda.current_device() == 0
    assert cuda.get_device_name() == "NVIDIA H200"
    assert cuda.get_device_capability(ember.device("cuda:1")) == (9, 0)
    props = cuda.get_device_properties(0)
    assert (props.total_memory, props.multi_processor_count) == (141 << 30, 132)
    assert "NVIDIA H200" in repr(props) and "144384MB" in repr(props)
    with pytest.raises(AssertionError, match="Invalid device id"):
        cuda.get_device_properties(5)
    with pytest.raises(ValueError, match="Expected a cuda device"):
        cuda.set_device("cpu")
    cuda.synchronize()
    assert fake_cupy.cuda.runtime.synchronized == 1
    assert cuda.mem_get_info() == (100 << 30, 141 << 30)
    # a Hopper GPU, but this CuPy cannot hold bfloat16 arrays
    assert cuda.is_bf16_supported() is False


def test_seeding_reaches_cupy_on_every_device(fake_cupy):
    ember.cuda.manual_seed(2**32 + 5)
    ember.cuda.manual_seed_all(7)
    assert fake_cupy.random.seeds == [5, 7, 7]


def test_memory_counters_and_peaks(fake_cupy):
    cuda = ember.cuda
    assert (cuda.memory_allocated(), cuda.memory_reserved()) == (0, 0)
    cuda.reset_peak_memory_stats()  # from here, allocations are counted
    malloc = fake_cupy.cuda.allocator
    assert malloc is not None
    malloc(1000)
    malloc(500)
    fake_cupy.pool.free(1200)
    assert cuda.memory_allocated() == 300
    assert cuda.max_memory_allocated() == 1500
    assert cuda.memory_reserved() == cuda.max_memory_reserved() == 1500
    stats = cuda.memory_stats()
    assert stats["allocated_bytes.all.current"] == 300
    assert stats["allocated_bytes.all.peak"] == 1500
    assert stats["reserved_bytes.all.peak"] == 1500
    assert "allocated_bytes.all.peak" in cuda.memory_summary()
    cuda.empty_cache()
    assert cuda.memory_reserved() == 300
    cuda.reset_peak_memory_stats()
    assert cuda.max_memory_allocated() == 300 and cuda.max_memory_reserved() == 300


def test_streams_and_events(fake_cupy):
    cuda = ember.cuda
    s = cuda.Stream()
    assert cuda.current_stream() == cuda.default_stream()
    with cuda.stream(s):
        assert cuda.current_stream() == s
    assert cuda.current_stream() != s
    assert s.query() and s.cuda_stream == s._stream.ptr
    start, end = cuda.Event(enable_timing=True), cuda.Event(enable_timing=True)
    start.record()
    end.record(s)
    assert end._event.recorded_on is s._stream
    assert start.elapsed_time(end) == 1.5
    other = cuda.Stream()
    other.wait_stream(s)
    assert len(other._stream.waited) == 1
    end.wait(other)
    assert other._stream.waited[-1] is end._event


# --- on a real GPU --------------------------------------------------------------------------

gpu = pytest.mark.skipif(
    not ember.cuda.is_available(), reason="no CUDA GPU (CuPy not installed or no device)"
)


@gpu
def test_gpu_memory_and_sync():
    cuda = ember.cuda
    cuda.synchronize()
    cuda.reset_peak_memory_stats()
    before = cuda.memory_allocated()
    x = ember.ones(1 << 20, device="cuda")
    assert cuda.memory_allocated() >= before + 4 * (1 << 20)
    del x
    assert cuda.max_memory_allocated() >= before + 4 * (1 << 20)
    assert cuda.get_device_capability()[0] >= 3 and cuda.get_device_name()


@gpu
def test_gpu_events_time_a_matmul():
    cuda = ember.cuda
    a = ember.randn(512, 512, device="cuda")
    start, end = cuda.Event(enable_timing=True), cuda.Event(enable_timing=True)
    s = cuda.Stream()
    with cuda.stream(s):
        start.record(s)
        b = a @ a
        end.record(s)
    end.synchronize()
    assert start.elapsed_time(end) >= 0.0
    assert b.shape == (512, 512)


@gpu
def test_gpu_autocast_and_grad_scaler():
    lin = ember.nn.Linear(8, 4).to("cuda")
    x = ember.randn(3, 8, device="cuda")
    opt = ember.optim.SGD(lin.parameters(), lr=0.1)
    scaler = ember.amp.GradScaler("cuda")
    with ember.amp.autocast("cuda"):
        y = lin(x)
        loss = y.float().pow(2).mean()
    assert y.dtype == ember.float16 and loss.dtype == ember.float32
    scaler.scale(loss).backward()
    assert lin.weight.grad.dtype == ember.float32
    scaler.step(opt)
    scaler.update()
    assert scaler.get_scale() == 2.0**16


@pytest.mark.skipif(ember.cuda.is_available(), reason="answers of a machine without a GPU")
def test_remaining_cuda_names_answer_as_torchs_cpu_build(torch_mod):
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        assert ember.cuda.memory_cached() == torch_mod.cuda.memory_cached() == 0
        assert ember.cuda.max_memory_cached() == torch_mod.cuda.max_memory_cached() == 0
    with pytest.warns(FutureWarning, match="renamed to torch.cuda.memory_reserved"):
        ember.cuda.memory_cached()
    assert ember.cuda.memory_stats_as_nested_dict() == torch_mod.cuda.memory_stats_as_nested_dict()
    assert ember.cuda.is_tf32_supported() is torch_mod.cuda.is_tf32_supported() is False
    assert ember.cuda.get_rng_state_all() == torch_mod.cuda.get_rng_state_all() == []
    ember.cuda.seed_all()
    ember.cuda.set_stream(None)
    for name, args in [
        ("initial_seed", ()),
        ("get_rng_state", ()),
        ("get_per_process_memory_fraction", ()),
        ("set_per_process_memory_fraction", (0.5,)),
        ("can_device_access_peer", (0, 1)),
    ]:
        with pytest.raises(AssertionError, match="not compiled with CUDA enabled"):
            getattr(ember.cuda, name)(*args)
    assert not isinstance(ember.zeros(1), ember.cuda.FloatTensor)
    assert repr(ember.cuda.LongTensor) == "<class 'ember.cuda.LongTensor'>"


def test_cuda_out_of_memory_error_is_the_top_level_one():
    import ember

    assert ember.cuda.OutOfMemoryError is ember.OutOfMemoryError
    assert issubclass(ember.OutOfMemoryError, RuntimeError)
