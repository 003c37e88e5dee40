"""im2col / col2im split over ember's intra-op threads: the same arrays as on one thread."""

import numpy as np
import pytest

import ember
from ember.ops import conv as conv_ops

CASES = [
    ((8, 6, 40, 41), (3, 2), (2, 1), ((1, 1), (0, 2)), (1, 2)),
    ((16, 5, 300), (4,), (3,), ((2, -1),), (2,)),  # a transposed conv's negative padding
    ((4, 4, 12, 13, 11), (2, 3, 2), (1, 2, 1), ((1, 0), (1, 1), (0, 1)), (2, 1, 1)),
    ((9, 3, 33, 35), (3, 3), (1, 1), ((1, 1), (1, 1)), (1, 1)),
]


@pytest.fixture
def restore_threads(monkeypatch):
    """Small arrays split too (the threshold at one element); the thread count restored."""
    monkeypatch.setattr(ember._backend, "PARALLEL_MIN_ELEMENTS", 1)
    before = ember.get_num_threads()
    yield
    ember.set_num_threads(before)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("channels_first", [False, True])
@pytest.mark.parametrize(("shape", "kernel", "stride", "pads", "dilation"), CASES)
def test_split_over_threads_matches_one_thread(
    restore_threads, shape, kernel, stride, pads, dilation, channels_first, dtype
):
    rng = np.random.default_rng(0)
    x = rng.standard_normal(shape).astype(dtype)
    geometry = (kernel, stride, pads, dilation, channels_first)
    results = []
    calls = []
    monkeypatch_spans = conv_ops._run_spans

    def counting(work, spans):
        calls.append(len(spans))
        monkeypatch_spans(work, spans)

    conv_ops._run_spans = counting
    try:
        for threads in (1, 2, 3):
            ember.set_num_threads(threads)
            cols = conv_ops._im2col(np, x, *geometry)
            g = np.random.default_rng(1).standard_normal(cols.shape).astype(dtype)
            image = conv_ops._col2im(np, g, shape[2:], *geometry)
            results.append((cols.copy(), image.copy()))
    finally:
        conv_ops._run_spans = monkeypatch_spans
    assert max(calls) >= 2  # the pieces really were split
    for cols, image in results[1:]:
        np.testing.assert_array_equal(cols, results[0][0])
        np.testing.assert_array_equal(image, results[0][1])
    assert results[0][1].shape == shape


def test_split_fills_a_given_output(restore_threads):
    ember.set_num_threads(2)
    x = np.random.default_rng(2).standard_normal((8, 6, 40, 40)).astype(np.float32)
    geometry = ((3, 3), (1, 1), ((1, 1), (1, 1)), (1, 1), True)
    out = np.full((6 * 9, 8 * 40 * 40), np.nan, dtype=np.float32)
    cols = conv_ops._im2col(np, x, *geometry, out=out)
    assert np.shares_memory(cols, out) and not np.isnan(out).any()
    ember.set_num_threads(1)
    np.testing.assert_array_equal(out.reshape(cols.shape), conv_ops._im2col(np, x, *geometry))
