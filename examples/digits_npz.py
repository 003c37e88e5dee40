"""The 8x8 digits as a plain NumPy file, so that the training examples read their data the
way any PyTorch script can (``numpy.load`` and ``torch.from_numpy``), with no library's
dataset API in between.

The numbers come from the CSV that ships inside ember (``ember/datasets/data``; origin and
licence in its README.md), read here with NumPy only.
"""

from __future__ import annotations

import gzip
from importlib import resources
from pathlib import Path

import numpy as np


def write_digits_npz(path: str | Path) -> Path:
    """Write ``images`` (uint8, (1797, 8, 8), values 0-16) and ``labels`` (int64) to ``path``
    (an ``.npz`` file); kept as it is when it already exists."""
    path = Path(path)
    if path.exists():
        return path
    raw = resources.files("ember.datasets").joinpath("data/digits.csv.gz").read_bytes()
    table = np.loadtxt(gzip.decompress(raw).decode().splitlines(), delimiter=",")
    path.parent.mkdir(parents=True, exist_ok=True)
    images = table[:, :64].astype(np.uint8).reshape(-1, 8, 8)
    labels = table[:, 64].astype(np.int64)
    np.savez_compressed(path, images=images, labels=labels)
    return path
