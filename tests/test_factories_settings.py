"""Window functions, the less common factories and the process-wide switches, against torch."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import ember

WINDOWS = ["hann_window", "hamming_window", "blackman_window", "bartlett_window", "kaiser_window"]


@pytest.mark.parametrize("name", WINDOWS)
@pytest.mark.parametrize("length", [0, 1, 2, 5, 8])
@pytest.mark.parametrize("periodic", [True, False])
def test_windows_match_torch(torch_mod, name, length, periodic):
    e = getattr(ember, name)(length, periodic, dtype=ember.float64)
    t = getattr(torch_mod, name)(length, periodic, dtype=torch_mod.float64)
    np.testing.assert_allclose(e.numpy(), t.numpy(), atol=1e-12)
    assert getattr(ember, name)(4).dtype == ember.float32


def test_window_errors():
    with pytest.raises(RuntimeError, match="non-negative window_length"):
        ember.hann_window(-1)
    with pytest.raises(RuntimeError, match="floating point"):
        ember.hann_window(4, dtype=ember.int64)


def test_factories_match_torch(torch_mod):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert ember.range(1, 4, 0.5).tolist() == torch_mod.range(1, 4, 0.5).tolist()
    with pytest.warns(UserWarning, match="torch.range is deprecated"):
        ember.range(0, 2)
    assert ember.scalar_tensor(3).dtype == ember.float32 and ember.scalar_tensor(3).item() == 3
    assert ember.empty_strided((2, 3), (3, 1)).shape == (2, 3)
    p = ember.empty_permuted((2, 3, 4), (0, 2, 1))
    assert p.shape == (2, 3, 4)
    buf = bytearray(np.arange(4, dtype=np.int32).tobytes())
    t = ember.frombuffer(buf, dtype=ember.int32, count=2, offset=4)
    assert t.tolist() == [1, 2]
    t[0] = 9
    assert np.frombuffer(bytes(buf), dtype=np.int32)[1] == 9  # shares memory
    with pytest.raises(ValueError, match="must be a multiple of element size"):
        ember.frombuffer(bytearray(b"abc"), dtype=ember.int32)


def test_settings_round_trip(torch_mod):
    assert ember.are_deterministic_algorithms_enabled() is False
    ember.use_deterministic_algorithms(True, warn_only=True)
    try:
        assert ember.are_deterministic_algorithms_enabled()
        assert ember.is_deterministic_algorithms_warn_only_enabled()
        assert ember.get_deterministic_debug_mode() == 1
    finally:
        ember.use_deterministic_algorithms(False)
    ember.set_deterministic_debug_mode("error")
    assert ember.get_deterministic_debug_mode() == 2
    ember.set_deterministic_debug_mode(0)
    assert ember.get_float32_matmul_precision() == torch_mod.get_float32_matmul_precision()
    with pytest.raises(RuntimeError, match="Invalid precision"):
        ember.set_float32_matmul_precision("low")
    assert ember.get_num_interop_threads() >= 1
    assert ember.set_flush_denormal(True) is False
    assert ember.is_warn_always_enabled() is False
