"""Random draws beyond the plain streams, against real torch under the same seed:
multinomial (both algorithms, errors), the rejection samplers (_standard_gamma, poisson,
binomial, _sample_dirichlet) and ember.distributions' sample/rsample.

Each case also checks the stream position afterwards: the next ``rand`` draws equal torch's.
"""

import numpy as np
import pytest

import ember

SEEDS = (0, 3, 2024)


def _ulps(a: np.ndarray, b: np.ndarray) -> int:
    as_int = np.int32 if a.dtype == np.float32 else np.int64
    return int(np.abs(a.view(as_int).astype(np.int64) - b.view(as_int).astype(np.int64)).max())


def _both(torch, seed: int, draw):
    """``draw(module)`` under ``manual_seed(seed)`` in ember and torch, then the positions."""
    ember.manual_seed(seed)
    torch.manual_seed(seed)
    ours, theirs = draw(ember), draw(torch)
    assert np.array_equal(ember.rand(5).numpy(), torch.rand(5).numpy()), "stream position"
    return ours, theirs


# --- multinomial ----------------------------------------------------------------------------
def _weights(seed: int, shape: tuple, zeros: bool) -> np.ndarray:
    weights = np.random.RandomState(seed).rand(*shape) ** 3
    if zeros and shape[-1] > 2:
        weights[..., ::3] = 0
    return weights


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape", [(1,), (6,), (3, 7), (4, 100), (2, 10**4)])
@pytest.mark.parametrize("seed", SEEDS)
def test_multinomial_with_replacement_equals_torch(torch_mod, seed, shape, dtype):
    weights = _weights(seed, shape, zeros=True)

    def draw(m):
        return m.multinomial(m.tensor(weights, dtype=getattr(m, dtype)), 50, replacement=True)

    ours, theirs = _both(torch_mod, seed, draw)
    assert ours.dtype == ember.int64 and tuple(ours.shape) == tuple(theirs.shape)
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    assert not np.isin(ours.numpy(), np.flatnonzero(weights.reshape(-1, shape[-1])[0] == 0)).all()


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape,num_samples", [((6,), 1), ((6,), 4), ((3, 7), 7), ((5, 100), 9)])
@pytest.mark.parametrize("seed", SEEDS)
def test_multinomial_without_replacement_equals_torch(torch_mod, seed, shape, num_samples, dtype):
    weights = _weights(seed, shape, zeros=False)

    def draw(m):
        return m.multinomial(m.tensor(weights, dtype=getattr(m, dtype)), num_samples)

    ours, theirs = _both(torch_mod, seed, draw)
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    rows = ours.numpy().reshape(-1, num_samples)
    assert all(len(set(row)) == num_samples for row in rows)


def test_multinomial_without_replacement_skips_zero_weights_while_it_can(torch_mod):
    weights = [0.0, 1.0, 0.0, 3.0, 2.0, 0.0]

    def draw(m):
        return m.multinomial(m.tensor(weights), 3)

    ours, theirs = _both(torch_mod, 9, draw)
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    assert sorted(ours.tolist()) == [1, 3, 4]


def test_tensor_multinomial_and_generator_argument_equal_torch(torch_mod):
    weights = [[0.2, 0.3, 0.5], [1.0, 0.0, 1.0]]
    ours = ember.tensor(weights).multinomial(6, True, generator=ember.Generator().manual_seed(4))
    theirs = torch_mod.tensor(weights).multinomial(
        6, True, generator=torch_mod.Generator().manual_seed(4)
    )
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def test_multinomial_consumes_one_float64_uniform_per_sample(torch_mod):
    def draw(m):
        first = m.multinomial(m.tensor([0.5, 0.5]), 3, True)
        return m.cat([first, m.multinomial(m.tensor([[1.0, 2.0, 3.0]] * 2), 2).reshape(-1)], 0)

    ours, theirs = _both(torch_mod, 1, lambda m: draw(m).reshape(-1))
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


MULTINOMIAL_ERRORS = [
    ([0.5, -0.1, 0.6], 2, True, "encountering probability entry < 0"),
    ([0.5, float("nan"), 0.6], 2, True, "encountering probability entry < 0"),
    ([0.5, float("inf"), 0.6], 2, True, "encountering probability entry = infinity or NaN"),
    ([0.0, 0.0], 2, True, "sum of probabilities <= 0"),
    ([0.0, 0.0], 1, False, "sum of probabilities <= 0"),
    ([[1.0, 1.0], [0.0, 0.0]], 1, False, "sum of probabilities <= 0"),
    ([0.5, -0.1, 0.6], 2, False, "either `inf`, `nan` or element < 0"),
    ([0.5, float("nan"), 0.6], 2, False, "either `inf`, `nan` or element < 0"),
    ([0.5, float("inf"), 0.6], 2, False, "either `inf`, `nan` or element < 0"),
    ([0.5, 0.5], 3, False, "cannot sample n_sample > prob_dist.size(-1) samples without"),
    ([0.5, 0.5], 0, True, "cannot sample n_sample <= 0 samples"),
    ([[[0.5, 0.5]]], 1, True, "prob_dist must be 1 or 2 dim"),
    (0.5, 1, True, "prob_dist must be 1 or 2 dim"),
]


@pytest.mark.parametrize("weights,num_samples,replacement,message", MULTINOMIAL_ERRORS)
def test_multinomial_errors_as_torch(torch_mod, weights, num_samples, replacement, message):
    for m in (ember, torch_mod):
        with pytest.raises(RuntimeError, match=message.replace("(", r"\(").replace(")", r"\)")):
            m.multinomial(m.tensor(weights), num_samples, replacement)


def test_multinomial_of_integers_raises_as_torch(torch_mod):
    for m in (ember, torch_mod):
        with pytest.raises(RuntimeError, match="only supports floating-point dtypes for input"):
            m.multinomial(m.tensor([1, 2]), 1)


def test_multinomial_of_zero_rows_draws_nothing(torch_mod):
    ours, theirs = _both(torch_mod, 0, lambda m: m.multinomial(m.empty(0, 3), 2, True))
    assert tuple(ours.shape) == tuple(theirs.shape) == (0, 2)
