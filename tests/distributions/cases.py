"""Parameter sets shared by the distribution tests: each case builds the same distribution in
ember or torch from NumPy arrays, with values inside its support."""

from __future__ import annotations

import numpy as np

RNG = np.random.default_rng(7)


def real(*shape):
    return RNG.uniform(-2.0, 2.0, size=shape)


def positive(*shape):
    return RNG.uniform(0.5, 2.0, size=shape)


def unit(*shape):
    return RNG.uniform(0.1, 0.9, size=shape)


def simplex(*shape):
    w = RNG.uniform(0.2, 1.0, size=shape)
    return w / w.sum(-1, keepdims=True)


def bits(*shape):
    return (RNG.uniform(size=shape) < 0.5).astype(np.float64)


def one_hot(n, k):
    out = np.zeros((n, k))
    out[np.arange(n), RNG.integers(0, k, size=n)] = 1.0
    return out


# name -> (make(mod, *params), params, a value in the support for log_prob / cdf)
CONTINUOUS = {
    "Normal": (lambda m, a, b: m.distributions.Normal(a, b), [real(2, 3), positive(3)], real(2, 3)),
    "Laplace": (
        lambda m, a, b: m.distributions.Laplace(a, b),
        [real(2, 3), positive(3)],
        real(2, 3),
    ),
    "Cauchy": (lambda m, a, b: m.distributions.Cauchy(a, b), [real(2, 3), positive(3)], real(2, 3)),
    "Uniform": (
        lambda m, a, b: m.distributions.Uniform(a, a + b),
        [real(2, 3), positive(3) + 2.0],
        RNG.uniform(-0.4, 0.4, size=(2, 3)) + 0.0,
    ),
    "Exponential": (lambda m, r: m.distributions.Exponential(r), [positive(2, 3)], positive(2, 3)),
    "LogNormal": (
        lambda m, a, b: m.distributions.LogNormal(a, b),
        [real(2, 3) / 2, positive(3)],
        positive(2, 3),
    ),
    "HalfNormal": (lambda m, s: m.distributions.HalfNormal(s), [positive(2, 3)], positive(2, 3)),
    "HalfCauchy": (lambda m, s: m.distributions.HalfCauchy(s), [positive(2, 3)], positive(2, 3)),
    "Gumbel": (lambda m, a, b: m.distributions.Gumbel(a, b), [real(2, 3), positive(3)], real(2, 3)),
}

CONTINUOUS.update(
    {
        "Gamma": (
            lambda m, c, r: m.distributions.Gamma(c, r),
            [positive(2, 3) + 0.5, positive(3)],
            positive(2, 3),
        ),
        "Chi2": (lambda m, df: m.distributions.Chi2(df), [positive(2, 3) * 2], positive(2, 3)),
        "Beta": (
            lambda m, a, b: m.distributions.Beta(a, b),
            [positive(2, 3), positive(3)],
            unit(2, 3),
        ),
        "StudentT": (
            lambda m, df, a, b: m.distributions.StudentT(df, a, b),
            [positive(2, 3) * 2, real(3), positive(3)],
            real(2, 3),
        ),
        "Pareto": (
            lambda m, s, a: m.distributions.Pareto(s, a),
            [positive(2, 3) / 2, positive(3) + 1.5],
            positive(2, 3) + 1.0,
        ),
        "Weibull": (
            lambda m, s, k: m.distributions.Weibull(s, k),
            [positive(2, 3), positive(3) + 0.5],
            positive(2, 3),
        ),
        "VonMises": (
            lambda m, a, k: m.distributions.VonMises(a, k),
            [real(2, 3), positive(3) * 2],
            real(2, 3),
        ),
        "GeneralizedPareto": (
            lambda m, a, b, c: m.distributions.GeneralizedPareto(a, b, c),
            [real(2, 3) - 3.0, positive(3), np.array([0.3, -0.05, 0.4])],
            positive(2, 3),
        ),
        "InverseGamma": (
            lambda m, c, r: m.distributions.InverseGamma(c, r),
            [positive(2, 3) + 2.0, positive(3)],
            positive(2, 3),
        ),
        "Kumaraswamy": (
            lambda m, a, b: m.distributions.Kumaraswamy(a, b),
            [positive(2, 3) + 0.5, positive(3) + 0.5],
            unit(2, 3),
        ),
        "FisherSnedecor": (
            lambda m, a, b: m.distributions.FisherSnedecor(a, b),
            [positive(2, 3) * 3, positive(3) * 3],
            positive(2, 3),
        ),
        "ContinuousBernoulli_probs": (
            lambda m, p: m.distributions.ContinuousBernoulli(probs=p),
            [np.array([[0.2, 0.4995, 0.7], [0.9, 0.3, 0.5002]])],
            unit(2, 3),
        ),
        "ContinuousBernoulli_logits": (
            lambda m, lg: m.distributions.ContinuousBernoulli(logits=lg),
            [real(2, 3)],
            unit(2, 3),
        ),
        "RelaxedBernoulli": (
            lambda m, t, p: m.distributions.RelaxedBernoulli(t, probs=p),
            [positive(2, 3), unit(2, 3)],
            unit(2, 3),
        ),
    }
)

# the Uniform value must lie inside [low, high) for every batch entry
_low = CONTINUOUS["Uniform"][1][0]
CONTINUOUS["Uniform"] = (
    CONTINUOUS["Uniform"][0],
    CONTINUOUS["Uniform"][1],
    _low + RNG.uniform(0.1, 1.9, size=(2, 3)),
)

DISCRETE = {
    "Bernoulli_probs": (lambda m, p: m.distributions.Bernoulli(probs=p), [unit(2, 3)], bits(2, 3)),
    "Bernoulli_logits": (
        lambda m, lg: m.distributions.Bernoulli(logits=lg),
        [real(2, 3)],
        bits(2, 3),
    ),
    "Geometric_probs": (
        lambda m, p: m.distributions.Geometric(probs=p),
        [unit(2, 3)],
        RNG.integers(0, 5, size=(2, 3)).astype(np.float64),
    ),
    "Geometric_logits": (
        lambda m, lg: m.distributions.Geometric(logits=lg),
        [real(2, 3)],
        RNG.integers(0, 5, size=(2, 3)).astype(np.float64),
    ),
    "Categorical_probs": (
        lambda m, p: m.distributions.Categorical(probs=p),
        [simplex(2, 4)],
        RNG.integers(0, 4, size=(3, 2)),
    ),
    "Categorical_logits": (
        lambda m, lg: m.distributions.Categorical(logits=lg),
        [real(2, 4)],
        RNG.integers(0, 4, size=(3, 2)),
    ),
    "OneHotCategorical": (
        lambda m, p: m.distributions.OneHotCategorical(probs=p),
        [simplex(2, 4)],
        one_hot(2, 4),
    ),
    "IndependentNormal": (
        lambda m, a, b: m.distributions.Independent(m.distributions.Normal(a, b), 1),
        [real(2, 3), positive(2, 3)],
        real(2, 3),
    ),
}

DISCRETE.update(
    {
        "Poisson": (
            lambda m, r: m.distributions.Poisson(r),
            [positive(2, 3) * 2],
            RNG.integers(0, 6, size=(2, 3)).astype(np.float64),
        ),
        "Binomial_probs": (
            lambda m, p: m.distributions.Binomial(5, probs=p),
            [unit(2, 3)],
            RNG.integers(0, 6, size=(2, 3)).astype(np.float64),
        ),
        "Binomial_logits": (
            lambda m, lg: m.distributions.Binomial(5, logits=lg),
            [real(2, 3)],
            RNG.integers(0, 6, size=(2, 3)).astype(np.float64),
        ),
        "Multinomial": (
            lambda m, p: m.distributions.Multinomial(4, probs=p),
            [simplex(2, 3)],
            np.array([[1.0, 0.0, 3.0], [2.0, 1.0, 1.0]]),
        ),
        "Dirichlet": (
            lambda m, c: m.distributions.Dirichlet(c),
            [positive(2, 3)],
            simplex(2, 3),
        ),
        "NegativeBinomial_probs": (
            lambda m, r, p: m.distributions.NegativeBinomial(r, probs=p),
            [positive(2, 3) * 2, unit(2, 3)],
            RNG.integers(0, 6, size=(2, 3)).astype(np.float64),
        ),
        "NegativeBinomial_logits": (
            lambda m, r, lg: m.distributions.NegativeBinomial(r, logits=lg),
            [positive(2, 3) * 2, real(2, 3)],
            RNG.integers(0, 6, size=(2, 3)).astype(np.float64),
        ),
        "LogisticNormal": (
            lambda m, a, b: m.distributions.LogisticNormal(a, b),
            [real(2, 2) / 2, positive(2)],
            simplex(2, 3),
        ),
        "MixtureSameFamily": (
            lambda m, lg, a, b: m.distributions.MixtureSameFamily(
                m.distributions.Categorical(logits=lg), m.distributions.Normal(a, b)
            ),
            [real(2, 3), real(2, 3), positive(3)],
            real(4, 2),
        ),
        "RelaxedOneHotCategorical": (
            lambda m, t, p: m.distributions.RelaxedOneHotCategorical(t, probs=p),
            [np.array(0.7), simplex(2, 3)],
            simplex(2, 3),
        ),
    }
)

ALL = {**CONTINUOUS, **DISCRETE}
