"""ember.linalg decompositions: cholesky, qr, eigh, svd, lu and slogdet against PyTorch, with
float64 gradcheck and gradgradcheck (losses that do not depend on eigenvector signs)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ember
from ember.ops import linalg_decompositions as dec
from tests.helpers import arrays_for, check_gradients, compare_with_torch

# torch.* names the lead exports from ember's top level; until then the tests reach them here
LEGACY = {
    "svd": dec.svd_legacy,
    "qr": dec.qr_legacy,
    "slogdet": dec.slogdet_legacy,
    "logdet": dec.logdet,
    "lu_unpack": dec.lu_unpack,
}


def top(m, name):
    return getattr(m, name) if m is not ember or hasattr(ember, name) else LEGACY[name]


def spd(m, x):
    """A symmetric positive-definite matrix from any square x (a differentiable map)."""
    n = x.shape[-1]
    return x @ x.mT + n * m.eye(n, dtype=x.dtype)


def sym(x):
    return x + x.mT


# --------------------------------------------------------------------------------------------
# cholesky
# --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("shape", [(3, 3), (2, 3, 3), (0, 2, 2), (1, 1)], ids=str)
@pytest.mark.parametrize("upper", [False, True])
def test_cholesky_matches_torch_and_gradchecks(shape, upper):
    (a,) = arrays_for([shape])
    fn = lambda m, x: m.linalg.cholesky(spd(m, x), upper=upper)
    compare_with_torch(fn, [a])
    compare_with_torch(fn, [a], dtype=np.float32, atol=1e-5, rtol=1e-4)
    check_gradients(fn, [a], gradgrad=shape == (2, 3, 3) and not upper)


def test_cholesky_noncontiguous_input():
    (a,) = arrays_for([(3, 3)], seed=3)
    check_gradients(lambda m, x: m.linalg.cholesky(spd(m, x)), [a], noncontiguous=True)


def test_cholesky_values_and_doc_example():
    L = ember.linalg.cholesky(ember.tensor([[4.0, 2.0], [2.0, 2.0]]))
    np.testing.assert_allclose(L.numpy(), [[2.0, 0.0], [1.0, 1.0]])
    assert L.dtype == ember.float32


def test_cholesky_not_positive_definite_names_the_minor(torch_mod):
    a = np.array([[1.0, 2.0, 0.0], [2.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
    with pytest.raises(ember.linalg.LinAlgError) as got:
        ember.linalg.cholesky(ember.tensor(a))
    with pytest.raises(torch_mod.linalg.LinAlgError) as want:
        torch_mod.linalg.cholesky(torch_mod.tensor(a))
    assert str(got.value) == str(want.value)
    assert "leading minor of order 2" in str(got.value)
    batch = np.stack([np.eye(3), a])
    with pytest.raises(RuntimeError, match=r"\(Batch element 1\): .* order 2"):
        ember.linalg.cholesky(ember.tensor(batch))


def test_cholesky_ex_reports_info_instead_of_raising(torch_mod):
    batch = np.stack([np.eye(2), np.array([[1.0, 2.0], [2.0, 1.0]]), -np.eye(2)])
    L, info = ember.linalg.cholesky_ex(ember.tensor(batch))
    _, t_info = torch_mod.linalg.cholesky_ex(torch_mod.tensor(batch))
    assert info.dtype == ember.int32
    np.testing.assert_array_equal(info.numpy(), t_info.numpy())
    np.testing.assert_array_equal(info.numpy(), [0, 2, 1])
    np.testing.assert_allclose(L.numpy()[0], np.eye(2))
    with pytest.raises(ember.linalg.LinAlgError, match="Batch element 1"):
        ember.linalg.cholesky_ex(ember.tensor(batch), check_errors=True)


def test_cholesky_bad_input_errors_match_torch(torch_mod):
    for bad in [np.zeros((2, 3)), np.zeros(3)]:
        with pytest.raises(RuntimeError) as got:
            ember.linalg.cholesky(ember.tensor(bad))
        with pytest.raises(RuntimeError) as want:
            torch_mod.linalg.cholesky(torch_mod.tensor(bad))
        assert str(got.value) == str(want.value)
    with pytest.raises(RuntimeError, match="Expected a floating point"):
        ember.linalg.cholesky(ember.ones(2, 2, dtype=ember.int64))


# --------------------------------------------------------------------------------------------
# qr
# --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("shape", [(4, 3), (3, 3), (3, 5), (2, 4, 2), (0, 3, 2)], ids=str)
def test_qr_reduced_matches_torch_and_gradchecks(shape):
    (a,) = arrays_for([shape])
    fn = lambda m, x: m.linalg.qr(x)
    compare_with_torch(fn, [a])
    compare_with_torch(fn, [a], dtype=np.float32, atol=1e-5, rtol=1e-4)
    check_gradients(fn, [a], gradgrad=shape in ((4, 3), (3, 5)))


def test_qr_gradient_through_q_alone_and_r_alone():
    (a,) = arrays_for([(4, 3)], seed=5)
    check_gradients(lambda m, x: m.linalg.qr(x).Q, [a])
    check_gradients(lambda m, x: m.linalg.qr(x).R, [a], noncontiguous=True)


@pytest.mark.parametrize("shape", [(4, 3), (3, 5)], ids=str)
def test_qr_complete_and_r_modes(shape, torch_mod):
    (a,) = arrays_for([shape])
    compare_with_torch(lambda m, x: m.linalg.qr(x, mode="complete"), [a], grad=shape[0] <= 3)
    Q, R = ember.linalg.qr(ember.tensor(a), mode="r")
    assert tuple(Q.shape) == (0,)
    np.testing.assert_allclose(R.numpy(), torch_mod.linalg.qr(torch_mod.tensor(a), "r")[1])


def test_qr_mode_r_and_tall_complete_are_not_differentiable():
    x = ember.randn(4, 3, dtype=ember.float64, requires_grad=True)
    with pytest.raises(RuntimeError, match="depends on Q, which is not computed"):
        ember.linalg.qr(x, mode="r")[1].sum().backward()
    with pytest.raises(RuntimeError, match="not differentiable when mode='complete'"):
        ember.linalg.qr(x, mode="complete")[0].sum().backward()


@pytest.mark.filterwarnings("ignore:torch.qr is deprecated")
def test_qr_bad_mode_and_legacy_qr(torch_mod):
    with pytest.raises(RuntimeError, match="unrecognized mode 'x'"):
        ember.linalg.qr(ember.randn(3, 3), mode="x")
    (a,) = arrays_for([(4, 2)])
    compare_with_torch(lambda m, x: top(m, "qr")(x, some=False), [a], grad=False)
    assert type(ember.linalg.qr(ember.tensor(a))).__name__ == "linalg_qr"


# --------------------------------------------------------------------------------------------
# eigh / eigvalsh
# --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("shape", [(3, 3), (2, 4, 4), (0, 2, 2)], ids=str)
@pytest.mark.parametrize("uplo", ["L", "U"])
def test_eigh_matches_torch_and_gradchecks(shape, uplo):
    (a,) = arrays_for([shape], seed=2)
    # |V| and V Λ Vᵀ do not depend on the eigenvectors' signs
    fn = lambda m, x: (lambda w, v: (w, v.abs(), v @ w.diag_embed() @ v.mT))(
        *m.linalg.eigh(x, UPLO=uplo)
    )
    compare_with_torch(fn, [a])
    compare_with_torch(fn, [a], dtype=np.float32, atol=1e-5, rtol=1e-4)
    check_gradients(lambda m, x: fn(m, sym(x)), [a], gradgrad=uplo == "L")


def test_eigvalsh_values_gradients_and_uplo(torch_mod):
    (a,) = arrays_for([(2, 3, 3)], seed=4)
    for uplo in ("L", "U"):
        compare_with_torch(lambda m, x: m.linalg.eigvalsh(x, uplo), [a])
    check_gradients(lambda m, x: m.linalg.eigvalsh(sym(x)), [a], noncontiguous=True)
    w = ember.linalg.eigvalsh(ember.tensor([[2.0, 1.0], [1.0, 2.0]]))
    np.testing.assert_allclose(w.numpy(), [1.0, 3.0], rtol=1e-6)
    with pytest.raises(RuntimeError, match="UPLO"):
        ember.linalg.eigh(ember.eye(2), UPLO="X")
    with pytest.raises(RuntimeError, match="square matrices"):
        ember.linalg.eigh(ember.zeros(2, 3))


# --------------------------------------------------------------------------------------------
# svd / svdvals
# --------------------------------------------------------------------------------------------
def _svd_invariants(m, x, full_matrices=False):
    U, S, Vh = m.linalg.svd(x, full_matrices=full_matrices)
    k = S.shape[-1]
    return S, U[..., :k] @ Vh[..., :k, :], U[..., :k].abs()


@pytest.mark.parametrize("shape", [(3, 3), (4, 2), (2, 4), (2, 3, 2), (0, 3, 2)], ids=str)
@pytest.mark.parametrize("full", [False, True])
def test_svd_matches_torch_and_gradchecks(shape, full):
    (a,) = arrays_for([shape], seed=6)
    fn = lambda m, x: _svd_invariants(m, x, full)
    compare_with_torch(fn, [a])
    compare_with_torch(fn, [a], dtype=np.float32, atol=1e-5, rtol=1e-4)
    check_gradients(fn, [a], gradgrad=not full or shape == (4, 2))


def test_svd_named_tuple_shapes_and_reconstruction():
    (a,) = arrays_for([(2, 5, 3)])
    U, S, Vh = ember.linalg.svd(ember.tensor(a))
    assert (tuple(U.shape), tuple(S.shape), tuple(Vh.shape)) == ((2, 5, 5), (2, 3), (2, 3, 3))
    out = ember.linalg.svd(ember.tensor(a), full_matrices=False)
    assert type(out).__name__ == "linalg_svd" and tuple(out.U.shape) == (2, 5, 3)
    rebuilt = (out.U * out.S.unsqueeze(-2)) @ out.Vh
    np.testing.assert_allclose(rebuilt.numpy(), a, atol=1e-12)


def test_svdvals_twice_differentiable_and_legacy_svd(torch_mod):
    (a,) = arrays_for([(3, 4)], seed=7)
    check_gradients(lambda m, x: m.linalg.svdvals(x), [a], noncontiguous=True)
    compare_with_torch(lambda m, x: m.linalg.svdvals(x), [a])
    fn = lambda m, x: (lambda u, s, v: (s, u @ v.mT))(*top(m, "svd")(x))
    compare_with_torch(fn, [a])
    compare_with_torch(lambda m, x: top(m, "svd")(x, compute_uv=False), [a], grad=False)
    compare_with_torch(
        lambda m, x: top(m, "svd")(x, some=False)[0].shape and top(m, "svd")(x)[1], [a]
    )


def test_svd_errors(torch_mod):
    with pytest.raises(RuntimeError) as got:
        ember.linalg.svd(ember.zeros(3))
    with pytest.raises(RuntimeError) as want:
        torch_mod.linalg.svd(torch_mod.zeros(3))
    assert str(got.value) == str(want.value)


# --------------------------------------------------------------------------------------------
# lu, lu_factor, lu_unpack
# --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("shape", [(3, 3), (4, 2), (2, 4), (2, 3, 3), (0, 2, 2)], ids=str)
def test_lu_matches_torch_and_gradchecks(shape):
    (a,) = arrays_for([shape], seed=8)
    fn = lambda m, x: m.linalg.lu(x)
    compare_with_torch(fn, [a])
    compare_with_torch(fn, [a], dtype=np.float32, atol=1e-5, rtol=1e-4)
    check_gradients(lambda m, x: m.linalg.lu(x)[1:], [a], gradgrad=shape in ((4, 2), (2, 4)))


@pytest.mark.parametrize("shape", [(3, 3), (4, 2), (2, 4), (2, 3, 3)], ids=str)
def test_lu_factor_and_unpack_match_torch(shape):
    (a,) = arrays_for([shape], seed=9)
    compare_with_torch(lambda m, x: m.linalg.lu_factor(x), [a])
    compare_with_torch(lambda m, x: m.linalg.lu_factor_ex(x), [a])
    compare_with_torch(lambda m, x: top(m, "lu_unpack")(*m.linalg.lu_factor(x)), [a])
    check_gradients(lambda m, x: m.linalg.lu_factor(x)[0], [a], gradgrad=shape == (2, 3, 3))


def test_lu_factor_singular_errors_and_info(torch_mod):
    z = np.zeros((2, 2))
    with pytest.raises(RuntimeError) as got:
        ember.linalg.lu_factor(ember.tensor(z))
    with pytest.raises(RuntimeError) as want:
        torch_mod.linalg.lu_factor(torch_mod.tensor(z))
    assert str(got.value) == str(want.value)
    LU, piv, info = ember.linalg.lu_factor_ex(ember.tensor(np.stack([np.eye(2), z])))
    assert info.tolist() == [0, 1] and piv.dtype == ember.int32


def test_lu_reconstructs_the_input():
    (a,) = arrays_for([(2, 4, 3)], seed=10)
    P, L, U = ember.linalg.lu(ember.tensor(a))
    np.testing.assert_allclose((P @ L @ U).numpy(), a, atol=1e-12)
    assert bool((L.diagonal(0, -2, -1) == 1).all())


# --------------------------------------------------------------------------------------------
# slogdet, logdet
# --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("shape", [(3, 3), (2, 2, 2), (1, 1)], ids=str)
def test_slogdet_and_logdet_match_torch_and_gradcheck(shape):
    (a,) = arrays_for([shape], seed=11)
    compare_with_torch(lambda m, x: m.linalg.slogdet(x), [a])
    compare_with_torch(lambda m, x: top(m, "slogdet")(x), [a])
    compare_with_torch(lambda m, x: top(m, "logdet")(spd(m, x)), [a])
    check_gradients(lambda m, x: m.linalg.slogdet(x)[1], [a], noncontiguous=shape == (3, 3))


def test_logdet_of_negative_determinant_is_nan():
    out = top(ember, "logdet")(ember.tensor([[0.0, 1.0], [1.0, 0.0]]))
    assert np.isnan(out.item())
    sign, logabs = ember.linalg.slogdet(ember.tensor([[0.0, 1.0], [1.0, 0.0]]))
    assert sign.item() == -1.0 and logabs.item() == 0.0


def test_noncontiguous_inputs_gradcheck():
    (a,) = arrays_for([(3, 3)], seed=12)
    for fn in (
        lambda m, x: _svd_invariants(m, x),
        lambda m, x: m.linalg.lu(x)[1:],
        lambda m, x: m.linalg.eigh(sym(x))[0],
        lambda m, x: m.linalg.pinv(x),
        lambda m, x: m.linalg.matrix_exp(x),
    ):
        check_gradients(fn, [a], gradgrad=False, noncontiguous=True)


@given(m_=st.integers(1, 4), n=st.integers(1, 4), batch=st.integers(0, 1), seed=st.integers(0, 99))
@settings(max_examples=4, deadline=None, derandomize=True)
def test_decompositions_gradcheck_over_random_shapes(m_, n, batch, seed):
    (a,) = arrays_for([(2,) * batch + (m_, n)], seed=seed)
    check_gradients(lambda m, x: _svd_invariants(m, x), [a], gradgrad=False)
    check_gradients(lambda m, x: m.linalg.lu(x)[1:], [a], gradgrad=False)
    if m_ >= n:
        check_gradients(lambda m, x: m.linalg.qr(x), [a], gradgrad=False)


def test_slogdet_of_a_singular_matrix_has_infinite_gradient_like_torch():
    singular = np.array([[1.0, 2.0], [2.0, 4.0]])
    compare_with_torch(lambda m, x: m.linalg.slogdet(x)[1], [singular])
