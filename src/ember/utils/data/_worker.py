"""What runs inside a DataLoader worker process: seeding, ``get_worker_info`` and the fetch loop."""

from __future__ import annotations

import os
import pickle
import queue
import random
import sys
import traceback
from dataclasses import dataclass

from ._fetch import create_fetcher
from ._shared_batch import SharedPayload, share, unlink_segments

# how often a waiting worker checks that the main process is still there (seconds)
STATUS_CHECK_INTERVAL = 0.5

_worker_info = None


@dataclass(frozen=True)
class WorkerInfo:
    """The worker's id, the number of workers, its seed and its copy of the dataset."""

    id: int
    num_workers: int
    seed: int
    dataset: object


def get_worker_info() -> WorkerInfo | None:
    """Information about the DataLoader worker this runs in; None in the main process.

    ``id`` (0 to ``num_workers - 1``), ``num_workers``, ``seed`` (the seed given to ember's
    generator and to ``random`` in this worker) and ``dataset`` (this process's copy), as torch.
    An IterableDataset uses it to give each worker its own share of the data.

    Example::
        >>> class Numbers(ember.utils.data.IterableDataset):
        ...     def __iter__(self):
        ...         info = ember.utils.data.get_worker_info()
        ...         start, step = (0, 1) if info is None else (info.id, info.num_workers)
        ...         return iter(range(start, 10, step))
    """
    return _worker_info


class ExceptionWrapper:
    """An exception caught in a worker, re-raised in the main process with its traceback text."""

    def __init__(self, where: str):
        exc_type, exc_value, exc_traceback = sys.exc_info()
        self.exc_name = exc_type.__name__
        self.exc_msg = "".join(traceback.format_exception(exc_type, exc_value, exc_traceback))
        self.where = where
        try:  # a class the main process cannot import (defined in a function) becomes RuntimeError
            self.exc_type = pickle.loads(pickle.dumps(exc_type))
        except Exception:
            self.exc_type = RuntimeError

    def reraise(self):
        msg = f"Caught {self.exc_name} {self.where}.\nOriginal {self.exc_msg}"
        if self.exc_type is KeyError:
            msg = _KeyErrorMessage(msg)  # KeyError shows repr(): keep the traceback readable
        try:
            exception = self.exc_type(msg)
        except Exception:
            raise RuntimeError(msg) from None
        raise exception


class _KeyErrorMessage(str):
    def __repr__(self):
        return self


@dataclass(frozen=True)
class IterableDatasetStopIteration:
    """A worker's IterableDataset copy is exhausted."""

    worker_id: int


@dataclass(frozen=True)
class ResumeIteration:
    """Persistent workers start a new epoch."""


def generate_numpy_seed(base_seed: int, worker_id: int) -> list[int]:
    """torch's ``_generate_state``: NumPy's seed for a worker, a SeedSequence-style hash."""
    mask32 = 0xFFFFFFFF
    entropy = [worker_id, base_seed & mask32, base_seed >> 32, 0]
    hash_const_a = 0x43B0D7E5

    def hash32(value):
        nonlocal hash_const_a
        value = (value ^ hash_const_a) & mask32
        hash_const_a = (hash_const_a * 0x931E8875) & mask32
        value = (value * hash_const_a) & mask32
        return (value ^ (value >> 16)) & mask32

    def mix(x, y):
        result = ((0xCA01F9DD * x) - (0x4973F715 * y)) & mask32
        return (result ^ (result >> 16)) & mask32

    pool = [hash32(e) for e in entropy]
    for i_src in range(4):
        for i_dst in range(4):
            if i_src != i_dst:
                pool[i_dst] = mix(pool[i_dst], hash32(pool[i_src]))
    hash_const_b = 0x8B51F9DD
    state = []
    for value in pool:
        value = (value ^ hash_const_b) & mask32
        hash_const_b = (hash_const_b * 0x58F38DED) & mask32
        value = (value * hash_const_b) & mask32
        state.append((value ^ (value >> 16)) & mask32)
    return state


def _seed_worker(base_seed: int, worker_id: int) -> int:
    import numpy as np

    from ..._random import manual_seed

    seed = base_seed + worker_id
    random.seed(seed)
    manual_seed(seed)
    np.random.seed(generate_numpy_seed(base_seed, worker_id))
    return seed


def worker_loop(
    iterable: bool,
    state,
    index_queue,
    result_queue,
    done_event,
    base_seed: int,
    worker_id: int,
    num_workers: int,
    segment_prefix: str,
) -> None:
    """Fetch the batches named on ``index_queue`` and put them, shared, on ``result_queue``.

    ``state`` is (dataset, auto_collation, collate_fn, drop_last, worker_init_fn), or that
    tuple as a SharedPayload when the worker was spawned rather than forked. A message is
    ``(task index, payload)``; None ends the loop; ResumeIteration starts a new epoch.
    """
    global _worker_info
    manager_pid = os.getppid()
    where = f"in DataLoader worker process {worker_id}"
    try:
        if isinstance(state, SharedPayload):
            state = state.load(unlink=False)  # the main process unlinks it at shutdown
        dataset, auto_collation, collate_fn, drop_last, init_fn = state
        seed = _seed_worker(base_seed, worker_id)
        _worker_info = WorkerInfo(id=worker_id, num_workers=num_workers, seed=seed, dataset=dataset)
        init_exception = None
        try:
            if init_fn is not None:
                init_fn(worker_id)
            fetcher = create_fetcher(iterable, dataset, auto_collation, collate_fn, drop_last)
        except Exception:
            init_exception = ExceptionWrapper(where)
        iteration_end = False
        produced = 0
        while True:
            try:
                message = index_queue.get(timeout=STATUS_CHECK_INTERVAL)
            except queue.Empty:
                if done_event.is_set():  # shut down, and the final None went missing
                    break
                if os.getppid() != manager_pid:  # the main process died: clean up and go
                    unlink_segments(f"{segment_prefix}{worker_id}-")
                    return
                continue
            if isinstance(message, ResumeIteration):
                result_queue.put((message, None))
                iteration_end = False
                fetcher = create_fetcher(iterable, dataset, auto_collation, collate_fn, drop_last)
                continue
            if message is None:
                break
            if done_event.is_set() or iteration_end:
                continue
            task, index = message
            if init_exception is not None:
                data, init_exception = init_exception, None
            else:
                try:
                    batch = fetcher.fetch(index)
                    data = share(batch, f"{segment_prefix}{worker_id}-{produced}")
                    produced += 1
                    del batch
                except StopIteration:
                    if not iterable:
                        data = ExceptionWrapper(where)
                    else:
                        data = IterableDatasetStopIteration(worker_id)
                        iteration_end = True
                except Exception:
                    data = ExceptionWrapper(where)
            result_queue.put((task, data))
            del data, message, index
    except KeyboardInterrupt:
        pass  # the main process sees the interrupt too and shuts the workers down
    if done_event.is_set():
        # nobody will read what is still buffered: exit without waiting to flush it
        result_queue.cancel_join_thread()
        result_queue.close()
