"""ember.nn.utils.prune: masks, reparametrisation, composition and removal, against torch."""

import numpy as np
import pytest

import ember
from ember.nn.utils import prune


@pytest.fixture
def torch_mod(torch_mod):
    import torch.nn.utils.prune  # noqa: F401  (``import torch`` does not load it)

    return torch_mod


def _linear_pair(torch_mod, weight, bias=None):
    """An ember and a torch Linear holding the same float32 ``weight`` (out, in)."""
    out_features, in_features = weight.shape
    bias = np.zeros(out_features, np.float32) if bias is None else bias
    e, t = (
        ember.nn.Linear(in_features, out_features),
        torch_mod.nn.Linear(in_features, out_features),
    )
    e.load_state_dict({"weight": ember.tensor(weight), "bias": ember.tensor(bias)})
    t.load_state_dict({"weight": torch_mod.tensor(weight), "bias": torch_mod.tensor(bias)})
    return e, t


def _conv_pair(torch_mod, weight):
    out_channels, in_channels, kh, kw = weight.shape
    e = ember.nn.Conv2d(in_channels, out_channels, (kh, kw), bias=False)
    t = torch_mod.nn.Conv2d(in_channels, out_channels, (kh, kw), bias=False)
    e.load_state_dict({"weight": ember.tensor(weight)})
    t.load_state_dict({"weight": torch_mod.tensor(weight)})
    return e, t


def _assert_masks_equal(e, t, name="weight"):
    np.testing.assert_array_equal(
        getattr(e, name + "_mask").numpy(), getattr(t, name + "_mask").numpy()
    )
    np.testing.assert_array_equal(
        getattr(e, name).detach().numpy(), getattr(t, name).detach().numpy()
    )


def _random_weight(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def _tied_weight(*shape, seed=0, levels=3):
    """Weights drawn from a few values (with signs), so |w| ties everywhere."""
    rng = np.random.default_rng(seed)
    magnitudes = rng.integers(0, levels, shape).astype(np.float32)
    return magnitudes * rng.choice(np.float32([-1, 1]), shape)


# --- reparametrisation --------------------------------------------------------------------------
def test_pruning_moves_parameter_to_orig_and_mask_buffer():
    m = ember.nn.Linear(4, 3)
    weight = m.weight
    prune.l1_unstructured(m, "weight", amount=5)
    assert list(m.state_dict()) == ["bias", "weight_orig", "weight_mask"]
    assert m.weight_orig is weight
    assert "weight" not in m._parameters and "weight_mask" in m._buffers
    assert int((m.weight_mask == 0).sum()) == 5
    np.testing.assert_array_equal(
        m.weight.detach().numpy(), (m.weight_orig * m.weight_mask).detach().numpy()
    )
    assert prune.is_pruned(m)


def test_forward_pre_hook_recomputes_weight_from_orig():
    m = prune.l1_unstructured(ember.nn.Linear(4, 3), "weight", amount=0.5)
    with ember.no_grad():
        m.weight_orig.fill_(2.0)
    x = ember.ones(1, 4)
    y = m(x)
    expected = 2.0 * m.weight_mask.numpy().sum(1) + m.bias.detach().numpy()
    np.testing.assert_allclose(y.detach().numpy()[0], expected, rtol=1e-6)
    np.testing.assert_array_equal(m.weight.detach().numpy(), 2.0 * m.weight_mask.numpy())


def test_gradients_reach_orig_masked(torch_mod):
    e, t = _linear_pair(torch_mod, _random_weight(3, 5))
    prune.l1_unstructured(e, "weight", amount=7)
    torch_mod.nn.utils.prune.l1_unstructured(t, "weight", amount=7)
    x = _random_weight(2, 5, seed=1)
    e(ember.tensor(x)).pow(2).sum().backward()
    t(torch_mod.tensor(x)).pow(2).sum().backward()
    grad = e.weight_orig.grad.numpy()
    np.testing.assert_array_equal(grad[e.weight_mask.numpy() == 0], 0)
    np.testing.assert_allclose(grad, t.weight_orig.grad.numpy(), rtol=1e-5, atol=1e-6)
    assert e.weight_mask.grad is None


def test_state_dict_loads_from_torch_pruned_module(torch_mod):
    _, t = _linear_pair(torch_mod, _random_weight(3, 4), bias=_random_weight(3, seed=1))
    torch_mod.nn.utils.prune.l1_unstructured(t, "weight", amount=6)
    e = prune.identity(ember.nn.Linear(4, 3), "weight")
    e.load_state_dict({k: ember.tensor(v.numpy()) for k, v in t.state_dict().items()})
    x = _random_weight(2, 4, seed=2)
    e_out = e(ember.tensor(x)).detach().numpy()
    t_out = t(torch_mod.tensor(x)).detach().numpy()
    np.testing.assert_allclose(e_out, t_out, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(e.weight_mask.numpy(), t.weight_mask.numpy())


def test_pruned_module_converts_dtype_and_deepcopies_after_no_grad_forward():
    import copy

    m = prune.l1_unstructured(ember.nn.Linear(3, 2), "weight", amount=2).double()
    assert m.weight_orig.dtype == m.weight_mask.dtype == ember.float64
    with ember.no_grad():  # as in torch, the computed weight must be a leaf to deepcopy
        y = m(ember.ones(1, 3, dtype=ember.float64))
    clone = copy.deepcopy(m)
    assert prune.is_pruned(clone) and clone.weight_orig is not m.weight_orig
    np.testing.assert_array_equal(
        clone(ember.ones(1, 3, dtype=ember.float64)).detach().numpy(), y.numpy()
    )


def test_identity_installs_mask_of_ones():
    m = prune.identity(ember.nn.Linear(2, 3), "bias")
    np.testing.assert_array_equal(m.bias_mask.numpy(), np.ones(3, np.float32))
    assert m.bias_mask.dtype == ember.float32
    assert list(m.state_dict()) == ["weight", "bias_orig", "bias_mask"]


def test_amount_zero_prunes_nothing():
    for method in (
        lambda m: prune.l1_unstructured(m, "weight", amount=0),
        lambda m: prune.random_unstructured(m, "weight", amount=0.0),
        lambda m: prune.ln_structured(m, "weight", amount=0, n=2, dim=0),
        lambda m: prune.random_structured(m, "weight", amount=0, dim=1),
    ):
        m = method(ember.nn.Linear(4, 3))
        np.testing.assert_array_equal(m.weight_mask.numpy(), np.ones((3, 4), np.float32))


# --- deterministic masks against torch ----------------------------------------------------------
@pytest.mark.parametrize("amount", [1, 5, 12, 0.3, 0.5, 1.0])
def test_l1_unstructured_mask_matches_torch(amount, torch_mod):
    e, t = _linear_pair(torch_mod, _random_weight(3, 4))
    prune.l1_unstructured(e, "weight", amount=amount)
    torch_mod.nn.utils.prune.l1_unstructured(t, "weight", amount=amount)
    _assert_masks_equal(e, t)


def test_fraction_rounds_half_to_even_as_torch(torch_mod):
    # 0.5 * 5 = 2.5 rounds to 2, 0.7 * 5 = 3.5 rounds to 4
    for amount, pruned in ((0.5, 2), (0.7, 4)):
        e, t = _linear_pair(torch_mod, _random_weight(1, 5))
        prune.l1_unstructured(e, "weight", amount=amount)
        torch_mod.nn.utils.prune.l1_unstructured(t, "weight", amount=amount)
        assert int((e.weight_mask == 0).sum()) == pruned
        _assert_masks_equal(e, t)


@pytest.mark.parametrize(
    "shape, amount",
    [((2, 3), 2), ((4, 5), 7), ((10, 20), 3), ((10, 20), 150), ((64, 65), 10), ((32, 64), 31)],
)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_l1_unstructured_breaks_ties_as_torch(shape, amount, seed, torch_mod):
    # torch's CPU topk picks among equal |w| by its selection algorithm's swaps; both paths
    # (partial sort when amount * 64 <= size, nth_element otherwise) are covered
    e, t = _linear_pair(torch_mod, _tied_weight(*shape, seed=seed))
    prune.l1_unstructured(e, "weight", amount=amount)
    torch_mod.nn.utils.prune.l1_unstructured(t, "weight", amount=amount)
    _assert_masks_equal(e, t)


def test_l1_unstructured_of_all_zero_bias_matches_torch(torch_mod):
    e, t = _linear_pair(torch_mod, _random_weight(10, 3), bias=np.zeros(10, np.float32))
    prune.l1_unstructured(e, "bias", amount=3)
    torch_mod.nn.utils.prune.l1_unstructured(t, "bias", amount=3)
    _assert_masks_equal(e, t, "bias")


def test_l1_unstructured_ranks_importance_scores(torch_mod):
    weight = _random_weight(4, 6)
    scores = _random_weight(4, 6, seed=7)
    e, t = _linear_pair(torch_mod, weight)
    prune.l1_unstructured(e, "weight", amount=9, importance_scores=ember.tensor(scores))
    torch_mod.nn.utils.prune.l1_unstructured(
        t, "weight", amount=9, importance_scores=torch_mod.tensor(scores)
    )
    _assert_masks_equal(e, t)
    kept = np.abs(scores)[e.weight_mask.numpy() == 1]
    assert kept.min() >= np.abs(scores)[e.weight_mask.numpy() == 0].max()


@pytest.mark.parametrize("n", [1, 2, 3, float("inf"), float("-inf")])
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_ln_structured_mask_matches_torch(n, dim, torch_mod):
    e, t = _conv_pair(torch_mod, _random_weight(6, 5, 3, 2))
    prune.ln_structured(e, "weight", amount=0.4, n=n, dim=dim)
    torch_mod.nn.utils.prune.ln_structured(t, "weight", amount=0.4, n=n, dim=dim)
    _assert_masks_equal(e, t)


def test_ln_structured_frobenius_matches_torch_on_matrices_and_raises_beyond(torch_mod):
    e, t = _linear_pair(torch_mod, _random_weight(5, 4))
    prune.ln_structured(e, "weight", amount=2, n="fro", dim=1)
    torch_mod.nn.utils.prune.ln_structured(t, "weight", amount=2, n="fro", dim=1)
    _assert_masks_equal(e, t)
    # "fro" spans at most two dims, so a conv weight's channels (three dims each) have none
    e, t = _conv_pair(torch_mod, _random_weight(3, 2, 2, 2))
    with pytest.raises(RuntimeError):
        prune.ln_structured(e, "weight", amount=1, n="fro", dim=0)
    with pytest.raises(RuntimeError):
        torch_mod.nn.utils.prune.ln_structured(t, "weight", amount=1, n="fro", dim=0)
    assert list(e.state_dict()) == ["weight"]


def test_ln_structured_zeroes_whole_channels_of_smallest_norm():
    weight = np.ones((4, 3), np.float32) * np.float32([[1], [0.1], [3], [0.2]])
    m = ember.nn.Linear(3, 4)
    m.load_state_dict({"weight": ember.tensor(weight), "bias": ember.zeros(4)})
    prune.ln_structured(m, "weight", amount=2, n=1, dim=0)
    np.testing.assert_array_equal(m.weight_mask.numpy().sum(1), [3, 0, 3, 0])


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_ln_structured_breaks_ties_as_torch(seed, torch_mod):
    rng = np.random.default_rng(seed)
    channel = np.float32([1, -2, 0])
    weight = np.stack([channel * rng.integers(0, 2) for _ in range(9)])  # 9 rows, 2 norms
    e, t = _linear_pair(torch_mod, weight)
    prune.ln_structured(e, "weight", amount=4, n=2, dim=0)
    torch_mod.nn.utils.prune.ln_structured(t, "weight", amount=4, n=2, dim=0)
    _assert_masks_equal(e, t)


def test_ln_structured_ranks_importance_scores(torch_mod):
    weight, scores = _random_weight(5, 4), _random_weight(5, 4, seed=3)
    e, t = _linear_pair(torch_mod, weight)
    prune.ln_structured(e, "weight", 2, 2, 1, importance_scores=ember.tensor(scores))
    torch_mod.nn.utils.prune.ln_structured(
        t, "weight", 2, 2, 1, importance_scores=torch_mod.tensor(scores)
    )
    _assert_masks_equal(e, t)


def test_custom_from_mask_matches_torch(torch_mod):
    mask = np.float32([[1, 0, 1], [0, 0, 1]])
    e, t = _linear_pair(torch_mod, _random_weight(2, 3))
    prune.custom_from_mask(e, "weight", ember.tensor(mask))
    torch_mod.nn.utils.prune.custom_from_mask(t, "weight", torch_mod.tensor(mask))
    _assert_masks_equal(e, t)
    np.testing.assert_array_equal(e.weight_mask.numpy(), mask)


# --- composition ---------------------------------------------------------------------------------
def test_repeated_pruning_composes_masks_as_torch(torch_mod):
    e, t = _conv_pair(torch_mod, _tied_weight(6, 4, 2, 2, levels=4))
    steps = [
        ("l1_unstructured", dict(amount=10)),
        ("ln_structured", dict(amount=2, n=2, dim=0)),
        ("l1_unstructured", dict(amount=0.25)),
        ("ln_structured", dict(amount=1, n=1, dim=1)),
        ("custom_from_mask", None),
    ]
    custom = (np.arange(6 * 4 * 2 * 2).reshape(6, 4, 2, 2) % 3 != 0).astype(np.float32)
    for fn, kwargs in steps:
        if fn == "custom_from_mask":
            prune.custom_from_mask(e, "weight", ember.tensor(custom))
            torch_mod.nn.utils.prune.custom_from_mask(t, "weight", torch_mod.tensor(custom))
        else:
            getattr(prune, fn)(e, "weight", **kwargs)
            getattr(torch_mod.nn.utils.prune, fn)(t, "weight", **kwargs)
        _assert_masks_equal(e, t)
    hooks = list(e._forward_pre_hooks.values())
    assert len(hooks) == 1 and isinstance(hooks[0], prune.PruningContainer)
    assert [type(m).__name__ for m in hooks[0]] == [
        "L1Unstructured",
        "LnStructured",
        "L1Unstructured",
        "LnStructured",
        "CustomFromMask",
    ]
    assert list(e.state_dict()) == ["weight_orig", "weight_mask"]


def test_second_unstructured_pruning_acts_on_unpruned_entries():
    m = prune.random_unstructured(ember.nn.Linear(10, 10), "weight", amount=30)
    first = m.weight_mask.numpy().copy()
    prune.random_unstructured(m, "weight", amount=0.5)  # half of the 70 left
    second = m.weight_mask.numpy()
    assert int((second == 0).sum()) == 30 + 35
    assert np.all(second[first == 0] == 0)


def test_structured_pruning_after_unstructured_skips_dead_channels():
    m = ember.nn.Linear(3, 4)
    mask = np.ones((4, 3), np.float32)
    mask[1] = 0  # row 1 already fully pruned
    prune.custom_from_mask(m, "weight", ember.tensor(mask))
    prune.random_structured(m, "weight", amount=3, dim=0)  # the three live rows all go
    np.testing.assert_array_equal(m.weight_mask.numpy(), np.zeros((4, 3), np.float32))


def test_global_unstructured_matches_torch(torch_mod):
    e1, t1 = _linear_pair(torch_mod, _tied_weight(4, 10, seed=1, levels=5))
    e2, t2 = _linear_pair(torch_mod, _tied_weight(1, 4, seed=2, levels=5))
    prune.l1_unstructured(e1, "weight", amount=6)
    torch_mod.nn.utils.prune.l1_unstructured(t1, "weight", amount=6)
    prune.global_unstructured(
        [(e1, "weight"), (e2, "weight")], pruning_method=prune.L1Unstructured, amount=15
    )
    torch_mod.nn.utils.prune.global_unstructured(
        [(t1, "weight"), (t2, "weight")],
        pruning_method=torch_mod.nn.utils.prune.L1Unstructured,
        amount=15,
    )
    _assert_masks_equal(e1, t1)
    _assert_masks_equal(e2, t2)
    total = int((e1.weight_mask == 0).sum() + (e2.weight_mask == 0).sum())
    assert total == 6 + 15


def test_global_unstructured_uses_importance_scores(torch_mod):
    e1, t1 = _linear_pair(torch_mod, _random_weight(3, 4))
    e2, t2 = _linear_pair(torch_mod, _random_weight(2, 3, seed=1))
    scores = _random_weight(3, 4, seed=5)
    prune.global_unstructured(
        ((m, "weight") for m in (e1, e2)),  # a generator is walked once
        prune.L1Unstructured,
        importance_scores={(e1, "weight"): ember.tensor(scores)},
        amount=0.4,
    )
    torch_mod.nn.utils.prune.global_unstructured(
        [(t1, "weight"), (t2, "weight")],
        torch_mod.nn.utils.prune.L1Unstructured,
        importance_scores={(t1, "weight"): torch_mod.tensor(scores)},
        amount=0.4,
    )
    _assert_masks_equal(e1, t1)
    _assert_masks_equal(e2, t2)


def test_global_random_unstructured_prunes_exact_total():
    a, b = ember.nn.Linear(5, 4), ember.nn.Linear(3, 2)
    prune.global_unstructured([(a, "weight"), (b, "weight")], prune.RandomUnstructured, amount=9)
    assert int((a.weight_mask == 0).sum() + (b.weight_mask == 0).sum()) == 9


# --- random methods ------------------------------------------------------------------------------
def test_random_unstructured_prunes_exact_count_uniformly():
    counts = np.zeros((4, 5))
    for _ in range(400):
        m = prune.random_unstructured(ember.nn.Linear(5, 4), "weight", amount=0.25)
        mask = m.weight_mask.numpy()
        assert int((mask == 0).sum()) == 5
        assert set(np.unique(mask)) <= {0.0, 1.0}
        counts += mask == 0
    # each entry is pruned with probability 1/4: 100 of 400 expected, sd ~8.7
    assert counts.min() > 60 and counts.max() < 140


@pytest.mark.parametrize("dim", [0, 1, -1, -2])
def test_random_structured_prunes_whole_channels(dim):
    m = prune.random_structured(ember.nn.Conv2d(4, 6, 2), "weight", amount=0.5, dim=dim)
    mask = m.weight_mask.numpy()
    axis = dim % 4
    per_channel = np.moveaxis(mask, axis, 0).reshape(mask.shape[axis], -1)
    assert all(row.min() == row.max() for row in per_channel)  # channels all-0 or all-1
    assert int((per_channel[:, 0] == 0).sum()) == round(0.5 * mask.shape[axis])


def test_random_structured_picks_channels_uniformly():
    counts = np.zeros(5)
    for _ in range(300):
        m = prune.random_structured(ember.nn.Linear(5, 2), "weight", amount=2, dim=1)
        counts += m.weight_mask.numpy()[0] == 0
    # each column goes with probability 2/5: 120 of 300 expected, sd ~8.5
    assert counts.sum() == 600 and counts.min() > 85 and counts.max() < 155


def test_random_structured_keeps_prior_mask():
    m = ember.nn.Linear(4, 3)
    prior = np.float32([[1, 0, 1, 1], [1, 1, 1, 0], [0, 1, 1, 1]])
    prune.custom_from_mask(m, "weight", ember.tensor(prior))
    prune.random_structured(m, "weight", amount=1, dim=1)
    mask = m.weight_mask.numpy()
    assert np.all(mask[prior == 0] == 0)
    assert int((mask.sum(0) == 0).sum()) >= 1


# --- remove and is_pruned ------------------------------------------------------------------------
def test_remove_makes_pruning_permanent(torch_mod):
    e, t = _linear_pair(torch_mod, _random_weight(3, 4))
    orig = e.weight_orig if prune.l1_unstructured(e, "weight", amount=5) else None
    prune.ln_structured(e, "weight", amount=1, n=2, dim=0)
    torch_mod.nn.utils.prune.l1_unstructured(t, "weight", amount=5)
    torch_mod.nn.utils.prune.ln_structured(t, "weight", amount=1, n=2, dim=0)
    prune.remove(e, "weight")
    torch_mod.nn.utils.prune.remove(t, "weight")
    assert list(e.state_dict()) == list(t.state_dict()) == ["bias", "weight"]
    assert e.weight is orig and isinstance(e.weight, ember.nn.Parameter)
    assert e.weight.requires_grad
    np.testing.assert_array_equal(e.weight.detach().numpy(), t.weight.detach().numpy())
    assert not prune.is_pruned(e) and len(e._forward_pre_hooks) == 0
    e(ember.ones(1, 4)).sum().backward()
    assert e.weight.grad is not None


def test_remove_of_unpruned_parameter_raises():
    with pytest.raises(ValueError, match="'weight' of module .* has to be pruned"):
        prune.remove(ember.nn.Linear(2, 2), "weight")


def test_is_pruned_looks_into_submodules():
    net = ember.nn.Sequential(ember.nn.Linear(3, 3), ember.nn.Sequential(ember.nn.Linear(3, 1)))
    assert not prune.is_pruned(net)
    prune.identity(net[1][0], "bias")
    assert prune.is_pruned(net)
    prune.remove(net[1][0], "bias")
    assert not prune.is_pruned(net)


# --- pruning methods as objects ------------------------------------------------------------------
def test_prune_method_returns_masked_tensor():
    t = ember.tensor([[3.0, -1.0], [0.5, -4.0]])
    np.testing.assert_array_equal(
        prune.L1Unstructured(amount=2).prune(t).numpy(), [[3.0, 0.0], [0.0, -4.0]]
    )
    scores = ember.tensor([[0.0, 5.0], [6.0, 1.0]])
    np.testing.assert_array_equal(
        prune.L1Unstructured(amount=2).prune(t, importance_scores=scores).numpy(),
        [[0.0, -1.0], [0.5, 0.0]],
    )
    default = ember.tensor([[1.0, 1.0], [1.0, 0.0]])
    np.testing.assert_array_equal(
        prune.Identity().prune(t, default_mask=default).numpy(), [[3.0, -1.0], [0.5, 0.0]]
    )


def test_custom_pruning_method_subclass_applies_and_composes():
    class EveryOther(prune.BasePruningMethod):
        PRUNING_TYPE = "unstructured"

        def compute_mask(self, t, default_mask):
            mask = default_mask.clone()
            mask.view(-1)[::2] = 0
            return mask

    m = ember.nn.Linear(4, 2)
    hook = EveryOther.apply(m, "weight")
    assert hook._tensor_name == "weight"
    np.testing.assert_array_equal(m.weight_mask.numpy().reshape(-1), [0, 1] * 4)
    EveryOther.apply(m, "weight")  # again, on the four unpruned entries
    np.testing.assert_array_equal(m.weight_mask.numpy().reshape(-1), [0, 0, 0, 1] * 2)


def test_pruning_container_checks_what_it_holds():
    first = prune.L1Unstructured(1)
    first._tensor_name = "weight"
    other = prune.L1Unstructured(1)
    other._tensor_name = "bias"
    container = prune.PruningContainer(first)
    assert container._tensor_name == "weight" and len(container) == 1
    with pytest.raises(ValueError, match="'weight'.*'bias'"):
        container.add_pruning_method(other)
    with pytest.raises(TypeError, match="is not a BasePruningMethod subclass"):
        container.add_pruning_method("l1")
    assert container[0] is first and list(container) == [first]


def test_apply_mask_before_apply_raises():
    with pytest.raises(AssertionError, match="apply"):
        prune.L1Unstructured(1).apply_mask(ember.nn.Linear(2, 2))


# --- validation ----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "amount, error, message",
    [
        (1.5, ValueError, "float in the range"),
        (-0.1, ValueError, "float in the range"),
        (-1, ValueError, "non-negative integer"),
        ("a", TypeError, "Invalid type for amount"),
        (None, TypeError, "Invalid type for amount"),
        (True, TypeError, "Invalid type for amount"),
    ],
)
def test_invalid_amount_raises(amount, error, message, torch_mod):
    with pytest.raises(error, match=message):
        prune.l1_unstructured(ember.nn.Linear(3, 2), "weight", amount)
    if amount is not True:  # torch lets a bool through to topk, which rejects it
        with pytest.raises(error):
            torch_mod.nn.utils.prune.l1_unstructured(torch_mod.nn.Linear(3, 2), "weight", amount)


def test_amount_larger_than_tensor_raises_and_restores_parameter():
    m = ember.nn.Linear(3, 2)
    weight = m.weight
    with pytest.raises(ValueError, match="amount=7 should be smaller .*=6"):
        prune.l1_unstructured(m, "weight", 7)
    assert m.weight is weight and "weight_orig" not in m._parameters
    assert not prune.is_pruned(m) and "weight_mask" not in m._buffers


def test_structured_pruning_validates_tensor_and_dim():
    with pytest.raises(ValueError, match="multidimensional tensors.*1 dims"):
        prune.ln_structured(ember.nn.Linear(3, 2), "bias", 1, n=2, dim=0)
    with pytest.raises(IndexError, match="Invalid index 2"):
        prune.ln_structured(ember.nn.Linear(3, 2), "weight", 1, n=2, dim=2)
    with pytest.raises(IndexError):
        prune.random_structured(ember.nn.Linear(3, 2), "weight", 1, dim=-3)
    with pytest.raises(ValueError, match="amount=3 should be smaller"):
        prune.random_structured(ember.nn.Linear(3, 2), "weight", 3, dim=0)


def test_importance_scores_of_wrong_shape_raise():
    with pytest.raises(AssertionError, match=r"\(3,\).*\(2, 3\)"):
        prune.l1_unstructured(ember.nn.Linear(3, 2), "weight", 1, importance_scores=ember.ones(3))


def test_pruning_a_buffer_raises_type_error():
    m = ember.nn.Linear(3, 2)
    m.register_buffer("running", ember.ones(4))
    with pytest.raises(TypeError):
        prune.l1_unstructured(m, "running", 1)
    assert list(m.state_dict()) == ["weight", "bias", "running"]


def test_custom_mask_of_wrong_shape_raises():
    with pytest.raises(AssertionError, match=r"\(3,\).*\(2, 3\)"):
        prune.custom_from_mask(ember.nn.Linear(3, 2), "weight", ember.ones(3))


def test_global_unstructured_validates_arguments():
    m = ember.nn.Linear(3, 2)
    with pytest.raises(TypeError, match="iterable"):
        prune.global_unstructured(3, prune.L1Unstructured, amount=1)
    with pytest.raises(TypeError, match="importance_scores must be a dict"):
        prune.global_unstructured([(m, "weight")], prune.L1Unstructured, [1], amount=1)
    with pytest.raises(TypeError, match='"unstructured"'):
        prune.global_unstructured([(m, "weight")], prune.LnStructured, amount=1, n=2, dim=0)
    assert not prune.is_pruned(m)
