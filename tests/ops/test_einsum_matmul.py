"""Two-operand einsums that are batched matrix products run as one matmul on permuted operands
(ember.ops.linalg._einsum_as_matmul), as torch contracts through bmm: values equal to NumPy's
einsum, gradients to the first and second order, shapes, dtypes and the cases left to einsum
(diagonals, broadcast ellipsis dims, nothing contracted)."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember.ops import linalg

EQUATIONS = [
    ("bhqd,bhkd->bhqk", (2, 3, 4, 5), (2, 3, 6, 5)),  # attention scores
    ("bhqk,bhkd->bhqd", (2, 3, 4, 6), (2, 3, 6, 5)),  # attention output
    ("ij,jk->ik", (3, 4), (4, 5)),
    ("ij,kj->ki", (3, 4), (5, 4)),  # transposed output
    ("bij,bjk->bki", (2, 3, 4), (2, 4, 5)),
    ("i,i->", (7,), (7,)),  # a dot product: 0-d
    ("ij,ij->i", (3, 4), (3, 4)),  # batch and contracted only
    ("ijx,jk->ik", (3, 4, 2), (4, 5)),  # a letter of one operand alone: summed first
    ("ij,jky->ik", (3, 4), (4, 5, 6)),
    ("abcd,dcef->abef", (2, 3, 4, 5), (5, 4, 6, 2)),  # two contracted letters
    ("bnd,d->bn", (2, 3, 4), (4,)),
    ("...ij,...jk->...ik", (2, 3, 4), (2, 4, 5)),  # ellipsis of equal sizes
]


def _arrays(shapes, dtype=np.float64, seed=0):
    rng = np.random.default_rng(seed)
    arrays = [rng.standard_normal(s) for s in shapes]
    if np.dtype(dtype).kind == "c":
        arrays = [a + 1j * rng.standard_normal(a.shape) for a in arrays]
    return [a.astype(dtype) for a in arrays]


@pytest.mark.parametrize("equation,sa,sb", EQUATIONS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex128])
def test_values_equal_numpy_einsum(equation, sa, sb, dtype):
    a, b = _arrays((sa, sb), dtype)
    out = ember.einsum(equation, ember.tensor(a), ember.tensor(b))
    want = np.einsum(equation, a, b)
    assert out.shape == want.shape and out.numpy().dtype == want.dtype
    tol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(out.numpy(), want, rtol=tol, atol=tol)


@pytest.mark.parametrize("equation,sa,sb", EQUATIONS)
def test_matmul_route_is_taken_and_gradients_check(equation, sa, sb):
    a, b = _arrays((sa, sb))
    terms, out_term = linalg._parse_einsum(equation, [sa, sb])
    assert linalg._einsum_as_matmul(np, terms, out_term, [a, b]) is not None
    x = ember.tensor(a, requires_grad=True)
    y = ember.tensor(b, requires_grad=True)
    assert ember.autograd.gradcheck(lambda p, q: ember.einsum(equation, p, q), (x, y))
    assert ember.autograd.gradgradcheck(lambda p, q: ember.einsum(equation, p, q), (x, y))


@pytest.mark.parametrize(
    "equation,sa,sb",
    [
        ("ii,ij->j", (3, 3), (3, 4)),  # a diagonal
        ("ij,kl->ijkl", (2, 3), (4, 5)),  # nothing contracted
        ("ij,ij->ij", (2, 3), (2, 3)),  # elementwise
        ("...ij,...jk->...ik", (1, 3, 4), (2, 4, 5)),  # a broadcast ellipsis dim
    ],
)
def test_other_einsums_keep_numpy_einsum(equation, sa, sb):
    a, b = _arrays((sa, sb))
    terms, out_term = linalg._parse_einsum(equation, [sa, sb])
    assert linalg._einsum_as_matmul(np, terms, out_term, [a, b]) is None
    out = ember.einsum(equation, ember.tensor(a), ember.tensor(b))
    np.testing.assert_allclose(out.numpy(), np.einsum(equation, a, b), rtol=1e-12)


def test_zero_size_operands():
    a, b = np.zeros((2, 0, 4)), np.zeros((2, 4, 3))
    out = ember.einsum("bij,bjk->bik", ember.tensor(a), ember.tensor(b))
    assert tuple(out.shape) == (2, 0, 3)
    out = ember.einsum(
        "bij,bjk->bik", ember.tensor(np.zeros((2, 3, 0))), ember.tensor(np.zeros((2, 0, 5)))
    )
    assert out.numpy().tolist() == np.zeros((2, 3, 5)).tolist()


def test_matches_torch(torch_mod):
    a, b = _arrays(((2, 3, 4, 5), (2, 3, 6, 5)), np.float32)
    x, y = ember.tensor(a, requires_grad=True), ember.tensor(b, requires_grad=True)
    tx, ty = torch_mod.tensor(a, requires_grad=True), torch_mod.tensor(b, requires_grad=True)
    out = ember.einsum("bhqd,bhkd->bhqk", x, y)
    tout = torch_mod.einsum("bhqd,bhkd->bhqk", tx, ty)
    weights = np.cos(np.arange(out.numel())).reshape(out.shape).astype(np.float32)
    (out * ember.tensor(weights)).sum().backward()
    (tout * torch_mod.tensor(weights)).sum().backward()
    np.testing.assert_allclose(out.detach().numpy(), tout.detach().numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(y.grad.numpy(), ty.grad.numpy(), rtol=1e-5, atol=1e-5)
