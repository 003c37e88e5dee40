"""ember.linalg matrix functions (matrix_power, matrix_exp, matrix_rank, norms, cond) and
products (multi_dot, cross, vecdot, vander, householder_product, diagonal) and the torch.*
helpers (kron, block_diag, addmv, addr, baddbmm, addbmm, chain_matmul, trace) against PyTorch."""

import numpy as np
import pytest

import ember
from ember.ops import linalg_decompositions as dec
from ember.ops import linalg_functions as fun
from ember.ops import linalg_products as prod
from tests.helpers import arrays_for, check_gradients, compare_with_torch

# torch.* names the lead exports from ember's top level; until then the tests reach them here
LEGACY = {
    "matrix_power": fun.matrix_power,
    "matrix_exp": fun.matrix_exp,
    "chain_matmul": fun.chain_matmul,
    "cross": fun.cross_legacy,
    "kron": prod.kron,
    "block_diag": prod.block_diag,
    "addmv": prod.addmv,
    "addr": prod.addr,
    "baddbmm": prod.baddbmm,
    "addbmm": prod.addbmm,
    "trace": prod.trace,
    "ormqr": fun.ormqr,
    "geqrf": dec.geqrf,
}


def top(m, name):
    return getattr(m, name) if m is not ember or hasattr(ember, name) else LEGACY[name]


# --------------------------------------------------------------------------------------------
# matrix_power, matrix_exp
# --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("n", [0, 1, 2, 3, 5, -1, -2])
def test_matrix_power_matches_torch(n):
    (a,) = arrays_for([(2, 3, 3)], seed=1)
    a = a + 2 * np.eye(3)
    compare_with_torch(lambda m, x: m.linalg.matrix_power(x, n), [a])
    compare_with_torch(lambda m, x: top(m, "matrix_power")(x, n), [a], grad=False)
    if n in (3, -2):
        check_gradients(lambda m, x: m.linalg.matrix_power(x, n), [a[0]], gradgrad=n == 3)


def test_matrix_power_errors(torch_mod):
    with pytest.raises(TypeError, match="must be int, not float"):
        ember.linalg.matrix_power(ember.eye(2), 1.5)
    with pytest.raises(RuntimeError) as got:
        ember.linalg.matrix_power(ember.zeros(2, 3), 2)
    with pytest.raises(RuntimeError) as want:
        torch_mod.linalg.matrix_power(torch_mod.zeros(2, 3), 2)
    assert str(got.value) == str(want.value)
    with pytest.raises(ember.linalg.LinAlgError):
        ember.linalg.matrix_power(ember.zeros(2, 2), -1)


@pytest.mark.parametrize("scale", [0.3, 3.0])
def test_matrix_exp_matches_torch_and_gradchecks(scale):
    (a,) = arrays_for([(2, 3, 3)], seed=2)
    fn = lambda m, x: m.linalg.matrix_exp(x * scale)
    compare_with_torch(fn, [a], atol=1e-10, rtol=1e-9)
    compare_with_torch(fn, [a], dtype=np.float32, atol=1e-4, rtol=1e-4)
    check_gradients(fn, [a[0]], gradgrad=scale < 1)


def test_matrix_exp_known_values():
    rotation = ember.linalg.matrix_exp(ember.tensor([[0.0, -np.pi / 2], [np.pi / 2, 0.0]]))
    np.testing.assert_allclose(rotation.numpy(), [[0.0, -1.0], [1.0, 0.0]], atol=1e-6)
    empty = ember.linalg.matrix_exp(ember.zeros(0, 2, 2))
    assert tuple(empty.shape) == (0, 2, 2)


# --------------------------------------------------------------------------------------------
# rank, norms, condition numbers
# --------------------------------------------------------------------------------------------
def test_matrix_rank_matches_torch():
    full = np.random.default_rng(0).standard_normal((2, 4, 3))
    low = np.outer([1.0, 2.0, 3.0], [1.0, 1.0, 0.5]) + np.diag([1e-4, 0, 0])
    for x in (full, low):
        compare_with_torch(lambda m, t: m.linalg.matrix_rank(t), [x], grad=False)
        compare_with_torch(lambda m, t: m.linalg.matrix_rank(t, atol=1e-3), [x], grad=False)
        compare_with_torch(lambda m, t: m.linalg.matrix_rank(t, rtol=1e-6), [x], grad=False)
    sym = low + low.T
    compare_with_torch(lambda m, t: m.linalg.matrix_rank(t, hermitian=True), [sym], grad=False)


ORDS = ["fro", "nuc", 2, -2, 1, -1, float("inf"), float("-inf")]


@pytest.mark.parametrize("ord", ORDS, ids=str)
def test_matrix_norm_and_cond_match_torch(ord):
    (a,) = arrays_for([(2, 3, 3)], seed=3)
    compare_with_torch(lambda m, x: m.linalg.matrix_norm(x, ord), [a])
    compare_with_torch(lambda m, x: m.linalg.matrix_norm(x, ord, dim=(0, 2), keepdim=True), [a])
    compare_with_torch(lambda m, x: m.linalg.norm(x[0], ord), [a])
    # PyTorch's own cond backward fails for the norms computed through inv (in-place error)
    compare_with_torch(lambda m, x: m.linalg.cond(x, ord), [a], grad=ord in ("nuc", 2, -2))
    check_gradients(lambda m, x: m.linalg.matrix_norm(x, ord), [a[0]], gradgrad=ord in ("nuc", 2))


def test_cond_default_and_vector_norm():
    (a,) = arrays_for([(3, 4)], seed=4)
    compare_with_torch(lambda m, x: m.linalg.cond(x), [a])
    compare_with_torch(lambda m, x: m.linalg.vector_norm(x, 3, dim=-1), [a])
    with pytest.raises(RuntimeError, match="Order 3 not supported"):
        ember.linalg.matrix_norm(ember.eye(2), 3)


# --------------------------------------------------------------------------------------------
# products
# --------------------------------------------------------------------------------------------
@pytest.mark.filterwarnings("ignore:torch.chain_matmul is deprecated")
def test_multi_dot_and_chain_matmul_match_torch():
    v, a, b, c, w = arrays_for([(4,), (4, 2), (2, 5), (5, 3), (3,)], seed=5)
    compare_with_torch(lambda m, *xs: m.linalg.multi_dot(xs), [v, a, b, c, w])
    compare_with_torch(lambda m, *xs: m.linalg.multi_dot(xs), [a, b, c])
    compare_with_torch(lambda m, *xs: top(m, "chain_matmul")(*xs), [a, b, c])
    check_gradients(lambda m, *xs: m.linalg.multi_dot(xs), [v, a, b, c])
    with pytest.raises(RuntimeError, match="expected at least 2 tensors"):
        ember.linalg.multi_dot([ember.eye(2)])
    with pytest.raises(RuntimeError, match="cannot be multiplied"):
        ember.linalg.multi_dot([ember.eye(2), ember.eye(3)])


def test_cross_and_vecdot_match_torch():
    a, b, c = arrays_for([(2, 3), (3,), (3, 2)], seed=6)
    compare_with_torch(lambda m, x, y: m.linalg.cross(x, y.expand(2, 3)), [a, b])
    compare_with_torch(lambda m, x, y: m.linalg.cross(x, y, dim=0), [c, c[::-1].copy()])
    compare_with_torch(lambda m, x, y: top(m, "cross")(x, y, dim=0), [c, c * 2])
    compare_with_torch(lambda m, x, y: m.linalg.vecdot(x, y), [a, b])
    compare_with_torch(lambda m, x, y: m.linalg.vecdot(x, y, dim=0), [c, c])
    check_gradients(lambda m, x, y: m.linalg.cross(x, y), [a, a[::-1].copy()])
    with pytest.raises(RuntimeError, match="must have length 3"):
        ember.linalg.cross(ember.ones(2, 2), ember.ones(2, 2))


def test_vander_matches_torch():
    (x,) = arrays_for([(2, 3)], seed=7)
    x[0, 0] = 0.0  # zero powers: gradient 1 for x¹, not nan
    for N in (None, 2, 4):
        compare_with_torch(lambda m, t: m.linalg.vander(t, N=N), [x])
    with pytest.raises(RuntimeError, match="N must be greater than 1"):
        ember.linalg.vander(ember.ones(3), N=1)
    check_gradients(lambda m, t: m.linalg.vander(t), [x])


def test_householder_product_matches_torch_and_qr():
    a, tau = arrays_for([(2, 4, 3), (2, 2)], seed=8)
    compare_with_torch(lambda m, x, t: m.linalg.householder_product(x, t), [a, tau])
    check_gradients(lambda m, x, t: m.linalg.householder_product(x, t), [a[0], tau[0]])
    with pytest.raises(RuntimeError, match="greater than or equal"):
        ember.linalg.householder_product(ember.ones(2, 3), ember.ones(2))


def test_linalg_diagonal():
    (a,) = arrays_for([(2, 3, 4)], seed=9)
    compare_with_torch(lambda m, x: m.linalg.diagonal(x), [a])
    compare_with_torch(lambda m, x: m.linalg.diagonal(x, offset=1, dim1=0, dim2=2), [a])


def test_kron_and_block_diag_match_torch():
    a, b, c, s = arrays_for([(2, 3), (3, 2), (2, 2, 2), ()], seed=10)
    compare_with_torch(lambda m, x, y: top(m, "kron")(x, y), [a, b])
    compare_with_torch(lambda m, x, y: top(m, "kron")(x, y), [a, c])
    compare_with_torch(lambda m, x, y: top(m, "kron")(x[0], y), [a, b])
    compare_with_torch(lambda m, x, y, z: top(m, "block_diag")(x, y, z), [a, b[0], s])
    check_gradients(lambda m, x, y: top(m, "block_diag")(x, y), [a, b], gradgrad=False)
    mixed = top(ember, "block_diag")(ember.ones(1, 1, dtype=ember.int64), ember.ones(1))
    assert mixed.dtype == ember.float32 and mixed.tolist() == [[1.0, 0.0], [0.0, 1.0]]


def test_add_products_and_trace_match_torch():
    i2, m23, v3, v2, b1, b2, i3 = arrays_for(
        [(2,), (2, 3), (3,), (2,), (4, 2, 3), (4, 3, 2), (2, 2)], seed=11
    )
    for beta, alpha in [(1, 1), (0.5, 2.0), (0, 1.5)]:
        compare_with_torch(
            lambda m, x, y, z: top(m, "addmv")(x, y, z, beta=beta, alpha=alpha), [i2, m23, v3]
        )
        compare_with_torch(
            lambda m, x, y, z: top(m, "addr")(x, y, z, beta=beta, alpha=alpha), [m23, v2, v3]
        )
        compare_with_torch(
            lambda m, x, y, z: top(m, "baddbmm")(x, y, z, beta=beta, alpha=alpha), [i3, b1, b2]
        )
        compare_with_torch(
            lambda m, x, y, z: top(m, "addbmm")(x, y, z, beta=beta, alpha=alpha), [i3, b1, b2]
        )
    nan_input = np.full((2, 2), np.nan)
    compare_with_torch(lambda m, x, y, z: top(m, "addbmm")(x, y, z, beta=0), [nan_input, b1, b2])
    compare_with_torch(lambda m, x: top(m, "trace")(x), [m23])
    compare_with_torch(lambda m, x: top(m, "trace")(x), [np.arange(9).reshape(3, 3)], grad=False)
    with pytest.raises(RuntimeError, match="expected a matrix"):
        top(ember, "trace")(ember.ones(3))


def test_geqrf_and_ormqr_match_torch():
    a, c, r = arrays_for([(2, 4, 3), (2, 4, 2), (2, 3, 4)], seed=12)
    compare_with_torch(lambda m, x: top(m, "geqrf")(x), [a], grad=False)
    for left, transpose, other in [(True, False, c), (True, True, c), (False, True, r)]:
        fn = lambda m, x, y: top(m, "ormqr")(*top(m, "geqrf")(x.detach()), y, left, transpose)
        compare_with_torch(fn, [a, other])
    householder = lambda m, x, t, y: top(m, "ormqr")(x, t, y, True, True)
    compare_with_torch(householder, [a, a[..., 0, :], c])
    check_gradients(householder, [a[0], a[0, 0, :], c[0]], gradgrad=False)
    with pytest.raises(RuntimeError, match="derivative for 'geqrf' is not implemented"):
        top(ember, "geqrf")(ember.ones(3, 2, requires_grad=True))[0].sum().backward()


def test_det_matches_torch_with_gradients():
    (a,) = arrays_for([(2, 3, 3)], seed=13)
    compare_with_torch(lambda m, x: m.linalg.det(x), [a])
    compare_with_torch(lambda m, x: m.linalg.det(x), [a], dtype=np.float32, atol=1e-5, rtol=1e-4)
    check_gradients(lambda m, x: m.linalg.det(x), [a[0]])
    # rank n-1: the gradient is the cofactor matrix, not zero
    singular = ember.tensor([[1.0, 2.0], [2.0, 4.0]], requires_grad=True)
    ember.linalg.det(singular).backward()
    np.testing.assert_allclose(singular.grad.numpy(), [[4.0, -2.0], [-2.0, 1.0]])


def test_cond_of_a_singular_matrix_is_infinite_like_torch():
    singular = np.stack([np.array([[1.0, 2.0], [2.0, 4.0]]), np.eye(2)])
    for p in ("fro", 1, float("inf")):
        compare_with_torch(lambda m, x: m.linalg.cond(x, p), [singular], grad=False)


def test_householder_product_without_reflectors_is_recorded_like_torch(torch_mod):
    for m in (ember, torch_mod):
        A = m.ones(3, 2, requires_grad=True)
        out = m.linalg.householder_product(A, m.zeros(0, requires_grad=True))
        assert out.requires_grad and out.tolist() == [[1.0, 0.0], [0.0, 1.0], [0.0, 0.0]]
        assert m.autograd.grad(out.sum(), A, allow_unused=True) == (None,)


def _fused_products(m):
    M, v = m.tensor([[1, 2], [3, 4]]), m.tensor([1, 2])
    return {
        "addmv": lambda **k: m.addmv(v, M, v, **k),
        "addbmm": lambda **k: m.addbmm(M, M[None], M[None], **k),
        "baddbmm": lambda **k: m.baddbmm(M[None], M[None], M[None], **k),
        "addmm": lambda **k: m.addmm(M, M, M, **k),
    }


@pytest.mark.parametrize("scalars", [{}, {"beta": 0.5}, {"alpha": 2.5}, {"beta": -1.7}])
def test_integer_fused_products_stay_integer_and_truncate_beta_alpha(torch_mod, scalars):
    ours, theirs = _fused_products(ember), _fused_products(torch_mod)
    for name in ours:
        e, t = ours[name](**scalars), theirs[name](**scalars)
        assert e.dtype == ember.int64 and e.tolist() == t.tolist(), name


def test_fused_products_refuse_mixed_dtypes_bool_and_float_scalars_like_torch(torch_mod):
    for m in (ember, torch_mod):
        M, v = m.tensor([[1, 2], [3, 4]]), m.tensor([1, 2])
        F = M.float()
        with pytest.raises(RuntimeError, match="addmv input tensors must have the same dtype"):
            m.addmv(v, F, v.float())
        with pytest.raises(RuntimeError, match="self and mat2 must have the same dtype, but got"):
            m.addbmm(F, M[None], M[None])
        with pytest.raises(RuntimeError, match="self and mat2 must have the same dtype"):
            m.addmm(M, F, F)
        with pytest.raises(RuntimeError, match="input float, batch1: long int, batch2: long int"):
            m.baddbmm(F[None], M[None], M[None])
        with pytest.raises(NotImplementedError, match="not implemented for 'Bool'"):
            m.addmm(M.bool(), M.bool(), M.bool())
        with pytest.raises(RuntimeError, match="argument beta must not be a floating point"):
            m.addr(M, v, v, beta=0.5)
        with pytest.raises(RuntimeError, match="Boolean beta only supported for Boolean results"):
            m.addr(M, v, v, beta=True)


# --- agreements found by the OpInfo conformance suite ---
def test_ormqr_without_reflectors_and_torch_argument_errors():
    other = ember.tensor(np.arange(10.0, dtype=np.float32).reshape(5, 2))
    out = ember.ormqr(ember.zeros(5, 0), ember.zeros(0), other)
    np.testing.assert_array_equal(out.numpy(), other.numpy())  # Q is the identity
    with pytest.raises(RuntimeError, match="input must have at least 2 dimensions"):
        ember.ormqr(ember.tensor(1.0), ember.tensor(1.0), ember.tensor(1.0))
    with pytest.raises(RuntimeError, match=r"tau.shape\[-1\] must be equal to min"):
        ember.ormqr(ember.zeros(5, 3), ember.zeros(2), ember.zeros(5, 2))


def test_vander_of_a_0d_tensor_is_one_row():
    np.testing.assert_array_equal(
        ember.linalg.vander(ember.tensor(3.0), N=3).numpy(), [[1.0, 3.0, 9.0]]
    )


def test_cross_does_not_broadcast_the_product_dim():
    with pytest.raises(RuntimeError, match="must have length 3. Got 3 and 1"):
        ember.linalg.cross(ember.ones(5, 3), ember.ones(5, 1))
    with pytest.raises(IndexError, match="Dimension out of range"):
        ember.linalg.cross(ember.ones(5, 3), ember.ones(5, 3), dim=2)


def test_ldl_factor_and_solve_of_empty_matrices():
    LD, pivots = ember.linalg.ldl_factor(ember.zeros(0, 0))
    assert LD.shape == (0, 0) and pivots.shape == (0,)
    assert ember.linalg.ldl_solve(LD, pivots, ember.zeros(0, 5)).shape == (0, 5)
