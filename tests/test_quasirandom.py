"""ember.quasirandom.SobolEngine against torch's: unscrambled points, fast_forward, draw_base2,
reset, dtypes, reprs and errors."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import ember


@pytest.mark.parametrize("dimension", [1, 3, 40, 1111])
def test_unscrambled_points_are_torchs(torch_mod, dimension):
    ours = ember.quasirandom.SobolEngine(dimension)
    theirs = torch_mod.quasirandom.SobolEngine(dimension)
    for step in (lambda e: e.draw(5), lambda e: e.fast_forward(7).draw(9), lambda e: e.draw()):
        a, b = step(ours), step(theirs)
        assert a.dtype.name == str(b.dtype).split(".")[-1]
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    assert ours.num_generated == theirs.num_generated == 22
    np.testing.assert_array_equal(
        ours.reset().draw(4, dtype=ember.float64).numpy(),
        theirs.reset().draw(4, dtype=torch_mod.float64).numpy(),
    )


def test_draw_base2_keeps_the_balance_as_torch():
    engine = ember.quasirandom.SobolEngine(2)
    assert tuple(engine.draw_base2(3).shape) == (8, 2)
    engine.draw(1)
    with pytest.raises(ValueError, match="require n to be a power of 2. 9 points"):
        engine.draw_base2(2)


def test_scrambled_engines_are_reproducible_and_quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        a = ember.quasirandom.SobolEngine(3, scramble=True, seed=7).draw(5)
    b = ember.quasirandom.SobolEngine(3, scramble=True, seed=7).draw(5)
    assert a.tolist() == b.tolist() and float(a.min()) >= 0 and float(a.max()) < 1
    assert repr(ember.quasirandom.SobolEngine(3, scramble=True, seed=7)) == (
        "SobolEngine(dimension=3, scramble=True, seed=7)"
    )


def test_dimension_out_of_range_raises():
    with pytest.raises(ValueError, match=r"dimensionality for SobolEngine is \[1, 21201\]"):
        ember.quasirandom.SobolEngine(0)
