"""Training-step benchmarks: ember and PyTorch side by side, with the same models and data.

Run: uv run python benchmarks/training.py [--peers]
(--peers adds JAX, HIPS autograd and tinygrad to the MLP cases where they are installed)
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import numpy as np  # noqa: E402
import peers  # noqa: E402
from harness import (  # noqa: E402
    IN_PROCESS_NOTE,
    busy_warning,
    fmt_time,
    machine_info,
    measure_side_by_side,
    summary,
    table,
)

import ember  # noqa: E402
from ember._compile import CompileWarning  # noqa: E402


def _compiled(m, fn, compiled: bool):
    """ember.compile for ember's side of the compiled cases; PyTorch stays eager."""
    return m.compile(fn) if compiled and m is ember else fn


def mlp_step(m, batch: int, compiled: bool = False):
    rng = np.random.default_rng(0)
    model = m.nn.Sequential(
        m.nn.Linear(784, 512), m.nn.ReLU(), m.nn.Linear(512, 512), m.nn.ReLU(), m.nn.Linear(512, 10)
    )
    opt = m.optim.SGD(model.parameters(), lr=0.01)
    x = m.tensor(rng.standard_normal((batch, 784)).astype(np.float32))
    y = m.tensor(rng.integers(0, 10, batch))
    loss_fn = m.nn.CrossEntropyLoss()

    def step():
        opt.zero_grad()
        loss_fn(model(x), y).backward()
        opt.step()

    return _compiled(m, step, compiled)


def digits_epoch(m, compiled: bool = False):
    images, labels = ember.datasets.load_digits()
    x = m.tensor((images.numpy().reshape(-1, 64) / 16.0).astype(np.float32))
    y = m.tensor(labels.numpy())
    model = m.nn.Sequential(m.nn.Linear(64, 128), m.nn.ReLU(), m.nn.Linear(128, 10))
    opt = m.optim.SGD(model.parameters(), lr=0.05)
    loader = m.utils.data.DataLoader(m.utils.data.TensorDataset(x, y), batch_size=64, shuffle=True)
    loss_fn = m.nn.CrossEntropyLoss()

    def train_step(xb, yb):
        opt.zero_grad()
        loss_fn(model(xb), yb).backward()
        opt.step()

    step = _compiled(m, train_step, compiled)

    def epoch():
        for xb, yb in loader:
            step(xb, yb)

    return epoch


def cnn_step(m):
    rng = np.random.default_rng(0)
    model = m.nn.Sequential(
        m.nn.Conv2d(1, 32, 3),
        m.nn.ReLU(),
        m.nn.MaxPool2d(2),
        m.nn.Conv2d(32, 64, 3),
        m.nn.ReLU(),
        m.nn.MaxPool2d(2),
        m.nn.Flatten(),
        m.nn.Linear(64 * 5 * 5, 10),
    )
    opt = m.optim.SGD(model.parameters(), lr=0.01)
    x = m.tensor(rng.standard_normal((64, 1, 28, 28)).astype(np.float32))
    y = m.tensor(rng.integers(0, 10, 64))
    loss_fn = m.nn.CrossEntropyLoss()

    def step():
        opt.zero_grad()
        loss_fn(model(x), y).backward()
        opt.step()

    return step


def matmul_fwd_bwd(m, n: int = 2048):
    rng = np.random.default_rng(0)
    a = m.tensor(rng.standard_normal((n, n)).astype(np.float32), requires_grad=True)
    b = m.tensor(rng.standard_normal((n, n)).astype(np.float32), requires_grad=True)
    g = m.ones(n, n)

    def run():
        (a @ b).backward(g)
        a.grad = None
        b.grad = None

    return run


def _peer_cases() -> dict:
    rng = np.random.default_rng(0)
    images, labels = ember.datasets.load_digits()
    digits_x = (images.numpy().reshape(-1, 64) / 16.0).astype(np.float32)
    digits_y = labels.numpy().astype(np.int64)

    def mlp(batch):
        x = rng.standard_normal((batch, 784)).astype(np.float32)
        y = rng.integers(0, 10, batch)
        return lambda peer: peers.mlp_step(peer, (784, 512, 512, 10), x, y, 0.01)

    return {
        "MLP 784-512-512-10 step, batch 32": mlp(32),
        "MLP 784-512-512-10 step, batch 512": mlp(512),
        "digits MLP 64-128-10, one epoch (batch 64)": lambda peer: peers.digits_epoch(
            peer, digits_x, digits_y
        ),
    }


def silence_expected_warnings() -> None:
    """The compiled digits epoch records its short last batch as a second signature, once; the
    CompileWarning says so on purpose in a program, but in this table it is only noise."""
    warnings.filterwarnings("ignore", category=CompileWarning)


def main() -> None:
    silence_expected_warnings()
    busy = busy_warning()
    if busy:
        print(busy, file=sys.stderr)
    libs = {"ember": ember}
    try:
        import torch

        libs["torch"] = torch
    except ImportError:
        print("torch is not installed: only ember is measured")
    cases = [
        ("MLP 784-512-512-10 step, batch 32", lambda m: mlp_step(m, 32), 0.5),
        ("MLP 784-512-512-10 step, batch 512", lambda m: mlp_step(m, 512), 1.0),
        ("digits MLP 64-128-10, one epoch (batch 64)", digits_epoch, 1.0),
        (
            "MLP 784-512-512-10 step, batch 32, ember.compile",
            lambda m: mlp_step(m, 32, compiled=True),
            0.5,
        ),
        (
            "digits MLP one epoch, ember.compile",
            lambda m: digits_epoch(m, compiled=True),
            1.0,
        ),
        ("small CNN step, batch 64 x 1x28x28", cnn_step, 1.0),
        ("2048x2048 matmul forward+backward", matmul_fwd_bwd, 1.0),
    ]
    others = peers.available() if "--peers" in sys.argv else []
    peer_cases = _peer_cases()
    rows = []
    for name, make, min_time in cases:
        fns = {lib: make(mod) for lib, mod in libs.items()}
        for peer in others:
            if name in peer_cases:
                fns[peer] = peer_cases[name](peer)
        rows.append((name, measure_side_by_side(fns, repeats=9, min_time=min_time)))
        print(f"measured {name}", file=sys.stderr)
    n = 2048
    a = np.random.default_rng(0).standard_normal((n, n)).astype(np.float32)
    numpy_samples = measure_side_by_side({"numpy": lambda: a @ a}, repeats=9, min_time=1.0)
    numpy_gflops = 2 * n**3 / summary(numpy_samples["numpy"])[0] / 1e9
    ember_gflops = 3 * 2 * n**3 / summary(rows[-1][1]["ember"])[0] / 1e9  # 1 fwd + 2 bwd GEMMs
    print(f"\n{machine_info()}\n{IN_PROCESS_NOTE}\n")
    busy = busy or busy_warning()  # at the start, or by the end
    if busy:
        print(busy)
    print(table(rows, [lib for lib in libs if lib != "ember"] + others))
    print(
        f"\n2048x2048 matmul: NumPy {numpy_gflops:.1f} GFLOP/s "
        f"({fmt_time(summary(numpy_samples['numpy'])[0])}"
        f" per product); ember forward+backward {ember_gflops:.1f} GFLOP/s = "
        f"{100 * ember_gflops / numpy_gflops:.0f} % of NumPy"
    )


if __name__ == "__main__":
    main()
