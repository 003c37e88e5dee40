"""ember.special and the special-function ops of ember.*: values, dtypes and gradients vs torch,
float64 gradcheck/gradgradcheck, broadcasting, zero-size and non-contiguous inputs."""

from __future__ import annotations

import math

import numpy as np
import pytest

import ember
from ember.ops import special as S

from .helpers import arrays_for, check_gradients, compare_with_torch

EDGES = np.array(
    [0.0, -0.0, 1.0, -1.0, 0.5, -0.5, -2.5, 2.0, 1e-8, 1e-300, 7.3, 30.0, 100.0, 1e4]
    + [-30.0, -100.0, np.inf, -np.inf, np.nan]
)

# name in torch.special -> (ember function, low, high) for the gradient tests
UNARY = {
    "gammaln": (S.lgamma, 0.2, 5.0),
    "digamma": (S.digamma, 0.2, 5.0),
    "erfinv": (S.erfinv, -0.9, 0.9),
    "erfcx": (S.erfcx, -2.0, 3.0),
    "i0": (S.i0, -3.0, 3.0),
    "i0e": (S.i0e, -3.0, 3.0),
    "i1": (S.i1, -3.0, 3.0),
    "i1e": (S.i1e, -3.0, 3.0),
    "ndtr": (S.ndtr, -3.0, 3.0),
    "ndtri": (S.ndtri, 0.05, 0.95),
    "log_ndtr": (S.log_ndtr, -4.0, 3.0),
    "entr": (S.entr, 0.1, 3.0),
    "sinc": (S.sinc, -2.0, 2.0),
}


def _torch_special(torch, name):
    return getattr(torch.special, name)


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_values_match_torch_at_edges(torch_mod, name):
    fn = UNARY[name][0]
    for dtype in (np.float64, np.float32):
        data = EDGES.astype(dtype)
        got = fn(ember.tensor(data))
        want = _torch_special(torch_mod, name)(torch_mod.tensor(data))
        assert str(got.dtype) == str(want.dtype).replace("torch", "ember")
        rtol = 1e-12 if dtype == np.float64 else 2e-6
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=rtol, atol=1e-30, equal_nan=True)


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_integer_input_computes_in_default_float(torch_mod, name):
    data = np.array([0, 1, 2, 5, -3], dtype=np.int64)
    got = UNARY[name][0](ember.tensor(data))
    want = _torch_special(torch_mod, name)(torch_mod.tensor(data))
    assert got.dtype == ember.float32 and want.dtype == torch_mod.float32
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=2e-6, equal_nan=True)


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_gradients_match_torch(name):
    fn, low, high = UNARY[name]
    arrays = arrays_for([(3, 4)], low, high, seed=3, avoid=[0.0])
    compare_with_torch(
        lambda m, x: fn(x) if m is ember else _torch_special(m, name)(x), arrays, rtol=1e-9
    )


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_gradcheck_and_gradgradcheck(name):
    fn, low, high = UNARY[name]
    arrays = arrays_for([(3, 2)], low, high, seed=5, avoid=[0.0])
    check_gradients(lambda m, x: fn(x), arrays, noncontiguous=True)


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_zero_size(name):
    x = ember.zeros((0, 3), requires_grad=True)
    y = UNARY[name][0](x)
    assert y.shape == (0, 3) and y.dtype == ember.float32
    y.sum().backward()
    assert x.grad.shape == (0, 3)


def test_i1_and_i1e_gradient_at_zero_is_one_half(torch_mod):
    for fn, name in ((S.i1, "i1"), (S.i1e, "i1e")):
        x = ember.tensor([0.0, 1.0], dtype=ember.float64, requires_grad=True)
        fn(x).sum().backward()
        t = torch_mod.tensor([0.0, 1.0], dtype=torch_mod.float64, requires_grad=True)
        getattr(torch_mod.special, name)(t).sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-12)
        assert x.grad.numpy()[0] == 0.5


def test_sinc_is_one_with_zero_slope_at_zero():
    x = ember.tensor([0.0], requires_grad=True)
    y = S.sinc(x)
    y.backward()
    assert y.item() == 1.0 and x.grad.item() == 0.0


def test_erfinv_derivative_formula():
    x = ember.tensor([0.3], dtype=ember.float64, requires_grad=True)
    S.erfinv(x).backward()
    from scipy.special import erfinv

    expected = math.sqrt(math.pi) / 2 * math.exp(erfinv(0.3) ** 2)
    assert x.grad.item() == pytest.approx(expected, rel=1e-14)


def test_float16_stays_float16(torch_mod):
    data = np.array([0.5, 1.5, 3.0], dtype=np.float16)
    got = S.lgamma(ember.tensor(data))
    want = torch_mod.lgamma(torch_mod.tensor(data))
    assert got.dtype == ember.float16
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=2e-3)


# --- polygamma and mvlgamma ------------------------------------------------------------------
@pytest.mark.parametrize("n", [0, 1, 2, 3])
def test_polygamma_values_and_gradients_match_torch(n):
    arrays = arrays_for([(2, 3)], 0.3, 4.0, seed=n)
    compare_with_torch(
        lambda m, x: S.polygamma(n, x) if m is ember else m.polygamma(n, x), arrays, rtol=1e-9
    )


def test_polygamma_edges_match_torch(torch_mod):
    # PyTorch's reflection at negative integers gives huge finite numbers: those are left out
    data = np.array([0.0, 0.5, 1.0, 2.5, 30.0, 1e4, -0.5, -2.5, np.inf, -np.inf, np.nan])
    for n in (0, 1, 2, 4):
        for dtype in (np.float64, np.float32):
            got = S.polygamma(n, ember.tensor(data.astype(dtype)))
            want = torch_mod.polygamma(n, torch_mod.tensor(data.astype(dtype)))
            assert str(got.dtype) == str(want.dtype).replace("torch", "ember")
            np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5, equal_nan=True)


def test_trigamma_near_poles_and_of_a_0d_tensor_match_torch(torch_mod):
    # float32 near and at the poles: torch's reflection in float32 (huge finite values at the
    # negative integers), which a float64 computation rounded once would not reproduce
    data = np.array([-4.0, -3.0, -1.9089632, -6.009691, -0.5735, 1e-3, 3.6116], np.float32)
    for dtype in ("float32", "float64", "int8"):
        got = S.polygamma(1, ember.tensor(data).to(getattr(ember, dtype)))
        want = torch_mod.polygamma(1, torch_mod.tensor(data).to(getattr(torch_mod, dtype)))
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=2e-6)
    x = ember.tensor(0.5, dtype=ember.float64, requires_grad=True)
    (g,) = ember.autograd.grad(S.digamma(x), x)  # DigammaBackward0 takes polygamma(1, 0-d)
    assert g.shape == ()
    assert g.item() == torch_mod.polygamma(1, torch_mod.tensor(0.5, dtype=torch_mod.float64)).item()


def test_polygamma_gradcheck_and_gradgradcheck():
    arrays = arrays_for([(2, 3)], 0.5, 3.0, seed=1)
    check_gradients(lambda m, x: S.polygamma(2, x), arrays, noncontiguous=True)
    check_gradients(lambda m, x: S.digamma(x), arrays)
    check_gradients(lambda m, x: S.lgamma(x), arrays)


def test_polygamma_rejects_negative_order(torch_mod):
    with pytest.raises(RuntimeError, match="does not support negative n"):
        S.polygamma(-1, ember.tensor([1.0]))
    with pytest.raises(RuntimeError, match="does not support negative n"):
        torch_mod.polygamma(-1, torch_mod.tensor([1.0]))


def test_polygamma_method_form():
    x = ember.tensor([1.0, 2.0])
    np.testing.assert_allclose(
        S.polygamma_method(x, 1).numpy(), [math.pi**2 / 6, math.pi**2 / 6 - 1], rtol=1e-6
    )


@pytest.mark.parametrize("p", [1, 2, 4])
def test_mvlgamma_values_and_gradients_match_torch(p):
    arrays = arrays_for([(2, 3)], 2.0, 5.0, seed=p)
    compare_with_torch(
        lambda m, x: S.mvlgamma(x, p) if m is ember else m.mvlgamma(x, p), arrays, rtol=1e-9
    )
    check_gradients(lambda m, x: S.mvlgamma(x, p), arrays)


def test_mvlgamma_edges_and_errors_match_torch(torch_mod):
    data = np.array([1.0, 0.9, 3.0, np.inf, np.nan])
    got, want = S.mvlgamma(ember.tensor(data), 3), torch_mod.mvlgamma(torch_mod.tensor(data), 3)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6, equal_nan=True)
    ints = S.mvlgamma(ember.tensor([1, 2]), 1)
    assert ints.dtype == ember.float32
    assert torch_mod.mvlgamma(torch_mod.tensor([1, 2]), 1).dtype == torch_mod.float32
    for fn, mod in ((S.mvlgamma, ember), (torch_mod.mvlgamma, torch_mod)):
        with pytest.raises(RuntimeError, match="greater than or equal to 1"):
            fn(mod.tensor([1.0]), 0)


# --- xlogy / xlog1py -------------------------------------------------------------------------
XLOG = {"xlogy": S.xlogy, "xlog1py": S.xlog1py}


def _torch_xlog(m, name):
    return getattr(m.special, name)


@pytest.mark.parametrize("name", sorted(XLOG))
def test_xlog_values_at_edges_match_torch(torch_mod, name):
    x = np.array([0.0, 0.0, 0.0, 0.0, 2.0, -1.5, np.nan, 3.0, 0.0])
    y = np.array([0.0, -1.0, np.nan, np.inf, 3.0, 0.5, 1.0, -2.0, -3.0])
    for dtype in (np.float64, np.float32):
        got = XLOG[name](ember.tensor(x.astype(dtype)), ember.tensor(y.astype(dtype)))
        want = _torch_xlog(torch_mod, name)(
            torch_mod.tensor(x.astype(dtype)), torch_mod.tensor(y.astype(dtype))
        )
        assert str(got.dtype) == str(want.dtype).replace("torch", "ember")
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6, equal_nan=True)


@pytest.mark.parametrize("name", sorted(XLOG))
def test_xlog_broadcast_gradients_match_torch(name):
    fn = XLOG[name]
    x, y = arrays_for([(3, 1), (4,)], 0.2, 3.0, seed=2)
    x[0, 0] = 0.0  # the x = 0 branch
    compare_with_torch(
        lambda m, a, b: fn(a, b) if m is ember else _torch_xlog(m, name)(a, b), [x, y], rtol=1e-9
    )
    check_gradients(lambda m, a, b: fn(a, b), [x[1:], y])


@pytest.mark.parametrize("name", sorted(XLOG))
def test_xlog_gradient_at_zero_x_and_nonpositive_y_matches_torch(torch_mod, name):
    low = 0.0 if name == "xlogy" else -1.0
    x_data, y_data = [0.0, 0.0, 1.0], [low, low - 1, 2.0]
    ex = ember.tensor(x_data, requires_grad=True)
    ey = ember.tensor(y_data)
    XLOG[name](ex, ey).sum().backward()
    tx = torch_mod.tensor(x_data, requires_grad=True)
    _torch_xlog(torch_mod, name)(tx, torch_mod.tensor(y_data)).sum().backward()
    np.testing.assert_allclose(ex.grad.numpy(), tx.grad.numpy(), equal_nan=True)


@pytest.mark.parametrize("name", sorted(XLOG))
def test_xlog_with_python_numbers_matches_torch(torch_mod, name):
    for a, b in ((2, [0.5, 3.0]), ([0.0, 2.0], 3), ([0.0, 2.0], -1.0)):
        ea = a if not isinstance(a, list) else ember.tensor(a, requires_grad=True)
        eb = b if not isinstance(b, list) else ember.tensor(b, requires_grad=True)
        ta = a if not isinstance(a, list) else torch_mod.tensor(a, requires_grad=True)
        tb = b if not isinstance(b, list) else torch_mod.tensor(b, requires_grad=True)
        got, want = XLOG[name](ea, eb), _torch_xlog(torch_mod, name)(ta, tb)
        assert str(got.dtype) == str(want.dtype).replace("torch", "ember")
        np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-6)
        got.sum().backward()
        want.sum().backward()
        leaf_e = ea if isinstance(ea, ember.Tensor) else eb
        leaf_t = ta if isinstance(ta, torch_mod.Tensor) else tb
        np.testing.assert_allclose(
            leaf_e.grad.numpy(), leaf_t.grad.numpy(), rtol=1e-6, equal_nan=True
        )


def test_xlogy_integer_operands_promote_to_default_float(torch_mod):
    got = S.xlogy(ember.tensor([1, 2]), ember.tensor([3, 4]))
    want = torch_mod.xlogy(torch_mod.tensor([1, 2]), torch_mod.tensor([3, 4]))
    assert got.dtype == ember.float32 and want.dtype == torch_mod.float32
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)


def test_xlogy_bad_broadcast_raises():
    with pytest.raises(RuntimeError, match="must match the size"):
        S.xlogy(ember.ones(3), ember.ones(4))


# --- zeta, igamma, igammac -------------------------------------------------------------------
def _compare_second_argument_gradient(torch, fn, torch_fn, first, second):
    """Values and the gradient for the second argument (the only one defined) agree."""
    e2 = ember.tensor(second, requires_grad=True)
    t2 = torch.tensor(second, requires_grad=True)
    got, want = fn(ember.tensor(first), e2), torch_fn(torch.tensor(first), t2)
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-10)
    seed = np.random.default_rng(0).standard_normal(tuple(want.shape))
    got.backward(ember.tensor(seed))
    want.backward(torch.tensor(seed))
    np.testing.assert_allclose(e2.grad.numpy(), t2.grad.numpy(), rtol=1e-9)


def test_zeta_values_match_torch(torch_mod):
    x = np.array([2.0, 1.0, 0.5, 3.0, 4.5, 2.0, np.inf, np.nan])
    q = np.array([1.0, 1.0, 1.0, 0.5, 2.0, -1.5, 2.0, 1.0])
    got = S.zeta(ember.tensor(x), ember.tensor(q))
    want = torch_mod.special.zeta(torch_mod.tensor(x), torch_mod.tensor(q))
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-10, equal_nan=True)


def test_zeta_gradient_for_q_matches_torch_and_x_raises_as_torch(torch_mod):
    x, q = arrays_for([(3,), (2, 3)], 2.0, 4.0, seed=4)
    _compare_second_argument_gradient(torch_mod, S.zeta, torch_mod.special.zeta, x, q)
    check_gradients(lambda m, b: S.zeta(ember.tensor(x), b), [q])
    for fn, mod in ((S.zeta, ember), (torch_mod.special.zeta, torch_mod)):
        a = mod.tensor([2.0], requires_grad=True)
        with pytest.raises(RuntimeError, match="derivative for 'zeta' is not implemented"):
            fn(a, mod.tensor([1.0])).backward()


@pytest.mark.parametrize("name", ["igamma", "igammac"])
def test_incomplete_gamma_values_and_gradients_match_torch(torch_mod, name):
    fn = getattr(S, name)
    a, x = arrays_for([(3, 1), (4,)], 0.5, 4.0, seed=6)
    _compare_second_argument_gradient(torch_mod, fn, getattr(torch_mod, name), a, x)
    check_gradients(lambda m, t: fn(ember.tensor(a), t), [x])
    edges_a = np.array([0.0, 1.0, 2.0, 1.0, np.inf, 2.0, -1.0])
    edges_x = np.array([1.0, 0.0, np.inf, -1.0, 2.0, np.nan, 1.0])
    got = fn(ember.tensor(edges_a), ember.tensor(edges_x))
    want = getattr(torch_mod, name)(torch_mod.tensor(edges_a), torch_mod.tensor(edges_x))
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-10, equal_nan=True)


@pytest.mark.parametrize("name", ["igamma", "igammac"])
def test_incomplete_gamma_gradient_for_a_raises_as_torch(torch_mod, name):
    for mod, fn in ((ember, getattr(S, name)), (torch_mod, getattr(torch_mod, name))):
        a = mod.tensor([2.0], requires_grad=True)
        with pytest.raises(RuntimeError, match=f"derivative for '{name}: input'"):
            fn(a, mod.tensor([1.0])).backward()


# --- ops PyTorch marks non-differentiable ----------------------------------------------------
@pytest.mark.parametrize("name", sorted(S.NON_DIFFERENTIABLE_UNARY))
def test_non_differentiable_values_match_torch_and_do_not_require_grad(torch_mod, name):
    fn = getattr(S, name)
    # 1e4 left out: the float32 argument is too coarse there for two libraries to agree.
    # PyTorch's float64 Bessel/Airy kernels are good to ~1e-6 only (scipy's to ~1e-15).
    data = EDGES[EDGES != 1e4]
    for dtype, rtol in ((np.float64, 5e-6), (np.float32, 1e-5)):
        got = fn(ember.tensor(data.astype(dtype), requires_grad=True))
        want = getattr(torch_mod.special, name)(torch_mod.tensor(data.astype(dtype)))
        assert str(got.dtype) == str(want.dtype).replace("torch", "ember")
        assert not got.requires_grad and got.grad_fn is None
        np.testing.assert_allclose(
            got.numpy(),
            want.numpy(),
            rtol=rtol,
            atol=1e-6 * (dtype == np.float32),
            equal_nan=True,
        )
    ints = fn(ember.tensor([1, 2]))
    assert ints.dtype == ember.float32


# --- orthogonal polynomials ------------------------------------------------------------------
POLYNOMIAL_NAMES = [
    "chebyshev_polynomial_t",
    "chebyshev_polynomial_u",
    "chebyshev_polynomial_v",
    "chebyshev_polynomial_w",
    "hermite_polynomial_h",
    "hermite_polynomial_he",
    "laguerre_polynomial_l",
    "legendre_polynomial_p",
    "shifted_chebyshev_polynomial_t",
    "shifted_chebyshev_polynomial_u",
    "shifted_chebyshev_polynomial_v",
    "shifted_chebyshev_polynomial_w",
]


@pytest.mark.parametrize("name", POLYNOMIAL_NAMES)
def test_polynomial_values_match_torch_over_degrees_and_endpoints(torch_mod, name):
    xs = np.array([-1.0, -0.7, 0.0, 0.25, 0.5, 0.9, 1.0, 1.3, -2.0, 1e-3, np.inf, -np.inf])
    degrees = np.array([-2, -1, 0, 1, 2, 3, 5, 7, 9, 12, 2.7, np.nan, 130, 600])
    x, n = np.meshgrid(xs, degrees)
    for dtype, rtol in ((np.float64, 1e-9), (np.float32, 1e-4)):
        got = getattr(ember.special, name)(ember.tensor(x.astype(dtype)), ember.tensor(n))
        want = getattr(torch_mod.special, name)(
            torch_mod.tensor(x.astype(dtype)), torch_mod.tensor(n)
        )
        assert str(got.dtype) == str(want.dtype).replace("torch", "ember")
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=rtol, atol=1e-6, equal_nan=True)


@pytest.mark.parametrize("name", POLYNOMIAL_NAMES)
def test_polynomial_scalar_and_integer_operands_match_torch(torch_mod, name):
    cases = [([1, 2], [2, 3]), ([0.5, 2.0], 3.5), (0.5, [3]), ([0.25, 0.75], 4)]
    for x, n in cases:
        ex, tx = (ember.tensor(x), torch_mod.tensor(x)) if isinstance(x, list) else (x, x)
        en, tn = (ember.tensor(n), torch_mod.tensor(n)) if isinstance(n, list) else (n, n)
        got = getattr(ember.special, name)(ex, en)
        want = getattr(torch_mod.special, name)(tx, tn)
        assert str(got.dtype) == str(want.dtype).replace("torch", "ember")
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5)


def test_polynomials_are_not_differentiable_and_broadcast():
    x = ember.tensor([[0.1], [0.2]], requires_grad=True)
    out = ember.special.legendre_polynomial_p(x, ember.tensor([0, 1, 2]))
    assert out.shape == (2, 3) and not out.requires_grad
    np.testing.assert_allclose(out.numpy()[1], [1.0, 0.2, (3 * 0.04 - 1) / 2], rtol=1e-6)
    empty = ember.special.hermite_polynomial_h(ember.zeros(0), 3)
    assert empty.shape == (0,)


# --- the namespace ---------------------------------------------------------------------------
def test_namespace_has_every_torch_special_function(torch_mod):
    wanted = {n for n in dir(torch_mod.special) if not n.startswith("_")}
    wanted -= {"Tensor", "common_args", "multi_dim_common", "torch"}
    missing = sorted(n for n in wanted if not hasattr(ember.special, n))
    assert not missing, missing


def test_namespace_aliases_agree_with_torch(torch_mod):
    data = np.array([[0.2, 0.7, 1.5], [2.0, -0.5, 0.1]])
    e, t = ember.tensor(data), torch_mod.tensor(data)
    pairs = [
        (lambda m, v: m.special.expit(v), None),
        (lambda m, v: m.special.exp2(v), None),
        (lambda m, v: m.special.expm1(v), None),
        (lambda m, v: m.special.log1p(v.abs()), None),
        (lambda m, v: m.special.erf(v), None),
        (lambda m, v: m.special.erfc(v), None),
        (lambda m, v: m.special.psi(v.abs() + 0.1), None),
        (lambda m, v: m.special.multigammaln(v.abs() + 2, 2), None),
        (lambda m, v: m.special.logit(v.sigmoid(), eps=0.3), None),
        (lambda m, v: m.special.round(v * 7), None),
        (lambda m, v: m.special.softmax(v, 1), None),
        (lambda m, v: m.special.log_softmax(v, 0), None),
        (lambda m, v: m.special.logsumexp(v, 1), None),
        (lambda m, v: m.special.gammainc(v.abs() + 0.5, v.abs()), None),
        (lambda m, v: m.special.gammaincc(v.abs() + 0.5, v.abs()), None),
    ]
    for fn, _ in pairs:
        np.testing.assert_allclose(fn(ember, e).numpy(), fn(torch_mod, t).numpy(), rtol=1e-10)


# --- argument kinds, layouts and sizes -------------------------------------------------------
def test_igamma_rejects_python_numbers_as_torch(torch_mod):
    for mod, fn in ((ember, S.igamma), (torch_mod, torch_mod.igamma)):
        with pytest.raises(TypeError, match=r"argument 'other' \(position 2\) must be Tensor"):
            fn(mod.tensor([1.0]), 2.0)
        with pytest.raises(TypeError, match=r"argument 'input' \(position 1\) must be Tensor"):
            fn(2.0, mod.tensor([1.0]))


def test_zeta_with_python_numbers_matches_torch(torch_mod):
    data = [0.5, 2.0]
    q = ember.tensor(data, requires_grad=True)
    tq = torch_mod.tensor(data, requires_grad=True)
    got, want = S.zeta(3.0, q), torch_mod.special.zeta(3.0, tq)
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-6)
    got.sum().backward()
    want.sum().backward()
    np.testing.assert_allclose(q.grad.numpy(), tq.grad.numpy(), rtol=1e-5)
    np.testing.assert_allclose(
        S.zeta(ember.tensor(data) + 2, 2.0).numpy(),
        torch_mod.special.zeta(torch_mod.tensor(data) + 2, 2.0).numpy(),
        rtol=1e-6,
    )


@pytest.mark.parametrize("name", ["xlogy", "xlog1py", "zeta", "igamma", "igammac"])
def test_binary_zero_size_broadcast(name):
    a = ember.zeros((0, 1), requires_grad=True)
    out = getattr(S, name)(a + 2, ember.ones(3))
    assert out.shape == (0, 3)


def test_xlogy_gradgradcheck_non_contiguous():
    x, y = arrays_for([(3, 2), (3, 2)], 0.3, 2.0, seed=8)
    check_gradients(lambda m, a, b: S.xlogy(a, b), [x, y], noncontiguous=True)
    check_gradients(lambda m, a, b: S.xlog1py(a, b), [x, y], noncontiguous=True)


@pytest.mark.parametrize("name", ["gammaln", "digamma", "erfinv", "i0", "log_ndtr"])
def test_float32_gradients_match_torch(name):
    fn, low, high = UNARY[name]
    arrays = arrays_for([(2, 5)], low, high, seed=9)
    compare_with_torch(
        lambda m, x: fn(x) if m is ember else _torch_special(m, name)(x),
        arrays,
        dtype=np.float32,
        atol=1e-6,
        rtol=2e-6,
    )


def test_double_backward_of_lgamma_is_trigamma():
    x = ember.tensor([0.7, 2.5], dtype=ember.float64, requires_grad=True)
    (g,) = ember.autograd.grad(S.lgamma(x).sum(), x, create_graph=True)
    (gg,) = ember.autograd.grad(g.sum(), x)
    np.testing.assert_allclose(gg.numpy(), S.polygamma(1, x.detach()).numpy(), rtol=1e-14)


def test_integer_inputs_follow_the_default_dtype():
    previous = ember.get_default_dtype()
    ember.set_default_dtype(ember.float64)
    try:
        assert S.lgamma(ember.tensor([3])).dtype == ember.float64
        assert S.xlogy(ember.tensor([1]), ember.tensor([2])).dtype == ember.float64
        assert S.polygamma(2, ember.tensor([1])).dtype == ember.float64
    finally:
        ember.set_default_dtype(previous)
    assert S.lgamma(ember.tensor([3])).item() == pytest.approx(math.log(2.0))


def test_importing_the_special_ops_does_not_import_scipy():
    import subprocess
    import sys

    code = "import sys, ember.special, ember.ops.special; print('scipy' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


@pytest.mark.parametrize("name", ["erf", "erfc"])
def test_erf_kernels_match_torch_across_dtypes_and_shapes(torch_mod, name):
    data = np.array([0.0, -0.0, 1e-10, 0.3, -3.0, 5.0, 27.0, np.inf, -np.inf, np.nan])
    for dtype in ("float64", "float32", "float16"):
        got = getattr(ember, name)(ember.tensor(data, dtype=getattr(ember, dtype)))
        want = getattr(torch_mod, name)(torch_mod.tensor(data, dtype=getattr(torch_mod, dtype)))
        assert got.dtype == getattr(ember, dtype)
        np.testing.assert_allclose(
            got.float().numpy(),
            want.float().numpy(),
            rtol=1e-3 if dtype == "float16" else 1e-6,
            atol=1e-30,
            equal_nan=True,
        )
    assert getattr(ember, name)(ember.tensor(0.5)).shape == ()
    assert getattr(ember, name)(ember.zeros(0, 2)).shape == (0, 2)
