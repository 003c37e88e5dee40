"""LKJCholesky: log_prob against torch, samples on the support with the LKJ marginal
variance of the correlations, and argument errors."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from tests.helpers import compare_with_torch


def _factors(n: int, dim: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((n, dim, dim))
    cov = a @ np.swapaxes(a, -1, -2) + np.eye(dim)
    d = np.sqrt(np.diagonal(cov, axis1=-2, axis2=-1))
    corr = cov / d[..., :, None] / d[..., None, :]
    return np.linalg.cholesky(corr)


def test_log_prob_matches_torch(torch_mod):
    value = _factors(4, 3).reshape(2, 2, 3, 3)

    def run(m, conc, v):
        return m.distributions.LKJCholesky(3, conc).log_prob(v)

    compare_with_torch(run, [np.array([0.5, 2.0]), value])


def test_samples_lie_on_the_support_with_the_lkj_correlation_variance():
    ember.manual_seed(0)
    eta = np.array([0.5, 2.0])
    d = ember.distributions.LKJCholesky(3, ember.tensor(eta, dtype=ember.float64))
    s = d.sample((4000,))
    assert tuple(s.shape) == (4000, 2, 3, 3)
    assert bool(ember.distributions.constraints.corr_cholesky.check(s).all())
    corr = (s @ s.mT).numpy()
    # each off-diagonal correlation has variance 1 / (2η + dim - 1)
    np.testing.assert_allclose((corr[..., 0, 1] ** 2).mean(0), 1 / (2 * eta + 2), rtol=0.08)


def test_dim_below_two_raises(torch_mod):
    for m in (ember, torch_mod):
        with pytest.raises(ValueError, match="greater than or equal to 2. Found dim=1"):
            m.distributions.LKJCholesky(1)
