import numpy as np
import pytest

import ember
from tests.helpers import arrays_for, check_gradients, compare_with_torch

X = arrays_for([(4, 5)], -3, 3, avoid=(0,))[0]

ACTIVATIONS = {
    "relu": lambda m, t: m.nn.functional.relu(t),
    "leaky_relu": lambda m, t: m.nn.functional.leaky_relu(t, 0.2),
    "elu": lambda m, t: m.nn.functional.elu(t, alpha=1.5),
    "gelu": lambda m, t: m.nn.functional.gelu(t),
    "gelu_tanh": lambda m, t: m.nn.functional.gelu(t, approximate="tanh"),
    "silu": lambda m, t: m.nn.functional.silu(t),
    "mish": lambda m, t: m.nn.functional.mish(t),
    "softplus": lambda m, t: m.nn.functional.softplus(t, beta=2.0, threshold=4.0),
    "hardtanh": lambda m, t: m.nn.functional.hardtanh(t, -1.5, 2.0),
    "sigmoid": lambda m, t: m.sigmoid(t),
    "tanh": lambda m, t: m.tanh(t),
    "softmax": lambda m, t: m.nn.functional.softmax(t, dim=1),
    "softmax0": lambda m, t: m.softmax(t, 0),
    "log_softmax": lambda m, t: m.nn.functional.log_softmax(t, dim=-1),
    "logsigmoid": lambda m, t: m.nn.functional.logsigmoid(t),
    "softsign": lambda m, t: m.nn.functional.softsign(t),
    "glu": lambda m, t: m.nn.functional.glu(t[:, :4], -1),
    "normalize": lambda m, t: m.nn.functional.normalize(t, dim=1),
    "prelu": lambda m, t: m.nn.functional.prelu(
        t, m.tensor([0.1, 0.2, 0.3, 0.4, 0.5], dtype=t.dtype)
    ),
}


@pytest.mark.parametrize("name", sorted(ACTIVATIONS))
def test_activation_gradcheck_and_torch(name):
    fn = ACTIVATIONS[name]
    check_gradients(fn, [X])
    compare_with_torch(fn, [X])


def test_softmax_family_is_finite_for_huge_logits():
    logits = ember.tensor([[1e4, -1e4, 0.0], [-1e4, -1e4, -1e4]], requires_grad=True)
    target = ember.tensor([1, 2])
    for out in (
        ember.softmax(logits, 1),
        ember.nn.functional.log_softmax(logits, 1),
        ember.nn.functional.cross_entropy(logits, target),
    ):
        assert np.isfinite(out.detach().numpy()).all()
    ember.nn.functional.cross_entropy(logits, target).backward()
    assert np.isfinite(logits.grad.numpy()).all()


def _targets(m, n=4, classes=5):
    return m.tensor([0, 3, 4, 1][:n])


LOSSES = {
    "mse": lambda m, x, y: m.nn.functional.mse_loss(x, y),
    "mse_sum": lambda m, x, y: m.nn.functional.mse_loss(x, y, reduction="sum"),
    "l1_none": lambda m, x, y: m.nn.functional.l1_loss(x, y, reduction="none"),
    "smooth_l1": lambda m, x, y: m.nn.functional.smooth_l1_loss(x, y, beta=0.5),
    "huber": lambda m, x, y: m.nn.functional.huber_loss(x, y, delta=0.7),
    "bce_logits": lambda m, x, y: m.nn.functional.binary_cross_entropy_with_logits(x, y.sigmoid()),
    "bce_logits_pos": lambda m, x, y: m.nn.functional.binary_cross_entropy_with_logits(
        x, y.sigmoid(), pos_weight=m.tensor([1.0, 2.0, 0.5, 1.5, 3.0], dtype=x.dtype)
    ),
    "bce": lambda m, x, y: m.nn.functional.binary_cross_entropy(x.sigmoid(), y.sigmoid()),
    "kl": lambda m, x, y: m.nn.functional.kl_div(
        m.log_softmax(x, 1), m.softmax(y, 1), reduction="batchmean"
    ),
    "kl_log": lambda m, x, y: m.nn.functional.kl_div(
        m.log_softmax(x, 1), m.log_softmax(y, 1), reduction="sum", log_target=True
    ),
    "ce": lambda m, x, y: m.nn.functional.cross_entropy(x, _targets(m)),
    "ce_probs": lambda m, x, y: m.nn.functional.cross_entropy(x, m.softmax(y, 1)),
    "ce_weight": lambda m, x, y: m.nn.functional.cross_entropy(
        x, _targets(m), weight=m.tensor([1.0, 2.0, 0.5, 1.0, 3.0], dtype=x.dtype)
    ),
    "ce_ignore": lambda m, x, y: m.nn.functional.cross_entropy(x, m.tensor([0, 3, -100, 1])),
    "ce_smooth": lambda m, x, y: m.nn.functional.cross_entropy(x, _targets(m), label_smoothing=0.1),
    "ce_smooth_weight": lambda m, x, y: m.nn.functional.cross_entropy(
        x,
        m.tensor([0, 3, -100, 1]),
        label_smoothing=0.2,
        weight=m.tensor([1.0, 2.0, 0.5, 1.0, 3.0], dtype=x.dtype),
    ),
    "ce_none": lambda m, x, y: m.nn.functional.cross_entropy(x, _targets(m), reduction="none"),
    "nll": lambda m, x, y: m.nn.functional.nll_loss(m.log_softmax(x, 1), _targets(m)),
    "ce_kdim": lambda m, x, y: m.nn.functional.cross_entropy(
        x.reshape(2, 5, 2), m.tensor([[0, 4], [3, 1]])
    ),
    "cosine_emb": lambda m, x, y: m.nn.functional.cosine_embedding_loss(
        x, y, m.tensor([1, -1, 1, -1]), margin=0.1
    ),
    "margin_rank": lambda m, x, y: m.nn.functional.margin_ranking_loss(
        x[:, 0], y[:, 0], m.tensor([1.0, -1.0, 1.0, -1.0], dtype=x.dtype), margin=0.3
    ),
}


@pytest.mark.parametrize("name", sorted(LOSSES))
def test_loss_gradcheck_and_torch(name):
    x, y = arrays_for([(4, 5), (4, 5)], -2, 2, avoid=(0,))
    fn = LOSSES[name]
    check_gradients(fn, [x, y])
    compare_with_torch(fn, [x, y])


def test_dropout_scales_and_respects_training():
    ember.manual_seed(0)
    x = ember.ones(10000)
    y = ember.nn.functional.dropout(x, 0.25)
    kept = (y > 0).float().mean().item()
    assert 0.72 < kept < 0.78
    assert np.allclose(y.numpy()[y.numpy() > 0], 1 / 0.75)
    assert ember.nn.functional.dropout(x, 0.25, training=False) is x


def test_linear_shape_error_names_shapes():
    with pytest.raises(RuntimeError, match="mat1 and mat2 shapes cannot be multiplied"):
        ember.nn.functional.linear(ember.ones(2, 3), ember.ones(4, 5))
