"""stft / istft vs torch: frames, windows, centring, normalisation, one- and two-sided
spectra, round trips, gradients."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import ember
from ember.fft._stft import istft, stft

RNG = np.random.default_rng(0)
X = RNG.normal(size=(2, 40))
CASES = [
    {"n_fft": 8},
    {"n_fft": 8, "hop_length": 3, "win_length": 6},
    {"n_fft": 8, "center": False, "normalized": True},
    {"n_fft": 7, "hop_length": 2},
    {"n_fft": 8, "onesided": False},
]


def _hann(n: int) -> np.ndarray:
    return np.hanning(n + 2)[1:-1].copy()


@pytest.mark.parametrize("kwargs", CASES)
@pytest.mark.parametrize("kind", ["batched", "single", "complex"])
def test_stft_and_istft_match_torch(torch_mod, kwargs, kind):
    arr = {"batched": X, "single": X[0], "complex": X + 1j * X[::-1]}[kind]
    window = _hann(kwargs.get("win_length", kwargs["n_fft"]))
    t = torch_mod.stft(
        torch_mod.from_numpy(arr.copy()),
        window=torch_mod.from_numpy(window),
        return_complex=True,
        **kwargs,
    )
    e = stft(
        ember.from_numpy(arr.copy()), window=ember.from_numpy(window), return_complex=True, **kwargs
    )
    assert tuple(e.shape) == tuple(t.shape) and e.dtype.name == "complex128"
    np.testing.assert_allclose(e.numpy(), t.numpy(), atol=1e-10)
    inverse = {k: v for k, v in kwargs.items() if k != "pad_mode"}
    back_kwargs = dict(length=arr.shape[-1], return_complex=kind == "complex", **inverse)
    ti = torch_mod.istft(t, window=torch_mod.from_numpy(window), **back_kwargs)
    ei = istft(e, window=ember.from_numpy(window), **back_kwargs)
    assert tuple(ei.shape) == tuple(ti.shape)
    np.testing.assert_allclose(ei.numpy(), ti.numpy(), atol=1e-10)
    np.testing.assert_allclose(ei.numpy(), arr, atol=1e-10)  # perfect reconstruction


def test_default_window_float32_and_return_complex_false(torch_mod):
    x = X[0].astype(np.float32)
    with pytest.warns(UserWarning, match="A window was not provided"):
        e = stft(ember.from_numpy(x.copy()), 16, return_complex=True)
    with warnings.catch_warnings():  # torch warns once per process: an earlier test may have
        warnings.simplefilter("ignore")
        t = torch_mod.stft(torch_mod.from_numpy(x.copy()), 16, return_complex=True)
    assert e.dtype.name == "complex64"
    np.testing.assert_allclose(e.numpy(), t.numpy(), atol=1e-4)
    pairs = stft(ember.from_numpy(x.copy()), 16, window=ember.ones(16), return_complex=False)
    assert tuple(pairs.shape) == (*t.shape, 2) and pairs.dtype is ember.float32


def test_stft_errors():
    x = ember.from_numpy(X[0].copy())
    with pytest.raises(RuntimeError, match="requires the return_complex parameter"):
        stft(x, 8)
    with pytest.raises(RuntimeError, match="expected 0 < n_fft"):
        stft(x, 100, window=ember.ones(100), return_complex=True, center=False)
    with pytest.raises(RuntimeError, match="complex-valued input"):
        istft(x.reshape(4, 10), 6)


def test_gradcheck():
    x = ember.from_numpy(X[0, :12].copy()).requires_grad_()
    window = ember.from_numpy(_hann(4)).requires_grad_()
    assert ember.autograd.gradcheck(
        lambda v, w: stft(v, 4, hop_length=2, window=w, return_complex=True), (x, window)
    )
    spec = stft(x.detach(), 4, hop_length=1, window=window.detach(), return_complex=True)
    spec = spec.detach().requires_grad_()
    assert ember.autograd.gradcheck(
        lambda s: istft(s, 4, hop_length=1, window=window.detach(), length=12), (spec,)
    )


def test_tensor_methods():
    x = ember.from_numpy(X[0].copy())
    window = ember.from_numpy(_hann(8))
    spec = x.stft(8, window=window, return_complex=True)
    np.testing.assert_allclose(spec.numpy(), stft(x, 8, window=window, return_complex=True).numpy())
    np.testing.assert_allclose(spec.istft(8, window=window, length=40).numpy(), X[0], atol=1e-10)


def test_istft_real_output_of_a_two_sided_spectrum_reads_its_first_half_as_hermitian():
    # ATen narrows a two-sided spectrum to n_fft // 2 + 1 bins and takes irfft, so a
    # non-Hermitian spectrum's second half is ignored (ifft(...).real would use it)
    rng = np.random.default_rng(0)
    spec = rng.standard_normal((8, 5)) + 1j * rng.standard_normal((8, 5))
    two_sided = ember.istft(ember.tensor(spec), 8, onesided=False)
    one_sided = ember.istft(ember.tensor(spec[:5]), 8, onesided=True)
    assert not two_sided.is_complex()
    np.testing.assert_allclose(two_sided.numpy(), one_sided.numpy(), rtol=1e-12)


def test_istft_complex_window_divides_by_its_square_not_its_modulus():
    rng = np.random.default_rng(1)
    spec = ember.tensor(rng.standard_normal((8, 5)) + 1j * rng.standard_normal((8, 5)))
    plain = ember.istft(spec, 8, window=ember.ones(8, dtype=ember.complex128), return_complex=True)
    scale = 0.6 + 0.8j  # window c·1: frames · c / (c² · Σ1) = plain / c
    scaled = ember.istft(
        spec, 8, window=ember.full((8,), scale, dtype=ember.complex128), return_complex=True
    )
    np.testing.assert_allclose(scaled.numpy(), plain.numpy() / scale, rtol=1e-12)
