"""Common layers and ops one at a time: forward and ``sum().backward()``, float32, written once
for both libraries (the table ``wide.py --table layer_workloads`` times, each library in its
own processes).

Where the wide suite times whole training steps, this table looks for the single layer or op
a program spends its time in: activations, losses, pooling, padding, convolutions of every
kind, indexing, einsum, norms. Inputs come from NumPy with fixed seeds; modules are built once,
outside the timed step.
"""

from __future__ import annotations

import numpy as np
from wide_workloads import Step, Workload, set_parameters


def _data(shape, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def _layer(make, shape, *, index=None):
    """A builder: ``make(m)`` gives a module or a callable of the input tensor (and of
    ``index(m)``'s tensors, when given); the step runs it and ``sum().backward()``. A module's
    parameters are overwritten from NumPy, so both libraries compute the same numbers (the
    readout: the sums of |output| and |input gradient|)."""

    def build(m):
        x = m.tensor(_data(shape), requires_grad=True)
        fn = make(m)
        module = fn.module if isinstance(fn, _Twice) else fn
        if isinstance(module, m.nn.Module):
            set_parameters(m, module)
        extra = index(m) if index is not None else ()
        state = {}

        def run():
            x.grad = None
            y = fn(x, *extra)
            if isinstance(y, tuple):
                y = y[0]
            y.sum().backward()
            state["y"] = y

        def readout():
            y = state["y"].detach().double()
            return [float(y.abs().sum()), float(x.grad.double().abs().sum())]

        return Step(run, readout)

    return build


def _labels(high, shape, seed: int = 1):
    return lambda m: (m.tensor(np.random.default_rng(seed).integers(0, high, shape)),)


class _Twice:
    """``module(x, x)``, its parameters set as a module's are."""

    def __init__(self, module):
        self.module = module

    def __call__(self, x):
        return self.module(x, x)


X4 = (32, 64, 28, 28)
X4_WIDE = (32, 32, 56, 56)
ROWS = (256, 1024)
HEADS = (16, 8, 128, 64)
GRID = (8, 32, 32, 2)

_TABLE = [
    # convolutions
    ("conv3x3", lambda m: m.nn.Conv2d(64, 64, 3, padding=1), X4, None),
    ("conv3x3-stride2", lambda m: m.nn.Conv2d(64, 128, 3, stride=2, padding=1), X4, None),
    ("conv1x1", lambda m: m.nn.Conv2d(64, 128, 1), X4, None),
    ("conv-depthwise", lambda m: m.nn.Conv2d(64, 64, 3, padding=1, groups=64), X4, None),
    ("conv-groups4", lambda m: m.nn.Conv2d(64, 64, 3, padding=1, groups=4), X4, None),
    ("conv-transpose", lambda m: m.nn.ConvTranspose2d(64, 32, 4, stride=2, padding=1), X4, None),
    ("conv1d", lambda m: m.nn.Conv1d(64, 64, 3, padding=1), (32, 64, 512), None),
    # pooling and resampling
    ("maxpool2", lambda m: m.nn.MaxPool2d(2), X4_WIDE, None),
    ("maxpool3-stride2", lambda m: m.nn.MaxPool2d(3, 2, 1), X4_WIDE, None),
    ("avgpool2", lambda m: m.nn.AvgPool2d(2), X4_WIDE, None),
    ("adaptive-avgpool1", lambda m: m.nn.AdaptiveAvgPool2d(1), X4, None),
    ("upsample-bilinear", lambda m: m.nn.Upsample(scale_factor=2, mode="bilinear"), X4, None),
    ("pad-reflect", lambda m: m.nn.ReflectionPad2d(2), X4, None),
    # normalization
    ("batchnorm2d", lambda m: m.nn.BatchNorm2d(32), X4_WIDE, None),
    ("groupnorm", lambda m: m.nn.GroupNorm(8, 64), X4, None),
    # activations
    ("leaky-relu", lambda m: m.nn.LeakyReLU(0.1), X4, None),
    ("elu", lambda m: m.nn.ELU(), X4, None),
    ("hardswish", lambda m: m.nn.Hardswish(), X4, None),
    ("softplus", lambda m: m.nn.Softplus(), X4, None),
    ("mish", lambda m: m.nn.Mish(), X4, None),
    ("glu", lambda m: m.nn.GLU(), ROWS, None),
    ("logsigmoid", lambda m: m.nn.LogSigmoid(), ROWS, None),
    # losses
    (
        "bce-with-logits",
        lambda m: lambda x, y: m.nn.functional.binary_cross_entropy_with_logits(x, y),
        ROWS,
        lambda m: (m.tensor((np.random.default_rng(2).random(ROWS) > 0.5).astype(np.float32)),),
    ),
    (
        "cross-entropy",
        lambda m: lambda x, y: m.nn.functional.cross_entropy(x, y, ignore_index=3),
        ROWS,
        _labels(1024, (256,)),
    ),
    (
        "smooth-l1",
        lambda m: lambda x: m.nn.functional.smooth_l1_loss(x, x.detach() * 0.5),
        ROWS,
        None,
    ),
    # indexing, products, reductions
    ("topk", lambda m: lambda x: x.topk(10, -1)[0], (512, 2048), None),
    (
        "gather",
        lambda m: lambda x, i: x.gather(1, i),
        (512, 2048),
        _labels(2048, (512, 512)),
    ),
    (
        "grid-sample",
        lambda m: lambda x, g: m.nn.functional.grid_sample(x, g, align_corners=False),
        (8, 16, 32, 32),
        lambda m: (
            m.tensor(np.random.default_rng(3).uniform(-1, 1, (8, 32, 32, 2)).astype(np.float32)),
        ),
    ),
    (
        "einsum-attention",
        lambda m: lambda x: m.einsum("bhqd,bhkd->bhqk", x, x),
        (16, 8, 128, 64),
        None,
    ),
    ("bilinear", lambda m: _Twice(m.nn.Bilinear(64, 64, 32)), (256, 64), None),
    ("pow3", lambda m: lambda x: x.pow(3), X4, None),
    ("vector-norm", lambda m: lambda x: m.linalg.vector_norm(x, dim=1), (4096, 1024), None),
]

WORKLOADS = {
    name: Workload(
        name,
        f"{name}: forward and sum().backward() on {shape}",
        _layer(make, shape, index=index),
        {},
        3,
        20,
    )
    for name, make, shape, index in _TABLE
}
