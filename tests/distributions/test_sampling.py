"""Samples: shapes, dtypes, supports and moments over many draws (fixed seeds, tolerances of
several standard errors), and reparameterised gradients."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import special as sc

import ember
import ember.distributions as D

N = 20000


def _t(*values):
    return ember.tensor(values, dtype=ember.float64)


# name -> distribution with known mean and variance (float64 so moments are exact)
MOMENT_CASES = {
    "Normal": lambda: D.Normal(_t(1.0, -2.0), _t(0.5, 2.0)),
    "Uniform": lambda: D.Uniform(_t(0.0, -1.0), _t(1.0, 3.0)),
    "Laplace": lambda: D.Laplace(_t(1.0, 0.0), _t(0.5, 2.0)),
    "Exponential": lambda: D.Exponential(_t(0.5, 3.0)),
    "Gamma": lambda: D.Gamma(_t(0.5, 4.0), _t(1.0, 2.0)),
    "Beta": lambda: D.Beta(_t(0.5, 3.0), _t(2.0, 1.5)),
    "Chi2": lambda: D.Chi2(_t(1.0, 5.0)),
    "StudentT": lambda: D.StudentT(_t(5.0, 8.0), _t(0.0, 1.0), _t(1.0, 2.0)),
    "LogNormal": lambda: D.LogNormal(_t(0.0, 0.5), _t(0.25, 0.5)),
    "HalfNormal": lambda: D.HalfNormal(_t(1.0, 2.0)),
    "Gumbel": lambda: D.Gumbel(_t(0.0, 1.0), _t(1.0, 0.5)),
    "Weibull": lambda: D.Weibull(_t(1.0, 2.0), _t(1.5, 3.0)),
    "Pareto": lambda: D.Pareto(_t(1.0, 2.0), _t(5.0, 6.0)),
    "Bernoulli": lambda: D.Bernoulli(_t(0.2, 0.7)),
    "ContinuousBernoulli": lambda: D.ContinuousBernoulli(_t(0.2, 0.4999, 0.9)),
    "Geometric": lambda: D.Geometric(_t(0.3, 0.8)),
    "Poisson": lambda: D.Poisson(_t(0.5, 4.0)),
    "Binomial": lambda: D.Binomial(_t(5.0, 10.0), _t(0.3, 0.6)),
    "Categorical": lambda: D.OneHotCategorical(_t(0.2, 0.3, 0.5)),
    "NegativeBinomial": lambda: D.NegativeBinomial(_t(2.0, 5.5), _t(0.3, 0.6)),
    "GeneralizedPareto": lambda: D.GeneralizedPareto(_t(0.0, 1.0), _t(1.0, 2.0), _t(0.1, -0.2)),
    "InverseGamma": lambda: D.InverseGamma(_t(5.0, 8.0), _t(1.0, 2.0)),
    "Kumaraswamy": lambda: D.Kumaraswamy(_t(0.5, 2.0), _t(1.5, 3.0)),
    "FisherSnedecor": lambda: D.FisherSnedecor(_t(10.0, 20.0), _t(12.0, 30.0)),
    "MixtureSameFamily": lambda: D.MixtureSameFamily(
        D.Categorical(_t(0.3, 0.7)), D.Normal(_t(-2.0, 1.0), _t(0.5, 1.0))
    ),
    "Multinomial": lambda: D.Multinomial(6, _t(0.2, 0.3, 0.5)),
    "Dirichlet": lambda: D.Dirichlet(_t(0.5, 2.0, 3.0)),
}


@pytest.mark.parametrize("name", sorted(MOMENT_CASES))
def test_sample_moments_match_the_distribution(name):
    ember.manual_seed(1234)
    d = MOMENT_CASES[name]()
    x = d.sample((N,))
    assert tuple(x.shape) == (N,) + tuple(d.batch_shape) + tuple(d.event_shape)
    assert x.dtype == ember.float64
    assert bool(d.support.check(x).all())
    mean, var = d.mean.numpy(), d.variance.numpy()
    # 6 standard errors of the mean; the variance by its own standard error (from the
    # fourth moment, estimated from the samples)
    xs = x.numpy()
    np.testing.assert_array_less(np.abs(xs.mean(0) - mean), 6 * np.sqrt(var / N) + 1e-12)
    centred = (xs - mean) ** 2
    var_se = np.sqrt(centred.var(0) / N)
    np.testing.assert_array_less(np.abs(centred.mean(0) - var), 6 * var_se + 1e-12)


def test_categorical_frequencies_and_shape():
    ember.manual_seed(0)
    probs = ember.tensor([[0.1, 0.6, 0.3], [0.5, 0.25, 0.25]])
    x = D.Categorical(probs).sample((N,))
    assert tuple(x.shape) == (N, 2)
    assert x.dtype == ember.int64
    freq = np.stack([(x.numpy() == k).mean(0) for k in range(3)], -1)
    np.testing.assert_allclose(freq, probs.numpy(), atol=6 * np.sqrt(0.25 / N))


def test_von_mises_circular_mean():
    ember.manual_seed(0)
    d = D.VonMises(_t(0.5, -2.0), _t(2.0, 0.5))
    x = d.sample((N,)).numpy()
    assert np.all(np.abs(x) <= np.pi)
    # E[cos(x - loc)] = I1(κ) / I0(κ)
    expected = sc.i1(np.array([2.0, 0.5])) / sc.i0(np.array([2.0, 0.5]))
    np.testing.assert_allclose(np.cos(x - np.array([0.5, -2.0])).mean(0), expected, atol=0.02)
    np.testing.assert_allclose(1 - expected, d.variance.numpy(), rtol=1e-6)


def test_relaxed_samples_lie_in_their_supports():
    ember.manual_seed(0)
    rb = D.RelaxedBernoulli(ember.tensor(0.5), probs=ember.tensor([0.2, 0.9]))
    x = rb.rsample((1000,))
    assert bool(((x > 0) & (x < 1)).all())
    # at low temperature the relaxed draws concentrate near the Bernoulli outcomes
    assert abs((x > 0.5).float().mean(0)[1].item() - 0.9) < 0.05
    rc = D.RelaxedOneHotCategorical(ember.tensor(0.3), probs=ember.tensor([0.2, 0.3, 0.5]))
    y = rc.rsample((1000,))
    np.testing.assert_allclose(y.sum(-1).numpy(), 1.0, rtol=1e-5)


def test_gamma_rsample_gradient_is_the_implicit_derivative():
    ember.manual_seed(3)
    alpha = ember.tensor([0.3, 1.0, 4.0, 20.0], dtype=ember.float64, requires_grad=True)
    x = D.Gamma(alpha, 1.0).rsample()
    x.sum().backward()
    # x = F⁻¹(u; α) for a fixed u: differentiate the inverse CDF numerically
    a, xs = alpha.detach().numpy(), x.detach().numpy()
    u = sc.gammainc(a, xs)
    h = 1e-6
    expected = (sc.gammaincinv(a + h, u) - sc.gammaincinv(a - h, u)) / (2 * h)
    np.testing.assert_allclose(alpha.grad.numpy(), expected, rtol=1e-4)


def test_rsample_gradients_reach_parameters_of_composite_distributions():
    ember.manual_seed(0)
    c1 = ember.tensor(2.0, requires_grad=True)
    c0 = ember.tensor(3.0, requires_grad=True)
    # d E[x] / d c1 for Beta is c0 / (c1 + c0)², estimated pathwise
    D.Beta(c1, c0).rsample((N,)).mean().backward()
    assert abs(c1.grad.item() - 3.0 / 25.0) < 0.01
    scale = ember.tensor(2.0, requires_grad=True)
    D.StudentT(ember.tensor(5.0), 0.0, scale).rsample((10,)).abs().sum().backward()
    assert scale.grad is not None and scale.grad.item() > 0


@pytest.mark.parametrize(
    "make",
    [
        lambda: D.Normal(0.0, 1.0),
        lambda: D.Uniform(0.0, 1.0),
        lambda: D.Exponential(1.0),
        lambda: D.Laplace(0.0, 1.0),
        lambda: D.Cauchy(0.0, 1.0),
    ],
)
def test_same_seed_same_samples(make):
    ember.manual_seed(42)
    a = make().sample((5,))
    ember.manual_seed(42)
    b = make().sample((5,))
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    assert a.dtype == ember.float32
    assert not a.requires_grad


def test_categorical_never_draws_zero_probability_categories():
    ember.manual_seed(0)
    probs = ember.tensor([[0.0, 0.5, 0.5, 0.0], [1.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 2.0]])
    x = D.Categorical(probs).sample((5000,)).numpy()
    assert set(np.unique(x[:, 0])) == {1, 2}
    assert set(np.unique(x[:, 1])) == {0}
    assert set(np.unique(x[:, 2])) == {3}
    assert abs((x[:, 0] == 1).mean() - 0.5) < 6 * np.sqrt(0.25 / 5000)
