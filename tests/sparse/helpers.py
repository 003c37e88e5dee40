"""Build the same sparse tensor in ember and in PyTorch, and compare the two."""

import numpy as np

import ember

INDICES = [[0, 1, 1, 0], [2, 0, 2, 2]]  # (0, 2) appears twice: uncoalesced
VALUES = [3.0, 4.0, 5.0, 1.0]


def pair(torch, indices=INDICES, values=VALUES, size=(2, 3), dtype=None, **kwargs):
    """(ember tensor, torch tensor) from the same arguments; ``dtype`` is a name."""
    e = ember.sparse_coo_tensor(
        indices, values, size, dtype=dtype and getattr(ember, dtype), **kwargs
    )
    t = torch.sparse_coo_tensor(
        indices, values, size, dtype=dtype and getattr(torch, dtype), **kwargs
    )
    return e, t


def same_repr(e, t) -> None:
    assert repr(e) == repr(t).replace("torch.", "ember.")


def as_numpy(x):
    if x.is_sparse:
        x = x.to_dense()
    return x.detach().numpy()


def assert_same(e, t, atol=1e-6) -> None:
    """Same layout, shape, pattern (when sparse) and values."""
    assert e.is_sparse == t.is_sparse
    assert tuple(e.shape) == tuple(t.shape)
    if t.is_sparse:
        assert e.is_coalesced() == t.is_coalesced()
        assert e._nnz() == t._nnz()
        np.testing.assert_array_equal(e._indices().numpy(), t._indices().numpy())
        np.testing.assert_allclose(
            e._values().detach().numpy(), t._values().detach().numpy(), atol=atol
        )
    np.testing.assert_allclose(as_numpy(e), as_numpy(t), atol=atol)


def raises_like(torch_call, ember_call):
    """Both calls raise the same exception type with the same message."""
    import pytest

    with pytest.raises(Exception) as want:
        torch_call()
    with pytest.raises(type(want.value)) as got:
        ember_call()
    assert str(got.value) == str(want.value)
