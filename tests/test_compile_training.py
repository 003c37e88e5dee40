"""ember.compile on training steps: Adam/AdamW (which read their step count into Python),
LSTMs and transformer layers replay and match eager training, optimizer state included; and
kernels that write into their own NumPy buffers through views replay those writes."""

import contextlib
import warnings

import numpy as np
import pytest

import ember
from ember import nn
from ember._backend import array_module
from ember._compile import CompileWarning
from ember.ops._dispatch import wrap

STEPS = 5


class _Lstm(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(8, 16, num_layers=2, batch_first=True)
        self.head = nn.Linear(16, 4)

    def forward(self, x):
        return self.head(self.lstm(x)[0][:, -1])


class _Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        # no biases: the key bias has a zero gradient (softmax ignores a shift per row), whose
        # rounding noise Adam would scale up to a full step, in eager and compiled runs alike
        self.layer = nn.TransformerEncoderLayer(
            16, 2, 32, dropout=0.0, batch_first=True, bias=False
        )
        self.head = nn.Linear(16, 4, bias=False)

    def forward(self, x):
        return self.head(self.layer(x).mean(1))


def _mlp():
    return nn.Sequential(nn.Linear(12, 16), nn.ReLU(), nn.Linear(16, 4))


CASES = {
    "mlp_adam": (_mlp, lambda ps: ember.optim.Adam(ps, lr=0.01), (8, 12)),
    "mlp_adamw": (_mlp, lambda ps: ember.optim.AdamW(ps, lr=0.01, weight_decay=0.1), (8, 12)),
    "mlp_adam_amsgrad": (_mlp, lambda ps: ember.optim.Adam(ps, lr=0.01, amsgrad=True), (8, 12)),
    "lstm_adam": (_Lstm, lambda ps: ember.optim.Adam(ps, lr=0.01), (4, 6, 8)),
    "encoder_adamw": (_Encoder, lambda ps: ember.optim.AdamW(ps, lr=0.01), (4, 5, 16)),
}


def _train(case: str, compiled: bool):
    make_model, make_opt, shape = CASES[case]
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

    fn = ember.compile(step) if compiled else step
    rng = np.random.default_rng(1)
    losses = []
    for _ in range(STEPS):
        x = ember.tensor(rng.standard_normal(shape).astype(np.float32))
        y = ember.tensor(rng.integers(0, 4, shape[0]))
        with warnings.catch_warnings():  # the state the first step makes records once more
            warnings.simplefilter("ignore", CompileWarning)
            losses.append(fn(x, y))
    params = [p.detach().numpy().copy() for p in model.parameters()]
    state = [
        (key, value.numpy().copy())
        for p in model.parameters()
        for key, value in sorted(opt.state[p].items())
    ]
    return losses, params, state, fn


@pytest.mark.parametrize("case", list(CASES))
def test_training_step_replays_and_equals_eager(case):
    eager_losses, eager_params, eager_state, _ = _train(case, compiled=False)
    losses, params, state, fn = _train(case, compiled=True)
    assert fn.replays == STEPS - 2 and fn.fallbacks == 0 and fn.recordings == 2
    np.testing.assert_allclose(losses, eager_losses, rtol=1e-6, atol=1e-6)
    for got, want in zip(params, eager_params):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
    assert [k for k, _ in state] == [k for k, _ in eager_state]
    for (key, got), (_, want) in zip(state, eager_state):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6, err_msg=key)
    steps = [float(v) for k, v in state if k == "step"]
    assert steps and all(s == STEPS for s in steps)


def test_step_count_returned_from_the_step_is_a_float_that_advances():
    ember.manual_seed(0)
    model = _mlp()
    opt = ember.optim.Adam(model.parameters(), lr=0.01)
    first = next(iter(model.parameters()))

    @ember.compile
    def step(x):
        opt.zero_grad()
        model(x).square().mean().backward()
        opt.step()
        count = opt.state[first]["step"].item()
        return count, np.sqrt(count), 1 - 0.5**count

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CompileWarning)
        results = [step(ember.ones(2, 12)) for _ in range(4)]
    assert [r[0] for r in results] == [1.0, 2.0, 3.0, 4.0]
    assert all(type(r[0]) is float and type(r[2]) is float for r in results)
    assert [r[1] for r in results] == [np.sqrt(k) for k in (1.0, 2.0, 3.0, 4.0)]
    assert [r[2] for r in results] == [1 - 0.5**k for k in (1.0, 2.0, 3.0, 4.0)]
    assert step.replays == 2


def test_step_count_in_python_control_flow_is_guarded():
    ember.manual_seed(0)
    model = _mlp()
    opt = ember.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    opt_adam = ember.optim.Adam(model.parameters(), lr=0.01)
    first = next(iter(model.parameters()))

    def body(x):
        opt_adam.zero_grad()
        model(x).square().mean().backward()
        opt_adam.step()
        count = opt_adam.state[first]["step"].item()
        return 1.0 if count < 3 else 2.0  # a comparison: the value must come out the same

    compiled = ember.compile(body)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CompileWarning)
        got = [compiled(ember.ones(2, 12)) for _ in range(5)]
    assert got == [1.0, 1.0, 2.0, 2.0, 2.0]
    assert opt is not None  # an unused optimizer in reach does not matter


def _doubled_through_a_view(x):
    """A kernel that writes ``out=`` into a reshaped view of a buffer it made itself."""
    data = x._data
    out = np.empty(data.size, data.dtype)  # NumPy's own buffer, not the backend module's
    np.multiply(data, 2, out=out.reshape(data.shape))
    return wrap(out.reshape(data.shape)) + 1


def _doubled_through_the_backend(x):
    data = x._data
    xp = array_module(data)
    out = xp.empty(data.size, data.dtype)
    xp.multiply(data, 2, out=out[::-1][::-1].reshape(data.shape))
    return wrap(out.reshape(data.shape)) + 1


@pytest.mark.parametrize("kernel", [_doubled_through_a_view, _doubled_through_the_backend])
def test_writes_through_views_of_a_kernel_buffer_replay(kernel):
    compiled = ember.compile(kernel)
    with warnings.catch_warnings():
        warnings.simplefilter("error", CompileWarning)
        for k in range(4):
            x = ember.arange(6.0).reshape(2, 3) + k
            np.testing.assert_array_equal(compiled(x).numpy(), x.numpy() * 2 + 1)
    assert compiled.replays == 3


def test_a_zeros_tensor_filled_by_item_assignment_replays():
    # chunk's backward scatters each piece's gradient into a fresh zeros tensor
    ember.manual_seed(0)
    w = nn.Parameter(ember.randn(4, 8))

    @ember.compile
    def step(x):
        a, b = (x @ w).chunk(2, -1)
        loss = (a.tanh() * b).sum()
        loss.backward()
        grad = w.grad.clone()
        w.grad = None
        return grad

    for _ in range(4):
        x = ember.randn(3, 4)
        got = step(x)
        w2 = w.detach().requires_grad_()
        a, b = (x @ w2).chunk(2, -1)
        (a.tanh() * b).sum().backward()
        np.testing.assert_allclose(got.numpy(), w2.grad.numpy(), rtol=1e-6, atol=1e-6)
    assert step.replays >= 2


@pytest.mark.parametrize("kernels", ["compiled", "numpy"])
def test_fused_recurrent_layers_replay_as_one_call_each_way(kernels):
    # each layer's forward and backward is one recorded call (not ~20 array calls per time
    # step), with the compiled gate kernels on or off, and the replay equals eager training
    from ember._kernels import jit
    from ember.ops.rnn import _FlatResults

    context = jit.disabled() if kernels == "numpy" else contextlib.nullcontext()
    with context:
        eager_losses, eager_params, _, _ = _train("lstm_adam", compiled=False)
        losses, params, _, fn = _train("lstm_adam", compiled=True)
    assert fn.replays == STEPS - 2 and fn.fallbacks == 0
    plans = [plan for plan in fn.plans.values() if hasattr(plan, "steps")]
    for plan in plans:
        whole = [step for step in plan.steps if isinstance(step[1], _FlatResults)]
        assert len(whole) == 4  # 2 layers x (forward, backward)
        assert len(plan.steps) < 400  # was ~1,900 with the per-step calls
    np.testing.assert_allclose(losses, eager_losses, rtol=1e-6, atol=1e-6)
    for got, want in zip(params, eager_params, strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
