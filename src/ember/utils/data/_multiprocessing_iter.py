"""The DataLoader iterator that loads batches in worker processes (torch's design).

Each worker has its own index queue; all put results on one result queue. Batches are handed
out in the order the sampler produced them: a batch that arrives early waits in ``task_info``
until those before it are in. At most ``prefetch_factor * num_workers`` tasks are outstanding.
"""

from __future__ import annotations

import atexit
import itertools
import multiprocessing
import os
import queue
import sys
import time
import warnings
import weakref

from . import _worker
from ._shared_batch import SharedPayload, share, unlink_segments
from .dataloader import _BaseDataLoaderIter, _length_of

# how often the main process, while waiting for a batch, checks that the workers are alive
STATUS_CHECK_INTERVAL = 0.2
# how long a shutdown waits for a worker to exit before terminating it
JOIN_TIMEOUT = 2.0

_live_iterators: weakref.WeakSet = weakref.WeakSet()
# The queues of live iterators, held from outside the iterator: when a dropped iterator is
# collected as part of a reference cycle (an exception's traceback), the queues would otherwise
# be finalized in the same pass, before __del__ could send the workers their final None.
_queues_of_live_iterators: dict = {}
_iterator_count = itertools.count()


@atexit.register
def _shut_down_at_exit() -> None:
    # runs before multiprocessing's own exit handler (registered earlier): workers end cleanly
    for iterator in list(_live_iterators):
        iterator._shutdown_workers()


def default_context():
    """fork where the platform has it and it is safe (Linux), else the platform's default.

    fork starts a worker in milliseconds and hands it the dataset as it is: no pickling, so
    datasets holding ember tensors (which refuse pickle), lambdas as collate_fn and classes
    defined in ``__main__`` or inside functions all work, as with torch's default on Linux.
    """
    if sys.platform.startswith("linux"):
        return multiprocessing.get_context("fork")
    return multiprocessing.get_context()


def warn_if_more_workers_than_cpus(num_workers: int) -> None:
    """torch's warning when the workers outnumber the CPUs this process may run on."""
    cpuset_checked = hasattr(os, "sched_getaffinity")
    cpus = len(os.sched_getaffinity(0)) if cpuset_checked else os.cpu_count()
    if cpus is not None and num_workers <= cpus:
        return
    if cpus is None:
        suggestion = (
            "DataLoader is not able to compute a suggested max number of worker in current system."
        )
    else:
        cpuset_note = "" if cpuset_checked else " (`cpuset` is not taken into account)"
        suggestion = (
            f"Our suggested max number of worker in current system is {cpus}{cpuset_note}, "
            "which is smaller than what this DataLoader is going to create."
        )
    warnings.warn(
        f"This DataLoader will create {num_workers} worker processes in total. {suggestion} "
        "Please be aware that excessive worker creation might get DataLoader running slow or "
        "even freeze, lower the worker number to avoid potential slowness/freeze if necessary.",
        stacklevel=3,
    )


class _MultiProcessingDataLoaderIter(_BaseDataLoaderIter):
    def __init__(self, loader):
        if loader.prefetch_factor <= 0:
            raise AssertionError(
                "prefetch_factor must be greater than 0 for MultiProcessingDataLoaderIter"
            )
        self._length = _length_of(loader)
        self._dataset = loader.dataset
        self._iterable = loader._iterable
        self._index_sampler = loader._index_sampler
        self._num_workers = loader.num_workers
        self._prefetch_factor = loader.prefetch_factor
        self._persistent_workers = loader.persistent_workers
        self._timeout = loader.timeout
        self._base_seed = loader._draw_base_seed()
        self._shutdown = False
        self._task_info = {}
        self._workers_status = [True] * self._num_workers
        self._workers = []
        self._index_queues = []
        self._segment_prefix = f"ember-dl-{os.getpid()}-{next(_iterator_count)}-"
        context = loader.multiprocessing_context or default_context()
        self._result_queue = context.Queue()
        self._done_event = context.Event()
        state = (
            loader.dataset,
            loader._auto_collation,
            loader.collate_fn,
            loader.drop_last,
            loader.worker_init_fn,
        )
        if context.get_start_method() != "fork":
            # a spawned worker gets the state pickled; tensors travel through shared memory
            state = share(state, f"{self._segment_prefix}state")
        _live_iterators.add(self)
        _queues_of_live_iterators[self._segment_prefix] = (self._index_queues, self._result_queue)
        for worker_id in range(self._num_workers):
            index_queue = context.Queue()
            index_queue.cancel_join_thread()  # small messages: never wait at exit to flush them
            worker = context.Process(
                target=_worker.worker_loop,
                args=(
                    self._iterable,
                    state,
                    index_queue,
                    self._result_queue,
                    self._done_event,
                    self._base_seed,
                    worker_id,
                    self._num_workers,
                    self._segment_prefix,
                ),
                daemon=True,
            )
            worker.start()
            self._index_queues.append(index_queue)
            self._workers.append(worker)
        self._reset(first_epoch=True)

    def _reset(self, first_epoch: bool = False) -> None:
        for info in self._task_info.values():  # early batches of an epoch left unfinished
            if len(info) == 2 and isinstance(info[1], SharedPayload):
                info[1].discard()
        self._sampler_iter = iter(self._index_sampler)
        self._send_idx = 0  # the next task to send to a worker
        self._rcvd_idx = 0  # the next task to hand to the caller
        self._task_info = {}  # task -> (worker,) while outstanding, (worker, data) once in
        self._tasks_outstanding = 0
        self._workers_status = [True] * self._num_workers
        self._worker_cycle = itertools.cycle(range(self._num_workers))
        if not first_epoch:
            for index_queue in self._index_queues:
                index_queue.put(_worker.ResumeIteration())
            waiting = self._num_workers
            while waiting > 0:  # batches of the last epoch that nobody took come first
                task, data = self._get_data()
                if isinstance(task, _worker.ResumeIteration):
                    waiting -= 1
                elif isinstance(data, SharedPayload):
                    data.discard()
        for _ in range(self._prefetch_factor * self._num_workers):
            self._try_put_index()

    def _try_put_index(self) -> None:
        try:
            index = next(self._sampler_iter)
        except StopIteration:
            return
        for _ in range(self._num_workers):  # the next worker that still has data
            worker_id = next(self._worker_cycle)
            if self._workers_status[worker_id]:
                break
        else:
            return
        self._index_queues[worker_id].put((self._send_idx, index))
        self._task_info[self._send_idx] = (worker_id,)
        self._tasks_outstanding += 1
        self._send_idx += 1

    def _get_data(self):
        """The next message from the workers; raises if one died or ``timeout`` ran out."""
        deadline = time.monotonic() + self._timeout if self._timeout > 0 else None
        while True:
            wait = STATUS_CHECK_INTERVAL
            if deadline is not None:
                wait = min(wait, max(deadline - time.monotonic(), 0.0))
            try:
                return self._result_queue.get(timeout=wait)
            except queue.Empty as empty:
                failed = [
                    w
                    for worker_id, w in enumerate(self._workers)
                    if self._workers_status[worker_id] and not w.is_alive()
                ]
                if failed:
                    for w in failed:
                        self._workers_status[self._workers.index(w)] = False
                    pids = ", ".join(str(w.pid) for w in failed)
                    self._shutdown_workers()
                    raise RuntimeError(
                        f"DataLoader worker (pid(s) {pids}) exited unexpectedly"
                    ) from empty
                if deadline is not None and time.monotonic() >= deadline:
                    raise RuntimeError(
                        f"DataLoader timed out after {self._timeout} seconds"
                    ) from None

    def __next__(self):
        if self._shutdown:
            raise StopIteration
        while True:
            # skip the tasks of workers whose IterableDataset copy has ended
            while self._rcvd_idx < self._send_idx:
                info = self._task_info.get(self._rcvd_idx)
                if info:
                    if len(info) == 2 or self._workers_status[info[0]]:
                        break
                    del self._task_info[self._rcvd_idx]
                self._rcvd_idx += 1
            else:
                if not self._persistent_workers:
                    self._shutdown_workers()
                raise StopIteration
            if len(self._task_info[self._rcvd_idx]) == 2:
                _, data = self._task_info.pop(self._rcvd_idx)
                self._rcvd_idx += 1
                return self._process_data(data)
            task, data = self._get_data()
            self._tasks_outstanding -= 1
            if isinstance(data, _worker.IterableDatasetStopIteration):
                self._workers_status[data.worker_id] = False
                if not self._persistent_workers:
                    self._index_queues[data.worker_id].put(None)
                self._try_put_index()
                continue
            if task != self._rcvd_idx:  # early: keep it until its turn
                self._task_info[task] += (data,)
                continue
            del self._task_info[task]
            self._rcvd_idx += 1
            return self._process_data(data)

    def _process_data(self, data):
        self._try_put_index()
        if isinstance(data, _worker.ExceptionWrapper):
            data.reraise()
        return data.load()

    def _shutdown_workers(self) -> None:
        if self._shutdown:
            return
        self._shutdown = True
        _live_iterators.discard(self)
        try:
            self._done_event.set()
            for worker_id, index_queue in enumerate(self._index_queues):
                if self._persistent_workers or self._workers_status[worker_id]:
                    index_queue.put(None)
            for worker in self._workers:
                worker.join(timeout=JOIN_TIMEOUT)
            for index_queue in self._index_queues:
                index_queue.close()
        finally:
            for worker in self._workers:
                if worker.is_alive():
                    worker.terminate()
                    worker.join(timeout=JOIN_TIMEOUT)
            self._result_queue.cancel_join_thread()
            self._result_queue.close()
            self._task_info.clear()
            # batches nobody took (queued, early or half written by a killed worker)
            unlink_segments(self._segment_prefix)
            _queues_of_live_iterators.pop(self._segment_prefix, None)

    def __del__(self):
        if not getattr(self, "_shutdown", True):
            self._shutdown_workers()
