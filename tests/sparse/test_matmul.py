"""Sparse @ dense products against PyTorch: ember.mm / matmul / @ (dense gradient of the
sparse operand, MmBackward0) and ember.sparse.mm / addmm (sparse gradient on its pattern)."""

import numpy as np
import pytest

import ember

from .helpers import INDICES, VALUES, assert_same, pair, raises_like, same_repr

DENSE = np.array([[1.0, -2.0], [0.5, 3.0], [-1.0, 4.0]], dtype=np.float32)


def _dense(m):
    return m.tensor(DENSE, requires_grad=True)


@pytest.mark.parametrize(
    "op",
    [
        lambda m, s, d: m.mm(s, d),
        lambda m, s, d: m.matmul(s, d),
        lambda m, s, d: s @ d,
        lambda m, s, d: s.mm(d),
        lambda m, s, d: m.spmm(s, d),
        lambda m, s, d: d.t() @ s.t(),
        lambda m, s, d: m.mm(d.t(), s.t()),
        lambda m, s, d: s @ d[:, 0],
    ],
)
def test_dense_matmul_with_a_sparse_operand_matches_torch(torch_sparse, op):
    e, t = pair(torch_sparse, requires_grad=True)
    d, td = _dense(ember), _dense(torch_sparse)
    ey, ty = op(ember, e, d), op(torch_sparse, t, td)
    assert_same(ey, ty, atol=1e-5)
    assert ey.grad_fn.name() == ty.grad_fn.name()
    (ey**2).sum().backward()
    (ty**2).sum().backward()
    assert e.grad.is_sparse == t.grad.is_sparse
    assert_same(e.grad, t.grad, atol=1e-5)
    np.testing.assert_allclose(d.grad.numpy(), td.grad.numpy(), atol=1e-5)


def test_sparse_mm_gives_a_sparse_gradient_on_the_pattern(torch_sparse):
    e, t = pair(torch_sparse, requires_grad=True)
    d, td = _dense(ember), _dense(torch_sparse)
    ey, ty = ember.sparse.mm(e, d), torch_sparse.sparse.mm(t, td)
    assert_same(ey, ty, atol=1e-5)
    assert ey.grad_fn.name() == ty.grad_fn.name() == "SparseAddmmBackward0"
    (ey**2).sum().backward()
    (ty**2).sum().backward()
    same_repr(e.grad, t.grad)
    np.testing.assert_allclose(d.grad.numpy(), td.grad.numpy(), atol=1e-5)


def test_sparse_addmm_with_beta_and_alpha(torch_sparse):
    e, t = pair(torch_sparse, requires_grad=True)
    d, td = _dense(ember), _dense(torch_sparse)
    b = ember.ones(2, 2, requires_grad=True)
    tb = torch_sparse.ones(2, 2, requires_grad=True)
    ey = ember.sparse.addmm(b, e, d, beta=2, alpha=3)
    ty = torch_sparse.sparse.addmm(tb, t, td, beta=2, alpha=3)
    assert_same(ey, ty, atol=1e-5)
    (ey**2).sum().backward()
    (ty**2).sum().backward()
    same_repr(e.grad, t.grad)
    np.testing.assert_allclose(d.grad.numpy(), td.grad.numpy(), atol=1e-4)
    np.testing.assert_allclose(b.grad.numpy(), tb.grad.numpy(), atol=1e-4)


@pytest.mark.parametrize("mm", ["mm", "sparse_mm"])
def test_gradient_reaches_the_values_through_a_product(torch_sparse, mm):
    def run(m):
        v = m.tensor(VALUES, requires_grad=True)
        s = m.sparse_coo_tensor(INDICES, v, (2, 3))
        out = m.sparse.mm(s, m.tensor(DENSE)) if mm == "sparse_mm" else m.mm(s, m.tensor(DENSE))
        (out**2).sum().backward()
        return v.grad.numpy()

    np.testing.assert_allclose(run(ember), run(torch_sparse), atol=1e-5)


def test_sparse_mm_of_dense_operands_is_mm(torch_sparse):
    a = np.arange(4.0, dtype=np.float32).reshape(2, 2)
    got = ember.sparse.mm(ember.tensor(a), ember.tensor(a))
    want = torch_sparse.sparse.mm(torch_sparse.tensor(a), torch_sparse.tensor(a))
    np.testing.assert_allclose(got.numpy(), want.numpy())


def test_smm_and_hspmm_match_torch(torch_sparse):
    e, t = pair(torch_sparse)
    d, td = ember.tensor(DENSE), torch_sparse.tensor(DENSE)
    same_repr(ember.smm(e, d), torch_sparse.smm(t, td))
    same_repr(ember.hspmm(e, d), torch_sparse.hspmm(t, td))


@pytest.mark.parametrize(
    "case",
    [
        lambda m, s: m.sparse.mm(s, m.ones(2, 2)),
        lambda m, s: m.sparse.mm(s, m.ones(3, 2, dtype=m.float64)),
    ],
)
def test_product_errors_match_torch(torch_sparse, case):
    e, t = pair(torch_sparse)
    raises_like(lambda: case(torch_sparse, t), lambda: case(ember, e))


def test_dense_mm_with_mismatched_sparse_operand_raises():
    s = ember.sparse_coo_tensor(INDICES, VALUES, (2, 3))
    with pytest.raises(RuntimeError, match="cannot be multiplied"):
        ember.mm(s, ember.ones(2, 2))


@pytest.mark.parametrize("dtype", ["float16", "float64"])
def test_dense_mm_with_a_sparse_operand_in_other_dtypes(dtype):
    dt = getattr(ember, dtype)
    s = ember.sparse_coo_tensor(INDICES, VALUES, (2, 3), dtype=dt)
    d = ember.tensor(DENSE).to(dt)
    want = ember.mm(s.to_dense(), d)
    for got in (ember.mm(s, d), ember.mm(d.t(), s.t()).t(), ember.sparse.mm(s, d)):
        assert got.dtype is dt
        np.testing.assert_allclose(got.float().numpy(), want.float().numpy(), rtol=1e-3)
