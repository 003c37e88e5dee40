"""ember.fft vs torch.fft: values, dtypes and shapes over n/s/dim/norm, gradients of real
losses, gradcheck and gradgradcheck in float64/complex128, errors, and the helpers."""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.fft

RNG = np.random.default_rng(0)
X = RNG.normal(size=(3, 4, 5))
Z = X + 1j * RNG.normal(size=X.shape)
NORMS = [None, "backward", "ortho", "forward"]
REAL_ONLY = ("rfft", "ihfft")  # transforms that take real input only


def _name(d) -> str:
    return str(d).split(".")[-1]


def _same(e, t, atol=1e-8):
    assert _name(e.dtype) == _name(t.dtype)
    assert tuple(e.shape) == tuple(t.shape)
    np.testing.assert_allclose(e.detach().numpy(), t.detach().resolve_conj().numpy(), atol=atol)


def _run(m, name, arr, **kwargs):
    return getattr(m.fft, name)(m.from_numpy(arr.copy()), **kwargs)


def _inputs(name, all_dtypes: bool):
    arrays = [X] + ([X.astype(np.float32), np.arange(6).reshape(2, 3)] if all_dtypes else [])
    if not name.startswith(REAL_ONLY):
        arrays += [Z] + ([Z.astype(np.complex64)] if all_dtypes else [])
    return arrays


ONE_DIM = ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft"]
ONE_DIM_ARGS = [{}, {"n": 4}, {"n": 9, "dim": 1}, {"dim": 0}]


@pytest.mark.parametrize("name", ONE_DIM)
def test_one_dimensional_transforms_match_torch(torch_mod, name):
    for norm in NORMS:
        for arr in _inputs(name, all_dtypes=norm is None):
            for kwargs in ONE_DIM_ARGS:
                e = getattr(ember.fft, name)(ember.from_numpy(arr.copy()), norm=norm, **kwargs)
                t = getattr(torch_mod.fft, name)(
                    torch_mod.from_numpy(arr.copy()), norm=norm, **kwargs
                )
                _same(e, t, atol=1e-4 if arr.dtype.itemsize <= 8 else 1e-8)


N_DIM = ["fftn", "ifftn", "rfftn", "irfftn", "hfftn", "ihfftn"]
N_DIM_ARGS = [{}, {"s": (3, 8)}, {"dim": (0, 2)}, {"s": (4, -1, 7), "dim": (2, 0, 1)}, {"dim": 1}]


@pytest.mark.parametrize("name", N_DIM + [n[:-1] + "2" for n in N_DIM])
def test_n_dimensional_transforms_match_torch(torch_mod, name):
    two = name.endswith("2")
    for arr in (X, Z):
        if name.startswith(REAL_ONLY) and arr.dtype.kind == "c":
            continue
        for norm in NORMS:
            for kwargs in N_DIM_ARGS:
                if two and (kwargs.get("dim") == 1 or len(kwargs.get("s", ())) == 3):
                    continue
                e = getattr(ember.fft, name)(ember.from_numpy(arr.copy()), norm=norm, **kwargs)
                t = getattr(torch_mod.fft, name)(
                    torch_mod.from_numpy(arr.copy()), norm=norm, **kwargs
                )
                _same(e, t)


def test_float32_input_gives_complex64_and_ints_compute_in_default_dtype():
    x = ember.ones(4)
    assert _name(ember.fft.fft(x).dtype) == "complex64"
    assert _name(ember.fft.rfft(x.double()).dtype) == "complex128"
    assert _name(ember.fft.fft(ember.arange(4)).dtype) == "complex64"
    assert _name(ember.fft.irfft(ember.fft.rfft(x)).dtype) == "float32"
    np.testing.assert_allclose(ember.fft.fft(ember.tensor([1.0, 0, 0, 0])).numpy(), np.ones(4))


def test_zero_size_batch():
    # (torch 2.13's MKL build fails on these: ember returns the empty result)
    cases = {
        "fft": ((0, 4), "complex64"),
        "rfft": ((0, 3), "complex64"),
        "irfft": ((0, 6), "float32"),
    }
    for name, (shape, dtype) in cases.items():
        x = ember.zeros(0, 4).requires_grad_()
        out = getattr(ember.fft, name)(x)
        assert tuple(out.shape) == shape and _name(out.dtype) == dtype
        out.abs().sum().backward()
        assert tuple(x.grad.shape) == (0, 4)


def _loss(m, out):
    # a real loss that reads both parts of a complex output
    if out.is_complex():
        weights = m.from_numpy(np.linspace(0.3, 1.7, out.numel()).reshape(tuple(out.shape)))
        return (out * weights).real.sum() + (out.abs() ** 2).sum() + out.imag.sum()
    return (out * out).sum() + out.sum()


GRAD_CASES = [
    ("fft", {"n": 5}),
    ("ifft", {"dim": 0, "norm": "ortho"}),
    ("rfft", {"n": 6}),
    ("rfft", {"n": 5, "norm": "forward"}),
    ("irfft", {}),
    ("irfft", {"n": 7, "norm": "forward"}),
    ("hfft", {"n": 5}),
    ("ihfft", {"n": 6, "norm": "ortho"}),
    ("fftn", {"s": (4, 3)}),
    ("rfftn", {}),
    ("irfftn", {"s": (2, 5)}),
    ("hfftn", {"norm": "ortho"}),
    ("ihfftn", {}),
    ("rfft2", {"s": (3, 5)}),
    ("irfft2", {}),
]


@pytest.mark.parametrize("name,kwargs", GRAD_CASES)
def test_gradients_match_torch_and_gradcheck(torch_mod, name, kwargs):
    x = X[0, :3]  # (3, 5)
    arrays = [x] if name.startswith(REAL_ONLY) else [x, x + 1j * X[1, :3]]
    for arr in arrays:
        e = ember.from_numpy(arr.copy()).requires_grad_()
        t = torch_mod.from_numpy(arr.copy()).requires_grad_()
        e_out = getattr(ember.fft, name)(e, **kwargs)
        _loss(ember, e_out).backward()
        _loss(torch_mod, getattr(torch_mod.fft, name)(t, **kwargs)).backward()
        assert _name(e.grad.dtype) == _name(t.grad.dtype)
        np.testing.assert_allclose(e.grad.numpy(), t.grad.numpy(), atol=1e-8)
        f = lambda v: getattr(ember.fft, name)(v, **kwargs)  # noqa: B023
        small = ember.from_numpy(arr[:2, :4].copy()).requires_grad_()
        assert ember.autograd.gradcheck(f, (small,))
        assert ember.autograd.gradgradcheck(f, (small,))


def test_gradcheck_on_noncontiguous_input():
    z = ember.from_numpy(Z[0].T.copy()).t().requires_grad_()
    assert not z.is_contiguous()
    assert ember.autograd.gradcheck(lambda v: ember.fft.fft2(v, norm="ortho"), (z,))
    x = ember.from_numpy(X[0].T.copy()).t().requires_grad_()
    assert ember.autograd.gradcheck(lambda v: ember.fft.rfft(v, dim=0), (x,))


@pytest.mark.parametrize(
    "call",
    [
        lambda m: m.fft.fft(m.ones(4), norm="foo"),
        lambda m: m.fft.fft(m.ones(4), n=0),
        lambda m: m.fft.fft(m.ones(4), dim=3),
        lambda m: m.fft.fftn(m.ones(4), s=(2, 2)),
        lambda m: m.fft.fftn(m.ones(2, 2), s=(2,), dim=(0, 1)),
        lambda m: m.fft.fftn(m.ones(2, 2), dim=(0, 0)),
        lambda m: m.fft.rfft(m.fft.fft(m.ones(4))),
        lambda m: m.fft.ihfft(m.fft.fft(m.ones(4))),
        lambda m: m.fft.irfft(m.ones(1)),
    ],
)
def test_errors_as_torch(torch_mod, call):
    with pytest.raises(Exception) as t_err:
        call(torch_mod)
    with pytest.raises(type(t_err.value)) as e_err:
        call(ember)
    assert str(e_err.value) == str(t_err.value)


def test_frequencies_and_shifts_match_torch(torch_mod):
    for n, d in ((5, 1.0), (4, 0.5), (1, 2.0)):
        _same(ember.fft.fftfreq(n, d), torch_mod.fft.fftfreq(n, d))
        _same(ember.fft.rfftfreq(n, d), torch_mod.fft.rfftfreq(n, d))
    _same(
        ember.fft.fftfreq(4, dtype=ember.float64), torch_mod.fft.fftfreq(4, dtype=torch_mod.float64)
    )
    for dim in (None, 1, (0, 1), -1):
        for m_shift in ("fftshift", "ifftshift"):
            e = getattr(ember.fft, m_shift)(ember.arange(10.0).reshape(2, 5), dim=dim)
            t = getattr(torch_mod.fft, m_shift)(torch_mod.arange(10.0).reshape(2, 5), dim=dim)
            _same(e, t)
    x = ember.from_numpy(X[0]).requires_grad_()
    assert ember.autograd.gradcheck(lambda v: ember.fft.fftshift(v) * 2, (x,))


def test_round_trips():
    z = ember.from_numpy(Z)
    np.testing.assert_allclose(ember.fft.ifftn(ember.fft.fftn(z)).numpy(), Z, atol=1e-12)
    x = ember.from_numpy(X)
    back = ember.fft.irfftn(ember.fft.rfftn(x), s=X.shape)
    np.testing.assert_allclose(back.numpy(), X, atol=1e-12)
    np.testing.assert_allclose(ember.fft.hfft(ember.fft.ihfft(x), n=5).numpy(), X, atol=1e-12)
