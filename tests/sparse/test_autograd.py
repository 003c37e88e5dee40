"""Sparse tensors in the autograd engine: higher-order gradients, autograd.grad with a
sparse input, hooks; and the install hook."""

import numpy as np

import ember

INDICES = [[0, 1, 1, 0], [2, 0, 2, 2]]


def test_second_derivative_through_sparse_construction_and_to_dense():
    # y = sum(dense^3) with dense[0, 2] = v0 + v3, dense[1, 0] = v1, dense[1, 2] = v2
    v = ember.tensor([3.0, 4.0, 5.0, 1.0], requires_grad=True)
    s = ember.sparse_coo_tensor(INDICES, v, (2, 3))
    (g,) = ember.autograd.grad((s.to_dense() ** 3).sum(), v, create_graph=True)
    np.testing.assert_allclose(g.detach().numpy(), [48.0, 48.0, 75.0, 48.0])
    (gg,) = ember.autograd.grad(g.sum(), v)
    np.testing.assert_allclose(gg.numpy(), [48.0, 24.0, 30.0, 48.0])


def test_autograd_grad_of_a_sparse_input_with_create_graph():
    s = ember.sparse_coo_tensor(INDICES, [3.0, 4.0, 5.0, 1.0], (2, 3), requires_grad=True)
    d = ember.ones(3, 2, requires_grad=True)
    (gs,) = ember.autograd.grad((ember.sparse.mm(s, d) ** 2).sum(), s, create_graph=True)
    assert gs.is_sparse and gs.requires_grad
    np.testing.assert_allclose(gs.coalesce().values().detach().numpy(), [16.0, 36.0, 36.0])
    (gd,) = ember.autograd.grad(gs.to_dense().sum(), d)
    np.testing.assert_allclose(gd.numpy(), [[34.0, 34.0], [0.0, 0.0], [54.0, 54.0]])


def test_hook_on_a_sparse_leaf_sees_the_sparse_gradient():
    s = ember.sparse_coo_tensor(INDICES, [3.0, 4.0, 5.0, 1.0], (2, 3), requires_grad=True)
    seen = []
    s.register_hook(lambda g: seen.append(g) or g * 2)
    s.to_dense().sum().backward()
    assert seen[0].is_sparse
    np.testing.assert_allclose(s.grad.to_dense().numpy(), [[0, 0, 2], [2, 0, 2]])


def test_install_is_idempotent_and_names_the_api():
    ember.sparse.install(vars(ember))
    ember.sparse.install(vars(ember))
    for name in ("sparse_coo_tensor", "sparse_coo", "strided", "spmm", "smm", "hspmm"):
        assert getattr(ember, name) is getattr(ember.sparse, name)
    assert ember.ones(1).to_sparse().layout is ember.sparse_coo


def test_a_fresh_sparse_gradient_is_taken_not_copied():
    # torch steals a sparse gradient nobody else holds; a gradient the caller passed is copied
    emb = ember.nn.Embedding(10, 3, sparse=True)
    emb(ember.tensor([1, 2, 1])).sum().backward()
    first = emb.weight.grad
    assert first.is_sparse and first._indices().tolist() == [[1, 2, 1]]
    emb(ember.tensor([3])).sum().backward()  # accumulates out of place: ``first`` unchanged
    assert first.to_dense().sum(1).tolist() == [0, 6, 3, 0, 0, 0, 0, 0, 0, 0]
    assert emb.weight.grad.to_dense().sum(1).tolist() == [0, 6, 3, 3, 0, 0, 0, 0, 0, 0]

    emb.weight.grad = None
    given = ember.ones(3, 3)
    emb(ember.tensor([1, 2, 1])).backward(given)
    assert emb.weight.grad._values().data_ptr() != given.data_ptr()
    given.mul_(7)
    assert emb.weight.grad.to_dense().sum().item() == 9.0
