"""swa_utils against PyTorch's: averaged weights, EMA, SWALR rates, update_bn statistics."""

import numpy as np
import pytest

import ember


def _model(m):
    m.manual_seed(0)
    model = m.nn.Sequential(m.nn.Linear(3, 4), m.nn.BatchNorm1d(4), m.nn.ReLU(), m.nn.Linear(4, 2))
    rng = np.random.default_rng(0)
    with m.no_grad():
        for p in model.parameters():
            p.copy_(m.tensor(rng.standard_normal(tuple(p.shape)), dtype=p.dtype))
    return model


def _snapshots(m, count=4):
    """Copies of the model with different weights and batch-norm statistics."""
    rng = np.random.default_rng(1)
    models = []
    for _ in range(count):
        model = _model(m)
        with m.no_grad():
            for p in model.parameters():
                p.add_(m.tensor(rng.standard_normal(tuple(p.shape)), dtype=p.dtype))
            model[1].running_mean.copy_(m.tensor(rng.standard_normal(4), dtype=m.float32))
        models.append(model)
    return models


def _flat(module):
    return np.concatenate([p.detach().numpy().ravel() for p in module.parameters()])


@pytest.mark.parametrize("kind", ["swa", "ema", "ema_avg_fn", "swa_buffers"])
def test_averaged_model_matches_torch(kind, torch_mod):
    results = []
    for m in (ember, torch_mod):
        su = m.optim.swa_utils
        kwargs = {
            "swa": {},
            "ema": {"multi_avg_fn": su.get_ema_multi_avg_fn(0.9)},
            "ema_avg_fn": {"avg_fn": su.get_ema_avg_fn(0.8)},
            "swa_buffers": {"use_buffers": True},
        }[kind]
        snapshots = _snapshots(m)
        averaged = su.AveragedModel(snapshots[0], **kwargs)
        for s in snapshots:
            averaged.update_parameters(s)
        buffers = averaged.module[1].running_mean.detach().numpy()
        results.append((_flat(averaged), buffers, int(averaged.n_averaged)))
    np.testing.assert_allclose(results[0][0], results[1][0], rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(results[0][1], results[1][1], rtol=1e-6, atol=1e-7)
    assert results[0][2] == results[1][2] == 4


def test_swa_average_is_the_mean_of_the_snapshots():
    snapshots = _snapshots(ember, 3)
    averaged = ember.optim.swa_utils.AveragedModel(snapshots[0])
    for s in snapshots:
        averaged.update_parameters(s)
    expected = np.mean([_flat(s) for s in snapshots], axis=0)
    np.testing.assert_allclose(_flat(averaged), expected, rtol=1e-5, atol=1e-7)
    x = ember.randn(5, 3)
    averaged.eval()
    assert averaged(x).shape == (5, 2)


def test_update_bn_matches_torch(torch_mod):
    rng = np.random.default_rng(2)
    batches = [rng.standard_normal((6, 3)).astype(np.float32) for _ in range(3)]
    stats = []
    for m in (ember, torch_mod):
        model = _model(m)
        model.eval()
        loader = [(m.tensor(b), m.tensor(0)) for b in batches]
        m.optim.swa_utils.update_bn(loader, model)
        bn = model[1]
        assert not model.training and bn.momentum == 0.1
        stats.append((bn.running_mean.numpy().copy(), bn.running_var.numpy().copy()))
    np.testing.assert_allclose(stats[0][0], stats[1][0], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(stats[0][1], stats[1][1], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(swa_lr=0.05, anneal_epochs=5),
        dict(swa_lr=[0.01, 0.2], anneal_epochs=3, anneal_strategy="linear"),
        dict(swa_lr=0.02, anneal_epochs=0),
    ],
)
def test_swalr_matches_torch(kwargs, torch_mod):
    runs = []
    for m in (ember, torch_mod):
        a, b = m.zeros(1, requires_grad=True), m.zeros(1, requires_grad=True)
        opt = m.optim.SGD([{"params": [a]}, {"params": [b], "lr": 0.3}], lr=0.1)
        sched = m.optim.swa_utils.SWALR(opt, **kwargs)
        lrs = [tuple(sched.get_last_lr())]
        for _ in range(10):
            opt.step()
            sched.step()
            lrs.append(tuple(sched.get_last_lr()))
        runs.append(lrs)
    for e, t in zip(*runs):
        assert e == pytest.approx(t, rel=1e-12)


def test_swa_errors():
    su = ember.optim.swa_utils
    with pytest.raises(ValueError, match="Invalid decay value 1.5"):
        su.get_ema_multi_avg_fn(1.5)
    opt = ember.optim.SGD([ember.zeros(1, requires_grad=True)], lr=0.1)
    with pytest.raises(ValueError, match="anneal_strategy must be one of 'cos' or 'linear'"):
        su.SWALR(opt, 0.1, anneal_strategy="step")
    with pytest.raises(ValueError, match="anneal_epochs must be equal or greater than 0"):
        su.SWALR(opt, 0.1, anneal_epochs=-1)
    model = ember.nn.Linear(2, 2)
    with pytest.raises(AssertionError, match="Only one of avg_fn and multi_avg_fn"):
        su.AveragedModel(model, avg_fn=su.get_swa_avg_fn(), multi_avg_fn=su.get_swa_multi_avg_fn())
