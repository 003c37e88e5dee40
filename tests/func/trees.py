"""Comparing an ember pytree of tensors with torch's: the same nest of containers (as
``treespec`` reprs, which name dict keys and container types) and the same values."""

import numpy as np

from ember.utils import _pytree


def assert_same_tree(ours, theirs, rtol: float = 1e-6, atol: float = 1e-7) -> None:
    from torch.utils import _pytree as torch_pytree

    our_leaves, our_spec = _pytree.tree_flatten(ours)
    their_leaves, their_spec = torch_pytree.tree_flatten(theirs)
    assert repr(our_spec) == repr(their_spec)
    for a, b in zip(our_leaves, their_leaves):
        if hasattr(a, "numpy"):
            assert tuple(a.shape) == tuple(b.shape)
            assert a.requires_grad == b.requires_grad
            np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=rtol, atol=atol)
        else:
            assert a == b


def raised(fn) -> tuple:
    """(exception type name, message) of what ``fn()`` raises."""
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - the point is to compare any exception
        return type(e).__name__, str(e)
    raise AssertionError("nothing was raised")
