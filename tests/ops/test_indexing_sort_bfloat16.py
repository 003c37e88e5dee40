"""sort/argsort/topk of bfloat16 in descending order (src/ember/ops/indexing.py): ml_dtypes'
bfloat16 has NumPy kind "V", and was ordered as if cast to int64."""

import numpy as np
import pytest

import ember


def _pair(torch_mod, shape):
    x = torch_mod.randn(*shape, generator=torch_mod.Generator().manual_seed(0)) * 5
    x = x.to(torch_mod.bfloat16)
    x.view(-1)[0] = float("nan")
    return x, ember.tensor(x.float().numpy()).to(ember.bfloat16)


@pytest.mark.parametrize("k", [2, 3, 10])  # 2: select-then-sort path; 3, 10: full argsort
def test_topk_of_bfloat16_matches_torch(torch_mod, k):
    x, e = _pair(torch_mod, (5, 10, 5))
    want, got = torch_mod.topk(x, k, 1), ember.topk(e, k, 1)
    np.testing.assert_array_equal(got.indices.numpy(), want.indices.numpy())
    np.testing.assert_array_equal(got.values.to(ember.float32).numpy(), want.values.float().numpy())


def test_descending_sort_of_bfloat16_matches_torch(torch_mod):
    x, e = _pair(torch_mod, (4, 7))
    want, got = torch_mod.sort(x, 1, descending=True), ember.sort(e, 1, descending=True)
    np.testing.assert_array_equal(got.indices.numpy(), want.indices.numpy())
