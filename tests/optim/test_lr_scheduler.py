import pytest

import ember


def _lrs(m, make, steps=12, opt_name="SGD", metrics=None):
    p = m.zeros(1, requires_grad=True)
    kwargs = dict(lr=0.1, momentum=0.9) if opt_name == "SGD" else dict(lr=0.1)
    opt = getattr(m.optim, opt_name)([p], **kwargs)
    sched = make(m, opt)
    out = []
    for i in range(steps):
        opt.step()
        if metrics is None:
            sched.step()
        else:
            sched.step(metrics[i])
        group = opt.param_groups[0]
        out.append((group["lr"], group.get("momentum", group.get("betas", (None,))[0])))
    return out


SCHEDULES = {
    "step": lambda m, o: m.optim.lr_scheduler.StepLR(o, step_size=3, gamma=0.5),
    "multistep": lambda m, o: m.optim.lr_scheduler.MultiStepLR(o, [2, 5, 5, 9], gamma=0.3),
    "exponential": lambda m, o: m.optim.lr_scheduler.ExponentialLR(o, gamma=0.9),
    "cosine": lambda m, o: m.optim.lr_scheduler.CosineAnnealingLR(o, T_max=5, eta_min=0.01),
    "lambda": lambda m, o: m.optim.lr_scheduler.LambdaLR(o, lambda e: 1 / (1 + e)),
    "linear": lambda m, o: m.optim.lr_scheduler.LinearLR(o, start_factor=0.2, total_iters=4),
    "onecycle": lambda m, o: m.optim.lr_scheduler.OneCycleLR(o, max_lr=1.0, total_steps=13),
    "onecycle3": lambda m, o: m.optim.lr_scheduler.OneCycleLR(
        o, max_lr=0.5, total_steps=13, three_phase=True, anneal_strategy="linear"
    ),
    "sequential": lambda m, o: m.optim.lr_scheduler.SequentialLR(
        o,
        [
            m.optim.lr_scheduler.LinearLR(o, start_factor=0.1, total_iters=3),
            m.optim.lr_scheduler.ExponentialLR(o, gamma=0.8),
        ],
        milestones=[4],
    ),
}


@pytest.mark.parametrize("name", sorted(SCHEDULES))
def test_schedule_matches_torch(name, torch_mod):
    for opt_name in ("SGD", "Adam"):
        e = _lrs(ember, SCHEDULES[name], opt_name=opt_name)
        t = _lrs(torch_mod, SCHEDULES[name], opt_name=opt_name)
        assert [x[0] for x in e] == pytest.approx([x[0] for x in t], rel=1e-12)
        assert [x[1] for x in e] == pytest.approx([x[1] for x in t], rel=1e-12)


def test_reduce_on_plateau_matches_torch(torch_mod):
    metrics = [1.0, 0.9, 0.9, 0.9, 0.9, 0.95, 0.8, 0.8, 0.8, 0.8, 0.8, 0.8]
    make = lambda m, o: m.optim.lr_scheduler.ReduceLROnPlateau(
        o, patience=2, factor=0.5, cooldown=1
    )
    e = _lrs(ember, make, metrics=metrics)
    t = _lrs(torch_mod, make, metrics=metrics)
    assert [x[0] for x in e] == pytest.approx([x[0] for x in t])


def test_step_lr_without_torch():
    out = _lrs(ember, SCHEDULES["step"], steps=7)
    assert [round(x[0], 6) for x in out] == [0.1, 0.1, 0.05, 0.05, 0.05, 0.025, 0.025]
