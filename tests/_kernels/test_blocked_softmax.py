"""The small-row softmax / log_softmax of ``_kernels/blocked.py``: the one-block passes'
numbers to the bit, no warning for finite rows, NaN rows (as torch) for infinite ones."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from ember._kernels import blocked


def _reference(x, log):
    out = np.empty_like(x)
    with np.errstate(all="ignore"):
        if log:
            kernel = blocked._log_softmax_block(x.shape[1], 1)
            kernel(out.reshape(-1), x.reshape(-1), np.empty(x.size, x.dtype))
        else:
            blocked._softmax_block(x.shape[1], 1)(out.reshape(-1), x.reshape(-1))
    return out


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(32, 10), (1, 5), (7, 300), (64, 64), (3, 1)])
@pytest.mark.parametrize("log", [True, False])
def test_small_rows_equal_the_block_passes_to_the_bit(dtype, shape, log):
    x = (np.random.default_rng(0).standard_normal(shape) * 30).astype(dtype)
    x[0, 0] = -np.inf  # a -inf among finite values: exp gives 0, no warning
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = blocked._softmax_array(x, 1, log)
    assert got.dtype == x.dtype
    assert got.tobytes() == _reference(x, log).tobytes()


@pytest.mark.parametrize("log", [True, False])
def test_rows_of_infinities_are_nan_without_a_warning(log):
    x = np.random.default_rng(1).standard_normal((4, 6)).astype(np.float32)
    x[1, 2] = np.inf
    x[2, :] = -np.inf
    x[3, 4] = np.nan
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = blocked._softmax_array(x, 1, log)
    assert np.isnan(got[1:]).all()
    np.testing.assert_array_equal(got[0], _reference(x[:1], log)[0])
