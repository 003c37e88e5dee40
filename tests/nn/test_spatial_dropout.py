"""Channel-wise and alpha dropout: masks, scaling, moments, eval identity, errors."""

import numpy as np
import pytest

import ember

F = ember.nn.functional


@pytest.mark.parametrize("fn,shape", [(F.dropout1d, (6, 5, 7)), (F.dropout3d, (6, 5, 2, 3, 2))])
def test_channel_dropout_zeroes_whole_channels_and_scales(fn, shape):
    x = ember.ones(*shape, dtype=ember.float64, requires_grad=True)
    y = fn(x, 0.4)
    per_channel = y.detach().numpy().reshape(shape[0], shape[1], -1)
    assert set(np.unique(per_channel).tolist()) <= {0.0, 1 / 0.6}
    assert np.all(per_channel.min(-1) == per_channel.max(-1))  # one decision per channel
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), y.detach().numpy())
    unbatched = fn(ember.ones(*shape[1:]), 0.5)
    assert tuple(unbatched.shape) == shape[1:]


def test_alpha_dropout_keeps_mean_and_variance():
    x = ember.randn(100000, dtype=ember.float64)
    y = F.alpha_dropout(x, 0.3, training=True)
    assert abs(float(y.mean())) < 0.02 and abs(float(y.std()) - 1) < 0.02
    a = 1 / np.sqrt(0.7 * (1 + 0.3 * 1.7580993408473766**2))
    dropped = np.isclose(y.numpy(), a * -1.7580993408473766 + a * 1.7580993408473766 * 0.3)
    assert 0.28 < dropped.mean() < 0.32
    z = F.feature_alpha_dropout(ember.randn(8, 50, 3, dtype=ember.float64), 0.5, True)
    a = 1 / np.sqrt(0.5 * (1 + 0.5 * 1.7580993408473766**2))
    saturated = a * -1.7580993408473766 + a * 1.7580993408473766 * 0.5
    channel_dropped = np.all(np.isclose(z.numpy(), saturated), axis=-1)
    assert 100 < channel_dropped.sum() < 300  # about half of 400 channels, whole channels


def test_dropout_eval_identity_and_modules(torch_mod):
    for cls in ("Dropout1d", "Dropout3d", "AlphaDropout", "FeatureAlphaDropout"):
        x = ember.randn(2, 3, 4, 1, 1) if cls == "Dropout3d" else ember.randn(2, 3, 4)
        mine, ref = getattr(ember.nn, cls)(0.3), getattr(torch_mod.nn, cls)(0.3)
        assert repr(mine) == repr(ref)
        mine.eval()
        assert mine(x) is x
    assert F.alpha_dropout(x, 0.5) is x  # training defaults to False, as in torch


def test_dropout_errors_match_torch(torch_mod):
    for m in (ember, torch_mod):
        with pytest.raises(RuntimeError, match="dropout1d: Expected 2D or 3D input"):
            m.nn.functional.dropout1d(m.zeros(1, 2, 3, 4))
        with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1"):
            m.nn.functional.alpha_dropout(m.zeros(3), 1.5, True)
        with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1"):
            m.nn.Dropout3d(-0.1)
