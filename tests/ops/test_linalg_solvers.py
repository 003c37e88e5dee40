"""ember.linalg solvers: solve_triangular, cholesky_solve/inverse, lu_solve, inv(_ex),
solve(_ex), pinv, lstsq, tensorinv and tensorsolve against PyTorch, with float64 gradcheck."""

import numpy as np
import pytest

import ember
from ember.ops import linalg_solvers as sol
from tests.helpers import arrays_for, check_gradients, compare_with_torch

# torch.* names the lead exports from ember's top level; until then the tests reach them here
LEGACY = {
    "cholesky_solve": sol.cholesky_solve,
    "cholesky_inverse": sol.cholesky_inverse,
    "triangular_solve": sol.triangular_solve,
    "pinverse": sol.pinverse,
}


def top(m, name):
    return getattr(m, name) if m is not ember or hasattr(ember, name) else LEGACY[name]


def well_conditioned(m, x):
    """x plus a multiple of the identity: far from singular for the test's random data."""
    n = x.shape[-1]
    return x + 3 * m.eye(n, dtype=x.dtype)


# --------------------------------------------------------------------------------------------
# triangular solves
# --------------------------------------------------------------------------------------------
TRIANGULAR = [
    ((3, 3), (3, 2)),
    ((2, 3, 3), (3, 1)),
    ((3, 3), (2, 3, 2)),
    ((0, 2, 2), (2, 1)),
    ((2, 2), (2, 0)),
]


@pytest.mark.parametrize("shapes", TRIANGULAR, ids=str)
@pytest.mark.parametrize("upper", [False, True])
def test_solve_triangular_left_matches_torch(shapes, upper):
    a, b = arrays_for(shapes, seed=1)
    fn = lambda m, x, y: m.linalg.solve_triangular(well_conditioned(m, x), y, upper=upper)
    compare_with_torch(fn, [a, b])
    compare_with_torch(fn, [a, b], dtype=np.float32, atol=1e-5, rtol=1e-4)
    check_gradients(fn, [a, b], gradgrad=shapes == TRIANGULAR[0])


@pytest.mark.parametrize("upper", [False, True])
def test_solve_triangular_right_and_unitriangular(upper):
    a, b = arrays_for([(3, 3), (2, 3)], seed=2)
    fn = lambda m, x, y: m.linalg.solve_triangular(
        well_conditioned(m, x), y, upper=upper, left=False, unitriangular=True
    )
    compare_with_torch(fn, [a, b])
    check_gradients(fn, [a, b], noncontiguous=True)


def test_solve_triangular_singular_gives_inf_like_torch(torch_mod):
    A = np.array([[0.0, 1.0], [0.0, 0.0]])
    B = np.ones((2, 1))
    got = ember.linalg.solve_triangular(ember.tensor(A), ember.tensor(B), upper=True)
    want = torch_mod.linalg.solve_triangular(torch_mod.tensor(A), torch_mod.tensor(B), upper=True)
    np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_solve_triangular_errors(torch_mod):
    for A, B in [(np.eye(2), np.ones(2)), (np.eye(2), np.ones((3, 1)))]:
        with pytest.raises(RuntimeError) as got:
            ember.linalg.solve_triangular(ember.tensor(A), ember.tensor(B), upper=True)
        with pytest.raises(RuntimeError) as want:
            torch_mod.linalg.solve_triangular(torch_mod.tensor(A), torch_mod.tensor(B), upper=True)
        assert str(got.value) == str(want.value)
    with pytest.raises(TypeError):
        ember.linalg.solve_triangular(ember.eye(2), ember.ones(2, 1))


def test_solve_triangular_computes_in_the_dtype_of_a(torch_mod):
    for a_dtype, b_dtype in [("float32", "float64"), ("float64", "float32")]:
        got = ember.linalg.solve_triangular(
            ember.eye(2, dtype=getattr(ember, a_dtype)),
            ember.ones(2, 1, dtype=getattr(ember, b_dtype)),
            upper=True,
        )
        want = torch_mod.linalg.solve_triangular(
            torch_mod.eye(2, dtype=getattr(torch_mod, a_dtype)),
            torch_mod.ones(2, 1, dtype=getattr(torch_mod, b_dtype)),
            upper=True,
        )
        assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1] == a_dtype


@pytest.mark.filterwarnings("ignore:torch.triangular_solve is deprecated")
def test_legacy_triangular_solve_matches_torch():
    a, b = arrays_for([(3, 3), (3, 2)], seed=3)
    for upper, transpose, unit in [(True, False, False), (False, True, False), (True, True, True)]:
        fn = lambda m, x, y: top(m, "triangular_solve")(
            y, well_conditioned(m, x), upper, transpose, unit
        )
        compare_with_torch(fn, [a, b])


# --------------------------------------------------------------------------------------------
# Cholesky- and LU-based solves
# --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("upper", [False, True])
def test_cholesky_solve_and_inverse_match_torch(upper):
    a, b = arrays_for([(2, 3, 3), (2, 3, 2)], seed=4)

    def factor(m, x):
        n = x.shape[-1]
        return m.linalg.cholesky(x @ x.mT + n * m.eye(n, dtype=x.dtype), upper=upper)

    solve = lambda m, x, y: top(m, "cholesky_solve")(y, factor(m, x), upper)
    inverse = lambda m, x: top(m, "cholesky_inverse")(factor(m, x), upper)
    compare_with_torch(solve, [a, b])
    compare_with_torch(inverse, [a])
    check_gradients(solve, [a, b], gradgrad=False)
    check_gradients(inverse, [a[0]])


@pytest.mark.parametrize("left", [True, False])
@pytest.mark.parametrize("adjoint", [False, True])
def test_lu_solve_matches_torch(left, adjoint):
    a, b = arrays_for([(2, 3, 3), (2, 3, 3)], seed=5)

    def fn(m, x, y):
        LU, piv = m.linalg.lu_factor(x)
        return m.linalg.lu_solve(LU, piv, y, left=left, adjoint=adjoint)

    compare_with_torch(fn, [a, b])
    check_gradients(fn, [a[0], b[0]], gradgrad=False)  # lu_factor's own tests cover gradgrad


# --------------------------------------------------------------------------------------------
# inverse and solve with info
# --------------------------------------------------------------------------------------------
def test_inv_ex_and_solve_ex_match_torch():
    a, b, v = arrays_for([(2, 3, 3), (2, 3, 2), (2, 3)], seed=6)
    compare_with_torch(lambda m, x: m.linalg.inv_ex(x), [a])
    compare_with_torch(lambda m, x: m.linalg.inv(x), [a], dtype=np.float32, atol=1e-5, rtol=1e-4)
    compare_with_torch(lambda m, x, y: m.linalg.solve_ex(x, y), [a, b])
    compare_with_torch(lambda m, x, y: m.linalg.solve_ex(x, y), [a, v])
    compare_with_torch(lambda m, x, y: m.linalg.solve_ex(x, y.mT, left=False), [a, b])
    check_gradients(lambda m, x: m.linalg.inv_ex(x)[0], [a], noncontiguous=True)
    check_gradients(lambda m, x, y: m.linalg.solve_ex(x, y)[0], [a, b], gradgrad=False)


def test_singular_inverse_and_solve_report_info_or_raise_like_torch(torch_mod):
    batch = np.stack([np.eye(2), np.array([[1.0, 2.0], [2.0, 4.0]])])
    _, info = ember.linalg.inv_ex(ember.tensor(batch))
    _, t_info = torch_mod.linalg.inv_ex(torch_mod.tensor(batch))
    np.testing.assert_array_equal(info.numpy(), t_info.numpy())
    assert info.dtype == ember.int32
    _, info = ember.linalg.solve_ex(ember.tensor(batch), ember.ones(2, 2, 1, dtype=ember.float64))
    np.testing.assert_array_equal(info.numpy(), [0, 2])
    for name, args in [("inv", ()), ("solve", (np.ones((2, 2, 1)),))]:
        with pytest.raises(ember.linalg.LinAlgError) as got:
            getattr(ember.linalg, name)(ember.tensor(batch), *map(ember.tensor, args))
        with pytest.raises(torch_mod.linalg.LinAlgError) as want:
            getattr(torch_mod.linalg, name)(torch_mod.tensor(batch), *map(torch_mod.tensor, args))
        assert str(got.value) == str(want.value)


# --------------------------------------------------------------------------------------------
# pinv and lstsq
# --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("shape", [(3, 2), (2, 3), (2, 3, 3), (0, 2, 3)], ids=str)
def test_pinv_matches_torch_and_gradchecks(shape):
    (a,) = arrays_for([shape], seed=7)
    compare_with_torch(lambda m, x: m.linalg.pinv(x), [a])
    compare_with_torch(lambda m, x: m.linalg.pinv(x), [a], dtype=np.float32, atol=1e-5, rtol=1e-4)
    check_gradients(lambda m, x: m.linalg.pinv(x), [a], gradgrad=shape == (3, 2))


def test_pinv_hermitian_tolerances_and_pinverse():
    (a,) = arrays_for([(3, 3)], seed=8)
    sym = lambda m, x: x + x.mT
    compare_with_torch(lambda m, x: m.linalg.pinv(sym(m, x), hermitian=True), [a])
    # a rank-1 matrix: the cutoffs decide which singular values count
    low_rank = np.outer([1.0, 2.0, 3.0], [1.0, 0.5, 0.25]) + np.diag([1e-3, 0, 0])
    for kwargs in [{}, {"atol": 0.01}, {"rtol": 1e-2}, {"atol": 1e-6, "rtol": 0.5}]:
        compare_with_torch(lambda m, x: m.linalg.pinv(x, **kwargs), [low_rank], grad=False)
    compare_with_torch(lambda m, x: top(m, "pinverse")(x, 1e-2), [low_rank], grad=False)
    compare_with_torch(lambda m, x: m.linalg.pinv(x, rcond=1e-2), [low_rank], grad=False)
    compare_with_torch(lambda m, x: m.linalg.pinv(x @ x.mT, hermitian=True), [a])


@pytest.mark.parametrize("driver", [None, "gels", "gelsy", "gelsd", "gelss"])
def test_lstsq_matches_torch_per_driver(driver):
    a, b, v = arrays_for([(2, 5, 3), (2, 5, 2), (2, 5)], seed=9)
    fn = lambda m, x, y: m.linalg.lstsq(x, y, driver=driver)
    compare_with_torch(fn, [a, b])
    compare_with_torch(fn, [a, v])
    if driver in (None, "gelsd"):
        wide = lambda m, x, y: m.linalg.lstsq(x.mT, y[..., :3, :], driver=driver)
        compare_with_torch(wide, [a, b])
        check_gradients(lambda m, x, y: fn(m, x, y).solution, [a[0], b[0]], gradgrad=False)


def test_lstsq_errors():
    with pytest.raises(RuntimeError, match="driver"):
        ember.linalg.lstsq(ember.randn(3, 2), ember.randn(3, 1), driver="nope")
    with pytest.raises(RuntimeError, match="should match"):
        ember.linalg.lstsq(ember.randn(3, 2), ember.randn(4, 1))


# --------------------------------------------------------------------------------------------
# tensorinv and tensorsolve
# --------------------------------------------------------------------------------------------
def test_tensorinv_and_tensorsolve_match_torch():
    a, b = arrays_for([(4, 2, 2, 4), (4, 2)], seed=10)
    a = a + np.eye(8).reshape(4, 2, 2, 4) * 3
    compare_with_torch(lambda m, x: m.linalg.tensorinv(x, ind=1), [a.reshape(8, 2, 4)])
    compare_with_torch(lambda m, x: m.linalg.tensorinv(x, ind=2), [a])
    compare_with_torch(lambda m, x, y: m.linalg.tensorsolve(x, y), [a, b])
    moved = np.ascontiguousarray(np.moveaxis(a, 2, 0))  # (2, 4, 2, 4): dims=(0,) puts it back
    compare_with_torch(lambda m, x, y: m.linalg.tensorsolve(x, y, dims=(0,)), [moved, b])
    check_gradients(lambda m, x: m.linalg.tensorinv(x, ind=2), [a], gradgrad=False)
    with pytest.raises(RuntimeError, match="prod"):
        ember.linalg.tensorinv(ember.randn(2, 3), ind=1)


@pytest.mark.filterwarnings("ignore:.*deprecated")
def test_legacy_lu_and_lu_solve_match_torch():
    from ember.ops import linalg_decompositions as dec

    names = {"lu": dec.lu_legacy, "lu_solve": sol.lu_solve_legacy}
    pick = lambda m, n: getattr(m, n) if m is not ember or hasattr(ember, n) else names[n]
    a, b = arrays_for([(2, 3, 3), (2, 3, 2)], seed=12)
    compare_with_torch(lambda m, x: pick(m, "lu")(x, get_infos=True), [a])
    compare_with_torch(lambda m, x, y: pick(m, "lu_solve")(y, *pick(m, "lu")(x)), [a, b])


def test_ldl_factor_and_solve_match_torch(torch_mod):
    a, b = arrays_for([(2, 4, 4), (2, 4, 2)], seed=13)
    sym = lambda m, x: x + x.mT
    compare_with_torch(lambda m, x: m.linalg.ldl_factor(sym(m, x)), [a], grad=False)
    compare_with_torch(lambda m, x: m.linalg.ldl_factor_ex(sym(m, x)), [a], grad=False)
    solve = lambda m, x, y: m.linalg.ldl_solve(*m.linalg.ldl_factor(sym(m, x)), y)
    compare_with_torch(solve, [a, b], grad=False)
    X = solve(ember, ember.tensor(a), ember.tensor(b))
    np.testing.assert_allclose((ember.tensor(a + a.swapaxes(-1, -2)) @ X).numpy(), b, atol=1e-10)
    _, _, info = ember.linalg.ldl_factor_ex(ember.zeros(2, 2))
    assert info.item() == 1
    with pytest.raises(ember.linalg.LinAlgError, match="D\\[1,1\\] is exactly zero"):
        ember.linalg.ldl_factor(ember.zeros(2, 2))
    with pytest.raises(RuntimeError, match="not implemented"):
        ember.linalg.ldl_factor(ember.eye(2, requires_grad=True))[0].sum().backward()
