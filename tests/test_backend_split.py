"""ember._backend's splitting primitives: ufuncs and reductions in chunks over ember's pool
give one call's values bit for bit, and one call's layout."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import ember
from ember import _backend


@pytest.fixture
def three_threads():
    before = ember.get_num_threads()
    ember.set_num_threads(3)  # an odd count: spans of unequal sizes
    yield
    ember.set_num_threads(before)


def _identical(got, expected) -> None:
    got, expected = np.asarray(got), np.asarray(expected)
    assert got.dtype == expected.dtype and got.shape == expected.shape
    assert got.strides == expected.strides
    assert np.array_equal(got, expected, equal_nan=True)


RNG = np.random.default_rng(0)
X = (RNG.standard_normal(200_003) * 4).astype(np.float32)
Y = (RNG.standard_normal(200_003) * 4).astype(np.float32)
M = (RNG.standard_normal((613, 331)) * 4).astype(np.float32)
F64 = M.astype(np.float64)

UFUNC_CASES = {
    "mul-number-array": (np.multiply, (X, np.asarray(1.01, np.float32))),
    "add-python-float": (np.add, (X, 0.1)),
    "sub-two": (np.subtract, (X, Y)),
    "div-two": (np.true_divide, (X, Y)),
    "rdiv-int": (np.true_divide, (1, X)),
    "maximum": (np.maximum, (X, Y)),
    "tanh": (np.tanh, (X,)),
    "exp": (np.exp, (X,)),
    "log-nan": (np.log, (X,)),
    "sin-f64": (np.sin, (F64,)),
    "negative": (np.negative, (M,)),
    "greater": (np.greater, (X, Y)),
    "less-number": (np.less, (X, 0.0)),
    "equal-2d": (np.equal, (M, M[::-1])),
    "promote-f64": (np.add, (X.astype(np.float64), Y)),
    "column-broadcast": (np.multiply, (M, M[:, :1])),
    "row-broadcast": (np.add, (M, M[0])),
    "size-1-2d": (np.multiply, (M, np.ones((1, 1), np.float32))),
    "expanded-gradient": (np.multiply, (np.broadcast_to(np.float32(2), M.shape), 1.01)),
    "strided": (np.add, (M[:, ::2], 1.0)),
    "transposed": (np.multiply, (M.T, 2.0)),  # not C order: one call, NumPy's layout
    "reversed": (np.multiply, (M[::-1], 2.0)),
}


@pytest.mark.parametrize("case", list(UFUNC_CASES))
def test_split_ufunc_equals_one_call(case, three_threads):
    ufunc, operands = UFUNC_CASES[case]
    with np.errstate(all="ignore"):
        expected = ufunc(*operands)
        _identical(_backend.split_ufunc(ufunc, *operands, min_size=1), expected)


def test_split_ufunc_really_runs_on_several_threads(three_threads):
    seen = set()

    class Recording:  # a stand-in ufunc that notes its thread
        nout = 1

        def __call__(self, *args, out):
            seen.add(threading.current_thread().name)
            return np.add(*args, out=out)

        def resolve_dtypes(self, dtypes):
            return np.add.resolve_dtypes(dtypes)

    for _ in range(20):  # a helper may be slow to wake; it takes a span within a few calls
        _backend.split_ufunc(Recording(), X, Y, min_size=1)
        if len(seen) > 1:
            break
    assert len(seen) > 1


def test_split_ufunc_writes_in_place(three_threads):
    data = X.copy()
    expected = X * np.float32(1.5)
    out = _backend.split_ufunc(np.multiply, data, np.float32(1.5), out=data, min_size=1)
    assert out is data
    _identical(data, expected)


def test_split_ufunc_overlapping_out_keeps_numpy_semantics(three_threads):
    # x[1:] += x[:-1]: NumPy buffers overlapping operands; chunks would read updated values
    data = X.copy()
    expected = X.copy()
    np.add(expected[1:], expected[:-1], out=expected[1:])
    _backend.split_ufunc(np.add, data[1:], data[:-1], out=data[1:], min_size=1)
    _identical(data, expected)


def test_split_ufunc_below_threshold_is_one_call(monkeypatch, three_threads):
    monkeypatch.setattr(_backend, "share_spans", None)  # would raise if reached
    _identical(_backend.split_ufunc(np.add, X, Y, min_size=X.size + 1), X + Y)


def test_split_ufunc_shape_error_is_numpy_s(three_threads):
    with pytest.raises(ValueError, match="broadcast"):
        _backend.split_ufunc(np.add, X, Y[:-1], min_size=1)


def test_share_spans_reraises_a_span_s_error(three_threads):
    def work(lo, hi):
        if lo == 3:
            raise KeyError("span 3")
        return lo

    with pytest.raises(KeyError, match="span 3"):
        _backend.share_spans(work, [(i, i + 1) for i in range(8)], 3)
    assert _backend.share_spans(lambda lo, hi: lo * 10, [(i, i) for i in range(8)], 3) == [
        i * 10 for i in range(8)
    ]


REDUCE_SHAPES = [(200_003,), (1000, 1000), (613, 331), (64, 33, 257), (3, 150_001)]


@pytest.mark.parametrize("shape", REDUCE_SHAPES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex64])
@pytest.mark.parametrize("ufunc", [np.add, np.maximum, np.minimum])
def test_split_reduce_equals_one_call(shape, dtype, ufunc, three_threads):
    if ufunc is not np.add and dtype is np.complex64:
        pytest.skip("no ordering of complex numbers to reduce by")
    rng = np.random.default_rng(len(shape))
    data = (rng.standard_normal(shape) * 3 + 1).astype(dtype)
    ndim = len(shape)
    for dims in {tuple(range(ndim)), (ndim - 1,), tuple(range(1, ndim)) or (0,)}:
        for keepdim in (False, True):
            expected = ufunc.reduce(data, dims, None, None, keepdim)
            got = _backend.split_reduce(ufunc, data, dims, keepdim, min_size=1)
            _identical(got, expected)


@pytest.mark.parametrize("n", [65528, 131064, 131172, 262136, 524300, 1_000_003])
def test_split_full_sum_follows_numpy_pairwise_halves(n, three_threads):
    # runs whose halves fall either side of the smallest span: the partial sums must still
    # be added as NumPy's recursion adds them
    data = np.random.default_rng(n).standard_normal(n).astype(np.float32)
    _identical(_backend.split_reduce(np.add, data, (0,), False, min_size=1), np.add.reduce(data))


def test_split_reduce_small_integers_sum_in_numpy_s_int64(three_threads):
    data = np.ones(300_000, np.int8)
    _identical(_backend.split_reduce(np.add, data, (0,), False, min_size=1), np.add.reduce(data))


def test_a_helper_woken_late_does_not_keep_the_operands_alive():
    import weakref

    _backend._helper_queues(2)
    release, started = threading.Event(), threading.Event()
    helper = _backend._helpers[0]
    helper.put(lambda: (started.set(), release.wait(10)))  # the helper is busy elsewhere
    assert started.wait(10)
    try:
        operand = np.arange(1000.0)
        alive = weakref.ref(operand)
        spans = [(operand[:500],), (operand[500:],)]
        results = _backend.share_spans(lambda part: float(part.sum()), spans, threads=2)
        assert results == [124750.0, 374750.0]
        del operand, spans
        # the main thread did both spans; the drain still queued for the helper holds no
        # reference to them
        assert alive() is None
    finally:
        release.set()
