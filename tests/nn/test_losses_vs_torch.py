"""Losses of ember.nn.functional against PyTorch: values, dtypes, gradients, grad_fn names
(one node where PyTorch has one), float64 gradcheck and gradgradcheck, modules and errors."""

import warnings

import numpy as np
import pytest

import ember
from tests.helpers import arrays_for, check_gradients, compare_with_torch

rng = np.random.default_rng(0)
X, Y = arrays_for([(4, 5), (4, 5)], -2, 2, avoid=(0,), seed=3)
P = rng.uniform(0.05, 0.95, (4, 5))  # probabilities
SIGNS = np.where(rng.standard_normal((4, 5)) > 0, 1.0, -1.0)
LABELS = [1, 0, 4, 2]
W5 = [0.5, 2.0, 1.0, 3.0, 0.7]
ML_TARGET = [[3, 0, -1, 1, 2], [1, 2, 3, 4, 0], [-1, 1, 2, 0, 0], [4, -1, 0, 0, 0]]


def _t(m, value, dtype=None):
    return m.tensor(value, dtype=dtype)


def _w(m, x):
    return m.tensor(W5, dtype=x.dtype)


def _f(m):
    return m.nn.functional


# name -> (fn(m, *tensors), arrays, torch's grad_fn name, gradgradcheck?)
LOSSES = {
    "mse": (lambda m, x, y: _f(m).mse_loss(x, y), [X, Y], "MseLossBackward0", True),
    "mse_none": (
        lambda m, x, y: _f(m).mse_loss(x, y, reduction="none"), [X, Y], "MseLossBackward0", True
    ),
    "mse_sum_legacy": (
        lambda m, x, y: _f(m).mse_loss(x, y, size_average=False), [X, Y], "MseLossBackward0",
        True,
    ),
    "mse_weight": (
        lambda m, x, y: _f(m).mse_loss(x, y, weight=_t(m, P)), [X, Y], "DivBackward0", True
    ),
    "l1": (lambda m, x, y: _f(m).l1_loss(x, y), [X, Y], "MeanBackward0", True),
    "l1_weight_sum": (
        lambda m, x, y: _f(m).l1_loss(x, y, reduction="sum", weight=_t(m, P)), [X, Y],
        "SumBackward0", True,
    ),
    "smooth_l1": (
        lambda m, x, y: _f(m).smooth_l1_loss(x, y, beta=0.7), [X, Y], "SmoothL1LossBackward0",
        True,
    ),
    "smooth_l1_beta0": (
        lambda m, x, y: _f(m).smooth_l1_loss(x, y, beta=0.0), [X, Y], "MeanBackward0", True
    ),
    "huber_none": (
        lambda m, x, y: _f(m).huber_loss(x, y, "none", 0.8), [X, Y], "HuberLossBackward0", True
    ),
    "huber_weight": (
        lambda m, x, y: _f(m).huber_loss(x, y, delta=0.8, weight=_t(m, P)), [X, Y],
        "MeanBackward0", True,
    ),
    "bce": (
        lambda m, p, y: _f(m).binary_cross_entropy(p, y), [P, P[::-1].copy()],
        "BinaryCrossEntropyBackward0", True,
    ),
    "bce_weight_none": (
        lambda m, p, y: _f(m).binary_cross_entropy(p, y, _t(m, W5), reduction="none"),
        [P, P[::-1].copy()], "BinaryCrossEntropyBackward0", True,
    ),
    "bce_logits": (
        lambda m, x, y: _f(m).binary_cross_entropy_with_logits(x, y), [X, P],
        "BinaryCrossEntropyWithLogitsBackward0", True,
    ),
    "bce_logits_pos_weight": (
        lambda m, x, y: _f(m).binary_cross_entropy_with_logits(
            x, y, weight=_t(m, P[0]), pos_weight=_t(m, W5), reduction="sum"
        ),
        [X, P], "BinaryCrossEntropyWithLogitsBackward0", True,
    ),
    "kl_div_batchmean": (
        lambda m, x, y: _f(m).kl_div(x, y, reduction="batchmean"), [X, P], "DivBackward0", True
    ),
    "kl_div_log_target": (
        lambda m, x, y: _f(m).kl_div(x, y, reduction="sum", log_target=True), [X, Y],
        "SumBackward0", True,
    ),
    "poisson": (lambda m, x, y: _f(m).poisson_nll_loss(x, y), [X, P * 3], "MeanBackward0", True),
    "poisson_full_no_log": (
        lambda m, x, y: _f(m).poisson_nll_loss(x, y, log_input=False, full=True),
        [P, P * 4], "MeanBackward0", True,
    ),
    "gaussian": (
        lambda m, x, y, v: _f(m).gaussian_nll_loss(x, y, v), [X, Y, P], "MeanBackward0", True
    ),
    "gaussian_homoscedastic_full": (
        lambda m, x, y, v: _f(m).gaussian_nll_loss(x, y, v, full=True, reduction="sum"),
        [X, Y, P[:, 0].copy()], "SumBackward0", True,
    ),
    "soft_margin": (
        lambda m, x: _f(m).soft_margin_loss(x, _t(m, SIGNS, x.dtype)), [X],
        "SoftMarginLossBackward0", True,
    ),
    "multi_margin": (
        lambda m, x: _f(m).multi_margin_loss(x, _t(m, LABELS)), [X], "MultiMarginLossBackward0",
        True,
    ),
    "multi_margin_p2_weight_none": (
        lambda m, x: _f(m).multi_margin_loss(
            x, _t(m, LABELS), p=2, margin=0.7, weight=_w(m, x), reduction="none"
        ),
        [X], "MultiMarginLossBackward0", True,
    ),
    "multi_margin_1d": (
        lambda m, x: _f(m).multi_margin_loss(x[0], _t(m, 2)), [X], "MultiMarginLossBackward0",
        True,
    ),
    "multilabel_margin": (
        lambda m, x: _f(m).multilabel_margin_loss(x, _t(m, ML_TARGET)), [X],
        "MultilabelMarginLossBackward0", True,
    ),
    "multilabel_margin_none": (
        lambda m, x: _f(m).multilabel_margin_loss(x, _t(m, ML_TARGET), reduction="none"), [X],
        "MultilabelMarginLossBackward0", True,
    ),
    "multilabel_soft_margin": (
        lambda m, x, y: _f(m).multilabel_soft_margin_loss(x, y, weight=_t(m, W5)), [X, P],
        "MeanBackward0", True,
    ),
    "hinge_embedding": (
        lambda m, x: _f(m).hinge_embedding_loss(x, _t(m, SIGNS), margin=0.5), [X],
        "MeanBackward0", True,
    ),
    "cosine_embedding": (
        lambda m, a, b: _f(m).cosine_embedding_loss(a, b, _t(m, [1, -1, -1, 1]), margin=-0.2),
        [X, Y], "MeanBackward0", True,
    ),
    "margin_ranking": (
        lambda m, a, b: _f(m).margin_ranking_loss(a[:, 0], b[:, 0], _t(m, SIGNS[:, 0]), 0.1),
        [X, Y], "MeanBackward0", True,
    ),
    "triplet": (
        lambda m, a, p, n: _f(m).triplet_margin_loss(a, p, n, margin=2.0), [X, Y, P],
        "MeanBackward0", True,
    ),
    "triplet_swap_p1": (
        lambda m, a, p, n: _f(m).triplet_margin_loss(a, p, n, margin=2.0, p=1, swap=True),
        [X, Y, P], "MeanBackward0", True,
    ),
    "triplet_distance": (
        lambda m, a, p, n: _f(m).triplet_margin_with_distance_loss(
            a, p, n, distance_function=lambda u, v: 1 - _f(m).cosine_similarity(u, v),
            margin=0.5, reduction="sum",
        ),
        [X, Y, P], "SumBackward0", True,
    ),
    "nll_kdim_weight_ignore": (
        lambda m, x: _f(m).nll_loss(
            x.reshape(2, 5, 2), _t(m, [[1, -100], [4, 0]]), weight=_w(m, x), ignore_index=-100
        ),
        [X], "NllLoss2DBackward0", True,
    ),
    "cross_entropy_smoothing_weight": (
        lambda m, x: _f(m).cross_entropy(
            x, _t(m, LABELS), weight=_w(m, x), label_smoothing=0.2
        ),
        [X], "AddBackward0", True,
    ),
    "cross_entropy_kdim_ignore_sum": (
        lambda m, x: _f(m).cross_entropy(
            x.reshape(2, 5, 2), _t(m, [[1, 3], [-1, 0]]), ignore_index=-1, reduction="sum",
            label_smoothing=0.1,
        ),
        [X], "AddBackward0", True,
    ),
    "cross_entropy_probabilities": (
        lambda m, x, y: _f(m).cross_entropy(x, y.softmax(1), weight=_t(m, W5),
                                            label_smoothing=0.3),
        [X, Y], "DivBackward1", True,
    ),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(LOSSES))
def test_loss_gradcheck_and_gradgradcheck(name):
    fn, arrays, _, gradgrad = LOSSES[name]
    check_gradients(fn, arrays, gradgrad=gradgrad)


@pytest.mark.parametrize("name", sorted(LOSSES))
def test_loss_matches_torch_values_grads_dtypes_and_node(name, torch_mod):
    fn, arrays, node, _ = LOSSES[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        compare_with_torch(fn, arrays)
        if node.endswith("LossBackward0") or "CrossEntropy" in node:  # ember's own kernels
            compare_with_torch(fn, arrays, dtype=np.float32, atol=1e-5, rtol=1e-4)
        ours = fn(ember, *[ember.tensor(a, requires_grad=True) for a in arrays])
        theirs = fn(torch_mod, *[torch_mod.tensor(a, requires_grad=True) for a in arrays])
    assert theirs.grad_fn.name() == node
    # ember names tensor / number DivBackward0 (PyTorch: DivBackward1): not this file's op
    assert ours.grad_fn.name() == node.replace("DivBackward1", "DivBackward0")


@pytest.mark.parametrize("name", ["mse", "bce_logits", "multi_margin", "triplet", "gaussian"])
def test_loss_on_non_contiguous_inputs(name):
    fn, arrays, _, _ = LOSSES[name]
    check_gradients(fn, arrays, noncontiguous=True, gradgrad=False)


def test_one_node_losses_agree_with_their_composites():
    x, y = (ember.tensor(a, requires_grad=True) for a in (X, Y))
    F = ember.nn.functional
    pairs = [
        (F.mse_loss(x, y), ((x - y) ** 2).mean()),
        (F.huber_loss(x, y, delta=0.5), F.huber_loss(x, y, "none", 0.5).mean()),
        (F.soft_margin_loss(x, ember.tensor(SIGNS)), F.softplus(-x * ember.tensor(SIGNS)).mean()),
    ]
    for fused, composite in pairs:
        g1 = ember.autograd.grad(fused, (x,), create_graph=True)[0]
        g2 = ember.autograd.grad(composite, (x,), create_graph=True)[0]
        np.testing.assert_allclose(fused.item(), composite.item(), rtol=1e-12)
        np.testing.assert_allclose(g1.detach().numpy(), g2.detach().numpy(), rtol=1e-10)


def test_loss_dtype_rules_follow_torch(torch_mod):
    F = ember.nn.functional
    x = ember.tensor(P.astype(np.float32), requires_grad=True)
    long_target = ember.ones(4, 5, dtype=ember.int64)
    loss = F.mse_loss(x, long_target)
    assert loss.dtype == ember.float32 and loss.grad_fn.name() == "MseLossBackward0"
    loss.backward()
    ref_x = torch_mod.tensor(P.astype(np.float32), requires_grad=True)
    torch_mod.nn.functional.mse_loss(ref_x, torch_mod.ones(4, 5, dtype=torch_mod.int64)).backward()
    np.testing.assert_allclose(x.grad.numpy(), ref_x.grad.numpy(), rtol=1e-6)
    assert F.mse_loss(x, ember.tensor(P)).dtype == ember.float64
    assert F.huber_loss(x, ember.tensor(P)).dtype == ember.float32
    with pytest.raises(RuntimeError, match="Found dtype Long but expected Float"):
        F.binary_cross_entropy(x, long_target)
    with pytest.raises(RuntimeError, match="Found dtype Double but expected Float"):
        F.binary_cross_entropy(x, ember.tensor(P))
    with pytest.raises(RuntimeError, match="can't be cast to the desired output type Long"):
        F.binary_cross_entropy_with_logits(x, long_target)
    with pytest.raises(NotImplementedError, match="not implemented for 'Long'"):
        F.mse_loss(long_target, long_target)
    with pytest.raises(RuntimeError, match="Integral inputs not supported"):
        F.kl_div(x, long_target, reduction="batchmean")


def test_loss_errors_match_torch():
    F = ember.nn.functional
    x = ember.tensor(P)
    with pytest.raises(RuntimeError, match="all elements of input should be between 0 and 1"):
        F.binary_cross_entropy(x + 1, x)
    with pytest.raises(ValueError, match="is different to the input size"):
        F.binary_cross_entropy(x, x[0])
    with pytest.raises(ValueError, match="must be the same as input size"):
        F.binary_cross_entropy_with_logits(x, x[0])
    with pytest.raises(ValueError, match="avg is not a valid value for reduction"):
        F.mse_loss(x, x, reduction="avg")
    with pytest.raises(RuntimeError, match="does not support non-positive values for delta"):
        F.huber_loss(x, x, delta=0.0)
    with pytest.raises(ValueError, match="only p == 1 and p == 2 supported"):
        F.multi_margin_loss(x, ember.tensor(LABELS), p=3)
    with pytest.raises(RuntimeError, match="Expected target size \\[4\\], but got \\[3\\]"):
        F.multi_margin_loss(x, ember.tensor([0, 1, 2]))
    with pytest.raises(RuntimeError, match="target out of range"):
        F.multi_margin_loss(x, ember.tensor([0, 1, 2, 5]))
    with pytest.raises(RuntimeError, match="inconsistent target size"):
        F.multilabel_margin_loss(x, ember.tensor([1, -1, 0]))
    with pytest.raises(ValueError, match="var has negative entry"):
        F.gaussian_nll_loss(x, x, -x)
    with pytest.raises(ValueError, match="var is of incorrect size"):
        F.gaussian_nll_loss(x, x, x[:, :2])
    with pytest.raises(RuntimeError, match="same number of dimensions, but got: anchor 2D"):
        F.triplet_margin_loss(x, x, x[0])
    with pytest.raises(ValueError, match="margin must be greater than 0"):
        F.triplet_margin_loss(x, x, x, margin=0.0)
    with pytest.raises(RuntimeError, match="0D target tensor expects 1D input tensors"):
        F.cosine_embedding_loss(x, x, ember.tensor(1))
    with pytest.raises(RuntimeError, match="All input tensors should have same dimension"):
        F.margin_ranking_loss(x, x, ember.ones(5))
    with pytest.raises(RuntimeError, match="not differentiable with respect to argument 'target'"):
        F.soft_margin_loss(x, ember.tensor(SIGNS, requires_grad=True))
    w = ember.tensor(W5, dtype=ember.float64, requires_grad=True)
    refused = [
        (lambda: F.binary_cross_entropy(x, x, w), "'binary_cross_entropy' .* 'weight'"),
        (lambda: F.binary_cross_entropy_with_logits(x, x, pos_weight=w), "'pos_weight'"),
        (lambda: F.nll_loss(x, ember.tensor(LABELS), w), "'nll_loss_forward' .* 'weight'"),
        (lambda: F.cross_entropy(x, ember.tensor(LABELS), w), "'nll_loss_forward'"),
        (lambda: F.multi_margin_loss(x, ember.tensor(LABELS), weight=w), "'multi_margin_loss'"),
    ]
    for call, message in refused:
        with pytest.raises(RuntimeError, match=message):
            call()


def test_mse_broadcast_warns_and_reduces_gradient(torch_mod):
    x = ember.tensor(X, requires_grad=True)
    y = ember.tensor(Y[0], requires_grad=True)
    with pytest.warns(UserWarning, match="Using a target size"):
        loss = ember.nn.functional.mse_loss(x, y)
    loss.backward()
    tx, ty = (torch_mod.tensor(a, requires_grad=True) for a in (X, Y[0]))
    with pytest.warns(UserWarning):
        torch_mod.nn.functional.mse_loss(tx, ty).backward()
    np.testing.assert_allclose(loss.item(), 0 + torch_mod.nn.functional.mse_loss(tx, ty).item())
    np.testing.assert_allclose(y.grad.numpy(), ty.grad.numpy(), rtol=1e-12)


# --- CTC ------------------------------------------------------------------------------------
T_STEPS, CLASSES = 7, 5
RAW = np.random.default_rng(1).standard_normal((T_STEPS, 3, CLASSES))
CTC_TARGETS = [[1, 1, 3, 2], [4, 2, 0, 0], [2, 3, 1, 4]]
IN_LENS, TGT_LENS = [7, 5, 2], [4, 2, 4]  # the last one cannot align: infinite loss


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("zero_infinity", [False, True])
def test_ctc_loss_matches_torch(reduction, zero_infinity, torch_mod):
    losses, grads = [], []
    for m in (ember, torch_mod):
        raw = m.tensor(RAW, requires_grad=True)
        loss = m.nn.functional.ctc_loss(
            raw.log_softmax(2), m.tensor(CTC_TARGETS), IN_LENS, TGT_LENS,
            reduction=reduction, zero_infinity=zero_infinity,
        )  # fmt: skip
        (loss.sum() if reduction == "none" else loss).backward()
        losses.append((loss.detach().numpy(), loss.grad_fn.name()))
        grads.append(raw.grad.numpy())
    np.testing.assert_allclose(losses[0][0], losses[1][0], rtol=1e-10)
    assert losses[0][1] == losses[1][1]
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-8, atol=1e-12, equal_nan=True)


def test_ctc_loss_gradcheck_and_target_formats(torch_mod):
    lens = [7, 5, 6]
    targets = ember.tensor(CTC_TARGETS)
    fn = lambda x: ember.nn.functional.ctc_loss(x.log_softmax(2), targets, lens, TGT_LENS)
    assert ember.autograd.gradcheck(fn, (ember.tensor(RAW, requires_grad=True),))
    flat = [1, 1, 3, 2, 4, 2, 2, 3, 1, 4]
    lp = ember.tensor(RAW).log_softmax(2)
    padded = ember.nn.functional.ctc_loss(lp, targets, lens, TGT_LENS, reduction="none")
    concatenated = ember.nn.functional.ctc_loss(
        lp, ember.tensor(flat), ember.tensor(lens), ember.tensor(TGT_LENS), reduction="none"
    )
    np.testing.assert_allclose(padded.numpy(), concatenated.numpy(), rtol=1e-12)
    single = ember.nn.functional.ctc_loss(
        lp[:, 0], ember.tensor(CTC_TARGETS[0]), ember.tensor(7), ember.tensor(4)
    )
    ref = torch_mod.nn.functional.ctc_loss(
        torch_mod.tensor(RAW).log_softmax(2)[:, 0], torch_mod.tensor(CTC_TARGETS[0]),
        torch_mod.tensor(7), torch_mod.tensor(4),
    )  # fmt: skip
    np.testing.assert_allclose(single.item(), ref.item(), rtol=1e-12)
    with pytest.raises(RuntimeError, match="Expected input_lengths to have value at most 7"):
        ember.nn.functional.ctc_loss(lp, targets, [8, 5, 6], TGT_LENS)
    with pytest.raises(RuntimeError, match="derivative for aten::_ctc_loss_backward"):
        x = ember.tensor(RAW, requires_grad=True)
        (g,) = ember.autograd.grad(fn(x), (x,), create_graph=True)
        g.sum().backward()


# --- modules --------------------------------------------------------------------------------
MODULES = {
    "MSELoss": ((), [X, Y]), "L1Loss": ((), [X, Y]), "SmoothL1Loss": ((), [X, Y]),
    "HuberLoss": ((), [X, Y]), "SoftMarginLoss": ((), [X, SIGNS]),
    "KLDivLoss": (dict(reduction="batchmean"), [X, P]), "BCELoss": ((), [P, P]),
    "BCEWithLogitsLoss": ((), [X, P]), "PoissonNLLLoss": ((), [X, P]),
    "GaussianNLLLoss": ((), [X, Y, P]), "MultiLabelSoftMarginLoss": ((), [X, P]),
    "HingeEmbeddingLoss": ((), [X, SIGNS]), "CosineEmbeddingLoss": ((), [X, Y, SIGNS[:, 0]]),
    "MarginRankingLoss": ((), [X, Y, SIGNS]), "TripletMarginLoss": ((), [X, Y, P]),
    "TripletMarginWithDistanceLoss": ((), [X, Y, P]),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(MODULES))
def test_loss_modules_match_torch(name, torch_mod):
    kwargs, arrays = MODULES[name]
    kwargs = kwargs or {}
    ours = getattr(ember.nn, name)(**kwargs)
    theirs = getattr(torch_mod.nn, name)(**kwargs)
    assert repr(ours) == repr(theirs)
    for reduction in ("mean", "none"):
        ours.reduction = theirs.reduction = reduction
        a = ours(*[ember.tensor(v) for v in arrays])
        b = theirs(*[torch_mod.tensor(v) for v in arrays])
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-10)


def test_class_index_loss_modules_match_torch(torch_mod):
    cases = [
        ("MultiMarginLoss", dict(p=2, margin=0.5), LABELS),
        ("MultiLabelMarginLoss", {}, ML_TARGET),
        ("NLLLoss", dict(ignore_index=2), LABELS),
        ("CrossEntropyLoss", dict(label_smoothing=0.1, reduction="sum"), LABELS),
    ]
    for name, kwargs, target in cases:
        a = getattr(ember.nn, name)(**kwargs)(ember.tensor(X), ember.tensor(target))
        b = getattr(torch_mod.nn, name)(**kwargs)(torch_mod.tensor(X), torch_mod.tensor(target))
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-10)
    weight = ember.tensor(W5)
    with pytest.warns(UserWarning, match="please use reduction='sum' instead"):
        layer = ember.nn.MultiMarginLoss(weight=weight, size_average=False)
    assert layer.reduction == "sum" and layer.weight is weight
    ctc = ember.nn.CTCLoss(blank=0, zero_infinity=True)
    out = ctc(ember.tensor(RAW).log_softmax(2), ember.tensor(CTC_TARGETS), IN_LENS, TGT_LENS)
    ref = torch_mod.nn.CTCLoss(blank=0, zero_infinity=True)(
        torch_mod.tensor(RAW).log_softmax(2), torch_mod.tensor(CTC_TARGETS), IN_LENS, TGT_LENS
    )
    np.testing.assert_allclose(out.item(), ref.item(), rtol=1e-10)


def test_torch_namespace_forms_take_the_reduction_enum(torch_mod):
    from ember.ops import loss_enum

    x, y = X[:, :4], np.abs(Y[:, :4]) + 0.1
    cases = [
        ("binary_cross_entropy_with_logits", lambda m, f, r: f(m.tensor(x), m.tensor(P[:, :4]),
                                                               None, None, r)),
        ("kl_div", lambda m, f, r: f(m.tensor(x), m.tensor(y), r)),
        ("poisson_nll_loss", lambda m, f, r: f(m.tensor(x), m.tensor(y), True, True, 1e-8, r)),
        ("hinge_embedding_loss", lambda m, f, r: f(m.tensor(x), m.tensor(SIGNS[:, :4]), 0.5, r)),
        ("margin_ranking_loss", lambda m, f, r: f(m.tensor(x), m.tensor(y),
                                                  m.tensor(SIGNS[:, :4]), 0.1, r)),
        ("cosine_embedding_loss", lambda m, f, r: f(m.tensor(x), m.tensor(y),
                                                    m.tensor([1, -1, 1, -1]), 0.1, r)),
        ("triplet_margin_loss", lambda m, f, r: f(m.tensor(x), m.tensor(y), m.tensor(x * 2),
                                                  1.0, 2, 1e-6, True, r)),
        ("ctc_loss", lambda m, f, r: f(m.tensor(RAW).log_softmax(2), m.tensor(CTC_TARGETS),
                                       [7, 5, 6], TGT_LENS, 0, r, False)),
    ]  # fmt: skip
    for name, call in cases:
        for reduction in (0, 1, 2):
            ours = call(ember, getattr(loss_enum, name), reduction)
            theirs = call(torch_mod, getattr(torch_mod, name), reduction)
            np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-10, err_msg=name)
    with pytest.raises(RuntimeError, match="reduction must be 0 \\(none\\), 1 \\(mean\\) or 2"):
        loss_enum.kl_div(ember.tensor(x), ember.tensor(y), "mean")


LINEAR_CE = {
    "indices": (lambda m, x, w, b: m.nn.functional.linear_cross_entropy(
        x, w, m.tensor(LABELS), linear_bias=b, label_smoothing=0.1), (5, 3)),
    "probabilities": (lambda m, x, w, b: m.nn.functional.linear_cross_entropy(
        x, w, m.tensor(P, dtype=x.dtype), linear_bias=b, reduction="sum"), (5, 3)),
    "k_dim": (lambda m, x, w, b: m.nn.functional.linear_cross_entropy(
        x, w.reshape(5, 1, 3), m.tensor([[1], [0], [4], [2]]), reduction="none"), (5, 3)),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(LINEAR_CE))
def test_linear_cross_entropy_matches_torch_and_gradchecks(name):
    fn, (classes, features) = LINEAR_CE[name]
    x, w, b = arrays_for([(4, features), (classes, features), (classes,)], seed=8)
    compare_with_torch(fn, [x, w, b])
    check_gradients(fn, [x, w, b], gradgrad=name == "indices")


def test_linear_cross_entropy_module_and_errors(torch_mod):
    ours = ember.nn.LinearCrossEntropyLoss(3, 5, bias=True, label_smoothing=0.2)
    theirs = torch_mod.nn.LinearCrossEntropyLoss(3, 5, bias=True, label_smoothing=0.2)
    assert repr(ours) == repr(theirs)
    with torch_mod.no_grad():
        theirs.linear.weight.copy_(torch_mod.tensor(ours.linear.weight.detach().numpy()))
        theirs.linear.bias.copy_(torch_mod.tensor(ours.linear.bias.detach().numpy()))
    x = X[:, :3].astype(np.float32)
    np.testing.assert_allclose(
        ours(ember.tensor(x), ember.tensor(LABELS)).detach().numpy(),
        theirs(torch_mod.tensor(x), torch_mod.tensor(LABELS)).detach().numpy(),
        rtol=1e-5,
    )
    assert isinstance(ember.nn.NLLLoss2d(), ember.nn.NLLLoss)
    F = ember.nn.functional
    with pytest.raises(RuntimeError, match="expected equal input and linear_weight last dim"):
        F.linear_cross_entropy(ember.ones(2, 3), ember.ones(5, 4), ember.tensor([0, 1]))
    with pytest.raises(RuntimeError, match="ignore_index cannot be specified when target"):
        F.linear_cross_entropy(ember.ones(2, 3), ember.ones(5, 3), ember.ones(2, 5), ignore_index=1)


def _adaptive_pair(torch_mod, **kwargs):
    ours = ember.nn.AdaptiveLogSoftmaxWithLoss(6, 10, [3, 7], div_value=2.0, **kwargs).double()
    theirs = torch_mod.nn.AdaptiveLogSoftmaxWithLoss(6, 10, [3, 7], div_value=2.0, **kwargs)
    theirs = theirs.double()
    with torch_mod.no_grad():
        for (name, p), (_, q) in zip(ours.named_parameters(), theirs.named_parameters()):
            assert tuple(p.shape) == tuple(q.shape), name
            q.copy_(torch_mod.tensor(p.detach().numpy()))
    return ours, theirs


def test_adaptive_log_softmax_matches_torch(torch_mod):
    ours, theirs = _adaptive_pair(torch_mod, head_bias=True)
    assert repr(ours) == repr(theirs)
    x = np.random.default_rng(2).standard_normal((5, 6))
    target = [0, 4, 9, 2, 7]
    e_x, t_x = ember.tensor(x, requires_grad=True), torch_mod.tensor(x, requires_grad=True)
    e_out, e_loss = ours(e_x, ember.tensor(target))
    t_out, t_loss = theirs(t_x, torch_mod.tensor(target))
    np.testing.assert_allclose(e_out.detach().numpy(), t_out.detach().numpy(), rtol=1e-10)
    e_loss.backward()
    t_loss.backward()
    np.testing.assert_allclose(e_x.grad.numpy(), t_x.grad.numpy(), rtol=1e-9)
    for p, q in zip(ours.parameters(), theirs.parameters()):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(
        ours.log_prob(ember.tensor(x)).detach().numpy(),
        theirs.log_prob(torch_mod.tensor(x)).detach().numpy(),
        rtol=1e-10,
    )
    assert ours.predict(ember.tensor(x)).tolist() == theirs.predict(torch_mod.tensor(x)).tolist()
    single, _ = ours(ember.tensor(x[0]), ember.tensor(9))
    assert single.dim() == 0
    np.testing.assert_allclose(single.item(), theirs(t_x[0], torch_mod.tensor(9))[0].item())
    fn = lambda inp: ours(inp, ember.tensor(target)).loss
    assert ember.autograd.gradcheck(fn, (ember.tensor(x, requires_grad=True),))
    with pytest.raises(RuntimeError, match="Target values should be in \\[0, 9\\]"):
        ours(ember.tensor(x), ember.tensor([0, 1, 2, 3, 10]))
    with pytest.raises(ValueError, match="cutoffs should be a sequence of unique"):
        ember.nn.AdaptiveLogSoftmaxWithLoss(6, 10, [7, 3])


def test_kl_div_of_zero_negative_and_nan_targets_matches_torch(torch_mod):
    nan = float("nan")
    x = np.array([-1.0, -2.0, nan, -0.5, -1.0, -3.0])
    y = np.array([-0.5, 0.5, 0.0, 0.0, nan, 2.0])  # negative: NaN as xlogy(y, y) gives
    for reduction in ("none", "sum", "batchmean"):
        compare_with_torch(lambda m, a, b: _f(m).kl_div(a, b, reduction=reduction), [x, y])
    compare_with_torch(lambda m, a, b: m.nn.KLDivLoss(reduction="batchmean")(a, b), [x, y])
    out = _f(ember).kl_div(ember.tensor([-1.0]), ember.tensor([-0.5]), reduction="none")
    assert np.isnan(out.item())


@pytest.mark.parametrize("delta", [1j, "1", None])
def test_huber_loss_refuses_a_delta_that_is_not_a_number_as_torch(torch_mod, delta):
    messages = []
    for m in (ember, torch_mod):
        with pytest.raises(TypeError) as info:
            m.nn.HuberLoss(delta=delta)
        messages.append(str(info.value))
    assert messages[0] == messages[1]
