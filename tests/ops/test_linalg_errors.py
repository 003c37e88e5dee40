"""Bad input to ember.linalg raises PyTorch's exception type with PyTorch's message."""

import numpy as np
import pytest

import ember
from ember.ops import linalg_solvers


class _Ember:
    """ember, with the torch.* names the lead has not exported yet reached in their modules."""

    def __getattr__(self, name):
        if name == "cholesky_solve" and not hasattr(ember, name):
            return linalg_solvers.cholesky_solve
        return getattr(ember, name)


_Ember = _Ember()

CASES = {
    "cholesky_1d": lambda m: m.linalg.cholesky(m.ones(3)),
    "cholesky_ex_1d": lambda m: m.linalg.cholesky_ex(m.ones(3)),
    "cholesky_int": lambda m: m.linalg.cholesky(m.ones(2, 2, dtype=m.int64)),
    "svd_int": lambda m: m.linalg.svd(m.ones(2, 2, dtype=m.int64)),
    "qr_int": lambda m: m.linalg.qr(m.ones(2, 2, dtype=m.int64)),
    "eigvalsh_rect": lambda m: m.linalg.eigvalsh(m.ones(2, 3)),
    "solve_dtypes": lambda m: m.linalg.solve(m.eye(2), m.ones(2, 1, dtype=m.float64)),
    "lu_solve_dtypes": lambda m: m.linalg.lu_solve(
        m.eye(2), m.tensor([1, 2], dtype=m.int32), m.ones(2, 1, dtype=m.float64)
    ),
    "lstsq_dtypes": lambda m: m.linalg.lstsq(m.eye(2), m.ones(2, 1, dtype=m.float64)),
    "pinv_int": lambda m: m.linalg.pinv(m.ones(2, 2, dtype=m.int64)),
    "pinv_1d": lambda m: m.linalg.pinv(m.ones(2)),
    "householder_tau": lambda m: m.linalg.householder_product(m.ones(3, 2), m.ones(3)),
    "vecdot_dtypes": lambda m: m.linalg.vecdot(m.ones(3), m.ones(3, dtype=m.float64)),
    "vecdot_int": lambda m: m.linalg.vecdot(m.ones(3, dtype=m.int32), m.ones(3, dtype=m.int32)),
    "cross_ndim": lambda m: m.linalg.cross(m.ones(3), m.ones(2, 3)),
    "tensorsolve_shape": lambda m: m.linalg.tensorsolve(m.ones(2, 3), m.ones(2)),
    "matrix_rank_1d": lambda m: m.linalg.matrix_rank(m.ones(3)),
    "lu_factor_1d": lambda m: m.linalg.lu_factor(m.ones(3)),
    "matrix_power_rect": lambda m: m.linalg.matrix_power(m.ones(2, 3), 2),
    "inv_singular": lambda m: m.linalg.inv(m.zeros(2, 2)),
    "inv_batch_singular": lambda m: m.linalg.inv(m.stack([m.eye(2), m.zeros(2, 2)])),
    "solve_singular": lambda m: m.linalg.solve(m.zeros(2, 2), m.ones(2)),
    "lu_factor_singular": lambda m: m.linalg.lu_factor(m.zeros(2, 2)),
    "cholesky_not_pd": lambda m: m.linalg.cholesky(-m.eye(3)),
    "qr_mode": lambda m: m.linalg.qr(m.eye(2), mode="x"),
    "svd_1d": lambda m: m.linalg.svd(m.ones(3)),
    "solve_triangular_right_shapes": lambda m: m.linalg.solve_triangular(
        m.eye(3), m.ones(3, 2), upper=True, left=False
    ),
    "solve_triangular_rect": lambda m: m.linalg.solve_triangular(
        m.ones(2, 3), m.ones(2, 1), upper=True
    ),
    "cholesky_solve_dtypes": lambda m: m.cholesky_solve(m.ones(2, 1, dtype=m.float64), m.eye(2)),
    "lu_solve_shapes": lambda m: m.linalg.lu_solve(
        m.eye(2), m.tensor([1, 2], dtype=m.int32), m.ones(3, 1)
    ),
    "matrix_exp_rect": lambda m: m.linalg.matrix_exp(m.ones(2, 3)),
    "multi_dot_one": lambda m: m.linalg.multi_dot([m.eye(2)]),
    "householder_rect": lambda m: m.linalg.householder_product(m.ones(2, 3), m.ones(2)),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_error_type_and_message_match_torch(case, torch_mod):
    fn = CASES[case]
    with pytest.raises(Exception) as want:
        fn(torch_mod)
    with pytest.raises(Exception) as got:
        fn(_Ember)
    assert str(got.value) == str(want.value)
    assert isinstance(got.value, RuntimeError) == isinstance(want.value, RuntimeError)
    if isinstance(want.value, torch_mod.linalg.LinAlgError):
        assert isinstance(got.value, ember.linalg.LinAlgError)


def test_no_grad_and_saved_output_versions():
    a = ember.tensor(np.random.default_rng(0).standard_normal((3, 3)), requires_grad=True)
    with ember.no_grad():
        U, S, Vh = ember.linalg.svd(a)
    assert U.grad_fn is None and not S.requires_grad
    U, S, Vh = ember.linalg.svd(a, full_matrices=False)
    assert U.grad_fn is S.grad_fn and S.grad_fn.name() == "LinalgSvdBackward0"
    loss = (U @ Vh).sum() + S.sum()
    S.mul_(2)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        loss.backward()


def test_backward_twice_through_a_decomposition_needs_retain_graph():
    a = ember.tensor(np.eye(3) * 2, requires_grad=True)
    w, v = ember.linalg.eigh(a)
    loss = w.sum()
    loss.backward()
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        loss.backward()
    np.testing.assert_allclose(a.grad.numpy(), np.eye(3))


def test_half_precision_is_refused_except_by_matrix_exp():
    with pytest.raises(RuntimeError, match="Low precision dtypes not supported. Got Half"):
        ember.linalg.inv(ember.eye(2, dtype=ember.float16))
    with pytest.raises(RuntimeError, match="Got BFloat16"):
        ember.linalg.svd(ember.eye(2, dtype=ember.bfloat16))
    # (PyTorch 2.13's CPU half matrix_exp returns -20896 here; e is the answer)
    got = ember.linalg.matrix_exp(ember.eye(2, dtype=ember.float16))
    assert got.dtype == ember.float16
    np.testing.assert_allclose(got.float().numpy(), np.e * np.eye(2), rtol=1e-3)


SVD_OF_NON_FINITE = {
    "svd": lambda m, a: m.linalg.svd(a),
    "svdvals": lambda m, a: m.linalg.svdvals(a),
    "pinv": lambda m, a: m.linalg.pinv(a),
    "torch.svd": lambda m, a: m.svd(a),
    "matrix_rank": lambda m, a: m.linalg.matrix_rank(a),
    "matrix_norm_2": lambda m, a: m.linalg.matrix_norm(a, 2),
    "cond": lambda m, a: m.linalg.cond(a),
}


@pytest.mark.parametrize("name", sorted(SVD_OF_NON_FINITE))
def test_svd_of_a_nan_raises_torchs_linalg_error(torch_mod, name):
    message = (
        r"linalg.svd: \(Batch element 1\): The algorithm failed to converge because the "
        "input matrix contained non-finite values"
    )
    for m in (ember, torch_mod):
        a = m.ones(3, 2, 2)
        a[1, 0, 0] = float("nan")
        with pytest.raises(m.linalg.LinAlgError, match=message):
            SVD_OF_NON_FINITE[name](m, a)
        with pytest.raises(RuntimeError, match="contained non-finite values"):
            SVD_OF_NON_FINITE[name](m, a[1])
        a[1, 0, 0] = float("inf")  # LAPACK returns NaN singular values: no error, as torch
        assert bool(m.linalg.svdvals(a)[1].isnan().all())
