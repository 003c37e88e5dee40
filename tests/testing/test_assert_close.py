"""ember.testing against torch.testing: same outcome, same exception type, same message."""

import re
import subprocess
import sys

import numpy as np
import pytest

import ember

from ._cases import cases, outcome

torch = pytest.importorskip("torch")

NAMES = [name for name, _ in cases(torch)]


def _norm(result):
    kind, message = result
    return kind, message.replace("ember._tensor.Tensor", "ember.Tensor")


@pytest.mark.parametrize("index", range(len(NAMES)), ids=NAMES)
def test_same_outcome_and_message_as_torch(index):
    expected = outcome(cases(torch)[index][1])
    got = _norm(outcome(cases(ember)[index][1]))
    if NAMES[index] == "complex":  # complex abs may round its last bit differently
        number = re.compile(r"\d+\.\d+e?-?\d*")
        expected = (expected[0], number.sub("N", expected[1]))
        got = (got[0], number.sub("N", got[1]))
    assert got == expected


def test_default_tolerances_per_dtype():
    for dtype, (rtol, atol) in {
        ember.float16: (1e-3, 1e-5),
        ember.bfloat16: (1.6e-2, 1e-5),
        ember.float32: (1.3e-6, 1e-5),
        ember.float64: (1e-7, 1e-7),
        ember.complex64: (1.3e-6, 1e-5),
    }.items():
        with pytest.raises(AssertionError, match=rf"up to {atol} allowed\)\n.*up to {rtol}"):
            ember.testing.assert_close(
                ember.tensor([1.0], dtype=dtype), ember.tensor([5.0], dtype=dtype)
            )


def test_allclose_warns():
    with pytest.warns(FutureWarning, match="deprecated"):
        ember.testing.assert_allclose(ember.tensor([1.0]), [1.0])


@pytest.mark.parametrize(
    "dtype", [ember.float32, ember.float64, ember.int64, ember.uint8, ember.bool, ember.complex64]
)
def test_make_tensor(dtype):
    x = ember.testing.make_tensor(3, 4, dtype=dtype, device="cpu")
    assert x.shape == (3, 4) and x.dtype == dtype and x.device.type == "cpu"
    if dtype not in (ember.bool, ember.complex64):
        assert x.min().item() >= (0 if dtype == ember.uint8 else -9) and x.max().item() <= 10
    y = ember.testing.make_tensor((2, 5), dtype=dtype, device="cpu", noncontiguous=True)
    assert y.shape == (2, 5) and not y.is_contiguous()
    z = ember.testing.make_tensor(
        50, dtype=dtype, device="cpu", exclude_zero=True, low=0 if dtype != ember.bool else None
    )
    if dtype != ember.bool:
        assert bool((z != 0).all())
    w = ember.testing.make_tensor(4, dtype=ember.float32, device="cpu", low=2, high=3)
    assert bool(((w >= 2) & (w <= 3)).all())
    g = ember.testing.make_tensor(2, dtype=ember.float32, device="cpu", requires_grad=True)
    assert g.requires_grad and g.is_leaf


def test_numpy_arrays_and_sequences():
    ember.testing.assert_close(np.arange(3.0), np.arange(3.0))
    ember.testing.assert_close([ember.ones(2), {"k": (1, 2.0)}], [ember.ones(2), {"k": (1, 2.0)}])


def test_loads_lazily():
    code = (
        "import sys, ember; assert 'ember.testing' not in sys.modules; ember.testing.assert_close"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
