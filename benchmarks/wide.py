"""The wide suite: ember against torch over many workloads, each library in its own processes.

Run::

    uv run python benchmarks/wide.py [--rounds 3] [--only PATTERN] [--quick]
        [--markdown out.md] [--in-process] [--control] [--param KEY=VALUE] [--list]
        [--table layer_workloads]

For every workload the loss agreement check comes first: both libraries are built from the
same NumPy data and parameters in this process, run ``--check-steps`` steps, and their readouts
(losses, or sums of outputs and gradients) must agree within the workload's rtol (1e-4 for
float32). A workload that disagrees or fails is reported as such and not timed. Then
``harness.compare`` times it in fresh worker processes, alternating the libraries and flipping
the order every round; the table gives each library's median step time (median over rounds of
the per-process medians) and the median and min–max of the per-round ratios ember/torch.

``--only`` takes comma-separated shell patterns over the names (``--list`` prints them).
``--quick``: one round, one warm-up and two timed steps, two check steps (proves every workload
runs; the figures mean nothing). ``--param shape=64,512,512`` overrides a parameter of every
selected workload that has it. ``--table layer_workloads`` times the single layers and ops
of ``layer_workloads.py`` instead of the training steps. ``--in-process`` times both
libraries in this one process (profiling only, labelled so). ``--control`` measures the MLP
b32 step both ways, separate processes and one process alternating, to show the unfairness of
the latter.
"""

from __future__ import annotations

import argparse
import fnmatch
import gc
import importlib
import importlib.util
import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import harness  # noqa: E402
from wide_workloads import WORKLOADS, Workload  # noqa: E402

TABLES = ("wide_workloads", "layer_workloads")

LIBS = ("ember", "torch")
IN_PROCESS_LABEL = (
    "MODE: in one process (profiling only: the libraries' thread pools disturb each other, "
    "so these ratios are not fair figures)"
)


def agreement(workload: Workload, params: dict, steps: int = 3) -> tuple[bool, str]:
    """Run ``steps`` steps in both libraries from identical data and parameters and compare
    the readouts after each step; (agree, verdict)."""
    readouts = {}
    for lib in LIBS:
        module = importlib.import_module(lib)
        try:
            step = workload.build(module, **params)
            readouts[lib] = []
            for _ in range(steps):
                step.run()
                readouts[lib].append(step.readout())
        except Exception as exc:  # a missing feature or a bug: reported, not timed
            first = f"{type(exc).__name__}: {exc}".splitlines()[0][:200]
            return False, f"{lib} failed: {first}"
        finally:
            step = None
            gc.collect()
    worst = 0.0
    for i, (mine, theirs) in enumerate(zip(*(readouts[lib] for lib in LIBS))):
        for j, (a, b) in enumerate(zip(mine, theirs)):
            diff = abs(a - b) / max(abs(a), abs(b), 1e-30)
            worst = max(worst, diff)
            if not diff <= workload.rtol:  # also catches NaN
                return False, f"DISAGREE at step {i + 1}, readout {j}: ember {a:.8g}, torch {b:.8g}"
    return True, f"agree ({steps} steps, max rel. diff {worst:.1e})"


def select(patterns: str | None, table: dict = WORKLOADS) -> list[Workload]:
    if not patterns:
        return list(table.values())
    wanted = [p.strip() for p in patterns.split(",") if p.strip()]
    chosen = [w for w in table.values() if any(fnmatch.fnmatch(w.name, p) for p in wanted)]
    if not chosen:
        raise SystemExit(f"--only {patterns!r} matches none of: {', '.join(table)}")
    return chosen


def overrides(pairs: list[str]) -> dict:
    """--param KEY=VALUE: a comma list becomes a list of ints; JSON literals are read as such."""
    out = {}
    for pair in pairs:
        key, _, raw = pair.partition("=")
        if "," in raw:
            value = [int(v) for v in raw.split(",")]
        else:
            try:
                value = json.loads(raw)
            except json.JSONDecodeError:
                value = raw
        out[key] = value
    return out


def measure(workload: Workload, params: dict, args, counts: tuple[int, int]) -> harness.Comparison:
    warmup, steps = counts
    if args.in_process:
        modules = {lib: importlib.import_module(lib) for lib in LIBS}
        steps_by_lib = {lib: workload.build(m, **params).run for lib, m in modules.items()}
        return harness.in_process(
            workload.name, steps_by_lib, rounds=args.rounds, warmup=warmup, steps=steps
        )
    return harness.compare(
        args.table,
        workload.name,
        params,
        libs=LIBS,
        rounds=args.rounds,
        warmup=warmup,
        steps=steps,
    )


def control(args, counts: tuple[int, int]) -> str:
    """MLP b32 timed three ways: separate processes (the method), one process alternating
    step by step, and one process alternating blocks of samples (the former harness)."""
    workload = WORKLOADS["mlp-b32"]
    warmup, steps = counts
    separate = harness.compare(
        "wide_workloads", workload.name, workload.params, rounds=args.rounds,
        warmup=warmup, steps=steps,
    )  # fmt: skip
    separate.name = "mlp-b32, separate processes (the method)"
    builds = {lib: workload.build(importlib.import_module(lib), **workload.params) for lib in LIBS}
    runs = {lib: step.run for lib, step in builds.items()}
    stepwise = harness.interleaved(
        "mlp-b32, one process, libraries alternating step by step (unfair)",
        runs,
        rounds=args.rounds,
        warmup=warmup,
        steps=steps,
    )
    samples = harness.measure_side_by_side(
        runs, repeats=3 if args.quick else 9, min_time=0.01 if args.quick else 0.5
    )
    blocks = harness.Comparison(
        "mlp-b32, one process, alternating blocks of steps (the former harness; unfair)",
        LIBS,
        "in one process (control)",
    )
    blocks.medians = samples  # one entry per sample, each the mean of a block of steps
    rows = [separate, stepwise, blocks]
    lines = [harness.markdown(rows)]
    for row in rows[1:]:
        if row.medians.get("torch") and separate.medians.get("torch"):
            shared = statistics.median(row.medians["torch"])
            alone = statistics.median(separate.medians["torch"])
            lines.append(f"\ntorch's step, {row.name.split(', ', 1)[1]}: {shared / alone:.2f}x "
                         "its time in its own process")  # fmt: skip
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--only", help="comma-separated shell patterns over workload names")
    parser.add_argument("--quick", action="store_true", help="tiny sample counts, one round")
    parser.add_argument("--markdown", help="also write the report to this file")
    parser.add_argument("--in-process", action="store_true", help="profiling only (unfair)")
    parser.add_argument("--control", action="store_true", help="MLP b32: one process vs separate")
    parser.add_argument("--param", action="append", default=[], help="KEY=VALUE override")
    parser.add_argument("--check-steps", type=int, default=3)
    parser.add_argument("--list", action="store_true", help="print the workloads and exit")
    parser.add_argument("--table", choices=TABLES, default=TABLES[0], help="which workloads")
    args = parser.parse_args(argv)
    table = importlib.import_module(args.table).WORKLOADS
    if args.list:
        for w in table.values():
            counts = f"{w.warmup} warm-up + {w.steps} timed steps"
            print(f"{w.name:32} {w.what}; {counts}; {w.params or ''}")
        return 0
    if importlib.util.find_spec("torch") is None:
        raise SystemExit("wide.py measures ember against torch, and torch is not installed")
    if args.quick:
        args.rounds, args.check_steps = 1, 2
    extra = overrides(args.param)

    load_before = harness.load_average()
    head = harness.header(LIBS)
    print("\n".join(head), file=sys.stderr)
    if args.control:
        counts = (1, 2) if args.quick else (10, 200)
        report = control(args, counts)
        sections = [report]
    else:
        rows = []
        for workload in select(args.only, table):
            params = {**workload.params, **{k: v for k, v in extra.items() if k in workload.params}}
            ok, verdict = agreement(workload, params, args.check_steps)
            if ok:
                counts = (1, 2) if args.quick else (workload.warmup, workload.steps)
                row = measure(workload, params, args, counts)
            else:
                row = harness.Comparison(workload.name, LIBS, "not timed")
            row.check = verdict
            rows.append(row)
            print(" | ".join(row.row()), file=sys.stderr, flush=True)
        sections = [harness.markdown(rows)]
        if args.in_process:
            sections.insert(0, IN_PROCESS_LABEL)
    head.insert(1, f"load average before: {load_before}; after: {harness.load_average()}")
    mode = "one process (profiling only)" if args.in_process else "separate processes"
    if args.control:
        mode = "control: MLP b32 in separate processes against one shared process"
    quick = ", --quick (figures meaningless)" if args.quick else ""
    head.append(f"mode: {mode}, {args.rounds} round(s){quick}")
    report = "\n".join(["```", *head, "```", "", *sections, ""])
    print(report)
    if args.markdown:
        Path(args.markdown).write_text(report)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
