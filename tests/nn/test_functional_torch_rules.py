"""nn.functional where torch's rules are easy to miss: argument forms, 0-d and empty inputs,
half types and unsigned dtypes (each compared with torch)."""

import numpy as np
import pytest

import ember
import ember.nn.functional as F


def _both(fn):
    torch = pytest.importorskip("torch")
    outcomes = []
    for lib in (torch, ember):
        try:
            outcomes.append(("ok", fn(lib)))
        except Exception as error:
            outcomes.append((type(error).__name__, str(error)))
    return outcomes


@pytest.mark.parametrize(
    "call",
    [
        lambda m: m.nn.functional.avg_pool2d(m.zeros(1, 2, 5, 5), 3, padding=(1,)),
        lambda m: m.nn.functional.max_pool2d(m.zeros(1, 2, 5, 5), 2, stride=()),
        lambda m: m.nn.functional.max_pool2d(m.zeros(1, 1, 4), 2),
        lambda m: m.nn.functional.max_pool1d(m.zeros(0, 10), 1),
        lambda m: m.nn.functional.max_pool1d(m.zeros(2, 2, 2), 5, 1),
        lambda m: m.nn.functional.max_pool3d(m.zeros(2, 1, 0, 1, 2), 1),
        lambda m: m.nn.functional.avg_pool3d(m.zeros(3, 1, 4, 4), 2),
        lambda m: m.nn.functional.adaptive_avg_pool2d(m.zeros(1, 1, 1, 1), (-1, 0)),
        lambda m: m.nn.functional.adaptive_max_pool2d(m.zeros(1, 2, 3, 4), ()),
        lambda m: m.nn.functional.adaptive_avg_pool2d(m.zeros(2, 2), (2, 2)),
        lambda m: m.nn.functional.rms_norm(m.zeros(1, 2, 3), ()),
        lambda m: m.nn.functional.prelu(m.zeros(2, 8, 3), m.zeros(2, 4)),
        lambda m: m.nn.functional.multi_margin_loss(m.zeros(5, 4), m.zeros(5, 4)),
    ],
)
def test_argument_forms_and_errors_are_torchs(call):
    (t_kind, t_value), (e_kind, e_value) = _both(call)
    assert e_kind == t_kind
    if t_kind == "ok":  # one-element padding, an empty stride
        assert tuple(e_value.shape) == tuple(t_value.shape)
        np.testing.assert_array_equal(e_value.numpy(), t_value.numpy())
    else:
        assert e_value == t_value


def test_max_pool2d_of_integers_and_int64_avg_pool_match_torch():
    values = np.arange(-50, 50, dtype=np.int64).reshape(1, 1, 10, 10)
    for dtype in ("int8", "int32", "int64"):
        (_, want), (_, got) = _both(
            lambda m: m.nn.functional.max_pool2d(
                m.tensor(values).to(getattr(m, dtype)), 3, 2, 1, ceil_mode=True
            )
        )
        np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_zero_dim_margin_losses_are_one_sample_of_one_class():
    for name in ("multi_margin_loss", "multilabel_margin_loss"):
        (_, want), (_, got) = _both(
            lambda m: getattr(m.nn.functional, name)(m.tensor(0.7), m.tensor(0))
        )
        assert got.shape == want.shape == () and got.item() == want.item()


def test_half_rms_norm_and_interpolation_round_once_like_torch():
    rng = np.random.default_rng(0)
    x, w = rng.standard_normal((2, 3, 4, 5)) * 3, rng.standard_normal(5)
    calls = [
        lambda m: m.nn.functional.rms_norm(m.tensor(x).half(), (5,), m.tensor(w).half(), eps=0.5),
        lambda m: m.nn.functional.interpolate(
            m.tensor(x).half(), scale_factor=1.7, mode="bilinear"
        ),
    ]
    for call in calls:
        (_, want), (_, got) = _both(call)
        np.testing.assert_array_equal(got.float().numpy(), want.float().numpy())


def test_softmin_with_dtype_negates_unsigned_input_before_casting():
    values = np.array([[1, 200, 3], [0, 255, 7]], dtype=np.uint8)
    (_, want), (_, got) = _both(
        lambda m: m.nn.functional.softmin(m.tensor(values), 1, dtype=m.float64)
    )
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12)


def test_silu_of_complex_input():
    values = np.array([1 + 2j, -3 + 0.5j, 0.3 - 4j])
    (_, want), (_, got) = _both(lambda m: m.nn.functional.silu(m.tensor(values)))
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12)


def test_grid_sample_of_half_input_larger_than_2048_elements_per_plane():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((1, 1, 20, 30, 40))
    grid = rng.uniform(-1, 1, (1, 2, 3, 4, 3))
    (_, want), (_, got) = _both(
        lambda m: m.nn.functional.grid_sample(
            m.tensor(x).half(), m.tensor(grid).half(), align_corners=False
        )
    )
    np.testing.assert_allclose(got.float().numpy(), want.float().numpy(), atol=2e-3)


def test_batch_norm_of_an_empty_input_is_a_copy():
    x = ember.zeros(0, requires_grad=True)
    out = F.batch_norm(x, ember.zeros(0), ember.zeros(0), training=True)
    assert out.shape == (0,) and out.grad_fn is not None
