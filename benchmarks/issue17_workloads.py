"""Workloads of issue 17 that the wide table lacks: random factories and recurrent inference.

Run with ``benchmarks/issue17.py`` (each library in its own processes, as ``wide.py``).
"""

from __future__ import annotations

import numpy as np
from wide_workloads import (
    Step,
    Workload,
    _table,
    conv1d_step,
    data,
    recurrent_step,
    resnet_step,
)


def random_factory(m, what: str = "randn", n: int = 10**6) -> Step:
    """One call of ``randn(n)``, ``randperm(n)`` or ``rand(n)`` on the default generator."""
    m.manual_seed(0)
    factory = getattr(m, what)
    state = {}

    def run():
        state["out"] = factory(n)

    return Step(run, lambda: [float(state["out"][:16].double().sum())])


def recurrent_inference(m, cell: str = "LSTM") -> Step:
    """nn.<cell>(64, 128, num_layers=2, batch_first) forward under no_grad; seq 50, batch 32."""
    rnn = getattr(m.nn, cell)(64, 128, num_layers=2, batch_first=True)
    with m.no_grad():
        for name, p in rnn.named_parameters():
            rng = np.random.default_rng(len(name))
            p.copy_(m.tensor(rng.uniform(-0.088, 0.088, tuple(p.shape)).astype(np.float32)))
    x = m.tensor(data((32, 50, 64)))
    state = {}

    def run():
        with m.no_grad():
            state["out"], _ = rnn(x)

    return Step(run, lambda: [float(state["out"].double().sum())])


def conv2d_step(m) -> Step:
    """One Conv2d(32, 32, 3, padding=1) forward and backward on 64 x 32 x 32 x 32."""
    conv = m.nn.Conv2d(32, 32, 3, padding=1, bias=False)
    x = m.tensor(data((64, 32, 32, 32)), requires_grad=True)

    def run():
        conv.zero_grad()
        x.grad = None
        conv(x).square().mean().backward()

    return Step(run, lambda: [float(conv.weight.grad.double().abs().sum())])


WORKLOADS = _table(
    Workload("randn-1e6", "randn(10**6) float32", random_factory, {"what": "randn"}, 3, 30),
    Workload("randperm-1e6", "randperm(10**6)", random_factory, {"what": "randperm"}, 3, 30),
    Workload("rand-1e7", "rand(10**7)", random_factory, {"what": "rand", "n": 10**7}, 2, 10),
    Workload("lstm-infer", "LSTM 2x128 seq 50 b32, no_grad", recurrent_inference, {}, 5, 50),
    Workload(
        "gru-infer", "GRU 2x128 seq 50 b32, no_grad", recurrent_inference, {"cell": "GRU"}, 5, 50
    ),
    Workload("lstm-train", "as wide.py's lstm", recurrent_step, {"cell": "LSTM"}, 5, 50),
    Workload("gru-train", "as wide.py's gru", recurrent_step, {"cell": "GRU"}, 5, 50),
    Workload("conv2d-32", "Conv2d 32->32 3x3 fwd+bwd, 64x32x32", conv2d_step, {}, 3, 15),
    Workload("resnet", "as wide.py's resnet", resnet_step, {}, 3, 20),
    Workload("conv1d", "as wide.py's conv1d", conv1d_step, {}, 3, 30),
)
