"""In-place fused products (addmm_, addmv_, addr_, baddbmm_, addbmm_) against torch, with
gradients through a non-leaf."""

from __future__ import annotations

import numpy as np
import pytest

import ember

SHAPES = {
    "addmm_": ((2, 3), (2, 4), (4, 3)),
    "addmv_": ((2,), (2, 4), (4,)),
    "addr_": ((2, 3), (2,), (3,)),
    "baddbmm_": ((5, 2, 3), (5, 2, 4), (5, 4, 3)),
    "addbmm_": ((2, 3), (5, 2, 4), (5, 4, 3)),
}


@pytest.mark.parametrize("name", list(SHAPES))
def test_in_place_products_match_torch(torch_mod, name):
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal(s) for s in SHAPES[name]]
    results = []
    for m in (ember, torch_mod):
        leaf = m.tensor(arrays[0], requires_grad=True)
        others = [m.tensor(a, requires_grad=True) for a in arrays[1:]]
        out = leaf * 1.0
        getattr(out, name)(*others, beta=0.5, alpha=2.0)
        out.square().sum().backward()
        results.append([out.detach().numpy(), leaf.grad.numpy(), *(o.grad.numpy() for o in others)])
    for ours, theirs in zip(*results):
        np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=1e-12)
