"""PowerSGD (Vogels et al., NeurIPS 2019): DDP gradients sent as low-rank factors.

Each gradient of a bucket is seen as a matrix M (n x m: its first dimension by the rest). Where
``n * m`` beats ``(n + m) * rank`` by ``min_compression_rate``, M is sent as two thin factors
instead: P = M Q is summed over the ranks and orthogonalised, Q = Mᵀ P is averaged over them,
and M is replaced by P Qᵀ. The other gradients (vectors, small matrices) are averaged as they
are. With ``use_error_feedback`` what the approximation lost is added to the next iteration's
gradient; with ``warm_start`` each Q starts from the last iteration's. The first
``start_powerSGD_iter`` iterations are plain allreduces, as torch's hook.

Example::
    >>> from ember.distributed.algorithms.ddp_comm_hooks import powerSGD_hook as powerSGD
    >>> state = powerSGD.PowerSGDState(process_group=None, matrix_approximation_rank=1,
    ...                                start_powerSGD_iter=10)
    >>> ddp.register_comm_hook(state, powerSGD.powerSGD_hook)
"""

from __future__ import annotations

import logging

import numpy as np

from ....futures import Future
from ...grad_bucket import GradBucket
from . import default_hooks

__all__ = ["PowerSGDState", "powerSGD_hook"]

logger = logging.getLogger(__name__)


class PowerSGDState:
    """What PowerSGD keeps between iterations, per bucket: errors, and the P and Q factors.

    ``matrix_approximation_rank`` is the rank r of the factors; ``start_powerSGD_iter`` the
    number of plain-allreduce iterations first; ``min_compression_rate`` how much smaller the
    factors must be to be worth it; ``orthogonalization_epsilon`` guards the Gram-Schmidt
    divisions; ``random_seed`` seeds the initial Qs (the same on every rank).
    """

    __slots__ = [
        "process_group",
        "matrix_approximation_rank",
        "start_powerSGD_iter",
        "min_compression_rate",
        "orthogonalization_epsilon",
        "use_error_feedback",
        "warm_start",
        "batch_tensors_with_same_shape",
        "rng",
        "error_dict",
        "p_memory_dict",
        "q_memory_dict",
        "iter",
        "total_numel_before_compression",
        "total_numel_after_compression",
        "compression_stats_logging_frequency",
        "next_stats_report",
    ]

    def __init__(
        self,
        process_group,
        matrix_approximation_rank: int = 1,
        start_powerSGD_iter: int = 1_000,
        min_compression_rate: float = 2,
        use_error_feedback: bool = True,
        warm_start: bool = True,
        orthogonalization_epsilon: float = 0,
        random_seed: int = 0,
        compression_stats_logging_frequency: int = 10_000,
        batch_tensors_with_same_shape: bool = False,
    ):
        if (use_error_feedback or warm_start) and start_powerSGD_iter <= 1:
            raise ValueError(
                "Expect `start_powerSGD_iter` > 1 if `use_error_feedback` or `warm_start` is "
                "enabled, because PowerSGD can only be applied after the first two iterations "
                "in DDP."
            )
        self.process_group = process_group
        self.matrix_approximation_rank = matrix_approximation_rank
        self.start_powerSGD_iter = start_powerSGD_iter
        self.min_compression_rate = min_compression_rate
        self.use_error_feedback = use_error_feedback
        self.warm_start = warm_start
        self.orthogonalization_epsilon = orthogonalization_epsilon
        self.batch_tensors_with_same_shape = batch_tensors_with_same_shape
        self.rng = np.random.RandomState(random_seed)  # the same draws on every rank
        self.error_dict: dict = {}
        self.p_memory_dict: dict = {}
        self.q_memory_dict: dict = {}
        self.iter = 0
        self.total_numel_before_compression = 0
        self.total_numel_after_compression = 0
        self.compression_stats_logging_frequency = max(1, compression_stats_logging_frequency)
        self.next_stats_report = 0

    def __getstate__(self) -> dict:
        """Everything but the process group (it cannot be pickled), as torch's."""
        return {s: getattr(self, s) for s in self.__slots__ if s != "process_group"}

    def __setstate__(self, state: dict) -> None:
        self.process_group = None
        for name, value in state.items():
            setattr(self, name, value)

    def maybe_increase_iter(self, bucket: GradBucket) -> None:
        """Count an iteration when its last bucket has been handled."""
        if bucket.is_last():
            self.iter += 1
        if self.iter == self.start_powerSGD_iter:
            logger.info("Start to apply PowerSGD after %s iterations.", self.iter)

    def compression_stats(self) -> tuple[float, int, int]:
        """(compression rate, numel before, numel after) over the compressed iterations."""
        after = self.total_numel_after_compression
        rate = self.total_numel_before_compression / after if after > 0 else 0
        return rate, self.total_numel_before_compression, after


def _should_compress(n: int, m: int, rank: int, min_rate: float) -> tuple[bool, int, int]:
    uncompressed, compressed = n * m, (n + m) * rank
    return compressed * min_rate < uncompressed, uncompressed, compressed


def _orthogonalize(matrix, epsilon: float) -> None:
    """Gram-Schmidt on the columns of ``matrix`` (an array), in place."""
    xp = _module(matrix)
    columns = matrix.shape[1]
    for i in range(columns):
        col = matrix[:, i : i + 1]
        norm = xp.sqrt((col * col).sum(axis=0, keepdims=True))
        col /= norm + epsilon if epsilon else norm
        if i + 1 < columns:
            rest = matrix[:, i + 1 :]
            rest -= (col * rest).sum(axis=0, keepdims=True) * col


def _module(array):
    from ...._backend import array_module

    return array_module(array)


def _all_reduce(array, group) -> None:
    from ...._tensor import Tensor
    from ...collectives import all_reduce

    all_reduce(Tensor._wrap(array), group=group)


def powerSGD_hook(state: PowerSGDState, bucket: GradBucket) -> Future:
    """Average the bucket with rank-``matrix_approximation_rank`` factors of each gradient.

    The averaging is done before the Future returns (the factors' allreduces depend on each
    other); the Future is complete.
    """
    from ...._tensor import Tensor
    from ...process_group import _default_group

    group = state.process_group if state.process_group is not None else _default_group()
    world_size = group.size()
    buffer = bucket.buffer()
    if state.iter < state.start_powerSGD_iter:
        state.maybe_increase_iter(bucket)
        return default_hooks._allreduce_fut(group, buffer)
    data = buffer._data
    xp = _module(data)
    index = bucket.index()
    before = None
    if state.use_error_feedback:
        if index in state.error_dict:
            data += state.error_dict[index]._data
        else:
            logger.info("A zero tensor of length %s for the local error is made.", data.size)
            state.error_dict[index] = Tensor._wrap(xp.zeros_like(data))
        before = data.copy()

    compressed, plain = [], []  # (matrix view, rank), and arrays sent as they are
    p_size = q_size = 0
    for grad in bucket.gradients():
        g = grad._data
        if g.ndim == 0:
            plain.append(g.reshape(1))
            state.total_numel_before_compression += 1
            state.total_numel_after_compression += 1
            continue
        matrix = g.reshape(g.shape[0], -1)
        n, m = matrix.shape
        rank = min(n, m, state.matrix_approximation_rank)
        worth, numel_before, numel_after = _should_compress(n, m, rank, state.min_compression_rate)
        state.total_numel_before_compression += numel_before
        if worth:
            compressed.append((matrix, rank))
            p_size, q_size = p_size + n * rank, q_size + m * rank
            state.total_numel_after_compression += numel_after
        else:
            plain.append(g.reshape(-1))
            state.total_numel_after_compression += numel_before
    _report_stats(state, bucket)

    if plain:  # the small gradients: averaged as they are
        flat = xp.concatenate(plain)
        _all_reduce(flat, group)
        flat /= world_size
        at = 0
        for g in plain:
            g[...] = flat[at : at + g.size]
            at += g.size

    fresh = not state.warm_start or index not in state.p_memory_dict
    if fresh:
        state.p_memory_dict[index] = Tensor._wrap(xp.empty(p_size, data.dtype))
        state.q_memory_dict[index] = Tensor._wrap(xp.empty(q_size, data.dtype))
    p_memory, q_memory = state.p_memory_dict[index]._data, state.q_memory_dict[index]._data
    ps, qs, p_at, q_at = [], [], 0, 0
    for matrix, rank in compressed:
        n, m = matrix.shape
        ps.append(p_memory[p_at : p_at + n * rank].reshape(n, rank))
        qs.append(q_memory[q_at : q_at + m * rank].reshape(m, rank))
        p_at, q_at = p_at + n * rank, q_at + m * rank
    for q in qs:
        if fresh:  # the same random start on every rank
            q[...] = xp.asarray(state.rng.standard_normal(q.shape)).astype(data.dtype)
        _orthogonalize(q, state.orthogonalization_epsilon)
    for (matrix, _), p, q in zip(compressed, ps, qs):
        xp.matmul(matrix, q, out=p)
    if compressed:
        _all_reduce(p_memory, group)  # the sum of the ranks' M Q
        for p in ps:
            _orthogonalize(p, state.orthogonalization_epsilon)
        for (matrix, _), p, q in zip(compressed, ps, qs):
            xp.matmul(matrix.T, p, out=q)
        _all_reduce(q_memory, group)
        q_memory /= world_size
        for (matrix, _), p, q in zip(compressed, ps, qs):
            matrix[...] = p @ q.T

    if state.use_error_feedback:
        state.error_dict[index] = Tensor._wrap(before - data)
    if not state.warm_start:
        state.p_memory_dict.clear()
        state.q_memory_dict.clear()
    state.maybe_increase_iter(bucket)
    fut: Future = Future()
    fut.set_result(buffer)
    return fut


def _report_stats(state: PowerSGDState, bucket: GradBucket) -> None:
    if bucket.is_last() and state.iter >= state.next_stats_report:
        rate, before, after = state.compression_stats()
        logger.info(
            "Compression stats: iter %s, total before compression %s, total after compression "
            "%s, rate %s",
            state.iter,
            before,
            after,
            rate,
        )
        state.next_stats_report = state.iter + state.compression_stats_logging_frequency
