"""grid_sample (every mode and padding mode) and affine_grid against torch."""

import numpy as np
import pytest

import ember
from tests.helpers import check_gradients, compare_with_torch

RNG = np.random.default_rng(0)
X2 = RNG.random((2, 3, 5, 6))
G2 = RNG.uniform(-1.3, 1.3, (2, 4, 3, 2))
X3 = RNG.random((1, 2, 3, 4, 3))
G3 = RNG.uniform(-1.2, 1.2, (1, 2, 3, 2, 3))
THETA2 = RNG.uniform(-1, 1, (2, 2, 3))
THETA3 = RNG.uniform(-1, 1, (1, 3, 4))
F = lambda m: m.nn.functional  # noqa: E731

MODES = [
    (mode, pad, corners)
    for mode in ("bilinear", "nearest", "bicubic")
    for pad in ("zeros", "border", "reflection")
    for corners in (False, True)
]


@pytest.mark.parametrize("mode,pad,corners", MODES)
def test_grid_sample_2d_matches_torch(mode, pad, corners):
    fn = lambda m, x, g: F(m).grid_sample(x, g, mode, pad, corners)  # noqa: E731
    compare_with_torch(fn, [X2, G2])


@pytest.mark.parametrize(
    "mode,pad", [("bilinear", "reflection"), ("nearest", "zeros"), ("bilinear", "border")]
)
def test_grid_sample_3d_matches_torch(mode, pad):
    fn = lambda m, x, g: F(m).grid_sample(x, g, mode, pad, align_corners=False)  # noqa: E731
    compare_with_torch(fn, [X3, G3])


@pytest.mark.parametrize(
    "mode,pad", [("bilinear", "zeros"), ("bicubic", "reflection"), ("bilinear", "border")]
)
def test_grid_sample_gradcheck(mode, pad):
    # grid points kept off integer pixel positions, where the gradient jumps
    fn = lambda m, x, g: F(m).grid_sample(x, g, mode, pad, align_corners=True)  # noqa: E731
    grid = np.array([[[[0.13, -0.41], [0.77, 0.29]], [[-0.93, 0.61], [1.1, -0.2]]]])
    check_gradients(fn, [X2[:1, :1, :3, :4], grid], gradgrad=mode == "bilinear" and pad == "zeros")


@pytest.mark.parametrize("corners", [False, True])
def test_affine_grid_matches_torch_and_gradcheck(corners):
    fn2 = lambda m, t: F(m).affine_grid(t, (2, 3, 4, 5), align_corners=corners)  # noqa: E731
    fn3 = lambda m, t: F(m).affine_grid(t, (1, 1, 2, 3, 4), align_corners=corners)  # noqa: E731
    compare_with_torch(fn2, [THETA2])
    compare_with_torch(fn3, [THETA3])
    check_gradients(fn2, [THETA2])


def test_spatial_transformer_round_trip_identity():
    theta = ember.tensor([[[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]], dtype=ember.float64)
    x = ember.tensor(X2[:1])
    grid = F(ember).affine_grid(theta, tuple(x.shape), align_corners=False)
    out = F(ember).grid_sample(x, grid, align_corners=False)
    np.testing.assert_allclose(out.numpy(), X2[:1], atol=1e-12)


def test_grid_sample_errors_match_torch(torch_mod):
    for m in (ember, torch_mod):
        x, g = m.zeros(1, 1, 3, 3), m.zeros(1, 2, 2, 2)
        with pytest.warns(UserWarning, match="Default grid_sample and affine_grid behavior"):
            F(m).grid_sample(x, g)
        with pytest.raises(ValueError, match="expected mode to be 'bilinear', 'nearest' or"):
            F(m).grid_sample(x, g, mode="area")
        with pytest.raises(ValueError, match="expected padding_mode to be 'zeros', 'border', or"):
            F(m).grid_sample(x, g, padding_mode="circular")
        with pytest.raises(RuntimeError, match="expected grid and input to have same batch size"):
            F(m).grid_sample(x, m.zeros(2, 2, 2, 2), align_corners=False)
        with pytest.raises(ValueError, match="batch of 2D affine matrices of shape Nx2x3"):
            F(m).affine_grid(m.zeros(1, 3, 3), (1, 1, 2, 2), align_corners=False)
