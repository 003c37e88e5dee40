"""validate_args: PyTorch's ValueError messages for bad parameters and values."""

from __future__ import annotations

import pytest

import ember
from ember.distributions import Distribution, Exponential, Normal, Uniform


def _message(fn):
    try:
        fn()
    except ValueError as e:
        return str(e).replace("torch.", "").replace("ember.", "")
    raise AssertionError("no ValueError")


def test_bad_parameter_message_matches_torch(torch_mod):
    def make(m):
        return lambda: m.distributions.Normal(m.tensor([0.0, 1.0]), m.tensor([1.0, -1.0]))

    assert _message(make(ember)) == _message(make(torch_mod))
    assert "to satisfy the constraint GreaterThan(lower_bound=0.0)" in _message(make(ember))


def test_nan_location_is_rejected():
    with pytest.raises(ValueError, match=r"Expected parameter loc \(Tensor of shape \(2,\)\)"):
        Normal(ember.tensor([0.0, float("nan")]), 1.0)


@pytest.mark.parametrize(
    "call",
    [
        lambda m: m.distributions.Exponential(m.ones(3)).log_prob(-m.ones(3)),
        lambda m: m.distributions.Normal(m.zeros(3), 1.0).log_prob(m.ones(2)),
        lambda m: m.distributions.Normal(m.zeros(3), 1.0).log_prob(3.0),
        lambda m: m.distributions.Uniform(m.zeros(3), m.tensor([1.0, 0.0, 1.0])),
        lambda m: m.distributions.Categorical(m.tensor([0.5, 0.5])).log_prob(m.tensor(2)),
        lambda m: m.distributions.Bernoulli(m.tensor(0.5)).log_prob(m.tensor(0.5)),
        lambda m: m.distributions.OneHotCategorical(m.tensor([0.5, 0.5])).log_prob(m.ones(3)),
        lambda m: m.distributions.Bernoulli(probs=m.tensor(0.5), logits=m.tensor(0.0)),
        lambda m: m.distributions.Categorical(m.tensor(0.5)),
        lambda m: m.distributions.Independent(m.distributions.Normal(0.0, 1.0), 1),
    ],
)
def test_value_errors_match_torch(call, torch_mod):
    assert _message(lambda: call(ember)) == _message(lambda: call(torch_mod))


def test_validation_can_be_turned_off():
    d = Normal(ember.tensor([0.0]), ember.tensor([-1.0]), validate_args=False)
    assert d.scale.item() == -1.0
    Distribution.set_default_validate_args(False)
    try:
        assert Exponential(ember.ones(2)).log_prob(-ember.ones(2)).shape == (2,)
        Uniform(1.0, 0.0)
    finally:
        Distribution.set_default_validate_args(True)
    with pytest.raises(ValueError):
        Uniform(1.0, 0.0)


def test_set_default_validate_args_rejects_non_bools():
    with pytest.raises(ValueError):
        Distribution.set_default_validate_args("yes")
