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


def test_dropout2d_reads_3d_input_as_n_c_l_and_warns_like_torch(torch_mod):
    F = ember.nn.functional
    x = ember.ones(4, 6, 50)
    with pytest.warns(UserWarning, match="interpreted as shape \\(N, C, L\\)"):
        out = F.dropout2d(x, 0.5)
    values = out.numpy()
    # one decision per (sample, channel): each row is all 0 or all 2
    assert set(np.unique(values)) <= {0.0, 2.0}
    assert (values.min(axis=2) == values.max(axis=2)).all()
    with pytest.warns(UserWarning, match="Received a 2-D input to dropout2d"):
        flat = F.dropout2d(ember.ones(30, 40), 0.5)
    assert tuple(flat.shape) == (30, 40) and set(np.unique(flat.numpy())) == {0.0, 2.0}
    with pytest.warns(UserWarning), pytest.raises(RuntimeError, match="at least 2 dimensions"):
        F.dropout2d(ember.ones(5), 0.5)
    batched = F.dropout2d(ember.ones(2, 3, 4, 4), 0.5).numpy()
    assert (batched.min(axis=(2, 3)) == batched.max(axis=(2, 3))).all()
    assert F.dropout2d(ember.ones(2, 3, 4, 4), 0.5, training=False).numpy().min() == 1.0
    layer = ember.nn.Dropout2d(1.0)
    assert not layer(ember.ones(2, 3, 2, 2)).numpy().any()
    assert repr(layer) == repr(torch_mod.nn.Dropout2d(1.0))


def test_gumbel_softmax_soft_and_hard_samples():
    F = ember.nn.functional
    logits = ember.tensor([[10.0, 0.0, -10.0]] * 200, requires_grad=True)
    soft = F.gumbel_softmax(logits, tau=0.5)
    np.testing.assert_allclose(soft.detach().numpy().sum(1), 1.0, rtol=1e-6)
    hard = F.gumbel_softmax(logits, hard=True, dim=1)
    values = hard.detach().numpy()
    assert set(np.unique(values)) == {0.0, 1.0} and (values.sum(1) == 1).all()
    assert values[:, 0].mean() > 0.9  # the largest logit wins almost always
    (hard * ember.tensor([1.0, 2.0, 3.0])).sum().backward()  # straight-through: soft grads
    assert np.abs(logits.grad.numpy()).sum() > 0
    with pytest.warns(UserWarning, match="`eps` parameter is deprecated"):
        F.gumbel_softmax(logits, eps=1e-5)


def test_one_hot_errors_and_shapes_match_torch(torch_mod):
    F = ember.nn.functional
    np.testing.assert_array_equal(
        F.one_hot(ember.tensor([[0, 2], [1, 1]]), 3).numpy(),
        torch_mod.nn.functional.one_hot(torch_mod.tensor([[0, 2], [1, 1]]), 3).numpy(),
    )
    empty = F.one_hot(ember.tensor([], dtype=ember.int64), 3)
    assert tuple(empty.shape) == (0, 3) and empty.dtype == ember.int64
    cases = [
        ((ember.tensor([1, -1]),), "Class values must be non-negative"),
        ((ember.tensor([1, 3]), 3), "Class values must be smaller than num_classes"),
        ((ember.tensor([], dtype=ember.int64),), "Can not infer total number of classes"),
        ((ember.tensor([1.0]),), "only applicable to index tensor of type LongTensor"),
    ]
    for args, message in cases:
        with pytest.raises(RuntimeError, match=message):
            F.one_hot(*args)


def test_bilinear_matches_torch_and_checks_sizes(torch_mod):
    x1, x2, w, b = arrays_for([(2, 3), (2, 4), (5, 3, 4), (5,)], seed=2)
    fn = lambda m, a, c, weight, bias: m.nn.functional.bilinear(a, c, weight, bias)
    compare_with_torch(fn, [x1, x2, w, b])
    check_gradients(fn, [x1, x2, w, b])
    F = ember.nn.functional
    with pytest.raises(RuntimeError, match="input1 size does not match weight size: got 4"):
        F.bilinear(ember.ones(2, 4), ember.ones(2, 4), ember.ones(5, 3, 4))
    with pytest.raises(RuntimeError, match="input batch dimensions do not match at dim 0"):
        F.bilinear(ember.ones(2, 3), ember.ones(3, 4), ember.ones(5, 3, 4))
    with pytest.raises(RuntimeError, match="bias size does not match weight size: got 4"):
        F.bilinear(ember.ones(2, 3), ember.ones(2, 4), ember.ones(5, 3, 4), ember.ones(4))


def test_normalize_writes_out():
    x = ember.tensor([[3.0, 4.0]])
    out = ember.empty(1, 2)
    assert ember.nn.functional.normalize(x, out=out) is out
    np.testing.assert_allclose(out.numpy(), [[0.6, 0.8]])


@pytest.mark.parametrize("training, eps", [(True, 0.0), (True, -1.0), (False, -1.0)])
def test_batch_norm_refuses_eps_as_torch(torch_mod, training, eps):
    errors = []
    for m in (ember, torch_mod):
        x, stats = m.ones(2, 3), (m.zeros(3), m.ones(3))
        with pytest.raises(ValueError) as info:
            m.nn.functional.batch_norm(x, *stats, training=training, eps=eps)
        errors.append(str(info.value))
    assert errors[0] == errors[1]


def test_batch_norm_takes_eps_zero_in_eval_as_torch(torch_mod):
    outs = []
    for m in (ember, torch_mod):
        x = m.tensor([[1.0, 2.0], [3.0, 6.0]])
        outs.append(m.nn.functional.batch_norm(x, m.zeros(2), m.full((2,), 4.0), eps=0.0).numpy())
    np.testing.assert_allclose(outs[0], outs[1], rtol=1e-6)
