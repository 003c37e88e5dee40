"""kl_divergence against torch (values and gradients) and the register_kl registry."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember.distributions import Distribution, Normal, kl_divergence, register_kl
from tests.helpers import compare_with_torch

from .cases import positive, real, simplex, unit


def _normal(m, a, b):
    return m.distributions.Normal(a, b)


PAIRS = {
    "Normal": (_normal, _normal, [real(3), positive(3)], [real(3), positive(3)]),
    "Laplace": (
        lambda m, a, b: m.distributions.Laplace(a, b),
        lambda m, a, b: m.distributions.Laplace(a, b),
        [real(3), positive(3)],
        [real(3), positive(3)],
    ),
    "Exponential": (
        lambda m, r: m.distributions.Exponential(r),
        lambda m, r: m.distributions.Exponential(r),
        [positive(3)],
        [positive(3)],
    ),
    "Gamma": (
        lambda m, c, r: m.distributions.Gamma(c, r),
        lambda m, c, r: m.distributions.Gamma(c, r),
        [positive(3), positive(3)],
        [positive(3), positive(3)],
    ),
    "Beta": (
        lambda m, a, b: m.distributions.Beta(a, b),
        lambda m, a, b: m.distributions.Beta(a, b),
        [positive(3), positive(3)],
        [positive(3), positive(3)],
    ),
    "Dirichlet": (
        lambda m, c: m.distributions.Dirichlet(c),
        lambda m, c: m.distributions.Dirichlet(c),
        [positive(2, 3)],
        [positive(2, 3)],
    ),
    "Bernoulli": (
        lambda m, p: m.distributions.Bernoulli(p),
        lambda m, p: m.distributions.Bernoulli(p),
        [unit(3)],
        [unit(3)],
    ),
    "Categorical": (
        lambda m, p: m.distributions.Categorical(p),
        lambda m, p: m.distributions.Categorical(p),
        [simplex(2, 4)],
        [simplex(2, 4)],
    ),
    "OneHotCategorical": (
        lambda m, p: m.distributions.OneHotCategorical(p),
        lambda m, p: m.distributions.OneHotCategorical(p),
        [simplex(2, 4)],
        [simplex(2, 4)],
    ),
    "Poisson": (
        lambda m, r: m.distributions.Poisson(r),
        lambda m, r: m.distributions.Poisson(r),
        [positive(3)],
        [positive(3)],
    ),
    "Geometric": (
        lambda m, p: m.distributions.Geometric(p),
        lambda m, p: m.distributions.Geometric(p),
        [unit(3)],
        [unit(3)],
    ),
    "Gumbel": (
        lambda m, a, b: m.distributions.Gumbel(a, b),
        lambda m, a, b: m.distributions.Gumbel(a, b),
        [real(3), positive(3)],
        [real(3), positive(3)],
    ),
    "LogNormal": (
        lambda m, a, b: m.distributions.LogNormal(a, b),
        lambda m, a, b: m.distributions.LogNormal(a, b),
        [real(3), positive(3)],
        [real(3), positive(3)],
    ),
    "HalfNormal": (
        lambda m, s: m.distributions.HalfNormal(s),
        lambda m, s: m.distributions.HalfNormal(s),
        [positive(3)],
        [positive(3)],
    ),
    "Pareto": (
        lambda m, s, a: m.distributions.Pareto(s, a),
        lambda m, s, a: m.distributions.Pareto(s, a),
        [positive(3) + 1.0, positive(3)],
        [positive(3) / 2, positive(3)],
    ),
    "Binomial": (
        lambda m, p: m.distributions.Binomial(5, p),
        lambda m, p: m.distributions.Binomial(5, p),
        [unit(3)],
        [unit(3)],
    ),
    "Uniform": (
        lambda m, a, b: m.distributions.Uniform(a, a + b),
        lambda m, a, b: m.distributions.Uniform(a - 1.0, a + b + 1.0),
        [real(3), positive(3)],
        [np.zeros(3), np.ones(3)],
    ),
    "Independent": (
        lambda m, a, b: m.distributions.Independent(m.distributions.Normal(a, b), 1),
        lambda m, a, b: m.distributions.Independent(m.distributions.Normal(a, b), 1),
        [real(2, 3), positive(2, 3)],
        [real(2, 3), positive(2, 3)],
    ),
    "ContinuousBernoulli": (
        lambda m, p: m.distributions.ContinuousBernoulli(p),
        lambda m, p: m.distributions.ContinuousBernoulli(p),
        [unit(3)],
        [unit(3)],
    ),
    "Exponential_Gamma": (
        lambda m, r: m.distributions.Exponential(r),
        lambda m, c, r: m.distributions.Gamma(c, r),
        [positive(3)],
        [positive(3), positive(3)],
    ),
    "Normal_Laplace": (
        _normal,
        lambda m, a, b: m.distributions.Laplace(a, b),
        [real(3), positive(3)],
        [real(3), positive(3)],
    ),
    "Laplace_Normal": (
        lambda m, a, b: m.distributions.Laplace(a, b),
        _normal,
        [real(3), positive(3)],
        [real(3), positive(3)],
    ),
    "Exponential_Normal": (
        lambda m, r: m.distributions.Exponential(r),
        _normal,
        [positive(3)],
        [real(3), positive(3)],
    ),
    "Uniform_Normal": (
        lambda m, a, b: m.distributions.Uniform(a, a + b),
        _normal,
        [real(3), positive(3)],
        [real(3), positive(3)],
    ),
    "Normal_Gumbel": (
        _normal,
        lambda m, a, b: m.distributions.Gumbel(a, b),
        [real(3), positive(3)],
        [real(3), positive(3)],
    ),
}


@pytest.mark.parametrize("name", sorted(PAIRS))
def test_kl_divergence_matches_torch(name, torch_mod):
    make_p, make_q, p_params, q_params = PAIRS[name]
    n = len(p_params)

    def kl(m, *xs):
        return m.distributions.kl_divergence(make_p(m, *xs[:n]), make_q(m, *xs[n:]))

    compare_with_torch(kl, [*p_params, *q_params], atol=1e-6)


def test_kl_of_normals_passes_gradgradcheck():
    inputs = tuple(ember.tensor(a, requires_grad=True) for a in (real(3), positive(3)))
    q = Normal(ember.tensor(real(3)), ember.tensor(positive(3)))

    def fn(loc, scale):
        return kl_divergence(Normal(loc, scale), q)

    assert ember.autograd.gradcheck(fn, inputs)
    assert ember.autograd.gradgradcheck(fn, inputs)


def test_kl_is_infinite_where_supports_do_not_nest(torch_mod):
    def kl(m):
        p = m.distributions.Uniform(m.tensor([0.0, 0.0]), m.tensor([1.0, 3.0]))
        q = m.distributions.Uniform(m.tensor([0.0, 0.0]), m.tensor([2.0, 2.0]))
        return m.distributions.kl_divergence(p, q)

    np.testing.assert_allclose(kl(ember).numpy(), kl(torch_mod).numpy())
    assert np.isinf(kl(ember).numpy()[1])


def test_unregistered_pair_raises_not_implemented(torch_mod):
    messages = []
    for m in (ember, torch_mod):
        with pytest.raises(NotImplementedError) as info:
            m.distributions.kl_divergence(
                m.distributions.Cauchy(0.0, 1.0), m.distributions.Normal(0.0, 1.0)
            )
        messages.append(str(info.value))
    assert messages[0] == messages[1]


def test_register_kl_picks_the_most_specific_pair():
    class MyNormal(Normal):
        pass

    calls = []

    @register_kl(MyNormal, Normal)
    def _kl_mine(p, q):
        calls.append((type(p), type(q)))
        return ember.zeros(())

    p, q = MyNormal(0.0, 1.0), Normal(1.0, 1.0)
    assert kl_divergence(p, q).item() == 0.0
    assert calls == [(MyNormal, Normal)]
    # a plain Normal pair still uses the closed form
    np.testing.assert_allclose(kl_divergence(Normal(0.0, 1.0), q).item(), 0.5)


def test_register_kl_rejects_non_distributions():
    with pytest.raises(TypeError):
        register_kl(int, Distribution)


@pytest.mark.parametrize(
    "make",
    [
        lambda a, b: Normal(a - 1.0, b),
        lambda a, b: ember.distributions.Exponential(b),
        lambda a, b: ember.distributions.Gamma(b + 0.5, b),
        lambda a, b: ember.distributions.Poisson(b),
        lambda a, b: ember.distributions.Bernoulli(b / 3.0),
        lambda a, b: ember.distributions.Beta(b, b + 1.0),
        lambda a, b: ember.distributions.Dirichlet(ember.stack([b, b + 1.0], -1)),
    ],
)
def test_bregman_divergence_of_exponential_families_equals_the_closed_form(make):
    from ember.distributions.kl import _kl_expfamily_expfamily

    a = ember.tensor(real(3), dtype=ember.float64)
    b = ember.tensor(positive(3), dtype=ember.float64)
    c = ember.tensor(positive(3), dtype=ember.float64)
    p, q = make(a, b), make(-a, c)
    np.testing.assert_allclose(
        _kl_expfamily_expfamily(p, q).detach().numpy(),
        kl_divergence(p, q).detach().numpy(),
        rtol=1e-6,
        atol=1e-10,
    )


# one parameterisation per family for the sweep over every pair torch registers
FAMILIES = {
    "Bernoulli": (lambda m, p: m.distributions.Bernoulli(p), [unit(3)]),
    "Beta": (lambda m, a, b: m.distributions.Beta(a, b), [positive(3), positive(3)]),
    "Binomial": (lambda m, p: m.distributions.Binomial(5, p), [unit(3)]),
    "Categorical": (lambda m, p: m.distributions.Categorical(p), [simplex(3, 4)]),
    "Cauchy": (lambda m, a, b: m.distributions.Cauchy(a, b), [real(3), positive(3)]),
    "ContinuousBernoulli": (lambda m, p: m.distributions.ContinuousBernoulli(p), [unit(3)]),
    "Dirichlet": (lambda m, c: m.distributions.Dirichlet(c), [positive(3, 2)]),
    "Exponential": (lambda m, r: m.distributions.Exponential(r), [positive(3)]),
    "Gamma": (lambda m, c, r: m.distributions.Gamma(c, r), [positive(3), positive(3)]),
    "Geometric": (lambda m, p: m.distributions.Geometric(p), [unit(3)]),
    "Gumbel": (lambda m, a, b: m.distributions.Gumbel(a, b), [real(3), positive(3)]),
    "HalfNormal": (lambda m, s: m.distributions.HalfNormal(s), [positive(3)]),
    "Laplace": (lambda m, a, b: m.distributions.Laplace(a, b), [real(3), positive(3)]),
    "LogNormal": (lambda m, a, b: m.distributions.LogNormal(a, b), [real(3), positive(3)]),
    "Normal": (lambda m, a, b: m.distributions.Normal(a, b), [real(3), positive(3)]),
    "OneHotCategorical": (lambda m, p: m.distributions.OneHotCategorical(p), [simplex(3, 4)]),
    "Pareto": (lambda m, s, a: m.distributions.Pareto(s, a), [positive(3), positive(3) + 1.5]),
    "Poisson": (lambda m, r: m.distributions.Poisson(r), [positive(3)]),
    "Uniform": (
        lambda m, a, b: m.distributions.Uniform(a, a + b),
        [np.array([0.1, 0.2, -0.5]), np.array([0.5, 0.3, 1.0])],
    ),
}


def _registered_pairs():
    try:
        import torch.distributions.kl as torch_kl
    except ImportError:  # pragma: no cover
        return []
    names = {(a.__name__, b.__name__) for a, b in torch_kl._KL_REGISTRY}
    return sorted(pair for pair in names if pair[0] in FAMILIES and pair[1] in FAMILIES)


@pytest.mark.parametrize("pair", _registered_pairs(), ids="-".join)
def test_every_pair_torch_registers_has_the_same_value(pair, torch_mod):
    (make_p, p_params), (make_q, q_params) = FAMILIES[pair[0]], FAMILIES[pair[1]]
    n = len(p_params)

    def kl(m, *xs):
        return m.distributions.kl_divergence(make_p(m, *xs[:n]), make_q(m, *xs[n:]))

    compare_with_torch(kl, [*p_params, *q_params], grad=False, atol=1e-6)
