"""ember.compile records the transformer's compiled kernels (attention's softmax passes, layer
norm, the feed-forward's bias and ReLU) as one call each: a replay runs the kernels, as eager
code does, and equals it to the bit."""

import numpy as np
import pytest

import ember
from ember._kernels import jit

pytest.importorskip("numba")


@pytest.fixture(autouse=True)
def kernels_for_small_arrays(monkeypatch):
    """The kernels for these small test arrays too (they start at jit.MIN_WORK elements)."""
    monkeypatch.setattr(jit, "MIN_WORK", 1)


def _layer(seed: int = 0):
    ember.manual_seed(seed)
    layer = ember.nn.TransformerEncoderLayer(16, 2, 24, dropout=0.0, batch_first=True)
    return layer, ember.optim.AdamW(layer.parameters(), lr=1e-2)


def _recorded_names(fn) -> set:
    names = set()
    for plan in fn.plans.values():
        for step in getattr(plan, "steps", ()):
            target = getattr(step[1], "function", step[1])
            names.add(getattr(target, "__name__", type(target).__name__))
    return names


@pytest.mark.filterwarnings("ignore:ember.compile")  # the first call records again (no .grad)
def test_compiled_encoder_layer_step_replays_the_kernels_equal_to_eager():
    x = ember.tensor(np.random.default_rng(1).standard_normal((3, 7, 16)).astype(np.float32))

    def run(compiled: bool):
        layer, opt = _layer()

        def step(x):
            opt.zero_grad()
            loss = layer(x).square().mean()
            loss.backward()
            opt.step()
            return loss

        fn = ember.compile(step) if compiled else step
        losses = [float(fn(x)) for _ in range(4)]
        return losses, [p.detach().numpy().copy() for p in layer.parameters()], fn

    eager, compiled = run(False), run(True)
    assert eager[0] == compiled[0]
    for a, b in zip(eager[1], compiled[1]):
        np.testing.assert_array_equal(a, b)
    fn = compiled[2]
    assert fn.replays >= 2
    if not jit.enabled():  # EMBER_JIT=0: the NumPy paths, recorded call by call
        return
    names = _recorded_names(fn)
    assert {"softmax_", "softmax_backward_"} <= names
    assert {"layer_norm_forward", "layer_norm_backward"} <= names
    # a training step records torch's graph for linear1 + relu (addmm, ReluBackward0) on the
    # arrays of linear_relu's fused forward (its GEMM and one bias + ReLU pass)
    assert "bias_relu_" in names
