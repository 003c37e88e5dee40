"""Issue 17's figures: ember against torch, each library in its own processes (harness.py).

uv run python benchmarks/issue17.py [--only randn-1e6,lstm-infer] [--rounds 3]
"""

from __future__ import annotations

import argparse
import fnmatch
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import harness  # noqa: E402
from issue17_workloads import WORKLOADS  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--only", default="*")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    patterns = args.only.split(",")
    print(f"load average: {harness.load_average()}")
    print("| case | ember median | torch median | ember/torch median | per-round range |")
    print("|---|---|---|---|---|")
    for name, workload in WORKLOADS.items():
        if not any(fnmatch.fnmatch(name, p) for p in patterns):
            continue
        result = harness.compare(
            "issue17_workloads",
            name,
            workload.params,
            rounds=args.rounds,
            warmup=workload.warmup,
            steps=workload.steps,
        )
        if result.errors:
            print(f"| {name} | {'; '.join(result.errors)} | | | |")
            continue
        ember, torch = (statistics.median(result.medians[lib]) for lib in ("ember", "torch"))
        ratios = result.ratios()
        print(
            f"| {name} | {harness.fmt_time(ember)} | {harness.fmt_time(torch)} | "
            f"{statistics.median(ratios):.2f} | {min(ratios):.2f}-{max(ratios):.2f} |",
            flush=True,
        )
    print(f"load average: {harness.load_average()}")


if __name__ == "__main__":
    main()
