"""The compiled 2-D col2im (ember._kernels.conv_jit) against the NumPy one it replaces: the
same sums to the bit, through strided convolutions' input gradients and transposed
convolutions' forward (padding, output_padding beyond it, dilation, float32/float64)."""

import numpy as np
import pytest

import ember
from ember._kernels import conv_pipeline, jit

pytest.importorskip("numba")


@pytest.fixture(autouse=True)
def _kernels_for_small_arrays(monkeypatch):
    """The kernel for these small test arrays too (it starts at jit.MIN_WORK elements)."""
    monkeypatch.setattr(jit, "MIN_WORK", 1)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize(
    ("size", "kernel", "stride", "pads", "dilation"),
    [
        ((11, 9), (3, 3), (2, 2), ((1, 1), (1, 1)), (1, 1)),
        ((12, 13), (4, 4), (2, 3), ((1, 1), (2, 0)), (1, 1)),
        ((13, 14), (3, 2), (3, 2), ((0, -1), (0, -1)), (2, 3)),  # upper padding negative
        ((1, 7), (1, 5), (1, 4), ((0, 0), (3, 3)), (1, 1)),
        ((3, 1), (1, 1), (2, 2), ((3, 3), (3, 3)), (1, 1)),  # windows wholly in the padding
        ((8, 64), (3, 3), (2, 2), ((1, 1), (1, 1)), (1, 1)),  # rows of whole vectors
    ],
)
def test_fold_matches_numpy_to_the_bit(size, kernel, stride, pads, dilation, dtype):
    out = conv_pipeline.output_size(size, kernel, stride, pads, dilation)
    rng = np.random.default_rng(0)
    cols = rng.standard_normal((3, 5 * kernel[0] * kernel[1], out[0] * out[1])).astype(dtype)
    geometry = (3, 5, size, kernel, stride, pads, dilation, out, dtype)
    fold = conv_pipeline._Fold(*geometry)
    with jit.disabled():
        numpy_fold = conv_pipeline._Fold(*geometry)
    assert fold.compiled is not None and numpy_fold.compiled is None
    results = []
    for f in (fold, numpy_fold):
        gx = np.full((3, 5) + size, np.nan, dtype)  # every element written
        f(cols, gx)
        results.append(gx)
    np.testing.assert_array_equal(results[0], results[1])


@pytest.mark.parametrize(
    ("transposed", "kwargs"),
    [
        (False, dict(stride=2, padding=1)),
        (True, dict(stride=2, padding=1, output_padding=1)),
        (True, dict(stride=(3, 2), padding=(0, 1), dilation=2, groups=2)),
    ],
)
def test_convolutions_equal_their_numpy_path(transposed, kwargs):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 4, 9, 10)).astype(np.float32)
    w = rng.standard_normal((4, 4 // kwargs.get("groups", 1), 3, 3)).astype(np.float32)
    f = ember.nn.functional.conv_transpose2d if transposed else ember.nn.functional.conv2d
    results = []
    for off in (False, True):
        leaves = [ember.tensor(a, requires_grad=True) for a in (x, w)]
        if off:
            with jit.disabled():
                y = f(*leaves, **kwargs)
                y.square().sum().backward()
        else:
            y = f(*leaves, **kwargs)
            y.square().sum().backward()
        results.append([y.detach().numpy()] + [t.grad.numpy() for t in leaves])
    for a, e in zip(*results):
        np.testing.assert_array_equal(a, e)
