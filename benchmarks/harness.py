"""Timing helpers shared by the benchmarks: repeated measurements, medians, a markdown table."""

from __future__ import annotations

import platform
import statistics
import time


def measure(fn, *, repeats: int = 7, min_time: float = 0.2) -> list[float]:
    """Seconds per call of ``fn``: ``repeats`` samples, each long enough to be trusted."""
    fn()  # warm-up
    calls = 1
    while True:
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        elapsed = time.perf_counter() - start
        if elapsed >= min_time / 4 or calls >= 1 << 20:
            break
        calls *= 2
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        samples.append((time.perf_counter() - start) / calls)
    return samples


def measure_side_by_side(fns: dict, *, repeats: int = 7, min_time: float = 0.2) -> dict:
    """Like ``measure`` for several libraries, alternating them sample by sample so that a
    noisy machine slows all of them alike."""
    calls = {}
    for name, fn in fns.items():
        fn()
        n = 1
        while True:
            start = time.perf_counter()
            for _ in range(n):
                fn()
            if time.perf_counter() - start >= min_time / 4 or n >= 1 << 20:
                break
            n *= 2
        calls[name] = n
    samples: dict = {name: [] for name in fns}
    for _ in range(repeats):
        for name, fn in fns.items():
            n = calls[name]
            start = time.perf_counter()
            for _ in range(n):
                fn()
            samples[name].append((time.perf_counter() - start) / n)
    return samples


def summary(samples: list[float]) -> tuple[float, float, float]:
    return statistics.median(samples), min(samples), max(samples)


def fmt_time(seconds: float) -> str:
    if seconds < 1e-3:
        return f"{seconds * 1e6:.1f} µs"
    if seconds < 1:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds:.2f} s"


def table(rows: list[tuple], peers: list[str]) -> str:
    """Markdown table: case, each library's median, and ember/peer ratios with their range."""
    head = ["case", "ember"] + peers + [f"ember/{p}" for p in peers] + ["ratio min–max"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for case, results in rows:
        e_med, e_min, e_max = summary(results["ember"])
        cells = [case, fmt_time(e_med)]
        ratios, spans = [], []
        for p in peers:
            if p not in results:
                cells.append("—")
                ratios.append("—")
                continue
            p_med, p_min, p_max = summary(results[p])
            cells.append(fmt_time(p_med))
            ratios.append(f"{e_med / p_med:.2f}")
            spans.append(f"{e_min / p_max:.2f}–{e_max / p_min:.2f}")
        cells += ratios or ["—"] * len(peers)
        cells.append(", ".join(spans) or "—")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def machine_info() -> str:
    import numpy

    parts = [
        f"{platform.machine()}, {platform.processor() or 'cpu'}",
        f"Python {platform.python_version()}",
        f"NumPy {numpy.__version__}",
    ]
    try:
        import torch

        parts.append(f"torch {torch.__version__} ({torch.get_num_threads()} threads)")
    except ImportError:
        parts.append("torch not installed")
    try:
        from threadpoolctl import threadpool_info

        blas = [f"{i['internal_api']} {i.get('version')}" for i in threadpool_info()]
        parts.append("BLAS " + ", ".join(sorted(set(blas))))
    except ImportError:
        pass
    try:
        import os

        parts.append(f"{os.cpu_count()} cores")
    except Exception:
        pass
    return "; ".join(parts)
