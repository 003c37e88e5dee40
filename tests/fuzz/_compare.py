"""Shared pieces of the fuzz suites: hypothesis settings, input strategies over every dtype
torch has on the CPU, and the check that ember either matches torch (values, dtype, shape) or
raises torch's exception type."""

from __future__ import annotations

import os
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import array_shapes

import ember

torch = pytest.importorskip("torch")

EXAMPLES = int(os.environ.get("EMBER_FUZZ_EXAMPLES", "20"))


def fuzz_settings(examples: int = EXAMPLES) -> settings:
    return settings(
        max_examples=examples,
        deadline=None,
        derandomize=True,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )


FUZZ = fuzz_settings()
FEW = fuzz_settings(max(EXAMPLES // 2, 1))  # for families with many parametrizations

INTEGER = ["int64", "int32", "int16", "int8", "uint8"]
FLOATING = ["float32", "float64", "float16", "bfloat16"]
DTYPES = ["float32", "float64", "int64", "bool"]
ALL_DTYPES = FLOATING + INTEGER + ["bool"]
SPECIAL = [0.0, -0.0, 1.0, -1.0, np.nan, np.inf, -np.inf, 1e-30, 1e30]


class Input:
    """An array and the dtype both libraries give it (bfloat16 travels as float32)."""

    __slots__ = ("array", "dtype")

    def __init__(self, array: np.ndarray, dtype: str):
        self.array, self.dtype = array, dtype

    def make(self, lib):
        if self.dtype == "bfloat16":
            return lib.tensor(self.array.astype(np.float32)).to(lib.bfloat16)
        return lib.tensor(self.array)

    def __repr__(self) -> str:
        return f"Input({self.array!r}, {self.dtype})"


def shapes(min_dims: int = 0, max_dims: int = 3, max_side: int = 4):
    return array_shapes(min_dims=min_dims, max_dims=max_dims, min_side=0, max_side=max_side)


def rng_of(draw) -> np.random.Generator:
    """A NumPy generator seeded by hypothesis: choices made with it are uniform (hypothesis's
    own draws favour the first entries of a list), and still replayed from the example."""
    return np.random.default_rng(draw(st.integers(0, 2**32 - 1)))


def pick(rng: np.random.Generator, options):
    return options[int(rng.integers(len(options)))]


@st.composite
def arrays(draw, shape=None, dtypes=DTYPES, special: bool = True):
    """Random values of one of ``dtypes``: small integers, or floats with a special value
    (NaN, ±inf, ±0, 1e±30) now and then."""
    shape = draw(shapes()) if shape is None else shape
    rng = rng_of(draw)
    dtype = pick(rng, dtypes)
    if dtype == "bool":
        return Input(rng.random(shape) < 0.5, dtype)
    if dtype in INTEGER:
        low = 0 if dtype == "uint8" else -5
        return Input(rng.integers(low, 6, shape).astype(dtype), dtype)
    data = rng.standard_normal(shape) * 3
    if special and data.size and rng.random() < 0.5:
        flat = data.reshape(-1)
        flat[rng.integers(0, flat.size)] = pick(rng, SPECIAL)
    carrier = "float32" if dtype == "bfloat16" else dtype
    with np.errstate(over="ignore"):  # 1e30 is inf in float16, as in torch
        return Input(data.astype(carrier), dtype)


def _as_input(x):
    return x if isinstance(x, Input) else Input(np.asarray(x), str(np.asarray(x).dtype))


def run(lib, fn, inputs):
    tensors = [_as_input(a).make(lib) for a in inputs]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(lib, *tensors)


def _to_float64(t) -> np.ndarray:
    if t.dtype in (torch.bfloat16, ember.bfloat16):
        t = t.float()
    return t.detach().numpy().astype(np.float64)


def _tolerance(dtype_name: str) -> tuple[float, float]:
    if dtype_name == "bfloat16":
        return 1.6e-2, 1e-2
    if dtype_name == "float16":
        return 2e-3, 1e-3
    return 2e-5, 1e-5


def same(fn, *inputs, values: bool = True, indices_of=()) -> None:
    """``fn(lib, *tensors)`` in torch and in ember: the same exception type, or outputs with
    the same dtype, shape and values (``values=False``: dtypes and shapes only; outputs at
    positions ``indices_of`` are compared by shape and dtype, as ties make them differ)."""
    try:
        expected = run(torch, fn, inputs)
    except Exception as exc:  # torch refuses: ember must refuse with the same type
        with pytest.raises(type(exc)):
            run(ember, fn, inputs)
        return
    got = run(ember, fn, inputs)
    expected = tuple(expected) if isinstance(expected, (tuple, list)) else (expected,)
    got = tuple(got) if isinstance(got, (tuple, list)) else (got,)
    assert len(got) == len(expected)
    for i, (e, t) in enumerate(zip(got, expected)):
        if not hasattr(t, "dtype"):  # a Python value (bool, int ...)
            assert e == t
            continue
        name = str(t.dtype).split(".")[-1]
        assert str(e.dtype).split(".")[-1] == name, (e.dtype, t.dtype)
        assert tuple(e.shape) == tuple(t.shape), (tuple(e.shape), tuple(t.shape))
        if not values or i in indices_of:
            continue
        rtol, atol = _tolerance(name)
        np.testing.assert_allclose(
            _to_float64(e), _to_float64(t), rtol=rtol, atol=atol, equal_nan=True
        )
