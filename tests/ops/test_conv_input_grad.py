"""The convolution backward's input gradient, on both of its routes (a unit-stride convolution
of the output gradient, or a GEMM to columns and col2im), against torch."""

import numpy as np
import pytest

import ember
from ember.ops.conv import _transposes_as_a_conv

CASES = [
    # (input shape, weight shape, keyword arguments)
    ((2, 6, 11, 9), (4, 6, 3, 3), dict(padding=1)),  # as a convolution (O <= C)
    ((2, 6, 11, 9), (4, 6, 3, 3), dict(padding=0)),
    ((2, 6, 11, 9), (6, 6, 4, 2), dict(padding="same")),  # asymmetric padding
    ((2, 6, 11, 9), (6, 6, 3, 3), dict(padding=2, dilation=2)),
    ((2, 6, 11, 9), (6, 6, 3, 3), dict(padding=3)),  # padding beyond d·(k-1): col2im
    ((2, 6, 11, 9), (8, 6, 3, 3), dict(padding=1)),  # O > C: col2im
    ((2, 6, 11, 9), (4, 6, 3, 3), dict(padding=1, stride=2)),  # strided: col2im
    ((6, 11, 9), (4, 6, 3, 3), dict(padding=1)),  # unbatched
    ((3, 8, 40), (8, 8, 5), dict(padding=2)),  # 1-d
    ((3, 8, 40), (4, 8, 1), dict()),  # 1x1
    ((2, 4, 5, 6, 7), (4, 4, 3, 3, 3), dict(padding=1)),  # 3-d
]


@pytest.mark.parametrize(("x_shape", "w_shape", "kwargs"), CASES)
def test_input_and_weight_gradients_match_torch(x_shape, w_shape, kwargs):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(len(x_shape) * 100 + w_shape[0])
    x = rng.standard_normal(x_shape).astype(np.float32)
    w = rng.standard_normal(w_shape).astype(np.float32)
    b = rng.standard_normal(w_shape[0]).astype(np.float32)
    nd = len(w_shape) - 2
    conv = {1: "conv1d", 2: "conv2d", 3: "conv3d"}[nd]
    ours = [ember.tensor(a, requires_grad=True) for a in (x, w, b)]
    theirs = [torch.tensor(a, requires_grad=True) for a in (x, w, b)]
    y = getattr(ember.nn.functional, conv)(*ours, **kwargs)
    expected = getattr(torch.nn.functional, conv)(*theirs, **kwargs)
    weights = rng.standard_normal(tuple(expected.shape)).astype(np.float32)
    (y * ember.tensor(weights)).sum().backward()
    (expected * torch.tensor(weights)).sum().backward()
    np.testing.assert_allclose(y.detach().numpy(), expected.detach().numpy(), atol=1e-4)
    for a, e in zip(ours, theirs):
        np.testing.assert_allclose(a.grad.numpy(), e.grad.numpy(), rtol=1e-4, atol=1e-4)


def test_the_convolution_route_is_taken_only_where_it_applies():
    assert _transposes_as_a_conv((1, 1), ((1, 1), (1, 1)), (1, 1), (3, 3), (32, 32, 3, 3))
    assert not _transposes_as_a_conv((2, 2), ((1, 1), (1, 1)), (1, 1), (3, 3), (32, 32, 3, 3))
    assert not _transposes_as_a_conv((1, 1), ((3, 3), (1, 1)), (1, 1), (3, 3), (32, 32, 3, 3))
    assert not _transposes_as_a_conv((1, 1), ((1, 1), (1, 1)), (1, 1), (3, 3), (64, 32, 3, 3))
