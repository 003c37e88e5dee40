"""Small datasets shipped inside ember (no download)."""

from __future__ import annotations

import gzip
from importlib import resources

import numpy as np

from .._creation import tensor
from ..utils.data import TensorDataset


def load_digits():
    """The 8×8 handwritten digits (1,797 images, 10 classes).

    Returns ``(images, labels)``: a uint8 tensor of shape (1797, 8, 8) with pixel values 0–16
    and an int64 tensor of labels. Origin and licence: ``ember/datasets/data/README.md``.

    Example::
        >>> images, labels = ember.datasets.load_digits()
        >>> images.shape, labels[:5].tolist()
        (ember.Size([1797, 8, 8]), [0, 1, 2, 3, 4])
    """
    raw = resources.files(__package__).joinpath("data/digits.csv.gz").read_bytes()
    table = np.loadtxt(gzip.decompress(raw).decode().splitlines(), delimiter=",")
    images = table[:, :64].astype(np.uint8).reshape(-1, 8, 8)
    labels = table[:, 64].astype(np.int64)
    return tensor(images), tensor(labels)


def digits_dataset(split: str = "all", test_fraction: float = 0.2, seed: int = 0):
    """Digits as a TensorDataset of (float image (1, 8, 8) scaled to [0, 1], label).

    ``split`` is 'train', 'test' or 'all'; the split is stratified by nothing but a seeded
    permutation, so it is the same on every machine.
    """
    images, labels = load_digits()
    x = (images.float() / 16.0).unsqueeze(1)
    order = np.random.default_rng(seed).permutation(len(labels))
    n_test = int(round(len(order) * test_fraction))
    picks = {"test": order[:n_test], "train": order[n_test:], "all": order}[split]
    index = tensor(picks)
    return TensorDataset(x[index], labels[index])
