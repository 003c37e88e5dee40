"""DataLoader: batches from a dataset, with PyTorch's default collation."""

from __future__ import annotations

import collections.abc
import itertools
import multiprocessing
import numbers
import warnings

from ... import _backend
from ..._tensor import Tensor
from ._fetch import create_fetcher
from .dataset import IterableDataset
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
    """Iterate over ``dataset`` in batches, in this process or in ``num_workers`` processes.

    With ``num_workers > 0`` each worker (forked on Linux; ``multiprocessing_context`` picks
    another start method) builds whole batches, which reach this process through shared
    memory and in the sampler's order. Worker ``i`` seeds ember's generator, ``random`` and
    NumPy from ``base_seed + i``, ``base_seed`` drawn from ``generator`` (or ember's default
    generator) when iteration starts, as torch does.

    Example::
        >>> ds = ember.utils.data.TensorDataset(ember.arange(10.0), ember.arange(10))
        >>> for x, y in ember.utils.data.DataLoader(ds, batch_size=4, shuffle=True):
        ...     pass
        >>> loader = ember.utils.data.DataLoader(ds, batch_size=4, num_workers=2)
        >>> [x.tolist() for x, _ in loader][0]
        [0.0, 1.0, 2.0, 3.0]
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
        if num_workers < 0:
            raise ValueError(
                "num_workers option should be non-negative; "
                "use num_workers=0 to disable multiprocessing."
            )
        if timeout < 0:
            raise ValueError("timeout option should be non-negative")
        if num_workers == 0 and prefetch_factor is not None:
            raise ValueError(
                "prefetch_factor option could only be specified in multiprocessing."
                "let num_workers > 0 to enable multiprocessing, otherwise set prefetch_factor "
                "to None."
            )
        elif num_workers > 0 and prefetch_factor is None:
            prefetch_factor = 2
        elif prefetch_factor is not None and prefetch_factor < 0:
            raise ValueError("prefetch_factor option should be non-negative")
        if persistent_workers and num_workers == 0:
            raise ValueError("persistent_workers option needs num_workers > 0")
        self.dataset = dataset
        self.num_workers = num_workers
        self.prefetch_factor = prefetch_factor
        # batches are ordinary CPU arrays: there is no page-locked memory to pin them into
        self.pin_memory = pin_memory
        self.pin_memory_device = pin_memory_device
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.multiprocessing_context = multiprocessing_context
        self.persistent_workers = persistent_workers
        self._iterator = None  # the persistent workers' iterator, reused each epoch
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

    @property
    def multiprocessing_context(self):
        return self._multiprocessing_context

    @multiprocessing_context.setter
    def multiprocessing_context(self, multiprocessing_context) -> None:
        if multiprocessing_context is not None:
            if self.num_workers == 0:
                raise ValueError(
                    "multiprocessing_context can only be used with multi-process loading "
                    f"(num_workers > 0), but got num_workers={self.num_workers}"
                )
            if isinstance(multiprocessing_context, str):
                valid_start_methods = multiprocessing.get_all_start_methods()
                if multiprocessing_context not in valid_start_methods:
                    raise ValueError(
                        "multiprocessing_context option should specify a valid start method "
                        f"in {valid_start_methods!r}, but got "
                        f"multiprocessing_context={multiprocessing_context!r}"
                    )
                multiprocessing_context = multiprocessing.get_context(multiprocessing_context)
            if not isinstance(multiprocessing_context, multiprocessing.context.BaseContext):
                raise TypeError(
                    "multiprocessing_context option should be a valid context object or a "
                    "string specifying the start method, but got "
                    f"multiprocessing_context={multiprocessing_context}"
                )
        self._multiprocessing_context = multiprocessing_context

    @property
    def _auto_collation(self) -> bool:
        return self.batch_sampler is not None or (self._iterable and self.batch_size is not None)

    @property
    def _index_sampler(self):
        """What each fetch is given: a batch of indices, an index, or placeholders for a stream."""
        if self._iterable:
            return _StreamSampler(self.batch_size)
        return self.batch_sampler if self.batch_sampler is not None else self.sampler

    def _draw_base_seed(self) -> int:
        # torch draws it at every iter(), workers or not: the random streams stay in step
        from ... import _creation

        return _creation.empty((), dtype="int64").random_(generator=self.generator).item()

    def __iter__(self):
        if self.pin_memory:
            # ember.accelerator.is_available()'s own answer, from the device map a layer down
            if not _backend.cuda_available():
                warnings.warn(
                    "'pin_memory' argument is set as true but no accelerator is found, "
                    "then device pinned memory won't be used.",
                    stacklevel=2,
                )
        if self.num_workers == 0:
            return _SingleProcessDataLoaderIter(self)
        from ._multiprocessing_iter import (
            _MultiProcessingDataLoaderIter,
            warn_if_more_workers_than_cpus,
        )

        if self._iterator is None or not self.persistent_workers:
            warn_if_more_workers_than_cpus(self.num_workers)
        if not self.persistent_workers:
            return _MultiProcessingDataLoaderIter(self)
        if self._iterator is None or self._iterator._shutdown:
            self._iterator = _MultiProcessingDataLoaderIter(self)
        else:
            self._iterator._reset()
        return self._iterator

    def __len__(self) -> int:
        if self._iterable:
            n = len(self.dataset)
            if self.batch_size is None:
                return n
            return n // self.batch_size if self.drop_last else -(-n // self.batch_size)
        if self.batch_sampler is not None:
            return len(self.batch_sampler)
        return len(self.sampler)


def _length_of(loader):
    """``len(loader)``, or None for a stream whose dataset has no length."""
    try:
        return len(loader)
    except TypeError:
        return None


class _StreamSampler:
    """An IterableDataset's endless "indices": None per sample, or a list of batch_size Nones."""

    def __init__(self, batch_size):
        self.batch_size = batch_size

    def __iter__(self):
        if self.batch_size is None:
            return itertools.repeat(None)
        return itertools.repeat([None] * self.batch_size)


class _BaseDataLoaderIter:
    """What both iterators share: each is its own iterator, with the loader's length (the
    subclass sets ``_length``, None where the dataset has none, and ``_dataset``)."""

    def __iter__(self):
        return self

    def __len__(self) -> int:
        if self._length is None:
            raise TypeError(f"object of type '{type(self._dataset).__name__}' has no len()")
        return self._length


class _SingleProcessDataLoaderIter(_BaseDataLoaderIter):
    """Batches built in this process, one per ``next``."""

    def __init__(self, loader: DataLoader):
        self._length = _length_of(loader)
        self._dataset = loader.dataset
        self._base_seed = loader._draw_base_seed()
        self._sampler_iter = iter(loader._index_sampler)
        self._fetcher = create_fetcher(
            loader._iterable,
            loader.dataset,
            loader._auto_collation,
            loader.collate_fn,
            loader.drop_last,
        )

    def __next__(self):
        return self._fetcher.fetch(next(self._sampler_iter))
