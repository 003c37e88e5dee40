"""Random fills and samplers check their parameters as torch does (ember._random.argument_checks):
the same exception type and message, before any draw, for empty tensors too."""

from __future__ import annotations

import warnings

import pytest

import ember

NAN, INF = float("nan"), float("inf")


def _empty(m, dtype="float32", n=3):
    return m.empty(n, dtype=getattr(m, dtype))


# (id, call on a module (ember or torch), exception type, message ember's must contain)
BAD = [
    ("exponential_(-1)", lambda m: _empty(m).exponential_(-1), RuntimeError,
     "exponential_ expects lambda > 0.0, but found lambda=-1"),
    ("exponential_(0)", lambda m: _empty(m).exponential_(0), RuntimeError,
     "found lambda=0"),
    ("exponential_(nan)", lambda m: _empty(m).exponential_(NAN), RuntimeError,
     "found lambda=nan"),
    ("exponential_ of an empty tensor", lambda m: _empty(m, n=0).exponential_(-1), RuntimeError,
     "found lambda=-1"),
    ("exponential_ of int64", lambda m: _empty(m, "int64").exponential_(-0.1234567),
     RuntimeError, "found lambda=-0.123457"),
    ("uniform_(1, 0)", lambda m: _empty(m).uniform_(1, 0), RuntimeError,
     "uniform_ expects to return a [from, to) range, but found from=1 > to=0"),
    ("uniform_(0, inf)", lambda m: _empty(m).uniform_(0, INF), RuntimeError,
     "to is out of bounds for float"),
    ("uniform_(nan, 1)", lambda m: _empty(m).uniform_(NAN, 1), RuntimeError,
     "from is out of bounds for float"),
    ("float16 uniform_(0, 70000)", lambda m: _empty(m, "float16").uniform_(0, 70000),
     RuntimeError, "to is out of bounds for c10::Half"),
    ("float16 uniform_ too wide", lambda m: _empty(m, "float16").uniform_(-40000, 40000),
     RuntimeError, "uniform_ expects to-from <= std::numeric_limits<Half>::max()"),
    ("float32 uniform_ too wide", lambda m: _empty(m).uniform_(-3.4e38, 3.4e38), RuntimeError,
     "but found to=3.4e+38 and from=-3.4e+38 which result in to-from to exceed the limit"),
    ("bfloat16 uniform_(1, 0)", lambda m: _empty(m, "bfloat16").uniform_(1, 0), RuntimeError,
     "found from=1 > to=0"),
    ("uniform_ of an empty tensor", lambda m: _empty(m, n=0).uniform_(1, 0), RuntimeError,
     "found from=1 > to=0"),
    ("int64 uniform_(1, 0)", lambda m: _empty(m, "int64").uniform_(1, 0), NotImplementedError,
     "\"check_uniform_bounds\" not implemented for 'Long'"),
    ("bernoulli(tensor([1.5]))", lambda m: m.bernoulli(m.tensor([1.5])), RuntimeError,
     "Expected p_in >= 0 && p_in <= 1 to be true, but got false."),
    ("bernoulli(tensor([-0.5]))", lambda m: m.bernoulli(m.tensor([-0.5])), RuntimeError,
     "Expected p_in >= 0 && p_in <= 1"),
    ("bernoulli(tensor([nan]))", lambda m: m.bernoulli(m.tensor([NAN])), RuntimeError,
     "Expected p_in >= 0 && p_in <= 1"),
    ("bernoulli(x, p=1.5)", lambda m: m.bernoulli(m.tensor([0.5]), 1.5), RuntimeError,
     "bernoulli_ expects p to be in [0, 1], but got p=1.5"),
    ("bernoulli_(2.)", lambda m: _empty(m).bernoulli_(2.0), RuntimeError,
     "bernoulli_ expects p to be in [0, 1], but got p=2"),
    ("bernoulli_(nan)", lambda m: _empty(m).bernoulli_(NAN), RuntimeError, "but got p=nan"),
    ("int64 bernoulli_(2)", lambda m: _empty(m, "int64").bernoulli_(2), RuntimeError,
     "but got p=2"),
    ("bernoulli_(tensor p > 1)", lambda m: _empty(m, n=2).bernoulli_(m.tensor([2.0, 0.5])),
     RuntimeError, "Expected p_in >= 0 && p_in <= 1"),
    ("normal(0, nan, size)", lambda m: m.normal(0.0, NAN, (3,)), RuntimeError,
     "normal expects std >= 0.0, but found std nan"),
    ("normal(0, -1, size)", lambda m: m.normal(0.0, -1.0, (3,)), RuntimeError,
     "normal expects std >= 0.0, but found std -1"),
    ("normal(0, -1, empty size)", lambda m: m.normal(0.0, -1.0, (0,)), RuntimeError,
     "found std -1"),
    ("normal(tensor, nan)", lambda m: m.normal(m.zeros(3), NAN), RuntimeError,
     "normal expects std >= 0.0, but found std nan"),
    ("normal(tensor, -1)", lambda m: m.normal(m.zeros(3), -1.0), RuntimeError,
     "normal expects std >= 0.0, but found std -1"),
    ("normal(0, tensor with nan)", lambda m: m.normal(0.0, m.tensor([NAN, 1.0])), RuntimeError,
     "normal expects all elements of std >= 0.0"),
    ("normal(tensor, tensor < 0)", lambda m: m.normal(m.zeros(2), m.tensor([-1.0, 1.0])),
     RuntimeError, "normal expects all elements of std >= 0.0"),
    ("normal_(0, -1)", lambda m: _empty(m).normal_(0, -1), RuntimeError,
     "normal expects std >= 0.0, but found std -1"),
    ("normal_(0, nan)", lambda m: _empty(m).normal_(0, NAN), RuntimeError, "found std nan"),
    ("int64 normal_(0, -1)", lambda m: _empty(m, "int64").normal_(0, -1), RuntimeError,
     "found std -1"),
    ("int8.random_(0, 1000)", lambda m: _empty(m, "int8").random_(0, 1000), RuntimeError,
     "to - 1 is out of bounds for signed char"),
    ("int8.random_(1000)", lambda m: _empty(m, "int8").random_(1000), RuntimeError,
     "to - 1 is out of bounds for signed char"),
    ("int8.random_(to=1000)", lambda m: _empty(m, "int8").random_(to=1000), RuntimeError,
     "to - 1 is out of bounds for signed char"),
    ("int8.random_(-129, 0)", lambda m: _empty(m, "int8").random_(-129, 0), RuntimeError,
     "from is out of bounds for signed char"),
    ("int8.random_(200, None)", lambda m: _empty(m, "int8").random_(200, None), RuntimeError,
     "from is out of bounds for signed char"),
    ("uint8.random_(-1, 5)", lambda m: _empty(m, "uint8").random_(-1, 5), RuntimeError,
     "from is out of bounds for unsigned char"),
    ("int16.random_(0, 40000)", lambda m: _empty(m, "int16").random_(0, 40000), RuntimeError,
     "to - 1 is out of bounds for short int"),
    ("bool.random_(0, 3)", lambda m: _empty(m, "bool").random_(0, 3), RuntimeError,
     "to - 1 is out of bounds for bool"),
    ("empty int8.random_(0, 1000)", lambda m: _empty(m, "int8", 0).random_(0, 1000),
     RuntimeError, "to - 1 is out of bounds for signed char"),
    ("float16.random_(0, 70000)", lambda m: _empty(m, "float16").random_(0, 70000),
     RuntimeError, "to - 1 is out of bounds for c10::Half"),
    ("float16.random_(70000, None)", lambda m: _empty(m, "float16").random_(70000, None),
     RuntimeError, "from is out of bounds for c10::Half"),
    ("float16.random_(3000, None)", lambda m: _empty(m, "float16").random_(3000, None),
     RuntimeError, "but got from=3000 > to_inc=2048"),
    ("random_(5, 5)", lambda m: _empty(m).random_(5, 5), RuntimeError,
     "random_ expects 'from' to be less than 'to', but got from=5 >= to=5"),
    ("random_(-3)", lambda m: _empty(m).random_(-3), RuntimeError,
     "but got from=0 >= to=-3"),
    ("complex random_", lambda m: _empty(m, "complex64").random_(0, 3), RuntimeError,
     "check_random_bounds handles only integral, floating-point and boolean types"),
    ("random_(2.5)", lambda m: _empty(m).random_(2.5), TypeError,
     "random_() received an invalid combination of arguments - got (float)"),
    ("randint(..., dtype=float16) beyond its range",
     lambda m: m.randint(0, 70000, (3,), dtype=m.float16), RuntimeError,
     "to - 1 is out of bounds for c10::Half"),
    ("randint int8 1000", lambda m: m.randint(0, 1000, (3,), dtype=m.int8), RuntimeError,
     "to - 1 is out of bounds for signed char"),
    ("randint uint8 from -1", lambda m: m.randint(-1, 10, (3,), dtype=m.uint8), RuntimeError,
     "from is out of bounds for unsigned char"),
    ("randint bool 3", lambda m: m.randint(0, 3, (3,), dtype=m.bool), RuntimeError,
     "to - 1 is out of bounds for bool"),
    ("randint(2.5, size)", lambda m: m.randint(2.5, (2,)), TypeError,
     "randint(): argument 'high' (position 1) must be int, not float"),
    ("randint_like int8 1000", lambda m: m.randint_like(m.zeros(3, dtype=m.int8), 1000),
     RuntimeError, "to - 1 is out of bounds for signed char"),
    ("randperm(-1)", lambda m: m.randperm(-1), RuntimeError,
     "Trying to create tensor with negative dimension -1: [-1]"),
    ("randperm(2.5)", lambda m: m.randperm(2.5), TypeError,
     "randperm(): argument 'n' (position 1) must be int, not float"),
    ("randperm(True)", lambda m: m.randperm(True), TypeError, "must be int, not bool"),
    ("randperm float16 2050", lambda m: m.randperm(2050, dtype=m.float16), RuntimeError,
     "n cannot be greater than 2049 for Half type."),
    ("randperm int8 129", lambda m: m.randperm(129, dtype=m.int8), RuntimeError,
     "value cannot be converted to type int8_t without overflow"),
    ("randperm uint8 257", lambda m: m.randperm(257, dtype=m.uint8), RuntimeError,
     "value cannot be converted to type uint8_t without overflow"),
    ("randperm bool", lambda m: m.randperm(3, dtype=m.bool), NotImplementedError,
     "\"randperm\" not implemented for 'Bool'"),
    ("randperm complex", lambda m: m.randperm(3, dtype=m.complex64), NotImplementedError,
     "\"randperm\" not implemented for 'ComplexFloat'"),
    ("geometric_(0)", lambda m: _empty(m).geometric_(0), RuntimeError,
     "geometric_ expects p to be in (0, 1), but got p=0"),
    ("geometric_(1)", lambda m: _empty(m).geometric_(1), RuntimeError, "but got p=1"),
    ("geometric_(1.5)", lambda m: _empty(m).geometric_(1.5), RuntimeError, "but got p=1.5"),
    ("geometric_(nan)", lambda m: _empty(m).geometric_(NAN), RuntimeError, "but got p=nan"),
    ("bool geometric_(0)", lambda m: _empty(m, "bool").geometric_(0), RuntimeError,
     "but got p=0"),
    ("log_normal_(0, -1)", lambda m: _empty(m).log_normal_(0, -1), RuntimeError,
     "log_normal_ expects std > 0.0, but found std=-1"),
    ("log_normal_(0, 0)", lambda m: _empty(m).log_normal_(0, 0), RuntimeError,
     "found std=0"),
    ("log_normal_(0, nan)", lambda m: _empty(m).log_normal_(0, NAN), RuntimeError,
     "found std=nan"),
    ("cauchy_(0, -1)", lambda m: _empty(m).cauchy_(0, -1), RuntimeError,
     "cauchy_ expects sigma > 0.0, but found sigma=-1"),
    ("cauchy_(0, 0)", lambda m: _empty(m).cauchy_(0, 0), RuntimeError, "found sigma=0"),
    ("int64 cauchy_(0, -1)", lambda m: _empty(m, "int64").cauchy_(0, -1), RuntimeError,
     "found sigma=-1"),
    ("multinomial with a negative weight", lambda m: m.multinomial(m.tensor([-1.0, 2.0]), 1),
     RuntimeError, "probability tensor contains either `inf`, `nan` or element < 0"),
    ("multinomial with nan", lambda m: m.multinomial(m.tensor([NAN, 2.0]), 1), RuntimeError,
     "probability tensor contains either `inf`, `nan` or element < 0"),
    ("multinomial with inf", lambda m: m.multinomial(m.tensor([INF, 2.0]), 1), RuntimeError,
     "probability tensor contains either `inf`, `nan` or element < 0"),
    ("poisson with a negative rate", lambda m: m.poisson(m.tensor([-1.0, 2.0])), RuntimeError,
     "invalid Poisson rate, expected rate to be non-negative"),
    ("rand of int64", lambda m: m.rand(3, dtype=m.int64), NotImplementedError,
     "\"check_uniform_bounds\" not implemented for 'Long'"),
    ("randn of int32", lambda m: m.randn(3, dtype=m.int32), NotImplementedError,
     "\"normal_kernel_cpu\" not implemented for 'Int'"),
    ("normal of int64", lambda m: m.normal(0.0, 1.0, (3,), dtype=m.int64), NotImplementedError,
     "\"normal_kernel_cpu\" not implemented for 'Long'"),
]  # fmt: skip


@pytest.mark.parametrize(("call", "error", "phrase"), [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_bad_parameters_raise(call, error, phrase):
    with pytest.raises(error) as info:
        call(ember)
    assert phrase in str(info.value)


@pytest.mark.parametrize(("call", "error"), [b[1:3] for b in BAD], ids=[b[0] for b in BAD])
def test_bad_parameters_raise_as_torch(call, error, torch_mod):
    with pytest.raises(error) as theirs:
        call(torch_mod)
    with pytest.raises(error) as ours:
        call(ember)
    expected = str(theirs.value).replace("torch.", "ember.")
    assert str(ours.value) == expected


GOOD = [
    ("uniform_(0, 0)", lambda m: _empty(m).uniform_(0, 0)),
    ("bernoulli_(1)", lambda m: _empty(m).bernoulli_(1.0)),
    ("bernoulli_(0)", lambda m: _empty(m).bernoulli_(0)),
    ("bernoulli of an empty tensor", lambda m: m.bernoulli(m.tensor([]))),
    ("exponential_(inf)", lambda m: _empty(m).exponential_(INF)),
    ("normal(0, 0)", lambda m: m.normal(0.0, 0.0, (3,))),
    ("normal(nan, 1)", lambda m: m.normal(NAN, 1.0, (3,))),
    ("normal(tensor, empty std)", lambda m: m.normal(m.zeros(0), m.zeros(0))),
    ("int8.random_(-128, 128)", lambda m: _empty(m, "int8").random_(-128, 128)),
    ("uint8.random_(0, 256)", lambda m: _empty(m, "uint8").random_(0, 256)),
    ("bool.random_(0, 2)", lambda m: _empty(m, "bool").random_(0, 2)),
    ("bool.random_(1, None)", lambda m: _empty(m, "bool").random_(1, None)),
    ("float16.random_(0, 2049)", lambda m: _empty(m, "float16").random_(0, 2049)),
    ("random_ with a 0-d tensor bound", lambda m: _empty(m).random_(m.tensor(3))),
    ("randperm int8 128", lambda m: m.randperm(128, dtype=m.int8)),
    ("randperm uint8 256", lambda m: m.randperm(256, dtype=m.uint8)),
    ("randperm float16 2049", lambda m: m.randperm(2049, dtype=m.float16)),
    ("randperm bfloat16", lambda m: m.randperm(3, dtype=m.bfloat16)),
    ("randperm(0)", lambda m: m.randperm(0)),
]


@pytest.mark.parametrize("call", [g[1] for g in GOOD], ids=[g[0] for g in GOOD])
def test_parameters_at_the_limits_are_accepted(call):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert isinstance(call(ember), ember.Tensor)


@pytest.mark.parametrize("call", [g[1] for g in GOOD], ids=[g[0] for g in GOOD])
def test_parameters_at_the_limits_are_accepted_by_torch(call, torch_mod):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert isinstance(call(torch_mod), torch_mod.Tensor)


WARNS = [
    ("float16.random_(0, 2050)", lambda m: _empty(m, "float16").random_(0, 2050),
     "to - 1 is out of bounds [-(2^11), 2^11]. Due to precision limitations c10::Half"),
    ("float32.random_(-2**25, 0)", lambda m: _empty(m).random_(-(2**25), 0),
     "from is out of bounds [-(2^24), 2^24]. Due to precision limitations float"),
    ("bfloat16.random_(0, 300)", lambda m: _empty(m, "bfloat16").random_(0, 300),
     "to - 1 is out of bounds [-(2^8), 2^8]. Due to precision limitations c10::BFloat16"),
    ("randint float16 4098", lambda m: m.randint(0, 4098, (3,), dtype=m.float16),
     "to - 1 is out of bounds [-(2^11), 2^11]"),
]  # fmt: skip


@pytest.mark.parametrize(("call", "phrase"), [w[1:] for w in WARNS], ids=[w[0] for w in WARNS])
def test_float_bounds_beyond_exact_integers_warn(call, phrase):
    with pytest.warns(UserWarning, match="Due to precision limitations") as record:
        call(ember)
    assert any(phrase in str(w.message) for w in record)


@pytest.mark.parametrize(("call", "phrase"), [w[1:] for w in WARNS], ids=[w[0] for w in WARNS])
def test_float_bounds_beyond_exact_integers_warn_as_torch(call, phrase, torch_mod):
    with pytest.warns(UserWarning) as record:
        call(torch_mod)
    assert any(phrase in str(w.message) for w in record)


def _draws(m):
    m.manual_seed(3)
    return [
        m.empty(6, dtype=m.int8).random_(5, None).tolist(),
        m.empty(6, dtype=m.int8).random_(**{"from": -3, "to": 0}).tolist(),
        m.empty(6, dtype=m.int8).random_(to=4).tolist(),
        m.empty(4, dtype=m.float16).random_(2040, None).tolist(),
        m.empty(4, dtype=m.bool).random_(0, None).tolist(),
        m.empty(3, dtype=m.int64).random_(5, None).tolist(),
        m.randint(-5, 5, (4,), dtype=m.float16).tolist(),
    ]


def test_random_from_without_to_draws_up_to_the_dtype_max():
    draws = _draws(ember)
    assert all(5 <= v <= 127 for v in draws[0])
    assert all(-3 <= v < 0 for v in draws[1])
    assert all(0 <= v < 4 for v in draws[2])
    assert all(2040 <= v <= 2048 for v in draws[3])


def test_random_bounds_draw_torchs_values(torch_mod):
    assert _draws(ember) == _draws(torch_mod)
