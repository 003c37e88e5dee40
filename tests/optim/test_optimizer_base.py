"""The Optimizer base: named parameters, add_param_group checks, step and state-dict hooks,
loading state (dtype casting, torch layouts)."""

import warnings

import numpy as np
import pytest

import ember


def _named(m):
    w = m.ones(2, 2, requires_grad=True)
    b = m.zeros(2, requires_grad=True)
    return [("layer.weight", w), ("layer.bias", b)]


def test_named_parameters_are_kept_as_param_names(torch_mod):
    sds = []
    for m in (ember, torch_mod):
        named = _named(m)
        opt = m.optim.Adam(named, lr=0.1)
        assert opt.param_groups[0]["param_names"] == ["layer.weight", "layer.bias"]
        assert opt.param_groups[0]["params"][0] is named[0][1]
        for _, p in named:
            p.grad = m.ones_like(p)
        opt.step()
        sds.append(opt.state_dict())
    e, t = sds
    assert e["param_groups"][0]["param_names"] == t["param_groups"][0]["param_names"]
    assert set(e["param_groups"][0]) == set(t["param_groups"][0])


def test_mixing_named_and_unnamed_parameters_raises(torch_mod):
    for m in (ember, torch_mod):
        w = m.ones(1, requires_grad=True)
        b = m.ones(1, requires_grad=True)
        with pytest.raises(ValueError, match="Some param names are missing"):
            m.optim.SGD([("w", w), b], lr=0.1)
        opt = m.optim.SGD([("w", w)], lr=0.1)
        with pytest.raises(ValueError, match="cannot add param group without names"):
            opt.add_param_group({"params": [b]})


def test_add_param_group_checks(torch_mod):
    for m in (ember, torch_mod):
        p = m.ones(1, requires_grad=True)
        opt = m.optim.SGD([p], lr=0.1)
        with pytest.raises(TypeError, match="param_group must be a dict"):
            opt.add_param_group([p])
        with pytest.raises(TypeError, match="organized in ordered collections"):
            opt.add_param_group({"params": {m.ones(1, requires_grad=True)}})
        with pytest.raises(ValueError, match="more than one parameter group"):
            opt.add_param_group({"params": [p]})
        with pytest.warns(UserWarning, match="duplicate parameters"):
            q = m.ones(1, requires_grad=True)
            opt.add_param_group({"params": [q, q]})
        with pytest.raises(TypeError, match="optimizer can only optimize Tensors"):
            m.optim.SGD([1.0], lr=0.1)


def test_sgd_without_lr_in_a_group_uses_the_default():
    p = ember.ones(1, requires_grad=True)
    opt = ember.optim.SGD([p])
    assert opt.param_groups[0]["lr"] == 1e-3


def test_step_hooks_run_in_order_and_can_be_removed():
    p = ember.ones(1, requires_grad=True)
    opt = ember.optim.Adamax([p], lr=0.1)
    calls = []
    pre = opt.register_step_pre_hook(lambda o, args, kwargs: calls.append(("pre", o is opt)))
    opt.register_step_post_hook(lambda o, args, kwargs: calls.append(("post", args)))
    handle = ember.optim.optimizer.register_optimizer_step_pre_hook(
        lambda o, args, kwargs: calls.append(("global", type(o).__name__))
    )
    p.grad = ember.ones(1)
    opt.step()
    assert calls == [("global", "Adamax"), ("pre", True), ("post", ())]
    pre.remove()
    handle.remove()
    calls.clear()
    opt.step()
    assert calls == [("post", ())]


def test_step_pre_hook_may_replace_the_arguments():
    p = ember.ones(1, requires_grad=True)
    opt = ember.optim.SGD([p], lr=0.1)
    seen = []

    def closure():
        seen.append(1)
        return ember.tensor(2.0)

    opt.register_step_pre_hook(lambda o, args, kwargs: ((), {"closure": closure}))
    assert opt.step().item() == 2.0 and seen == [1]
    opt2 = ember.optim.SGD([ember.ones(1, requires_grad=True)], lr=0.1)
    opt2.register_step_pre_hook(lambda o, args, kwargs: 5)
    with pytest.raises(RuntimeError, match="must return None or a tuple"):
        opt2.step()


def test_inherited_step_is_hooked_once():
    p = ember.ones(1, requires_grad=True)
    ember.optim.Adam([ember.ones(1, requires_grad=True)])
    opt = ember.optim.AdamW([p])
    count = []
    opt.register_step_pre_hook(lambda *a: count.append(1))
    p.grad = ember.ones(1)
    opt.step()
    assert count == [1]


def test_state_dict_hooks():
    p = ember.ones(1, requires_grad=True)
    opt = ember.optim.SGD([p], lr=0.1, momentum=0.9)
    order = []
    opt.register_state_dict_pre_hook(lambda o: order.append("pre"))
    opt.register_state_dict_post_hook(lambda o, sd: {**sd, "extra": 1})
    sd = opt.state_dict()
    assert order == ["pre"] and sd["extra"] == 1

    def drop_extra(o, sd):
        sd = dict(sd)
        sd.pop("extra")
        order.append("load-pre")
        return sd

    opt.register_load_state_dict_pre_hook(drop_extra)
    opt.register_load_state_dict_post_hook(lambda o: order.append("load-post"))
    opt.register_load_state_dict_pre_hook(lambda o, sd: order.append("first"), prepend=True)
    opt.load_state_dict(sd)
    assert order == ["pre", "first", "load-pre", "load-post"]


def test_load_state_dict_casts_state_to_the_parameter_dtype_but_not_step():
    p = ember.ones(2, dtype=ember.float64, requires_grad=True)
    opt = ember.optim.Adam([p])
    sd = {
        "state": {
            0: {
                "step": ember.tensor(3.0),
                "exp_avg": ember.ones(2),
                "exp_avg_sq": ember.ones(2),
            }
        },
        "param_groups": [dict(opt.state_dict()["param_groups"][0])],
    }
    opt.load_state_dict(sd)
    state = opt.state[p]
    assert state["exp_avg"].dtype == ember.float64
    assert state["step"].dtype == ember.float32 and state["step"].item() == 3.0


def test_load_state_dict_mismatches_raise():
    p, q = ember.ones(1, requires_grad=True), ember.ones(1, requires_grad=True)
    opt = ember.optim.SGD([p, q], lr=0.1)
    sd = opt.state_dict()
    other = ember.optim.SGD([{"params": [p]}, {"params": [q]}], lr=0.1)
    with pytest.raises(ValueError, match="different number of parameter groups"):
        other.load_state_dict(sd)
    single = ember.optim.SGD([p], lr=0.1)
    with pytest.raises(ValueError, match="doesn't match the size of optimizer's group"):
        single.load_state_dict(sd)


def test_lbfgs_state_dict_round_trip_continues_identically():
    def run(opt, x, steps):
        def closure():
            opt.zero_grad()
            loss = ((x - 3.0) ** 4).sum() + (x**2).sum()
            loss.backward()
            return loss

        for _ in range(steps):
            opt.step(closure)

    x = ember.tensor([0.5, -1.0], dtype=ember.float64, requires_grad=True)
    opt = ember.optim.LBFGS([x], max_iter=3, history_size=4)
    run(opt, x, 2)
    sd = opt.state_dict()
    x2 = ember.tensor(x.detach().numpy(), requires_grad=True)
    opt2 = ember.optim.LBFGS([x2], max_iter=3, history_size=4)
    opt2.load_state_dict(sd)
    run(opt, x, 2)
    run(opt2, x2, 2)
    np.testing.assert_array_equal(x.detach().numpy(), x2.detach().numpy())


def test_optimizer_repr_lists_group_options():
    opt = ember.optim.RAdam([ember.ones(1, requires_grad=True)], lr=0.5)
    text = repr(opt)
    assert text.startswith("RAdam (\nParameter Group 0\n")
    assert "    lr: 0.5\n" in text and "    decoupled_weight_decay: False\n" in text


def test_deepcopy_of_an_optimizer_keeps_groups_and_state():
    import copy

    p = ember.ones(2, requires_grad=True)
    opt = ember.optim.Adam([p], lr=0.1)
    p.grad = ember.ones(2)
    opt.step()
    clone = copy.deepcopy(opt)
    assert clone.param_groups[0]["lr"] == 0.1
    (state,) = clone.state.values()
    assert state["step"].item() == 1.0
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        clone.zero_grad()


@pytest.mark.parametrize(
    "name, kwargs",
    [
        ("Adam", {"amsgrad": True}),
        ("Adamax", {}),
        ("Adagrad", {"initial_accumulator_value": 0.1}),
        ("RMSprop", {"centered": True, "momentum": 0.9}),
        ("Rprop", {}),
        ("Adadelta", {}),
        ("LBFGS", {"max_iter": 4}),
    ],
)
def test_complex_parameters_update_their_parts_independently_as_torch(torch_mod, name, kwargs):
    # torch views a complex parameter, its gradient and its state as reals; the state stays complex
    runs = []
    for m in (ember, torch_mod):
        param = m.nn.Parameter(m.tensor([[1 + 2j, -0.5 + 0.1j], [0.3 - 1j, 2 + 0j]]))
        opt = getattr(m.optim, name)([param], **kwargs)

        def closure():
            opt.zero_grad()
            parts = m.view_as_real(param)
            loss = (parts.tanh() ** 2).sum() + (parts[..., 0] * parts[..., 1]).sum()
            loss.backward()
            return loss

        for _ in range(3):
            opt.step(closure)
        state = {k: v for k, v in opt.state[param].items() if hasattr(v, "is_complex")}
        runs.append((param.detach().numpy(), {k: v.is_complex() for k, v in state.items()}))
    np.testing.assert_allclose(runs[0][0], runs[1][0], rtol=1e-5, atol=1e-6)
    assert runs[0][1] == runs[1][1]
