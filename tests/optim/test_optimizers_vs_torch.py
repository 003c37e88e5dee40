"""Every optimizer against PyTorch's: the same float64 parameters, the same gradient
sequence, N steps per flag combination; state_dict layouts and round trips."""

import numpy as np
import pytest

import ember

CASES = {
    "sgd": ("SGD", dict(lr=0.1)),
    "sgd_momentum_dampening_wd": (
        "SGD",
        dict(lr=0.05, momentum=0.9, dampening=0.1, weight_decay=0.01),
    ),
    "sgd_nesterov_maximize": ("SGD", dict(lr=0.05, momentum=0.9, nesterov=True, maximize=True)),
    "sgd_flags": ("SGD", dict(lr=0.05, momentum=0.5, foreach=False, differentiable=False)),
    "adam": ("Adam", dict(lr=0.01)),
    "adam_wd_amsgrad": ("Adam", dict(lr=0.01, betas=(0.8, 0.99), weight_decay=0.1, amsgrad=True)),
    "adam_maximize_decoupled": (
        "Adam",
        dict(lr=0.01, weight_decay=0.1, decoupled_weight_decay=True, maximize=True),
    ),
    "adam_flags": ("Adam", dict(lr=0.01, foreach=False, capturable=False, fused=None)),
    "adam_fused": ("Adam", dict(lr=0.01, weight_decay=0.1, amsgrad=True, fused=True)),
    "adamw_fused": ("AdamW", dict(lr=0.01, fused=True, maximize=True)),
    "sgd_fused": ("SGD", dict(lr=0.05, momentum=0.9, nesterov=True, fused=True)),
    "adagrad_fused": ("Adagrad", dict(lr=0.1, lr_decay=0.01, fused=True)),
    "adamw": ("AdamW", dict(lr=0.01, weight_decay=0.05)),
    "adamw_amsgrad_maximize": ("AdamW", dict(lr=0.02, amsgrad=True, maximize=True)),
    "rmsprop": ("RMSprop", dict(lr=0.01)),
    "rmsprop_centered_momentum_wd": (
        "RMSprop",
        dict(lr=0.01, momentum=0.5, centered=True, weight_decay=0.01),
    ),
    "rmsprop_maximize_alpha": ("RMSprop", dict(lr=0.01, alpha=0.9, eps=1e-6, maximize=True)),
    "adagrad": ("Adagrad", dict(lr=0.1)),
    "adagrad_all": (
        "Adagrad",
        dict(lr=0.1, lr_decay=0.01, weight_decay=0.01, initial_accumulator_value=0.1, eps=1e-8),
    ),
    "adagrad_maximize": ("Adagrad", dict(lr=0.1, maximize=True)),
    "adadelta": ("Adadelta", dict()),
    "adadelta_all": ("Adadelta", dict(lr=0.5, rho=0.8, eps=1e-5, weight_decay=0.1)),
    "adadelta_maximize": ("Adadelta", dict(maximize=True, capturable=False, foreach=False)),
    "adamax": ("Adamax", dict()),
    "adamax_all": ("Adamax", dict(lr=0.01, betas=(0.8, 0.9), eps=1e-6, weight_decay=0.1)),
    "adamax_maximize": ("Adamax", dict(lr=0.01, maximize=True)),
    "nadam": ("NAdam", dict()),
    "nadam_wd": ("NAdam", dict(lr=0.01, weight_decay=0.1, momentum_decay=0.01)),
    "nadam_decoupled_maximize": (
        "NAdam",
        dict(lr=0.01, weight_decay=0.1, decoupled_weight_decay=True, maximize=True),
    ),
    "radam": ("RAdam", dict(lr=0.01)),
    "radam_wd_betas": ("RAdam", dict(lr=0.01, betas=(0.5, 0.6), weight_decay=0.1)),
    "radam_decoupled_maximize": (
        "RAdam",
        dict(lr=0.01, weight_decay=0.1, decoupled_weight_decay=True, maximize=True),
    ),
    "rprop": ("Rprop", dict()),
    "rprop_all": ("Rprop", dict(lr=0.05, etas=(0.3, 1.5), step_sizes=(1e-3, 0.07))),
    "rprop_maximize": ("Rprop", dict(lr=0.05, maximize=True)),
    "asgd": ("ASGD", dict(lr=0.05)),
    "asgd_t0_wd": ("ASGD", dict(lr=0.05, lambd=0.01, alpha=0.5, t0=2, weight_decay=0.1)),
    "asgd_maximize": ("ASGD", dict(lr=0.05, t0=0, maximize=True)),
    "adafactor": ("Adafactor", dict()),
    "adafactor_all": (
        "Adafactor",
        dict(lr=0.05, beta2_decay=-0.5, eps=(1e-6, 1e-2), d=1.5, weight_decay=0.1),
    ),
    "adafactor_maximize": ("Adafactor", dict(lr=0.05, maximize=True)),
}


def _problem(m):
    rng = np.random.default_rng(0)
    w = m.tensor(rng.standard_normal((3, 4)), requires_grad=True)
    b = m.tensor(rng.standard_normal(3), requires_grad=True)
    x = m.tensor(rng.standard_normal((5, 4)))
    return w, b, x


def _loss(w, b, x):
    return ((x @ w.T + b).tanh() ** 2).sum() + (w**4).sum() * 0.01


def _train(m, name, kwargs, steps=6, groups=True):
    w, b, x = _problem(m)
    params = [{"params": [w]}, {"params": [b], "lr": 0.03}] if groups else [w, b]
    opt = getattr(m.optim, name)(params, **kwargs)
    for _ in range(steps):
        opt.zero_grad()
        _loss(w, b, x).backward()
        opt.step()
    return w, b, opt


def _assert_close(e, t):
    np.testing.assert_allclose(e.detach().numpy(), t.detach().numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("case", sorted(CASES))
def test_parameters_after_steps_equal_torch(case, torch_mod):
    name, kwargs = CASES[case]
    we, be, oe = _train(ember, name, kwargs)
    wt, bt, ot = _train(torch_mod, name, kwargs)
    _assert_close(we, wt)
    _assert_close(be, bt)
    # same state keys and values, so torch-shaped checkpoints load
    se, st = oe.state_dict(), ot.state_dict()
    assert sorted(se["state"]) == sorted(st["state"])
    for i in st["state"]:
        assert sorted(se["state"][i]) == sorted(st["state"][i])
        for key, value in st["state"][i].items():
            mine = se["state"][i][key]
            if isinstance(value, torch_mod.Tensor):
                assert mine.dtype.np == value.numpy().dtype, key
                np.testing.assert_allclose(mine.numpy(), value.numpy(), rtol=1e-9, atol=1e-12)
            else:
                assert mine == value, key
    for ge, gt in zip(se["param_groups"], st["param_groups"]):
        assert set(ge) == set(gt)


def _to_ember(value, torch_mod):
    if isinstance(value, torch_mod.Tensor):
        return ember.tensor(value.numpy())
    return value


@pytest.mark.parametrize("case", ["adam_wd_amsgrad", "nadam_wd", "asgd_t0_wd", "rprop_all"])
def test_loading_a_torch_state_dict_gives_the_same_next_steps(case, torch_mod):
    name, kwargs = CASES[case]
    w0, b0, trained = _train(torch_mod, name, kwargs, steps=3)
    sd = trained.state_dict()
    ember_sd = {
        "state": {
            i: {k: _to_ember(v, torch_mod) for k, v in s.items()} for i, s in sd["state"].items()
        },
        "param_groups": sd["param_groups"],
    }
    # both sides load the checkpoint into a fresh optimizer (loading casts state to the
    # parameters' dtype, so torch must go through it too)
    runs = []
    for m, state in ((ember, ember_sd), (torch_mod, sd)):
        w = m.tensor(w0.detach().numpy(), requires_grad=True)
        b = m.tensor(b0.detach().numpy(), requires_grad=True)
        opt = getattr(m.optim, name)([{"params": [w]}, {"params": [b]}], lr=123.0)
        opt.load_state_dict(state)
        assert opt.param_groups[1]["lr"] == 0.03
        _, _, x = _problem(m)
        for _ in range(3):
            opt.zero_grad()
            _loss(w, b, x).backward()
            opt.step()
        runs.append((w, b))
    _assert_close(runs[0][0], runs[1][0])
    _assert_close(runs[0][1], runs[1][1])


@pytest.mark.parametrize("case", ["adadelta_all", "adamax_all", "radam", "adafactor_all"])
def test_state_dict_round_trip_continues_identically(case):
    name, kwargs = CASES[case]
    w, b, opt = _train(ember, name, kwargs, steps=3)
    sd = opt.state_dict()
    w2 = ember.tensor(w.detach().numpy(), requires_grad=True)
    b2 = ember.tensor(b.detach().numpy(), requires_grad=True)
    opt2 = getattr(ember.optim, name)([{"params": [w2]}, {"params": [b2]}], **kwargs)
    opt2.load_state_dict(sd)
    _, _, x = _problem(ember)
    for o, (pw, pb) in ((opt, (w, b)), (opt2, (w2, b2))):
        for _ in range(2):
            o.zero_grad()
            _loss(pw, pb, x).backward()
            o.step()
    np.testing.assert_array_equal(w.detach().numpy(), w2.detach().numpy())
    np.testing.assert_array_equal(b.detach().numpy(), b2.detach().numpy())


def test_add_param_group_is_stepped_with_its_own_lr(torch_mod):
    results = []
    for m in (ember, torch_mod):
        w, b, x = _problem(m)
        opt = m.optim.NAdam([w], lr=0.01)
        opt.add_param_group({"params": b, "lr": 0.1, "betas": (0.5, 0.9)})
        assert opt.param_groups[1]["momentum_decay"] == 4e-3
        for _ in range(5):
            opt.zero_grad()
            _loss(w, b, x).backward()
            opt.step()
        results.append((w.detach().numpy().copy(), b.detach().numpy().copy()))
    for e, t in zip(*results):
        np.testing.assert_allclose(e, t, rtol=1e-10)


def test_params_without_grad_are_left_alone():
    p = ember.ones(2, requires_grad=True)
    q = ember.ones(2, requires_grad=True)
    opt = ember.optim.Adamax([p, q], lr=0.1)
    (p * 3).sum().backward()
    opt.step()
    assert q.tolist() == [1.0, 1.0] and opt.state[q] == {}
    assert p.tolist() == pytest.approx([0.9, 0.9])


def _sparse_adam_run(m, kwargs, rows_per_step):
    rng = np.random.default_rng(1)
    emb = m.tensor(rng.standard_normal((6, 3)), requires_grad=True)
    vec = m.tensor(rng.standard_normal(4), requires_grad=True)
    opt = m.optim.SparseAdam([emb, vec], **kwargs)
    for rows in rows_per_step:
        grad = np.zeros((6, 3))
        grad[rows] = rng.standard_normal((len(rows), 3))
        vgrad = np.zeros(4)
        vgrad[rows[:1]] = 1.5
        if m is ember:
            emb.grad, vec.grad = m.tensor(grad), m.tensor(vgrad)
        else:
            emb.grad = m.tensor(grad).to_sparse(sparse_dim=1)
            vec.grad = m.tensor(vgrad).to_sparse()
        opt.step()
    return emb.detach().numpy(), vec.detach().numpy(), opt


@pytest.mark.parametrize("kwargs", [dict(lr=0.1), dict(lr=0.05, betas=(0.5, 0.7), maximize=True)])
def test_sparse_adam_on_row_gradients_equals_torch(kwargs, torch_mod):
    rows = [[0, 2], [2, 3], [1], [0, 1, 2, 3], [3, 5]]
    ee, ve, oe = _sparse_adam_run(ember, kwargs, rows)
    et, vt, ot = _sparse_adam_run(torch_mod, kwargs, rows)
    np.testing.assert_allclose(ee, et, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(ve, vt, rtol=1e-10, atol=1e-12)
    assert oe.state_dict()["state"][0]["step"] == ot.state_dict()["state"][0]["step"] == 5
    assert ee[4].tolist() == et[4].tolist()  # a row never touched stays put


ERRORS = [
    ("Adadelta", dict(lr=-1), "Invalid learning rate: -1"),
    ("Adadelta", dict(rho=1.5), "Invalid rho value: 1.5"),
    ("Adadelta", dict(eps=-1), "Invalid epsilon value: -1"),
    ("Adamax", dict(betas=(1.0, 0.9)), "Invalid beta parameter at index 0: 1.0"),
    ("Adamax", dict(weight_decay=-0.1), "Invalid weight_decay value: -0.1"),
    ("NAdam", dict(momentum_decay=-1), "Invalid momentum_decay value: -1"),
    ("NAdam", dict(betas=(0.9, -0.1)), "Invalid beta parameter at index 1: -0.1"),
    ("RAdam", dict(lr=-0.5), "Invalid learning rate: -0.5"),
    ("Rprop", dict(etas=(1.1, 1.2)), "Invalid eta values: 1.1, 1.2"),
    ("ASGD", dict(weight_decay=-1), "Invalid weight_decay value: -1"),
    ("SparseAdam", dict(lr=0.0), "Invalid learning rate: 0.0"),
    ("SparseAdam", dict(eps=0.0), "Invalid epsilon value: 0.0"),
    ("Adafactor", dict(lr=-1), "Learning rate should be >= 0 but is: -1"),
    ("Adafactor", dict(beta2_decay=0.5), "beta2_decay should be <= 0 but is: 0.5"),
    ("Adafactor", dict(d=0.5), "Clipping threshold d should be >= 1 but is: 0.5"),
    ("Adafactor", dict(eps=(-1, 1e-3)), "epsilon1 should be >= 0 but is: -1"),
    ("LBFGS", dict(lr=-1), "Invalid learning rate: -1"),
    ("SGD", dict(lr=-0.1), "Invalid learning rate: -0.1"),
    ("SGD", dict(momentum=-0.1), "Invalid momentum value: -0.1"),
    ("SGD", dict(nesterov=True), "Nesterov momentum requires a momentum and zero dampening"),
    ("Adam", dict(eps=-1.0), "Invalid epsilon value: -1.0"),
    ("AdamW", dict(betas=(0.9, 1.0)), "Invalid beta parameter at index 1: 1.0"),
    ("RMSprop", dict(weight_decay=-1), "Invalid weight_decay value: -1"),
    ("RMSprop", dict(alpha=-1), "Invalid alpha value: -1"),
    ("Adagrad", dict(lr_decay=-1), "Invalid lr_decay value: -1"),
    ("Adagrad", dict(initial_accumulator_value=-1), "Invalid initial_accumulator_value value: -1"),
    ("Adagrad", dict(eps=-1), "Invalid epsilon value: -1"),
]


@pytest.mark.parametrize("name,kwargs,message", ERRORS)
def test_invalid_arguments_raise_torch_messages(name, kwargs, message, torch_mod):
    for m in (ember, torch_mod):
        with pytest.raises(ValueError) as info:
            getattr(m.optim, name)([m.ones(2, requires_grad=True)], **kwargs)
        assert str(info.value) == message


@pytest.mark.parametrize("name", ["SGD", "Adam", "AdamW", "Adagrad"])
@pytest.mark.parametrize(
    "flags,message",
    [
        (dict(fused=True, differentiable=True), "`fused` does not support `differentiable`"),
        (dict(fused=True, foreach=True), "`fused` and `foreach` cannot be `True` together."),
    ],
)
def test_fused_flag_conflicts_raise_as_torch(name, flags, message, torch_mod):
    for m in (ember, torch_mod):
        with pytest.raises(RuntimeError) as info:
            getattr(m.optim, name)([m.ones(2, requires_grad=True)], lr=0.1, **flags)
        assert str(info.value) == message


# PyTorch keeps a Tensor lr as a float32 scalar tensor in some step-size arithmetic; ember
# uses its Python value, so those agree to float32 precision rather than bit for bit
TENSOR_LR_RTOL = {"Adam": 1e-6, "AdamW": 1e-6, "NAdam": 1e-6, "Adamax": 1e-6, "ASGD": 1e-6}
TENSOR_LR_RTOL["Adafactor"] = 1e-6


@pytest.mark.parametrize(
    "name",
    ["SGD", "Adam", "AdamW", "NAdam", "RAdam", "Adamax", "Rprop", "ASGD", "Adadelta"]
    + ["RMSprop", "Adagrad", "Adafactor"],
)
def test_tensor_learning_rate_steps_like_a_float(name, torch_mod):
    runs = []
    for m in (ember, torch_mod):
        w, b, x = _problem(m)
        opt = getattr(m.optim, name)([w, b], lr=m.tensor(0.02))
        for _ in range(3):
            opt.zero_grad()
            _loss(w, b, x).backward()
            opt.step()
        runs.append(w.detach().numpy().copy())
        if name != "Adafactor":
            with pytest.raises(ValueError, match="Tensor lr must be 1-element"):
                getattr(m.optim, name)([w], lr=m.tensor([0.1, 0.2]))
    rtol = TENSOR_LR_RTOL.get(name, 1e-10)
    np.testing.assert_allclose(runs[0], runs[1], rtol=rtol, atol=1e-12 if rtol < 1e-9 else 1e-8)


@pytest.mark.parametrize("name", ["Adadelta", "NAdam", "Rprop", "Adafactor"])
def test_zero_grad_set_to_none_and_zero(name):
    p = ember.ones(2, 2, requires_grad=True)
    opt = getattr(ember.optim, name)([p])
    (p * 2).sum().backward()
    opt.zero_grad(set_to_none=False)
    assert p.grad.tolist() == [[0.0, 0.0], [0.0, 0.0]]
    opt.zero_grad()
    assert p.grad is None


def test_step_closure_loss_is_returned():
    p = ember.tensor([1.0, 2.0], requires_grad=True)
    opt = ember.optim.RAdam([p])

    def closure():
        opt.zero_grad()
        loss = (p**2).sum()
        loss.backward()
        return loss

    assert opt.step(closure).item() == 5.0


EDGE_CASES = {
    "SGD": dict(lr=0.1, momentum=0.9),
    "Adam": dict(amsgrad=True),
    "AdamW": dict(),
    "RMSprop": dict(centered=True, momentum=0.1),
    "Adagrad": dict(),
    "Adadelta": dict(),
    "Adamax": dict(),
    "NAdam": dict(),
    "RAdam": dict(),
    "Rprop": dict(),
    "ASGD": dict(t0=1),
}


@pytest.mark.parametrize("name", sorted(EDGE_CASES))
def test_non_contiguous_gradients_and_empty_parameters_equal_torch(name, torch_mod):
    rng = np.random.default_rng(3)
    grads = [rng.standard_normal((4, 3)) for _ in range(3)]
    start = rng.standard_normal((3, 4))
    results = []
    for m in (ember, torch_mod):
        w = m.tensor(start, requires_grad=True)
        empty = m.zeros(0, 2, dtype=m.float64, requires_grad=True)
        opt = getattr(m.optim, name)([w, empty], **EDGE_CASES[name])
        for g in grads:
            w.grad = m.tensor(g).T  # a transposed, non-contiguous view
            empty.grad = m.zeros(0, 2, dtype=m.float64)
            opt.step()
        assert tuple(empty.shape) == (0, 2)
        results.append((w.detach().numpy().copy(), empty.detach().numpy()))
    np.testing.assert_allclose(results[0][0], results[1][0], rtol=1e-10, atol=1e-12)
    assert not np.allclose(results[0][0], start)


MUON_CASES = {
    "default": dict(lr=0.02),
    "plain_momentum": dict(lr=0.05, nesterov=False, momentum=0.9, weight_decay=0.0),
    "moonshot_lr": dict(lr=0.01, adjust_lr_fn="match_rms_adamw", ns_steps=3),
    "coefficients": dict(lr=0.01, ns_coefficients=(2.0, -1.5, 0.5), eps=1e-5),
}


@pytest.mark.parametrize("shape", [(3, 5), (6, 4)])
@pytest.mark.parametrize("case", sorted(MUON_CASES))
def test_muon_equals_torch(case, shape, torch_mod):
    rng = np.random.default_rng(4)
    start = rng.standard_normal(shape)
    grads = [rng.standard_normal(shape) for _ in range(5)]
    results = []
    for m in (ember, torch_mod):
        w = m.tensor(start, requires_grad=True)
        opt = m.optim.Muon([w], **MUON_CASES[case])
        for g in grads:
            w.grad = m.tensor(g)
            opt.step()
        results.append((w.detach().numpy().copy(), opt.state_dict()))
    # the Newton-Schulz iteration runs in bfloat16 in both: equal up to a rare rounding flip
    np.testing.assert_allclose(results[0][0], results[1][0], rtol=1e-6, atol=1e-9)
    assert not np.allclose(results[0][0], start)
    assert sorted(results[0][1]["state"][0]) == sorted(results[1][1]["state"][0])


def test_muon_rejects_non_matrix_parameters_and_bad_arguments(torch_mod):
    for m in (ember, torch_mod):
        with pytest.raises(ValueError, match="Muon only supports 2D parameters"):
            m.optim.Muon([m.ones(3, requires_grad=True)])
        w = m.ones(2, 2, requires_grad=True)
        with pytest.raises(ValueError, match="Learning rate should be >= 0 but is: -1"):
            m.optim.Muon([w], lr=-1)
        with pytest.raises(ValueError, match="momentum should be >= 0 but is: -0.5"):
            m.optim.Muon([w], momentum=-0.5)
        with pytest.raises(ValueError, match="Adjust learning rate function x is not supported"):
            m.optim.Muon([w], adjust_lr_fn="x")


def test_sparse_adam_with_a_sparse_embedding_equals_torch(torch_mod):
    rng = np.random.default_rng(5)
    weight = rng.standard_normal((10, 3))
    batches = [[1, 3, 3], [0, 3], [9, 1, 2]]
    results = []
    for m in (ember, torch_mod):
        emb = m.nn.Embedding(10, 3, sparse=True).double()
        with m.no_grad():
            emb.weight.copy_(m.tensor(weight))
        opt = m.optim.SparseAdam(emb.parameters(), lr=0.05)
        for idx in batches:
            opt.zero_grad()
            (emb(m.tensor(idx)) ** 2).sum().backward()
            opt.step()
        results.append(emb.weight.detach().numpy().copy())
    np.testing.assert_allclose(results[0], results[1], rtol=1e-10, atol=1e-12)
    assert results[0][5].tolist() == weight[5].tolist()


DIFFERENTIABLE = {
    "sgd_nesterov": ("SGD", dict(lr=0.1, momentum=0.9, nesterov=True)),
    "adam": ("Adam", dict(lr=0.1)),
    "adamw": ("AdamW", dict(lr=0.1)),
    "rmsprop_momentum": ("RMSprop", dict(lr=0.1, momentum=0.5)),
    "adagrad": ("Adagrad", dict(lr=0.1)),
    "adadelta": ("Adadelta", dict()),
    "nadam": ("NAdam", dict(lr=0.1)),
    "radam": ("RAdam", dict(lr=0.1, betas=(0.5, 0.6))),
    "asgd": ("ASGD", dict(lr=0.1, t0=1)),
}


@pytest.mark.parametrize("case", sorted(DIFFERENTIABLE))
def test_differentiable_steps_give_torch_hypergradients(case, torch_mod):
    """With differentiable=True the update is recorded: d(loss after 3 steps) / d(start,
    gradient) through the optimizer equals torch's."""
    name, kwargs = DIFFERENTIABLE[case]
    results = []
    for m in (ember, torch_mod):
        start = m.tensor([1.0, -2.0, 0.5], dtype=m.float64, requires_grad=True)
        g = m.tensor([0.3, 0.1, -0.7], dtype=m.float64, requires_grad=True)
        w = start.clone()  # a non-leaf parameter, as differentiable steps need
        opt = getattr(m.optim, name)([w], differentiable=True, **kwargs)
        for i in range(3):
            w.grad = g * (i + 1) + w * 0.1
            opt.step()
        d_start, d_g = m.autograd.grad((w**2).sum(), (start, g))
        results.append((w.detach().numpy(), d_start.numpy(), d_g.numpy()))
    for e, t in zip(*results):
        np.testing.assert_allclose(e, t, rtol=1e-9, atol=1e-12)


def test_a_plain_step_records_nothing():
    w = ember.ones(2, requires_grad=True)
    opt = ember.optim.Adam([w])
    w.grad = ember.ones(2, requires_grad=True)
    opt.step()
    assert w.grad_fn is None and opt.state[w]["exp_avg"].grad_fn is None
