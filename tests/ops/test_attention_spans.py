"""The fused attention split over ember's threads by batch index (ops/attention.py's
_batch_spans): forward and backward equal to the unsplit call (one thread) to the bit, with
masks, dropout (its random stream unchanged) and the kernels on or off."""

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember._kernels import jit
from ember.ops import attention


@pytest.fixture
def threads():
    before = ember.get_num_threads()
    yield ember.set_num_threads
    ember.set_num_threads(before)


def _run(fn, inputs, seed=0):
    leaves = [ember.tensor(a, requires_grad=True) for a in inputs]
    ember.manual_seed(seed)
    out = fn(*leaves)
    grads = ember.autograd.grad(out, leaves, ember.ones_like(out) * 0.5 + out.detach())
    return [out.detach().numpy(), *(g.numpy() for g in grads)]


def _both(fn, inputs, threads):
    threads(1)
    one = _run(fn, inputs)
    threads(2)
    two = _run(fn, inputs)
    return one, two


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("case", ["plain", "mask", "causal", "dropout"])
@pytest.mark.parametrize("kernels", [True, False], ids=["jit", "numpy"])
def test_sdpa_split_over_threads_equals_one_thread(dtype, case, kernels, threads):
    rng = np.random.default_rng(0)
    q, k, v = (rng.standard_normal((5, 2, 131, 8)).astype(dtype) for _ in range(3))
    assert attention._batch_spans(np, q, k) == [] or ember.get_num_threads() > 1
    mask = rng.standard_normal((5, 1, 131, 131)).astype(dtype) if case == "mask" else None
    options = dict(is_causal=case == "causal", dropout_p=0.3 if case == "dropout" else 0.0)

    def fn(q, k, v):
        m = None if mask is None else ember.tensor(mask)
        return F.scaled_dot_product_attention(q, k, v, m, **options)

    if kernels:
        one, two = _both(fn, (q, k, v), threads)
    else:
        with jit.disabled():
            one, two = _both(fn, (q, k, v), threads)
    assert attention._batch_spans(np, q, k) == [(0, 3), (3, 5)]
    for a, b in zip(one, two):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("batch_first", [True, False])
@pytest.mark.parametrize("dropout", [0.0, 0.2])
def test_packed_self_attention_split_equals_one_thread(batch_first, dropout, threads):
    ember.manual_seed(1)
    mha = ember.nn.MultiheadAttention(16, 2, dropout=dropout, batch_first=batch_first)
    shape = (4, 130, 16) if batch_first else (130, 4, 16)
    x = np.random.default_rng(2).standard_normal(shape).astype(np.float32)
    pad = np.zeros((4, 130), bool)
    pad[1, -3:] = True

    def fn(x):
        return mha(x, x, x, need_weights=False, key_padding_mask=ember.tensor(pad))[0]

    one, two = _both(fn, (x,), threads)
    for a, b in zip(one, two):
        np.testing.assert_array_equal(a, b)


def test_small_or_unbatched_calls_stay_whole(threads):
    threads(2)
    assert attention._batch_spans(np, np.zeros((2, 8, 4)), np.zeros((2, 8, 4))) == []
    assert attention._batch_spans(np, np.zeros((300, 8)), np.zeros((300, 8))) == []
    big = np.zeros((1, 4, 200, 8))
    assert attention._batch_spans(np, big, big) == []  # one batch index
