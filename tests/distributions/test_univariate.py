"""log_prob, cdf, icdf, entropy and moments of the distributions in ember.distributions,
against torch.distributions (values, dtypes, gradients) and by float64 gradcheck."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from tests.helpers import compare_with_torch

from .cases import ALL, CONTINUOUS, DISCRETE, RNG

MOMENTS = ["mean", "variance", "stddev", "mode"]


# torch 2.13 compares the concentration with a float32 zero and fails for float64 parameters
FLOAT32_ONLY = {"GeneralizedPareto"}


def _differential(fn, arrays, torch_mod, **tolerances):
    """compare_with_torch, or, where torch has no such method, the same NotImplementedError."""
    dtype = tolerances.get("dtype", np.float64)
    try:
        fn(torch_mod, *[torch_mod.tensor(np.asarray(a).astype(dtype)) for a in arrays])
    except NotImplementedError:
        with pytest.raises(NotImplementedError):
            fn(ember, *[ember.tensor(np.asarray(a).astype(dtype)) for a in arrays])
        return
    compare_with_torch(fn, arrays, **tolerances)


@pytest.mark.parametrize("name", sorted(ALL))
def test_log_prob_matches_torch(name, torch_mod):
    make, params, value = ALL[name]
    tolerances = {"dtype": np.float32, "atol": 1e-5, "rtol": 1e-4} if name in FLOAT32_ONLY else {}
    _differential(
        lambda m, *xs: make(m, *xs[:-1]).log_prob(xs[-1]),
        [*params, value],
        torch_mod,
        **({"atol": 1e-6} | tolerances),
    )


@pytest.mark.parametrize("name", sorted(ALL))
def test_entropy_matches_torch(name, torch_mod):
    make, params, _ = ALL[name]
    _differential(lambda m, *xs: make(m, *xs).entropy(), params, torch_mod, atol=1e-6)


@pytest.mark.parametrize("name", sorted(CONTINUOUS))
def test_cdf_matches_torch(name, torch_mod):
    make, params, value = CONTINUOUS[name]
    if name in ("Gamma", "Chi2", "InverseGamma"):
        # the incomplete gamma has no derivative in its shape (torch raises): the value only
        def cdf(m, x):
            return make(m, *[m.tensor(p) for p in params]).cdf(x)

        compare_with_torch(cdf, [value], atol=1e-6)
        return
    tolerances = {"dtype": np.float32, "atol": 1e-5, "rtol": 1e-4} if name in FLOAT32_ONLY else {}
    _differential(
        lambda m, *xs: make(m, *xs[:-1]).cdf(xs[-1]),
        [*params, value],
        torch_mod,
        **({"atol": 1e-6} | tolerances),
    )


@pytest.mark.parametrize("name", sorted(CONTINUOUS))
def test_icdf_matches_torch(name, torch_mod):
    make, params, _ = CONTINUOUS[name]
    q = RNG.uniform(0.05, 0.95, size=(2, 3))
    _differential(
        lambda m, *xs: make(m, *xs[:-1]).icdf(xs[-1]),
        [*params, q],
        torch_mod,
        atol=1e-6,
        rtol=1e-5,
    )


@pytest.mark.parametrize("name", sorted(ALL))
@pytest.mark.parametrize("moment", MOMENTS)
def test_moments_match_torch(name, moment, torch_mod):
    make, params, _ = ALL[name]
    _differential(lambda m, *xs: getattr(make(m, *xs), moment), params, torch_mod, atol=1e-6)


@pytest.mark.parametrize("name", sorted(ALL))
def test_log_prob_and_entropy_pass_gradcheck(name):
    make, params, value = ALL[name]
    v = ember.tensor(value)
    inputs = tuple(ember.tensor(p, requires_grad=True) for p in params)

    def fn(*xs):
        d = make(ember, *xs)
        try:
            entropy = d.entropy().sum()
        except NotImplementedError:
            entropy = 0.0
        return d.log_prob(v).sum() + entropy

    assert ember.autograd.gradcheck(fn, inputs, atol=1e-5, rtol=1e-3)
    assert ember.autograd.gradgradcheck(fn, inputs, atol=1e-5, rtol=1e-3)


@pytest.mark.parametrize("name", ["Normal", "Laplace", "Gumbel", "LogNormal"])
def test_gradcheck_over_noncontiguous_parameters_and_values(name):
    make, params, value = CONTINUOUS[name]
    inputs = []
    for a in [*params, value]:
        if a.ndim == 2:
            t = ember.tensor(np.ascontiguousarray(a.T)).transpose(0, 1)
            assert not t.is_contiguous()
            inputs.append(t.requires_grad_())
        else:
            inputs.append(ember.tensor(a, requires_grad=True))

    def fn(*xs):
        d = make(ember, *xs[:-1])
        return d.log_prob(xs[-1]) + d.cdf(xs[-1])

    assert ember.autograd.gradcheck(fn, tuple(inputs), atol=1e-5, rtol=1e-3)


@pytest.mark.parametrize("name", ["Normal", "Exponential", "Laplace", "Uniform"])
def test_zero_size_batch_matches_torch(name, torch_mod):
    make, params, value = CONTINUOUS[name]
    empty = [np.zeros((0,) + p.shape[-1:]) + p.reshape(-1)[0] for p in params]
    v = np.zeros((0, value.shape[-1])) + value.reshape(-1)[0]
    compare_with_torch(lambda m, *xs: make(m, *xs[:-1]).log_prob(xs[-1]), [*empty, v])
    d = make(ember, *[ember.tensor(p) for p in empty])
    assert tuple(d.batch_shape) == (0, value.shape[-1])
    assert tuple(d.sample((2,)).shape) == (2, 0, value.shape[-1])


@pytest.mark.parametrize("name", sorted(ALL))
def test_shapes_and_repr_match_torch(name, torch_mod):
    make, params, _ = ALL[name]
    e = make(ember, *[ember.tensor(p) for p in params])
    t = make(torch_mod, *[torch_mod.tensor(p) for p in params])
    assert tuple(e.batch_shape) == tuple(t.batch_shape)
    assert tuple(e.event_shape) == tuple(t.event_shape)
    assert repr(e).replace("ember.", "") == repr(t).replace("torch.", "")
    assert e.has_rsample == t.has_rsample
    assert e.has_enumerate_support == t.has_enumerate_support
    assert repr(e.support).replace("ember.", "") == repr(t.support).replace("torch.", "")
    sample = e.sample((5,))
    assert tuple(sample.shape) == tuple(t.sample((5,)).shape)
    assert str(sample.dtype).split(".")[-1] == str(t.sample().dtype).split(".")[-1]
    expanded = e.expand((4,) + tuple(e.batch_shape))
    assert tuple(expanded.batch_shape) == (4,) + tuple(e.batch_shape)
    assert tuple(expanded.log_prob(e.sample()).shape) == (4,) + tuple(e.batch_shape)


@pytest.mark.parametrize("name", sorted(DISCRETE))
def test_enumerate_support_matches_torch(name, torch_mod):
    make, params, _ = DISCRETE[name]
    t = make(torch_mod, *[torch_mod.tensor(p) for p in params])
    e = make(ember, *[ember.tensor(p) for p in params])
    if not t.has_enumerate_support:
        with pytest.raises(NotImplementedError):
            e.enumerate_support()
        return
    for expand in (True, False):
        np.testing.assert_array_equal(
            e.enumerate_support(expand).numpy(), t.enumerate_support(expand).numpy()
        )


def test_normal_rsample_gradients_flow_to_parameters():
    loc = ember.tensor([1.0, -2.0], requires_grad=True)
    scale = ember.tensor([0.5, 2.0], requires_grad=True)
    d = ember.distributions.Normal(loc, scale)
    x = d.rsample((3,))
    x.sum().backward()
    np.testing.assert_allclose(loc.grad.numpy(), [3.0, 3.0])
    eps = (x.detach() - loc.detach()) / scale.detach()
    np.testing.assert_allclose(scale.grad.numpy(), eps.sum(0).numpy(), rtol=1e-6)


def test_perplexity_is_exp_entropy(torch_mod):
    compare_with_torch(
        lambda m, p: m.distributions.Categorical(probs=p).perplexity(), [np.array([0.2, 0.3, 0.5])]
    )


def test_log_prob_float32_dtype_matches_torch(torch_mod):
    compare_with_torch(
        lambda m, a, b, v: m.distributions.Normal(a, b).log_prob(v),
        [np.array([0.0, 1.0]), np.array([1.0, 2.0]), np.array([0.5, 0.5])],
        dtype=np.float32,
        atol=1e-6,
        rtol=1e-5,
    )


def test_scalar_parameters_give_empty_batch_shape(torch_mod):
    for m in (ember, torch_mod):
        d = m.distributions.Normal(0.0, 1.0)
        assert tuple(d.batch_shape) == ()
        assert str(d.loc.dtype).split(".")[-1] == "float32"
    np.testing.assert_allclose(
        ember.distributions.Normal(0.0, 1.0).log_prob(ember.tensor(0.0)).item(),
        -0.5 * np.log(2 * np.pi),
        rtol=1e-6,
    )


def test_generalized_pareto_at_zero_concentration_matches_torch(torch_mod):
    def run(m, loc, scale, conc, v, q):
        d = m.distributions.GeneralizedPareto(loc, scale, conc)
        return d.log_prob(v), d.cdf(v), d.icdf(q), d.entropy(), d.mean, d.variance

    arrays = [
        np.array([0.0, -1.0, 0.5]),
        np.array([1.0, 2.0, 0.5]),
        np.array([0.0, 0.7, -0.2]),
        np.array([0.5, 1.0, 1.5]),
        np.array([0.1, 0.5, 0.9]),
    ]
    compare_with_torch(run, arrays, dtype=np.float32, atol=1e-5, rtol=1e-4)
