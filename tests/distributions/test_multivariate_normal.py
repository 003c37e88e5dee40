"""MultivariateNormal and LowRankMultivariateNormal against torch: the three
parameterisations, log_prob, entropy, derived matrices, KL, errors and sample covariance."""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.distributions as D
from tests.helpers import compare_with_torch

RNG = np.random.default_rng(11)
N = 3
A = RNG.uniform(-1, 1, size=(2, N, N))
COV = A @ np.swapaxes(A, -1, -2) + np.eye(N)  # a batch of two SPD matrices
LOC = RNG.uniform(-1, 1, size=(N,))
VALUE = RNG.uniform(-2, 2, size=(4, 2, N))
TRIL = np.linalg.cholesky(COV)
PRECISION = np.linalg.inv(COV)


def _mvn(kind):
    def make(m, loc, matrix):
        return m.distributions.MultivariateNormal(loc, **{kind: matrix})

    return make


PARAMS = {"covariance_matrix": COV, "precision_matrix": PRECISION, "scale_tril": TRIL}


@pytest.mark.parametrize("kind", sorted(PARAMS))
def test_log_prob_and_entropy_match_torch(kind, torch_mod):
    make = _mvn(kind)
    compare_with_torch(
        lambda m, loc, mat, v: make(m, loc, mat).log_prob(v), [LOC, PARAMS[kind], VALUE]
    )
    compare_with_torch(lambda m, loc, mat: make(m, loc, mat).entropy(), [LOC, PARAMS[kind]])


@pytest.mark.parametrize("kind", sorted(PARAMS))
@pytest.mark.parametrize(
    "attr", ["covariance_matrix", "precision_matrix", "scale_tril", "variance", "mean", "mode"]
)
def test_derived_quantities_match_torch(kind, attr, torch_mod):
    make = _mvn(kind)
    compare_with_torch(
        lambda m, loc, mat: getattr(make(m, loc, mat), attr), [LOC, PARAMS[kind]], atol=1e-6
    )


def test_shapes_and_repr_match_torch(torch_mod):
    for kind, matrix in PARAMS.items():
        e = D.MultivariateNormal(ember.tensor(LOC), **{kind: ember.tensor(matrix)})
        t = torch_mod.distributions.MultivariateNormal(
            torch_mod.tensor(LOC), **{kind: torch_mod.tensor(matrix)}
        )
        assert tuple(e.batch_shape) == tuple(t.batch_shape) == (2,)
        assert tuple(e.event_shape) == tuple(t.event_shape) == (N,)
        assert repr(e).replace("ember.", "") == repr(t).replace("torch.", "")
        assert tuple(e.expand((5, 2)).log_prob(ember.tensor(VALUE[0])).shape) == (5, 2)
        assert tuple(e.rsample((7,)).shape) == (7, 2, N)


def test_log_prob_gradgradcheck_through_the_cholesky():
    loc = ember.tensor(LOC, requires_grad=True)
    cov = ember.tensor(COV[0], requires_grad=True)
    v = ember.tensor(VALUE[:, 0])

    def fn(loc, cov):
        sym = (cov + cov.mT) / 2  # perturbations of gradcheck must keep it symmetric
        return D.MultivariateNormal(loc, sym).log_prob(v)

    assert ember.autograd.gradcheck(fn, (loc, cov))
    assert ember.autograd.gradgradcheck(fn, (loc, cov))


def test_kl_divergence_matches_torch(torch_mod):
    def kl(m, loc_p, tril_p, loc_q, cov_q):
        p = m.distributions.MultivariateNormal(loc_p, scale_tril=tril_p)
        q = m.distributions.MultivariateNormal(loc_q, covariance_matrix=cov_q)
        return m.distributions.kl_divergence(p, q)

    compare_with_torch(kl, [LOC, TRIL, -LOC, COV[::-1].copy()])


def test_lowrank_matches_torch(torch_mod):
    W = RNG.uniform(-1, 1, size=(2, N, 2))
    d = RNG.uniform(0.5, 1.5, size=(N,))

    def run(m, loc, w, diag, v):
        dist = m.distributions.LowRankMultivariateNormal(loc, w, diag)
        return (
            dist.log_prob(v),
            dist.entropy(),
            dist.variance,
            dist.covariance_matrix,
            dist.precision_matrix,
            dist.scale_tril,
        )

    compare_with_torch(run, [LOC, W, d, VALUE], atol=1e-6)

    def kl(m, loc, w, diag, cov):
        p = m.distributions.LowRankMultivariateNormal(loc, w, diag)
        q = m.distributions.MultivariateNormal(-loc, cov)
        return m.distributions.kl_divergence(p, q), m.distributions.kl_divergence(q, p)

    compare_with_torch(kl, [LOC, W, d, COV], atol=1e-6)


@pytest.mark.parametrize(
    "call",
    [
        lambda m: m.distributions.MultivariateNormal(m.zeros(2)),
        lambda m: m.distributions.MultivariateNormal(m.zeros(2), m.eye(2), scale_tril=m.eye(2)),
        lambda m: m.distributions.MultivariateNormal(m.tensor(0.0), m.eye(2)),
        lambda m: m.distributions.MultivariateNormal(m.zeros(2), m.ones(2)),
        lambda m: m.distributions.MultivariateNormal(
            m.zeros(2), m.tensor([[1.0, 2.0], [2.0, 1.0]])
        ),
        lambda m: m.distributions.MultivariateNormal(m.zeros(2), scale_tril=-m.eye(2)),
        lambda m: m.distributions.MultivariateNormal(m.zeros(2), m.eye(2)).log_prob(m.ones(3)),
        lambda m: m.distributions.LowRankMultivariateNormal(m.zeros(2), m.ones(3, 1), m.ones(2)),
        lambda m: m.distributions.LowRankMultivariateNormal(m.zeros(2), m.ones(2), m.ones(2)),
    ],
)
def test_errors_match_torch(call, torch_mod):
    def message(m):
        with pytest.raises(ValueError) as info:
            call(m)
        return str(info.value).replace("torch.", "").replace("ember.", "")

    assert message(ember) == message(torch_mod)


def test_sample_covariance_matches():
    ember.manual_seed(5)
    d = D.MultivariateNormal(ember.tensor(LOC), ember.tensor(COV[0]))
    x = d.sample((20000,)).numpy()
    np.testing.assert_allclose(x.mean(0), LOC, atol=6 * np.sqrt(COV[0].diagonal().max() / 20000))
    np.testing.assert_allclose(np.cov(x.T), COV[0], atol=0.1)
    lr = D.LowRankMultivariateNormal(
        ember.zeros(2, dtype=ember.float64),
        ember.tensor([[1.0], [0.5]], dtype=ember.float64),
        ember.ones(2, dtype=ember.float64),
    )
    y = lr.sample((20000,)).numpy()
    np.testing.assert_allclose(np.cov(y.T), [[2.0, 0.5], [0.5, 1.25]], atol=0.1)


def test_rsample_gradient_reaches_the_scale():
    tril = ember.tensor(TRIL[0], requires_grad=True)
    x = D.MultivariateNormal(ember.zeros(N, dtype=ember.float64), scale_tril=tril).rsample((3,))
    x.sum().backward()
    assert tril.grad is not None and tril.grad.shape == (N, N)
