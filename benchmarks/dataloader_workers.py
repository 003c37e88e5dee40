"""DataLoader with 0 and 2 worker processes on an image-like dataset with a slow ``__getitem__``.

Each sample spends about 1 ms in pure Python (decoding stands in for JPEG decoding and
augmentation) and returns a 3x64x64 float32 image and a label. The epoch time with 2 workers
includes starting them. Run: ``uv run python benchmarks/dataloader_workers.py [--samples N]``.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

import ember
from ember.utils.data import DataLoader, Dataset


class SlowImages(Dataset):
    """``n`` 3x64x64 images; building each costs ``work_ms`` of Python."""

    def __init__(self, n: int, work_ms: float = 1.0):
        self.n, self.work_ms = n, work_ms
        self.base = np.random.default_rng(0).random((3, 64, 64), dtype=np.float32)

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i):
        deadline = time.perf_counter() + self.work_ms / 1000
        checksum = 0
        while time.perf_counter() < deadline:  # Python-level work holding the GIL
            checksum = (checksum * 31 + i) % 1_000_003
        return ember.tensor(self.base * (i % 7)), i


def epoch_seconds(loader: DataLoader) -> float:
    start = time.perf_counter()
    count = 0
    for _images, labels in loader:
        count += labels.shape[0]
    assert count == len(loader.dataset)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=1024)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    dataset = SlowImages(args.samples)
    load = os.getloadavg()[0]
    print(f"{os.cpu_count()} cores, load average {load:.2f} before the run (2 workers need 2 idle)")
    times = {0: float("inf"), 2: float("inf")}
    for _ in range(args.repeats):  # interleaved, best of each: other load on the machine hits both
        for workers in times:
            loader = DataLoader(dataset, batch_size=args.batch_size, num_workers=workers)
            times[workers] = min(times[workers], epoch_seconds(loader))
    for workers in times:
        rate = args.samples / times[workers]
        print(f"num_workers={workers}: {times[workers]:.3f} s per epoch, {rate:,.0f} samples/s")
    print(f"speed-up with 2 workers: {times[0] / times[2]:.2f}x (target 1.8x)")


if __name__ == "__main__":
    main()
