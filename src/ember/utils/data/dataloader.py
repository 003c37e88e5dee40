"""DataLoader: batches from a dataset, with PyTorch's default collation."""

from __future__ import annotations

import collections.abc
import numbers

from ..._tensor import Tensor
from .dataset import IterableDataset, TensorDataset
from .sampler import BatchSampler, RandomSampler, SequentialSampler


def default_collate(batch):
    """Stack tensors, turn numbers into tensors, and recurse into tuples, lists and dicts."""
    from ... import _creation
    from ...ops.shape import stack

    first = batch[0]
    if isinstance(first, Tensor):
        return stack(list(batch), 0)
    if hasattr(first, "__array_interface__") and not isinstance(first, (str, bytes)):
        return stack([_creation.as_tensor(b) for b in batch], 0)
    if isinstance(first, bool):
        return _creation.tensor(list(batch))
    if isinstance(first, numbers.Integral):
        return _creation.tensor(list(batch), dtype="int64")
    if isinstance(first, numbers.Real):
        return _creation.tensor(list(batch), dtype="float64")
    if isinstance(first, (str, bytes)):
        return list(batch)
    if isinstance(first, collections.abc.Mapping):
        collated = {key: default_collate([d[key] for d in batch]) for key in first}
        try:
            return type(first)(collated)  # keep OrderedDict and friends
        except TypeError:
            return collated
    if isinstance(first, tuple) and hasattr(first, "_fields"):  # namedtuple
        return type(first)(*(default_collate(list(s)) for s in zip(*batch)))
    if isinstance(first, collections.abc.Sequence):
        lengths = {len(s) for s in batch}
        if len(lengths) != 1:
            raise RuntimeError("each element in list of batch should be of equal size")
        # a list for tuples too, as PyTorch does ("backwards compatibility")
        return [default_collate(list(s)) for s in zip(*batch)]
    raise TypeError(
        "default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; "
        f"found {type(first)}"
    )


def default_convert(data):
    return data


class DataLoader:
    """Iterate over ``dataset`` in batches.

    Example::
        >>> ds = ember.utils.data.TensorDataset(ember.arange(10.0), ember.arange(10))
        >>> for x, y in ember.utils.data.DataLoader(ds, batch_size=4, shuffle=True):
        ...     pass
    """

    def __init__(
        self,
        dataset,
        batch_size=1,
        shuffle=None,
        sampler=None,
        batch_sampler=None,
        num_workers: int = 0,
        collate_fn=None,
        pin_memory: bool = False,
        drop_last: bool = False,
        timeout: float = 0,
        worker_init_fn=None,
        multiprocessing_context=None,
        generator=None,
        *,
        prefetch_factor=None,
        persistent_workers: bool = False,
        pin_memory_device: str = "",
    ):
        self.dataset = dataset
        self.num_workers = num_workers  # batches are built in this process
        self.generator = generator
        self._iterable = isinstance(dataset, IterableDataset)
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError(
                    "batch_sampler option is mutually exclusive with batch_size, shuffle, "
                    "sampler, and drop_last"
                )
            batch_size, drop_last = None, False
        elif batch_size is None and drop_last:
            raise ValueError(
                "batch_size=None option disables auto-batching and is mutually "
                "exclusive with drop_last"
            )
        if self._iterable:
            if shuffle:
                raise ValueError(
                    f"DataLoader with IterableDataset: expected unspecified shuffle option, but "
                    f"got shuffle={shuffle}"
                )
            if sampler is not None or batch_sampler is not None:
                raise ValueError("DataLoader with IterableDataset: expected unspecified sampler")
        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if sampler is None and not self._iterable:
            sampler = (
                RandomSampler(dataset, generator=generator)
                if shuffle
                else SequentialSampler(dataset)
            )
        if batch_size is not None and batch_sampler is None and not self._iterable:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)
        self.batch_size, self.drop_last = batch_size, drop_last
        self.sampler, self.batch_sampler = sampler, batch_sampler
        self.collate_fn = collate_fn or (
            default_collate
            if batch_size is not None or batch_sampler is not None
            else default_convert
        )

    def __iter__(self):
        if self._iterable:
            yield from self._iter_stream()
            return
        if self.batch_sampler is None:
            for idx in self.sampler:
                yield self.collate_fn(self.dataset[idx])
            return
        if self.collate_fn is default_collate and type(self.dataset) is TensorDataset:
            # stacking the rows of a TensorDataset is indexing it with the batch's indices
            from ... import _creation

            tensors = self.dataset.tensors
            for indices in self.batch_sampler:
                index = _creation.tensor(list(indices), dtype="int64")
                yield [t[index] for t in tensors]
            return
        for indices in self.batch_sampler:
            yield self.collate_fn([self.dataset[i] for i in indices])

    def _iter_stream(self):
        if self.batch_size is None:
            for item in self.dataset:
                yield self.collate_fn(item)
            return
        batch = []
        for item in self.dataset:
            batch.append(item)
            if len(batch) == self.batch_size:
                yield self.collate_fn(batch)
                batch = []
        if batch and not self.drop_last:
            yield self.collate_fn(batch)

    def __len__(self) -> int:
        if self._iterable:
            n = len(self.dataset)
            if self.batch_size is None:
                return n
            return n // self.batch_size if self.drop_last else -(-n // self.batch_size)
        if self.batch_sampler is not None:
            return len(self.batch_sampler)
        return len(self.sampler)
