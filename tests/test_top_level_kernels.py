"""Top-level kernels torch exposes beside its public ops: the samplers behind the
distributions and the native_* normalisations, reached as ``ember.<name>`` like ``torch.<name>``."""

from __future__ import annotations

import numpy as np
import pytest

import ember


def test_samplers_are_top_level_and_draw_torchs_values():
    torch = pytest.importorskip("torch")
    for name, args in [
        ("binomial", lambda m: (m.tensor([10.0, 100.0, 3.0]), m.tensor([0.3, 0.9, 0.5]))),
        ("poisson", lambda m: (m.tensor([1.0, 10.0, 100.0]),)),
        ("_standard_gamma", lambda m: (m.tensor([0.5, 1.0, 7.0], dtype=m.float64),)),
        ("_sample_dirichlet", lambda m: (m.tensor([[0.5, 1.0, 7.0]], dtype=m.float64),)),
    ]:
        ember.manual_seed(3)
        torch.manual_seed(3)
        got = getattr(ember, name)(*args(ember))
        want = getattr(torch, name)(*args(torch))
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6, err_msg=name)


def test_native_layer_norm_returns_mean_and_rstd_as_torch():
    torch = pytest.importorskip("torch")
    x = np.random.default_rng(0).standard_normal((3, 5)).astype(np.float32)
    got = ember.native_layer_norm(ember.tensor(x), (5,), None, None, 1e-5)
    want = torch.native_layer_norm(torch.tensor(x), (5,), None, None, 1e-5)
    for g, w in zip(got, want):
        assert tuple(g.shape) == tuple(w.shape)
        np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-5, atol=1e-6)


def test_the_futures_namespace_loads_on_first_use():
    assert ember.futures.Future is not None
    assert "futures" in dir(ember)
