"""Tensor.share_memory_ / is_shared (ember._shared_memory): data moved into memory other
processes can map, released with the last tensor that uses it."""

from __future__ import annotations

import glob
import os
import sys

import numpy as np
import pytest

import ember
from ember import _shared_memory

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX shared memory")


@pytest.fixture
def libraries():
    """ember, and torch beside it where it is importable."""
    try:
        import torch
    except ImportError:
        return [ember]
    return [ember, torch]


def _open_descriptors() -> int:
    return len(os.listdir("/proc/self/fd"))


def _named_segments() -> list[str]:
    return glob.glob(os.path.join(_shared_memory.SHM_DIR, f"ember_{os.getpid()}_*"))


def test_share_memory_keeps_values_and_is_shared_reports_it(libraries):
    values = np.arange(6, dtype=np.float32).reshape(2, 3)
    for lib in libraries:
        t = lib.tensor(values)
        assert t.is_shared() is False
        assert t.share_memory_() is t
        assert t.is_shared() is True
        np.testing.assert_array_equal(t.numpy(), values)
        assert t.t().is_shared() is True  # a view of shared data is shared
        assert t.clone().is_shared() is False
        assert (t + 1).is_shared() is False


def test_an_ordinary_tensor_is_not_shared():
    assert ember.zeros(3).is_shared() is False
    assert ember.nn.Linear(2, 2).weight.is_shared() is False


def test_in_place_ops_write_into_the_shared_memory():
    t = ember.zeros(4).share_memory_()
    data = t._data
    t.add_(2).mul_(3)
    t[1] = -1.0
    assert t._data is data
    assert t.is_shared()
    np.testing.assert_array_equal(t.numpy(), [6.0, -1.0, 6.0, 6.0])


def test_share_memory_keeps_a_permuted_layout(libraries):
    for lib in libraries:
        x = lib.arange(24.0).reshape(1, 2, 3, 4).contiguous(memory_format=lib.channels_last)
        assert x.share_memory_().stride() == (24, 1, 8, 2)
        np.testing.assert_array_equal(x.numpy(), np.arange(24.0).reshape(1, 2, 3, 4))


def test_share_memory_is_a_noop_when_already_shared():
    t = ember.ones(3).share_memory_()
    data = t._data
    t.share_memory_()
    assert t._data is data


def test_empty_and_integer_tensors_can_be_shared():
    e = ember.zeros(0).share_memory_()
    assert e.is_shared() and e.shape == (0,)
    i = ember.tensor([1, 2, 3]).share_memory_()
    assert i.is_shared() and i.dtype == ember.int64 and i.tolist() == [1, 2, 3]


def test_file_descriptor_segment_is_closed_when_the_last_tensor_dies():
    before = _open_descriptors()
    t = ember.zeros(1000).share_memory_()
    view = t[10:20]
    del t
    assert _open_descriptors() > before  # the view keeps the segment
    del view
    assert _open_descriptors() == before


def test_file_system_segment_is_unlinked_when_the_last_tensor_dies(monkeypatch):
    monkeypatch.setattr(_shared_memory, "strategy", "file_system")
    t = ember.full((5,), 3.0).share_memory_()
    assert t.is_shared()
    assert len(_named_segments()) == 1
    np.testing.assert_array_equal(t.numpy(), [3.0] * 5)
    del t
    assert _named_segments() == []


def test_module_share_memory_moves_parameters_gradients_and_buffers(libraries):
    for lib in libraries:
        model = lib.nn.Sequential(lib.nn.Linear(3, 2), lib.nn.BatchNorm1d(2))
        model(lib.randn(4, 3)).sum().backward()
        weight = model[0].weight
        assert model.share_memory() is model
        assert model[0].weight is weight  # in place: optimizers keep working on the same objects
        assert all(p.is_shared() for p in model.parameters())
        assert all(p.grad.is_shared() for p in model.parameters())
        assert all(b.is_shared() for b in model.buffers())


def test_share_memory_refuses_a_sparse_tensor():
    sparse = ember.eye(3).to_sparse()
    with pytest.raises(RuntimeError, match="cannot be moved to shared memory"):
        sparse.share_memory_()
