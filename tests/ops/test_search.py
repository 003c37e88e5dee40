"""ember.ops.search against torch: empty rows found by the OpInfo conformance suite."""

import numpy as np
import pytest

import ember


@pytest.mark.parametrize(
    ("seq_shape", "values_shape"), [((2, 0), (2, 3)), ((2, 3), (2, 0)), ((0, 4), (0, 2))]
)
def test_searchsorted_with_empty_rows_matches_torch(torch_mod, seq_shape, values_shape):
    rng = np.random.default_rng(0)
    seq = np.sort(rng.standard_normal(seq_shape), axis=-1)
    values = rng.standard_normal(values_shape)
    got = ember.searchsorted(ember.tensor(seq), ember.tensor(values))
    want = torch_mod.searchsorted(torch_mod.tensor(seq), torch_mod.tensor(values))
    assert tuple(got.shape) == tuple(want.shape)
    assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1]
    np.testing.assert_array_equal(got.numpy(), want.numpy())
