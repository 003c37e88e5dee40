"""ember.distributed on 2 ranks over loopback: allreduce against raw mpi4py on the same
buffers and communicator, DDP step time on 1 and 2 ranks (scaling efficiency), and time to the
first step.

    uv run python benchmarks/distributed.py [--repeats 20]

Both ranks share this machine's cores, so the scaling efficiency is bounded by them (a 2-core
machine gives 2 ranks one core each); each rank runs with one BLAS thread.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import sys
import tempfile
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

SIZES_MB = (1, 10, 67)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _median_ms(run, repeats: int) -> float:
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        samples.append((time.perf_counter() - start) * 1e3)
    return statistics.median(samples)


def _mlp(ember):
    nn = ember.nn
    ember.manual_seed(0)
    return nn.Sequential(
        nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10)
    )


def _ddp_step_ms(ember, model, rows: int, repeats: int) -> float:
    import numpy as np

    rng = np.random.default_rng(0)
    x = ember.tensor(rng.standard_normal((rows, 784)).astype(np.float32))
    y = ember.tensor(rng.integers(0, 10, rows))
    opt = ember.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)

    def step():
        opt.zero_grad()
        ember.nn.functional.cross_entropy(model(x), y).backward()
        opt.step()

    for _ in range(3):
        step()
    return _median_ms(step, repeats)


def _rank(rank: int, out: str, repeats: int, started: float) -> None:
    import numpy as np

    import ember
    import ember.distributed as dist
    from ember.nn.parallel import DistributedDataParallel as DDP

    t0 = time.perf_counter()
    dist.init_process_group("gloo")
    init_ms = (time.perf_counter() - t0) * 1e3
    comm = dist.group.WORLD.comm if dist.group.WORLD is not None else None
    if comm is None:
        from ember.distributed.collectives import _default_group

        comm = _default_group().comm
    rows = {}
    for mb in SIZES_MB:
        n = mb * 2**20 // 4
        data = np.ones(n, np.float32)
        raw = data.copy()
        t = ember.from_numpy(data)
        from mpi4py import MPI

        def ours(t=t):
            dist.all_reduce(t)

        def theirs(raw=raw):  # in place, as all_reduce
            comm.Allreduce(MPI.IN_PLACE, raw, op=MPI.SUM)

        ember_ms, raw_ms = [], []
        for _ in range(3):  # alternate the two, several rounds
            dist.barrier()
            ember_ms.append(_median_ms(ours, repeats))
            dist.barrier()
            raw_ms.append(_median_ms(theirs, repeats))
        rows[mb] = (statistics.median(ember_ms), statistics.median(raw_ms))
    t0 = time.perf_counter()
    model = DDP(_mlp(ember))
    wrap_ms = (time.perf_counter() - t0) * 1e3
    first = time.perf_counter()
    ddp_ms = _ddp_step_ms(ember, model, 512 // dist.get_world_size(), repeats)
    if rank == 0:
        with open(out, "w") as f:
            json.dump(
                {
                    "allreduce": rows,
                    "ddp_2_ranks_ms": ddp_ms,
                    "init_ms": init_ms,
                    "wrap_ms": wrap_ms,
                    "spawn_to_first_step_s": first - started,
                },
                f,
            )
    dist.destroy_process_group()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=20)
    args = parser.parse_args()
    import ember
    import ember.multiprocessing as mp

    one_rank_ms = _ddp_step_ms(ember, _mlp(ember), 512, args.repeats)
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(_free_port()))
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "result.json")
        mp.spawn(_rank, args=(out, args.repeats, time.perf_counter()), nprocs=2, timeout=600)
        with open(out) as f:
            result = json.load(f)
    threads = os.environ["OPENBLAS_NUM_THREADS"]
    print(f"load average: {os.getloadavg()}; OPENBLAS_NUM_THREADS={threads}")
    print("| allreduce, 2 ranks | ember | raw mpi4py | ember above raw |")
    print("|---|---|---|---|")
    for mb, (ours, raw) in result["allreduce"].items():
        print(
            f"| {mb} MB float32 | {ours:.3f} ms | {raw:.3f} ms | {100 * (ours / raw - 1):+.1f} % |"
        )
    two = result["ddp_2_ranks_ms"]
    print(
        f"\nDDP MLP 784-512-512-10, global batch 512: {one_rank_ms:.1f} ms on 1 rank, "
        f"{two:.1f} ms on 2 (scaling efficiency {100 * one_rank_ms / (2 * two):.0f} %)"
    )
    print(
        f"time to first step: init_process_group {result['init_ms']:.0f} ms, DDP wrap "
        f"{result['wrap_ms']:.0f} ms; spawn to the first step "
        f"{result['spawn_to_first_step_s']:.2f} s (includes the allreduce measurements)"
    )


if __name__ == "__main__":
    sys.exit(main())
