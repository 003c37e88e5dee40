"""Fetchers: one batch (or sample) from a dataset, alike in the main process and in workers."""

from __future__ import annotations

import numpy as np

from ..._tensor import Tensor
from .dataset import TensorDataset


class _MapDatasetFetcher:
    """``dataset[i]`` for each index of a batch, then ``collate_fn``."""

    def __init__(self, dataset, auto_collation: bool, collate_fn, drop_last: bool):
        from .dataloader import default_collate

        self.dataset, self.auto_collation, self.collate_fn = dataset, auto_collation, collate_fn
        # stacking the rows of a TensorDataset is indexing it with the batch's indices
        self.index_whole_batch = collate_fn is default_collate and type(dataset) is TensorDataset

    def fetch(self, possibly_batched_index):
        if not self.auto_collation:
            return self.collate_fn(self.dataset[possibly_batched_index])
        if self.index_whole_batch:
            index = _index_tensor(list(possibly_batched_index))
            return [t[index] for t in self.dataset.tensors]
        getitems = getattr(self.dataset, "__getitems__", None)
        if getitems:
            return self.collate_fn(getitems(possibly_batched_index))
        return self.collate_fn([self.dataset[i] for i in possibly_batched_index])


class _IterableDatasetFetcher:
    """The next ``len(batch)`` items of the dataset's iterator; StopIteration once it is empty."""

    def __init__(self, dataset, auto_collation: bool, collate_fn, drop_last: bool):
        self.dataset_iter = iter(dataset)
        self.auto_collation, self.collate_fn, self.drop_last = auto_collation, collate_fn, drop_last
        self.ended = False

    def fetch(self, possibly_batched_index):
        if self.ended:
            raise StopIteration
        if not self.auto_collation:
            return self.collate_fn(next(self.dataset_iter))
        data = []
        for _ in possibly_batched_index:
            try:
                data.append(next(self.dataset_iter))
            except StopIteration:
                self.ended = True
                break
        if not data or (self.drop_last and len(data) < len(possibly_batched_index)):
            raise StopIteration
        return self.collate_fn(data)


_INT_ONLY = {int}


def _index_tensor(indices: list):
    """The batch's indices as an int64 tensor; Python ints (every built-in sampler's) go
    straight to NumPy, a seventh of ``ember.tensor``'s cost for a list."""
    if set(map(type, indices)) == _INT_ONLY:
        return Tensor._wrap(np.array(indices, dtype=np.int64))
    from ... import _creation

    return _creation.tensor(indices, dtype="int64")


def create_fetcher(iterable: bool, dataset, auto_collation: bool, collate_fn, drop_last: bool):
    kind = _IterableDatasetFetcher if iterable else _MapDatasetFetcher
    return kind(dataset, auto_collation, collate_fn, drop_last)
