"""Found by the op fuzzer (tests/fuzz/test_ops_fuzz.py): dtypes and shapes torch refuses, which
ember accepted, computed in another dtype, or refused with a NumPy error. Each raises torch's
exception type with torch's message; the torch half compares with torch where it is installed."""

import pytest

import ember

# (call on ember or torch, exception type, message)
CASES = {
    "gcd of bools": (
        lambda m: m.gcd(m.tensor(False), m.tensor(True)),
        NotImplementedError,
        "\"gcd_cpu\" not implemented for 'Bool'",
    ),
    "lcm of floats": (
        lambda m: m.lcm(m.tensor(3), m.tensor(1.5)),
        NotImplementedError,
        "\"lcm_cpu\" not implemented for 'Float'",
    ),
    "left shift of bools": (
        lambda m: m.bitwise_left_shift(m.tensor(True), m.tensor(True)),
        NotImplementedError,
        "\"lshift_cpu\" not implemented for 'Bool'",
    ),
    "right shift of doubles": (
        lambda m: m.bitwise_right_shift(m.tensor(8), m.tensor(1.0, dtype=m.float64)),
        NotImplementedError,
        "\"rshift_cpu\" not implemented for 'Double'",
    ),
    "erfcx of bfloat16": (
        lambda m: m.special.erfcx(m.ones(2, dtype=m.bfloat16)),
        NotImplementedError,
        "\"erfcx_cpu\" not implemented for 'BFloat16'",
    ),
    "log_ndtr of float16": (
        lambda m: m.special.log_ndtr(m.ones(2, dtype=m.float16)),
        NotImplementedError,
        "\"log_ndtr_cpu\" not implemented for 'Half'",
    ),
    "ndtri of float16": (
        lambda m: m.special.ndtri(m.ones(2, dtype=m.float16)),
        NotImplementedError,
        "\"ndtri_cpu\" not implemented for 'Half'",
    ),
    "hardtanh of uint8 with a negative limit": (
        lambda m: m.nn.functional.hardtanh(m.tensor([3], dtype=m.uint8)),
        RuntimeError,
        "cannot do hardtanh on an unsigned type with negative limits",
    ),
    "softmax of int64 over the last dim": (
        lambda m: m.softmax(m.ones(2, 3, dtype=m.int64), -1),
        NotImplementedError,
        "\"softmax_lastdim_kernel_impl\" not implemented for 'Long'",
    ),
    "log_softmax of bool over another dim": (
        lambda m: m.log_softmax(m.ones(2, 3, dtype=m.bool), 0),
        NotImplementedError,
        "\"log_softmax_kernel_impl\" not implemented for 'Bool'",
    ),
    "addcmul of tensors that do not broadcast together": (
        lambda m: m.addcmul(m.tensor(3.0), m.ones(0), m.ones(2)),
        RuntimeError,
        "The size of tensor a (0) must match the size of tensor b (2) at non-singleton dimension 0",
    ),
    "lerp of tensors that do not broadcast together": (
        lambda m: m.lerp(m.ones(2), m.ones(1), m.ones(3)),
        RuntimeError,
        "The size of tensor a (2) must match the size of tensor b (3) at non-singleton dimension 0",
    ),
    "lerp with a weight of another dtype": (
        lambda m: m.lerp(m.ones(2), m.ones(2), m.tensor([0.5], dtype=m.float64)),
        RuntimeError,
        "for `weight` but got dtype",
    ),
}


@pytest.mark.parametrize("case", CASES)
def test_ember_refuses_as_torch_does(case):
    call, kind, words = CASES[case]
    with pytest.raises(kind) as caught:
        call(ember)
    assert type(caught.value) is kind
    assert words in str(caught.value)


@pytest.mark.parametrize("case", CASES)
def test_torch_refuses_the_same_way(case, torch_mod):
    call, kind, words = CASES[case]
    with pytest.raises(kind) as caught:
        call(torch_mod)
    assert words in str(caught.value)


def test_what_torch_computes_still_computes():
    assert ember.gcd(ember.tensor([12, 9]), ember.tensor([8, 6])).tolist() == [4, 3]
    assert ember.bitwise_left_shift(ember.tensor([1], dtype=ember.uint8), 3).tolist() == [8]
    assert ember.nn.functional.hardtanh(ember.tensor([3], dtype=ember.uint8), 0, 2).tolist() == [2]
    assert ember.softmax(ember.ones(2, dtype=ember.int64), 0, dtype=ember.float32).tolist() == [
        0.5,
        0.5,
    ]
    empty = ember.softmax(ember.ones(0, 3, dtype=ember.int32), 1)
    assert empty.dtype == ember.int32 and empty.shape == (0, 3)
    assert ember.special.erfcx(ember.zeros(1)).tolist() == [1.0]
    assert ember.addcmul(ember.zeros(2), ember.ones(2), ember.full((1,), 3.0)).tolist() == [3, 3]


def test_nan_to_num_replaces_in_bfloat16_as_torch():
    # NumPy's nan_to_num passed over bfloat16 arrays: NaN stayed NaN (found by the long fuzz run)
    x = ember.tensor([float("nan"), float("inf"), -float("inf"), 1.5]).to(ember.bfloat16)
    top = ember.finfo(ember.bfloat16).max
    assert ember.nan_to_num(x).float().tolist() == [0.0, top, -top, 1.5]
    assert ember.nan_to_num(x, 1.0, 2.0, -3.0).float().tolist() == [1.0, 2.0, -3.0, 1.5]
    assert ember.nan_to_num(x).dtype == ember.bfloat16


def test_a_zero_dim_lerp_weight_is_taken_as_a_number_as_in_torch():
    start = ember.zeros(2, dtype=ember.bfloat16)
    out = ember.lerp(
        start, ember.ones(2, dtype=ember.bfloat16), ember.tensor(0.5, dtype=ember.float64)
    )
    assert out.dtype == ember.bfloat16 and out.float().tolist() == [0.5, 0.5]
    weight = ember.tensor(0.25, dtype=ember.float64, requires_grad=True)
    ember.lerp(ember.zeros(2), ember.ones(2), weight).sum().backward()
    assert weight.grad.dtype == ember.float64 and weight.grad.item() == 2.0


def test_lerp_uses_torchs_two_sided_formula():
    # from end for weight >= 0.5: exact at weight 1, and an infinite start gives -inf, not NaN
    start = ember.tensor([float("inf"), 0.1])
    out = ember.lerp(start, ember.tensor([-0.4, 0.7]), 2.5)
    assert out.tolist()[0] == float("-inf")
    assert ember.lerp(ember.tensor([0.1]), ember.tensor([0.7]), 1.0).tolist() == [
        ember.tensor(0.7).item()
    ]


def test_heaviside_of_nan_is_zero_as_in_torch():
    # torch computes (x == 0 ? values : x > 0); NumPy's heaviside gives NaN for NaN
    x = ember.tensor([-1.5, 0.0, 2.0, float("nan")])
    assert ember.heaviside(x, ember.tensor([0.5])).tolist() == [0.0, 0.5, 1.0, 0.0]
    assert ember.heaviside(ember.tensor([0, -2, 3]), ember.tensor([7])).tolist() == [7, 0, 1]


def test_softshrink_keeps_nan_as_torch():
    x = ember.tensor([0.4, float("nan"), -2.0, 1.0], dtype=ember.float16)
    out = ember.nn.functional.softshrink(x).float().tolist()
    assert out[0] == 0.0 and out[1] != out[1] and out[2:] == [-1.5, 0.5]
