"""``DistributedSampler``: each of ``num_replicas`` processes visits its own share of the data.

The indices (shuffled by a generator seeded with ``seed + epoch``, padded by repeating the
first ones, or cut with ``drop_last``, then taken every ``num_replicas``-th from ``rank``)
follow PyTorch's rule. Without ``num_replicas`` or ``rank`` they are the default process group's,
asked of ``ember.distributed`` through ``ember._distributed_hook`` (it registers there on import).
"""

from __future__ import annotations

import math

from ... import _distributed_hook
from .sampler import Sampler


class DistributedSampler(Sampler):
    def __init__(
        self,
        dataset,
        num_replicas: int | None = None,
        rank: int | None = None,
        shuffle: bool = True,
        seed: int = 0,
        drop_last: bool = False,
    ) -> None:
        if num_replicas is None or rank is None:
            if not _distributed_hook.is_available():
                raise RuntimeError("Requires distributed package to be available")
            dist = _distributed_hook.distributed()  # no default group before ember.distributed
            if num_replicas is None:
                num_replicas = dist.get_world_size()
            if rank is None:
                rank = dist.get_rank()
        if rank >= num_replicas or rank < 0:
            raise ValueError(
                f"Invalid rank {rank}, rank should be in the interval [0, {num_replicas - 1}]"
            )
        self.dataset, self.num_replicas, self.rank = dataset, num_replicas, rank
        self.epoch, self.drop_last, self.shuffle, self.seed = 0, drop_last, shuffle, seed
        n = len(dataset)
        if drop_last and n % num_replicas:
            self.num_samples = math.ceil((n - num_replicas) / num_replicas)
        else:
            self.num_samples = math.ceil(n / num_replicas)
        self.total_size = self.num_samples * num_replicas

    def __iter__(self):
        n = len(self.dataset)
        if self.shuffle:
            from ..._creation import randperm
            from ..._random import Generator

            g = Generator()
            g.manual_seed(self.seed + self.epoch)
            indices = randperm(n, generator=g).tolist()
        else:
            indices = list(range(n))
        if not self.drop_last:
            padding = self.total_size - len(indices)
            if padding <= len(indices):
                indices += indices[:padding]
            else:
                indices += (indices * math.ceil(padding / len(indices)))[:padding]
        else:
            indices = indices[: self.total_size]
        return iter(indices[self.rank : self.total_size : self.num_replicas])

    def __len__(self) -> int:
        return self.num_samples

    def set_epoch(self, epoch: int) -> None:
        """Reshuffle differently in each epoch (call before iterating)."""
        self.epoch = epoch
