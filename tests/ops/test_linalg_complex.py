"""Complex input through the linear-algebra ops: values and vector-Jacobian products
against torch's (complex128, a random complex cotangent), so that every formula written with
conjugate transposes follows PyTorch's convention for complex gradients."""

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(0)


def _complex(*shape):
    return RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)


def _hpd(n):
    a = _complex(n, n)
    return a @ a.conj().T + n * np.eye(n)


def _triangle(n, upper):
    a = _complex(n, n) + 3 * np.eye(n)
    return np.triu(a) if upper else np.tril(a)


def _cholesky_factor(n, upper):
    lower = np.linalg.cholesky(_hpd(n))
    return lower.conj().T if upper else lower


A4, A43, A34, B42 = _complex(4, 4), _complex(4, 3), _complex(3, 4), _complex(4, 2)

CASES = {
    "cholesky": (lambda m, a: m.linalg.cholesky(a), [_hpd(4)]),
    "cholesky_upper": (lambda m, a: m.linalg.cholesky(a, upper=True), [_hpd(4)]),
    "qr_tall": (lambda m, a: tuple(m.linalg.qr(a)), [A43]),
    "qr_wide": (lambda m, a: tuple(m.linalg.qr(a)), [A34]),
    "eigvalsh": (lambda m, a: m.linalg.eigvalsh(a), [_hpd(4)]),
    "eigh_phase_free": (
        lambda m, a: (lambda w, v: (w, (v * v.conj()).real))(*m.linalg.eigh(a)),
        [_hpd(4)],
    ),
    "svd_uvh": (
        lambda m, a: (lambda u, s, vh: (u @ vh, s))(*m.linalg.svd(a, full_matrices=False)),
        [A43],
    ),
    "svd_uvh_wide": (
        lambda m, a: (lambda u, s, vh: (u @ vh, s))(*m.linalg.svd(a, full_matrices=False)),
        [A34],
    ),
    "svd_abs": (
        lambda m, a: (lambda u, s, vh: (u.abs(), vh.abs()))(*m.linalg.svd(a, full_matrices=False)),
        [A43],
    ),
    "svdvals": (lambda m, a: m.linalg.svdvals(a), [A43]),
    "slogdet": (lambda m, a: tuple(m.linalg.slogdet(a)), [A4]),
    "logdet": (lambda m, a: m.logdet(a), [A4]),
    "det": (lambda m, a: m.linalg.det(a), [A4]),
    "inv": (lambda m, a: m.linalg.inv(a), [A4]),
    "solve": (lambda m, a, b: m.linalg.solve(a, b), [A4, B42]),
    "solve_vector": (lambda m, a, b: m.linalg.solve(a, b), [A4, B42[:, 0]]),
    "solve_right": (lambda m, a, b: m.linalg.solve(a, b, left=False), [A4, B42.T]),
    "solve_triangular": (
        lambda m, a, b: m.linalg.solve_triangular(a, b, upper=True),
        [_triangle(4, True), B42],
    ),
    "solve_triangular_right": (
        lambda m, a, b: m.linalg.solve_triangular(a, b, upper=False, left=False),
        [_triangle(4, False), B42.T],
    ),
    "cholesky_solve": (lambda m, b, f: m.cholesky_solve(b, f), [B42, _cholesky_factor(4, False)]),
    "cholesky_solve_upper": (
        lambda m, b, f: m.cholesky_solve(b, f, upper=True),
        [B42, _cholesky_factor(4, True)],
    ),
    "cholesky_inverse": (lambda m, f: m.cholesky_inverse(f), [_cholesky_factor(4, False)]),
    "lu": (lambda m, a: tuple(m.linalg.lu(a)[1:]), [A4]),
    "lu_tall": (lambda m, a: tuple(m.linalg.lu(a)[1:]), [A43]),
    "lu_wide": (lambda m, a: tuple(m.linalg.lu(a)[1:]), [A34]),
    "lu_solve_adjoint": (
        lambda m, a, b: m.linalg.lu_solve(*m.linalg.lu_factor(a), b, adjoint=True),
        [A4, B42],
    ),
    "lu_solve_right": (
        lambda m, a, b: m.linalg.lu_solve(*m.linalg.lu_factor(a), b, left=False),
        [A4, B42.T],
    ),
    "pinv": (lambda m, a: m.linalg.pinv(a), [A43]),
    "pinv_hermitian": (lambda m, a: m.linalg.pinv(a, hermitian=True), [_hpd(4)]),
    "lstsq": (lambda m, a, b: m.linalg.lstsq(a, b).solution, [A43, B42]),
    "matrix_exp": (lambda m, a: m.linalg.matrix_exp(a), [A4 * 0.3]),
    "householder_product": (lambda m, a, t: m.linalg.householder_product(a, t), [A43, _complex(2)]),
    "vecdot": (lambda m, a, b: m.linalg.vecdot(a, b), [A43, A43 + 1]),
    "vdot": (lambda m, a, b: m.vdot(a, b), [A43[:, 0], A43[:, 1]]),
    "matrix_norm_nuc": (lambda m, a: m.linalg.matrix_norm(a, "nuc"), [A43]),
    "norm": (lambda m, a: m.linalg.norm(a), [A43]),
    "cond": (lambda m, a: m.linalg.cond(a), [A4]),
    "mH": (lambda m, a: a.mH, [A43]),
    "eigvals": (lambda m, a: m.linalg.eigvals(a), [A4]),
    "eig_phase_free": (lambda m, a: (lambda w, v: (w, v.abs()))(*m.linalg.eig(a)), [A4]),
}


def _as_tuple(out):
    return out if isinstance(out, tuple) else (out,)


@pytest.mark.parametrize("name", sorted(CASES))
def test_complex_values_and_gradients_match_torch(name):
    fn, arrays = CASES[name]
    t_inputs = [torch.tensor(a, requires_grad=True) for a in arrays]
    t_out = _as_tuple(fn(torch, *t_inputs))
    rng = np.random.default_rng(1)
    cotangents = []
    for o in t_out:
        c = rng.standard_normal(o.shape)
        if o.is_complex():
            c = c + 1j * rng.standard_normal(o.shape)
        cotangents.append(c)
    t_grads = torch.autograd.grad(t_out, t_inputs, [torch.tensor(c) for c in cotangents])

    e_inputs = [ember.tensor(a, requires_grad=True) for a in arrays]
    e_out = _as_tuple(fn(ember, *e_inputs))
    assert len(e_out) == len(t_out)
    for t, e in zip(t_out, e_out):
        assert str(e.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
        np.testing.assert_allclose(e.detach().numpy(), t.detach().resolve_conj().numpy(), atol=1e-9)
    e_grads = ember.autograd.grad(e_out, e_inputs, [ember.tensor(c) for c in cotangents])
    for t, e in zip(t_grads, e_grads):
        np.testing.assert_allclose(e.numpy(), t.resolve_conj().numpy(), atol=1e-8)


def test_mH_and_H_conjugate_and_check_dims():
    x = ember.tensor([[1 + 2j, 3j], [4.0, 5 - 1j]])
    np.testing.assert_array_equal(x.mH.numpy(), x.numpy().conj().T)
    np.testing.assert_array_equal(x.H.numpy(), x.numpy().conj().T)
    with pytest.raises(RuntimeError, match="tensor.H is only supported on matrices"):
        _ = ember.zeros(2, 2, 2).H
    with pytest.raises(RuntimeError, match="tensor.mH is only supported on matrices"):
        _ = ember.zeros(3).mH
