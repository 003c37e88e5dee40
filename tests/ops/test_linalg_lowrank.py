"""torch.svd_lowrank and torch.pca_lowrank: exact for matrices of rank ≤ q, as in PyTorch."""

import numpy as np
import pytest

import ember
from ember.ops import linalg_lowrank as low
from tests.helpers import check_gradients, compare_with_torch

NAMES = {"svd_lowrank": low.svd_lowrank, "pca_lowrank": low.pca_lowrank}


def top(m, name):
    return getattr(m, name) if m is not ember or hasattr(ember, name) else NAMES[name]


def rank_three(shape, seed=0):
    rng = np.random.default_rng(seed)
    m, n = shape[-2:]
    return rng.standard_normal(shape[:-2] + (m, 3)) @ rng.standard_normal(shape[:-2] + (3, n))


@pytest.mark.parametrize("shape", [(8, 5), (5, 8), (2, 7, 6)], ids=str)
def test_svd_lowrank_recovers_a_low_rank_matrix(shape):
    a = rank_three(shape)
    # the singular values and the reconstruction are unique; the random stream is not
    fn = lambda m, x: (lambda u, s, v: (s[..., :3], u @ s.diag_embed() @ v.mT))(
        *top(m, "svd_lowrank")(x, q=4)
    )
    compare_with_torch(fn, [a], atol=1e-9, rtol=1e-8, grad=False)
    U, S, V = top(ember, "svd_lowrank")(ember.tensor(a), q=4)
    assert tuple(U.shape) == shape[:-2] + (shape[-2], 4) and tuple(V.shape[-2:]) == (shape[-1], 4)


def test_pca_lowrank_matches_torch_and_is_differentiable():
    a = rank_three((9, 5), seed=1)
    fn = lambda m, x: top(m, "pca_lowrank")(x, q=3)[1]
    compare_with_torch(fn, [a], atol=1e-9, rtol=1e-8)
    ember.manual_seed(0)
    # q = n: the basis spans everything, so the top singular values are exact and smooth
    check_gradients(lambda m, x: low.svd_lowrank(x, q=5, niter=1)[1][:3], [a], gradgrad=False)
    with pytest.raises(ValueError, match="not greater than min"):
        top(ember, "pca_lowrank")(ember.ones(3, 2), q=3)
