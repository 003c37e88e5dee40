"""nll_loss's plain path (a (N, C) input, in-range int64 targets, no weight, no target equal to
ignore_index): the same loss, gradient, graph and saved values as the general path, to the
bit; targets out of range still raise torch's IndexError."""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.nn.functional as F


def _pair(dtype, n=32, c=10, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, c)).astype(dtype)
    t = rng.integers(0, c, n)
    return x, t


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("reduction", ["mean", "sum"])
@pytest.mark.parametrize("n", [1, 7, 32, 1000])
def test_plain_path_equals_the_weighted_path_with_unit_weights(dtype, reduction, n):
    x, t = _pair(dtype, n=n)
    results = []
    # weight=ones takes the general path; the numbers must not differ by a bit
    for weight in (None, ember.ones(10, dtype=ember.from_numpy(x).dtype)):
        xt = ember.tensor(x, requires_grad=True)
        lp = F.log_softmax(xt, 1)
        loss = F.nll_loss(lp, ember.tensor(t), weight=weight, reduction=reduction)
        loss.backward(retain_graph=True)  # the saved values are read below
        results.append((loss, xt.grad, loss.grad_fn))
    (plain, g_plain, node_plain), (general, g_general, node_general) = results
    assert plain.dtype == general.dtype and plain.shape == ()
    assert plain.detach().numpy().tobytes() == general.detach().numpy().tobytes()
    assert g_plain.numpy().tobytes() == g_general.numpy().tobytes()
    assert node_plain.name() == node_general.name() == "NllLossBackward0"
    assert node_plain.next_functions[0][0].name() == "LogSoftmaxBackward0"
    assert float(node_plain._saved_total_weight) == n
    assert node_plain._saved_total_weight.dtype == plain.dtype
    # as torch: -100 read back as 2**64 - 100
    assert node_plain._saved_ignore_index == node_general._saved_ignore_index
    assert ember.equal(node_plain._saved_target, ember.tensor(t))


def test_cross_entropy_double_backward_and_forward_mode_through_the_plain_path():
    x, t = _pair(np.float64, n=6, c=4)
    xt = ember.tensor(x, requires_grad=True)
    target = ember.tensor(t)
    assert ember.autograd.gradcheck(lambda a: F.cross_entropy(a, target), (xt,))
    assert ember.autograd.gradgradcheck(lambda a: F.cross_entropy(a, target), (xt,))
    assert ember.autograd.gradcheck(
        lambda a: F.cross_entropy(a, target, reduction="sum"), (xt,), check_forward_ad=True
    )


@pytest.mark.parametrize("bad, shown", [(10, 10), (-1, -1), (-100, -100)])
def test_out_of_range_targets_raise_as_before(bad, shown):
    x, t = _pair(np.float32, n=5)
    t[2] = bad
    with pytest.raises(IndexError, match=f"Target {shown} is out of bounds"):
        F.nll_loss(ember.tensor(x), ember.tensor(t), ignore_index=-7)


def test_an_ignore_index_inside_the_classes_takes_the_general_path():
    x, t = _pair(np.float32, n=8, c=5)
    t[:3] = 2
    loss = F.nll_loss(ember.tensor(x), ember.tensor(t), ignore_index=2)
    kept = t != 2
    expected = -x[np.arange(8), t][kept].sum() / kept.sum()
    np.testing.assert_allclose(loss.item(), expected, rtol=1e-6)


def test_the_default_ignore_index_is_ignored_as_before():
    x, t = _pair(np.float32, n=6, c=3)
    t[1] = -100
    loss = F.nll_loss(ember.tensor(x), ember.tensor(t))
    kept = t != -100
    expected = -x[np.arange(6)[kept], t[kept]].sum() / kept.sum()
    np.testing.assert_allclose(loss.item(), expected, rtol=1e-6)
