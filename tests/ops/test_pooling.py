"""ops.pooling: fractional max pooling's ``_random_samples`` rules, against torch."""

import numpy as np
import pytest

import ember


def _pool(m, nd, input_shape, samples_shape, samples_dtype=None):
    generator = np.random.default_rng(0)
    x = m.tensor(generator.standard_normal(input_shape), dtype=m.float32)
    samples = m.tensor(generator.uniform(size=samples_shape), dtype=samples_dtype or m.float32)
    pool = (
        m.nn.functional.fractional_max_pool2d if nd == 2 else m.nn.functional.fractional_max_pool3d
    )
    return pool(x, 2, output_ratio=(0.5,) * nd, _random_samples=samples)


@pytest.mark.parametrize(
    "nd, input_shape, samples_shape",
    [
        (3, (4, 8, 8, 8), (2, 4, 3)),  # unbatched input: the first row of a longer batch
        (3, (4, 8, 8, 8), (1, 4, 3)),
        (3, (2, 4, 8, 8, 8), (3, 4, 3)),
        (2, (4, 8, 8), (2, 4, 2)),
        (2, (2, 4, 8, 8), (2, 4, 2)),
    ],
)
def test_fractional_max_pool_takes_samples_as_torch(torch_mod, nd, input_shape, samples_shape):
    got = _pool(ember, nd, input_shape, samples_shape)
    want = _pool(torch_mod, nd, input_shape, samples_shape)
    np.testing.assert_array_equal(got.numpy(), want.numpy())


@pytest.mark.parametrize(
    "nd, input_shape, samples_shape",
    [
        (3, (4, 8, 8, 8), (2, 5, 3)),
        (3, (4, 8, 8, 8), (2, 4, 2)),
        (3, (4, 8, 8, 8), (4, 3)),
        (3, (2, 4, 8, 8, 8), (1, 4, 3)),
        (2, (2, 4, 8, 8), (2, 3, 2)),
    ],
)
def test_fractional_max_pool_refuses_samples_as_torch(torch_mod, nd, input_shape, samples_shape):
    messages = []
    for m in (ember, torch_mod):
        with pytest.raises(RuntimeError) as info:
            _pool(m, nd, input_shape, samples_shape)
        messages.append(str(info.value))
    assert messages[0] == messages[1]


def test_fractional_max_pool_refuses_samples_of_another_dtype():
    with pytest.raises(RuntimeError, match="same dtype as input"):
        _pool(ember, 3, (4, 8, 8, 8), (1, 4, 3), ember.float64)
