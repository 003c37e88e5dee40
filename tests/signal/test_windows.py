"""ember.signal.windows against torch.signal.windows: values, dtypes and errors."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember.signal import windows

CASES = [
    ("hann", {}),
    ("hamming", {}),
    ("blackman", {}),
    ("nuttall", {}),
    ("bartlett", {}),
    ("cosine", {}),
    ("general_hamming", {"alpha": 0.6}),
    ("general_cosine", {"a": [0.46, 0.23, 0.31]}),
    ("kaiser", {"beta": 5.0}),
    ("gaussian", {"std": 1.7}),
    ("exponential", {"tau": 2.5}),
    ("exponential", {"center": 1.0, "tau": 0.5}),
]


@pytest.mark.parametrize(
    ("name", "kwargs"), CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)]
)
@pytest.mark.parametrize("sym", [True, False])
@pytest.mark.parametrize("dtype", [None, "float64"])
def test_windows_match_torch(torch_mod, name, kwargs, sym, dtype):
    if sym and "center" in kwargs:
        with pytest.raises(ValueError, match="Center must be None for symmetric windows"):
            getattr(windows, name)(5, sym=sym, **kwargs)
        return
    for M in (0, 1, 2, 7, 16):
        ours = getattr(windows, name)(M, sym=sym, dtype=dtype and getattr(ember, dtype), **kwargs)
        theirs = getattr(torch_mod.signal.windows, name)(
            M, sym=sym, dtype=dtype and getattr(torch_mod, dtype), **kwargs
        )
        assert ours.dtype.name == str(theirs.dtype).split(".")[-1]
        assert tuple(ours.shape) == tuple(theirs.shape)
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=2e-6, atol=2e-7)


def test_bad_arguments_raise_torchs_errors():
    with pytest.raises(ValueError, match="requires non-negative window length, got M=-1"):
        windows.hann(-1)
    with pytest.raises(ValueError, match="expects float32 or float64 dtypes, got: ember.int64$"):
        windows.hann(4, dtype=ember.int64)
    with pytest.raises(
        ValueError, match="kaiser is implemented for strided tensors only, got: ember.sparse_coo$"
    ):
        windows.kaiser(4, layout=ember.sparse_coo)
    assert windows.bartlett(3, layout=ember.strided).layout == ember.strided
    with pytest.raises(ValueError, match="Tau must be positive"):
        windows.exponential(4, tau=0)
    with pytest.raises(ValueError, match="Standard deviation must be positive"):
        windows.gaussian(4, std=0)
    with pytest.raises(ValueError, match="beta must be non-negative"):
        windows.kaiser(4, beta=-1)
    with pytest.raises(TypeError, match="Coefficients must be a list/tuple"):
        windows.general_cosine(4, a=3)
    with pytest.raises(ValueError, match="Coefficients cannot be empty"):
        windows.general_cosine(4, a=[])


def test_requires_grad_and_the_lazy_namespace():
    assert ember.signal.windows.hann(3, requires_grad=True).requires_grad
