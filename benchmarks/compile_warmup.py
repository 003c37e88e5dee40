"""What a compiled step costs before it is fast: ember.compile's first call against
torch.compile's (inductor), cold and with inductor's on-disk cache warm.

Run::

    python benchmarks/compile_warmup.py [--only inductor-mlp-b32,...] [--rounds 2]

For each ``inductor-*`` workload of ``wide_workloads`` and each library, fresh processes (one
per library and round, alternating): the first with an empty inductor cache (a new
``TORCHINDUCTOR_CACHE_DIR``), the rest reusing it. Each prints the seconds to build the
workload, of its first call (ember.compile records there; torch.compile traces and compiles),
and the median steady step after the warm-up. No timed assertion: figures for the README.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import harness  # noqa: E402
import wide_workloads  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    names = [w.name for w in wide_workloads.WORKLOADS.values() if w.name.startswith("inductor-")]
    ap.add_argument("--only", default=",".join(names))
    ap.add_argument("--rounds", type=int, default=2, help="processes per library (>= 2)")
    args = ap.parse_args(argv)
    print("\n".join(harness.header()))
    with tempfile.TemporaryDirectory(prefix="inductor-cache-") as cache:
        os.environ["TORCHINDUCTOR_CACHE_DIR"] = cache  # the workers inherit it
        print("| workload | library | cache | build s | first call s | steady step ms |")
        print("|---|---|---|---|---|---|")
        for name in args.only.split(","):
            w = wide_workloads.WORKLOADS[name]
            seen: dict = {}
            for r in range(args.rounds):
                for lib in ("ember", "torch") if r % 2 == 0 else ("torch", "ember"):
                    out = harness.run_worker(
                        "wide_workloads", name, lib, w.params, warmup=w.warmup, steps=w.steps
                    )
                    state = "cold" if lib not in seen else "warm"
                    seen.setdefault(lib, []).append(out)
                    if "error" in out:
                        print(f"| {name} | {lib} | {state} | failed: {out['error']} | | |")
                        continue
                    print(
                        f"| {name} | {lib} | {state if lib == 'torch' else 'n/a'} "
                        f"| {out['build_s']:.2f} | {out['first_call_s']:.3f} "
                        f"| {statistics.median(out['times']) * 1e3:.2f} |",
                        flush=True,
                    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
