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
