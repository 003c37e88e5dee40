"""scatter_reduce of bfloat16 (src/ember/ops/scatter_reduce.py): ml_dtypes' bfloat16 has NumPy
kind "V", and took the integer paths (a 0/1 identity for amax/amin, floor division for mean)."""

import numpy as np
import pytest

import ember


@pytest.mark.parametrize("reduce", ["amax", "amin", "mean", "prod", "sum"])
@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_reduce_of_bfloat16_matches_torch(torch_mod, reduce, include_self):
    g = torch_mod.Generator().manual_seed(0)
    x = (torch_mod.randn(5, 4, generator=g) * 3).to(torch_mod.bfloat16)
    src = (torch_mod.randn(5, 4, generator=g) * 3).to(torch_mod.bfloat16)
    index = torch_mod.randint(0, 5, (5, 4), generator=g)
    want = x.scatter_reduce(0, index, src, reduce, include_self=include_self)
    got = (
        ember.tensor(x.float().numpy())
        .to(ember.bfloat16)
        .scatter_reduce(
            0,
            ember.tensor(index.numpy()),
            ember.tensor(src.float().numpy()).to(ember.bfloat16),
            reduce,
            include_self=include_self,
        )
    )
    assert got.dtype == ember.bfloat16
    np.testing.assert_allclose(
        got.to(ember.float32).numpy(), want.float().numpy(), rtol=1.6e-2, atol=1e-2
    )


@pytest.mark.parametrize("reduce", ["prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
def test_index_reduce_of_a_zero_dim_input_treats_it_as_one_element(reduce, include_self):
    from tests.helpers import compare_with_torch

    compare_with_torch(
        lambda m, x, s: x.index_reduce(0, m.tensor([0]), s, reduce, include_self=include_self),
        [np.array(2.5), np.array(-1.5)],
    )
