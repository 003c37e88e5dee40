"""A benchmark script as PyTorch's benchmark recipe writes one: time ops over sizes and thread
counts, pickle the results as if from worker processes, compare them in a table, and time
fuzzed inputs. tests/utils/benchmark/test_package.py runs it with ember and with torch."""

import pickle

import ember as torch
import ember.utils.benchmark as benchmark


def main(min_run_time: float = 0.001):
    results = []
    for n in (1, 32):
        x = torch.ones(n, n)
        for num_threads in (1, 2):
            for sub_label, stmt in (("add", "x + x"), ("matmul", "x @ x")):
                timer = benchmark.Timer(
                    stmt=stmt,
                    globals={"x": x},
                    label="elementwise vs matmul",
                    sub_label=sub_label,
                    description=f"n={n}",
                    num_threads=num_threads,
                )
                results.append(timer.blocked_autorange(min_run_time=min_run_time))

    single = benchmark.Timer("torch.relu(x)", setup="x = torch.randn(8)").timeit(100)
    adaptive = benchmark.Timer("y.sum()", globals={"y": torch.ones(16)}).adaptive_autorange(
        min_run_time=min_run_time, max_run_time=0.05
    )

    compare = benchmark.Compare([pickle.loads(pickle.dumps(m)) for m in results])
    compare.trim_significant_figures()
    compare.colorize()
    table = str(compare)

    fuzzer = benchmark.Fuzzer(
        parameters=[benchmark.FuzzedParameter("k", 4, 64, distribution="loguniform")],
        tensors=[benchmark.FuzzedTensor("x", size=("k", "k"), probability_contiguous=0.5)],
        seed=0,
    )
    fuzzed = []
    for tensors, properties, params in fuzzer.take(3):
        m = benchmark.Timer("x.sum()", globals=tensors).timeit(10)
        fuzzed.append((params["k"], properties["x"]["is_contiguous"], m.number_per_run))
    return results, single, adaptive, table, fuzzed
