"""Figures of the OpInfo conformance suite: ``python -m tests.conformance.report``.

Runs every OpInfo (or those named) through torch and ember as the tests do, prints how many
ops agree on every check, the share of samples, error inputs and gradients that agree, and
the time taken; writes the per-op results as JSON. ``--write-known-failures`` rewrites
known_failures.txt from the disagreements found (keeping the reasons of lines that stay; with
op keys named, only those ops' lines are rewritten and every other line is kept).
Parallel runs: ``--shard i/n --json part_i.json`` each, then ``--merge part_*.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time

from . import _lists, _runner


def _failing_checks(key, category, result) -> int:
    failures = [f for f in result.failures if not _lists.excused(key, category, f)]
    if _lists.whole_category_excused(key, category):
        return 0
    return len({(f[0], f[1]) for f in failures})


def run(keys, progress: bool = False) -> dict:
    per_op = {}
    start, cpu_start = time.perf_counter(), time.process_time()
    for key in keys:
        op_start = time.perf_counter()
        entry = {}
        for category in _runner.CATEGORIES:
            result = _runner.result_for(key, category)
            status, _ = _lists.judge(key, category, result)
            entry[category] = {
                "status": status,
                "checked": result.checked,
                "failing": _failing_checks(key, category, result),
                "failures": [list(map(str, f)) for f in result.failures[:20]],
                "not_applicable": result.not_applicable,
            }
        entry["seconds"] = round(time.perf_counter() - op_start, 3)
        per_op[key] = entry
        if progress:
            print(f"{key} {entry['seconds']:.2f}s", file=sys.stderr, flush=True)
    return {
        "ops": per_op,
        "seconds": round(time.perf_counter() - start, 1),
        "cpu_seconds": round(time.process_time() - cpu_start, 1),
    }


def _share(ops, categories) -> tuple[int, int]:
    checked = failing = 0
    for entry in ops.values():
        for category in categories:
            c = entry[category]
            if c["status"] in ("n/a",):
                continue
            checked += c["checked"]
            failing += c["failing"]
    return checked - failing, checked


def figures(report: dict) -> dict:
    ops = report["ops"]
    agreeing = sum(
        all(c["failing"] == 0 for cat, c in e.items() if cat in _runner.CATEGORIES)
        for e in ops.values()
    )
    out = {"ops_agreeing": agreeing, "ops": len(ops)}
    for name, categories in (
        ("samples", _runner.SAMPLE_CATEGORIES),
        ("error_types", ("errors",)),
        ("error_messages", ("error_messages",)),
        ("vjp", ("vjp",)),
        ("jvp", ("jvp",)),
        ("gradients", _runner.GRAD_CATEGORIES),
    ):
        good, total = _share(ops, categories)
        out[name] = {
            "agreeing": good,
            "total": total,
            "percent": round(100 * good / max(total, 1), 2),
        }
    out["seconds"] = report["seconds"]
    out["cpu_seconds"] = report["cpu_seconds"]
    return out


def print_figures(fig: dict) -> None:
    print(f"python {platform.python_version()}, {platform.machine()}, {_cpu()}")
    print(f"ops agreeing on every check: {fig['ops_agreeing']} / {fig['ops']} "
          f"({100 * fig['ops_agreeing'] / max(fig['ops'], 1):.1f} %)")  # fmt: skip
    labels = {
        "samples": "samples agreeing (function, method, in-place, out=)",
        "error_types": "error inputs raising torch's exception type",
        "error_messages": "error inputs matching torch's message",
        "vjp": "float64 vjp agreeing",
        "jvp": "float64 jvp agreeing",
        "gradients": "gradients agreeing (vjp + jvp)",
    }
    for name, label in labels.items():
        f = fig[name]
        print(f"{label}: {f['agreeing']} / {f['total']} ({f['percent']:.2f} %)")
    print(f"time: {fig['seconds']:.0f} s ({fig['cpu_seconds']:.0f} s of CPU)")


def _cpu() -> str:
    try:
        with open("/proc/cpuinfo") as info:
            text = info.read()
        model = next(
            ln.split(":", 1)[1].strip() for ln in text.splitlines() if ln.startswith("model name")
        )
        return model + (" (AVX-512)" if "avx512f" in text else " (AVX2)" if "avx2" in text else "")
    except (OSError, StopIteration):
        return platform.processor()


def write_known_failures(report: dict) -> int:
    old = _lists.known()
    lines = [
        "# Disagreements with torch still to fix: <op> <category> <reason>.",
        "# The suite fails when a listed op now agrees (remove its line) and on any unlisted one.",
    ]
    entries = {}
    for (key, category), entry in old.items():  # ops not run this time keep their lines
        if key not in report["ops"]:
            entries[(key, category)] = entry.reason
    for key, entry in report["ops"].items():
        for category in _runner.CATEGORIES:
            c = entry[category]
            if c["status"] in ("fail", "known"):
                reason = old[(key, category)].reason if (key, category) in old else _reason(c)
                entries[(key, category)] = reason
    order = {category: i for i, category in enumerate(_runner.CATEGORIES)}
    for (key, category), reason in sorted(
        entries.items(), key=lambda kv: (kv[0][0], order.get(kv[0][1], 99))
    ):
        lines.append(f"{key} {category} {reason}")
    # atomically: a concurrent reader (a test, another report) never sees half a file
    partial = _lists.KNOWN_FILE.with_name(f".{_lists.KNOWN_FILE.name}.{os.getpid()}")
    partial.write_text("\n".join(lines) + "\n")
    os.replace(partial, _lists.KNOWN_FILE)
    return len(lines) - 2


def _reason(c) -> str:
    first = c["failures"][0] if c["failures"] else ["-", "-", "?"]
    text = first[2].replace("\n", " ")
    return f"{c['failing']}/{c['checked']}: {text[:110]}"


def _merge(paths) -> dict:
    merged = {"ops": {}, "seconds": 0.0, "cpu_seconds": 0.0}
    for path in paths:
        with open(path) as part:
            shard = json.load(part)
        merged["ops"].update(shard["ops"])
        merged["seconds"] = max(merged["seconds"], shard["seconds"])  # shards run side by side
        merged["cpu_seconds"] += shard["cpu_seconds"]
    merged["ops"] = dict(sorted(merged["ops"].items()))
    return merged


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("ops", nargs="*", help="op keys (default: the whole database)")
    parser.add_argument(
        "--json", default="conformance-report.json", help="where to write per-op results"
    )
    parser.add_argument("--write-known-failures", action="store_true")
    parser.add_argument("--progress", action="store_true", help="print each op as it finishes")
    parser.add_argument(
        "--shard", default="0/1", help="i/n: run every n-th op from the i-th (for parallel runs)"
    )
    parser.add_argument(
        "--merge", nargs="+", metavar="JSON", help="combine the JSON of shards instead of running"
    )
    args = parser.parse_args(argv)
    if args.merge:
        report = _merge(args.merge)
    else:
        index, count = (int(part) for part in args.shard.split("/"))
        keys = (args.ops or sorted(_runner.ops_by_key()))[index::count]
        report = run(keys, args.progress)
    fig = figures(report)
    report["figures"] = fig
    with open(args.json, "w") as out:
        json.dump(report, out, indent=1)
    print_figures(fig)
    slowest = sorted(report["ops"].items(), key=lambda kv: -kv[1]["seconds"])[:10]
    print("slowest ops: " + ", ".join(f"{k} {v['seconds']:.1f}s" for k, v in slowest))
    if args.write_known_failures:
        print(f"known_failures.txt: {write_known_failures(report)} entries")
    return 0


if __name__ == "__main__":
    sys.exit(main())
