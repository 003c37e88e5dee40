"""constraints: check() results and reprs against torch."""

from __future__ import annotations

import numpy as np
import pytest

import ember

VALUES = np.array(
    [[0.0, 1.0, 0.5, -1.0], [2.0, 0.25, 0.25, 0.5], [1.0, 0.0, 0.0, 0.0], [3.0, -0.5, 4.0, 1.0]]
)

CONSTRAINTS = {
    "real": lambda c: c.real,
    "positive": lambda c: c.positive,
    "nonnegative": lambda c: c.nonnegative,
    "unit_interval": lambda c: c.unit_interval,
    "boolean": lambda c: c.boolean,
    "nonnegative_integer": lambda c: c.nonnegative_integer,
    "positive_integer": lambda c: c.positive_integer,
    "integer_interval": lambda c: c.integer_interval(0, 2),
    "greater_than": lambda c: c.greater_than(0.5),
    "greater_than_eq": lambda c: c.greater_than_eq(0.5),
    "less_than": lambda c: c.less_than(1.0),
    "interval": lambda c: c.interval(-1.0, 1.0),
    "half_open_interval": lambda c: c.half_open_interval(-1.0, 1.0),
    "simplex": lambda c: c.simplex,
    "one_hot": lambda c: c.one_hot,
    "multinomial": lambda c: c.multinomial(4),
    "real_vector": lambda c: c.real_vector,
    "independent_positive": lambda c: c.independent(c.positive, 1),
    "lower_triangular": lambda c: c.lower_triangular,
    "lower_cholesky": lambda c: c.lower_cholesky,
    "square": lambda c: c.square,
    "symmetric": lambda c: c.symmetric,
    "positive_definite": lambda c: c.positive_definite,
    "positive_semidefinite": lambda c: c.positive_semidefinite,
}

MATRICES = [
    np.array([[2.0, 0.0], [1.0, 3.0]]),
    np.array([[2.0, 1.0], [1.0, 3.0]]),
    np.array([[1.0, 2.0], [2.0, 1.0]]),
    np.array([[1.0, 0.0], [0.0, 0.0]]),
]


@pytest.mark.parametrize("name", sorted(CONSTRAINTS))
def test_check_and_repr_match_torch(name, torch_mod):
    make = CONSTRAINTS[name]
    e, t = make(ember.distributions.constraints), make(torch_mod.distributions.constraints)
    assert repr(e) == repr(t)
    assert e.event_dim == t.event_dim
    assert e.is_discrete == t.is_discrete
    values = [VALUES] if e.event_dim < 2 else MATRICES
    for v in values:
        np.testing.assert_array_equal(
            e.check(ember.tensor(v)).numpy(), t.check(torch_mod.tensor(v)).numpy()
        )


def test_dependent_constraints(torch_mod):
    c = ember.distributions.constraints
    assert c.is_dependent(c.dependent)
    assert not c.is_dependent(c.real)
    assert repr(c.dependent) == repr(torch_mod.distributions.constraints.dependent)
    with pytest.raises(ValueError, match="Cannot determine validity of dependent constraint"):
        c.dependent.check(ember.zeros(1))
    assert c.dependent(is_discrete=True, event_dim=1).event_dim == 1
    with pytest.raises(NotImplementedError):
        c.dependent.event_dim  # noqa: B018
    # a distribution's parameter-dependent support reads as dependent on the class
    assert c.is_dependent(ember.distributions.Uniform.support)
    assert repr(ember.distributions.Uniform(0.0, 2.0).support) == (
        "Interval(lower_bound=0.0, upper_bound=2.0)"
    )


def test_independent_needs_enough_dims():
    c = ember.distributions.constraints
    with pytest.raises(ValueError, match=r"Expected value.dim\(\) >= 2 but got 1"):
        c.independent(c.real, 2).check(ember.zeros(3))
