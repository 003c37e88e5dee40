import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ember
from tests.helpers import arrays_for, check_gradients, compare_with_torch

MATMUL_SHAPES = [
    ((3,), (3,)),
    ((2, 3), (3,)),
    ((3,), (3, 4)),
    ((2, 3), (3, 4)),
    ((5, 2, 3), (3, 4)),
    ((2, 3), (5, 3, 4)),
    ((5, 2, 3), (5, 3, 4)),
    ((2, 1, 2, 3), (5, 3, 2)),
    ((3,), (2, 3, 4)),
    ((2, 2, 3), (3,)),
    ((0, 3), (3, 2)),
    ((2, 0), (0, 3)),
]


@pytest.mark.parametrize("shapes", MATMUL_SHAPES, ids=str)
def test_matmul_every_broadcasting_case(shapes):
    a, b = arrays_for(shapes, -1, 1)
    fn = lambda m, x, y: m.matmul(x, y)
    check_gradients(fn, [a, b])
    compare_with_torch(fn, [a, b])
    compare_with_torch(lambda m, x, y: x @ y, [a, b])


@given(n=st.integers(1, 3), k=st.integers(1, 3), m_=st.integers(1, 3), batch=st.integers(0, 2))
@settings(max_examples=10, deadline=None)
def test_matmul_gradcheck_over_shapes(n, k, m_, batch):
    lead = (2,) * batch
    a, b = arrays_for([lead + (n, k), (k, m_)], -1, 1)
    check_gradients(lambda m, x, y: x @ y, [a, b])


def test_mm_bmm_mv_dot_outer_and_friends():
    a, b, v, w, batch_a, batch_b = arrays_for(
        [(2, 3), (3, 4), (3,), (3,), (2, 2, 3), (2, 3, 2)], -1, 1
    )
    cases = [
        (lambda m, x, y: m.mm(x, y), [a, b]),
        (lambda m, x, y: x.mv(y), [a, v]),
        (lambda m, x, y: m.dot(x, y), [v, w]),
        (lambda m, x, y: m.outer(x, y), [v, w]),
        (lambda m, x, y: m.bmm(x, y), [batch_a, batch_b]),
        (lambda m, x, y: m.tensordot(x, y, 1), [a, b]),
        (lambda m, x, y: m.tensordot(x, y, ([1, 2], [2, 1])), [batch_a, batch_b]),
        (lambda m, x, y: m.addmm(x[:, :1], x, y, beta=0.5, alpha=2), [a, b]),
    ]
    for fn, arrays in cases:
        check_gradients(fn, arrays)
        compare_with_torch(fn, arrays)


EINSUMS = [
    ("ij,jk->ik", [(2, 3), (3, 4)]),
    ("ij->", [(2, 3)]),
    ("ij->j", [(2, 3)]),
    ("i,i->", [(3,), (3,)]),
    ("i,j->ij", [(2,), (3,)]),
    ("bij,bjk->bik", [(2, 2, 3), (2, 3, 2)]),
    ("ii->i", [(3, 3)]),
    ("ii->", [(3, 3)]),
    ("ij,ij->ij", [(2, 3), (2, 3)]),
    ("...ij,...jk->...ik", [(2, 2, 3), (3, 2)]),
    ("ij,jk,kl->il", [(2, 3), (3, 2), (2, 2)]),
    ("ijk->kji", [(2, 3, 2)]),
    ("ij,jk", [(2, 3), (3, 2)]),
    ("iij->j", [(2, 2, 3)]),
    ("ab,b->a", [(2, 3), (3,)]),
    ("i,ij->j", [(2,), (2, 3)]),
]


@pytest.mark.parametrize("equation,shapes", EINSUMS, ids=[e for e, _ in EINSUMS])
def test_einsum(equation, shapes):
    arrays = arrays_for(shapes, -1, 1)
    fn = lambda m, *xs: m.einsum(equation, *xs)
    check_gradients(fn, arrays)
    compare_with_torch(fn, arrays)


def test_inv_det_solve():
    rng = np.random.default_rng(3)
    A = rng.standard_normal((3, 3)) + 3 * np.eye(3)
    batch = rng.standard_normal((2, 3, 3)) + 3 * np.eye(3)
    B, vec = rng.standard_normal((3, 2)), rng.standard_normal((3,))
    cases = [
        (lambda m, a: m.linalg.inv(a), [A]),
        (lambda m, a: m.linalg.inv(a), [batch]),
        (lambda m, a: m.linalg.det(a), [A]),
        (lambda m, a: m.det(a), [batch]),
        (lambda m, a, b: m.linalg.solve(a, b), [A, B]),
        (lambda m, a, b: m.linalg.solve(a, b), [A, vec]),
        (lambda m, a, b: m.linalg.solve(a, b), [batch, B]),
        (lambda m, a: a.inverse(), [A]),
    ]
    for fn, arrays in cases:
        check_gradients(fn, arrays)
        compare_with_torch(fn, arrays)


def test_det_of_singular_matrix_has_cofactor_gradient():
    A = np.array([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [0.5, -1.0, 2.0]])
    # PyTorch 2.13 returns a zero gradient here; the true one is the cofactor matrix, which
    # finite differences confirm
    compare_with_torch(lambda m, a: m.linalg.det(a), [A], grad=False)
    check_gradients(lambda m, a: m.linalg.det(a), [A], gradgrad=False)
    x = ember.tensor(A, requires_grad=True)
    ember.linalg.det(x).backward()
    np.testing.assert_allclose(x.grad.numpy(), [[14, -1, -4], [-7, 0.5, 2], [0, 0, 0]])


def test_matrix_and_vector_norms_match_torch():
    A = arrays_for([(3, 4)], -2, 2, avoid=(0,))[0]
    for ord_ in ("fro", "nuc", 2, -2, 1, -1, float("inf"), float("-inf")):
        fn = lambda m, a: m.linalg.matrix_norm(a, ord_)
        compare_with_torch(fn, [A])
        check_gradients(fn, [A], gradgrad=ord_ not in ("nuc", 2, -2))
    for fn in (
        lambda m, a: m.linalg.norm(a),
        lambda m, a: m.linalg.norm(a, dim=1),
        lambda m, a: m.linalg.norm(a, 1),
        lambda m, a: m.linalg.norm(a[0], 3),
        lambda m, a: m.linalg.norm(a, "fro", dim=(0, 1), keepdim=True),
    ):
        compare_with_torch(fn, [A])
        check_gradients(fn, [A])


def test_linalg_errors_name_shapes():
    with pytest.raises(RuntimeError, match="cannot be multiplied \\(2x3 and 4x5\\)"):
        ember.ones(2, 3).mm(ember.ones(4, 5))
    with pytest.raises(RuntimeError, match=r"shapes \(2, 3\) and \(4,\) cannot be multiplied"):
        ember.ones(2, 3) @ ember.ones(4)
    with pytest.raises(RuntimeError, match="both arguments to matmul need to be at least 1D"):
        ember.ones(()) @ ember.ones(3)
    with pytest.raises(RuntimeError, match="1D tensors expected"):
        ember.ones(2, 2).dot(ember.ones(2))
    with pytest.raises(RuntimeError, match="expected m1 and m2 to have the same dtype"):
        ember.ones(2, 2) @ ember.ones(2, 2, dtype=ember.float64)
    with pytest.raises(RuntimeError, match="singular"):
        ember.linalg.inv(ember.zeros(2, 2))
    with pytest.raises(RuntimeError, match="must be batches of square matrices"):
        ember.linalg.det(ember.ones(2, 3))


def test_integer_matmul_matches_torch(torch_mod):
    a = np.arange(6).reshape(2, 3)
    compare_with_torch(lambda m, x: x @ x.T, [a], grad=False, dtype=np.int64)


@pytest.mark.parametrize("x_shape", [(3, 5), (2, 3, 5), (5,)])
@pytest.mark.parametrize("with_bias", [True, False])
def test_linear_op_gradcheck_torch_and_layouts(x_shape, with_bias):
    x, w, b = arrays_for([x_shape, (4, 5), (4,)], -1, 1)
    fn = lambda m, x, w, b: m.nn.functional.linear(x, w, b if with_bias else None)
    check_gradients(fn, [x, w, b])
    compare_with_torch(fn, [x, w, b])
    we = ember.tensor(w, requires_grad=True)
    out = ember.nn.functional.linear(ember.tensor(x), we, ember.tensor(b) if with_bias else None)
    out.sum().backward()
    assert we.grad.is_contiguous()  # the optimizer then walks it in order
    if len(x_shape) == 2:
        assert out.grad_fn.name() == ("AddmmBackward0" if with_bias else "MmBackward0")


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_precision_products_keep_their_dtype_and_match_float32(dtype):
    d = getattr(ember, dtype)
    a, b = ember.randn(33, 17), ember.randn(17, 9)
    expected = (a @ b).numpy()
    for out in (a.to(d) @ b.to(d), ember.nn.functional.linear(a.to(d), b.t().to(d))):
        assert out.dtype == d
        np.testing.assert_allclose(out.float().numpy(), expected, rtol=0.05, atol=0.1)


def test_linear_with_zero_features_has_gradients_like_torch(torch_mod):
    compare_with_torch(
        lambda m, x, w, b: m.nn.functional.linear(x, w, b),
        [np.zeros((2, 0)), np.zeros((3, 0)), np.ones(3)],
    )


@pytest.mark.parametrize(
    "equation,shapes",
    [
        ("bhqd,bhkd->bhqk", [(2, 3, 40, 16), (2, 3, 30, 16)]),
        ("bi,oij,bj->bo", [(64, 32), (16, 32, 32), (64, 32)]),
        ("ijk,ikl->jl", [(20, 30, 40), (20, 40, 10)]),
        ("ii->i", [(80, 80)]),
    ],
)
def test_einsum_of_larger_operands_is_planned_and_matches_torch(equation, shapes):
    """Past EINSUM_PLAN_MIN_ELEMENTS the contraction runs pairwise (through BLAS where it can);
    values and gradients as torch's."""
    from ember.ops.linalg import EINSUM_PLAN_MIN_ELEMENTS

    assert sum(np.prod(s) for s in shapes) >= EINSUM_PLAN_MIN_ELEMENTS
    rng = np.random.default_rng(len(equation))
    arrays = [rng.standard_normal(s) for s in shapes]
    ts = [ember.tensor(a, requires_grad=True) for a in arrays]
    out = ember.einsum(equation, *ts)
    weights = rng.standard_normal(tuple(out.shape))
    (out * ember.tensor(weights)).sum().backward()
    torch = pytest.importorskip("torch")
    tt = [torch.tensor(a, requires_grad=True) for a in arrays]
    want = torch.einsum(equation, *tt)
    (want * torch.tensor(weights)).sum().backward()
    np.testing.assert_allclose(out.detach().numpy(), want.detach().numpy(), rtol=1e-12, atol=1e-12)
    for t, w in zip(ts, tt):
        np.testing.assert_allclose(t.grad.numpy(), w.grad.numpy(), rtol=1e-12, atol=1e-12)


def test_beta_zero_ignores_nan_and_inf_in_the_added_input(torch_mod):
    bad = np.array([[np.nan, np.inf], [1.0, 2.0]])
    eye = np.eye(2)
    for fn in (
        lambda m, i, a, b: m.addmm(i, a, b, beta=0),
        lambda m, i, a, b: m.addmm(i, a, b, beta=0, alpha=2.0),
        lambda m, i, a, b: i.addmm(a, b, beta=0),
        lambda m, i, a, b: m.addbmm(i, a[None], b[None], beta=0),
        lambda m, i, a, b: m.baddbmm(i[None], a[None], b[None], beta=0),
        lambda m, i, a, b: m.addmv(i[0], a, b[0], beta=0),
    ):
        compare_with_torch(fn, [bad, eye, eye])
    out = ember.tensor(bad).addmm_(ember.tensor(eye), ember.tensor(eye), beta=0)
    assert out.tolist() == [[1.0, 0.0], [0.0, 1.0]]


# --- agreements found by the OpInfo conformance suite (values written out, no torch needed) ---
def test_vdot_conjugates_the_first_vector():
    a = ember.tensor([1 + 2j, 3 - 1j])
    b = ember.tensor([2 - 1j, 1j])
    expected = np.vdot(a.numpy(), b.numpy())
    assert complex(ember.vdot(a, b).item()) == pytest.approx(expected)
    assert complex(ember.dot(a, b).item()) == pytest.approx(np.dot(a.numpy(), b.numpy()))


def test_dot_checks_dtypes_before_sizes():
    with pytest.raises(RuntimeError, match="dot : expected both vectors to have same dtype"):
        ember.dot(ember.zeros(1), ember.zeros(3, dtype=ember.float64))


def test_tensordot_broadcasts_a_size_one_contracted_dim():
    a = ember.tensor(np.arange(3.0).reshape(1, 1, 3))
    b = ember.tensor(np.arange(12.0).reshape(2, 3, 2))
    out = ember.tensordot(a, b, dims=([0, 2], [2, 1]))  # a's size-1 dim 0 meets b's dim 2
    expected = np.einsum("ijk,lkm->jl", a.numpy(), b.numpy().sum(2, keepdims=True))
    np.testing.assert_allclose(out.numpy(), expected)


def test_einsum_of_one_integer_operand_summed_is_int64_and_half_types_work():
    x = ember.tensor([[1, 2], [3, 4]], dtype=ember.int8)
    assert ember.einsum("ij->i", x).dtype == ember.int64
    assert ember.einsum("ij->ji", x).dtype == ember.int8
    h = ember.ones(2, 3, dtype=ember.bfloat16)
    out = ember.einsum("ij,kj->ik", h, h)
    assert out.dtype == ember.bfloat16
    np.testing.assert_array_equal(out.float().numpy(), np.full((2, 2), 3.0))


def test_norms_of_complex_input_are_real_and_half_norms_do_not_overflow():
    z = ember.tensor([[3 + 4j, 0j]])
    assert ember.linalg.vector_norm(z).dtype == ember.float32
    assert ember.linalg.vector_norm(z).item() == pytest.approx(5.0)
    big = ember.full((100,), 300.0, dtype=ember.float16)  # 300² overflows float16
    assert ember.linalg.vector_norm(big).item() == pytest.approx(3000.0, rel=1e-3)


def test_matrix_norm_of_empty_matrices_and_half_types():
    assert ember.linalg.matrix_norm(ember.ones(0, 0), float("inf")).item() == 0.0
    assert ember.linalg.matrix_norm(ember.ones(5, 0), 1, keepdim=True).shape == (1, 1)
    h = ember.tensor([[1.0, -2.0], [3.0, 4.0]], dtype=ember.float16)
    assert ember.linalg.matrix_norm(h, 1).item() == 6.0
    with pytest.raises(RuntimeError, match="Low precision dtypes not supported"):
        ember.linalg.matrix_norm(h, "nuc")


def test_mH_of_a_batch_conjugates():
    z = ember.tensor(np.arange(8.0).reshape(2, 2, 2) * (1 + 1j))
    np.testing.assert_array_equal(z.mH.numpy(), np.swapaxes(z.numpy(), -1, -2).conj())
