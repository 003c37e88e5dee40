import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis.extra.numpy import array_shapes, mutually_broadcastable_shapes

import ember
from tests.helpers import arrays_for, check_gradients, compare_with_torch

SHAPES = array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=3)
FEW = settings(max_examples=8, deadline=None)

# name -> (low, high, kinks to keep away from)
UNARY = {
    "neg": (-2, 2, ()),
    "exp": (-2, 2, ()),
    "exp2": (-2, 2, ()),
    "expm1": (-2, 2, ()),
    "log": (0.2, 3, ()),
    "log2": (0.2, 3, ()),
    "log10": (0.2, 3, ()),
    "log1p": (-0.5, 2, ()),
    "sqrt": (0.2, 3, ()),
    "rsqrt": (0.2, 3, ()),
    "square": (-2, 2, ()),
    "abs": (-2, 2, (0,)),
    "sign": (-2, 2, (0,)),
    "sin": (-3, 3, ()),
    "cos": (-3, 3, ()),
    "tan": (-1.2, 1.2, ()),
    "asin": (-0.8, 0.8, ()),
    "acos": (-0.8, 0.8, ()),
    "atan": (-2, 2, ()),
    "sinh": (-2, 2, ()),
    "cosh": (-2, 2, ()),
    "tanh": (-2, 2, ()),
    "asinh": (-2, 2, ()),
    "acosh": (1.2, 3, ()),
    "atanh": (-0.8, 0.8, ()),
    "sigmoid": (-3, 3, ()),
    "erf": (-2, 2, ()),
    "erfc": (-2, 2, ()),
    "relu": (-2, 2, (0,)),
    "reciprocal": (0.3, 2, ()),
    "floor": (-2, 2, (-1, 0, 1)),
    "ceil": (-2, 2, (-1, 0, 1)),
    "trunc": (-2, 2, (-1, 0, 1)),
    "frac": (-2, 2, (-1, 0, 1)),
    "round": (-2, 2, (-1.5, -0.5, 0.5, 1.5)),
}


@pytest.mark.parametrize("name", sorted(UNARY))
@given(shape=SHAPES)
@FEW
def test_unary_gradcheck(name, shape):
    low, high, kinks = UNARY[name]
    arrays = arrays_for([shape], low, high, avoid=kinks)
    fn = lambda m, x: getattr(m, name)(x)
    check_gradients(fn, arrays)


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_noncontiguous_and_torch(name):
    low, high, kinks = UNARY[name]
    arrays = arrays_for([(3, 4)], low, high, avoid=kinks)
    fn = lambda m, x: getattr(m, name)(x)
    check_gradients(fn, arrays, noncontiguous=True)
    compare_with_torch(fn, arrays)
    compare_with_torch(lambda m, x: getattr(x, name)(), arrays)


@pytest.mark.parametrize("name", ["exp", "sqrt", "sin", "tanh", "sigmoid", "log", "neg", "abs"])
def test_unary_float32_and_integer_inputs_match_torch(name, torch_mod):
    data = np.array([[1, 2], [3, 4]])
    for dtype in (np.float32, np.int64, np.int32):
        compare_with_torch(
            lambda m, x: getattr(m, name)(x), [data], grad=False, dtype=dtype, rtol=1e-6, atol=1e-6
        )


BINARY = {
    "add": lambda m, a, b: m.add(a, b),
    "add_alpha": lambda m, a, b: m.add(a, b, alpha=2.5),
    "sub": lambda m, a, b: a - b,
    "sub_alpha": lambda m, a, b: m.sub(a, b, alpha=-0.5),
    "mul": lambda m, a, b: a * b,
    "div": lambda m, a, b: a / b,
    "pow": lambda m, a, b: a.abs() ** b,
    "atan2": lambda m, a, b: m.atan2(a, b),
    "maximum": lambda m, a, b: m.maximum(a, b),
    "minimum": lambda m, a, b: m.minimum(a, b),
    "hypot": lambda m, a, b: m.hypot(a, b),
    "logaddexp": lambda m, a, b: m.logaddexp(a, b),
    "fmod": lambda m, a, b: m.fmod(a, b),
    "remainder": lambda m, a, b: m.remainder(a, b),
}
BINARY_DOMAIN = {"div": (0.5, 2), "pow": (0.5, 2), "fmod": (0.5, 3), "remainder": (0.5, 3)}


@pytest.mark.parametrize("name", sorted(BINARY))
@given(shapes=mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=3, max_side=3))
@FEW
def test_binary_broadcasting_gradcheck(name, shapes):
    low, high = BINARY_DOMAIN.get(name, (-2, 2))
    a, b = arrays_for(shapes.input_shapes, low, high, avoid=(0,))
    if name in ("fmod", "remainder"):
        b = b * 0 + np.round(b * 3) / 3 + 0.37  # keep a/b away from integers
    check_gradients(BINARY[name], [a, b])


@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_matches_torch(name):
    low, high = BINARY_DOMAIN.get(name, (-2, 2))
    a, b = arrays_for([(2, 3), (3,)], low, high, avoid=(0,))
    compare_with_torch(BINARY[name], [a, b])
    check_gradients(BINARY[name], [a, np.broadcast_to(b, (2, 3)).copy()], noncontiguous=True)


@pytest.mark.parametrize("op", ["+", "-", "*", "/", "**"])
@pytest.mark.parametrize("scalar", [2, 0.5, -3])
def test_scalar_operands_both_sides(op, scalar):
    a = arrays_for([(2, 3)], 0.5, 2)[0]
    forward = eval(f"lambda m, x: x {op} {scalar}")
    reflected = eval(f"lambda m, x: {scalar} {op} x") if op != "**" or scalar > 0 else None
    check_gradients(forward, [a])
    compare_with_torch(forward, [a])
    if reflected is not None:
        check_gradients(reflected, [a])
        compare_with_torch(reflected, [a])


def test_ternary_and_clamp_ops_gradcheck():
    a, b, c = arrays_for([(2, 3), (2, 3), (3,)], -2, 2, avoid=(0,))
    w = arrays_for([(2, 3)], 0.1, 0.9)[0]
    cases = [
        lambda m, x, y, z: m.where(x > 0, y, z),
        lambda m, x, y, z: m.lerp(x, y, 0.3),
        lambda m, x, y, z: m.addcmul(x, y, z, value=0.5),
        lambda m, x, y, z: m.addcdiv(x, y, z.abs() + 1, value=2),
        lambda m, x, y, z: m.clamp(x, -1, 1),
        lambda m, x, y, z: m.clamp(x, min=-0.5),
        lambda m, x, y, z: x.clamp(max=0.5),
        lambda m, x, y, z: m.clamp(x, y - 3, y + 0.5),
        lambda m, x, y, z: m.clip(x, min=z),
        lambda m, x, y, z: m.logit(x.sigmoid(), eps=1e-6),
        lambda m, x, y, z: m.nan_to_num(m.log(x)),
    ]
    for fn in cases:
        check_gradients(fn, [a, b, c])
        compare_with_torch(fn, [a, b, c])
    lerp_w = lambda m, x, y, wt: m.lerp(x, y, wt)
    check_gradients(lerp_w, [a, b, w])
    compare_with_torch(lerp_w, [a, b, w])


def test_pow_special_exponents_and_zero_base():
    x = arrays_for([(4,)], 0.5, 2)[0]
    for e in (0, 1, 2, 3, 0.5, -1.5):
        check_gradients(lambda m, t: t**e, [x])
        compare_with_torch(lambda m, t: t**e, [x])
    base = np.array([0.0, 1.0, 2.0])
    expo = np.array([2.0, 0.5, 1.5])
    compare_with_torch(lambda m, a, b: m.pow(a, b), [base, expo])
    compare_with_torch(lambda m, b: m.pow(0.0, b), [expo])


def test_division_rounding_modes_match_torch(torch_mod):
    a = np.array([-7.0, -3.5, 3.5, 7.0])
    b = np.array([2.0, -2.0, 2.0, -3.0])
    for mode in ("trunc", "floor", None):
        compare_with_torch(lambda m, x, y: m.div(x, y, rounding_mode=mode), [a, b])
        compare_with_torch(
            lambda m, x, y: m.div(x, y, rounding_mode=mode), [a, b], grad=False, dtype=np.int64
        )
    compare_with_torch(lambda m, x, y: x // y, [a, b], grad=False, dtype=np.int64)
    compare_with_torch(lambda m, x, y: x % y, [a, b], grad=False, dtype=np.int64)


def test_comparisons_and_logical_ops_match_torch(torch_mod):
    a = np.array([[1.0, np.nan, 3.0], [np.inf, -np.inf, 0.0]])
    b = np.array([1.0, 2.0, 0.0])
    for fn in [
        lambda m, x, y: x == y,
        lambda m, x, y: x != y,
        lambda m, x, y: x < y,
        lambda m, x, y: x <= y,
        lambda m, x, y: x > y,
        lambda m, x, y: x >= y,
        lambda m, x, y: m.logical_and(x > 0, y > 0),
        lambda m, x, y: m.logical_or(x > 0, y > 0),
        lambda m, x, y: m.logical_xor(x > 0, y > 0),
        lambda m, x, y: m.logical_not(x > 0),
        lambda m, x, y: m.isnan(x),
        lambda m, x, y: m.isinf(x),
        lambda m, x, y: m.isfinite(x),
        lambda m, x, y: ~(x > 1),
        lambda m, x, y: (x > 1) & (y > 0),
        lambda m, x, y: m.isclose(x, y),
    ]:
        compare_with_torch(fn, [a, b], grad=False)
    compare_with_torch(lambda m, x: x.sign(), [a], grad=False)


def test_comparison_results_do_not_require_grad():
    x = ember.randn(3, requires_grad=True)
    assert not (x > 0).requires_grad
    assert (x > 0).dtype == ember.bool


@pytest.mark.parametrize(
    "left,right",
    [
        (np.float32, np.float64),
        (np.int32, np.float32),
        (np.int64, np.int32),
        (np.bool_, np.int8),
        (np.uint8, np.int8),
        (np.float16, np.int64),
        (np.bool_, np.float16),
    ],
)
def test_type_promotion_matches_torch(left, right, torch_mod):
    a = np.array([[1, 2], [3, 4]])
    b = np.array([1, 2])
    for fn in (lambda m, x, y: x + y, lambda m, x, y: x * y, lambda m, x, y: x / y):
        e = fn(ember, ember.tensor(a.astype(left)), ember.tensor(b.astype(right)))
        t = fn(torch_mod, torch_mod.tensor(a.astype(left)), torch_mod.tensor(b.astype(right)))
        assert e.dtype.name == str(t.dtype).split(".")[-1]
        np.testing.assert_allclose(e.float().numpy(), t.float().numpy(), rtol=1e-3)


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int64, np.int32, np.bool_])
@pytest.mark.parametrize("scalar", [2, 2.5, True])
def test_scalar_and_zero_dim_promotion_matches_torch(dtype, scalar, torch_mod):
    a = np.array([1, 0, 3]).astype(dtype)
    for fn in (
        lambda m, x: x + scalar,
        lambda m, x: x * scalar,
        lambda m, x: x + m.tensor(scalar, dtype=m.float64),
        lambda m, x: x * m.tensor(3),
    ):
        e, t = fn(ember, ember.tensor(a)), fn(torch_mod, torch_mod.tensor(a))
        assert e.dtype.name == str(t.dtype).split(".")[-1], (dtype, scalar, e.dtype, t.dtype)
        np.testing.assert_allclose(e.double().numpy(), t.double().numpy())


def test_integer_true_division_gives_default_float():
    out = ember.tensor([3, 4]) / ember.tensor([2, 2])
    assert out.dtype == ember.float32
    np.testing.assert_allclose(out.numpy(), [1.5, 2.0])


def test_device_mismatch_names_op_and_devices():
    class FakeCuda:
        pass

    a = ember.ones(2)
    assert ember.cuda.is_available() is False
    with pytest.raises(RuntimeError, match="cuda"):
        a.to("cuda")


def test_erf_matches_math():
    xs = np.linspace(-3, 3, 13)
    out = ember.erf(ember.tensor(xs)).numpy()
    np.testing.assert_allclose(out, [math.erf(v) for v in xs], rtol=1e-15)


def test_sigmoid_is_finite_for_large_inputs():
    out = ember.tensor([-1000.0, 0.0, 1000.0]).sigmoid()
    np.testing.assert_allclose(out.numpy(), [0.0, 0.5, 1.0])


def test_where_with_scalars_matches_torch():
    a = arrays_for([(2, 3)], -1, 1, avoid=(0,))[0]
    compare_with_torch(lambda m, x: m.where(x > 0, x, 0.0), [a])
    compare_with_torch(lambda m, x: m.where(x > 0, 1.0, x), [a])


@pytest.mark.parametrize("exponent", [3, 3.0, -2, -0.5, 2, -1])
def test_pow_by_small_exponents_computes_torchs_products(exponent):
    """torch takes x·x·x, 1/(x·x) and 1/√x for these exponents (not the C library's pow,
    which rounds differently): the same bits, with 0, inf and NaN."""
    torch = pytest.importorskip("torch")
    x = (np.random.default_rng(0).random(5000) * 4 + 0.01).astype("float32")
    x[:4] = [0.0, np.inf, np.nan, -1.5]
    got = ember.tensor(x).pow(exponent).numpy()
    want = torch.tensor(x).pow(exponent).numpy()
    np.testing.assert_array_equal(got, want)
    t = ember.tensor(x[4:20].astype("float64"), requires_grad=True)
    assert ember.autograd.gradgradcheck(lambda t: t.pow(exponent), (t,))


@pytest.mark.parametrize("size", [4, 80_000])  # the NumPy path and the compiled kernel
def test_relu_and_threshold_let_a_nan_through_with_its_gradient(torch_mod, size):
    nan = float("nan")
    x = np.tile([nan, 0.5, 2.0, -1.0], size // 4)
    g = np.tile([1.0, 2.0, 3.0, nan], size // 4)
    for fn in (
        lambda m, t: m.relu(t),
        lambda m, t: m.nn.functional.threshold(t, 1.0, -1.0),
    ):
        out = []
        for m in (ember, torch_mod):
            t = m.tensor(x, requires_grad=True)
            y = fn(m, t)
            y.backward(m.tensor(g))
            out.append((y.detach().numpy(), t.grad.numpy()))
        np.testing.assert_array_equal(out[0][0], out[1][0])  # NaN stays NaN
        np.testing.assert_array_equal(out[0][1], out[1][1])  # masked NaN grads are 0


def test_relu_double_backward_gives_zeros_not_none_like_torch(torch_mod):
    for m in (ember, torch_mod):
        x = m.tensor([1.0, -1.0], dtype=m.float64, requires_grad=True)
        v = m.tensor([1.0, 2.0], dtype=m.float64, requires_grad=True)
        (gx,) = m.autograd.grad(m.relu(x), x, v, create_graph=True)
        gxx, gv = m.autograd.grad(gx.sum(), [x, v], allow_unused=True)
        assert gxx is not None and gxx.tolist() == [0.0, 0.0]
        assert gv.tolist() == [1.0, 0.0]
    check_gradients(
        lambda m, t: m.nn.functional.threshold(t, 0.5, -2.0), arrays_for([(3, 4)], avoid=[0.5])
    )


def test_addcmul_and_addcdiv_promote_tensors_only_and_convert_value_like_torch(torch_mod):
    def cases(m):
        i = m.tensor([1, 2, 3])
        f = m.tensor([1.5, 2.5, -3.25])
        return [
            m.addcmul(i, i, i, value=0.5),  # int64: 0.5 converts to 0
            m.addcmul(i, i, i, value=1.7),
            m.tensor([1, 2, 3]).addcmul_(i, i, value=0.5),
            m.addcmul(i, f, i, value=0.5),  # float32, not float64
            m.addcmul(f, f, f, value=1.7),  # float32 rounded as torch's fused multiply-add
            m.addcmul(i, i, m.tensor(2.5, dtype=m.float64), value=0.5),  # 0-d joins in
            m.addcdiv(i, f, f, value=0.5),
        ]

    for e, t in zip(cases(ember), cases(torch_mod)):
        assert str(e.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
        np.testing.assert_array_equal(e.numpy(), t.numpy())
    for m in (ember, torch_mod):
        b = m.tensor([True])
        with pytest.raises(NotImplementedError, match="not implemented for 'Bool'"):
            m.addcmul(b, b, b)


def test_clamp_with_tensor_bounds_routes_gradients_as_torch(torch_mod):
    x = np.array([0.0, 1.0, 2.0, 3.0, np.nan, 1.5])
    cases = [
        ([1.0, 1.0, 0.5, 0.0, 0.0, 1.5], [2.0, 2.0, 1.5, 3.0, 1.0, 1.5]),
        ([2.0] * 6, [1.0] * 6),  # min > max: the result is max, max takes every gradient
        ([1.5] * 6, [1.5] * 6),
        ([np.nan, 1, 1, 1, 1, 1], [2, np.nan, 2, 2, 2, 2]),
    ]
    for lo, hi in cases:
        compare_with_torch(lambda m, a, b, c: m.clamp(a, b, c), [x, np.array(lo), np.array(hi)])
    compare_with_torch(lambda m, a, b: m.clamp(a, min=b), [x, np.array(cases[0][0])])
    compare_with_torch(lambda m, a, b: m.clamp(a, max=b), [x, np.array(cases[0][1])])
    compare_with_torch(lambda m, a: m.clamp(a, 2.0, 1.0), [x])
    grid = arrays_for([(3, 4), (4,), (3, 1)], avoid=[0.0])
    grid[1], grid[2] = grid[1] - 1.5, grid[2] + 1.5  # min < max everywhere: smooth
    check_gradients(lambda m, a, b, c: m.clamp(a, b, c), grid)


@pytest.mark.parametrize("name", ["eq", "ne", "ge", "gt", "le", "lt", "rsub", "fmod"])
def test_number_first_argument_is_refused_like_torch(name):
    x = ember.tensor([1, 2, 3])
    with pytest.raises(TypeError, match=f"{name}\\(\\) received an invalid combination"):
        getattr(ember, name)(2, x)


def test_comparisons_with_a_number_second_still_work():
    x = ember.tensor([1, 2, 3])
    assert ember.eq(x, 2).tolist() == [False, True, False]
    assert (2 < x).tolist() == [False, False, True]
    assert ember.rsub(x, 2).tolist() == [1, 0, -1]


@pytest.mark.parametrize("name", ["logical_and", "logical_or", "logical_xor"])
def test_logical_ops_take_tensors_only(name):
    op, x = getattr(ember, name), ember.tensor([1, 0, 3])
    with pytest.raises(TypeError, match=r"argument 'other' \(position 2\) must be Tensor, not int"):
        op(x, 2)
    with pytest.raises(TypeError, match=r"argument 'input' \(position 1\) must be Tensor, not int"):
        op(2, x)
    expected = {"logical_and": [True, False, False], "logical_or": [True, False, True],
                "logical_xor": [False, False, True]}[name]  # fmt: skip
    assert op(x, ember.tensor([True, False, False])).tolist() == expected


@pytest.mark.parametrize("name", ["rtol", "atol"])
def test_isclose_refuses_negative_tolerances(name):
    a, b = ember.tensor(1.0), ember.tensor(1.0)
    with pytest.raises(
        RuntimeError, match=f"{name} must be greater than or equal to zero, but got"
    ):
        ember.isclose(a, b, **{name: -0.4})
    assert ember.isclose(a, b, **{name: 0.0}).item() is True


def test_complex_logaddexp_follows_torch_special_cases():
    a = ember.tensor([1 + 2j, -1 - 1j, complex("-inf"), complex("nan")])
    b = ember.tensor([0.5 - 1j, 3 + 0j, complex(float("-inf"), 2.0), 1 + 0j])
    out = ember.logaddexp(a, b).numpy()
    expected = np.log(np.exp(a.numpy()[:2]) + np.exp(b.numpy()[:2]))
    np.testing.assert_allclose(out[:2], expected, rtol=1e-6)
    assert out[2] == complex(float("-inf"), 2.0)  # both real parts -inf: the second one
    assert np.isnan(out[3].real) and np.isnan(out[3].imag)


def test_complex_logaddexp_gradient_is_conjugated():
    x = ember.tensor([1 + 2j], requires_grad=True)
    y = ember.tensor([0.3 + 1j], requires_grad=True)
    ember.logaddexp(x, y).abs().sum().backward()
    # torch: x.grad 0.6187+0.4219j, y.grad -0.0103+0.3717j
    np.testing.assert_allclose(x.grad.numpy(), [0.6187 + 0.4219j], atol=1e-4)
    np.testing.assert_allclose(y.grad.numpy(), [-0.0103 + 0.3717j], atol=1e-4)


def test_addcdiv_in_float16_rounds_once_as_torch():
    # torch's half kernel: float32 arithmetic with value kept in float32, one rounding (a
    # half product and quotient rounded step by step give 0.0638427734375)
    a, t1, t2 = (
        ember.tensor([x], dtype=ember.float16) for x in (0.125732421875, -0.132080078125, 0.640625)
    )
    assert ember.addcdiv(a, t1, t2, value=0.3).item() == 0.06390380859375
    assert (
        ember.addcdiv(a.bfloat16(), t1.bfloat16(), t2.bfloat16(), value=0.3).dtype == ember.bfloat16
    )


def test_a_zero_dim_float_tensor_to_the_powers_torch_computes_as_products():
    # -2 and -0.5 take a reciprocal of a product, which for a 0-d input is a NumPy scalar
    x = ember.tensor(3.0, dtype=ember.float64, requires_grad=True)
    for exponent, value, slope in ((-2, 1 / 9, -2 / 27), (-0.5, 3**-0.5, -0.5 * 3**-1.5)):
        y = x**exponent
        (grad,) = ember.autograd.grad(y, x)
        assert y.shape == () and y.dtype == ember.float64
        assert abs(y.item() - value) < 1e-15 and abs(grad.item() - slope) < 1e-15
    assert (ember.tensor(3, dtype=ember.uint8) ** -0.5).item() == pytest.approx(3**-0.5)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_two_byte_floats_times_and_over_a_number_read_it_in_float32(dtype):
    # ATen's mul and div kernels take the number in float32 and round once; add and sub round
    # the number to the tensor's dtype first (as NumPy does everywhere)
    values = np.random.default_rng(0).standard_normal(4000).astype(np.float32)
    x = ember.tensor(values).to(getattr(ember, dtype))
    wide = x.float()._data
    for number in (0.1, 1 / 3, 3.3, 257):
        want = (wide * np.float32(number)).astype(x._data.dtype)
        assert (x * number)._data.tobytes() == want.tobytes()
        assert (x / number)._data.tobytes() == (wide / np.float32(number)).astype(
            want.dtype
        ).tobytes()
        y = x.clone()
        y.mul_(number)
        assert y._data.tobytes() == want.tobytes()


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_two_byte_floats_with_numbers_round_as_torchs(dtype, torch_mod):
    values = np.random.default_rng(0).standard_normal(4000).astype(np.float32)

    def results(m):
        t = m.tensor(values).to(getattr(m, dtype))
        outs = []
        for number in (0.1, 1 / 3, 1e4, -7):
            inplace = t.clone()
            inplace /= number
            outs += [
                t * number,
                number * t,
                t / number,
                number / t,
                inplace,
                t + number,
                t - number,
            ]
        return [o.float().tolist() for o in outs]

    assert results(ember) == results(torch_mod)
