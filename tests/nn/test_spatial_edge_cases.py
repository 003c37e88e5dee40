"""Zero-size inputs and the export lists of the spatial layers."""

import numpy as np
import pytest

import ember
from ember.nn import _functional_spatial
from ember.nn.modules import _spatial_exports

ZERO_SIZE = {
    "conv3d": lambda m: m.nn.functional.conv3d(_x(m, 0, 2, 3, 3, 3), m.zeros(4, 2, 2, 2, 2)),
    "conv_transpose1d": lambda m: m.nn.functional.conv_transpose1d(
        _x(m, 0, 2, 3), m.zeros(2, 4, 2)
    ),
    "max_pool3d": lambda m: m.nn.functional.max_pool3d(_x(m, 0, 2, 4, 4, 4), 2),
    "avg_pool3d": lambda m: m.nn.functional.avg_pool3d(_x(m, 0, 2, 4, 4, 4), 2),
    "adaptive_max_pool2d": lambda m: m.nn.functional.adaptive_max_pool2d(_x(m, 0, 2, 4, 4), 2),
    "adaptive_max_pool2d_to_zero": lambda m: m.nn.functional.adaptive_max_pool2d(
        _x(m, 2, 2, 4, 4), 0
    ),
    "fractional_max_pool2d": lambda m: m.nn.functional.fractional_max_pool2d(
        _x(m, 0, 2, 4, 4), 2, output_size=2
    ),
    "max_unpool2d": lambda m: m.nn.functional.max_unpool2d(
        _x(m, 0, 2, 2, 2), m.zeros(0, 2, 2, 2, dtype=m.int64), 2
    ),
    "lp_pool2d": lambda m: m.nn.functional.lp_pool2d(_x(m, 0, 2, 4, 4), 2, 2),
    "interpolate": lambda m: m.nn.functional.interpolate(
        _x(m, 0, 2, 4, 4), scale_factor=2, mode="bilinear"
    ),
    "grid_sample": lambda m: m.nn.functional.grid_sample(
        _x(m, 0, 2, 4, 4), m.zeros(0, 3, 3, 2), align_corners=False
    ),
    "grid_sample_empty_grid": lambda m: m.nn.functional.grid_sample(
        _x(m, 1, 2, 4, 4), m.zeros(1, 0, 3, 2), align_corners=False
    ),
    "instance_norm": lambda m: m.nn.functional.instance_norm(_x(m, 0, 2, 4, 4)),
    "local_response_norm": lambda m: m.nn.functional.local_response_norm(_x(m, 0, 2, 4, 4), 2),
    "pixel_shuffle": lambda m: m.nn.functional.pixel_shuffle(_x(m, 0, 4, 4, 4), 2),
    "embedding_bag_max": lambda m: m.nn.functional.embedding_bag(
        m.zeros(0, dtype=m.int64), _x(m, 3, 2), m.tensor([0]), mode="max"
    ),
}


def _x(m, *shape):
    return m.zeros(*shape, requires_grad=True)


@pytest.mark.parametrize("name", sorted(ZERO_SIZE))
def test_zero_size_inputs_give_torch_shapes_and_backward(torch_mod, name):
    mine, ref = ZERO_SIZE[name](ember), ZERO_SIZE[name](torch_mod)
    assert tuple(mine.shape) == tuple(ref.shape)
    assert mine.requires_grad == ref.requires_grad
    mine.sum().backward()


def test_every_exported_name_is_reachable():
    for name in _functional_spatial.__all__:
        reached, defined = getattr(ember.nn.functional, name), getattr(_functional_spatial, name)
        # the functions that take out= in torch are reached through ember._out's wrapper
        assert reached is defined or reached.__wrapped__ is defined, name
    for name in _spatial_exports.__all__:
        assert getattr(ember.nn, name) is getattr(_spatial_exports, name), name
    assert len(set(_functional_spatial.__all__)) == len(_functional_spatial.__all__)


def test_exported_names_exist_in_torch(torch_mod):
    for name in _functional_spatial.__all__:
        assert hasattr(torch_mod.nn.functional, name), name
    for name in _spatial_exports.__all__:
        assert hasattr(torch_mod.nn, name), name


INTEGER_REFUSED = {
    "adaptive_avg_pool3d": lambda m, x: m.nn.functional.adaptive_avg_pool3d(x, 2),
    "interpolate_bilinear": lambda m, x: m.nn.functional.interpolate(
        x[0], scale_factor=2, mode="bilinear"
    ),
    "interpolate_area": lambda m, x: m.nn.functional.interpolate(x[0], size=2, mode="area"),
    "grid_sample": lambda m, x: m.nn.functional.grid_sample(
        x[0], m.zeros(1, 2, 2, 2, dtype=m.int64), align_corners=False
    ),
    "instance_norm": lambda m, x: m.nn.functional.instance_norm(x),
    "rms_norm": lambda m, x: m.nn.functional.rms_norm(x, (4,)),
}


@pytest.mark.parametrize("name", sorted(INTEGER_REFUSED))
def test_integer_input_refused_like_torch(torch_mod, name):
    for m in (ember, torch_mod):
        with pytest.raises(NotImplementedError, match="not implemented for 'Long'"):
            INTEGER_REFUSED[name](m, m.zeros(1, 1, 4, 4, 4, dtype=m.int64))


@pytest.mark.parametrize(
    "kwargs",
    [{}, {"padding": 1}, {"padding": 1, "count_include_pad": False}, {"divisor_override": 3}],
)
def test_int64_avg_pool3d_divides_window_sums_toward_zero_like_torch(torch_mod, kwargs):
    values = np.arange(-40, 40, dtype=np.int64).reshape(1, 2, 4, 5, 2) * 7
    got = ember.nn.functional.avg_pool3d(ember.tensor(values), 2, 1, **kwargs)
    want = torch_mod.nn.functional.avg_pool3d(torch_mod.tensor(values), 2, 1, **kwargs)
    assert got.dtype == ember.int64
    np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_avg_pool3d_refuses_integers_other_than_int64_like_torch(torch_mod):
    for m in (ember, torch_mod):
        with pytest.raises(NotImplementedError, match="not implemented for 'Int'"):
            m.nn.functional.avg_pool3d(m.ones(1, 1, 4, 4, 4, dtype=m.int32), 2)
    assert (
        ember.nn.functional.max_pool3d(ember.ones(1, 1, 4, 4, 4, dtype=ember.int64), 2).dtype
        == ember.int64
    )


NONCONTIGUOUS = {
    "max_pool3d": lambda m, x: m.nn.functional.max_pool3d(x, 2, 1, ceil_mode=True),
    "adaptive_max_pool2d": lambda m, x: m.nn.functional.adaptive_max_pool2d(x[:, :, 0], 2),
    "avg_pool3d": lambda m, x: m.nn.functional.avg_pool3d(x, 2, 1, 1, count_include_pad=False),
    "interpolate_trilinear": lambda m, x: m.nn.functional.interpolate(
        x, scale_factor=1.5, mode="trilinear"
    ),
    "instance_norm": lambda m, x: m.nn.functional.instance_norm(x),
    "conv3d": lambda m, x: m.nn.functional.conv3d(x, x[:1], padding=1),
}


@pytest.mark.parametrize("name", sorted(NONCONTIGUOUS))
def test_noncontiguous_inputs_gradcheck(name):
    from tests.helpers import arrays_for, check_gradients

    x = arrays_for([(2, 2, 2, 3, 2)], -1, 1, seed=5)[0]  # (N, C) swapped: a strided view
    check_gradients(NONCONTIGUOUS[name], [x], gradgrad=False, noncontiguous=True)
