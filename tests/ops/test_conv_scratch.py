"""Convolutions on reused scratch buffers (ember._scratch): a buffer still saved for a
backward is never handed out again, and results match torch across repeated steps."""

import numpy as np
import pytest

import ember


@pytest.mark.parametrize(
    ("stride", "padding", "dilation"), [(1, 1, 1), (2, 0, 1), (1, 2, 2), (2, 1, 1)]
)
def test_two_graphs_alive_at_once_keep_their_own_columns(stride, padding, dilation):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    xs = [rng.standard_normal((8, 16, 40, 40)).astype(np.float32) for _ in range(2)]
    w = rng.standard_normal((24, 16, 3, 3)).astype(np.float32) * 0.1
    b = rng.standard_normal(24).astype(np.float32)
    ew, eb = ember.tensor(w, requires_grad=True), ember.tensor(b, requires_grad=True)
    tw, tb = torch.tensor(w, requires_grad=True), torch.tensor(b, requires_grad=True)
    kw = dict(stride=stride, padding=padding, dilation=dilation)
    ex = [ember.tensor(x, requires_grad=True) for x in xs]
    tx = [torch.tensor(x, requires_grad=True) for x in xs]
    ey = [ember.nn.functional.conv2d(x, ew, eb, **kw) for x in ex]  # both graphs alive
    ty = [torch.nn.functional.conv2d(x, tw, tb, **kw) for x in tx]
    for step in (1, 0):
        (ey[step] * ey[step]).sum().backward()
        (ty[step] * ty[step]).sum().backward()
        np.testing.assert_allclose(ey[step].detach().numpy(), ty[step].detach().numpy(), atol=1e-4)
        np.testing.assert_allclose(ex[step].grad.numpy(), tx[step].grad.numpy(), atol=2e-3)
    np.testing.assert_allclose(ew.grad.numpy(), tw.grad.numpy(), rtol=1e-4, atol=1e-2)
    np.testing.assert_allclose(eb.grad.numpy(), tb.grad.numpy(), rtol=1e-4, atol=1e-2)


def test_no_grad_forward_matches_torch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(1)
    x = rng.standard_normal((4, 3, 33, 31)).astype(np.float32)
    w = rng.standard_normal((5, 3, 3, 5)).astype(np.float32)
    with ember.no_grad():
        got = ember.nn.functional.conv2d(ember.tensor(x), ember.tensor(w), padding=(1, 2))
    expected = torch.nn.functional.conv2d(torch.tensor(x), torch.tensor(w), padding=(1, 2))
    assert not got.requires_grad
    np.testing.assert_allclose(got.numpy(), expected.numpy(), atol=1e-4)
