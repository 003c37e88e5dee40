"""Large elementwise ops, their backward formulas, reductions and in-place forms split over
ember's pool (``_backend.SPLIT_FROM``) give the values of the single-thread path bit for bit,
and really split."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember import _backend
from ember._kernels import jit

SHAPE = (521, 263)  # 137,023: above the lowered limits and two compiled chunks, odd spans


@pytest.fixture
def split_counter(monkeypatch):
    """SPLIT_FROM lowered to 1024 elements on 2 threads; counts the calls share_spans gets."""
    before = ember.get_num_threads()
    ember.set_num_threads(2)
    calls = []
    share = _backend.share_spans

    def counting(work, spans, threads):
        calls.append(len(spans))
        return share(work, spans, threads)

    monkeypatch.setattr(_backend, "share_spans", counting)
    monkeypatch.setattr(_backend, "_MIN_SPAN", 1 << 10)
    yield calls
    ember.set_num_threads(before)


def _single(monkeypatch, fn):
    """``fn()`` with every op on one call (the limits out of reach)."""
    with monkeypatch.context() as m:
        for key in _backend.SPLIT_FROM:
            m.setitem(_backend.SPLIT_FROM, key, 1 << 62)
        return fn()


def _split(monkeypatch, fn):
    with monkeypatch.context() as m:
        for key in _backend.SPLIT_FROM:
            m.setitem(_backend.SPLIT_FROM, key, 1 << 10)
        return fn()


def _same(a, b) -> None:
    a, b = np.asarray(a), np.asarray(b)
    assert a.dtype == b.dtype and a.shape == b.shape
    assert np.array_equal(a, b, equal_nan=True)


def _data(seed=0, shape=SHAPE, dtype=np.float32):
    return (np.random.default_rng(seed).standard_normal(shape) * 2).astype(dtype)


def _forward_backward(op, dtype=np.float32):
    def run():
        x = ember.tensor(_data(1, dtype=dtype), requires_grad=True)
        y = ember.tensor(_data(2, dtype=dtype), requires_grad=True)
        out = op(x, y)
        out.backward(ember.tensor(_data(3, out.shape, dtype)))
        return [out.detach().numpy(), x.grad.numpy()] + (
            [y.grad.numpy()] if y.grad is not None else []
        )

    return run


BINARY = {
    "mul-number": lambda x, y: x * 1.01,
    "add-number": lambda x, y: x + 0.1,
    "sub-number": lambda x, y: x - 0.05,
    "rsub-number": lambda x, y: 0.5 - x,
    "mul": lambda x, y: x * y,
    "add": lambda x, y: x + y,
    "sub": lambda x, y: x - y,
    "div": lambda x, y: x / (y.abs() + 1),
    "div-number": lambda x, y: x / 3.0,
    "broadcast-row": lambda x, y: x * y[0],
    "broadcast-column": lambda x, y: x + y[:, :1],
    "maximum": lambda x, y: ember.maximum(x, y),
    "minimum": lambda x, y: ember.minimum(x, y),
    "neg": lambda x, y: -x,
    "abs": lambda x, y: x.abs(),
    "exp": lambda x, y: (x / 4).exp(),
    "log": lambda x, y: (x.abs() + 0.5).log(),
    "sin": lambda x, y: x.sin(),
    "sqrt": lambda x, y: (x.abs() + 0.1).sqrt(),
    "tanh": lambda x, y: x.tanh(),
    "sigmoid": lambda x, y: x.sigmoid(),
    "chain": lambda x, y: ((x * 1.01 + 0.1).tanh() - 0.05) * y,
    "sum": lambda x, y: (x * y).sum(),
    "sum-dim1": lambda x, y: (x * y).sum(1),
    "mean": lambda x, y: x.mean(),
    "mean-dim1-keepdim": lambda x, y: x.mean(-1, keepdim=True),
    "amax-dim1": lambda x, y: x.amax(1),
    "amin-dim1": lambda x, y: x.amin(-1, keepdim=True),
}


@pytest.mark.parametrize("kernels", ["numba", "numpy"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", list(BINARY))
def test_split_op_forward_and_backward_equal_single_thread(
    case, dtype, kernels, split_counter, monkeypatch
):
    run = _forward_backward(BINARY[case], dtype)
    if kernels == "numpy":
        with jit.disabled():
            expected, got = _single(monkeypatch, run), _split(monkeypatch, run)
    else:
        expected, got = _single(monkeypatch, run), _split(monkeypatch, run)
    assert len(got) == len(expected)
    for a, b in zip(got, expected):
        _same(a, b)
    assert split_counter, "no pass was split"


COMPARISONS = {
    "lt": lambda x, y: x < y,
    "le-number": lambda x, y: x <= 0.5,
    "gt": lambda x, y: x > y,
    "ge": lambda x, y: x >= y[0],
    "eq": lambda x, y: x == x.floor(),
    "ne-number-first": lambda x, y: ember.ne(x, 0.0),
}


@pytest.mark.parametrize("case", list(COMPARISONS))
def test_split_comparison_equals_single_thread(case, split_counter, monkeypatch):
    def run():
        x = ember.tensor(_data(4).round(1))
        y = ember.tensor(_data(5).round(1))
        return COMPARISONS[case](x, y).numpy()

    expected, got = _single(monkeypatch, run), _split(monkeypatch, run)
    assert got.dtype == np.bool_
    _same(got, expected)
    assert split_counter


@pytest.mark.parametrize("method,value", [("add_", 0.25), ("sub_", "tensor"), ("mul_", 1.5)])
def test_split_in_place_update_equals_single_thread(method, value, split_counter, monkeypatch):
    def run():
        x = ember.tensor(_data(6))
        other = ember.tensor(_data(7)) if value == "tensor" else value
        before = x._data
        with ember.no_grad():
            result = getattr(x, method)(other)
        assert result is x and x._data is before  # written into its own buffer
        return x.numpy().copy()

    expected, got = _single(monkeypatch, run), _split(monkeypatch, run)
    _same(got, expected)
    assert split_counter


def test_split_full_sum_is_numpy_s_pairwise_sum(split_counter, monkeypatch):
    data = _data(8, (1 << 20,))
    got = _split(monkeypatch, lambda: ember.tensor(data).sum().item())
    assert got == float(np.add.reduce(data))
    assert split_counter


def test_split_keeps_a_transposed_result_s_layout(split_counter, monkeypatch):
    # NumPy gives a transposed operand's result its layout; a split would give C order, so
    # such a call is not split
    data = _data(9)
    got = _split(monkeypatch, lambda: (ember.tensor(data).t() * 2.0).stride())
    expected = _single(monkeypatch, lambda: (ember.tensor(data).t() * 2.0).stride())
    assert got == expected


def test_split_ops_match_torch(split_counter, monkeypatch):
    torch = pytest.importorskip("torch")
    data = _data(10)

    def chain(m, x):
        x = m.tensor(x, requires_grad=True)
        y = x
        for i in range(12):
            kind = i % 4
            y = (
                y * 1.01
                if kind == 0
                else y + 0.1
                if kind == 1
                else y.tanh()
                if kind == 2
                else y - 0.05
            )
        y.sum().backward()
        return y.detach().numpy(), x.grad.numpy()

    got = _split(monkeypatch, lambda: chain(ember, data))
    expected = chain(torch, data)
    for a, b in zip(got, expected):
        np.testing.assert_allclose(a, b, rtol=2e-6, atol=2e-6)
    assert split_counter
