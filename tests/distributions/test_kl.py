"""kl_divergence against torch (values and gradients) and the register_kl registry."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember.distributions import Distribution, Normal, kl_divergence, register_kl
from tests.helpers import compare_with_torch

from .cases import positive, real, simplex, unit

# family -> (make(m, *params), draw() -> fresh parameters inside its domain)
FAMILIES = {
    "Bernoulli": (lambda m, p: m.distributions.Bernoulli(p), lambda: [unit(3)]),
    "Beta": (lambda m, a, b: m.distributions.Beta(a, b), lambda: [positive(3), positive(3)]),
    "Binomial": (lambda m, p: m.distributions.Binomial(5, p), lambda: [unit(3)]),
    "Categorical": (lambda m, p: m.distributions.Categorical(p), lambda: [simplex(3, 4)]),
    "Cauchy": (lambda m, a, b: m.distributions.Cauchy(a, b), lambda: [real(3), positive(3)]),
    "ContinuousBernoulli": (
        lambda m, p: m.distributions.ContinuousBernoulli(p),
        lambda: [unit(3)],
    ),
    "Dirichlet": (lambda m, c: m.distributions.Dirichlet(c), lambda: [positive(3, 2)]),
    "Exponential": (lambda m, r: m.distributions.Exponential(r), lambda: [positive(3)]),
    "Gamma": (lambda m, c, r: m.distributions.Gamma(c, r), lambda: [positive(3), positive(3)]),
    "Geometric": (lambda m, p: m.distributions.Geometric(p), lambda: [unit(3)]),
    "Gumbel": (lambda m, a, b: m.distributions.Gumbel(a, b), lambda: [real(3), positive(3)]),
    "HalfNormal": (lambda m, s: m.distributions.HalfNormal(s), lambda: [positive(3)]),
    "Laplace": (lambda m, a, b: m.distributions.Laplace(a, b), lambda: [real(3), positive(3)]),
    "LogNormal": (
        lambda m, a, b: m.distributions.LogNormal(a, b),
        lambda: [real(3), positive(3)],
    ),
    "Normal": (lambda m, a, b: m.distributions.Normal(a, b), lambda: [real(3), positive(3)]),
    "OneHotCategorical": (
        lambda m, p: m.distributions.OneHotCategorical(p),
        lambda: [simplex(3, 4)],
    ),
    "Pareto": (
        lambda m, s, a: m.distributions.Pareto(s, a),
        lambda: [positive(3), positive(3) + 1.5],
    ),
    "Poisson": (lambda m, r: m.distributions.Poisson(r), lambda: [positive(3)]),
    "Uniform": (
        lambda m, a, b: m.distributions.Uniform(a, a + b),
        lambda: [np.array([0.1, 0.2, -0.5]), np.array([0.5, 0.3, 1.0])],
    ),
}
# families only in PAIRS, not in the sweep over torch's registry below
PAIR_ONLY_FAMILIES = {
    "Independent": (
        lambda m, a, b: m.distributions.Independent(m.distributions.Normal(a, b), 1),
        lambda: [real(2, 3), positive(2, 3)],
    ),
}


def _pair(p, q, p_params=None, q_params=None):
    """(make_p, make_q, p_params, q_params) for families p and q, with fresh parameters unless
    given."""
    families = {**FAMILIES, **PAIR_ONLY_FAMILIES}
    (make_p, draw_p), (make_q, draw_q) = families[p], families[q]
    return make_p, make_q, p_params or draw_p(), q_params or draw_q()


# name -> (make_p, make_q, p_params, q_params)
PAIRS = {
    name: _pair(name, name)
    for name in (
        "Normal", "Laplace", "Exponential", "Gamma", "Beta", "Dirichlet", "Bernoulli",
        "Categorical", "OneHotCategorical", "Poisson", "Geometric", "Gumbel", "LogNormal",
        "HalfNormal", "Binomial", "ContinuousBernoulli", "Independent",
    )
}  # fmt: skip
for _p, _q in [
    ("Exponential", "Gamma"),
    ("Normal", "Laplace"),
    ("Laplace", "Normal"),
    ("Exponential", "Normal"),
    ("Uniform", "Normal"),
    ("Normal", "Gumbel"),
]:
    PAIRS[f"{_p}_{_q}"] = _pair(_p, _q)
# q's scale below p's, so that q's support holds p's and the KL is finite
PAIRS["Pareto"] = _pair(
    "Pareto", "Pareto", [positive(3) + 1.0, positive(3)], [positive(3) / 2, positive(3)]
)
# q = Uniform(-1, 2) holds every p of the Uniform family's draw
PAIRS["Uniform"] = _pair("Uniform", "Uniform", q_params=[np.full(3, -1.0), np.full(3, 3.0)])


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


def _registered_pairs():
    try:
        import torch.distributions.kl as torch_kl
    except ImportError:  # pragma: no cover
        return []
    names = {(a.__name__, b.__name__) for a, b in torch_kl._KL_REGISTRY}
    return sorted(pair for pair in names if pair[0] in FAMILIES and pair[1] in FAMILIES)


@pytest.mark.parametrize("pair", _registered_pairs(), ids="-".join)
def test_every_pair_torch_registers_has_the_same_value(pair, torch_mod):
    make_p, make_q, p_params, q_params = _pair(*pair)
    n = len(p_params)

    def kl(m, *xs):
        return m.distributions.kl_divergence(make_p(m, *xs[:n]), make_q(m, *xs[n:]))

    compare_with_torch(kl, [*p_params, *q_params], grad=False, atol=1e-6)
