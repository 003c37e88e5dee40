"""Peak memory of a training step and import time: ember and PyTorch, each in a fresh process.

Run: uv run python benchmarks/memory.py

Peak memory: the MLP 784-512-512-10 step at batch 512 (SGD, cross-entropy), six steps once the
model, data and optimizer exist. "Peak RSS rise" is the process's peak resident memory during
the steps (Linux's VmHWM, reset just before them) minus its resident memory before them: what
the steps add, gradients included. tracemalloc sees NumPy's buffers, not PyTorch's allocator.
Import time: ``import ember`` / ``import torch`` in a new interpreter, alternating, median of nine.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from harness import machine_info  # noqa: E402

STEP = r"""
import json, sys, tracemalloc
sys.path.insert(0, {bench!r})
lib = __import__({lib!r})
from training import mlp_step


def status(key):
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith(key))


step = mlp_step(lib, 512)
with open("/proc/self/clear_refs", "w") as f:
    f.write("5")  # reset the peak (VmHWM) to the current resident size
before = status("VmRSS")
tracemalloc.start()
for _ in range(6):
    step()
traced_peak = tracemalloc.get_traced_memory()[1]
tracemalloc.stop()
print(json.dumps({{"rise_kb": status("VmHWM") - before, "traced_peak": traced_peak}}))
"""


def step_memory(lib: str, runs: int = 3) -> dict:
    code = STEP.format(bench=str(Path(__file__).parent), lib=lib)
    results = []
    for _ in range(runs):
        done = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True
        )
        results.append(json.loads(done.stdout.strip().splitlines()[-1]))
    return {k: statistics.median(r[k] for r in results) for k in results[0]}


def import_times(libs: list, runs: int = 9) -> dict:
    """Median seconds of ``import <lib>`` in a new interpreter, the libraries alternating.

    Bytecode caching is on, as in any installed environment (an environment that sets
    PYTHONDONTWRITEBYTECODE would compile every module from source at every import); one
    import per library first writes the caches."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    for lib in libs:
        subprocess.run([sys.executable, "-c", f"import {lib}"], env=env, check=True)
    times: dict = {lib: [] for lib in libs}
    for _ in range(runs):
        for lib in libs:
            code = (
                f"import time; t = time.perf_counter(); import {lib}; "
                "print(time.perf_counter() - t)"
            )
            done = subprocess.run(
                [sys.executable, "-c", code], capture_output=True, text=True, env=env
            )
            times[lib].append(float(done.stdout.strip()))
    return {lib: statistics.median(t) for lib, t in times.items()}


def main() -> None:
    libs = ["ember"]
    try:
        import torch  # noqa: F401

        libs.append("torch")
    except ImportError:
        print("torch is not installed: only ember is measured")
    memory = {lib: step_memory(lib) for lib in libs}
    imports = import_times(libs)
    print(f"\n{machine_info()}\n")
    print("| measure | " + " | ".join(libs) + " | ember/torch |")
    print("|---|" + "---|" * (len(libs) + 1))

    def row(name, values, fmt, ratio=True):
        cells = [fmt(values[lib]) for lib in libs]
        shown = f"{values['ember'] / values['torch']:.2f}" if ratio and "torch" in values else "—"
        print(f"| {name} | " + " | ".join(cells) + f" | {shown} |")

    mb = lambda kb: f"{kb / 1024:.1f} MB"  # noqa: E731
    row("MLP step b512: peak RSS rise", {k: v["rise_kb"] for k, v in memory.items()}, mb)
    row(
        "MLP step b512: tracemalloc peak (NumPy buffers)",
        {k: v["traced_peak"] / 1024 for k, v in memory.items()},
        mb,
        ratio=False,
    )
    row("import time", imports, lambda s: f"{s * 1000:.0f} ms")


if __name__ == "__main__":
    main()
