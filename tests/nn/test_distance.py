"""ember.ops.distance (cdist, pdist, pairwise_distance, cosine_similarity), F.normalize and the
distance modules, against PyTorch and by float64 gradcheck/gradgradcheck."""

import math

import numpy as np
import pytest

import ember
from tests.helpers import arrays_for, check_gradients, compare_with_torch

A, B = arrays_for([(2, 5, 3), (4, 3)], seed=4)
ROWS = arrays_for([(5, 3)], seed=5)[0]
PS = [0, 1, 2, 3, 0.5, math.inf]
MODE_DEFAULT = "use_mm_for_euclid_dist_if_necessary"


def _ember_cdist(x, y, p, mode):
    from ember.ops.distance import cdist

    return cdist(x, y, p, mode)


def _pdist(m, x, p):
    return m.nn.functional.pdist(x, p)


# the compute mode only changes the euclidean (p = 2) kernel
CDIST_CASES = [(p, "donot_use_mm_for_euclid_dist") for p in PS] + [(2, "use_mm_for_euclid_dist")]


@pytest.mark.parametrize("p,mode", CDIST_CASES)
def test_cdist_matches_torch_and_gradchecks(p, mode, torch_mod):
    def fn(m, x, y):
        return _ember_cdist(x, y, p, mode) if m is ember else m.cdist(x, y, p, mode)

    compare_with_torch(fn, [A, B], atol=1e-7, rtol=1e-6)
    check_gradients(fn, [A, B], gradgrad=p != 0)
    assert fn(ember, ember.tensor(A, requires_grad=True), ember.tensor(B)).grad_fn.name() == (
        "CdistBackward0"
    )


@pytest.mark.parametrize("p", PS)
def test_pdist_matches_torch_and_gradchecks(p, torch_mod):
    compare_with_torch(lambda m, x: _pdist(m, x, p), [ROWS])
    check_gradients(lambda m, x: _pdist(m, x, p), [ROWS])
    out = _pdist(ember, ember.tensor(ROWS, requires_grad=True), p)
    assert tuple(out.shape) == (10,) and out.grad_fn.name() == "PdistBackward0"


def test_cdist_large_inputs_use_the_matmul_form_and_agree(torch_mod):
    x, y = arrays_for([(30, 4), (27, 4)], seed=6)
    ours = _ember_cdist(
        ember.tensor(x), ember.tensor(y), 2.0, "use_mm_for_euclid_dist_if_necessary"
    )
    ref = torch_mod.cdist(torch_mod.tensor(x), torch_mod.tensor(y))
    np.testing.assert_allclose(ours.numpy(), ref.numpy(), rtol=1e-10)
    check_gradients(
        lambda m, a, b: _ember_cdist(a, b, 2.0, "use_mm_for_euclid_dist"), [x[:4], y[:3]]
    )


def test_duplicate_rows_give_zero_distance_and_zero_gradient():
    x = ember.tensor(np.array([[1.0, 2.0], [1.0, 2.0], [0.0, 1.0]]), requires_grad=True)
    d = ember.nn.functional.pdist(x)
    assert d[0].item() == 0.0
    d.sum().backward()
    assert np.isfinite(x.grad.numpy()).all()


def test_distance_errors_match_torch():
    from ember.ops.distance import cdist

    with pytest.raises(RuntimeError, match="cdist only supports at least 2D tensors, X1 got: 1D"):
        cdist(ember.ones(3), ember.ones(2, 3))
    with pytest.raises(RuntimeError, match="X1 and X2 must have the same number of columns"):
        cdist(ember.ones(2, 3), ember.ones(2, 4))
    with pytest.raises(RuntimeError, match="cdist only supports non-negative p values"):
        cdist(ember.ones(2, 3), ember.ones(2, 3), -1.0)
    with pytest.raises(ValueError, match="is not a valid value for compute_mode"):
        cdist(ember.ones(2, 3), ember.ones(2, 3), compute_mode="fast")
    with pytest.raises(RuntimeError, match="pdist only supports 2D tensors, got: 3D"):
        ember.nn.functional.pdist(ember.ones(2, 2, 2))
    with pytest.raises(RuntimeError, match="pdist only supports non-negative p values"):
        ember.nn.functional.pdist(ember.ones(2, 2), -1)


COMPOSITES = {
    "pairwise": lambda m, x, y: m.nn.functional.pairwise_distance(x, y),
    "pairwise_p1_keepdim": lambda m, x, y: m.nn.functional.pairwise_distance(x, y, 1.0, 1e-3, True),
    "pairwise_broadcast": lambda m, x, y: m.nn.functional.pairwise_distance(x, y[0]),
    "cosine": lambda m, x, y: m.nn.functional.cosine_similarity(x, y, dim=1),
    "cosine_broadcast": lambda m, x, y: m.nn.functional.cosine_similarity(x, y[:1], dim=-1),
    "normalize": lambda m, x, y: m.nn.functional.normalize(x, p=3.0, dim=0),
    "module_pairwise": lambda m, x, y: m.nn.PairwiseDistance(p=3.0)(x, y),
    "module_cosine": lambda m, x, y: m.nn.CosineSimilarity(dim=0)(x, y),
}


@pytest.mark.parametrize("name", sorted(COMPOSITES))
def test_composite_distances_match_torch_and_gradcheck(name):
    fn = COMPOSITES[name]
    x, y = arrays_for([(4, 3), (4, 3)], seed=7)
    compare_with_torch(fn, [x, y])
    check_gradients(fn, [x, y])


def test_cosine_similarity_clamps_each_norm_and_modules_repr(torch_mod):
    zero = np.zeros((1, 3))
    one = np.ones((1, 3))
    ours = ember.nn.functional.cosine_similarity(ember.tensor(zero), ember.tensor(one))
    ref = torch_mod.nn.functional.cosine_similarity(torch_mod.tensor(zero), torch_mod.tensor(one))
    np.testing.assert_allclose(ours.numpy(), ref.numpy())
    assert repr(ember.nn.PairwiseDistance()) == repr(torch_mod.nn.PairwiseDistance())
    assert repr(ember.nn.CosineSimilarity()) == repr(torch_mod.nn.CosineSimilarity())
