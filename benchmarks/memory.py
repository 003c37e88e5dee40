"""Peak memory of training steps and import time: ember and PyTorch, each in a fresh process.

Run: uv run python benchmarks/memory.py

Peak memory: the MLP 784-512-512-10 step at batch 512 (SGD, cross-entropy) and the ResNet-style
step of the wide suite (``wide_workloads.resnet_step``: conv-BN-ReLU stem and two residual
blocks, 32 channels, 64 x 3x32x32, SGD momentum), once the model, data and optimizer exist. Two
figures of the process's peak resident memory (Linux's VmHWM, reset to the current resident size
first) minus its resident memory at the reset: "first steps", over one warm-up step and six more
(what a user sees: compiled kernels loaded, optimizer state made, buffers an allocator keeps),
and "steady steps", over the six alone. tracemalloc sees NumPy's buffers, not PyTorch's
allocator. Import time: ``import ember`` / ``import torch`` in a
new interpreter, alternating, median of nine.
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
if {workload!r} == "mlp-b512":
    from training import mlp_step

    step = mlp_step(lib, 512)
else:
    from wide_workloads import resnet_step

    step = resnet_step(lib).run


def status(key):
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith(key))


def reset_peak():
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")  # the peak (VmHWM) back to the current resident size
    return status("VmRSS")


before = reset_peak()
tracemalloc.start()
step()  # the warm-up
for _ in range(6):
    step()
traced_peak = tracemalloc.get_traced_memory()[1]
tracemalloc.stop()
first = status("VmHWM") - before
before = reset_peak()
for _ in range(6):
    step()
steady = status("VmHWM") - before
print(json.dumps({{"first_kb": first, "steady_kb": steady, "traced_peak": traced_peak}}))
"""


WORKLOADS = {"mlp-b512": "MLP step b512", "resnet": "ResNet-style step"}


def step_memory(lib: str, workload: str, runs: int = 3) -> dict:
    code = STEP.format(bench=str(Path(__file__).parent), lib=lib, workload=workload)
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
    memory = {w: {lib: step_memory(lib, w) for lib in libs} for w in WORKLOADS}
    imports = import_times(libs)
    print(f"\n{machine_info()}\n")
    print("| measure | " + " | ".join(libs) + " | ember/torch |")
    print("|---|" + "---|" * (len(libs) + 1))

    def row(name, values, fmt, ratio=True):
        cells = [fmt(values[lib]) for lib in libs]
        shown = "—"
        if ratio and values.get("torch"):
            shown = f"{values['ember'] / values['torch']:.2f}"
        print(f"| {name} | " + " | ".join(cells) + f" | {shown} |")

    mb = lambda kb: f"{kb / 1024:.1f} MB"  # noqa: E731
    for workload, label in WORKLOADS.items():
        measured = memory[workload]
        for key, what in (("first_kb", "first steps"), ("steady_kb", "steady steps")):
            row(f"{label}: peak RSS rise, {what}", {k: v[key] for k, v in measured.items()}, mb)
        row(
            f"{label}: tracemalloc peak (NumPy buffers)",
            {k: v["traced_peak"] / 1024 for k, v in measured.items()},
            mb,
            ratio=False,
        )
    row("import time", imports, lambda s: f"{s * 1000:.0f} ms")


if __name__ == "__main__":
    main()
