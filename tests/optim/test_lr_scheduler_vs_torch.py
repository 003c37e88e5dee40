"""Every learning-rate schedule against PyTorch's: lr (and momentum) sequences over 30
steps with two param groups, chaining, step(epoch), state_dict round trips, warnings."""

import warnings

import pytest

import ember


def _optimizer(m, opt_name="SGD"):
    a, b = m.zeros(1, requires_grad=True), m.zeros(1, requires_grad=True)
    groups = [{"params": [a]}, {"params": [b], "lr": 0.05}]
    if opt_name == "SGD":
        return m.optim.SGD(groups, lr=0.1, momentum=0.9)
    return getattr(m.optim, opt_name)(groups, lr=0.1)


def _momentum(group):
    return group["momentum"] if "momentum" in group else group["betas"][0]


def _run(m, make, steps=30, opt_name="SGD", metrics=None):
    opt = _optimizer(m, opt_name)
    ls = m.optim.lr_scheduler
    sched = make(ls, opt)
    out = [(tuple(sched.get_last_lr()), tuple(_momentum(g) for g in opt.param_groups))]
    for i in range(steps):
        opt.step()
        if metrics is None:
            sched.step()
        else:
            sched.step(metrics[i])
        lrs = tuple(g["lr"] for g in opt.param_groups)
        assert tuple(sched.get_last_lr()) == lrs
        out.append((lrs, tuple(_momentum(g) for g in opt.param_groups)))
    return out


def _assert_same(e, t):
    assert len(e) == len(t)
    for (le, me), (lt, mt) in zip(e, t):
        assert le == pytest.approx(lt, rel=1e-12, abs=1e-15)
        assert me == pytest.approx(mt, rel=1e-12, abs=1e-15)


SCHEDULES = {
    "lambda": lambda ls, o: ls.LambdaLR(o, lambda e: 1 / (1 + e)),
    "lambda_per_group": lambda ls, o: ls.LambdaLR(o, [lambda e: 0.9**e, lambda e: 1 + e]),
    "multiplicative": lambda ls, o: ls.MultiplicativeLR(o, lambda e: 0.95),
    "multiplicative_per_group": lambda ls, o: ls.MultiplicativeLR(
        o, [lambda e: 0.9, lambda e: 1.0 if e % 2 else 0.8]
    ),
    "step": lambda ls, o: ls.StepLR(o, step_size=3, gamma=0.5),
    "multistep": lambda ls, o: ls.MultiStepLR(o, [2, 5, 5, 9, 20], gamma=0.3),
    "constant": lambda ls, o: ls.ConstantLR(o, factor=0.25, total_iters=4),
    "constant_default": lambda ls, o: ls.ConstantLR(o),
    "linear": lambda ls, o: ls.LinearLR(o, start_factor=0.2, total_iters=4),
    "linear_down": lambda ls, o: ls.LinearLR(o, start_factor=1.0, end_factor=0.1, total_iters=7),
    "exponential": lambda ls, o: ls.ExponentialLR(o, gamma=0.9),
    "polynomial": lambda ls, o: ls.PolynomialLR(o, total_iters=8, power=2.0),
    "polynomial_default": lambda ls, o: ls.PolynomialLR(o),
    "cosine": lambda ls, o: ls.CosineAnnealingLR(o, T_max=5, eta_min=0.01),
    "cosine_long": lambda ls, o: ls.CosineAnnealingLR(o, T_max=40),
    "warm_restarts": lambda ls, o: ls.CosineAnnealingWarmRestarts(o, T_0=4, eta_min=0.001),
    "warm_restarts_mult": lambda ls, o: ls.CosineAnnealingWarmRestarts(o, T_0=3, T_mult=2),
    "cyclic_triangular": lambda ls, o: ls.CyclicLR(o, 0.01, 0.1, step_size_up=4),
    "cyclic_triangular2": lambda ls, o: ls.CyclicLR(
        o, [0.01, 0.02], [0.1, 0.2], step_size_up=3, step_size_down=5, mode="triangular2"
    ),
    "cyclic_exp_range": lambda ls, o: ls.CyclicLR(
        o, 0.01, 0.1, step_size_up=4, mode="exp_range", gamma=0.9, base_momentum=0.7
    ),
    "cyclic_scale_fn": lambda ls, o: ls.CyclicLR(
        o, 0.01, 0.1, step_size_up=2, scale_fn=lambda x: 1 / (1 + x), scale_mode="iterations"
    ),
    "cyclic_no_momentum": lambda ls, o: ls.CyclicLR(o, 0.01, 0.1, 5, cycle_momentum=False),
    "onecycle": lambda ls, o: ls.OneCycleLR(o, max_lr=1.0, total_steps=31),
    "onecycle_groups": lambda ls, o: ls.OneCycleLR(
        o, max_lr=[1.0, 0.5], epochs=3, steps_per_epoch=11, pct_start=0.4, div_factor=10.0
    ),
    "onecycle3_linear": lambda ls, o: ls.OneCycleLR(
        o, max_lr=0.5, total_steps=31, three_phase=True, anneal_strategy="linear"
    ),
    "sequential": lambda ls, o: ls.SequentialLR(
        o,
        [ls.LinearLR(o, start_factor=0.1, total_iters=3), ls.ExponentialLR(o, gamma=0.8)],
        milestones=[4],
    ),
    "sequential_three": lambda ls, o: ls.SequentialLR(
        o,
        [
            ls.ConstantLR(o, factor=0.5, total_iters=2),
            ls.CosineAnnealingLR(o, T_max=6),
            ls.StepLR(o, step_size=4, gamma=0.5),
        ],
        milestones=[3, 12],
    ),
    "chained": lambda ls, o: ls.ChainedScheduler(
        [ls.ConstantLR(o, factor=0.1, total_iters=2), ls.ExponentialLR(o, gamma=0.9)]
    ),
    "chained_three": lambda ls, o: ls.ChainedScheduler(
        [
            ls.LinearLR(o, start_factor=0.5, total_iters=5),
            ls.MultiStepLR(o, [6, 12], gamma=0.5),
            ls.CosineAnnealingLR(o, T_max=10),
        ],
        optimizer=o,
    ),
}


@pytest.mark.parametrize("name", sorted(SCHEDULES))
def test_schedule_matches_torch(name, torch_mod):
    opt_names = ("SGD", "Adam") if "cycl" in name else ("SGD",)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for opt_name in opt_names:
            e = _run(ember, SCHEDULES[name], opt_name=opt_name)
            t = _run(torch_mod, SCHEDULES[name], opt_name=opt_name)
            _assert_same(e, t)


PLATEAUS = {
    "min_rel": dict(patience=2, factor=0.5, cooldown=1),
    "min_abs": dict(patience=1, threshold=0.05, threshold_mode="abs", min_lr=[0.02, 0.001]),
    "max_rel": dict(mode="max", patience=1, factor=0.3, threshold=0.01),
    "max_abs_cooldown": dict(mode="max", threshold_mode="abs", cooldown=3, patience=0),
    "eps": dict(patience=0, factor=0.5, eps=0.02, min_lr=0.001),
}


@pytest.mark.parametrize("name", sorted(PLATEAUS))
def test_reduce_on_plateau_matches_torch(name, torch_mod):
    metrics = [1.0, 0.9, 0.9, 0.9, 0.9, 0.95, 0.8, 0.8, 0.8, 0.8, 0.8, 0.8, 0.7, 0.75] * 2
    metrics += [1.1, 1.2, 1.25]
    kwargs = PLATEAUS[name]
    e = _run(ember, lambda ls, o: ls.ReduceLROnPlateau(o, **kwargs), metrics=metrics)
    t = _run(torch_mod, lambda ls, o: ls.ReduceLROnPlateau(o, **kwargs), metrics=metrics)
    _assert_same(e, t)
    assert len({lrs for lrs, _ in e}) > 1


@pytest.mark.parametrize(
    "name", ["step", "multistep", "constant", "linear", "exponential", "polynomial", "cosine"]
)
def test_step_with_epoch_uses_the_closed_form_as_torch(name, torch_mod):
    epochs = [0, 3, 1, 7, 7, 12, 4, 30]
    results = []
    for m in (ember, torch_mod):
        opt = _optimizer(m)
        sched = SCHEDULES[name](m.optim.lr_scheduler, opt)
        lrs = []
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            for epoch in epochs:
                opt.step()
                sched.step(epoch)
                lrs.append(tuple(sched.get_last_lr()))
        assert any("epoch parameter" in str(w.message) for w in caught)
        results.append(lrs)
    for le, lt in zip(*results):
        assert le == pytest.approx(lt, rel=1e-12)


@pytest.mark.parametrize("t_mult", [1, 2, 3])
def test_warm_restarts_with_fractional_epochs_matches_torch(t_mult, torch_mod):
    epochs = [0, 0.25, 0.5, 1.75, 2.0, 3.5, 4.0, 5.9, 9.0, 13.3, 21.0, 2.5]
    results = []
    for m in (ember, torch_mod):
        opt = _optimizer(m)
        sched = m.optim.lr_scheduler.CosineAnnealingWarmRestarts(
            opt, T_0=2, T_mult=t_mult, eta_min=0.002
        )
        lrs = []
        for epoch in epochs:
            opt.step()
            sched.step(epoch)
            lrs.append((tuple(sched.get_last_lr()), sched.T_i, sched.T_cur, sched.last_epoch))
        results.append(lrs)
    for (le, *re), (lt, *rt) in zip(*results):
        assert le == pytest.approx(lt, rel=1e-12)
        assert re == pytest.approx(rt)


ROUND_TRIP = [
    "lambda",
    "multiplicative",
    "step",
    "multistep",
    "linear",
    "polynomial",
    "cosine",
    "warm_restarts_mult",
    "cyclic_triangular2",
    "onecycle_groups",
    "sequential_three",
    "chained_three",
]


def _continue(m, name, state=None, opt_state=None, first=8, then=15):
    opt = _optimizer(m)
    sched = SCHEDULES[name](m.optim.lr_scheduler, opt)
    if state is not None:
        opt.load_state_dict(opt_state)
        sched.load_state_dict(state)
        steps = then
    else:
        steps = first
    lrs = []
    for _ in range(steps):
        opt.step()
        sched.step()
        lrs.extend(sched.get_last_lr())
        lrs.extend(_momentum(g) for g in opt.param_groups)
    return lrs, sched.state_dict(), opt.state_dict()


@pytest.mark.parametrize("name", ROUND_TRIP)
def test_state_dict_round_trip_continues_the_schedule(name, torch_mod):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        straight, _, _ = _continue(ember, name, first=23)
        head, state, opt_state = _continue(ember, name)
        tail, _, _ = _continue(ember, name, state, opt_state)
        assert head + tail == pytest.approx(straight, rel=1e-12)
        torch_straight, torch_state, _ = _continue(torch_mod, name, first=23)
    assert head + tail == pytest.approx(torch_straight, rel=1e-12)
    # the same attributes as torch's, so a torch scheduler checkpoint loads
    assert set(state) - {"_get_lr_called_within_step", "_is_initial"} <= set(torch_state)


def test_lambda_state_dict_keeps_callable_objects_and_skips_functions():
    class Decay:
        def __init__(self):
            self.rate = 0.5

        def __call__(self, epoch):
            return self.rate**epoch

    opt = _optimizer(ember)
    decay = Decay()
    sched = ember.optim.lr_scheduler.LambdaLR(opt, [decay, lambda e: 1.0])
    state = sched.state_dict()
    assert state["lr_lambdas"] == [{"rate": 0.5}, None]
    state["lr_lambdas"][0]["rate"] = 0.25
    sched.load_state_dict(state)
    assert decay.rate == 0.25


def test_scheduler_step_before_optimizer_step_warns():
    opt = _optimizer(ember)
    sched = ember.optim.lr_scheduler.StepLR(opt, step_size=2)
    with pytest.warns(UserWarning, match="Detected call of `lr_scheduler.step\\(\\)` before"):
        sched.step()


def test_scheduler_after_optimizer_step_is_silent():
    opt = _optimizer(ember)
    sched = ember.optim.lr_scheduler.ExponentialLR(opt, gamma=0.5)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        opt.step()
        sched.step()
    assert sched.get_last_lr() == [0.05, 0.025]


def test_overridden_optimizer_step_warns():
    opt = _optimizer(ember)
    sched = ember.optim.lr_scheduler.StepLR(opt, step_size=2)
    opt.step = lambda closure=None: None
    with pytest.warns(UserWarning, match="has been overridden"):
        sched.step()


def test_calling_get_lr_directly_warns():
    opt = _optimizer(ember)
    sched = ember.optim.lr_scheduler.StepLR(opt, step_size=2)
    with pytest.warns(UserWarning, match="please use `get_last_lr\\(\\)`"):
        sched.get_lr()


def test_resuming_without_initial_lr_raises():
    opt = _optimizer(ember)
    with pytest.raises(KeyError, match="param 'initial_lr' is not specified in param_groups"):
        ember.optim.lr_scheduler.StepLR(opt, step_size=2, last_epoch=3)


SCHEDULER_ERRORS = [
    (lambda ls, o: ls.ConstantLR(o, factor=2.0), ValueError, "Constant multiplicative factor"),
    (lambda ls, o: ls.LinearLR(o, start_factor=0.0), ValueError, "Starting multiplicative"),
    (lambda ls, o: ls.LinearLR(o, end_factor=1.5), ValueError, "Ending multiplicative"),
    (lambda ls, o: ls.LambdaLR(o, [lambda e: 1.0]), ValueError, "Expected 2 lr_lambdas, but got 1"),
    (lambda ls, o: ls.MultiplicativeLR(o, 0.5), TypeError, "lr_lambda should be a function"),
    (
        lambda ls, o: ls.CosineAnnealingWarmRestarts(o, T_0=0),
        ValueError,
        "Expected positive integer T_0, but got 0",
    ),
    (
        lambda ls, o: ls.CosineAnnealingWarmRestarts(o, T_0=2, T_mult=0),
        ValueError,
        "Expected integer T_mult >= 1, but got 0",
    ),
    (lambda ls, o: ls.CyclicLR(o, 0.1, 1.0, mode="bad"), ValueError, "mode is invalid"),
    (lambda ls, o: ls.CyclicLR(o, [0.1], 1.0), ValueError, "base_lr must have the same length"),
    (lambda ls, o: ls.OneCycleLR(o, 1.0), ValueError, "You must define either total_steps"),
    (
        lambda ls, o: ls.OneCycleLR(o, 1.0, total_steps=10, pct_start=1.5),
        ValueError,
        "Expected float between 0 and 1 pct_start",
    ),
    (
        lambda ls, o: ls.OneCycleLR(o, 1.0, total_steps=10, anneal_strategy="exp"),
        ValueError,
        "anneal_strategy must be one of 'cos' or 'linear'",
    ),
    (lambda ls, o: ls.ReduceLROnPlateau(o, factor=1.0), ValueError, "Factor should be < 1.0."),
    (lambda ls, o: ls.ReduceLROnPlateau(o, mode="mid"), ValueError, "mode mid is unknown!"),
    (lambda ls, o: ls.ReduceLROnPlateau(o, min_lr=[0.1]), ValueError, "expected 2 min_lrs"),
    (
        lambda ls, o: ls.SequentialLR(o, [ls.StepLR(o, 2)], milestones=[3]),
        ValueError,
        "expects number of schedulers provided to be one more",
    ),
    (
        lambda ls, o: ls.ChainedScheduler([ls.ReduceLROnPlateau(o)]),
        ValueError,
        "does not support `ReduceLROnPlateau`",
    ),
    (lambda ls, o: ls.StepLR(object(), 2), TypeError, "object is not an Optimizer"),
]


@pytest.mark.parametrize("make,error,message", SCHEDULER_ERRORS)
def test_bad_arguments_raise_as_torch(make, error, message, torch_mod):
    for m in (ember, torch_mod):
        with pytest.raises(error, match=message.replace("(", "\\(").replace(")", "\\)")):
            make(m.optim.lr_scheduler, _optimizer(m))


def test_cycle_momentum_needs_momentum():
    p = ember.zeros(1, requires_grad=True)
    opt = ember.optim.Adagrad([p])
    with pytest.raises(ValueError, match="optimizer must support momentum or beta1"):
        ember.optim.lr_scheduler.CyclicLR(opt, 0.1, 1.0)


def test_onecycle_past_total_steps_raises():
    opt = _optimizer(ember)
    sched = ember.optim.lr_scheduler.OneCycleLR(opt, max_lr=1.0, total_steps=2)
    opt.step()
    sched.step()
    sched.step()
    with pytest.raises(ValueError, match="Tried to step 3 times"):
        sched.step()


RESUMABLE = {
    "step": lambda ls, o, e: ls.StepLR(o, step_size=3, gamma=0.5, last_epoch=e),
    "exponential": lambda ls, o, e: ls.ExponentialLR(o, gamma=0.9, last_epoch=e),
    "cosine": lambda ls, o, e: ls.CosineAnnealingLR(o, T_max=6, last_epoch=e),
    "lambda": lambda ls, o, e: ls.LambdaLR(o, lambda k: 0.5**k, last_epoch=e),
    "warm_restarts": lambda ls, o, e: ls.CosineAnnealingWarmRestarts(o, T_0=3, last_epoch=e),
}


@pytest.mark.parametrize("name", sorted(RESUMABLE))
def test_resuming_with_last_epoch_matches_torch(name, torch_mod):
    runs = []
    for m in (ember, torch_mod):
        opt = _optimizer(m)
        for group in opt.param_groups:
            group["initial_lr"] = group["lr"] * 2
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            sched = RESUMABLE[name](m.optim.lr_scheduler, opt, 4)
            lrs = [tuple(sched.get_last_lr())]
            for _ in range(8):
                opt.step()
                sched.step()
                lrs.append(tuple(sched.get_last_lr()))
        runs.append(lrs)
    for e, t in zip(*runs):
        assert e == pytest.approx(t, rel=1e-12)


def test_reduce_on_plateau_state_dict_round_trip_and_epoch_warning(torch_mod):
    opt = _optimizer(ember)
    sched = ember.optim.lr_scheduler.ReduceLROnPlateau(opt, patience=1, mode="max")
    for metric in (1.0, 0.5, 0.4):
        sched.step(metric)
    state = sched.state_dict()
    assert state["best"] == 1.0 and state["num_bad_epochs"] == 0
    assert set(state) == set(
        torch_mod.optim.lr_scheduler.ReduceLROnPlateau(_optimizer(torch_mod)).state_dict()
    )
    fresh = ember.optim.lr_scheduler.ReduceLROnPlateau(_optimizer(ember))
    fresh.load_state_dict(state)
    assert fresh.mode == "max" and fresh.mode_worse == -float("inf")
    assert fresh.get_last_lr() == pytest.approx([0.01, 0.005])
    with pytest.warns(UserWarning, match="epoch parameter"):
        fresh.step(2.0, epoch=7)
    assert fresh.last_epoch == 7


def test_reduce_on_plateau_new_param_group_follows_a_scalar_min_lr():
    opt = _optimizer(ember)
    sched = ember.optim.lr_scheduler.ReduceLROnPlateau(opt, patience=0, min_lr=0.04)
    opt.add_param_group({"params": [ember.zeros(1, requires_grad=True)], "lr": 1.0})
    sched.step(1.0)
    sched.step(2.0)
    assert sched.get_last_lr() == pytest.approx([0.04, 0.04, 0.1])
    listed = ember.optim.lr_scheduler.ReduceLROnPlateau(opt, patience=0, min_lr=[0, 0, 0])
    opt.add_param_group({"params": [ember.zeros(1, requires_grad=True)]})
    listed.step(1.0)
    with pytest.raises(RuntimeError, match="The number of param groups in the `optimizer`"):
        listed.step(2.0)


def test_tensor_learning_rates_are_filled_in_place():
    p = ember.zeros(1, requires_grad=True)
    lr = ember.tensor(0.1)
    opt = ember.optim.SGD([p], lr=lr)
    sched = ember.optim.lr_scheduler.ExponentialLR(opt, gamma=0.5)
    opt.step()
    sched.step()
    assert opt.param_groups[0]["lr"] is lr and lr.item() == pytest.approx(0.05)
    last = sched.get_last_lr()[0]
    assert last is not lr and last.item() == pytest.approx(0.05)


@pytest.mark.parametrize(
    "name", ["multistep", "cosine", "warm_restarts_mult", "cyclic_exp_range", "onecycle_groups"]
)
def test_a_torch_scheduler_checkpoint_resumes_in_ember(name, torch_mod):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch_lrs, torch_state, torch_opt_state = _continue(torch_mod, name, first=7)
        torch_tail, _, _ = _continue(torch_mod, name, dict(torch_state), torch_opt_state)
        opt_state = {"state": {}, "param_groups": torch_opt_state["param_groups"]}
        ember_tail, _, _ = _continue(ember, name, dict(torch_state), opt_state)
    assert ember_tail == pytest.approx(torch_tail, rel=1e-12)
