"""_backend.select / zero_where: NumPy's where, bit for bit, without a branch per element."""

import numpy as np
import pytest

from ember import _backend

DTYPES = [np.float32, np.float64, np.float16, np.int64, np.int8, np.uint16, np.bool_, np.complex64]
SHAPES = [  # (a, b, condition): every broadcast the op meets, all at or above the bit path's size
    ((64, 512), (64, 512), (64, 512)),
    ((64, 512), (), (64, 512)),
    ((), (64, 512), (64, 512)),
    ((1, 512), (64, 1), (64, 512)),
    ((64, 512), (64, 512), (512,)),
    ((1, 512), (1, 512), (64, 512)),
    ((5000,), (5000,), ()),
]


def _values(rng, shape, dtype):
    if dtype is np.bool_:
        return np.asarray(rng.random(shape) < 0.5)
    values = np.asarray(rng.standard_normal(shape) * 3).astype(dtype)
    if values.dtype.kind == "f" and values.size > 7:
        values.flat[::7] = np.nan  # a NaN is selected or dropped as any other value
        values.flat[3::11] = -0.0
    return values


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("shapes", SHAPES, ids=str)
def test_select_is_where_bit_for_bit(dtype, shapes):
    rng = np.random.default_rng(0)
    a, b = _values(rng, shapes[0], dtype), _values(rng, shapes[1], dtype)
    condition = np.asarray(rng.random(shapes[2]) < 0.5)
    got, want = _backend.select(condition, a, b), np.where(condition, a, b)
    assert got.dtype == want.dtype and got.shape == want.shape
    assert np.array_equal(got.view(np.uint8), want.view(np.uint8))


def test_select_refuses_shapes_that_do_not_broadcast():
    with pytest.raises(ValueError):
        _backend.select(np.ones((64, 100), bool), np.ones((64, 100)), np.ones((63, 100)))


def test_select_of_mixed_dtypes_is_wheres_promotion():
    condition = np.arange(5000) % 3 == 0
    got = _backend.select(condition, np.ones(5000, np.float32), np.zeros(5000, np.float64))
    assert got.dtype == np.float64
    assert np.array_equal(got, np.where(condition, 1.0, 0.0))


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
def test_zero_where_gives_positive_zero_even_over_nan(dtype):
    values = np.array([np.nan, -1.0, 2.0, -0.0, np.inf], dtype)
    condition = np.array([True, True, False, False, True])
    got = _backend.zero_where(condition, values)
    want = np.where(condition, np.zeros((), dtype), values)
    assert got.dtype == values.dtype
    assert np.array_equal(got.view(np.uint8), want.view(np.uint8))
    assert not np.signbit(got[[0, 1, 4]]).any()


def test_masked_fill_selects_by_bits_with_where_s_values():
    import ember

    rng = np.random.default_rng(11)
    x = rng.standard_normal((32, 512)).astype(np.float32)
    x[0, :4] = [np.nan, -0.0, np.inf, -np.inf]
    mask = rng.random((32, 512)) > 0.5
    for value in (0.0, -0.0, 2.5, float("nan")):
        got = ember.tensor(x).masked_fill(ember.tensor(mask), value).numpy()
        want = np.where(mask, np.float32(value), x)
        assert got.tobytes() == want.tobytes()
    row = rng.random(512) > 0.5  # a mask that broadcasts over the rows
    got = ember.tensor(x).masked_fill(ember.tensor(row), ember.tensor(-1.0)).numpy()
    assert got.tobytes() == np.where(row, np.float32(-1), x).tobytes()
