"""Wishart against torch (log_prob, entropy, moments, gradients), Bartlett sample moments and
argument errors."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from tests.helpers import compare_with_torch

A = np.array([[[2.0, 0.5, 0.1], [0.5, 1.0, 0.2], [0.1, 0.2, 1.5]], np.eye(3) * 0.7])
VALUE = np.array([[3.0, 1.0, 0.0], [1.0, 2.0, 0.5], [0.0, 0.5, 1.0]])
PARAMS = {
    "covariance_matrix": A,
    "precision_matrix": np.linalg.inv(A),
    "scale_tril": np.linalg.cholesky(A),
}


@pytest.mark.parametrize("kind", sorted(PARAMS))
def test_log_prob_entropy_and_moments_match_torch(kind, torch_mod):
    def run(m, df, matrix, value):
        d = m.distributions.Wishart(df, **{kind: matrix})
        return d.log_prob(value), d.entropy(), d.mean, d.variance, d.mode

    compare_with_torch(run, [np.array([5.0, 4.5]), PARAMS[kind], VALUE])


def test_sample_moments_match():
    ember.manual_seed(0)
    d = ember.distributions.Wishart(ember.tensor(6.0, dtype=ember.float64), ember.tensor(A[0]))
    x = d.sample((20000,))
    assert bool(ember.distributions.constraints.positive_definite.check(x[:50]).all())
    se = np.sqrt(d.variance.numpy() / 20000)
    np.testing.assert_array_less(np.abs(x.numpy().mean(0) - d.mean.numpy()), 6 * se)


def test_rsample_gradient_reaches_df_and_scale():
    df = ember.tensor(5.0, dtype=ember.float64, requires_grad=True)
    tril = ember.tensor(np.linalg.cholesky(A[0]), requires_grad=True)
    ember.distributions.Wishart(df, scale_tril=tril).rsample((4,)).sum().backward()
    assert df.grad is not None and np.isfinite(df.grad.item())
    assert tril.grad is not None


@pytest.mark.parametrize(
    "call",
    [
        lambda m: m.distributions.Wishart(m.tensor(1.0), m.eye(3)),
        lambda m: m.distributions.Wishart(m.tensor(4.0), m.ones(3)),
    ],
)
def test_errors_match_torch(call, torch_mod):
    messages = []
    for m in (ember, torch_mod):
        with pytest.raises(ValueError) as info:
            call(m)
        messages.append(str(info.value))
    assert messages[0] == messages[1]
