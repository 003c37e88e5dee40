"""parametrize, parametrizations and the hook-based weight/spectral norms vs torch."""

import numpy as np
import pytest

import ember
from ember.nn.utils import parametrizations as PZ
from ember.nn.utils import parametrize as P


def _state_to_ember(e_mod, t_mod):
    e_mod.load_state_dict(
        {k: ember.tensor(v.detach().numpy()) for k, v in t_mod.state_dict().items()}
    )


def _symmetric(nn):
    class Symmetric(nn.Module):
        def forward(self, X):
            return X.triu() + X.triu(1).transpose(-1, -2)

    return Symmetric()


def _split(nn):
    class Split(nn.Module):
        """weight = a + b, stored as two tensors."""

        def forward(self, a, b):
            return a + b

        def right_inverse(self, w):
            return w * 0.25, w * 0.75

    return Split()


def _compare_forward_backward(e, t, x, torch_mod, rtol=1e-10):
    ye, yt = e(ember.tensor(x)), t(torch_mod.tensor(x))
    np.testing.assert_allclose(ye.detach().numpy(), yt.detach().numpy(), rtol=rtol)
    ye.pow(2).sum().backward()
    yt.pow(2).sum().backward()
    for (name, pe), (_, pt) in zip(e.named_parameters(), t.named_parameters()):
        np.testing.assert_allclose(pe.grad.numpy(), pt.grad.numpy(), rtol=1e-8, err_msg=name)


@pytest.mark.parametrize("make_p", [_symmetric, _split], ids=["symmetric", "tuple-right-inverse"])
def test_register_parametrization_matches_torch(make_p, torch_mod):
    t = torch_mod.nn.Linear(4, 4).double()
    e = ember.nn.Linear(4, 4).double()
    P.register_parametrization(e, "weight", make_p(ember.nn))
    torch_mod.nn.utils.parametrize.register_parametrization(t, "weight", make_p(torch_mod.nn))
    assert list(e.state_dict()) == list(t.state_dict())
    assert type(e).__name__ == type(t).__name__ == "ParametrizedLinear"
    assert P.type_before_parametrizations(e) is ember.nn.Linear
    assert P.is_parametrized(e) and P.is_parametrized(e, "weight")
    assert not P.is_parametrized(e, "bias")
    _state_to_ember(e, t)
    x = np.random.default_rng(0).standard_normal((3, 4))
    _compare_forward_backward(e, t, x, torch_mod)
    # assigning goes through right_inverse
    target = np.arange(16.0).reshape(4, 4)
    if make_p is _split:
        e.weight = ember.tensor(target)
        with torch_mod.no_grad():
            t.weight = torch_mod.tensor(target)
        np.testing.assert_allclose(e.weight.detach().numpy(), target)
        np.testing.assert_allclose(e.weight.detach().numpy(), t.weight.detach().numpy())
    else:
        for m, lib in ((e, ember), (t, torch_mod)):
            with pytest.raises(RuntimeError, match="Symmetric does not implement right_inverse"):
                m.weight = lib.tensor(target)
    for leave in (True, False):
        ee, tt = e if leave else None, t if leave else None
        if not leave:
            ee = P.register_parametrization(
                ember.nn.Linear(4, 4).double(), "weight", make_p(ember.nn)
            )
            tt = torch_mod.nn.utils.parametrize.register_parametrization(
                torch_mod.nn.Linear(4, 4).double(), "weight", make_p(torch_mod.nn)
            )
            _state_to_ember(ee, tt)
            if make_p is _split:
                for lib, m in ((P, ee), (torch_mod.nn.utils.parametrize, tt)):
                    with pytest.raises(ValueError, match="Cannot leave unparametrized"):
                        lib.remove_parametrizations(m, "weight", leave_parametrized=False)
                continue
        P.remove_parametrizations(ee, "weight", leave_parametrized=leave)
        torch_mod.nn.utils.parametrize.remove_parametrizations(
            tt, "weight", leave_parametrized=leave
        )
        assert type(ee) is ember.nn.Linear and not P.is_parametrized(ee)
        assert list(ee.state_dict()) == list(tt.state_dict())
        np.testing.assert_allclose(ee.weight.detach().numpy(), tt.weight.detach().numpy())
        assert isinstance(ee.weight, ember.nn.Parameter)


def test_chained_parametrizations_and_cached(torch_mod):
    calls = []

    class Double(ember.nn.Module):
        def forward(self, X):
            calls.append(1)
            return X * 2

    m = ember.nn.Linear(3, 3)
    P.register_parametrization(m, "weight", _symmetric(ember.nn))
    P.register_parametrization(m, "weight", Double())
    assert len(m.parametrizations.weight) == 2
    w = m.parametrizations.weight.original.detach().numpy()
    expected = 2 * (np.triu(w) + np.triu(w, 1).T)
    np.testing.assert_allclose(m.weight.detach().numpy(), expected, rtol=1e-6)
    calls.clear()
    with P.cached():
        a, b = m.weight, m.weight
    assert a is b and len(calls) == 1
    a, b = m.weight, m.weight  # outside cached(): computed on each access
    assert a is not b and len(calls) == 3


def test_parametrize_errors_match_torch(torch_mod):
    for lib, nn in ((P, ember.nn), (torch_mod.nn.utils.parametrize, torch_mod.nn)):
        with pytest.raises(
            ValueError,
            match="does not have a parameter, a buffer, or a parametrized element with name 'foo'",
        ):
            lib.register_parametrization(nn.Linear(3, 4), "foo", nn.Identity())
        with pytest.raises(ValueError, match="does not have a parametrization on weight"):
            lib.remove_parametrizations(nn.Linear(3, 4), "weight")

        class Shrink(nn.Module):
            def forward(self, X):
                return X[:1]

        with pytest.raises(ValueError, match="may not change the shape"):
            lib.register_parametrization(nn.Linear(3, 4), "weight", Shrink())


@pytest.mark.parametrize("dim", [0, 1, None])
def test_weight_norm_parametrization_matches_torch(dim, torch_mod):
    t = torch_mod.nn.utils.parametrizations.weight_norm(torch_mod.nn.Linear(3, 4).double(), dim=dim)
    e = PZ.weight_norm(ember.nn.Linear(3, 4).double(), dim=dim)
    assert list(e.state_dict()) == list(t.state_dict()) and repr(e) == repr(t)
    for k, v in t.state_dict().items():
        assert tuple(e.state_dict()[k].shape) == tuple(v.shape), k
    _state_to_ember(e, t)
    _compare_forward_backward(e, t, np.random.default_rng(1).standard_normal((2, 3)), torch_mod)


@pytest.mark.parametrize(
    "make",
    [
        lambda nn: nn.Linear(5, 4),
        lambda nn: nn.Conv2d(2, 3, 3),
        lambda nn: nn.ConvTranspose2d(2, 3, 3),
    ],
    ids=["linear", "conv", "conv-transpose"],
)
def test_spectral_norm_parametrization_matches_torch(make, torch_mod):
    torch_mod.manual_seed(0)  # a fixed weight: power steps from a random start converge alike
    t = torch_mod.nn.utils.parametrizations.spectral_norm(make(torch_mod.nn).double())
    e = PZ.spectral_norm(make(ember.nn).double())
    assert list(e.state_dict()) == list(t.state_dict())
    _state_to_ember(e, t)
    shape = (2, 5) if isinstance(e, ember.nn.Linear) else (1, 2, 5, 5)
    x = np.random.default_rng(2).standard_normal(shape)
    for mode in (True, False):  # training runs a power step on each access
        e.train(mode), t.train(mode)
        np.testing.assert_allclose(e.weight.detach().numpy(), t.weight.detach().numpy(), rtol=1e-9)
    _compare_forward_backward(e, t, x, torch_mod, rtol=1e-9)
    u_e = e.parametrizations.weight[0]._u.numpy()
    np.testing.assert_allclose(u_e, t.parametrizations.weight[0]._u.numpy(), rtol=1e-9)
    # the normalised weight's top singular value is one
    w = e.weight.detach().numpy().reshape(e.weight.shape[0], -1)
    if isinstance(e, ember.nn.Linear):
        assert np.linalg.svd(w, compute_uv=False)[0] == pytest.approx(1.0, rel=1e-3)


def test_hook_based_weight_and_spectral_norm_match_torch(torch_mod):
    with pytest.warns(FutureWarning, match="weight_norm` is deprecated"):
        e = ember.nn.utils.weight_norm(ember.nn.Linear(3, 4).double(), dim=1)
    t = torch_mod.nn.utils.weight_norm(torch_mod.nn.Linear(3, 4).double(), dim=1)
    assert list(e.state_dict()) == list(t.state_dict()) == ["bias", "weight_g", "weight_v"]
    _state_to_ember(e, t)
    x = np.random.default_rng(3).standard_normal((2, 3))
    _compare_forward_backward(e, t, x, torch_mod)
    for lib, m in ((ember, e), (torch_mod, t)):
        with pytest.raises(RuntimeError, match="Cannot register two weight_norm hooks"):
            lib.nn.utils.weight_norm(m, dim=1)
        lib.nn.utils.remove_weight_norm(m)
        with pytest.raises(ValueError, match="weight_norm of 'weight' not found in"):
            lib.nn.utils.remove_weight_norm(m)
    np.testing.assert_allclose(e.weight.detach().numpy(), t.weight.detach().numpy(), rtol=1e-12)

    t = torch_mod.nn.utils.spectral_norm(torch_mod.nn.Linear(5, 4).double())
    e = ember.nn.utils.spectral_norm(ember.nn.Linear(5, 4).double())
    assert list(e.state_dict()) == list(t.state_dict())
    _state_to_ember(e, t)
    x = np.random.default_rng(4).standard_normal((2, 5))
    for _ in range(2):
        np.testing.assert_allclose(
            e(ember.tensor(x)).detach().numpy(), t(torch_mod.tensor(x)).detach().numpy(), rtol=1e-9
        )
    np.testing.assert_allclose(e.weight_u.numpy(), t.weight_u.numpy(), rtol=1e-9)
    for lib, m in ((ember, e), (torch_mod, t)):
        lib.nn.utils.remove_spectral_norm(m)
        with pytest.raises(ValueError, match="spectral_norm of 'weight' not found in"):
            lib.nn.utils.remove_spectral_norm(m)
    assert list(e.state_dict()) == list(t.state_dict())
    np.testing.assert_allclose(e.weight.detach().numpy(), t.weight.detach().numpy(), rtol=1e-9)


@pytest.mark.parametrize(
    "shape,orth_map",
    [
        ((4, 4), None),
        ((4, 4), "cayley"),
        ((5, 3), None),
        ((3, 5), "householder"),
        ((5, 3), "matrix_exp"),
    ],
)
def test_orthogonal_parametrization_keeps_weights_orthogonal(shape, orth_map):
    linalg = ember.linalg
    if not all(hasattr(linalg, f) for f in ("householder_product", "matrix_exp", "qr", "solve")):
        pytest.skip("ember.linalg lacks the decompositions orthogonal() needs")
    m = ember.nn.Linear(shape[1], shape[0]).double()
    PZ.orthogonal(m, orthogonal_map=orth_map)
    w = m.weight.detach().numpy()
    gram = w.T @ w if shape[0] >= shape[1] else w @ w.T
    np.testing.assert_allclose(gram, np.eye(min(shape)), atol=1e-8)
    # a gradient step on the stored tensor keeps the weight orthogonal
    m(ember.randn(2, shape[1]).double()).pow(2).sum().backward()
    original = m.parametrizations.weight.original
    assert original.grad is not None
    with ember.no_grad():
        original.sub_(0.1 * original.grad)
    w = m.weight.detach().numpy()
    gram = w.T @ w if shape[0] >= shape[1] else w @ w.T
    np.testing.assert_allclose(gram, np.eye(min(shape)), atol=1e-8)
    with pytest.raises(
        ValueError, match="Expected a matrix or batch of matrices. Got a tensor of 1 dimensions"
    ):
        PZ.orthogonal(m, "bias")
