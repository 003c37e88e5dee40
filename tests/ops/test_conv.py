"""ember.ops.conv against torch: edge shapes the OpInfo conformance suite found."""

import numpy as np
import pytest

import ember


@pytest.mark.parametrize("shape", [(0, 3, 5, 5), (3, 5, 5), (2, 3, 4, 6)])
def test_unfold_of_an_empty_batch_keeps_the_block_count(torch_mod, shape):
    x = np.random.default_rng(0).standard_normal(shape)
    got = ember.nn.functional.unfold(ember.tensor(x), 2)
    want = torch_mod.nn.functional.unfold(torch_mod.tensor(x), 2)
    assert tuple(got.shape) == tuple(want.shape)
    np.testing.assert_allclose(got.numpy(), want.numpy())


def test_unfold_of_empty_channels_raises_as_torch(torch_mod):
    with pytest.raises(RuntimeError, match="non-zero dimensions") as torch_error:
        torch_mod.nn.functional.unfold(torch_mod.zeros(2, 0, 5, 5), 2)
    with pytest.raises(
        RuntimeError, match="non-zero dimensions for input, but got: \\[2, 0, 5, 5\\]"
    ):
        ember.nn.functional.unfold(ember.zeros(2, 0, 5, 5), 2)
    assert "possibly 0 batch size" in str(torch_error.value)
