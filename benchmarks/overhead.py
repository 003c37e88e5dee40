"""Per-op autograd overhead: a chain of 100 elementwise ops, ember vs PyTorch, side by side.

Run: uv run python benchmarks/overhead.py [--peers]
(torch is measured when it imports; --peers adds JAX, HIPS autograd and tinygrad where installed)
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import numpy as np  # noqa: E402
import peers  # noqa: E402
from harness import IN_PROCESS_NOTE, machine_info, measure_side_by_side, table  # noqa: E402

import ember  # noqa: E402

CHAIN = 100  # ops per chain: (mul, add, tanh, sub) x 25


def chain(x):
    y = x
    for _ in range(CHAIN // 4):
        y = y * 1.01
        y = y + 0.1
        y = y.tanh()
        y = y - 0.05
    return y


def cases(lib, shape):
    data = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    x = lib.tensor(data, requires_grad=True)

    def forward():
        chain(x)

    def forward_backward():
        chain(x).sum().backward()
        x.grad = None

    return {"forward": forward, "forward+backward": forward_backward}


def main() -> None:
    libs = {"ember": ember}
    try:
        import torch

        libs["torch"] = torch
    except ImportError:
        print("torch is not installed: only ember is measured")
    others = peers.available() if "--peers" in sys.argv else []
    rows = []
    for shape in [(16,), (1000, 1000)]:
        per_lib = {name: cases(lib, shape) for name, lib in libs.items()}
        for peer in others:
            per_lib[peer] = peers.chain_cases(peer, shape)
        for kind in ["forward", "forward+backward"]:
            results = measure_side_by_side(
                {name: per_lib[name][kind] for name in per_lib},
                repeats=15,
                min_time=0.2 if shape == (16,) else 0.5,
            )
            case = f"{CHAIN}-op chain {shape} {kind}"
            rows.append((case, results))
            print(f"measured {case}", file=sys.stderr)
    print(f"\n{machine_info()}\n{IN_PROCESS_NOTE}\n")
    print(table(rows, [n for n in libs if n != "ember"] + others))
    for case, results in rows:
        if "torch" in results:
            med = sorted(results["ember"])[len(results["ember"]) // 2]
            per_op = med / CHAIN * 1e6
            print(f"{case}: ember {per_op:.2f} µs per op")


if __name__ == "__main__":
    main()
