"""Compressed layouts (CSR, CSC, BSR, BSC) against torch: construction and its checks, the
index accessors, conversions from dense and COO, to_dense, matmul, repr, and the CSR
products sampled_addmm and mm(reduce=) with their float64 gradients."""

import numpy as np
import pytest

import ember

from .helpers import raises_like, same_repr

DENSE = np.array([[0.0, 2.0, 0.0, 0.0], [3.0, 0.0, 4.0, 0.0], [0.0, 0.0, 0.0, 0.0],
                  [0.0, 5.0, 0.0, 6.0]])  # fmt: skip
LAYOUTS = ["sparse_csr", "sparse_csc", "sparse_bsr", "sparse_bsc"]


def convert(x, layout: str, blocksize=(2, 2)):
    method = getattr(x, "to_" + layout)
    return method(blocksize) if layout in ("sparse_bsr", "sparse_bsc") else method()


def index_names(layout: str):
    if layout in ("sparse_csr", "sparse_bsr"):
        return "crow_indices", "col_indices"
    return "ccol_indices", "row_indices"


def assert_same_compressed(e, t):
    assert repr(e.layout) == repr(t.layout).replace("torch.", "ember.")
    assert tuple(e.shape) == tuple(t.shape) and e._nnz() == t._nnz()
    for name in index_names(str(t.layout).split(".")[-1]):
        np.testing.assert_array_equal(getattr(e, name)().numpy(), getattr(t, name)().numpy())
    np.testing.assert_array_equal(e.values().detach().numpy(), t.values().detach().numpy())
    np.testing.assert_array_equal(e.to_dense().detach().numpy(), t.to_dense().detach().numpy())


@pytest.mark.parametrize("layout", LAYOUTS)
def test_dense_and_coo_to_compressed_match_torch(torch_sparse, layout):
    e = convert(ember.tensor(DENSE), layout)
    t = convert(torch_sparse.tensor(DENSE), layout)
    assert_same_compressed(e, t)
    same_repr(e, t)
    from_coo = convert(ember.tensor(DENSE).to_sparse(), layout)
    assert_same_compressed(from_coo, convert(torch_sparse.tensor(DENSE).to_sparse(), layout))


@pytest.mark.parametrize("layout", LAYOUTS)
def test_constructor_from_index_arrays_matches_torch(torch_sparse, layout):
    t = convert(torch_sparse.tensor(DENSE), layout)
    compressed, plain = (getattr(t, n)() for n in index_names(layout))
    args = (compressed.tolist(), plain.tolist(), t.values().tolist())
    e = getattr(ember, layout + "_tensor")(*args, (4, 4), dtype=ember.float64)
    tt = getattr(torch_sparse, layout + "_tensor")(*args, (4, 4), dtype=torch_sparse.float64)
    assert_same_compressed(e, tt)
    same_repr(e, tt)
    inferred = ember.sparse_compressed_tensor(*args, layout=getattr(ember, layout))
    assert tuple(inferred.shape) == tuple(
        torch_sparse.sparse_compressed_tensor(*args, layout=getattr(torch_sparse, layout)).shape
    )


def test_csr_repr_of_int_and_requires_grad_tensors_match_torch(torch_sparse):
    same_repr(
        ember.ones(2, 3, dtype=ember.int32).to_sparse_csr(),
        torch_sparse.ones(2, 3, dtype=torch_sparse.int32).to_sparse_csr(),
    )
    same_repr(
        ember.sparse_csr_tensor([0, 1, 2], [1, 0], [1.0, 2.0], requires_grad=True),
        torch_sparse.sparse_csr_tensor([0, 1, 2], [1, 0], [1.0, 2.0], requires_grad=True),
    )


@pytest.mark.parametrize("to", ["to_sparse_csr", "to_sparse_csc", "to_sparse_bsr", "to_sparse_bsc"])
def test_bool_compressed_repr_leaves_the_dtype_out_as_torch(torch_sparse, to):
    args = ((1, 1),) if to.endswith(("bsr", "bsc")) else ()
    dense = [[True, False], [False, True]]
    same_repr(
        getattr(ember.tensor(dense), to)(*args), getattr(torch_sparse.tensor(dense), to)(*args)
    )


@pytest.mark.parametrize(
    "crow, col, values",
    [
        ([0, 2, 1], [0, 1], [1.0, 2.0]),  # last pointer != nnz
        ([0, 1, 2], [0, 5], [1.0, 2.0]),  # column out of range
        ([1, 1, 2], [0, 1], [1.0, 2.0]),  # first pointer != 0
        ([0, 1], [0, 1], [1.0, 2.0]),  # too few pointers
        ([0, 2, 2], [1, 0], [1.0, 2.0]),  # unsorted columns in a row
        ([0, 1, 2], [0, 1], [1.0, 2.0, 3.0]),  # more values than columns
    ],
)
def test_invariant_checks_raise_torch_errors(torch_sparse, crow, col, values):
    raises_like(
        lambda: torch_sparse.sparse_csr_tensor(
            torch_sparse.tensor(crow), torch_sparse.tensor(col), torch_sparse.tensor(values),
            (2, 2), check_invariants=True,
        ),
        lambda: ember.sparse_csr_tensor(
            ember.tensor(crow), ember.tensor(col), ember.tensor(values), (2, 2),
            check_invariants=True,
        ),
    )  # fmt: skip


def test_accessor_of_the_other_compression_raises_like_torch(torch_sparse):
    raises_like(
        lambda: torch_sparse.tensor(DENSE).to_sparse_csc().crow_indices(),
        lambda: ember.tensor(DENSE).to_sparse_csc().crow_indices(),
    )


@pytest.mark.parametrize("layout", LAYOUTS)
def test_compressed_matmul_dense_matches_torch(torch_sparse, layout):
    rhs = np.arange(8.0).reshape(4, 2)
    e = convert(ember.tensor(DENSE), layout) @ ember.tensor(rhs)
    if layout == "sparse_bsc":  # torch has no CPU kernel for it: against the dense product
        np.testing.assert_allclose(e.numpy(), DENSE @ rhs)
        return
    t = convert(torch_sparse.tensor(DENSE), layout) @ torch_sparse.tensor(rhs)
    np.testing.assert_allclose(e.numpy(), t.numpy())


def test_compressed_to_coo_and_back(torch_sparse):
    e = ember.tensor(DENSE).to_sparse_csr()
    t = torch_sparse.tensor(DENSE).to_sparse_csr()
    coo = e.to_sparse_coo()
    assert coo.layout == ember.sparse_coo
    np.testing.assert_array_equal(coo.indices().numpy(), t.to_sparse_coo().indices().numpy())
    assert_same_compressed(coo.to_sparse_csr().to_sparse_csc(), t.to_sparse_csc())


def _csr_pair(torch):
    e = ember.tensor(DENSE).to_sparse_csr().requires_grad_(True)
    t = torch.tensor(DENSE).to_sparse_csr().requires_grad_(True)
    return e, t


def test_sampled_addmm_and_its_gradients_match_torch(torch_sparse):
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((4, 3)), rng.standard_normal((3, 4))
    e, t = _csr_pair(torch_sparse)
    ea, eb = ember.tensor(a, requires_grad=True), ember.tensor(b, requires_grad=True)
    ta = torch_sparse.tensor(a, requires_grad=True)
    tb = torch_sparse.tensor(b, requires_grad=True)
    er = ember.sparse.sampled_addmm(e, ea, eb, beta=0.5, alpha=2.0)
    tr = torch_sparse.sparse.sampled_addmm(t, ta, tb, beta=0.5, alpha=2.0)
    assert_same_compressed(er, tr)
    weights = rng.standard_normal(tr._nnz())
    (er.values() * ember.tensor(weights)).sum().backward()
    (tr.values() * torch_sparse.tensor(weights)).sum().backward()
    np.testing.assert_allclose(ea.grad.numpy(), ta.grad.numpy(), rtol=1e-12)
    np.testing.assert_allclose(eb.grad.numpy(), tb.grad.numpy(), rtol=1e-12)
    np.testing.assert_allclose(e.grad.to_dense().numpy(), t.grad.to_dense().numpy())


@pytest.mark.parametrize("reduce", ["sum", "mean", "amax", "amin"])
def test_mm_reduce_and_its_gradients_match_torch(torch_sparse, reduce):
    rhs = np.random.default_rng(2).standard_normal((4, 3))
    e, t = _csr_pair(torch_sparse)
    ex = ember.tensor(rhs, requires_grad=True)
    tx = torch_sparse.tensor(rhs, requires_grad=True)
    er, tr = ember.sparse.mm(e, ex, reduce), torch_sparse.sparse.mm(t, tx, reduce)
    np.testing.assert_allclose(er.detach().numpy(), tr.detach().numpy(), rtol=1e-12)
    cotangent = np.random.default_rng(3).standard_normal((4, 3))
    er.backward(ember.tensor(cotangent))
    tr.backward(torch_sparse.tensor(cotangent))
    np.testing.assert_allclose(ex.grad.numpy(), tx.grad.numpy(), rtol=1e-12)
    np.testing.assert_allclose(e.grad.to_dense().numpy(), t.grad.to_dense().numpy(), rtol=1e-12)


def test_sampled_addmm_of_a_dense_input_raises_like_torch(torch_sparse):
    with pytest.raises(NotImplementedError, match="sparse_sampled_addmm"):
        torch_sparse.sparse.sampled_addmm(
            torch_sparse.eye(2), torch_sparse.eye(2), torch_sparse.eye(2)
        )
    with pytest.raises(NotImplementedError, match="sparse_sampled_addmm"):
        ember.sparse.sampled_addmm(ember.eye(2), ember.eye(2), ember.eye(2))


def test_sampled_addmm_with_a_dense_cotangent_gives_torch_gradients(torch_sparse):
    rng = np.random.default_rng(4)
    a, b, g = rng.standard_normal((4, 3)), rng.standard_normal((3, 4)), rng.standard_normal((4, 4))
    e, t = _csr_pair(torch_sparse)
    ea, eb = ember.tensor(a, requires_grad=True), ember.tensor(b, requires_grad=True)
    ta = torch_sparse.tensor(a, requires_grad=True)
    tb = torch_sparse.tensor(b, requires_grad=True)
    er = ember.sparse.sampled_addmm(e, ea, eb, beta=0.25, alpha=3.0)
    tr = torch_sparse.sparse.sampled_addmm(t, ta, tb, beta=0.25, alpha=3.0)
    e_grads = ember.autograd.grad(er, [e, ea, eb], ember.tensor(g))
    t_grads = torch_sparse.autograd.grad(tr, [t, ta, tb], torch_sparse.tensor(g))
    for got, want in zip(e_grads, t_grads, strict=True):
        assert want.layout == torch_sparse.strided  # torch: beta * g for the CSR input, dense
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12)


def test_sampled_addmm_out_must_be_csr_as_in_torch(torch_sparse):
    e = ember.tensor(DENSE).to_sparse_csr()
    with pytest.raises(RuntimeError, match="Expected result to have sparse csr layout"):
        ember.sparse.sampled_addmm(e, ember.ones(4, 2), ember.ones(2, 4), out=ember.empty(4, 4))
    out = ember.tensor(DENSE).to_sparse_csr()
    result = ember.sparse.sampled_addmm(e, ember.ones(4, 2), ember.ones(2, 4), out=out)
    assert result is out
    np.testing.assert_allclose(out.to_dense().numpy(), DENSE + 2.0 * (DENSE != 0))


@pytest.mark.parametrize("layout", LAYOUTS)
def test_to_sparse_with_a_compressed_layout_matches_torch(torch_sparse, layout):
    blocked = layout in ("sparse_bsr", "sparse_bsc")
    kwargs = {"blocksize": (2, 2)} if blocked else {}
    e = ember.tensor(DENSE).to_sparse(layout=getattr(ember, layout), **kwargs)
    t = torch_sparse.tensor(DENSE).to_sparse(layout=getattr(torch_sparse, layout), **kwargs)
    assert_same_compressed(e, t)


def test_compressed_layouts_pickle_to_themselves():
    import pickle

    for layout in LAYOUTS:
        assert pickle.loads(pickle.dumps(getattr(ember, layout))) is getattr(ember, layout)


def test_a_compressed_leaf_keeps_its_gradient_in_its_layout(torch_sparse):
    e, t = _csr_pair(torch_sparse)
    (e.to_dense() * 2).sum().backward()
    (t.to_dense() * 2).sum().backward()
    assert_same_compressed(e.grad, t.grad)
    assert e.grad is e.grad


@pytest.mark.parametrize(
    "op",
    [
        lambda x: x * 2,
        lambda x: 2 * x,
        lambda x: x + x,
        lambda x: x * -1.5,
        lambda x: -x,
        lambda x: x.clone(),
        lambda x: x.detach(),
        lambda x: x.t(),
    ],
)
@pytest.mark.parametrize("layout", ["sparse_csr", "sparse_csc"])
def test_arithmetic_and_transpose_keep_a_compressed_layout_as_in_torch(torch_sparse, op, layout):
    assert_same_compressed(
        op(convert(ember.tensor(DENSE), layout)), op(convert(torch_sparse.tensor(DENSE), layout))
    )


def test_one_int_blocksize_is_a_square_block():
    dense = ember.arange(16.0).reshape(4, 4)
    for method in ("to_sparse_bsr", "to_sparse_bsc"):
        blocked = getattr(dense, method)(2)
        assert blocked._blocksize == (2, 2) and tuple(blocked.values().shape) == (4, 2, 2)
        assert blocked.to_dense().tolist() == dense.tolist()
