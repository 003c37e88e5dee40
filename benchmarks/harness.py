"""Timing for the benchmarks: each (workload, library) in its own fresh Python process.

A fair comparison runs ember and torch in separate processes: in one process, OpenBLAS threads
left spinning after ember's NumPy calls take cores from torch's OpenMP threads (and the other
way round), which slowed torch's MLP step by ~40 % on a 2-core machine. ``compare`` therefore
starts one worker process per (workload, library, round), alternating the libraries process by
process and flipping which goes first each round. A worker builds the workload, runs warm-up
steps, times N steps one by one and prints the per-step times as JSON on its last stdout line.

Run a single worker by hand (what ``compare`` does)::

    uv run python benchmarks/harness.py --worker '{"table": "wide_workloads",
        "workload": "mlp-b32", "lib": "torch", "params": {}, "warmup": 5, "steps": 50}'

The in-process helpers (``measure``, ``measure_side_by_side``, ``in_process``) remain for
profiling and for the older scripts (overhead.py, training.py); their output says so.
"""

from __future__ import annotations

import datetime
import importlib
import json
import os
import platform
import statistics
import subprocess
import sys
import time
import traceback
import warnings
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
RESULT_MARK = "@@harness-result@@ "
IN_PROCESS_NOTE = (
    "MODE: all libraries in one process, side by side (profiling only: their thread pools "
    "disturb each other; fair figures come from benchmarks/wide.py, one process per library)"
)
THREAD_ENV = (
    "OMP_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "MKL_NUM_THREADS",
    "OMP_WAIT_POLICY",
    "GOMP_SPINCOUNT",
    "EMBER_NUM_THREADS",
    "EMBER_MALLOC_TUNING",
    "EMBER_JIT",
)


# ----------------------------------------------------------------------------- in one process


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
    """Like ``measure`` for several libraries IN ONE PROCESS, alternating them sample by
    sample. For profiling only: the libraries' thread pools disturb each other."""
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


def time_steps(step, warmup: int, steps: int) -> list[float]:
    """Run ``step`` ``warmup`` times, then return the seconds of each of ``steps`` calls."""
    for _ in range(warmup):
        step()
    times = []
    for _ in range(steps):
        start = time.perf_counter()
        step()
        times.append(time.perf_counter() - start)
    return times


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


# ----------------------------------------------------------------------------- the machine


def cpu_model() -> str:
    """The CPU's model name with its family and model numbers: a VM may report only "AMD
    EPYC", which covers Zen 2 to Zen 5 (family 25 model 17 is Zen 4)."""
    fields: dict[str, str] = {}
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                key, _, value = line.partition(":")
                key = key.strip()
                if key in ("model name", "cpu family", "model") and key not in fields:
                    fields[key] = value.strip()
                if len(fields) == 3:
                    break
    except OSError:
        pass
    name = fields.get("model name")
    if name is None:
        return platform.processor() or platform.machine()
    if "cpu family" in fields and "model" in fields:
        return f"{name} (family {fields['cpu family']}, model {fields['model']})"
    return name


def instruction_set() -> str:
    """The widest x86 vector extension the CPU reports (``avx512f``, ``avx2``, ...)."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    flags = set(line.split(":", 1)[1].split())
                    for name in ("avx512f", "avx2", "avx", "sse4_2"):
                        if name in flags:
                            return name
                    return "no AVX"
    except OSError:
        pass
    return platform.machine()


def busy_warning() -> str | None:
    """A warning when other work keeps the machine busy (1-minute load above a quarter of the
    usable cores): the figures measured now would be noisy. None when it is quiet enough."""
    try:
        load = os.getloadavg()[0]
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return None
    if load <= 0.25 * cores:
        return None
    return (
        f"warning: the machine is busy (load average {load:.2f} on {cores} usable cores): "
        "other processes compete with the measurement, so the figures will be noisy; "
        "measure again when it is quiet"
    )


def load_average() -> str:
    try:
        return " ".join(f"{v:.2f}" for v in os.getloadavg())
    except OSError:
        return "unknown"


def _blas_info() -> str:
    """The BLAS NumPy was built with and the thread pools loaded in this process."""
    parts = []
    try:
        import numpy

        config = numpy.show_config(mode="dicts")
        blas = config.get("Build Dependencies", {}).get("blas", {})
        parts.append(f"NumPy built with {blas.get('name')} {blas.get('version')}")
    except Exception:  # older NumPy has no mode="dicts"
        pass
    try:
        from threadpoolctl import threadpool_info

        pools = [
            f"{p['internal_api']} {p.get('version')} ({p['num_threads']} threads)"
            for p in threadpool_info()
        ]
        parts.append("pools: " + ", ".join(sorted(set(pools))))
    except ImportError:
        parts.append("threadpoolctl not installed")
    return "; ".join(parts)


def probe(lib: str) -> dict:
    """Versions and thread settings as a fresh worker process of ``lib`` sees them."""
    module = importlib.import_module(lib)
    info = {"lib": lib, "version": getattr(module, "__version__", "?")}
    if hasattr(module, "get_num_threads"):
        info["threads"] = module.get_num_threads()
    info["blas"] = _blas_info()
    if lib == "ember":
        info["kernels"] = _ember_kernels()
    return info


def _ember_kernels() -> str:
    """Whether ember's compiled kernels (numba) are on, and numba's version."""
    from ember._kernels import jit

    if not jit.enabled():
        reason = "EMBER_JIT=0" if os.environ.get("EMBER_JIT") else "numba not installed"
        return f"compiled kernels off ({reason}): NumPy paths"
    import importlib.metadata

    return f"compiled kernels on (numba {importlib.metadata.version('numba')})"


def _run_probe(lib: str) -> dict:
    spec = json.dumps({"probe": lib})
    done = subprocess.run(
        [sys.executable, str(Path(__file__).resolve()), "--worker", spec],
        capture_output=True,
        text=True,
        timeout=300,
    )
    return _parse_result(done, f"probe {lib}")


def header(libs: tuple[str, ...] = ("ember", "torch")) -> list[str]:
    """The lines that head every report: date, machine, versions, BLAS and threads."""
    import numpy

    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:
        usable = os.cpu_count()
    lines = [
        f"date: {now}",
        f"machine: {cpu_model()} ({instruction_set()}), {os.cpu_count()} logical cores "
        f"({usable} usable), "
        f"{platform.system()} {platform.release()}",
        f"Python {platform.python_version()}, NumPy {numpy.__version__}",
    ]
    for lib in libs:
        info = _run_probe(lib)
        if "error" in info:
            lines.append(f"{lib}: not usable ({info['error']})")
            continue
        threads = f", {info['threads']} intra-op threads" if "threads" in info else ""
        kernels = f"; {info['kernels']}" if "kernels" in info else ""
        lines.append(f"{lib} {info['version']}{threads}; {info['blas']}{kernels}")
    env = ", ".join(f"{k}={os.environ[k]}" for k in THREAD_ENV if k in os.environ)
    lines.append(f"thread environment: {env or 'none of ' + ', '.join(THREAD_ENV[:3]) + ' set'}")
    busy = busy_warning()
    if busy:
        print(busy, file=sys.stderr)
        lines.append(busy)
    return lines


def machine_info() -> str:
    """One line for the older in-process scripts."""
    import numpy

    parts = [
        f"{platform.machine()}, {cpu_model()} ({instruction_set()}), {os.cpu_count()} cores",
        f"load {load_average()}",
        f"Python {platform.python_version()}",
        f"NumPy {numpy.__version__}",
    ]
    try:
        import torch

        parts.append(f"torch {torch.__version__} ({torch.get_num_threads()} threads)")
    except ImportError:
        parts.append("torch not installed")
    parts.append(_blas_info())
    return "; ".join(parts)


# ----------------------------------------------------------------------------- worker processes


def _worker(spec: dict) -> dict:
    """Build one workload in one library, warm up, time the steps (runs in the child)."""
    if "probe" in spec:
        return probe(spec["probe"])
    lib = importlib.import_module(spec["lib"])
    workload = importlib.import_module(spec["table"]).WORKLOADS[spec["workload"]]
    # recorded under the default filters (once per place), so a warning per step costs no more
    # than it would in a user's program
    with warnings.catch_warnings(record=True) as caught:
        began = time.perf_counter()
        step = workload.build(lib, **spec["params"])
        built = time.perf_counter()
        step.run()  # the first call: where a compiler records or compiles
        first = time.perf_counter()
        times = time_steps(step.run, max(0, spec["warmup"] - 1), spec["steps"])
    result = {
        "times": times,
        "median": statistics.median(times),
        "readout": step.readout(),
        "build_s": built - began,
        "first_call_s": first - built,
    }
    others = [name for name in ("ember", "torch") if name != spec["lib"] and name in sys.modules]
    if others:  # the point of a worker is one library per process
        result["notes"] = [f"{', '.join(others)} also imported in the {spec['lib']} worker"]
    compiled = getattr(step, "compiled", None)
    if compiled is not None and spec["lib"] == "ember":  # torch.compile keeps no such counts
        counts = {k: getattr(compiled, k) for k in ("recordings", "replays", "fallbacks")}
        result["compile"] = counts
        # a recording or two during warm-up is normal (gradients appear after the first step)
        notes = [f"ember.compile: {counts['replays']} replays"]
        if not compiled.replays:
            said = {str(w.message) for w in caught if type(w.message).__name__ == "CompileWarning"}
            notes = ["ember.compile never replayed, ran eagerly", *sorted(said)]
        result["notes"] = result.get("notes", []) + notes
    return result


def _worker_main(raw: str) -> None:
    try:
        result = _worker(json.loads(raw))
    except Exception as exc:  # reported to the parent, which reports it in the table
        result = {
            "error": f"{type(exc).__name__}: {exc}".splitlines()[0][:300],
            "traceback": traceback.format_exc()[-3000:],
        }
    print(RESULT_MARK + json.dumps(result), flush=True)


def _parse_result(done: subprocess.CompletedProcess, what: str) -> dict:
    for line in reversed(done.stdout.splitlines()):
        if line.startswith(RESULT_MARK):
            return json.loads(line[len(RESULT_MARK) :])
    tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no output"]
    return {"error": f"{what}: worker exited {done.returncode} ({tail[0][:300]})"}


def run_worker(
    table_module: str,
    workload: str,
    lib: str,
    params: dict,
    *,
    warmup: int,
    steps: int,
    timeout: float = 900,
) -> dict:
    """Time ``workload`` in ``lib`` in a fresh Python process; the worker's JSON result."""
    spec = dict(
        table=table_module, workload=workload, lib=lib, params=params, warmup=warmup, steps=steps
    )
    cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", json.dumps(spec)]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=HERE)
    except subprocess.TimeoutExpired:
        return {"error": f"{lib} worker ran past {timeout:.0f} s"}
    return _parse_result(done, f"{workload} in {lib}")


# ----------------------------------------------------------------------------- comparisons


@dataclass
class Comparison:
    """The rounds of one workload: each library's per-process median step time per round."""

    name: str
    libs: tuple[str, ...]
    mode: str  # "separate processes" or "in one process (profiling only)"
    medians: dict = field(default_factory=dict)  # lib -> [median seconds per round]
    errors: list = field(default_factory=list)
    notes: list = field(default_factory=list)
    check: str = ""  # the loss agreement verdict, filled by the caller

    def ratios(self) -> list[float]:
        """ember/peer per round (the first library over the second)."""
        a, b = (self.medians.get(lib, []) for lib in self.libs[:2])
        return [x / y for x, y in zip(a, b)]

    def row(self) -> list[str]:
        cells = [self.name]
        for lib in self.libs:
            values = self.medians.get(lib)
            cells.append(fmt_time(statistics.median(values)) if values else "—")
        ratios = self.ratios()
        if ratios and len(self.libs) > 1:
            cells.append(f"{statistics.median(ratios):.2f}")
            cells.append(f"{min(ratios):.2f}–{max(ratios):.2f}")
        else:
            cells += ["—", "—"]
        cells.append(str(max((len(v) for v in self.medians.values()), default=0)))
        cells.append(self.check or "—")
        cells.append("; ".join(self.errors + self.notes) or "")
        return cells


def markdown(comparisons: list[Comparison]) -> str:
    """The report's table: one row per workload."""
    libs = comparisons[0].libs if comparisons else ("ember", "torch")
    ratio = f"{libs[0]}/{libs[1]}" if len(libs) > 1 else "ratio"
    head = ["workload", *libs, f"{ratio} (median of rounds)", "min–max of rounds", "rounds"]
    head += ["loss check", "notes"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for c in comparisons:
        lines.append("| " + " | ".join(cell.replace("|", "/") for cell in c.row()) + " |")
    return "\n".join(lines)


def compare(
    table_module: str,
    workload: str,
    params: dict,
    *,
    libs: tuple[str, ...] = ("ember", "torch"),
    rounds: int = 3,
    warmup: int = 5,
    steps: int = 50,
    timeout: float = 900,
) -> Comparison:
    """Time ``workload`` in each library in separate processes, ``rounds`` times, alternating
    the libraries process by process and flipping which goes first every round."""
    result = Comparison(workload, libs, "separate processes")
    failed: set = set()
    for r in range(rounds):
        order = libs if r % 2 == 0 else libs[::-1]
        for lib in order:
            if lib in failed:
                continue
            out = run_worker(
                table_module, workload, lib, params, warmup=warmup, steps=steps, timeout=timeout
            )
            if "error" in out:
                failed.add(lib)
                result.errors.append(f"{lib} failed: {out['error']}")
                continue
            result.medians.setdefault(lib, []).append(out["median"])
            for note in out.get("notes", []):
                if note not in result.notes:
                    result.notes.append(note)
    return result


def in_process(
    name: str, steps_by_lib: dict, *, rounds: int = 3, warmup: int = 5, steps: int = 50
) -> Comparison:
    """The same rounds as ``compare`` but with every library IN THIS PROCESS. Profiling only:
    the libraries' thread pools disturb each other, so the ratio is not a fair figure."""
    libs = tuple(steps_by_lib)
    result = Comparison(name, libs, "in one process (profiling only)")
    for r in range(rounds):
        order = libs if r % 2 == 0 else libs[::-1]
        for lib in order:
            times = time_steps(steps_by_lib[lib], warmup, steps)
            result.medians.setdefault(lib, []).append(statistics.median(times))
    return result


def interleaved(
    name: str, steps_by_lib: dict, *, rounds: int = 3, warmup: int = 5, steps: int = 50
) -> Comparison:
    """Every library IN THIS PROCESS, one step each in turn (ember, torch, ember, ...): the
    worst case of the libraries' thread pools disturbing each other. For the control only."""
    libs = tuple(steps_by_lib)
    result = Comparison(name, libs, "in one process, step by step (control)")
    for r in range(rounds):
        order = libs if r % 2 == 0 else libs[::-1]
        for lib in order:
            time_steps(steps_by_lib[lib], warmup, 0)
        times: dict = {lib: [] for lib in libs}
        for _ in range(steps):
            for lib in order:
                start = time.perf_counter()
                steps_by_lib[lib]()
                times[lib].append(time.perf_counter() - start)
        for lib in libs:
            result.medians.setdefault(lib, []).append(statistics.median(times[lib]))
    return result


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--worker":
        sys.path.insert(0, str(HERE))
        _worker_main(sys.argv[2])
    else:
        print(__doc__)
