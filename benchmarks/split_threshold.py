"""From how many elements splitting a ufunc over ember's pool pays, per op class.

Run::

    .venv/bin/python benchmarks/split_threshold.py [--threads 2] [--repeats 30] [--dtype float32]

For each op class of ``ember._backend.SPLIT_FROM`` and each size (2^14 to 2^22 elements) it
times one NumPy call against ``_backend.split_ufunc`` (forced to split), alternating the two
call by call, and prints the ratios split / single of the medians and of the minima (below 1:
splitting pays; on a busy machine the minima stand for its quiet moments).
To imitate the AVX2 family on an AVX-512 machine set ``NPY_DISABLE_CPU_FEATURES`` to the AVX-512
features NumPy lists (``python -c "import numpy; numpy.show_runtime()"``), plus
``NUMBA_CPU_NAME=haswell OPENBLAS_CORETYPE=Haswell`` for the compiled kernels and the BLAS.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import numpy as np

import ember
from ember import _backend


def _classes(dtype):
    rng = np.random.default_rng(0)

    def data(n):
        return rng.standard_normal(n).astype(dtype)

    scalar = np.asarray(1.01, dtype)
    return {
        "binary": (lambda n: (np.multiply, data(n), scalar), "x * 1.01"),
        "binary2": (lambda n: (np.add, data(n), data(n)), "x + y"),
        "unary": (lambda n: (np.negative, data(n)), "-x"),
        "costly": (lambda n: (np.tanh, data(n)), "tanh(x)"),
        "costly-exp": (lambda n: (np.exp, data(n)), "exp(x)"),
        "compare": (lambda n: (np.greater, data(n), data(n)), "x > y"),
    }


def _time(fn, repeats: int) -> tuple[float, ...]:
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return samples


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=ember.get_num_threads())
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--dtype", default="float32")
    parser.add_argument("--sizes", default="14,15,16,17,18,19,20,21,22", help="powers of two")
    args = parser.parse_args()
    ember.set_num_threads(args.threads)
    dtype = np.dtype(args.dtype)
    sizes = [1 << int(p) for p in args.sizes.split(",")]
    print(
        f"threads {args.threads}, {dtype}, load {os.getloadavg()[0]:.2f}, "
        f"NPY_DISABLE_CPU_FEATURES={os.environ.get('NPY_DISABLE_CPU_FEATURES', '')!r}"
    )
    print(
        f"{'class':<12}{'op':<10}" + "".join(f"{'2^' + str(n.bit_length() - 1):>8}" for n in sizes)
    )
    rows = dict(_classes(dtype))
    rows["reduce"] = (
        lambda n: (None, np.random.default_rng(0).standard_normal(n).astype(dtype)),
        "sum(x)",
    )
    rows["reduce-rows"] = (
        lambda n: (
            None,
            np.random.default_rng(0).standard_normal((n // 1024, 1024)).astype(dtype),
            1,
        ),
        "sum(x, 1)",
    )
    for name, (make, label) in rows.items():
        ratios = []
        for n in sizes:
            ufunc, *operands = make(n)
            if ufunc is None:
                data = operands[0]
                dims = tuple(range(data.ndim)) if len(operands) == 1 else (operands[1],)

                def single(data=data, dims=dims):
                    return np.add.reduce(data, dims)

                def split(data=data, dims=dims):
                    return _backend.split_reduce(np.add, data, dims, False, min_size=1)
            else:

                def single(ufunc=ufunc, operands=operands):
                    return ufunc(*operands)

                def split(ufunc=ufunc, operands=operands):
                    return _backend.split_ufunc(ufunc, *operands, min_size=1)

            one, two = [], []
            for _ in range(args.repeats):  # alternate, so that load changes hit both alike
                one += _time(single, 1)
                two += _time(split, 1)
            ratios.append((statistics.median(two) / statistics.median(one), min(two) / min(one)))
        cells = "".join(f"{f'{med:.2f}/{low:.2f}':>11}" for med, low in ratios)
        print(f"{name:<12}{label:<10}" + cells)


if __name__ == "__main__":
    main()
