import os

import pytest

from tests import _fake_cupy


@pytest.fixture
def fake_cuda(monkeypatch):
    """The NumPy-backed fake CuPy, with the ``flags.writeable`` that real CuPy lacks (ember's
    engine and in-place ops still read it: see test_fake_device's strict-flags test)."""
    return _fake_cupy.install(monkeypatch, lenient_flags=True)


@pytest.fixture
def strict_fake_cuda(monkeypatch):
    """The fake CuPy exactly as strict as CuPy (no ``flags.writeable``)."""
    return _fake_cupy.install(monkeypatch)


@pytest.fixture
def cuda_device(monkeypatch):
    """The array module behind ``cuda`` tensors in a test: the fake CuPy here; CuPy itself with
    EMBER_REAL_CUDA=1 on a machine with a GPU (benchmarks/gpu_check.sh sets it), so the same
    programs and kernels are checked on the device."""
    if os.environ.get("EMBER_REAL_CUDA") == "1":
        import ember

        if not ember.cuda.is_available():
            pytest.skip("EMBER_REAL_CUDA=1 but no CUDA GPU is usable")
        return ember.cuda.require()
    return _fake_cupy.install(monkeypatch, lenient_flags=True)
