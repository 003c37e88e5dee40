"""ember.compile: replayed steps equal eager ones to the bit, and guards fall back to eager."""

import warnings

import numpy as np
import pytest

import ember
from ember import nn
from ember._compile import CompileWarning
from tests.autograd.test_function import Cube


def _mlp():
    return nn.Sequential(nn.Linear(12, 16), nn.ReLU(), nn.Linear(16, 4))


def _cnn():
    return nn.Sequential(
        nn.Conv2d(1, 3, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(3 * 3 * 3, 4)
    )


def _run(make_model, make_opt, batches, compiled, step_body=None):
    """Train a fresh model (seed 0) on ``batches``; return the per-step results and weights."""
    ember.manual_seed(0)
    model = make_model()
    opt = make_opt(model.parameters())
    loss_fn = nn.CrossEntropyLoss()

    def step(x, y):
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        return loss.item()

    fn = (
        ember.compile(step_body(model, opt) if step_body else step)
        if compiled
        else (step_body(model, opt) if step_body else step)
    )
    results = [fn(x, y) for x, y in batches]
    tensors = list(model.parameters()) + list(model.buffers())  # batch norm's running stats
    weights = [t.detach().cpu().numpy().copy() for t in tensors]
    return results, weights, fn


def _batches(shape, n=5, classes=4, seed=1):
    rng = np.random.default_rng(seed)
    return [
        (
            ember.tensor(rng.standard_normal(shape).astype(np.float32)),
            ember.tensor(rng.integers(0, classes, shape[0])),
        )
        for _ in range(n)
    ]


def _assert_same(eager, compiled):
    assert eager[0] == compiled[0]  # losses, exactly
    for a, b in zip(eager[1], compiled[1]):
        np.testing.assert_array_equal(a, b)


def test_mlp_with_momentum_replays_and_equals_eager():
    sgd = lambda ps: ember.optim.SGD(ps, lr=0.1, momentum=0.9)
    batches = _batches((8, 12))
    eager = _run(_mlp, sgd, batches, compiled=False)
    compiled = _run(_mlp, sgd, batches, compiled=True)
    _assert_same(eager, compiled)
    fn = compiled[2]
    assert fn.replays >= 2 and fn.recordings <= 3


def test_cnn_replays_and_equals_eager():
    sgd = lambda ps: ember.optim.SGD(ps, lr=0.05)
    batches = _batches((6, 1, 8, 8))
    eager = _run(_cnn, sgd, batches, compiled=False)
    compiled = _run(_cnn, sgd, batches, compiled=True)
    _assert_same(eager, compiled)
    assert compiled[2].replays >= 3


def test_custom_function_dropout_and_batchnorm_equal_eager():
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(12, 8)
            self.bn = nn.BatchNorm1d(8)
            self.drop = nn.Dropout(0.3)
            self.out = nn.Linear(8, 4)

        def forward(self, x):
            return self.out(self.drop(Cube.apply(self.bn(self.fc(x)))))

    sgd = lambda ps: ember.optim.SGD(ps, lr=0.01)
    batches = _batches((8, 12), n=6)
    eager = _run(Net, sgd, batches, compiled=False)
    compiled = _run(Net, sgd, batches, compiled=True)
    _assert_same(eager, compiled)
    assert compiled[2].replays >= 3


def test_returned_tensors_and_floats_are_fresh_at_every_replay():
    ember.manual_seed(0)
    w = ember.randn(3, requires_grad=True)

    @ember.compile
    def step(x):
        w.grad = None
        loss = (w * x).sum()
        loss.backward()
        with ember.no_grad():
            w.sub_(0.1 * w.grad)
        return loss, float(loss), w.grad.clone()

    for k in range(4):
        x = ember.full((3,), float(k))
        before = w.detach().clone()
        loss, value, grad = step(x)
        expected = float((before * x).sum())
        assert value == pytest.approx(expected, rel=1e-6) and float(loss) == value
        assert grad.tolist() == x.tolist()
    assert step.replays == 2  # the first call had no .grad yet, the second recorded again


def test_a_shape_change_records_again_with_one_warning():
    sgd = lambda ps: ember.optim.SGD(ps, lr=0.1)
    batches = _batches((8, 12), n=3) + _batches((5, 12), n=3, seed=2)
    eager = _run(_mlp, sgd, batches, compiled=False)
    with pytest.warns(CompileWarning, match="recording again"):
        compiled = _run(_mlp, sgd, batches, compiled=True)
    _assert_same(eager, compiled)
    assert len(compiled[2].plans) == 3  # no grads yet, batch 8, batch 5


def test_grad_mode_is_part_of_the_signature():
    ember.manual_seed(0)
    model = _mlp()
    predict = ember.compile(lambda x: model(x))
    x = ember.randn(2, 12)
    with ember.no_grad():
        a = predict(x)
        b = predict(x)
    c = predict(x)
    assert ember.equal(a, b) and ember.equal(a, c)
    assert len(predict.plans) == 2 and predict.replays == 1


def test_data_dependent_control_flow_falls_back_to_eager():
    def body(model, opt):
        def step(x, y):
            opt.zero_grad()
            out = model(x)
            if out.sum() > 0:  # a branch on a value: a guard
                loss = out.square().mean()
            else:
                loss = out.abs().mean()
            loss.backward()
            opt.step()
            return loss.item()

        return step

    sgd = lambda ps: ember.optim.SGD(ps, lr=0.1)
    rng = np.random.default_rng(3)
    batches = [
        (ember.tensor(sign * np.abs(rng.standard_normal((4, 12))).astype(np.float32)), None)
        for sign in (1, 1, 1, -1, -1, 1)
    ]
    eager = _run(_mlp, sgd, batches, compiled=False, step_body=body)
    with pytest.warns(CompileWarning):
        compiled = _run(_mlp, sgd, batches, compiled=True, step_body=body)
    _assert_same(eager, compiled)


def test_an_optimizer_reading_its_step_count_replays_with_the_current_count():
    adam = lambda ps: ember.optim.Adam(ps, lr=0.01)
    batches = _batches((8, 12), n=5)
    eager = _run(_mlp, adam, batches, compiled=False)
    with warnings.catch_warnings():  # the state made by the first step records once more
        warnings.simplefilter("ignore", CompileWarning)
        compiled = _run(_mlp, adam, batches, compiled=True)
    _assert_same(eager, compiled)
    assert compiled[2].replays == 3 and compiled[2].fallbacks == 0


def test_compiled_function_keeps_the_name_and_runs_plain_functions():
    @ember.compile
    def double(x):
        return x * 2

    assert double.__name__ == "double"
    for k in range(3):
        assert double(ember.full((2,), float(k))).tolist() == [2.0 * k] * 2
    assert double.replays == 2


def test_a_failed_guard_undoes_running_stats_and_random_draws_before_running_eagerly():
    def net():
        return nn.Sequential(nn.Linear(12, 8), nn.BatchNorm1d(8), nn.Dropout(0.5), nn.Linear(8, 4))

    def body(model, opt):
        def step(x, y):
            opt.zero_grad()
            out = model(x)  # batch norm updates its running stats, dropout draws a mask
            loss = out.square().mean() if out.sum() > 0 else out.abs().mean()
            loss.backward()
            opt.step()
            return loss.item()

        return step

    sgd = lambda ps: ember.optim.SGD(ps, lr=0.1)
    rng = np.random.default_rng(0)  # data whose branch flips after the first replay
    batches = [
        (ember.tensor(rng.standard_normal((6, 12)).astype(np.float32) + shift), None)
        for shift in (2, 2, 2, -2, 2, -2, -2)
    ]

    def run(compiled):
        result = _run(net, sgd, batches, compiled=compiled, step_body=body)
        return result

    eager = run(False)
    with pytest.warns(CompileWarning):
        compiled = run(True)
    _assert_same(eager, compiled)
    # a replay ran, and the branch flips stopped two replays after batch norm had written
    assert compiled[2].replays >= 1 and compiled[2].fallbacks >= 2


def test_a_tensor_out_of_reach_is_not_frozen_into_the_recording():
    class Holder:  # not a module, optimizer, tensor or container: not scanned
        pass

    holder = Holder()
    holder.bias = ember.ones(3)

    def shift(x):
        return x + holder.bias

    compiled = ember.compile(shift)
    with pytest.warns(CompileWarning, match="other than through its arguments"):
        assert compiled(ember.zeros(3)).tolist() == [1.0, 1.0, 1.0]
    holder.bias.add_(1.0)
    assert compiled(ember.zeros(3)).tolist() == [2.0, 2.0, 2.0]
    assert compiled.replays == 0


@pytest.mark.parametrize(
    "make_opt",
    [
        lambda ps: ember.optim.RMSprop(ps, lr=0.01, momentum=0.9, centered=True),
        lambda ps: ember.optim.Adagrad(ps, lr=0.1),
        lambda ps: ember.optim.AdamW(ps, lr=0.01),
        lambda ps: ember.optim.SGD(ps, lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.01),
    ],
    ids=["rmsprop", "adagrad", "adamw", "sgd_nesterov"],
)
def test_every_optimizer_gives_eager_results_compiled_or_not(make_opt):
    batches = _batches((8, 12), n=5)
    eager = _run(_mlp, make_opt, batches, compiled=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CompileWarning)
        compiled = _run(_mlp, make_opt, batches, compiled=True)
    _assert_same(eager, compiled)


def test_replay_buffers_never_alias_what_the_user_holds():
    ember.manual_seed(0)
    model = _mlp()
    opt = ember.optim.SGD(model.parameters(), lr=0.1)

    @ember.compile
    def step(x, y):
        opt.zero_grad()
        out = model(x)
        loss = nn.functional.cross_entropy(out, y)
        loss.backward()
        opt.step()
        return out, loss

    kept = []
    for x, y in _batches((8, 12), n=5):
        out, loss = step(x, y)
        grads = [p.grad for p in model.parameters()]
        kept.append((out, loss, grads, [g.clone() for g in grads], out.clone(), loss.clone()))
    assert step.replays >= 3 and any(s[0] == 3 for s in list(step.plans.values())[-1].steps)
    for out, loss, grads, grad_copies, out_copy, loss_copy in kept:
        assert ember.equal(out, out_copy) and ember.equal(loss, loss_copy)
        for g, c in zip(grads, grad_copies):
            assert ember.equal(g, c)


@pytest.mark.skipif(not ember.cuda.is_available(), reason="needs a CUDA GPU and CuPy")
def test_cuda_steps_run_eagerly_with_a_warning():
    sgd = lambda ps: ember.optim.SGD(ps, lr=0.1)
    batches = [(x.to("cuda"), y.to("cuda")) for x, y in _batches((8, 12), n=3)]

    def on_gpu():
        return _mlp().to("cuda")

    eager = _run(on_gpu, sgd, batches, compiled=False)
    with pytest.warns(CompileWarning, match="only CPU"):
        compiled = _run(on_gpu, sgd, batches, compiled=True)
    _assert_same(eager, compiled)


def test_a_closure_tensors_gradient_is_plain_and_current_after_recording_and_replays():
    # the step clears and remakes the gradient of a tensor that is no module's parameter
    rng = np.random.default_rng(5)
    x = ember.tensor(rng.standard_normal((6, 5)), requires_grad=True)
    w = ember.tensor(rng.standard_normal((6, 5)))

    def step(scale):
        x.grad = None
        ((x * w).tanh() * scale).sum().backward()

    compiled = ember.compile(step)
    for i in range(4):
        scale = ember.full((5,), float(i + 1), dtype=ember.float64)
        compiled(scale)
        assert type(x.grad._data) is np.ndarray  # not the recording's array
        expected = (1 - np.tanh(x.detach().numpy() * w.numpy()) ** 2) * w.numpy() * (i + 1)
        np.testing.assert_allclose(x.grad.numpy(), expected, rtol=1e-12)
        x.grad.clone()  # an op on it works outside the recording
    assert compiled.replays >= 2


def test_a_float64_training_step_replays_though_its_loss_changes():
    # a full float64 sum comes back from NumPy as a float subclass; it is an array result,
    # not a Python answer to guard (the loss changes at every step)
    ember.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1)).double()
    opt = ember.optim.SGD(model.parameters(), lr=0.1)
    x = ember.randn(16, 4, dtype=ember.float64)
    y = ember.randn(16, 1, dtype=ember.float64)

    def step():
        opt.zero_grad()
        loss = ((model(x) - y) ** 2).mean()
        loss.backward()
        opt.step()
        return loss

    compiled = ember.compile(step)
    losses = [compiled().item() for _ in range(6)]
    assert compiled.replays >= 4 and compiled.fallbacks == 0
    assert losses == sorted(losses, reverse=True) and losses[0] > losses[-1]


def test_a_step_through_where_and_masked_fill_records_and_replays():
    # their backward asks the backend module for broadcast_shapes, a function of shapes that
    # the recording runs as it is (it returned a tuple, which stopped the recording)
    rng = np.random.default_rng(7)
    x = ember.tensor(rng.standard_normal((8, 6)), requires_grad=True)
    w = ember.tensor(rng.standard_normal((8, 6)))

    def step(shift):
        x.grad = None
        y = ember.where(w > 0, x * 2, x + shift).masked_fill(w < -1, 0.0)
        (y * w).sum().backward()
        return y

    compiled = ember.compile(step)
    for i in range(4):
        shift = ember.full((6,), float(i))
        got, grad = compiled(shift), x.grad.clone()
        want = step(shift)
        np.testing.assert_array_equal(got.detach().numpy(), want.detach().numpy())
        np.testing.assert_array_equal(grad.numpy(), x.grad.numpy())
    assert compiled.replays >= 2 and not hasattr(compiled, "why_eager")
