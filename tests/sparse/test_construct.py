"""ember.sparse_coo_tensor against torch.sparse_coo_tensor: values, size inference, flags,
reprs and error messages."""

import numpy as np
import pytest

import ember

from .helpers import INDICES, VALUES, assert_same, pair, raises_like, same_repr


def test_uncoalesced_tensor_matches_torch(torch_sparse):
    e, t = pair(torch_sparse)
    assert_same(e, t)
    same_repr(e, t)
    assert e.layout == ember.sparse_coo and e.is_sparse
    assert isinstance(e, ember.Tensor)
    assert (e.sparse_dim(), e.dense_dim(), e._nnz(), e.numel(), e.dim()) == (2, 0, 4, 6, 2)
    assert e.shape == ember.Size([2, 3]) and e.dtype is ember.float32


@pytest.mark.parametrize(
    "dtype, kwargs",
    [("float64", {"requires_grad": True}), ("int32", {}), ("float16", {}), (None, {})],
)
def test_repr_shows_dtype_and_grad_state_as_torch(torch_sparse, dtype, kwargs):
    e, t = pair(torch_sparse, dtype=dtype, **kwargs)
    same_repr(e, t)


@pytest.mark.parametrize(
    "indices, values, size",
    [
        (INDICES, VALUES, None),
        ([[0, 1], [1, 0]], [1, 2], None),  # int values
        ([[0, 3]], [[1.0, 2.0], [3.0, 4.0]], None),  # hybrid: one dense dim
        ([[0, 3]], [[1.0, 2.0], [3.0, 4.0]], (5, 2)),
        (np.zeros((2, 0), dtype=np.int64), np.zeros(0, dtype=np.float32), None),
        (np.zeros((1, 0), dtype=np.int64), np.zeros(0, dtype=np.float32), (3,)),
        ([[0.0, 1.0], [2.0, 0.0]], [1.0, 2.0], None),  # float indices are cast to int64
    ],
)
def test_size_inference_and_repr_match_torch(torch_sparse, indices, values, size):
    def build(m):
        i = m.tensor(np.asarray(indices)) if isinstance(indices, np.ndarray) else indices
        v = m.tensor(np.asarray(values)) if isinstance(values, np.ndarray) else values
        return m.sparse_coo_tensor(i, v) if size is None else m.sparse_coo_tensor(i, v, size)

    e, t = build(ember), build(torch_sparse)
    assert_same(e, t)
    same_repr(e, t)
    assert e._indices().dtype is ember.int64


def test_is_coalesced_flag_as_torch(torch_sparse):
    for indices, values in [([[0]], [1.0]), ([[0, 1]], [1.0, 2.0])]:
        e, t = pair(torch_sparse, indices, values, (2,))
        assert e.is_coalesced() == t.is_coalesced()
    e, t = pair(torch_sparse, [[0, 1]], [1.0, 2.0], (2,), is_coalesced=True)
    assert e.is_coalesced() and t.is_coalesced()


def test_requires_grad_leaf_and_requires_grad_(torch_sparse):
    e, t = pair(torch_sparse, requires_grad=True)
    assert e.is_leaf and e.requires_grad and e.grad is None and e.grad_fn is None
    e2 = ember.sparse_coo_tensor(INDICES, VALUES, (2, 3)).requires_grad_()
    t2 = torch_sparse.sparse_coo_tensor(INDICES, VALUES, (2, 3)).requires_grad_()
    assert e2.is_leaf and e2.requires_grad
    same_repr(e2, t2)


def test_values_that_require_grad_give_a_graph_node(torch_sparse):
    v = ember.tensor(VALUES, requires_grad=True)
    tv = torch_sparse.tensor(VALUES, requires_grad=True)
    e = ember.sparse_coo_tensor(INDICES, v, (2, 3))
    t = torch_sparse.sparse_coo_tensor(INDICES, tv, (2, 3))
    same_repr(e, t)
    assert not e.is_leaf


def test_device_and_dtype_arguments(torch_sparse):
    e, t = pair(torch_sparse, dtype="float64", device="cpu")
    assert e.dtype is ember.float64 and e.device.type == "cpu"
    same_repr(e, t)


ERROR_CASES = {
    "1-D indices with size": lambda m: m.sparse_coo_tensor(m.tensor(INDICES[0]), VALUES, (2, 3)),
    "1-D indices": lambda m: m.sparse_coo_tensor(m.tensor(INDICES[0]), VALUES),
    "3-D indices": lambda m: m.sparse_coo_tensor(m.tensor([INDICES]), VALUES),
    "nnz mismatch": lambda m: m.sparse_coo_tensor(INDICES, VALUES[:3], (2, 3)),
    "nnz mismatch, no size": lambda m: m.sparse_coo_tensor(INDICES, VALUES[:3]),
    "scalar values": lambda m: m.sparse_coo_tensor(INDICES, m.tensor(1.0)),
    "negative index, no size": lambda m: m.sparse_coo_tensor([[0, -1], [-2, 0]], [1.0, 2.0]),
    "size too long": lambda m: m.sparse_coo_tensor(INDICES, VALUES, (2, 3, 4)),
    "size too short": lambda m: m.sparse_coo_tensor(INDICES, VALUES, (2,)),
    "dense size mismatch": lambda m: m.sparse_coo_tensor(INDICES, m.ones(4, 2), (2, 3, 3)),
    "empty lists": lambda m: m.sparse_coo_tensor([], []),
    "empty lists with size": lambda m: m.sparse_coo_tensor([], [], (2, 3)),
    "values None": lambda m: m.sparse_coo_tensor(INDICES, None),
    "int requires grad": lambda m: m.sparse_coo_tensor(INDICES, [1, 2, 3, 4], requires_grad=True),
    "checked: index beyond size": lambda m: m.sparse_coo_tensor(
        INDICES, VALUES, (1, 3), check_invariants=True
    ),
    "checked: negative index": lambda m: m.sparse_coo_tensor(
        [[0, -1], [1, 0]], [1.0, 2.0], (2, 3), check_invariants=True
    ),
}


@pytest.mark.parametrize("case", sorted(ERROR_CASES))
def test_construction_errors_match_torch(torch_sparse, case):
    build = ERROR_CASES[case]
    raises_like(lambda: build(torch_sparse), lambda: build(ember))


def test_invariant_checks_can_be_enabled_globally():
    with ember.sparse.check_sparse_tensor_invariants():
        assert ember.sparse.check_sparse_tensor_invariants.is_enabled()
        with pytest.raises(RuntimeError, match="size is inconsistent with indices"):
            ember.sparse_coo_tensor(INDICES, VALUES, (1, 3))
    assert not ember.sparse.check_sparse_tensor_invariants.is_enabled()
    ember.sparse_coo_tensor(INDICES, VALUES, (1, 3))  # unchecked, as PyTorch by default
    ember.sparse.check_sparse_tensor_invariants.enable()
    try:
        with pytest.raises(RuntimeError, match="for dim 0, size is 1 but found index 1"):
            ember.sparse_coo_tensor(INDICES, VALUES, (1, 3))
        ember.sparse_coo_tensor(INDICES, VALUES, (1, 3), check_invariants=False)
    finally:
        ember.sparse.check_sparse_tensor_invariants.disable()
