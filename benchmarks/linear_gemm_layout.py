"""Which way round OpenBLAS runs linear's GEMMs fastest, on one and two threads.

Run::

    python benchmarks/linear_gemm_layout.py [--rows 8,32,128,512] [--repeats 200]
    OPENBLAS_CORETYPE=Haswell python benchmarks/linear_gemm_layout.py   # the AVX2 kernels

For y = x Wᵀ (x: rows x in, W: out x in, both C-contiguous) and the input gradient g W, each
either as written or as the transposed product (W xᵀ, then its transpose copied into a
C-contiguous result; Wᵀ gᵀ likewise), prints the per-call minimum in microseconds (on a shared
machine the minimum is the machine's own speed) and the ratio transposed / as written.
"""

from __future__ import annotations

import argparse
import time

import numpy as np


def best(fn, repeats: int) -> float:
    fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times) * 1e6


def products(x, w, g) -> tuple:
    """x Wᵀ and g W, each as written and as the transposed product copied into C order."""
    return (
        lambda: x @ w.T,
        lambda: np.ascontiguousarray((w @ x.T).T),
        lambda: g @ w,
        lambda: np.ascontiguousarray((w.T @ g.T).T),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", default="8,32,128,512")
    parser.add_argument("--features", default="128x128,512x512,784x512,512x10,1024x4096,4096x1024")
    parser.add_argument("--repeats", type=int, default=200)
    parser.add_argument("--dtype", default="float32")
    args = parser.parse_args()
    from threadpoolctl import threadpool_info, threadpool_limits

    info = [(i["internal_api"], i.get("architecture"), i["num_threads"]) for i in threadpool_info()]
    print("BLAS:", info)
    rng = np.random.default_rng(0)
    print(
        f"{'rows':>5} {'in x out':>10} {'th':>2}  {'xWt':>7} {'(Wxt)t':>7} {'ratio':>5}"
        f"  {'g@W':>7} {'(Wtgt)t':>7} {'ratio':>5}"
    )
    for rows in (int(r) for r in args.rows.split(",")):
        for pair in args.features.split(","):
            n_in, n_out = (int(v) for v in pair.split("x"))
            x = rng.standard_normal((rows, n_in)).astype(args.dtype)
            w = rng.standard_normal((n_out, n_in)).astype(args.dtype)
            g = rng.standard_normal((rows, n_out)).astype(args.dtype)
            repeats = max(5, min(args.repeats, int(args.repeats * 4e6 / (rows * n_in * n_out))))
            for threads in (1, 2):
                with threadpool_limits(threads, user_api="blas"):
                    plain, swapped, g_plain, g_swapped = (
                        best(product, repeats) for product in products(x, w, g)
                    )
                print(
                    f"{rows:5d} {pair:>10} {threads:2d}  {plain:7.0f} {swapped:7.0f} "
                    f"{swapped / plain:5.2f}  {g_plain:7.0f} {g_swapped:7.0f} "
                    f"{g_swapped / g_plain:5.2f}"
                )


if __name__ == "__main__":
    main()
