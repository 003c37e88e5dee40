"""Activation and loss modules: the same outputs, gradients and reprs as PyTorch's."""

import numpy as np
import pytest

import ember

ACTIVATION_MODULES = [
    ("ReLU", (), {}),
    ("LeakyReLU", (0.2,), {}),
    ("ELU", (), {"alpha": 0.5}),
    ("GELU", (), {}),
    ("GELU", (), {"approximate": "tanh"}),
    ("SiLU", (), {}),
    ("Mish", (), {}),
    ("Softplus", (), {"beta": 2.0}),
    ("Tanh", (), {}),
    ("Sigmoid", (), {}),
    ("Hardtanh", (-0.5, 0.5), {}),
    ("PReLU", (), {}),
    ("Softmax", (), {"dim": 1}),
    ("LogSoftmax", (), {"dim": -1}),
    ("Identity", (), {}),
    ("Flatten", (), {}),
    ("Unflatten", (1, (2, 3)), {}),
]


@pytest.mark.parametrize(
    "name,args,kwargs",
    ACTIVATION_MODULES,
    ids=[f"{n}{i}" for i, (n, _, _) in enumerate(ACTIVATION_MODULES)],
)
def test_activation_modules(name, args, kwargs, torch_mod):
    e = getattr(ember.nn, name)(*args, **kwargs).double()
    t = getattr(torch_mod.nn, name)(*args, **kwargs).double()
    assert repr(e) == repr(t)
    x = np.random.default_rng(0).standard_normal((4, 6))
    xe, xt = ember.tensor(x, requires_grad=True), torch_mod.tensor(x, requires_grad=True)
    ye, yt = e(xe), t(xt)
    np.testing.assert_allclose(ye.detach().numpy(), yt.detach().numpy(), rtol=1e-10)
    (ye * ye).sum().backward()
    (yt * yt).sum().backward()
    np.testing.assert_allclose(xe.grad.numpy(), xt.grad.numpy(), rtol=1e-9, atol=1e-12)


LOSS_MODULES = [
    ("MSELoss", {}, "same"),
    ("L1Loss", {"reduction": "sum"}, "same"),
    ("SmoothL1Loss", {"beta": 0.5}, "same"),
    ("HuberLoss", {"delta": 0.3}, "same"),
    ("CrossEntropyLoss", {"label_smoothing": 0.1}, "index"),
    ("CrossEntropyLoss", {"reduction": "none", "ignore_index": 2}, "index"),
    ("NLLLoss", {}, "index"),
    ("BCEWithLogitsLoss", {}, "prob"),
    ("BCELoss", {}, "prob_in"),
    ("KLDivLoss", {"reduction": "batchmean"}, "log"),
]


@pytest.mark.parametrize(
    "name,kwargs,target", LOSS_MODULES, ids=[f"{n}{i}" for i, (n, _, _) in enumerate(LOSS_MODULES)]
)
def test_loss_modules(name, kwargs, target, torch_mod):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4, 5))
    targets = {
        "same": rng.standard_normal((4, 5)),
        "index": np.array([0, 2, 4, 1]),
        "prob": rng.uniform(0, 1, (4, 5)),
        "prob_in": rng.uniform(0, 1, (4, 5)),
        "log": np.log(rng.dirichlet(np.ones(5), 4)),
    }[target]
    results = []
    for m in (ember, torch_mod):
        loss = getattr(m.nn, name)(**kwargs)
        xin = m.tensor(x, requires_grad=True)
        inp = xin.sigmoid() if target == "prob_in" else xin
        if target == "log":
            inp = m.log_softmax(xin, 1)
            loss = getattr(m.nn, name)(log_target=True, **kwargs)
        out = loss(inp, m.tensor(targets))
        out.sum().backward()
        results.append((out.detach().numpy(), xin.grad.numpy(), repr(loss)))
    np.testing.assert_allclose(results[0][0], results[1][0], rtol=1e-10)
    np.testing.assert_allclose(results[0][1], results[1][1], rtol=1e-9, atol=1e-12)
    assert results[0][2] == results[1][2]


def test_pairwise_losses_modules(torch_mod):
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((4, 3)), rng.standard_normal((4, 3))
    y = np.array([1, -1, 1, -1])
    for m_name, kwargs, args in (
        ("CosineEmbeddingLoss", {"margin": 0.2}, (a, b, y)),
        ("MarginRankingLoss", {"margin": 0.1}, (a[:, 0], b[:, 0], y)),
    ):
        e = getattr(ember.nn, m_name)(**kwargs)(*[ember.tensor(v) for v in args])
        t = getattr(torch_mod.nn, m_name)(**kwargs)(*[torch_mod.tensor(v) for v in args])
        assert e.item() == pytest.approx(t.item())
