"""ember.compile's generated replay (``_compile/codegen.py``) does what the step interpreter
does, to the bit, frees nothing the caller reads, and undoes in-place writes on a failed guard."""

import operator
import warnings

import numpy as np
import pytest

import ember
from ember import nn
from ember._compile import CompileWarning
from ember._compile.codegen import replay_function
from ember._compile.plan import BUFFERED, CALL, GENERAL, GUARD, GuardFailure, Plan


def _interpreter(steps, buffers):
    plan = Plan.__new__(Plan)
    plan.steps, plan.buffers = steps, buffers
    return plan


class _Pair(tuple):
    """A container that is neither a tuple literal nor a list: built by calling its type."""


def _pair_sum(pair, scale):
    assert type(pair) is _Pair
    return (pair[0] + pair[1]) * scale


def _split(x):
    return x[:2].copy(), x[2:].copy(), x.sum()


def _scaled(x, d):
    return x * d["k"]


def _steps():
    """Every kind of step and argument form, over external slots 0, 1 and 14 (an out=)."""
    nested = ("seq", tuple, [(False, 3), (False, 2)])
    return [
        (CALL, np.add, (0, 1), None, 2, False),  # s2 = s0 + s1
        (BUFFERED, np.multiply, (2, 0), 0, 3, False),  # s3 = s2 * s0 into buffer 0
        # general: constants, nested containers, keywords constant and patched
        (GENERAL, np.concatenate, (None,), ([(0, nested)], {"axis": 0}, []), 4, False),
        (
            GENERAL,
            np.add,
            (None, 1.0),
            ([(0, 4)], {}, [("out", ("seq", tuple, [(False, 14)]))]),
            5,
            False,
        ),
        (
            GENERAL,
            _pair_sum,
            (None, 2.0),
            ([(0, ("seq", _Pair, [(False, 0), (True, 1.5)]))], {}, []),
            6,
            False,
        ),
        (GENERAL, np.max, (None,), ([(0, 6)], {}, []), 7, True),  # a NumPy scalar: 0-d array
        (CALL, _split, (5,), None, (8, 9, 10), False),  # tuple results; slot 9 never read
        (
            GENERAL,
            _scaled,
            (None, None),
            ([(0, 8), (1, ("dict", {"k": (False, 10)}))], {}, []),
            11,
            False,
        ),
        (CALL, operator.methodcaller("item"), (7,), None, 12, None),
        (GUARD, bool, 12, True, None, False),  # passes while s7 is non-zero
        (CALL, np.subtract, (8, 7), None, 13, False),
    ]


def test_the_generated_replay_equals_the_interpreter_slot_for_slot():
    steps = _steps()
    a, b = np.arange(3.0), np.linspace(1, 2, 3)
    out_a, out_b = np.empty(6), np.empty(6)
    buffers = [None]
    values = [a, b] + [None] * 12 + [out_a]
    values = _interpreter(steps, buffers)._steps(values)
    kept = {3, 5, 7, 11, 12, 13}
    replay = replay_function(steps, buffers, [0, 1, 14], kept, GuardFailure)
    out = replay(a, b, out_b)
    assert set(out) == kept
    for slot in kept:
        assert type(out[slot]) is type(values[slot])
        np.testing.assert_array_equal(out[slot], values[slot])
    assert out[3] is buffers[0]  # the buffered ufunc wrote into its buffer again
    assert out[5] is out_b  # the patched keyword reached the call
    assert isinstance(out[7], np.ndarray) and out[7].ndim == 0


def test_a_failing_guard_raises_guard_failure_from_the_generated_replay():
    steps = [(CALL, np.sum, (0,), None, 1, None), (GUARD, float, 1, 3.0, None, False)]
    replay = replay_function(steps, [], [0], {1}, GuardFailure)
    assert float(replay(np.ones(3))[1]) == 3.0
    with pytest.raises(GuardFailure):
        replay(np.ones(4))


def test_a_keyword_that_is_not_a_python_name_keeps_the_interpreter():
    steps = [(GENERAL, dict, (), ([], {"not a name": 1}, []), 0, False)]
    assert replay_function(steps, [], [], {0}, GuardFailure) is None


def _train(straight_line: bool, batches, momentum=0.9):
    Plan.straight_line = straight_line
    try:
        ember.manual_seed(0)
        model = nn.Sequential(nn.Linear(12, 16), nn.ReLU(), nn.Linear(16, 4))
        opt = ember.optim.SGD(model.parameters(), lr=0.1, momentum=momentum)

        @ember.compile
        def step(x, y):
            opt.zero_grad()
            hidden = model[1](model[0](x))
            loss = nn.functional.cross_entropy(model[2](hidden), y)
            loss.backward()
            opt.step()
            return hidden, loss, loss.item()

        results = [step(x, y) for x, y in batches]
        plans = [p for p in step.plans.values() if isinstance(p, Plan)]
        return results, [p.detach().numpy().copy() for p in model.parameters()], step, plans
    finally:
        Plan.straight_line = True


def _batches(n=6):
    rng = np.random.default_rng(1)
    return [
        (
            ember.tensor(rng.standard_normal((8, 12)).astype(np.float32)),
            ember.tensor(rng.integers(0, 4, 8)),
        )
        for _ in range(n)
    ]


def test_training_replays_equal_with_and_without_the_generated_function():
    batches = _batches()
    interpreted = _train(False, batches)
    generated = _train(True, batches)
    assert all(not p._replay for p in interpreted[3])
    assert any(p._replay for p in generated[3]) and generated[2].replays >= 3
    for (h1, l1, f1), (h2, l2, f2) in zip(interpreted[0], generated[0]):
        assert f1 == f2 and isinstance(f2, float)
        assert ember.equal(h1, h2) and ember.equal(l1, l2)  # intermediates handed back intact
    for w1, w2 in zip(interpreted[1], generated[1]):
        np.testing.assert_array_equal(w1, w2)


def test_a_guard_failing_after_an_in_place_write_restores_state_in_the_generated_replay():
    def make():
        ember.manual_seed(0)
        return nn.Sequential(nn.Linear(6, 5), nn.BatchNorm1d(5), nn.Linear(5, 2))

    def body(model, opt):
        def step(x):
            opt.zero_grad()
            out = model(x)  # batch norm writes its running stats in place
            loss = out.square().mean() if x.sum() > 0 else out.abs().mean()
            loss.backward()
            opt.step()
            return loss.item()

        return step

    rng = np.random.default_rng(0)
    shifts = (3, 3, 3, 3, -3, 3)  # replays 3 and 4 take the branch; call 5 flips it
    xs = [ember.tensor(rng.standard_normal((4, 6)).astype(np.float32) + s) for s in shifts]

    def run(compiled):
        model = make()
        opt = ember.optim.SGD(model.parameters(), lr=0.05)
        step = body(model, opt)
        fn = ember.compile(step) if compiled else step
        losses = []
        for i, x in enumerate(xs):
            if compiled and i == 4:  # the replay about to fail is the generated function
                plans = [p for p in fn.plans.values() if isinstance(p, Plan)]
                assert plans[-1]._replay  # made from the second replay on
                assert plans[-1].undo_slots  # running stats written before the guard
            losses.append(fn(x))
        state = [
            t.detach().numpy().copy() for t in list(model.parameters()) + list(model.buffers())
        ]
        return losses, state, fn

    eager = run(False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CompileWarning)
        compiled = run(True)
    assert compiled[2].fallbacks >= 1
    assert eager[0] == compiled[0]
    for a, b in zip(eager[1], compiled[1]):
        np.testing.assert_array_equal(a, b)


def test_a_plan_longer_than_the_limit_keeps_the_interpreter(monkeypatch):
    batches = _batches(5)
    generated = _train(True, batches)
    monkeypatch.setattr(Plan, "MAX_GENERATED_STEPS", 5)
    interpreted = _train(True, batches)
    assert interpreted[2].replays >= 3 and all(p._replay is False for p in interpreted[3][1:])
    for (_, _, f1), (_, _, f2) in zip(generated[0], interpreted[0]):
        assert f1 == f2
    for w1, w2 in zip(generated[1], interpreted[1]):
        np.testing.assert_array_equal(w1, w2)


def test_an_error_in_a_generated_replay_shows_the_replayed_line():
    import traceback

    def fails(x):
        raise ValueError("boom")

    replay = replay_function([(CALL, fails, (0,), None, 1, False)], [], [0], {1}, GuardFailure)
    with pytest.raises(ValueError, match="boom") as caught:
        replay(np.ones(2))
    text = "".join(traceback.format_tb(caught.tb))
    assert "ember.compile replay" in text and "s1 = k0(s0)" in text


def test_a_replayed_relu_backward_selects_by_bits_as_eager_does():
    # NumPy's where branches per element and mispredicts on a ReLU's random mask; eager code
    # selects by bit masks (_backend.select), and the recording must take that path too
    rng = np.random.default_rng(3)
    x = ember.tensor(rng.standard_normal((64, 128)).astype(np.float32), requires_grad=True)
    w = ember.tensor(rng.standard_normal((64, 128)).astype(np.float32))

    def step():
        x.grad = None
        y = (x * w).relu()
        (y * w).sum().backward()
        return y

    eager = [step(), x.grad.clone()]
    compiled = ember.compile(step)
    for _ in range(3):
        got = [compiled(), x.grad.clone()]
    assert compiled.replays >= 1
    for a, b in zip(eager, got):
        np.testing.assert_array_equal(a.detach().numpy(), b.numpy())
    (plan,) = [p for p in compiled.plans.values() if hasattr(p, "steps")]
    assert np.where not in [s[1] for s in plan.steps]
