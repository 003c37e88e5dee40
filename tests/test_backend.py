import pathlib
import re

import numpy as np
import pytest

import ember

OPS_DIR = pathlib.Path(ember.__file__).parent / "ops"


def test_no_op_module_imports_numpy():
    offenders = []
    for path in OPS_DIR.glob("*.py"):
        text = path.read_text()
        if re.search(r"^\s*(import numpy|from numpy)", text, re.MULTILINE):
            offenders.append(path.name)
    assert offenders == []


def test_device_parsing_and_equality():
    assert ember.device("cpu") == "cpu"
    assert ember.device("cuda:1").index == 1 and ember.device("cuda:1").type == "cuda"
    assert repr(ember.device("cuda", 0)) == "device(type='cuda', index=0)"
    assert str(ember.device("cuda:0")) == "cuda:0"
    with pytest.raises(RuntimeError, match="Expected one of cpu, cuda, meta device type"):
        ember.device("tpu")


def test_cpu_tensors_live_in_numpy():
    x = ember.ones(2, device="cpu")
    assert isinstance(x.numpy(), np.ndarray) and x.device.type == "cpu"
    assert x.to(ember.device("cpu")) is x


@pytest.mark.skipif(ember.cuda.is_available(), reason="a GPU is present")
def test_cuda_unavailable_gives_a_clear_error():
    assert ember.cuda.is_available() is False
    assert ember.cuda.device_count() == 0
    with pytest.raises(RuntimeError, match="Cannot use device 'cuda'.*CuPy"):
        ember.ones(2).to("cuda")
    with pytest.raises(RuntimeError, match="Cannot use device 'cuda'"):
        ember.zeros(2, device="cuda")
    with pytest.raises(RuntimeError, match="Cannot use device 'cuda:0'"):
        ember.ones(2).cuda()


@pytest.mark.skipif(not ember.cuda.is_available(), reason="needs CuPy and a GPU")
def test_cuda_round_trip_and_autograd():
    x = ember.tensor([1.0, 2.0], device="cuda", requires_grad=True)
    y = (x * x).sum()
    y.backward()
    assert x.grad.device.type == "cuda"
    assert x.grad.cpu().tolist() == [2.0, 4.0]
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        x + ember.ones(2)


def test_numpy_warnings_are_silenced_outside_pytest(tmp_path):
    import subprocess
    import sys

    code = "import ember; ember.log(ember.tensor([0.0, -1.0])); ember.tensor([1.0]) / 0"
    out = subprocess.run(
        [sys.executable, "-W", "default", "-c", code], capture_output=True, text=True, check=True
    )
    assert "RuntimeWarning" not in out.stderr


def test_errstate_silences_numpy_floating_point_warnings():
    import warnings

    from ember import _backend

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with _backend.errstate(np, divide="ignore", invalid="ignore"):
            out = np.log(np.zeros(2)) * 0
    assert np.isnan(out).all()
    with pytest.raises(FloatingPointError), _backend.errstate(np, divide="raise"):
        np.ones(1) / 0


def test_to_host_keeps_numpy_arrays_and_from_host_keeps_cpu_results():
    from ember import _backend

    a = np.arange(6.0).reshape(2, 3)
    assert _backend.to_host(a) is a
    assert _backend.from_host(a, np.zeros(1)) is a


def test_linalg_kernel_error_is_what_numpy_raises():
    from ember import _backend

    with pytest.raises(_backend.KernelLinAlgError):
        np.linalg.cholesky(-np.eye(2))


@pytest.mark.skipif(not ember.cuda.is_available(), reason="needs CuPy and a GPU")
def test_host_round_trip_returns_to_the_gpu():
    from ember import _backend

    x = ember.arange(6.0, device="cuda")._data
    host = _backend.to_host(x)
    assert isinstance(host, np.ndarray) and host.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
    back = _backend.from_host(host * 2, x)
    assert type(back) is type(x) and back.device.id == x.device.id
    assert back.get().tolist() == [0.0, 2.0, 4.0, 6.0, 8.0, 10.0]
    with _backend.errstate(_backend.array_module(x), divide="raise"):
        assert bool((x / 0)[1:].get().all())  # CuPy kernels never warn: a no-op there


def test_run_spans_returns_results_in_order_and_waits_for_every_span():
    import time

    from ember import _backend

    finished = []

    def work(k, delay):
        time.sleep(delay)
        finished.append(k)
        return k * 10

    spans = [(0, 0.0), (1, 0.05), (2, 0.0)]
    assert _backend.run_spans(work, spans) == [0, 10, 20]
    assert sorted(finished) == [0, 1, 2]
    assert _backend.run_spans(work, [(5, 0.0)]) == [50]
    assert _backend.run_spans(work, []) == []


def test_run_spans_raises_the_first_spans_error_after_the_others_finish():
    import time

    from ember import _backend

    finished = []

    def work(k):
        if k == 0:
            raise ValueError("span 0 failed")
        time.sleep(0.05)
        finished.append(k)

    with pytest.raises(ValueError, match="span 0 failed"):
        _backend.run_spans(work, [(0,), (1,)])
    assert finished == [1]  # the pool's span ran to its end before the error came back
