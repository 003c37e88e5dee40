"""Where the MLP 784-512-512-10 SGD step's time goes: phases, GEMMs, and the GEMMs' floor.

Run::

    python benchmarks/mlp_step_profile.py [--batch 32] [--steps 300] [--lib ember|torch]
        [--plain-forward]

Times ``--steps`` steps one by one and prints the per-step minimum and 10th percentile (on a
shared machine the low end is the machine's own speed; a mean is mostly the neighbours') of:
the whole step, its phases (zero_grad, forward + loss, backward, optimizer step), and, for
ember, every GEMM the step makes (shape and operand layout: ``N`` C-contiguous, ``T`` a
transposed view; ``(...)^T`` linear's transposed forward product, ``ember.ops.linear_gemm``)
with its time inside the step; ``--plain-forward`` turns that product off, for an A/B. Then
each of those GEMMs alone, on one and on two OpenBLAS threads: the floor the step's GEMMs
stand against.
"""

from __future__ import annotations

import argparse
import importlib
import sys
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from wide_workloads import mlp, set_parameters  # noqa: E402


def low(samples: list) -> tuple[float, float]:
    """(minimum, 10th percentile) in microseconds."""
    ordered = sorted(samples)
    return ordered[0] * 1e6, ordered[len(ordered) // 10] * 1e6


def layout(a) -> str:
    return "N" if a.flags.c_contiguous else ("T" if a.flags.f_contiguous else "S")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--lib", default="ember", choices=("ember", "torch"))
    parser.add_argument(
        "--plain-forward",
        action="store_true",
        help="ember: x Wᵀ as written on every core type (for an A/B of ember.ops.linear_gemm)",
    )
    args = parser.parse_args()
    m = importlib.import_module(args.lib)
    rng = np.random.default_rng(0)
    model = mlp(m, (784, 512, 512, 10))
    set_parameters(m, model)
    opt = m.optim.SGD(model.parameters(), lr=0.01)
    x = m.tensor(rng.standard_normal((args.batch, 784)).astype(np.float32))
    y = m.tensor(rng.integers(0, 10, args.batch))
    loss_fn = m.nn.CrossEntropyLoss()

    gemm_times: dict = defaultdict(list)
    gemm_operands: dict = {}
    if args.lib == "ember":
        from ember.ops import linalg

        plain_gemm = linalg.gemm

        def timed_gemm(xp, a, b):
            start = time.perf_counter()
            out = plain_gemm(xp, a, b)
            key = f"{a.shape[0]}x{a.shape[1]} {layout(a)} @ {b.shape[0]}x{b.shape[1]} {layout(b)}"
            gemm_times[key].append(time.perf_counter() - start)
            gemm_operands[key] = (a.copy(order="K"), b.copy(order="K"))
            return out

        linalg.gemm = timed_gemm
        from ember.ops import linear_gemm

        if args.plain_forward:
            linear_gemm.TRANSPOSED_MAX_ROWS = 0
        transposed = linear_gemm._TRANSPOSED_PRODUCT

        def timed_transposed(x, w, plain=transposed.function):
            start = time.perf_counter()
            out = plain(x, w)
            key = f"({w.shape[0]}x{w.shape[1]} N @ {x.shape[1]}x{x.shape[0]} T)^T"
            gemm_times[key].append(time.perf_counter() - start)
            gemm_operands[key] = (w.copy(), x.T.copy(order="K"))
            return out

        transposed.function = timed_transposed

    phases: dict = defaultdict(list)
    for _ in range(args.steps):
        t0 = time.perf_counter()
        opt.zero_grad()
        t1 = time.perf_counter()
        loss = loss_fn(model(x), y)
        t2 = time.perf_counter()
        loss.backward()
        t3 = time.perf_counter()
        opt.step()
        t4 = time.perf_counter()
        for name, a, b in (
            ("zero_grad", t0, t1),
            ("forward+loss", t1, t2),
            ("backward", t2, t3),
            ("optimizer", t3, t4),
            ("step", t0, t4),
        ):
            phases[name].append(b - a)
    print(f"{args.lib} MLP 784-512-512-10 b{args.batch}: min / p10 in us over {args.steps} steps")
    for name, samples in phases.items():
        print(f"  {name:14s} {low(samples)[0]:8.0f} {low(samples)[1]:8.0f}")
    if not gemm_times:
        return
    from ember import _backend

    blas = _backend.numpy_blas()
    threads = blas.get_num_threads()
    print("  GEMM (in the step; alone on 1 and 2 OpenBLAS threads), min / p10 us")
    for key, samples in gemm_times.items():
        a, b = gemm_operands[key]
        alone = []
        for n in (1, 2):
            blas.set_num_threads(n)
            times = []
            for _ in range(args.steps):
                start = time.perf_counter()
                np.matmul(a, b)
                times.append(time.perf_counter() - start)
            alone.append(low(times))
        blas.set_num_threads(threads)
        step_low = low(samples[len(samples) // 10 :])
        print(
            f"  {key:28s} step {step_low[0]:6.0f} {step_low[1]:6.0f}"
            f"   1t {alone[0][0]:6.0f} {alone[0][1]:6.0f}"
            f"   2t {alone[1][0]:6.0f} {alone[1][1]:6.0f}"
        )


if __name__ == "__main__":
    main()
