"""linalg.eig / eigvals (ops/linalg_eig.py): complex results and gradients equal to torch's."""

from __future__ import annotations

import numpy as np
import pytest

import ember

RNG = np.random.default_rng(0)


@pytest.mark.parametrize("shape", [(4, 4), (2, 3, 3), (0, 2, 2)])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_values_and_dtypes_match_torch(torch_mod, shape, dtype):
    a = RNG.normal(size=shape).astype(dtype)
    e, t = ember.linalg.eig(ember.tensor(a)), torch_mod.linalg.eig(torch_mod.tensor(a))
    assert str(e.eigenvalues.dtype).split(".")[-1] == str(t.eigenvalues.dtype).split(".")[-1]
    tol = 1e-4 if dtype == "float32" else 1e-10
    np.testing.assert_allclose(e.eigenvalues.numpy(), t.eigenvalues.numpy(), atol=tol)
    # eigenvectors are unique up to a unit factor: each column agrees with torch's up to one
    ev, tv = e.eigenvectors.numpy(), t.eigenvectors.numpy()
    overlap = np.abs(np.sum(np.conj(ev) * tv, axis=-2))
    np.testing.assert_allclose(overlap, np.ones_like(overlap), atol=tol * 10)
    np.testing.assert_allclose(
        ember.linalg.eigvals(ember.tensor(a)).numpy(), t.eigenvalues.numpy(), atol=tol
    )


def _gauge_invariant_loss(m, A, C, D):
    L, V = m.linalg.eig(A)
    return (L.real * m.tensor(D)).sum() + (L.imag**2).sum() + (V.abs() * m.tensor(C)).sum()


@pytest.mark.parametrize("complex_input", [False, True])
def test_gradients_match_torch(torch_mod, complex_input):
    a = RNG.normal(size=(2, 4, 4))
    if complex_input:
        a = a + 1j * RNG.normal(size=(2, 4, 4))
    C, D = RNG.normal(size=(2, 4, 4)), RNG.normal(size=(2, 4))
    grads = []
    for m in (ember, torch_mod):
        A = m.tensor(a, requires_grad=True)
        _gauge_invariant_loss(m, A, C, D).backward()
        grads.append(A.grad.numpy())
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-8, atol=1e-10)
    assert grads[0].dtype == grads[1].dtype


def test_eigenvalue_only_gradient_matches_torch(torch_mod):
    a = RNG.normal(size=(3, 3))
    grads = []
    for m in (ember, torch_mod):
        A = m.tensor(a, requires_grad=True)
        m.linalg.eigvals(A).real.sum().backward()
        grads.append(A.grad.numpy())
    np.testing.assert_allclose(grads[0], grads[1], atol=1e-10)


def test_errors():
    with pytest.raises(RuntimeError, match="must be batches of square matrices"):
        ember.linalg.eig(ember.ones(2, 3))
    A = ember.tensor(RNG.normal(size=(3, 3)), requires_grad=True)
    L, _ = ember.linalg.eig(A)
    (g,) = ember.autograd.grad(L.real.sum(), A, create_graph=False)
    assert g.shape == (3, 3)


def test_double_backward_matches_torch(torch_mod):
    a = RNG.normal(size=(3, 3))
    second = []
    for m in (ember, torch_mod):
        A = m.tensor(a, requires_grad=True)
        L, V = m.linalg.eig(A)
        loss = (L * L).real.sum() + (V.abs() ** 2 * L.real.unsqueeze(-2)).sum()
        (g,) = m.autograd.grad(loss, A, create_graph=True)
        (gg,) = m.autograd.grad((g * g).sum(), A)
        second.append(gg.numpy())
    np.testing.assert_allclose(second[0], second[1], atol=1e-8)
