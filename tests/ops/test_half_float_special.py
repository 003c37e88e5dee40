"""sinc, angle and xlogy of half floats and mixed dtypes round as torch's CPU kernels: sinc in
float32 rounded once, xlogy with log(y) rounded to the half type, angle in the input's dtype."""

import itertools

import numpy as np
import pytest

import ember
from ember.ops.complex import angle

SPECIAL = [-0.0, 0.0, -1.0, float("nan"), float("inf"), float("-inf"), 1e-30, 0.5, 3.0, 1e4]
DTYPES = ["float16", "bfloat16", "float32", "float64", "int64", "uint8", "bool"]


def _values(lib, dtype, seed=0, positive=False):
    rng = np.random.default_rng(seed)
    x = np.concatenate([SPECIAL, rng.uniform(0.01 if positive else -6, 6, 500)])
    return lib.tensor(x).to(getattr(lib, dtype))


def _assert_same(ours, theirs):
    assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
    np.testing.assert_array_equal(ours.float().numpy(), theirs.float().numpy())


@pytest.mark.parametrize("dtype", DTYPES)
def test_sinc_matches_torch(torch_mod, dtype):
    """(float32 sin differs from torch's vectorised one by an ulp now and then, which can
    move a half-float result by one step.)"""
    ours, theirs = ember.sinc(_values(ember, dtype)), torch_mod.sinc(_values(torch_mod, dtype))
    assert ours.dtype.name == str(theirs.dtype).split(".")[-1]
    np.testing.assert_allclose(
        ours.float().numpy(), theirs.float().numpy(), rtol=1e-2 if "16" in dtype else 1e-6
    )


@pytest.mark.parametrize("dtype", DTYPES)
def test_angle_of_real_tensors_matches_torch(torch_mod, dtype):
    _assert_same(angle(_values(ember, dtype)), torch_mod.angle(_values(torch_mod, dtype)))
    x = ember.tensor([-1.0, 2.0], requires_grad=True)
    angle(x).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [0.0, 0.0])


@pytest.mark.parametrize("d1,d2", list(itertools.product(DTYPES, DTYPES)))
def test_xlogy_of_mixed_dtypes_matches_torch(torch_mod, d1, d2):
    ours = ember.xlogy(_values(ember, d1, 1), _values(ember, d2, 2, positive=True))
    theirs = torch_mod.xlogy(_values(torch_mod, d1, 1), _values(torch_mod, d2, 2, positive=True))
    assert ours.dtype.name == str(theirs.dtype).split(".")[-1]
    np.testing.assert_allclose(ours.float().numpy(), theirs.float().numpy(), rtol=2e-6)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("number", [2.5, 0.3, 0, -1])
def test_xlogy_of_half_floats_and_numbers_matches_torch(torch_mod, dtype, number):
    for first in (True, False):
        results = []
        for lib in (ember, torch_mod):
            t = _values(lib, dtype, 3, positive=not first)
            results.append(lib.xlogy(number, t) if first else lib.xlogy(t, number))
        _assert_same(*results)


def test_xlogy_casts_each_integer_operand_to_float_itself(torch_mod):
    for lib in (ember, torch_mod):
        out = lib.xlogy(lib.tensor([3, 3], dtype=lib.uint8), lib.tensor(-4, dtype=lib.int32))
        assert out.dtype == lib.float32 and bool(out.isnan().all())  # log(-4), not log(252)
