"""The product helpers around matmul (ops/linalg_products.py): torch's rounding rules."""

from __future__ import annotations

import numpy as np

import ember


def test_addr_half_rounds_each_step_with_half_scalars_as_torch():
    # torch's addr kernel: β and α converted to float16, then β·input + (α·vec1)·vec2 with each
    # step rounded to float16; one rounding of the float32 sum gives 3.919921875 here
    row = [4.015625, 0.8740234375, 0.44482421875]
    out = ember.addr(
        ember.tensor([row, row], dtype=ember.float16),
        ember.tensor([-1.8408203125, 0.1385498046875], dtype=ember.float16),
        ember.tensor([-4.10546875, 1.0126953125, 3.033203125], dtype=ember.float16),
        beta=0.6,
        alpha=0.2,
    )
    assert out.dtype == ember.float16
    expected = [
        [3.921875, 0.151611328125, -0.8505859375],
        [2.296875, 0.55224609375, 0.350830078125],
    ]
    assert out.tolist() == expected


def test_addr_float64_value_and_gradient():
    vec1 = ember.tensor([1.0, 2.0], dtype=ember.float64, requires_grad=True)
    vec2 = ember.tensor([3.0, -1.0, 0.5], dtype=ember.float64)
    out = ember.addr(ember.ones(2, 3, dtype=ember.float64), vec1, vec2, beta=2, alpha=0.5)
    np.testing.assert_allclose(
        out.detach().numpy(), 2 + 0.5 * np.outer([1.0, 2.0], [3.0, -1.0, 0.5])
    )
    out.sum().backward()
    np.testing.assert_allclose(vec1.grad.numpy(), [1.25, 1.25])
