"""Complex random fills (ember/_random/sampler.py): torch fills the real view of a complex
tensor, real and imaginary parts in turn, normals with std / sqrt(2)."""

from __future__ import annotations

import numpy as np
import pytest

import ember


def test_rand_complex_takes_real_and_imaginary_parts_from_one_stream():
    ember.manual_seed(0)
    x = ember.rand(2, dtype=ember.complex64)
    assert x.dtype == ember.complex64
    expected = [
        0.49625658988952637 + 0.7682217955589294j,
        0.08847743272781372 + 0.13203048706054688j,
    ]
    np.testing.assert_allclose(x.numpy(), expected, rtol=1e-7)


def test_randn_complex_scalar_path_matches_torch():
    ember.manual_seed(0)
    x = ember.randn(2, dtype=ember.complex128)
    expected = [
        1.089648797921442 - 0.20748556905971358j,
        -1.5406367468421671 + 0.40194161080369084j,
    ]
    np.testing.assert_allclose(x.numpy(), expected, rtol=1e-13)


def test_randn_complex_block_path_matches_torch():
    ember.manual_seed(0)  # 8 complex values: 16 real ones, one Box-Muller block
    x = ember.randn(8, dtype=ember.complex64)
    expected = [
        -0.7960889935493469 - 0.8148416876792908j,
        0.7896807193756104 - 0.17485205829143524j,
    ]
    np.testing.assert_allclose(x.numpy()[[0, 7]], expected, rtol=1e-6)


def test_uniform_and_normal_fill_complex_tensors_in_place():
    ember.manual_seed(0)
    u = ember.empty(3, dtype=ember.complex128).uniform_(-2, 2)
    np.testing.assert_allclose(
        u.numpy(),
        [1.8802120072262123 + 0.8312794575991518j, -0.16246822749019652 + 1.6829907364878411j,
         0.5800964804910591 + 1.1645915687212147j],
        rtol=1e-13,
    )  # fmt: skip
    ember.manual_seed(0)
    n = ember.empty(2, dtype=ember.complex64).normal_(5, 2)
    np.testing.assert_allclose(
        n.numpy(), [7.17929744720459 + 4.585028648376465j, 1.9187265634536743 + 5.803883075714111j],
        rtol=1e-6,
    )  # fmt: skip


@pytest.mark.parametrize("factory", [ember.rand_like, ember.randn_like])
def test_like_factories_keep_complex_dtype(factory):
    out = factory(ember.zeros(4, dtype=ember.complex64))
    assert out.dtype == ember.complex64 and bool((out.imag != 0).all())


def test_bernoulli_tangent_is_zero_not_absent():
    import ember.autograd.forward_ad as fwad

    p = ember.tensor([0.2, 0.7, 0.5], dtype=ember.float64)
    with fwad.dual_level():
        dual = fwad.make_dual(p, ember.ones(3, dtype=ember.float64))
        tangent = fwad.unpack_dual(ember.bernoulli(dual)).tangent
    assert tangent is not None and tangent.tolist() == [0.0, 0.0, 0.0]
