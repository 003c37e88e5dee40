"""Transforms: forward, inverse and log |det J| against torch, gradcheck, caching, shapes,
and the biject_to / transform_to registries."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember.distributions import constraints, transforms
from tests.helpers import compare_with_torch

from .cases import positive, real

# name -> (make(mod), input array in the domain)
TRANSFORMS = {
    "Exp": (lambda m: m.distributions.ExpTransform(), real(2, 3)),
    "Sigmoid": (lambda m: m.distributions.SigmoidTransform(), real(2, 3)),
    "Tanh": (lambda m: m.distributions.TanhTransform(), real(2, 3)),
    "Softplus": (lambda m: m.distributions.SoftplusTransform(), real(2, 3)),
    "Affine": (lambda m: m.distributions.AffineTransform(1.5, -2.0), real(2, 3)),
    "AffineTensor": (
        lambda m: m.distributions.AffineTransform(
            m.tensor([0.5, 1.0, -1.0], dtype=m.float64),
            m.tensor([2.0, -0.5, 3.0], dtype=m.float64),
            event_dim=1,
        ),
        real(2, 3),
    ),
    "Power": (lambda m: m.distributions.PowerTransform(2.5), positive(2, 3)),
    "StickBreaking": (lambda m: m.distributions.StickBreakingTransform(), real(2, 3)),
    "Compose": (
        lambda m: m.distributions.ComposeTransform(
            [m.distributions.ExpTransform(), m.distributions.AffineTransform(1.0, 3.0)]
        ),
        real(2, 3),
    ),
    "Inverse": (lambda m: m.distributions.ExpTransform().inv, positive(2, 3)),
    "CorrCholesky": (lambda m: m.distributions.CorrCholeskyTransform(), real(2, 6)),
    "Cat": (
        lambda m: m.distributions.CatTransform(
            [m.distributions.ExpTransform(), m.distributions.AffineTransform(1.0, 2.0)],
            dim=1,
            lengths=[2, 1],
        ),
        real(2, 3),
    ),
    "Stack": (
        lambda m: m.distributions.StackTransform(
            [m.distributions.SigmoidTransform(), m.distributions.ExpTransform()], dim=0
        ),
        real(2, 3),
    ),
    "Independent": (
        lambda m: m.distributions.transforms.IndependentTransform(
            m.distributions.SigmoidTransform(), 1
        ),
        real(2, 3),
    ),
}


@pytest.mark.parametrize("name", sorted(TRANSFORMS))
def test_forward_inverse_and_log_det_match_torch(name, torch_mod):
    make, x = TRANSFORMS[name]

    def run(m, x):
        t = make(m)
        y = t(x)
        return y, t.inv(y), t.log_abs_det_jacobian(x, y)

    compare_with_torch(run, [x], atol=1e-6)
    e = make(ember)
    np.testing.assert_allclose(e.inv(e(ember.tensor(x))).numpy(), x, rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize(
    "name", ["Exp", "Sigmoid", "Tanh", "Softplus", "StickBreaking", "Power", "CorrCholesky"]
)
def test_log_det_passes_gradgradcheck(name):
    make, x = TRANSFORMS[name]
    t = make(ember)

    def fn(x):
        y = t(x)
        return y.sum() + t.log_abs_det_jacobian(x, y).sum() + t.inv(y).sum()

    inputs = (ember.tensor(x, requires_grad=True),)
    assert ember.autograd.gradcheck(fn, inputs)
    assert ember.autograd.gradgradcheck(fn, inputs)


@pytest.mark.parametrize("name", ["Softmax", "LowerCholesky", "Abs", "PositiveDefinite"])
def test_non_bijective_transforms_match_torch(name, torch_mod):
    x = real(3, 3)

    def run(m, x):
        t = getattr(m.distributions, f"{name}Transform")()
        y = t(x)
        return y, t.inv(y)

    compare_with_torch(run, [x], atol=1e-6)


def test_properties_match_torch(torch_mod):
    for name, (make, _) in TRANSFORMS.items():
        e, t = make(ember), make(torch_mod)
        assert repr(e.domain) == repr(t.domain), name
        assert repr(e.codomain) == repr(t.codomain), name
        assert e.bijective == t.bijective, name
        assert repr(e).replace("ember.", "") == repr(t).replace("torch.", ""), name
    for m in (ember, torch_mod):
        assert m.distributions.StickBreakingTransform().forward_shape((2, 3)) == (2, 4)
        assert m.distributions.StickBreakingTransform().inverse_shape((2, 4)) == (2, 3)
        assert m.distributions.ExpTransform() == m.distributions.ExpTransform()
        assert m.distributions.ExpTransform().inv.inv == m.distributions.ExpTransform()
        assert m.distributions.AffineTransform(1.0, -2.0).sign == -1


def test_cache_returns_the_remembered_input():
    t = transforms.TanhTransform(cache_size=1)
    x = ember.tensor([30.0])  # tanh(30) rounds to 1: atanh would give inf
    y = t(x)
    assert t.inv(y) is x
    assert t(x) is y
    with pytest.raises(ValueError, match="cache_size must be 0 or 1"):
        transforms.ExpTransform(cache_size=2)


def test_event_dim_mismatch_raises():
    with pytest.raises(ValueError, match="domain.event_dim or .codomain.event_dim"):
        transforms.ReshapeTransform((4,), (2, 2)).event_dim  # noqa: B018


@pytest.mark.parametrize(
    "constraint",
    [
        "real",
        "positive",
        "nonnegative",
        "unit_interval",
        "simplex",
        "real_vector",
        "greater_than",
        "less_than",
        "interval",
        "corr_cholesky",
        "cat",
        "stack",
    ],
)
@pytest.mark.parametrize("registry", ["biject_to", "transform_to"])
def test_registries_map_into_the_constraint_as_torch(constraint, registry, torch_mod):
    def make(m):
        c = getattr(m.distributions.constraints, constraint)
        if constraint in ("greater_than", "less_than"):
            c = c(1.5)
        elif constraint == "interval":
            c = c(-1.0, 2.0)
        elif constraint == "cat":
            c = c(
                [m.distributions.constraints.positive, m.distributions.constraints.real], 1, [2, 1]
            )
        elif constraint == "stack":
            c = c([m.distributions.constraints.unit_interval, m.distributions.constraints.real], 0)
        return c, getattr(m.distributions, registry)(c)

    (ce, te), (_, tt) = make(ember), make(torch_mod)
    assert repr(te) == repr(tt)
    x = real(2, 3) if constraint != "corr_cholesky" else real(2, 6)
    y = te(ember.tensor(x))
    np.testing.assert_allclose(y.numpy(), tt(torch_mod.tensor(x)).numpy(), rtol=1e-6)
    assert bool(ce.check(y).all())


def test_registry_rejects_unknown_constraints(torch_mod):
    for m in (ember, torch_mod):
        with pytest.raises(NotImplementedError, match="Cannot transform _Boolean constraints"):
            m.distributions.biject_to(m.distributions.constraints.boolean)


def test_register_accepts_a_new_constraint_type():
    class _Odd(constraints.Constraint):
        def check(self, value):
            return value % 2 == 1

    registry = ember.distributions.constraint_registry.ConstraintRegistry()
    registry.register(_Odd, lambda c: transforms.ExpTransform())
    assert isinstance(registry(_Odd()), transforms.ExpTransform)
    with pytest.raises(TypeError):
        registry.register(int, lambda c: None)


def test_positive_definite_registry_gives_positive_definite_matrices(torch_mod):
    x = real(2, 3, 3)
    y = ember.distributions.transform_to(constraints.positive_definite)(ember.tensor(x))
    assert bool(constraints.positive_definite.check(y).all())
    expected = torch_mod.distributions.transform_to(
        torch_mod.distributions.constraints.positive_definite
    )(torch_mod.tensor(x))
    np.testing.assert_allclose(y.numpy(), expected.numpy(), rtol=1e-6)


def test_reshape_and_cdf_transforms_match_torch(torch_mod):
    x = real(2, 6)

    def run(m, x):
        reshape = m.distributions.transforms.ReshapeTransform((6,), (2, 3))
        y = reshape(x)
        cdf = m.distributions.transforms.CumulativeDistributionTransform(
            m.distributions.Normal(m.zeros((), dtype=m.float64), m.ones((), dtype=m.float64))
        )
        u = cdf(x)
        return y, reshape.inv(y), reshape.log_abs_det_jacobian(x, y), u, cdf.inv(u)

    compare_with_torch(run, [x], atol=1e-6)
    for m in (ember, torch_mod):
        t = m.distributions.transforms.ReshapeTransform((6,), (2, 3))
        assert tuple(t.forward_shape((4, 6))) == (4, 2, 3)
        assert tuple(t.inverse_shape((4, 2, 3))) == (4, 6)


def test_straight_through_one_hot_passes_gradients_to_probs(torch_mod):
    for m in (ember, torch_mod):
        probs = m.tensor([0.2, 0.3, 0.5], requires_grad=True)
        sample = m.distributions.OneHotCategoricalStraightThrough(probs).rsample((4,))
        assert tuple(sample.shape) == (4, 3)
        (sample * m.tensor([1.0, 2.0, 3.0])).sum().backward()
        # through the normalisation p / Σp: 4 (c - c·p) for c = (1, 2, 3)
        np.testing.assert_allclose(probs.grad.numpy(), [-5.2, -1.2, 2.8], rtol=1e-5)
