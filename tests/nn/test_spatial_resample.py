"""Resampling and padding: interpolate in every mode, pixel/channel shuffle, padding layers."""

import numpy as np
import pytest

import ember
from tests.helpers import arrays_for, check_gradients, compare_with_torch

X = arrays_for([(2, 4, 3, 5, 4)], -1, 1)[0]
SMALL = X[:1, :1]
F = lambda m: m.nn.functional  # noqa: E731


def _spatial(x, nd):
    return x[(slice(None), slice(None)) + (0,) * (3 - nd)]


INTERPOLATE = {
    "nearest_1d_scale": (1, dict(scale_factor=2.5)),
    "nearest_2d_size": (2, dict(size=(7, 3))),
    "nearest_3d_recompute": (3, dict(scale_factor=1.7, recompute_scale_factor=True)),
    "nearest_exact_2d": (2, dict(size=(5, 7), mode="nearest-exact")),
    "linear": (1, dict(scale_factor=1.5, mode="linear")),
    "linear_align": (1, dict(size=9, mode="linear", align_corners=True)),
    "bilinear_down": (2, dict(size=(2, 3), mode="bilinear")),
    "bilinear_align_scale": (2, dict(scale_factor=(2, 0.6), mode="bilinear", align_corners=True)),
    "bicubic": (2, dict(size=(6, 9), mode="bicubic")),
    "bicubic_align": (2, dict(scale_factor=1.5, mode="bicubic", align_corners=True)),
    "trilinear": (3, dict(size=(4, 3, 6), mode="trilinear")),
    "bilinear_antialias": (2, dict(size=(2, 3), mode="bilinear", antialias=True)),
    "bilinear_antialias_align": (
        2,
        dict(scale_factor=(0.5, 1.5), mode="bilinear", antialias=True, align_corners=True),
    ),
    "bicubic_antialias": (2, dict(size=(2, 7), mode="bicubic", antialias=True)),
    "area_2d": (2, dict(size=(2, 4), mode="area")),
    "area_1d_scale": (1, dict(scale_factor=0.5, mode="area")),
}


@pytest.mark.parametrize("name", sorted(INTERPOLATE))
def test_interpolate_matches_torch_and_gradcheck(name):
    nd, kwargs = INTERPOLATE[name]
    fn = lambda m, x: F(m).interpolate(x, **kwargs)  # noqa: E731
    compare_with_torch(fn, [_spatial(X, nd)])
    check_gradients(fn, [_spatial(SMALL, nd)], gradgrad=name in ("bicubic", "nearest_2d_size"))


def test_interpolate_float32_and_modules_match_torch(torch_mod):
    fn = lambda m, x: F(m).interpolate(x, scale_factor=1.3, mode="bilinear")  # noqa: E731
    compare_with_torch(fn, [X[:, :, 0]], dtype=np.float32, atol=1e-6, rtol=1e-5)
    for cls, kwargs in [
        ("Upsample", dict(scale_factor=2, mode="trilinear")),
        ("UpsamplingNearest2d", dict(size=(4, 6))),
        ("UpsamplingBilinear2d", dict(scale_factor=2)),
    ]:
        x = X if cls == "Upsample" else X[:, :, 0]
        mine, ref = getattr(ember.nn, cls)(**kwargs), getattr(torch_mod.nn, cls)(**kwargs)
        assert repr(mine) == repr(ref)
        np.testing.assert_allclose(
            mine(ember.tensor(x)).numpy(), ref(torch_mod.tensor(x)).numpy(), atol=1e-12
        )


def test_interpolate_errors_match_torch(torch_mod):
    x1 = lambda m: m.zeros(1, 1, 4)  # noqa: E731
    cases = [
        (
            NotImplementedError,
            "bilinear mode needs 4D input",
            dict(scale_factor=2, mode="bilinear"),
        ),
        (ValueError, "align_corners option can only be set", dict(size=2, align_corners=True)),
        (ValueError, "only one of size or scale_factor", dict(size=2, scale_factor=2)),
        (ValueError, "either size or scale_factor", {}),
        (ValueError, "Anti-alias option is restricted", dict(size=2, antialias=True)),
        (ValueError, "same number of spatial dimensions", dict(size=(2, 3))),
    ]
    for m in (ember, torch_mod):
        for error, phrase, kwargs in cases:
            with pytest.raises(error, match=phrase):
                F(m).interpolate(x1(m), **kwargs)


SHUFFLES = {
    "pixel_shuffle": lambda m, x: F(m).pixel_shuffle(x, 2),
    "pixel_shuffle_batch_dims": lambda m, x: F(m).pixel_shuffle(x.reshape(-1, 1, 4, 5, 4), 2),
    "pixel_unshuffle": lambda m, x: F(m).pixel_unshuffle(x[:, :, :2, :4], 2),
    "channel_shuffle": lambda m, x: F(m).channel_shuffle(x, 2),
    "modules": lambda m, x: (
        m.nn.PixelUnshuffle(2)(m.nn.PixelShuffle(2)(x)) + m.nn.ChannelShuffle(4)(x)
    ),
}


@pytest.mark.parametrize("name", sorted(SHUFFLES))
def test_shuffles_match_torch(name):
    compare_with_torch(SHUFFLES[name], [X[:, :, 0]])
    check_gradients(SHUFFLES[name], [X[:1, :, 0]], gradgrad=False)


def test_shuffle_errors_match_torch(torch_mod):
    for m in (ember, torch_mod):
        with pytest.raises(RuntimeError, match="divisible by the square of upscale_factor"):
            F(m).pixel_shuffle(m.zeros(1, 5, 2, 2), 2)
        with pytest.raises(RuntimeError, match="expects height to be divisible"):
            F(m).pixel_unshuffle(m.zeros(1, 5, 3, 2), 2)
        with pytest.raises(RuntimeError, match="Number of channels must be divisible by groups"):
            F(m).channel_shuffle(m.zeros(1, 5, 3, 2), 2)


PADS = [
    ("ZeroPad1d", (2,), 1),
    ("ZeroPad2d", ((1, 0, 2, 1),), 2),
    ("ZeroPad3d", (1,), 3),
    ("ConstantPad1d", ((1, 2), 3.5), 1),
    ("ConstantPad2d", (1, -1.0), 2),
    ("ConstantPad3d", ((0, 1, 1, 0, 2, 1), 2.0), 3),
    ("ReflectionPad1d", (2,), 1),
    ("ReflectionPad2d", ((1, 2, 0, 1),), 2),
    ("ReflectionPad3d", (1,), 3),
    ("ReplicationPad1d", ((3, 1),), 1),
    ("ReplicationPad2d", (2,), 2),
    ("ReplicationPad3d", ((1, 0, 2, 1, 0, 2),), 3),
    ("CircularPad1d", (2,), 1),
    ("CircularPad2d", ((1, 2, 2, 0),), 2),
    ("CircularPad3d", (1,), 3),
]


@pytest.mark.parametrize("cls,args,nd", PADS, ids=[p[0] for p in PADS])
def test_padding_modules_match_torch(torch_mod, cls, args, nd):
    mine, ref = getattr(ember.nn, cls)(*args), getattr(torch_mod.nn, cls)(*args)
    assert repr(mine) == repr(ref)
    fn = lambda m, x: (mine if m is ember else ref)(x)  # noqa: E731
    compare_with_torch(fn, [_spatial(X, nd)])
    compare_with_torch(fn, [_spatial(X, nd)[0]])  # unbatched


def test_padding_module_gradcheck():
    check_gradients(lambda m, x: ember.nn.ReflectionPad2d((1, 2, 0, 1))(x), [X[:1, :2, 0]])
    check_gradients(lambda m, x: ember.nn.CircularPad3d(1)(x), [SMALL[:, :, :2, :2, :2]])


def test_fold_unfold_modules_match_torch(torch_mod):
    for m in (ember, torch_mod):
        unfold = m.nn.Unfold((2, 3), padding=1)
        assert repr(unfold) == "Unfold(kernel_size=(2, 3), dilation=1, padding=1, stride=1)"
    fn = lambda m, x: m.nn.Fold((5, 4), (2, 3), padding=1)(m.nn.Unfold((2, 3), padding=1)(x))  # noqa: E731
    compare_with_torch(fn, [X[:, :, 0]])


NONFINITE = {
    "nearest": dict(size=(10, 12)),
    "bilinear": dict(size=(10, 12), mode="bilinear", align_corners=False),
    "bicubic_down": dict(size=(3, 4), mode="bicubic", align_corners=True),
    "area": dict(size=(3, 4), mode="area"),
    "antialias": dict(size=(3, 4), mode="bilinear", antialias=True, align_corners=False),
}


@pytest.mark.parametrize("name", sorted(NONFINITE))
def test_inf_and_nan_reach_only_the_outputs_that_read_them(name):
    x = X[:1, :2, 0].copy()
    x[0, 0, 2, 3], x[0, 1, 1, 1] = np.inf, np.nan
    fn = lambda m, x: F(m).interpolate(x, **NONFINITE[name])  # noqa: E731
    compare_with_torch(fn, [x], grad=False)
    pool = lambda m, x: F(m).avg_pool3d(x.unsqueeze(2), (1, 2, 2), 1)  # noqa: E731
    compare_with_torch(pool, [x], grad=False)


def test_fold_unfold_unbatched_and_errors_match_torch(torch_mod):
    roundtrip = lambda m, x: F(m).fold(F(m).unfold(x, 2, stride=2), (4, 4), 2, stride=2)  # noqa: E731
    compare_with_torch(roundtrip, [X[0, :, 0, :4, :4]])
    for m in (ember, torch_mod):
        with pytest.raises(RuntimeError, match="divisible by the product of kernel_size"):
            F(m).fold(m.zeros(1, 7, 9), (4, 4), 2)
        with pytest.raises(RuntimeError, match="calculated number of sliding blocks"):
            F(m).fold(m.zeros(1, 8, 8), (4, 4), 2)
        with pytest.raises(RuntimeError, match="Expected 2D or 3D"):
            F(m).fold(m.zeros(8), (4, 4), 2)
