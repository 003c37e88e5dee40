"""Complex dtypes: promotion, printing, views of parts, errors, and conjugate-Wirtinger
gradients (gradcheck over real and imaginary parts, and differential tests vs torch)."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember import _dtype as dt
from ember.ops import complex as cx

RNG = np.random.default_rng(0)


class _EmberWithComplex:
    """ember plus the complex names this change adds (until ``ember/__init__`` exports them)."""

    complex64 = cfloat = dt.complex64
    complex128 = cdouble = dt.complex128
    complex = staticmethod(cx.complex)
    polar = staticmethod(cx.polar)
    view_as_real = staticmethod(cx.view_as_real)
    view_as_complex = staticmethod(cx.view_as_complex)

    @staticmethod
    def tensor(data, dtype=None, **kwargs):
        arr = np.array(data)
        if arr.dtype.kind == "c" or (dtype is not None and dtype.is_complex):
            target = dtype if dtype is not None else dt.get_default_complex_dtype()
            return ember.from_numpy(arr.astype(target.np))
        return ember.tensor(data, dtype=dtype, **kwargs)

    def __getattr__(self, name):
        return getattr(ember, name)


em = _EmberWithComplex()


def carray(*shape, seed=0):
    rng = np.random.default_rng(seed)
    return rng.normal(size=shape) + 1j * rng.normal(size=shape)


def ctensor(values, dtype=np.complex128, requires_grad=False) -> ember.Tensor:
    t = ember.from_numpy(np.array(values, dtype=dtype))
    return t.requires_grad_() if requires_grad else t


def _name(d) -> str:
    return str(d).split(".")[-1]


# --- dtypes and promotion -----------------------------------------------------------------------
def test_complex_dtypes_and_aliases():
    assert em.complex64 is dt.complex64 and dt.cfloat is dt.complex64
    assert dt.cdouble is dt.complex128
    assert dt.complex64.is_complex and not dt.complex64.is_floating_point
    assert not dt.float32.is_complex
    assert dt.complex64.to_real() is dt.float32 and dt.complex128.to_real() is dt.float64
    assert dt.float64.to_complex() is dt.complex128 and dt.float16.to_complex() is dt.complex64
    assert dt.complex64.legacy_name == "ComplexFloat"
    assert dt.to_dtype(complex) is dt.complex64 and dt.to_dtype("complex128") is dt.complex128


def test_promote_types_matches_torch(torch_mod):
    names = ["float16", "bfloat16", "float32", "float64", "int8", "int64", "uint8", "bool"]
    names += ["complex64", "complex128"]
    for a in names:
        for b in names:
            want = torch_mod.promote_types(getattr(torch_mod, a), getattr(torch_mod, b))
            got = dt.promote_types(dt.BY_NAME[a], dt.BY_NAME[b])
            assert got.name == _name(want), (a, b)


@pytest.mark.parametrize(
    "make",
    [
        lambda m: m.ones(2) + 1j,
        lambda m: m.ones(2, dtype=m.float64) * 2j,
        lambda m: m.arange(3) + 1j,
        lambda m: m.ones(2) + m.tensor(1j, dtype=m.complex128),
        lambda m: m.ones(2, dtype=m.float64) + m.zeros(1, dtype=m.complex64),
        lambda m: 1j / m.ones(2, dtype=m.float64),
        lambda m: (m.ones(2) + 1j) * 2.5,
    ],
)
def test_result_dtype_of_mixed_operands_as_torch(torch_mod, make):
    e, t = make(em), make(torch_mod)
    assert _name(e.dtype) == _name(t.dtype)
    np.testing.assert_allclose(e.numpy(), t.numpy())


def test_default_complex_dtype_follows_default_float():
    assert dt.get_default_complex_dtype() is dt.complex64
    ember.set_default_dtype(ember.float64)
    try:
        assert (ember.ones(2) * 1j).dtype is dt.complex128
    finally:
        ember.set_default_dtype(ember.float32)


def test_item_equality_and_queries():
    z = ctensor([1 + 2j, 3 - 1j], np.complex64)
    assert z.dtype is dt.complex64 and z.is_complex() and not z.is_floating_point()
    assert z[0].item() == 1 + 2j and isinstance(z[0].item(), complex)
    assert (z == ctensor([1 + 2j, 3], np.complex64)).tolist() == [True, False]
    assert not ember.ones(1).is_complex() and ember.ones(1).is_floating_point()
    assert z.cdouble().dtype is dt.complex128 and ember.ones(2).cfloat().dtype is dt.complex64


@pytest.mark.parametrize(
    "values",
    [
        [1 + 2j, 3 - 1j],
        [1.5 + 2j, 3 - 1j, 100.25 - 0.5j],
        [[1e-5 + 2j, 3 - 1j], [0j, 1e6j]],
        [1 + 2j, 1 + 100j, 10 - 3j],
        [complex("nan+1j"), complex(0, float("inf"))],
        [1 + 2j] * 40,
        [1.23456 + 2j] * 2000,
    ],
)
def test_repr_as_torch(torch_mod, values):
    e = ctensor(values, np.complex64)
    t = torch_mod.tensor(values, dtype=torch_mod.complex64)
    assert repr(e) == repr(t).replace("torch.", "ember.")


def test_repr_of_complex128_and_grad(torch_mod):
    e = ctensor(1 + 2j, requires_grad=True)
    t = torch_mod.tensor(1 + 2j, dtype=torch_mod.complex128, requires_grad=True)
    assert repr(e) == repr(t).replace("torch.", "ember.")
    assert repr(ctensor(np.zeros((2, 0)), np.complex64)) == (
        "tensor([], size=(2, 0), dtype=ember.complex64)"
    )


# --- errors -----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "call",
    [
        lambda m, z: z < z,
        lambda m, z: z >= 1,
        lambda m, z: m.maximum(z, z),
        lambda m, z: z.floor(),
        lambda m, z: z.sign(),
        lambda m, z: m.relu(z),
        lambda m, z: z.erf(),
        lambda m, z: m.fft.rfft(z),
        lambda m, z: m.view_as_complex(z),
    ],
)
def test_ops_undefined_on_complex_raise_as_torch(torch_mod, call):
    e_z = ctensor([1 + 2j, 3j], np.complex64)
    t_z = torch_mod.tensor([1 + 2j, 3j], dtype=torch_mod.complex64)
    with pytest.raises(Exception) as t_err:
        call(torch_mod, t_z)
    if call.__code__.co_names[-1:] == ("view_as_complex",):
        with pytest.raises(RuntimeError, match="only supported for half, float and double"):
            cx.view_as_complex(e_z)
        return
    with pytest.raises(type(t_err.value)) as e_err:
        call(em, e_z)
    key = str(t_err.value).split("\n")[0].replace("torch.", "").replace("erf_vml", "erf")
    assert str(e_err.value) == key


def test_view_as_complex_errors_as_torch(torch_mod):
    cases = [np.zeros((2, 3)), np.zeros((4, 2))[::2].T.copy().T, np.zeros((3, 2), np.int64)]
    for a in cases:
        with pytest.raises(RuntimeError) as t_err:
            torch_mod.view_as_complex(torch_mod.from_numpy(a))
        with pytest.raises(RuntimeError) as e_err:
            cx.view_as_complex(ember.from_numpy(a))
        assert str(e_err.value) == str(t_err.value)
    x = ember.zeros(2, 4)[:, ::2]  # last dimension of stride 2
    with pytest.raises(RuntimeError, match="last dimension of size 2"):
        cx.view_as_complex(ember.zeros(3))
    with pytest.raises(RuntimeError, match="stride 1"):
        cx.view_as_complex(x)


def test_complex_constructor_errors():
    with pytest.raises(RuntimeError, match="Expected object of scalar type Float"):
        cx.complex(ember.ones(2), ember.ones(2, dtype=ember.float64))
    with pytest.raises(RuntimeError, match="Half, Float or Double"):
        cx.complex(ember.ones(2, dtype=ember.int64), ember.ones(2, dtype=ember.int64))
    with pytest.raises(RuntimeError, match="imag is not implemented"):
        _ = ember.ones(2).imag


# --- views of parts ---------------------------------------------------------------------------
def test_real_and_imag_are_views_that_write_through(torch_mod):
    values = [1 + 2j, 3 - 1j]
    results = []
    for m, z in ((em, ctensor(values)), (torch_mod, torch_mod.tensor(values))):
        z.real.mul_(2)
        z.imag.add_(1)
        z.real = m.tensor([5.0, 6.0], dtype=m.float64)
        results.append(z.numpy().copy())
    np.testing.assert_array_equal(results[0], results[1])
    x = ember.ones(2)
    assert x.real is x


def test_view_as_real_and_complex_share_memory():
    z = ctensor([1 + 2j, 3 - 1j])
    r = cx.view_as_real(z)
    assert r.shape == (2, 2) and r.dtype is ember.float64
    r[0, 1] = 7.0
    assert z[0].item() == 1 + 7j
    back = cx.view_as_complex(r)
    back.mul_(2)
    assert z.tolist() == [2 + 14j, 6 - 2j]
    noncontig = ctensor(carray(3, 4)).t()
    parts = cx.view_as_real(noncontig).numpy()
    np.testing.assert_array_equal(parts[..., 1], noncontig.imag.numpy())


def test_polar_and_complex_values(torch_mod):
    a, b = np.array([1.0, 2.0, 0.5]), np.array([0.3, -2.0, 3.0])
    e = cx.polar(ember.from_numpy(a), ember.from_numpy(b))
    t = torch_mod.polar(torch_mod.from_numpy(a), torch_mod.from_numpy(b))
    np.testing.assert_allclose(e.numpy(), t.numpy())
    e = cx.complex(ember.from_numpy(a).reshape(3, 1), ember.from_numpy(b))
    assert e.shape == (3, 3) and e[2, 0].item() == 0.5 + 0.3j


def test_angle_abs_conj_values(torch_mod):
    values = carray(5)
    values[0] = 0
    e, t = ember.from_numpy(values), torch_mod.from_numpy(values)
    np.testing.assert_allclose(e.abs().numpy(), t.abs().numpy())
    np.testing.assert_allclose(e.angle().numpy(), t.angle().numpy())
    np.testing.assert_allclose(e.conj().numpy(), t.conj().resolve_conj().numpy())
    np.testing.assert_allclose(e.sgn().numpy(), t.sgn().numpy())
    assert e.abs().dtype is ember.float64 and ctensor([1j], np.complex64).abs().dtype is dt.float32


# --- gradients --------------------------------------------------------------------------------
def _z(*shape, seed=0, noncontiguous=False):
    if noncontiguous:
        return ember.from_numpy(carray(*shape[::-1], seed=seed)).t().requires_grad_()
    return ember.from_numpy(carray(*shape, seed=seed)).requires_grad_()


UNARY_CASES = {
    "neg": lambda z: -z,
    "exp": lambda z: z.exp(),
    "log": lambda z: z.log(),
    "sqrt": lambda z: z.sqrt(),
    "rsqrt": lambda z: z.rsqrt(),
    "sin": lambda z: z.sin(),
    "tanh": lambda z: z.tanh(),
    "sigmoid": lambda z: z.sigmoid(),
    "reciprocal": lambda z: z.reciprocal(),
    "abs": lambda z: z.abs(),
    "angle": lambda z: z.angle(),
    "sgn": lambda z: z.sgn(),
    "real": lambda z: z.real * 1.5,
    "imag": lambda z: z.imag,
    "conj": lambda z: z.conj(),
    "pow_int": lambda z: z**3,
    "pow_real": lambda z: z**2.5,
    "pow_complex_scalar": lambda z: z ** (0.5 + 1j),
    "scalar_ops": lambda z: (2 - 1j) * z + 1j - z / (1 + 1j),
    "rdiv": lambda z: 1j / z,
    "sum": lambda z: z.sum(0),
    "mean": lambda z: z.mean(),
    "reshape_transpose": lambda z: z.reshape(-1).reshape(2, -1).t() * 1j,
    "index": lambda z: z[0, 1:] * z[1, :2],
    "view_as_real": lambda z: cx.view_as_real(z) * 2,
    "cast_real_up": lambda z: cx.cast(z.real, dt.complex128) * 1j,
}


@pytest.mark.parametrize("name", list(UNARY_CASES))
def test_unary_gradcheck(name):
    f = UNARY_CASES[name]
    z = _z(2, 3)
    assert ember.autograd.gradcheck(f, (z,))
    assert ember.autograd.gradgradcheck(f, (z,))


@pytest.mark.parametrize("name", ["exp", "abs", "real", "reshape_transpose", "view_as_real"])
def test_unary_gradcheck_noncontiguous(name):
    z = _z(2, 3, noncontiguous=True)
    assert not z.is_contiguous()
    assert ember.autograd.gradcheck(UNARY_CASES[name], (z,))


def _loss(m, out):
    # a real loss that reads both parts of the output
    if out.is_complex():
        return (out.abs() ** 2).sum() + (out * 0.7).real.sum() + out.imag.sum()
    return (out * out).sum() + out.sum()


TORCH_NAMES = {"sgn": lambda z: z.sgn(), "view_as_real": None, "cast_real_up": None}


@pytest.mark.parametrize("name", [n for n in UNARY_CASES if TORCH_NAMES.get(n, 1) is not None])
def test_unary_gradients_match_torch(torch_mod, name):
    f = UNARY_CASES[name]
    values = carray(2, 3, seed=3)
    e = ember.from_numpy(values.copy()).requires_grad_()
    t = torch_mod.from_numpy(values.copy()).requires_grad_()
    e_out, t_out = f(e), f(t)
    assert _name(e_out.dtype) == _name(t_out.dtype)
    np.testing.assert_allclose(e_out.detach().numpy(), t_out.detach().resolve_conj().numpy())
    _loss(ember, e_out).backward()
    _loss(torch_mod, t_out).backward()
    np.testing.assert_allclose(e.grad.numpy(), t.grad.resolve_conj().numpy(), rtol=1e-6, atol=1e-10)


BINARY_CASES = {
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
    "div": lambda a, b: a / b,
    "pow": lambda a, b: a**b,
    "matmul": lambda a, b: a @ b.t(),
}


@pytest.mark.parametrize("name", list(BINARY_CASES))
def test_binary_gradcheck_with_broadcasting(name):
    f = BINARY_CASES[name]
    a, b = _z(2, 3), _z(1, 3, seed=1)
    assert ember.autograd.gradcheck(f, (a, b))
    assert ember.autograd.gradgradcheck(f, (a, b))


@pytest.mark.parametrize("name", list(BINARY_CASES))
def test_binary_gradients_match_torch_with_a_real_operand(torch_mod, name):
    f = BINARY_CASES[name]
    z, x = carray(2, 3, seed=4), RNG.uniform(0.5, 2.0, size=(2, 3))
    grads = []
    for m in (em, torch_mod):
        a = m.from_numpy(z.copy()).requires_grad_()
        b = m.from_numpy(x.copy()).requires_grad_()
        if name == "matmul":
            b_in = m.complex(b, b * 0)
        else:
            b_in = b
        _loss(m, f(a, b_in)).backward()
        grads.append((a.grad.numpy(), b.grad.numpy(), b.grad.dtype))
    (ea, eb, edt), (ta, tb, tdt) = grads
    np.testing.assert_allclose(ea, ta, rtol=1e-6)
    np.testing.assert_allclose(eb, tb, rtol=1e-6)
    assert _name(edt) == _name(tdt) == "float64"  # a real input gets a real gradient


def test_construction_gradients_match_torch(torch_mod):
    a, b = RNG.uniform(0.5, 2.0, size=(2, 3)), RNG.normal(size=(2, 3))
    grads = []
    for m, complex_fn, polar_fn in (
        (ember, cx.complex, cx.polar),
        (torch_mod, torch_mod.complex, torch_mod.polar),
    ):
        x = m.from_numpy(a.copy()).requires_grad_()
        y = m.from_numpy(b.copy()).requires_grad_()
        out = complex_fn(x, y) * polar_fn(x, y)
        _loss(m, out).backward()
        grads.append((x.grad.numpy(), y.grad.numpy()))
    np.testing.assert_allclose(grads[0][0], grads[1][0], rtol=1e-6)
    np.testing.assert_allclose(grads[0][1], grads[1][1], rtol=1e-6)
    x = ember.from_numpy(a).requires_grad_()
    y = ember.from_numpy(b).requires_grad_()
    assert ember.autograd.gradcheck(cx.polar, (x, y))
    assert ember.autograd.gradgradcheck(cx.complex, (x, y))


def test_view_as_complex_gradcheck_and_zero_size():
    x = ember.from_numpy(RNG.normal(size=(3, 2))).requires_grad_()
    assert ember.autograd.gradcheck(lambda t: cx.view_as_complex(t) ** 2, (x,))
    empty = ember.from_numpy(np.zeros((0, 3), np.complex128)).requires_grad_()
    out = (empty * 1j).exp().abs().sum()
    out.backward()
    assert empty.grad.shape == (0, 3) and empty.grad.dtype is dt.complex128


@pytest.mark.parametrize("shapes", [((2, 3), (3, 4)), ((3,), (3, 2)), ((2, 2, 3), (2, 3, 2))])
def test_matmul_family_gradcheck(shapes):
    a, b = _z(*shapes[0]), _z(*shapes[1], seed=2)
    assert ember.autograd.gradcheck(ember.matmul, (a, b))
    assert ember.autograd.gradgradcheck(ember.matmul, (a, b))
    if len(shapes[0]) == 3:
        assert ember.autograd.gradcheck(ember.bmm, (a, b))


def test_mm_gradient_matches_torch(torch_mod):
    a, b = carray(2, 3, seed=5), carray(3, 2, seed=6)
    grads = []
    for m in (ember, torch_mod):
        x, y = m.from_numpy(a.copy()).requires_grad_(), m.from_numpy(b.copy()).requires_grad_()
        _loss(m, m.mm(x, y)).backward()
        grads.append((x.grad.numpy(), y.grad.numpy()))
    np.testing.assert_allclose(grads[0][0], grads[1][0], rtol=1e-6)
    np.testing.assert_allclose(grads[0][1], grads[1][1], rtol=1e-6)


def test_complex_leaf_requires_grad_and_ints_do_not():
    z = ctensor([1j], np.complex64).requires_grad_()
    assert z.requires_grad
    with pytest.raises(RuntimeError, match="floating point and complex"):
        ember.ones(1, dtype=ember.int64).requires_grad_()


def test_gradcheck_catches_a_wrong_complex_gradient():
    from ember.autograd.node import Node
    from ember.ops._dispatch import result

    class WrongSquareBackward(Node):
        def backward(self, g):
            (z,) = self.unpack_saved()
            return g * z * 2  # missing the conjugate: right only for real z

    def wrong_square(z):
        return result(WrongSquareBackward, z._data * z._data, (z,), (z,))

    z = _z(3)
    assert ember.autograd.gradcheck(lambda t: t * t, (z,))
    with pytest.raises(RuntimeError, match="Jacobian mismatch"):
        ember.autograd.gradcheck(wrong_square, (z,))
    assert not ember.autograd.gradcheck(wrong_square, (z,), raise_exception=False)


_MASK = np.array([[True, False, True], [False, True, False]])
AGNOSTIC_CASES = {
    "where": lambda z: ember.where(ember.from_numpy(_MASK), z, z * 2),
    "cat_stack": lambda z: ember.cat([z, ember.stack([z[0], z[1]]) * 1j], 0),
    "masked_fill": lambda z: z.masked_fill(ember.from_numpy(_MASK), 0.0),
    "index_select_gather": lambda z: z.index_select(1, ember.tensor([2, 0])).gather(
        1, ember.tensor([[0, 0], [1, 1]])
    ),
    "flip_roll_expand": lambda z: z.flip(0).roll(1, 1)[:1].expand(3, 3),
    "cumsum_narrow": lambda z: z.cumsum(1).narrow(1, 1, 2),
    "setitem": lambda z: (lambda c: (c.__setitem__(0, z[1] * 2), c)[1])(z.clone()),
    "einsum": lambda z: ember.einsum("ij,kj->ik", z, z),
    "linear": lambda z: ember.nn.functional.linear(z, z * (1 - 1j)),
    "dot": lambda z: ember.dot(z[0], z[1]),
}


@pytest.mark.parametrize("name", list(AGNOSTIC_CASES))
def test_shape_indexing_and_product_ops_on_complex(name):
    assert ember.autograd.gradcheck(AGNOSTIC_CASES[name], (_z(2, 3),))


@pytest.mark.parametrize("name", ["einsum", "linear", "where", "cumsum_narrow"])
def test_product_and_shape_gradients_match_torch(torch_mod, name):
    f = AGNOSTIC_CASES[name]
    values = carray(2, 3, seed=7)
    e = ember.from_numpy(values.copy()).requires_grad_()
    t = torch_mod.from_numpy(values.copy()).requires_grad_()
    torch_f = {
        "einsum": lambda z: torch_mod.einsum("ij,kj->ik", z, z),
        "linear": lambda z: torch_mod.nn.functional.linear(z, z * (1 - 1j)),
        "where": lambda z: torch_mod.where(torch_mod.from_numpy(_MASK), z, z * 2),
        "cumsum_narrow": f,
    }[name]
    _loss(ember, f(e)).backward()
    _loss(torch_mod, torch_f(t)).backward()
    np.testing.assert_allclose(e.grad.numpy(), t.grad.numpy(), rtol=1e-6, atol=1e-12)


def test_angle_abs_and_sgn_gradients_at_zero_match_torch(torch_mod):
    values = np.array([0j, 1 + 1j, -2j])
    for f in (lambda z: z.angle(), lambda z: z.abs(), lambda z: z.sgn().real):
        e = ember.from_numpy(values.copy()).requires_grad_()
        t = torch_mod.from_numpy(values.copy()).requires_grad_()
        f(e).sum().backward()
        f(t).sum().backward()
        np.testing.assert_allclose(e.grad.numpy(), t.grad.numpy(), atol=1e-7)


HOLOMORPHIC = sorted(cx.HOLOMORPHIC - {"neg"})


def test_holomorphic_gradients_on_the_branches_of_every_op():
    values = np.random.default_rng(1).normal(size=(2, 20)) * 1.5
    z = ember.from_numpy(values[0] + 1j * values[1]).requires_grad_()
    for name in HOLOMORPHIC:
        assert ember.autograd.gradcheck(lambda t: getattr(t, name)(), (z,)), name  # noqa: B023


@pytest.mark.parametrize("name", ["acosh", "asin", "atanh", "log1p", "rsqrt"])
def test_holomorphic_gradients_match_torch(torch_mod, name):
    values = carray(6, seed=9) * 1.5
    e = ember.from_numpy(values.copy()).requires_grad_()
    t = torch_mod.from_numpy(values.copy()).requires_grad_()
    _loss(ember, getattr(e, name)()).backward()
    _loss(torch_mod, getattr(t, name)()).backward()
    np.testing.assert_allclose(e.grad.numpy(), t.grad.numpy(), rtol=1e-6)


def test_complex_checks_both_dtypes_and_its_out_dtype_as_torch():
    with pytest.raises(RuntimeError, match="Expected both inputs to be Half, Float or Double"):
        ember.complex(ember.ones(2), ember.ones(2, dtype=ember.int32))
    out = ember.empty(2, dtype=ember.complex64)
    with pytest.raises(
        RuntimeError, match="scalar type ComplexDouble but got scalar type ComplexFloat"
    ):
        ember.complex(
            ember.ones(2, dtype=ember.float64), ember.ones(2, dtype=ember.float64), out=out
        )
