"""GPU (or CPU) throughput of ember next to torch: big matmuls per dtype, MLP training steps with
and without AMP, and (on a GPU) ember's fused CUDA kernels next to the CuPy call chains they
replace.

    uv run python benchmarks/gpu_bench.py --device cuda --out gpu_out     # on a GPU machine
    uv run python benchmarks/gpu_bench.py --device cpu --quick            # smoke test anywhere

Writes ``results.json`` and ``results.md`` into ``--out``. torch is timed too when it is
installed and can use the device. Each figure is the median of several timed repeats after
warm-up; GPU times are taken between device synchronisations.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np


def _sync(lib, device: str) -> None:
    if device == "cuda":
        lib.cuda.synchronize()


def _median_time(fn, lib, device: str, repeats: int, warmup: int = 2) -> float:
    for _ in range(warmup):
        fn()
    _sync(lib, device)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        _sync(lib, device)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _libraries(device: str) -> list:
    import ember

    libs = [("ember", ember)]
    try:
        import torch

        if device == "cpu" or torch.cuda.is_available():
            libs.append(("torch", torch))
    except ImportError:
        pass
    return libs


def bench_matmul(lib, device: str, n: int, dtype_name: str, repeats: int, autocast: bool) -> dict:
    """``a @ b`` on (n, n) operands in ``dtype_name`` (or float32 operands inside autocast)."""
    dtype = getattr(lib, dtype_name)
    if autocast:
        a = lib.randn(n, n, device=device)
        b = lib.randn(n, n, device=device)

        def run():
            with lib.amp.autocast(device, dtype=dtype):
                return a @ b
    else:
        a = lib.randn(n, n, device=device).to(dtype)
        b = lib.randn(n, n, device=device).to(dtype)

        def run():
            return a @ b

    seconds = _median_time(run, lib, device, repeats, warmup=1 if n >= 4096 else 2)
    return {"seconds": seconds, "tflops": 2 * n**3 / seconds / 1e12}


def bench_mlp(lib, device: str, batch: int, amp: bool, steps: int) -> dict:
    """One SGD step of the 784-512-512-10 MLP, with autocast + GradScaler when ``amp``."""
    nn = lib.nn
    lib.manual_seed(0)
    model = nn.Sequential(
        nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10)
    ).to(device)
    opt = lib.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    x = lib.randn(batch, 784, device=device)
    y = lib.randint(0, 10, (batch,), device=device)
    lower = lib.float16 if device == "cuda" else lib.bfloat16
    scaler = lib.amp.GradScaler(device, enabled=amp)

    def step():
        opt.zero_grad()
        with lib.amp.autocast(device, dtype=lower, enabled=amp):
            loss = loss_fn(model(x), y)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        return loss

    seconds = _median_time(step, lib, device, steps, warmup=3)
    return {"ms_per_step": seconds * 1e3}


def bench_fused(rows: int, cols: int, repeats: int) -> list:
    """ember._kernels.cuda_fused's fused kernels next to the chain of CuPy calls each one replaces
    (float32, rows × cols), in ms; each pair's results are checked to agree first."""
    import cupy

    import ember
    from ember._kernels import cuda_fused as kernels

    xp = cupy
    rng = np.random.default_rng(0)
    x = xp.asarray(rng.standard_normal((rows, cols), dtype=np.float32))
    g = xp.asarray(rng.standard_normal((rows, cols), dtype=np.float32))
    target = xp.asarray(rng.integers(0, cols, size=rows))

    def softmax_chain():
        e = xp.exp(x - x.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)

    def layer_norm_chain():
        mu = x.mean(axis=1, keepdims=True)
        return (x - mu) / xp.sqrt(((x - mu) ** 2).mean(axis=1, keepdims=True) + 1e-5)

    def gelu_chain():
        import cupyx.scipy.special

        return 0.5 * x * (1 + cupyx.scipy.special.erf(x * 0.7071067811865476))

    def cross_entropy_chain():
        m = x.max(axis=1, keepdims=True)
        lse = (m + xp.log(xp.exp(x - m).sum(axis=1, keepdims=True)))[:, 0]
        return (lse - x[xp.arange(rows), target]).mean()

    p, m, v = x.copy(), xp.zeros_like(x), xp.zeros_like(x)

    def adam_chain():
        m[...] = 0.9 * m + 0.1 * g
        v[...] = 0.999 * v + 0.001 * g * g
        p[...] = p - 0.01 / 0.1 * m / (xp.sqrt(v) / xp.sqrt(0.001) + 1e-8)
        return p

    def adam_fused():
        kernels.fused_adam_step(xp, p, g, m, v, step=1, lr=0.01, beta1=0.9, beta2=0.999, eps=1e-8)
        return p

    pairs = {
        "softmax": (lambda: kernels.fused_softmax(xp, x), softmax_chain),
        "layer_norm": (lambda: kernels.fused_layer_norm(xp, x, cols)[0], layer_norm_chain),
        "gelu": (lambda: kernels.fused_gelu(xp, x), gelu_chain),
        "cross_entropy": (
            lambda: kernels.fused_cross_entropy(xp, x, target)[0],
            cross_entropy_chain,
        ),
        "adam_step": (adam_fused, adam_chain),
    }
    rows_out = []
    for name, (fused, chain) in pairs.items():
        row = {"kernel": name, "shape": [rows, cols]}
        if name != "adam_step":
            row["max_abs_diff"] = float(xp.abs(fused() - chain()).max())
        row["fused_ms"] = _median_time(fused, ember, "cuda", repeats) * 1e3
        row["chain_ms"] = _median_time(chain, ember, "cuda", repeats) * 1e3
        rows_out.append(row)
        print(json.dumps(row), flush=True)
    return rows_out


def _header(device: str) -> dict:
    import ember

    info = {
        "python": platform.python_version(),
        "machine": platform.machine(),
        "numpy": np.__version__,
        "device": device,
    }
    if device == "cuda" and ember.cuda.is_available():
        info["gpu"] = ember.cuda.get_device_name()
        info["capability"] = ".".join(map(str, ember.cuda.get_device_capability()))
        info["bf16_supported"] = ember.cuda.is_bf16_supported()
        import cupy

        info["cupy"] = cupy.__version__
    try:
        import torch

        info["torch"] = torch.__version__
    except ImportError:
        pass
    return info


def _safe(fn, *args) -> dict:
    """Run one measurement; a failure (an unsupported dtype, say) is recorded, not fatal."""
    try:
        return fn(*args)
    except Exception as exc:  # noqa: BLE001 - the message goes into the results
        return {"error": f"{type(exc).__name__}: {str(exc).splitlines()[0][:160]}"}


def run(args) -> dict:
    device = args.device
    if device == "cuda":
        import ember

        if not ember.cuda.is_available():
            sys.exit("gpu_bench: ember sees no CUDA GPU (is CuPy installed?)")
    size = args.size or (8192 if device == "cuda" else (512 if args.quick else 2048))
    batches = [32, 512] if args.quick else [32, 512, 4096]
    repeats = 3 if args.quick else 10
    steps = 5 if args.quick else 20
    results: dict = {"header": _header(device), "matmul": [], "mlp": [], "fused": []}
    deadline = time.perf_counter() + args.budget
    for dtype_name in ("float32", "float16", "bfloat16"):
        variants = [False] if dtype_name == "float32" else [False, True]
        for autocast in variants:
            for name, lib in _libraries(device):
                if time.perf_counter() > deadline:
                    break
                if device == "cpu" and dtype_name == "float16" and not autocast and size > 1024:
                    # NumPy's float16 matmul has no BLAS: one run of a large one takes minutes
                    results["matmul"].append(
                        {
                            "lib": name,
                            "dtype": dtype_name,
                            "autocast": autocast,
                            "size": size,
                            "skipped": "float16 GEMM without BLAS on the CPU",
                        }
                    )
                    continue
                row = _safe(bench_matmul, lib, device, size, dtype_name, repeats, autocast)
                row.update(lib=name, dtype=dtype_name, autocast=autocast, size=size)
                results["matmul"].append(row)
                print(json.dumps(row), flush=True)
    if device == "cuda" and time.perf_counter() < deadline:
        fused = _safe(bench_fused, 8192, 4096 if not args.quick else 1024, repeats)
        results["fused"] = fused if isinstance(fused, list) else [fused]
    for batch in batches:
        for amp in (False, True):
            for name, lib in _libraries(device):
                if time.perf_counter() > deadline:
                    break
                row = _safe(bench_mlp, lib, device, batch, amp, steps)
                row.update(lib=name, batch=batch, amp=amp)
                results["mlp"].append(row)
                print(json.dumps(row), flush=True)
    return results


def to_markdown(results: dict) -> str:
    head = ", ".join(f"{k} {v}" for k, v in results["header"].items())
    lines = [f"gpu_bench: {head}", "", "| matmul | lib | dtype | autocast | TFLOP/s | ms |"]
    lines.append("|---|---|---|---|---|---|")
    for r in results["matmul"]:
        if "seconds" in r:
            cells = f"{r['tflops']:.2f} | {r['seconds'] * 1e3:.2f}"
        else:
            cells = f"{r.get('error') or r.get('skipped')} | "
        lines.append(f"| {r['size']}² | {r['lib']} | {r['dtype']} | {r['autocast']} | {cells} |")
    lines += [
        "",
        "| MLP 784-512-512-10 step | lib | batch | AMP | ms/step |",
        "|---|---|---|---|---|",
    ]
    for r in results["mlp"]:
        cell = f"{r['ms_per_step']:.2f}" if "ms_per_step" in r else r["error"]
        lines.append(f"| | {r['lib']} | {r['batch']} | {r['amp']} | {cell} |")
    if results.get("fused"):
        lines += ["", "| fused kernel | shape | fused ms | CuPy chain ms | max abs diff |"]
        lines.append("|---|---|---|---|---|")
        for r in results["fused"]:
            if "error" in r:
                lines.append(f"| | | {r['error']} | | |")
                continue
            shape = "x".join(map(str, r["shape"]))
            diff = f"{r['max_abs_diff']:.2e}" if "max_abs_diff" in r else ""
            lines.append(
                f"| {r['kernel']} | {shape} | {r['fused_ms']:.3f} | {r['chain_ms']:.3f} | {diff} |"
            )
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    parser.add_argument("--out", default="gpu_bench_out")
    parser.add_argument("--size", type=int, default=0, help="matmul size (default 8192 on cuda)")
    parser.add_argument("--quick", action="store_true", help="small sizes, few repeats")
    parser.add_argument("--budget", type=float, default=300.0, help="seconds before skipping")
    args = parser.parse_args(argv)
    results = run(args)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps(results, indent=2))
    (out / "results.md").write_text(to_markdown(results))
    print(to_markdown(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
