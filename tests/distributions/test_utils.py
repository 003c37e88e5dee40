"""ember.distributions.utils against torch.distributions.utils."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember.distributions import utils
from tests.helpers import compare_with_torch


@pytest.mark.parametrize("diag", [-1, 0, 1])
def test_tril_matrix_and_vector_round_trip_as_torch(diag, torch_mod):
    mat = np.arange(2 * 4 * 4, dtype=np.float64).reshape(2, 4, 4)

    def run(m, x):
        u = (ember if m is ember else torch_mod).distributions.utils
        vec = u.tril_matrix_to_vec(x, diag)
        return vec, u.vec_to_tril_matrix(vec, diag)

    compare_with_torch(run, [mat])


def test_probs_and_logits_match_torch(torch_mod):
    p = np.array([[0.1, 0.6, 0.3], [0.0, 0.5, 0.5]])

    def run(m, p):
        u = (ember if m is ember else torch_mod).distributions.utils
        return (
            u.probs_to_logits(p),
            u.probs_to_logits(p, is_binary=True),
            u.logits_to_probs(p),
            u.logits_to_probs(p, is_binary=True),
            u.clamp_probs(p),
        )

    compare_with_torch(run, [p])


def test_broadcast_all_as_torch(torch_mod):
    for m in (ember, torch_mod):
        u = m.distributions.utils
        a, b = u.broadcast_all(m.zeros(2, 1, dtype=m.float64), 3.0)
        assert tuple(a.shape) == tuple(b.shape) == (2, 1)
        assert b.dtype == m.float64
        x, y = u.broadcast_all(1.0, 2)
        assert x.dtype == y.dtype == m.float32
        with pytest.raises(ValueError, match="Input arguments must all be instances of"):
            u.broadcast_all("a", 1.0)
    assert utils.euler_constant == pytest.approx(0.5772156649015329)


def test_lazy_property_computes_once_with_grad_enabled():
    calls = []

    class Thing:
        @utils.lazy_property
        def value(self):
            calls.append(ember.is_grad_enabled())
            return 3

    t = Thing()
    with ember.no_grad():
        assert t.value == 3
    assert t.value == 3
    assert calls == [True]
    assert isinstance(Thing.value, property)
