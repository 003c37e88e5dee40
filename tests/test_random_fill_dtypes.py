"""In-place random fills refuse the dtypes torch refuses, with its error types and messages."""

from __future__ import annotations

import pytest

import ember

FILLS = [
    ("exponential_", ()),
    ("log_normal_", ()),
    ("cauchy_", ()),
    ("normal_", ()),
    ("uniform_", ()),
    ("geometric_", (0.5,)),
]
DTYPES = ["int64", "int32", "int16", "int8", "uint8", "bool", "float32", "float64", "float16"]


def _outcome(m, dtype: str, name: str, args: tuple):
    try:
        getattr(m.empty(3, dtype=getattr(m, dtype)), name)(*args)
        return "ok"
    except (RuntimeError, NotImplementedError) as error:
        return type(error).__name__, str(error)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(("name", "args"), FILLS, ids=[f[0] for f in FILLS])
def test_fills_refuse_as_torch(torch_mod, dtype, name, args):
    assert _outcome(ember, dtype, name, args) == _outcome(torch_mod, dtype, name, args)


def test_exponential_of_an_integer_tensor_names_the_dtype():
    with pytest.raises(RuntimeError, match="dtype must be a floating point but you specified Long"):
        ember.zeros(2, dtype=ember.int64).exponential_()


@pytest.mark.parametrize("shape", [(), (1,), (5,), (3, 4)])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_bernoulli_of_a_probability_tensor_of_any_rank_draws_torchs_values(torch_mod, shape, dtype):
    """A 0-d float32 probability tensor draws float32 uniforms as any other float32 tensor; a
    Python probability draws float64 ones."""
    for seed in range(8):
        outcomes = []
        for m in (ember, torch_mod):
            m.manual_seed(seed)
            p = m.full(shape, 0.5, dtype=getattr(m, dtype))
            outcomes.append(
                (
                    m.bernoulli(p).tolist(),
                    m.empty(shape).bernoulli_(0.3).tolist(),
                    p.bernoulli_(p).tolist(),
                )
            )
        assert outcomes[0] == outcomes[1], seed
