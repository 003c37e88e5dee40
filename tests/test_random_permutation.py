"""ember._random.permutation: the loop-free Fisher-Yates against the swap loop and torch."""

import numpy as np
import pytest

import ember
from ember._random.permutation import fisher_yates


def _swap_loop(offsets: np.ndarray) -> list[int]:
    perm = list(range(offsets.size + 1))
    for i, offset in enumerate(offsets.tolist()):
        perm[i], perm[i + offset] = perm[i + offset], perm[i]
    return perm


@pytest.mark.parametrize("n", [2, 3, 4, 7, 64, 1000, 4097])
def test_fisher_yates_equals_the_swap_loop(n):
    rng = np.random.default_rng(n)
    for _ in range(20):
        offsets = (rng.integers(0, 2**32, n - 1) % np.arange(n, 1, -1)).astype(np.uint32)
        assert fisher_yates(offsets).tolist() == _swap_loop(offsets)


def test_fisher_yates_with_long_forward_chains():
    # every step sends its value one place on: the value 0 travels to the end
    n = 50
    offsets = np.ones(n - 1, dtype=np.uint32)
    assert fisher_yates(offsets).tolist() == _swap_loop(offsets)
    offsets = np.arange(n - 1, 0, -1, dtype=np.uint32)  # every step targets the last position
    assert fisher_yates(offsets).tolist() == _swap_loop(offsets)


@pytest.mark.parametrize("n", [1, 2, 17, 250_000])
def test_randperm_matches_torch(n):
    torch = pytest.importorskip("torch")
    expected = torch.randperm(n, generator=torch.Generator().manual_seed(11))
    got = ember.randperm(n, generator=ember.Generator().manual_seed(11))
    assert got.dtype == ember.int64
    assert np.array_equal(got.numpy(), expected.numpy())
