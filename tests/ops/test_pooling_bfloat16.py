"""max pooling of bfloat16 with padding (src/ember/ops/pooling.py): ml_dtypes' bfloat16 has
NumPy kind "V", and the padded windows asked iinfo for their lowest value."""

import numpy as np

import ember


def test_max_pool3d_of_bfloat16_with_padding_and_nan_matches_torch(torch_mod):
    x = torch_mod.randn(1, 1, 2, 6, 6, generator=torch_mod.Generator().manual_seed(0))
    x = x.to(torch_mod.bfloat16)
    x[0, 0, 0, 0, 0] = float("nan")
    want, want_index = torch_mod.nn.functional.max_pool3d(x, 2, padding=1, return_indices=True)
    e = ember.tensor(x.float().numpy()).to(ember.bfloat16)
    got, got_index = ember.nn.functional.max_pool3d(e, 2, padding=1, return_indices=True)
    assert got.dtype == ember.bfloat16
    np.testing.assert_array_equal(got.to(ember.float32).numpy(), want.float().numpy())
    np.testing.assert_array_equal(got_index.numpy(), want_index.numpy())
